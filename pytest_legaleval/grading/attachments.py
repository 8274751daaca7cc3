"""Attachment text: files named by ``attachments[].path``, relative to the dataset file.

Text files are read as UTF-8 (invalid bytes replaced, and said so); PDFs through pypdf,
page by page. A PDF without a text layer (a scan) yields a warning, never silence: the
model would otherwise answer without the document and nobody would know. Existence is
checked when an item is set up, not when the dataset is validated: a dataset stays
valid on a machine without its documents (``legaleval validate`` checks the data, not the
disk), but an item whose attachment is missing is a record error (an ERROR item, never
sent to the model); reading happens once per file and session.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from pytest_legaleval.records import Attachment, Record
from pytest_legaleval.validation import RecordError

__all__ = [
    "AttachmentText",
    "attachment_path",
    "missing_attachments",
    "read_attachment",
    "record_attachments",
]

MAX_ATTACHMENT_CHARS = 200_000
"""Text beyond this many characters is cut (and the cut is reported)."""

_TEXT_SUFFIXES = frozenset(
    {
        ".txt",
        ".md",
        ".markdown",
        ".csv",
        ".tsv",
        ".json",
        ".jsonl",
        ".html",
        ".htm",
        ".xml",
        ".yaml",
        ".yml",
        ".rst",
    }
)


@dataclass(frozen=True, slots=True)
class AttachmentText:
    """The text of one attachment and what went wrong reading it."""

    path: str
    title: str
    text: str
    warnings: tuple[str, ...] = ()


def attachment_path(record: Record, attachment: Attachment) -> Path:
    """Where an attachment lives: relative paths resolve against the dataset file's folder."""
    path = Path(attachment.path)
    if path.is_absolute() or not record.source.path:
        return path
    return Path(record.source.path).parent / path


def _pdf_text(path: Path) -> tuple[str, list[str]]:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    warnings: list[str] = []
    try:
        reader = PdfReader(str(path))
        pages = [page.extract_text() or "" for page in reader.pages]
    except (PdfReadError, OSError, ValueError) as exc:
        return "", [f"{path.name}: the PDF could not be read ({exc}); no text was injected"]
    empty = [i + 1 for i, text in enumerate(pages) if not text.strip()]
    if pages and len(empty) == len(pages):
        warnings.append(
            f"{path.name}: the PDF has no text layer (scanned?); no text was injected — "
            "OCR it or attach a text version"
        )
    elif empty:
        shown = ", ".join(map(str, empty[:10])) + (" …" if len(empty) > 10 else "")
        warnings.append(f"{path.name}: pages without a text layer: {shown}")
    text = "\n\n".join(f"[page {i + 1}]\n{t.strip()}" for i, t in enumerate(pages) if t.strip())
    return text, warnings


@functools.lru_cache(maxsize=256)
def read_attachment(path: Path, title: str, kind: str | None) -> AttachmentText:
    """Read one attachment file (cached per path for the session)."""
    warnings: list[str] = []
    if not path.is_file():
        return AttachmentText(str(path), title, "", (f"{path}: file not found",))
    is_pdf = kind == "pdf" or path.suffix.lower() == ".pdf"
    if is_pdf:
        text, warnings = _pdf_text(path)
    elif kind in (None, "text", "txt", "document") or path.suffix.lower() in _TEXT_SUFFIXES:
        raw = path.read_bytes()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = raw.decode("utf-8", errors="replace")
            warnings.append(f"{path.name}: not valid UTF-8; undecodable bytes were replaced")
    else:
        return AttachmentText(
            str(path),
            title,
            "",
            (
                f"{path.name}: attachments of kind {kind!r} cannot be given to a text model; "
                "only the title was injected",
            ),
        )
    if len(text) > MAX_ATTACHMENT_CHARS:
        warnings.append(
            f"{path.name}: {len(text)} characters, cut to the first {MAX_ATTACHMENT_CHARS}"
        )
        text = text[:MAX_ATTACHMENT_CHARS]
    return AttachmentText(str(path), title, text, tuple(warnings))


def record_attachments(record: Record) -> list[AttachmentText]:
    """The text of every attachment of ``record``, in order."""
    out = []
    for attachment in record.attachments:
        path = attachment_path(record, attachment)
        out.append(read_attachment(path, attachment.title or path.name, attachment.kind))
    return out


def missing_attachments(record: Record) -> list[RecordError]:
    """Record errors (``value_out_of_range`` at the attachment's path) for missing files."""
    errors = []
    for number, attachment in enumerate(record.attachments):
        path = attachment_path(record, attachment)
        if not path.is_file():
            where = record.source.path + (
                f" line {record.source.line}" if record.source.line else ""
            )
            errors.append(
                RecordError(
                    index=record.source.index,
                    record_id=record.id,
                    code="value_out_of_range",
                    message=f"attachment file not found: {attachment.path} (looked for {path}; "
                    f"relative paths start at the dataset file's folder) ({where})",
                    path=f"records[{record.source.index}].attachments[{number}].path",
                )
            )
    return errors
