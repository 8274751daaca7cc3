"""``legal_eval_v1`` rows as the service takes them: the contract's per-record limits on top.

``legaleval serve`` accepts ``legal_eval_v1`` JSONL (``application/x-ndjson``) beside Dataset
Contract documents, with the same limits: besides the payload's 100 MB and 50,000 records,
each row at most 256 KB serialized (``record_too_large``) and its ``metadata`` at most 8 KB
and 5 levels deep, a failing row rejected as the contract rejects a record, the others
evaluated. A pytest run reads the same rows as plain ``legal_eval_v1``, without those
per-record limits. Never detected: a file is this format only when named so.
"""

from __future__ import annotations

from pathlib import Path

from pytest_legaleval.formats.base import FileScan, LoadContext
from pytest_legaleval.formats.legal_eval_v1 import scan_rows

__all__ = ["NAME", "SUFFIXES", "scan", "sniff"]

NAME = "legal_eval_v1_upload"
SUFFIXES: tuple[str, ...] = ()
"""None: the suffix of an upload never selects this format."""


def sniff(first_line: object, head: str) -> bool:
    """Never: the service names this format; detection leaves it to ``legal_eval_v1``."""
    del first_line, head
    return False


def scan(path: Path, context: LoadContext) -> FileScan:
    """Read one file of uploaded rows (see :func:`.legal_eval_v1.scan_rows`).

    Raises:
        DatasetRejected: the file has no rows, or every row failed validation.

    """
    return scan_rows(path, context, upload_limits=True)
