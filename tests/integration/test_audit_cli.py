"""``legaleval audit`` on LBR's real run, replayed offline, and on an old run directory.

The replay (``--responses`` + ``--judgments``, no call) runs once per test session in a
pytest process of its own (``lbr_replayed_run`` in conftest.py); its ``predictions.jsonl``
is then audited against the example labels (examples/lbr_human_labels.jsonl) and against
random hidden labels, and every figure is recomputed from the files with scikit-learn and
ppi-python.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_legaleval.cli import main

from ..extras import installed, needs_stats
from .conftest import EXAMPLES, read_jsonl, run_dirs

pytestmark = pytest.mark.slow
LABELS = EXAMPLES / "lbr_human_labels.jsonl"
OLD_RUN = Path(__file__).resolve().parents[1] / "data" / "report" / "run_v0"
TOL = 1e-6


@pytest.fixture(scope="module", autouse=True)
def _references_imported_once() -> None:
    """pytester (autouse here) puts sys.modules back after each test, and numpy cannot be
    imported twice in a process: the references are imported before its first snapshot."""
    if installed("numpy", "ppi_py", "sklearn"):
        import numpy  # noqa: F401
        import ppi_py  # noqa: F401
        import sklearn.metrics  # noqa: F401


@pytest.fixture(scope="module")
def lbr_run(lbr_replayed_run: Path) -> Path:
    """LBR's run replayed offline (shared with test_lbr_replay.py: see conftest.py)."""
    return lbr_replayed_run


def _audit(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["audit", *args])
    out, err = capsys.readouterr()
    return code, out, err


def _sets(
    predictions: list[dict[str, Any]],
    labels: dict[tuple[str, str], bool],
    policy: str | None = None,
) -> tuple[list[float], list[float], list[float]]:
    y, yhat, unlabelled = [], [], []
    for p in predictions:
        judged = str(p.get("grader", "")).startswith("judge")
        if not judged or not isinstance(p["passed"], bool) or p["outcome"] == "error":
            continue
        if policy is not None and p["policy_id"] != policy:
            continue
        key = (p["record_id"], p["model"])
        if key in labels:
            y.append(float(labels[key]))
            yhat.append(float(p["passed"]))
        else:
            unlabelled.append(float(p["passed"]))
    return y, yhat, unlabelled


def _check_block(block: dict[str, Any], y: list[float], yhat: list[float], u: list[float]) -> None:
    import numpy as np
    import ppi_py
    from sklearn.metrics import cohen_kappa_score

    assert block["labelled"] == len(y) and block["unlabelled"] == len(u)
    assert block["cohen_kappa"] == pytest.approx(float(cohen_kappa_score(y, yhat)), abs=TOL)
    Y, Yh, Yu = (np.asarray(v) for v in (y, yhat, u))
    estimate = float(ppi_py.ppi_mean_pointestimate(Y, Yh, Yu)[0])
    low, high = ppi_py.ppi_mean_ci(Y, Yh, Yu, alpha=0.05)
    assert block["ppi_pass_rate"]["estimate"] == pytest.approx(estimate, abs=TOL)
    # ppi-python's interval is unclipped: ours keeps it as ci95_raw and clips the rate's
    ppi = block["ppi_pass_rate"]
    assert ppi["ci95_raw"] == pytest.approx([low[0], high[0]], abs=TOL)
    clipped = [min(1.0, max(0.0, float(low[0]))), min(1.0, max(0.0, float(high[0])))]
    assert ppi["ci95"] == pytest.approx(clipped, abs=TOL)
    assert ppi["clipped"] is (clipped != [float(low[0]), float(high[0])])


@needs_stats
def test_the_example_labels_audit_lbr_s_run(
    lbr_run: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out_file = tmp_path / "audit.json"
    code, out, err = _audit(
        capsys, str(lbr_run), "--human-labels", str(LABELS), "--json", "--out", str(out_file)
    )
    assert code == 0, err
    body = json.loads(out)
    assert json.loads(out_file.read_text(encoding="utf-8")) == body
    predictions = read_jsonl(lbr_run / "predictions.jsonl")
    rows = read_jsonl(LABELS)
    labels = {(r["record_id"], r["model"]): r["passed"] for r in rows if "criterion_id" not in r}
    _check_block(body["judge_audit"], *_sets(predictions, labels))
    _check_block(body["by_policy"]["lexam_oq_v1"], *_sets(predictions, labels, "lexam_oq_v1"))
    counts = body["judge_audit"]["labels"]
    assert counts["rows"] == len(rows) and counts["rejected"] == 0
    assert counts["used"] + counts["without_verdict"] == len(rows)
    assert body["judge_audit"]["criteria"]["labelled"] == 27
    assert body["record_errors"] == []
    assert body["calibration"]["tables"][0]["labelled"] == body["judge_audit"]["labelled"]


@needs_stats
def test_hidden_labels_give_the_reference_figures(
    lbr_run: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Random labels on every kind of item (MCQ, judge errors included): the figures equal
    scikit-learn's and ppi-python's on the sets the issue defines."""
    predictions = read_jsonl(lbr_run / "predictions.jsonl")
    rng = random.Random(28)
    rows, labels = [], {}
    for p in rng.sample(predictions, 120):
        passed = rng.random() < (0.8 if p["passed"] else 0.3)
        rows.append({"record_id": p["record_id"], "model": p["model"], "passed": passed})
        labels[(p["record_id"], p["model"])] = passed
    path = tmp_path / "hidden.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    code, out, _ = _audit(capsys, str(lbr_run), "--human-labels", str(path), "--json")
    assert code == 0
    body = json.loads(out)
    _check_block(body["judge_audit"], *_sets(predictions, labels))
    for model, block in body["by_model"].items():
        y, yhat, u = _sets([p for p in predictions if p["model"] == model], labels)
        if len(set(y) | set(yhat)) > 1:
            _check_block(block, y, yhat, u)


def test_the_text_summary_sets_judge_human_and_ppi_side_by_side(
    lbr_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _audit(capsys, str(lbr_run), "--human-labels", str(LABELS))
    assert code == 0
    header, pass_rate = out.splitlines()[1:3]
    assert "judge" in header and "humans" in header and "PPI++" in header
    assert pass_rate.split()[:2] == ["pass", "rate"] and "λ" in pass_rate
    assert "Cohen's κ" in out and "per policy:" in out and "lexam_oq_v1" in out


def test_bad_label_rows_are_reported_and_exit_1(
    lbr_run: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "labels.jsonl"
    good = LABELS.read_text(encoding="utf-8").splitlines()[0]
    path.write_text(
        good + '\n{"record_id": "nope", "passed": true}\n' + good + "\nnot json\n",
        encoding="utf-8",
    )
    code, out, err = _audit(capsys, str(lbr_run), "--human-labels", str(path))
    assert code == 1
    warnings = [json.loads(x.split("label left out: ", 1)[1]) for x in err.splitlines()]
    assert [w["code"] for w in warnings] == [
        "invalid_encoding",
        "invalid_enum_value",
        "duplicate_record_id",
    ]
    assert all(list(w) == ["index", "record_id", "code", "message", "path", "severity"]
               for w in warnings)  # fmt: skip
    assert "1 used, 3 rejected" in out


def test_labels_that_match_nothing_judged_exit_1(
    lbr_run: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    mcq = next(p for p in read_jsonl(lbr_run / "predictions.jsonl") if p["grader"] == "mcq")
    path = tmp_path / "mcq.jsonl"
    row = {"record_id": mcq["record_id"], "model": mcq["model"], "passed": True}
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    code, _, err = _audit(capsys, str(lbr_run), "--human-labels", str(path))
    assert code == 1 and "no label matched a judged item" in err


def test_usage_errors_exit_2(
    lbr_run: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = _audit(capsys, str(tmp_path), "--human-labels", str(LABELS))
    assert code == 2 and "not a run directory" in err
    code, _, err = _audit(capsys, str(lbr_run), "--human-labels", str(tmp_path / "none.jsonl"))
    assert code == 2 and "no such file" in err
    code, _, err = _audit(capsys, str(lbr_run), "--resamples", "0")
    assert code == 2 and "--resamples" in err


def test_an_old_run_directory_is_audited(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    predictions = read_jsonl(OLD_RUN / "predictions.jsonl")
    judged = [p for p in predictions if str(p.get("grader")).startswith("judge")]
    path = tmp_path / "labels.jsonl"
    path.write_text(
        "".join(
            json.dumps({"record_id": p["record_id"], "model": p["model"], "passed": i % 2 == 0})
            + "\n"
            for i, p in enumerate(judged)
        ),
        encoding="utf-8",
    )
    code, out, err = _audit(capsys, str(OLD_RUN), "--human-labels", str(path), "--json")
    assert code == 0, err
    body = json.loads(out)
    with_verdict = [p for p in judged if p["outcome"] != "error"]
    assert body["judge_audit"]["labelled"] == len(with_verdict)
    assert body["judge_audit"]["labels"]["without_verdict"] == len(judged) - len(with_verdict)


def _replay(root: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "--dataset", "merged_legal_eval_v1.jsonl",
         "--responses", "responses_prefilled.jsonl", "--judgments", "judgments.jsonl",
         "--no-cache", "-p", "no:randomly", "-p", "no:cacheprovider", "-q", *extra],
        cwd=root, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip


@needs_stats
def test_a_run_with_human_labels_audits_its_judge_and_a_kappa_gate_can_fail_it(
    lbr_run: Path, tmp_path: Path
) -> None:
    """The run itself (``--human-labels``): ``judge_audit`` in metrics_summary.json equals
    the references; a κ gate the judge does not meet fails the run, one it meets passes
    (both in one run)."""
    root = lbr_run.parents[1]
    predictions = read_jsonl(lbr_run / "predictions.jsonl")
    rng = random.Random(2028)
    rows, labels = [], {}
    for p in rng.sample(predictions, 150):
        passed = rng.random() < (0.75 if p["passed"] else 0.35)
        rows.append({"record_id": p["record_id"], "model": p["model"], "passed": passed})
        labels[(p["record_id"], p["model"])] = passed
    path = tmp_path / "hidden.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    # One replay, two gates: each replay reads LBR's APEX PDF again (about 17 s of CPU).
    strict = _replay(
        root, "--human-labels", str(path), "--run-dir", str(tmp_path / "strict"),
        "--gate", "judge_audit.cohen_kappa>=0.95", "--gate", "judge_audit.cohen_kappa>=-1",
    )  # fmt: skip
    assert strict.returncode == 1, strict.stdout[-3000:] + strict.stderr[-2000:]
    assert "FAILED gate judge_audit.cohen_kappa>=0.95" in strict.stdout
    assert "passed gate judge_audit.cohen_kappa>=-1" in strict.stdout, strict.stdout[-3000:]
    assert "judge audit:" in strict.stdout and "PPI++" in strict.stdout
    (run,) = run_dirs(tmp_path / "strict")
    summary = json.loads((run / "metrics_summary.json").read_text(encoding="utf-8"))
    _check_block(summary["judge_audit"], *_sets(read_jsonl(run / "predictions.jsonl"), labels))
    assert (run / "human_labels_validation.jsonl").read_text(encoding="utf-8") == ""
    by_model = json.loads((run / "metrics_by_slice.json").read_text())["slices"]["model"]
    assert all("judge_audit" in block for block in by_model.values())
