"""The package's version, in a module of its own.

Kept apart from the package face so that any layer (the run manifest records it) can read
it without importing the face, which names every layer's public objects.
"""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
