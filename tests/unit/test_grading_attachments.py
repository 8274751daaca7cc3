"""Attachments: confined to the dataset's folder, read bounded, errors in the contract's shape."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from pytest_legaleval.grading._attachments import (
    MAX_ATTACHMENT_CHARS,
    missing_attachments,
    read_attachment,
    record_attachments,
)
from pytest_legaleval.grading._prompts import build_messages
from pytest_legaleval.records import Attachment, Record, SourceRef

CANARY = "canary-4f1c9e2a-not-for-the-model"


def _record(data: Path, *paths: str, index: int = 3) -> Record:
    return Record(
        id="r1",
        dataset="t",
        task_type="reference_qa",
        prompt="Summarise the attachment.",
        reference_answers=("x",),
        attachments=tuple(Attachment(p, "text", f"doc {i}") for i, p in enumerate(paths)),
        source=SourceRef(str(data / "set.jsonl"), index, index + 1, "legal_eval_v1"),
    )


@pytest.fixture
def data(tmp_path: Path) -> Path:
    folder = tmp_path / "data"
    (folder / "docs").mkdir(parents=True)
    (folder / "docs" / "lease.txt").write_text("The lease of 1 May 2020.")
    (tmp_path / "secret.txt").write_text(CANARY)
    read_attachment.cache_clear()
    return folder


def test_proc_environ_is_a_record_error_and_never_reaches_the_prompt(data: Path) -> None:
    record = _record(data, "docs/lease.txt", "/proc/self/environ")
    (error,) = missing_attachments(record)
    assert error.to_dict() == {
        "index": 3,
        "record_id": "r1",
        "code": "value_out_of_range",
        "message": error.message,
        "path": "records[3].attachments[1].path",
        "severity": "error",
    }
    assert "'/proc/self/environ'" in error.message and "/proc, /sys or /dev" in error.message
    assert "--attachments-root" in error.message and "set.jsonl line 4" in error.message
    prompt = "\n".join(m["content"] for m in build_messages(record))
    assert "The lease of 1 May 2020." in prompt
    # /proc/self/environ holds the environment the process started with, PATH included
    assert "PATH=" not in prompt
    texts = record_attachments(record)
    assert texts[1].text == "" and "is refused" in texts[1].warnings[0]


@pytest.mark.parametrize("name", ["../secret.txt", str(Path("/etc/passwd")), "link.txt"])
def test_escapes_are_record_errors_naming_path_and_rule(data: Path, name: str) -> None:
    (data / "link.txt").symlink_to(data.parent / "secret.txt")
    record = _record(data, name)
    (error,) = missing_attachments(record)
    assert error.code == "value_out_of_range"
    assert repr(name) in error.message and "outside the dataset file's folder" in error.message
    assert CANARY not in "".join(item.text for item in record_attachments(record))


def test_attachments_root_allows_a_folder_explicitly(data: Path) -> None:
    record = _record(data, "../secret.txt")
    assert missing_attachments(record)
    assert missing_attachments(record, extra_roots=[data.parent]) == []
    (text,) = record_attachments(record, extra_roots=[data.parent])
    assert text.text == CANARY and text.warnings == ()


def test_a_missing_file_keeps_its_message(data: Path) -> None:
    (error,) = missing_attachments(_record(data, "docs/nothing.txt"))
    assert error.message.startswith("attachment file not found: docs/nothing.txt")


def test_a_fifo_is_refused_without_blocking(data: Path) -> None:
    os.mkfifo(data / "docs" / "pipe.txt")
    record = _record(data, "docs/pipe.txt")
    results: list[object] = []
    # Reading a FIFO blocks until a writer comes: run it where a hang cannot stop the suite.
    worker = threading.Thread(
        target=lambda: results.append((missing_attachments(record), record_attachments(record))),
        daemon=True,
    )
    worker.start()
    worker.join(60)  # a hang guard
    assert results, "reading the FIFO attachment blocked"
    errors, texts = results[0]  # type: ignore[misc]
    assert "FIFO" in errors[0].message and texts[0].text == ""


def test_a_huge_text_file_is_read_bounded_and_the_cut_reported(data: Path) -> None:
    big = data / "docs" / "big.txt"
    big.write_bytes(b"x" * (5 * MAX_ATTACHMENT_CHARS))
    (text,) = record_attachments(_record(data, "docs/big.txt"))
    assert len(text.text) == MAX_ATTACHMENT_CHARS
    assert text.warnings == (f"big.txt: {5 * MAX_ATTACHMENT_CHARS:,} bytes, cut to the first "
                             f"{MAX_ATTACHMENT_CHARS} characters",)  # fmt: skip
