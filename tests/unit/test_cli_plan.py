"""``legaleval plan``: the planner's figures for a dataset on disk, with and without a baseline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_legaleval.cli import main
from pytest_legaleval.formats import load_dataset
from pytest_legaleval.metrics._power import plan, record_fields

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
MCQ = str(EXAMPLES / "legal_mcq.jsonl")


def write_baseline(root: Path) -> Path:
    """A one-epoch run of the 20 example records: every third wrong."""
    records = load_dataset([MCQ]).records
    run = root / "run_base"
    run.mkdir()
    (run / "run_manifest.json").write_text(json.dumps({"run_id": "run_base"}))
    rows = [
        {
            "record_id": r.id,
            "dataset": r.dataset,
            "model": "m",
            "outcome": "failed" if i % 3 == 0 else "passed",
            "metadata": dict(r.metadata),
        }
        for i, r in enumerate(records)
    ]
    (run / "predictions.jsonl").write_text("".join(json.dumps(x) + "\n" for x in rows))
    return run


def test_the_text_shows_the_mde_the_model_and_the_table(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["plan", "--dataset", MCQ, "--epochs", "3", "--cluster-by", "metadata.course"])
    out = capsys.readouterr().out
    assert code == 0
    records = [record_fields(r) for r in load_dataset([MCQ]).records]
    expected = plan(records, epochs=3, cluster_by="metadata.course")
    assert f"{expected.mde * 100:.1f} points of pass rate" in out
    # 6 LegalBench rows have no course: clusters of their own beside LEXam's 6 courses
    assert expected.clusters == 12 and "12 clusters by metadata.course" in out
    assert "pass rate p                  0.500   assumed" in out
    assert "records       K=1      K=2      K=3      K=5     K=10" in out


def test_a_baseline_run_is_measured_and_json_is_the_plan(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = write_baseline(tmp_path)
    code = main(
        ["plan", "--dataset", MCQ, "--baseline", str(run), "--format", "json", "--target", "0.1"]
    )
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert data["baseline"] == "run_base" and data["epochs"] == 1
    assert data["model"]["p"] == pytest.approx(13 / 20)  # 7 of 20 failed (i % 3 == 0)
    assert data["model"]["sources"]["p"] == "baseline"
    assert data["records_for_target"] >= 1
    assert data["table"]["epochs"] == [1, 2, 5, 10]


def test_bad_input_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--dataset", str(tmp_path / "missing.jsonl")]) == 2
    assert "legaleval: error:" in capsys.readouterr().err
    assert main(["plan", "--dataset", MCQ, "--baseline", str(tmp_path)]) == 2
    assert "not a run directory" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:
        main(["plan", "--dataset", MCQ, "--epochs", "0"])
    assert exited.value.code == 2
    assert "expected a whole number >= 1, got '0'" in capsys.readouterr().err


def test_a_cluster_field_no_record_has_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["plan", "--dataset", MCQ, "--cluster-by", "metadata.coures"]) == 2
    err = capsys.readouterr().err
    assert "--cluster-by metadata.coures: none of the 20 records has this field" in err
    assert "did you mean metadata.course or " in err
