"""The names of a run directory's files: views of the artifact table, in one light module.

The table itself (name, schema, writer, retention, listing, merge rule) is
:mod:`pytest_legaleval.metrics._artifacts`; these constants name its built-in rows for the
code that needs a fixed list. Code that must also see registered artifacts calls
:func:`~pytest_legaleval.metrics._artifacts.artifacts`.
"""

from __future__ import annotations

from pytest_legaleval.metrics._artifacts import ARTIFACT_TABLE, CHECKSUMS

__all__ = ["ARTIFACTS", "CHECKSUMS", "EXTRA_ARTIFACTS", "KNOWN_ARTIFACTS", "OPTIONAL_ARTIFACTS"]

ARTIFACTS: tuple[str, ...] = tuple(a.name for a in ARTIFACT_TABLE if a.presence == "contract")
"""The eight files of the Dataset Contract §4.1 (``SHA256SUMS`` comes on top)."""

EXTRA_ARTIFACTS: tuple[str, ...] = tuple(a.name for a in ARTIFACT_TABLE if a.presence == "always")
"""Files every run directory has besides the contract's eight: what each item sent and got
back."""

OPTIONAL_ARTIFACTS: tuple[str, ...] = tuple(
    a.name for a in ARTIFACT_TABLE if a.presence == "optional"
)
"""Files some runs have: with ``--epochs`` (flaky and incomplete items), ``--baseline``,
``--human-labels``."""

KNOWN_ARTIFACTS: tuple[str, ...] = (*ARTIFACTS, *EXTRA_ARTIFACTS, *OPTIONAL_ARTIFACTS)
"""Every built-in artifact a run directory can hold (``SHA256SUMS`` besides)."""
