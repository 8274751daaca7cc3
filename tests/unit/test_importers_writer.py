"""The shared writer and the ``legaleval import`` command."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_legaleval.cli import main
from pytest_legaleval.errors import ConfigError
from pytest_legaleval.formats import load_dataset
from pytest_legaleval.importers import SourceRow, write_records

from ..extras import needs_import

DATA = Path(__file__).resolve().parents[1] / "data" / "importers"


def mcq(record_id: str, prompt: str = "Which?", **extra: Any) -> dict[str, Any]:
    row = {
        "schema_version": "legal_eval_v1",
        "id": record_id,
        "dataset": "t",
        "task_type": "mcq",
        "prompt": prompt,
        "choices": [{"id": "A", "text": "yes"}, {"id": "B", "text": "no"}],
        "correct_choice_ids": ["A"],
    }
    row.update(extra)
    return row


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n")[:-1]]


def test_every_row_is_written_failed_or_skipped_with_its_reason(tmp_path: Path) -> None:
    rows = [
        SourceRow("f row 1", "test", record=mcq("t:1")),
        SourceRow("f row 2", "test", error="gold is out of range"),
        SourceRow("f row 3", "test", record=mcq("t:3", correct_choice_ids=["Z"])),
        SourceRow("f row 4", "test", record=mcq("t:1")),  # exact repeat of row 1
        SourceRow("f row 5", "test", record=mcq("t:1", prompt="Other?")),  # same id, other text
        SourceRow("f row 6", "train", record=mcq("t:6")),
        SourceRow("f row 7", "test", record=mcq("t:7", metadata={"when": object()})),
    ]
    out = tmp_path / "out.jsonl"
    summary = write_records(rows, out, split="test")
    assert (summary.read, summary.written, summary.failed) == (7, 1, 4)
    assert summary.skipped == {
        "exact repeat of an earlier record": 1,
        "split train (not --split test)": 1,
    }
    assert summary.read == summary.written + summary.failed + summary.skipped_total
    reasons = {f.where: f.reason for f in summary.failures}
    assert reasons["f row 2"] == "gold is out of range"
    assert reasons["f row 3"].startswith('correct_choice_ids[0] "Z" is not the id of any choice')
    assert "already used by f row 1" in reasons["f row 5"]
    assert reasons["f row 7"].startswith("not JSON data")
    assert summary.failure_kinds["duplicate_record_id"] == 1
    assert [r["id"] for r in lines(out)] == ["t:1"]
    assert not list(tmp_path.glob(".out.jsonl.tmp-*"))


def test_written_file_is_what_the_loader_accepts_and_text_is_nfc(tmp_path: Path) -> None:
    decomposed = "Ku\u0308ndigung"  # "Kündigung" with a combining diaeresis
    out = tmp_path / "out.jsonl"
    summary = write_records([SourceRow("r", None, record=mcq("t:1", prompt=decomposed))], out)
    assert summary.written == 1
    loaded = load_dataset([out])
    assert not loaded.errors and len(loaded.entries) == 1
    assert lines(out)[0]["prompt"] == "K\u00fcndigung"


def test_keys_that_merge_in_nfc_fail_instead_of_losing_a_value(tmp_path: Path) -> None:
    row = mcq("t:1", metadata={"\u00e9": 1, "e\u0301": 2})
    summary = write_records([SourceRow("r", None, record=row)], tmp_path / "o.jsonl")
    assert summary.failed == 1 and "NFC" in summary.failures[0].reason


def test_limit_without_seed_keeps_the_first_records_and_stops_reading(tmp_path: Path) -> None:
    consumed: list[int] = []

    def rows() -> Any:
        for i in range(100):
            consumed.append(i)
            yield SourceRow(f"r{i}", None, record=mcq(f"t:{i}"))

    summary = write_records(rows(), tmp_path / "o.jsonl", limit=3)
    assert [r["id"] for r in lines(tmp_path / "o.jsonl")] == ["t:0", "t:1", "t:2"]
    assert summary.stopped_at_limit and len(consumed) == 4


def test_limit_with_seed_draws_the_same_sample_in_source_order(tmp_path: Path) -> None:
    def rows() -> list[SourceRow]:
        return [SourceRow(f"r{i}", None, record=mcq(f"t:{i:03d}")) for i in range(200)]

    first = write_records(rows(), tmp_path / "a.jsonl", limit=10, seed=7)
    write_records(rows(), tmp_path / "b.jsonl", limit=10, seed=7)
    other = write_records(rows(), tmp_path / "c.jsonl", limit=10, seed=8)
    ids = [r["id"] for r in lines(tmp_path / "a.jsonl")]
    assert ids == sorted(ids) and len(ids) == 10
    assert ids == [r["id"] for r in lines(tmp_path / "b.jsonl")]
    assert ids != [r["id"] for r in lines(tmp_path / "c.jsonl")]
    assert ids != [f"t:{i:03d}" for i in range(10)]  # a draw, not the head
    assert first.skipped == {"not drawn by --limit/--seed": 190} == other.skipped


def test_existing_output_needs_force(tmp_path: Path) -> None:
    out = tmp_path / "o.jsonl"
    out.write_text("keep\n")
    with pytest.raises(ConfigError, match="--force"):
        write_records([], out)
    assert out.read_text() == "keep\n"
    write_records([SourceRow("r", None, record=mcq("t:1"))], out, force=True)
    assert len(lines(out)) == 1


@needs_import
def test_cli_exit_codes_and_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lexam = DATA / "lexam"
    out = tmp_path / "lexam.jsonl"
    assert main(["import", "lexam", str(lexam), "--out", str(out), "--summary",
                 str(tmp_path / "s.json")]) == 0  # fmt: skip
    printed = capsys.readouterr().out
    assert "MCQs_test.xlsx: 4 written, 0 failed, 0 skipped" in printed
    assert "MCQs_test_perturbation.xlsx: 16 written" in printed
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["written"] == 25 and summary["failed"] == 0
    # Exists now: a usage error, nothing printed on stdout.
    assert main(["import", "lexam", str(lexam), "--out", str(out)]) == 2
    assert "already exists" in capsys.readouterr().err
    assert main(["import", "lexam", str(tmp_path / "missing"), "--out", str(tmp_path / "x")]) == 2
    assert "no such file" in capsys.readouterr().err
    # A row that fails: exit 1, the valid rows are still written.
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        json.dumps({"id": "u1", "question": "Q?", "choices": "['a', 'b']", "gold": 5}) + "\n"
        + json.dumps({"id": "u2", "question": "Q?", "choices": "['a', 'b']", "gold": 1}) + "\n",
        encoding="utf-8",
    )  # fmt: skip
    assert main(["import", "lexam", str(bad), "--out", str(tmp_path / "b.jsonl")]) == 1
    printed = capsys.readouterr().out
    assert "failed: bad.jsonl row 1: gold 5 is out of range for 2 options" in printed
    assert [r["id"] for r in lines(tmp_path / "b.jsonl")] == ["lexam:mcq:u2"]


@needs_import
def test_cli_split_and_limit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "o.jsonl"
    code = main(["import", "lexam", str(DATA / "lexam"), "--out", str(out), "--split", "dev"])
    assert code == 0
    assert {r["metadata"]["split"] for r in lines(out)} == {"dev"} and len(lines(out)) == 3
    assert "skipped 22: split test (not --split dev)" in capsys.readouterr().out
    main(["import", "lexam", str(DATA / "lexam"), "--out", str(out), "--force",
          "--limit", "5", "--seed", "1"])  # fmt: skip
    assert len(lines(out)) == 5
