from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_legaleval.cli import main
from pytest_legaleval.run.ids import RUN_ID_PATTERN
from pytest_legaleval.validation import schema_validator

REPO = Path(__file__).resolve().parents[2]
MALFORMED = REPO / "tests" / "data" / "malformed"


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict]:
    code = main(["validate", "-q", *args])
    return code, json.loads(capsys.readouterr().out)


def test_valid_dataset_exits_0_with_the_202_run_object(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, body = _run(capsys, str(REPO / "examples" / "contract_reference.json"))
    assert code == 0
    schema_validator("run_accepted").validate(body)
    assert body["status"] == "accepted"
    assert RUN_ID_PATTERN.match(body["run_id"])
    assert body["summary"] == {"total_records": 6, "accepted_records": 6, "rejected_records": 0}


def test_record_errors_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    code, body = _run(capsys, str(MALFORMED / "mcq_single_choice.jsonl"))
    assert code == 1
    schema_validator("run_accepted").validate(body)
    assert body["status"] == "accepted_with_record_errors"
    (error,) = body["record_errors"]
    assert (error["index"], error["code"], error["path"]) == (
        1,
        "value_out_of_range",
        "records[1].choices",
    )


def test_rejected_dataset_exits_2_with_the_envelope(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = tmp_path / "doc.json"
    doc.write_text(
        json.dumps(
            {
                "dataset_id": "x",
                "dataset_version": "1",
                "schema_version": "1.0",
                "records": [{"record_id": "a"}],
            }
        )
    )
    code, body = _run(capsys, str(doc))
    assert code == 2
    schema_validator("error_envelope").validate(body)
    assert body["error"]["message"] == "All records failed validation"
    assert body["error"]["details"] == {
        "rejected_records": 1,
        "accepted_records": 0,
        "dataset": "doc.json",
    }


def test_console_script_entry_point(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_legaleval.cli", "validate", str(tmp_path / "missing.jsonl")],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert "missing.jsonl" in proc.stderr
