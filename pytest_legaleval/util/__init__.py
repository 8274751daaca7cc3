"""Small helpers at the bottom of the layers: safe YAML, strict JSON, confined paths, faces.

- :mod:`.safe_yaml` — YAML loaded with the safe loader, duplicate keys and non-finite
  numbers refused;
- :mod:`.strict_json` — JSON that never writes or accepts ``NaN`` / ``Infinity``;
- :mod:`.paths` — paths confined to a folder (no ``..`` escape, no ``/proc``, regular files
  only), and where an imported dataset's paths start.
- :mod:`.lazy` — the ``__getattr__`` and ``__dir__`` of a face whose names load on first
  use.

Every layer may use them; they import nothing of ours but :mod:`pytest_legaleval.errors`
(DESIGN §11, checked by the import contracts in ``pyproject.toml``).
"""

from __future__ import annotations

__all__: list[str] = []
