"""Attachment text: files named by ``attachments[].path``, relative to the dataset file.

An attachment path is data, so it is confined (:func:`~pytest_legaleval.util.paths.
confined_path`): it must resolve, symlinks followed, inside the dataset file's folder or a
root the user allowed (``--attachments-root DIR``), never under ``/proc``, ``/sys`` or
``/dev``, and name a regular file. A refused path is never opened: the item is a record
error naming the path and the rule, exactly like a missing file.

Text files are read as UTF-8 (invalid bytes replaced, and said so); PDFs through pypdf,
page by page. A PDF without a text layer (a scan) yields a warning, never silence: the
model would otherwise answer without the document and nobody would know. Existence is
checked when an item is set up, not when the dataset is validated: a dataset stays
valid on a machine without its documents (``legaleval validate`` checks the data, not the
disk), but an item whose attachment is missing or refused is a record error (an ERROR
item, never sent to the model); reading happens once per file and session.
"""

from __future__ import annotations

import functools
import io
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pytest_legaleval.records import Attachment, Record
from pytest_legaleval.util.paths import PathRefused, confined_path, read_confined, source_folder
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
_MAX_TEXT_BYTES = 4 * MAX_ATTACHMENT_CHARS
# UTF-8 takes at most 4 bytes a character: more bytes than this can only be cut anyway.
MAX_PDF_BYTES = 64 * 1024 * 1024
"""PDFs larger than this are not read (their text could not be injected whole anyway)."""

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


def _base_dir(record: Record) -> Path:
    # A record built in code has no source file; its paths start at the working directory.
    if not record.source.path:
        return Path.cwd()
    # An imported dataset (--dataset apex:DIR) is a cached copy: its paths are the source's,
    # relative to the folder the user named (recorded by the import: util.paths).
    return source_folder(record.source.path) or Path(record.source.path).parent


def attachment_path(
    record: Record, attachment: Attachment, extra_roots: Iterable[str | Path] = ()
) -> Path:
    """Where an attachment lives: resolved from the dataset file's folder, and confined.

    Raises:
        PathRefused: the path leaves the dataset's folder and ``extra_roots``, reaches
            ``/proc``, ``/sys`` or ``/dev``, or names something other than a regular file.

    """
    return confined_path(
        attachment.path, _base_dir(record), extra_roots, where="the dataset file's folder"
    )


def _pdf_text(path: Path, data: bytes) -> tuple[str, list[str]]:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    warnings: list[str] = []
    try:
        reader = PdfReader(io.BytesIO(data))
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


def _is_pdf(path: Path, kind: str | None) -> bool:
    return kind == "pdf" or path.suffix.lower() == ".pdf"


@functools.lru_cache(maxsize=256)
def read_attachment(path: Path, title: str, kind: str | None) -> AttachmentText:
    """Read one attachment file (cached per path for the session).

    ``path`` must come from :func:`attachment_path` (confined and resolved). Text files are
    read up to the bytes :data:`MAX_ATTACHMENT_CHARS` characters can take, PDFs up to
    :data:`MAX_PDF_BYTES`; a larger file is cut, and the cut is reported.
    """
    is_pdf = _is_pdf(path, kind)
    if not is_pdf and not (
        kind in (None, "text", "txt", "document") or path.suffix.lower() in _TEXT_SUFFIXES
    ):
        return AttachmentText(
            str(path),
            title,
            "",
            (
                f"{path.name}: attachments of kind {kind!r} cannot be given to a text model; "
                "only the title was injected",
            ),
        )
    limit = MAX_PDF_BYTES if is_pdf else _MAX_TEXT_BYTES
    try:
        data, size = read_confined(path, limit)
    except FileNotFoundError:
        return AttachmentText(str(path), title, "", (f"{path}: file not found",))
    except OSError as exc:
        reason = exc.strerror or str(exc)
        return AttachmentText(str(path), title, "", (f"{path}: cannot be read ({reason})",))
    if is_pdf and size > limit:
        # A cut PDF has lost its cross-reference table: reading it could only fail.
        warning = (
            f"{path.name}: a {size:,}-byte PDF, over the {limit:,}-byte limit; no text was injected"
        )
        return AttachmentText(str(path), title, "", (warning,))
    warnings: list[str] = []
    if is_pdf:
        text, pdf_warnings = _pdf_text(path, data)
        warnings.extend(pdf_warnings)
    else:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            if size > limit and exc.start >= len(data) - 3:
                text = data[: exc.start].decode("utf-8")  # the cut split a character
            else:
                text = data.decode("utf-8", errors="replace")
                warnings.append(f"{path.name}: not valid UTF-8; undecodable bytes were replaced")
    if size > limit:
        warnings.append(
            f"{path.name}: {size:,} bytes, cut to the first {MAX_ATTACHMENT_CHARS} characters"
        )
        text = text[:MAX_ATTACHMENT_CHARS]
    elif len(text) > MAX_ATTACHMENT_CHARS:
        warnings.append(
            f"{path.name}: {len(text)} characters, cut to the first {MAX_ATTACHMENT_CHARS}"
        )
        text = text[:MAX_ATTACHMENT_CHARS]
    return AttachmentText(str(path), title, text, tuple(warnings))


def record_attachments(
    record: Record, extra_roots: Iterable[str | Path] = ()
) -> list[AttachmentText]:
    """The text of every attachment of ``record``, in order.

    A refused path is not read: its entry has no text and a warning naming the rule (the
    item should already have stopped at :func:`missing_attachments`).
    """
    roots = tuple(extra_roots)
    out = []
    for attachment in record.attachments:
        try:
            path = attachment_path(record, attachment, roots)
        except PathRefused as exc:
            title = attachment.title or os.path.basename(attachment.path)
            out.append(AttachmentText(attachment.path, title, "", (f"attachment {exc}",)))
            continue
        out.append(read_attachment(path, attachment.title or path.name, attachment.kind))
    return out


def missing_attachments(
    record: Record, extra_roots: Iterable[str | Path] = ()
) -> list[RecordError]:
    """Record errors for attachments that are refused or missing (nothing is read).

    Each is ``value_out_of_range`` at ``records[i].attachments[n].path`` (the contract's
    closest code: the path's value lies outside what is allowed, or names no file), with a
    message that names the path and the rule. Call it when an item is set up, with the
    roots the user allowed (``--attachments-root``), before anything is sent.
    """
    roots = tuple(extra_roots)
    errors = []
    where = record.source.path + (f" line {record.source.line}" if record.source.line else "")
    for number, attachment in enumerate(record.attachments):
        try:
            path = attachment_path(record, attachment, roots)
        except PathRefused as exc:
            message = (
                f"attachment {exc}; attachments must stay inside the dataset file's folder "
                "(or a folder allowed with --attachments-root DIR)"
            )
        else:
            if path.is_file():
                continue
            message = (
                f"attachment file not found: {attachment.path} (looked for {path}; "
                "relative paths start at the dataset file's folder)"
            )
        errors.append(
            RecordError(
                index=record.source.index,
                record_id=record.id,
                code="value_out_of_range",
                message=f"{message} ({where})" if where else message,
                path=f"records[{record.source.index}].attachments[{number}].path",
            )
        )
    return errors
