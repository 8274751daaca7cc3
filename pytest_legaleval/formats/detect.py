"""Format detection by content: the first bytes decide, the file suffix only breaks ties."""

from __future__ import annotations

from pathlib import Path

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.formats.base import JSON_DECODER, JSON_WHITESPACE, UTF8_BOM
from pytest_legaleval.formats.registry import FORMATS, REGISTRY

__all__ = ["HEAD_BYTES", "detect_format"]

HEAD_BYTES = 64 * 1024
"""How much of a file detection reads."""


def _first_line_value(head: bytes) -> object:
    line = head.split(b"\n", 1)[0].strip(JSON_WHITESPACE)
    if not line.startswith(b"{"):
        return None
    try:
        return JSON_DECODER.decode(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None


def detect_format(path: Path, head: bytes | None = None) -> str:
    """Tell a dataset file's format from its content.

    The first non-blank line decides when it is a JSON object: ``schema_version:
    "legal_eval_v1"`` (or ``task_type`` and ``prompt``) means ``legal_eval_v1`` rows, a
    ``records`` key a one-line contract document. A pretty-printed document is recognized
    by its ``"records"`` / ``"dataset_id"`` keys. Only when the content says nothing (an
    empty file, a first line that starts like an object but does not parse) does the suffix
    decide: ``.jsonl`` -> ``legal_eval_v1``, ``.json`` -> ``contract_v1``.

    Args:
        path: the file (its suffix breaks ties; it is read only when ``head`` is None).
        head: the file's first bytes, if the caller already has them.

    Raises:
        ConfigError: the format cannot be told; the message names ``--dataset-format``.

    """
    if head is None:
        try:
            with path.open("rb") as handle:
                head = handle.read(HEAD_BYTES)
        except OSError as exc:
            raise ConfigError(f"cannot read dataset {path}: {exc.strerror or exc}") from None
    head = head.removeprefix(UTF8_BOM).lstrip(JSON_WHITESPACE)
    first = _first_line_value(head)
    text = head.decode("utf-8", "replace")
    claims = [name for name, module in REGISTRY.items() if module.sniff(first, text)]
    if len(claims) == 1:
        return claims[0]
    choices = ", ".join(FORMATS)
    # The suffix may only break a silence: an empty file, or an object we could not parse
    # (a corrupt first row, a truncated head). Any other content is simply not ours.
    if not claims and first is None and (not head or head.startswith(b"{")):
        by_suffix = [n for n, m in REGISTRY.items() if path.suffix.lower() in m.SUFFIXES]
        if len(by_suffix) == 1:
            return by_suffix[0]
    reason = (
        f"it looks like several formats ({', '.join(claims)})"
        if claims
        else "its content matches no known format"
    )
    raise ConfigError(
        f"cannot tell the format of dataset {path}: {reason}; "
        f"pass --dataset-format with one of: {choices}"
    )
