"""The names of a run directory's files, in one light module (no other import).

The HTTP service lists and serves them, ``legaleval submit`` downloads them, the recorder
writes them: one list, here.
"""

from __future__ import annotations

__all__ = ["ARTIFACTS", "CHECKSUMS", "EXTRA_ARTIFACTS", "KNOWN_ARTIFACTS", "OPTIONAL_ARTIFACTS"]

ARTIFACTS: tuple[str, ...] = (
    "run_manifest.json",
    "input_dataset.json",
    "record_validation.jsonl",
    "predictions.jsonl",
    "attempt_logs.jsonl",
    "metrics_summary.json",
    "metrics_by_slice.json",
    "failures.jsonl",
)
"""The eight files of the Dataset Contract §4.1 (``SHA256SUMS`` comes on top)."""

EXTRA_ARTIFACTS: tuple[str, ...] = ("transcripts.jsonl",)
"""Files every run directory has besides the contract's eight: what each item sent and got
back."""

OPTIONAL_ARTIFACTS: tuple[str, ...] = (
    "flaky_records.jsonl",
    "incomplete_records.jsonl",
    "regressions.jsonl",
    "human_labels_validation.jsonl",
)
"""Files some runs have: with ``--epochs`` (flaky and incomplete items), ``--baseline``,
``--human-labels``."""

KNOWN_ARTIFACTS: tuple[str, ...] = (*ARTIFACTS, *EXTRA_ARTIFACTS, *OPTIONAL_ARTIFACTS)
"""Every artifact a run directory can hold (``SHA256SUMS`` besides)."""

CHECKSUMS = "SHA256SUMS"
"""Written last, in ``sha256sum`` format (``<hex>  <name>``), over every artifact."""
