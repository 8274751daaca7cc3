"""Check a finished run directory: every artifact present, schema-valid and checksummed.

Which files must be there and which schema each follows is the artifact table's
(``metrics._artifacts``): the contract's files must exist, and every file present that has
a schema is checked against it, line by line for JSONL.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_legaleval.metrics._artifacts import ARTIFACT_TABLE, artifacts
from pytest_legaleval.run.directory import CHECKSUMS, verify_checksums
from pytest_legaleval.util import strict_json
from pytest_legaleval.validation.schemas import schema_validator

__all__ = ["ARTIFACT_SCHEMAS", "check_run_directory"]

ARTIFACT_SCHEMAS: dict[str, str] = {
    row.name: row.schema for row in ARTIFACT_TABLE if row.schema is not None
}
"""Built-in artifact file -> the ``schemas/`` stem that describes it (one line, for JSONL);
a view of ``metrics._artifacts``."""


def _documents(path: Path) -> list[tuple[str, Any]]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        # Lines end at "\n" only: str.splitlines() would also split inside a JSON string
        # that holds U+0085 or U+2028 (json.dumps leaves them unescaped).
        return [
            (f"{path.name}:{number}", strict_json.loads(line))
            for number, line in enumerate(text.split("\n"), 1)
            if line.strip()
        ]
    return [(path.name, strict_json.loads(text))]


def check_run_directory(path: str | Path) -> list[str]:
    """Problems of a run directory (empty when it is complete, valid and intact)."""
    root = Path(path)
    problems = []
    for row in artifacts():
        target = root / row.name
        if not target.is_file():
            if row.presence == "contract":
                problems.append(f"{row.name}: missing")
            continue
        if row.schema is None:
            continue
        validator = schema_validator(row.schema)
        try:
            documents = _documents(target)
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            # ValueError: not JSON, or NaN/Infinity, which no strict parser reads.
            problems.append(f"{row.name}: not standard JSON ({exc})")
            continue
        for where, document in documents:
            problems.extend(f"{where}: {error}" for error in validator.iter_errors(document))
    if not (root / CHECKSUMS).is_file():
        problems.append(f"{CHECKSUMS}: missing")
    else:
        problems.extend(f"{name}: checksum mismatch" for name in verify_checksums(root))
    return problems
