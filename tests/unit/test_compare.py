from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.metrics._compare import comparison
from pytest_legaleval.metrics._gates import block_from_rows
from pytest_legaleval.metrics._runfiles import load_run
from pytest_legaleval.run.compare_render import LIST_LIMIT, render


def row(record_id: str, passed: bool, dataset: str = "lexam", score: float | None = None) -> dict:
    return {
        "record_id": record_id,
        "dataset": dataset,
        "model": "m",
        "task_type": "mcq",
        "outcome": "passed" if passed else "failed",
        "passed": passed,
        "score": float(passed) if score is None else score,
        "reason": "correct" if passed else "wrong_answer",
        "explanation": "",
    }


def write_run(root: Path, run_id: str, rows: list[dict[str, Any]], summary: bool = True) -> Path:
    run = root / run_id
    run.mkdir(parents=True)
    (run / "run_manifest.json").write_text(json.dumps({"run_id": run_id, "models": ["m"]}))
    (run / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    if summary:
        (run / "metrics_summary.json").write_text(json.dumps(block_from_rows(rows)))
    return run


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    a = [row(f"q{i}", True) for i in range(8)] + [
        row("b0", False, "bench"),
        row("b1", True, "bench"),
    ]
    b = [row(f"q{i}", i >= 3) for i in range(8)] + [row("b0", True, "bench"), row("new", True)]
    return write_run(tmp_path, "run_a", a), write_run(tmp_path, "run_b", b, summary=False)


def test_metric_deltas_slices_and_flips(pair: tuple[Path, Path]) -> None:
    data = comparison(load_run(pair[0]), load_run(pair[1]))
    pass_rate = data["metrics"]["pass_rate"]
    assert pass_rate["a"]["value"] == pytest.approx(9 / 10)
    assert pass_rate["b"]["value"] == pytest.approx(7 / 10)  # computed: B has no summary
    assert pass_rate["delta"] == pytest.approx(-0.2)
    assert pass_rate["a"]["interval"][0] < 0.9 < pass_rate["a"]["interval"][1]
    slices = {(s["dimension"], s["value"]): s for s in data["slices"]}
    assert slices[("dataset", "lexam")]["pass_rate"]["delta"] == pytest.approx(6 / 9 - 1)
    assert slices[("dataset", "bench")]["pass_rate"]["b"] == 1.0
    assert slices[("dataset", "bench")]["n"] == {"a": 2, "b": 1}
    paired = data["paired"]
    assert (paired["paired"], paired["regressions"], paired["improvements"]) == (9, 3, 1)
    assert paired["mcnemar_p_value"] == pytest.approx(0.625)
    assert [c["record_id"] for c in data["changes"]["pass_to_fail"]] == ["q0", "q1", "q2"]
    assert [c["record_id"] for c in data["changes"]["only_in_baseline"]] == ["b1"]
    assert [c["record_id"] for c in data["changes"]["only_in_current"]] == ["new"]


def test_text_markdown_and_json(pair: tuple[Path, Path]) -> None:
    data = comparison(load_run(pair[0]), load_run(pair[1]))
    text = render(data, "text")
    assert "A: run_a  B: run_b" in text
    assert "pass_to_fail (3):" in text and "lexam/q0 [m]: correct → wrong_answer" in text
    assert "McNemar exact p = 0.625" in text
    md = render(data, "markdown")
    assert md.startswith("### legaleval: run\\_b vs run\\_a")
    assert "| `pass_rate` | 90.0% [" in md and "| -20.0% |" in md
    assert "| dataset=lexam | 100.0% | 66.7% | -33.3% | 8 → 9 |" in md
    assert "<summary>pass_to_fail (3)</summary>" in md
    assert json.loads(render(data, "json"))["paired"]["regressions"] == 3
    with pytest.raises(ValueError, match="unknown format 'html'"):
        render(data, "html")


def test_long_lists_are_cut_and_markdown_cells_escaped(tmp_path: Path) -> None:
    n = LIST_LIMIT + 5
    a = write_run(tmp_path, "a", [row(f"x|{i}", True) for i in range(n)])
    b = write_run(tmp_path, "b", [row(f"x|{i}", False) for i in range(n)])
    data = comparison(load_run(a), load_run(b))
    assert len(data["changes"]["pass_to_fail"]) == n  # JSON keeps all
    md = render(data, "markdown")
    assert "\n… 5 more (--format json lists all)" in md
    # a pipe in an id cannot break the table
    assert "| lexam | x\\|0 | m | correct | wrong\\_answer |" in md
    assert "… 5 more (--format json lists all)" in render(data, "text")


def test_graded_scores_get_a_paired_bootstrap_interval(tmp_path: Path) -> None:
    a = write_run(tmp_path, "a", [row(f"q{i}", True, score=0.9) for i in range(20)])
    b = write_run(tmp_path, "b", [row(f"q{i}", True, score=0.7 + i % 2 * 0.1) for i in range(20)])
    data = comparison(load_run(a), load_run(b), alpha=0.1)
    paired = data["paired"]
    assert paired["mean_score_delta"] == pytest.approx(-0.15)
    low, high = paired["mean_score_delta_ci"]
    assert low < -0.15 < high < 0
    assert "(90% paired bootstrap)" in render(data, "text")


def test_not_a_run_directory(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a run directory"):
        load_run(tmp_path)


def test_compare_refuses_runs_scored_under_other_rules_unless_told(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_legaleval.cli import main

    rubric = {**row("r1", True), "task_type": "rubric_qa", "grader": "judge:rubric"}
    a = write_run(tmp_path, "a", [rubric])
    b = write_run(tmp_path, "b", [{**rubric, "scoring": "minmax"}])
    with pytest.raises(ConfigError, match="scored rubric items differently"):
        comparison(load_run(a), load_run(b))
    assert main(["compare", str(a), str(b)]) == 2
    assert "--allow-scoring-mismatch" in capsys.readouterr().err
    assert main(["compare", str(a), str(b), "--allow-scoring-mismatch"]) == 0


def test_one_model_each_is_paired_by_record_as_the_report_pairs_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the issue: report A B paired 7 regressed / 4 fixed, compare said "no item in common"
    from pytest_legaleval.cli import main
    from pytest_legaleval.report.compare import pair_items, pairing_text
    from pytest_legaleval.report.data import collect

    a = [{**row(f"q{i}", i < 7), "model": "model-a"} for i in range(11)]
    b = [{**row(f"q{i}", i >= 7), "model": "model-b"} for i in range(11)]
    run_a, run_b = write_run(tmp_path, "run_a", a), write_run(tmp_path, "run_b", b)
    assert main(["compare", str(run_a), str(run_b)]) == 0
    out = capsys.readouterr().out
    assert "paired items: 11 by (record, epoch): one model each (pass→fail 7, fail→pass 4" in out
    data = (collect(load_run(run_a), 10**6), collect(load_run(run_b), 10**6))
    pairs = pair_items(*data)
    assert pairing_text(*data, pairs) == "paired 11 items by (record, epoch): one model each"
    assert sum(1 for p in pairs if p[0] >= 0 and p[1] >= 0) == 11


def test_several_models_items_are_compared_clustered_by_record(tmp_path: Path) -> None:
    # two models answered the same records: their answers to one question move together
    a = [{**row(f"q{i}", True), "model": m} for i in range(10) for m in ("m1", "m2")]
    b = [{**row(f"q{i}", i >= 2), "model": m} for i in range(10) for m in ("m1", "m2")]
    data = comparison(load_run(write_run(tmp_path, "a", a)), load_run(write_run(tmp_path, "b", b)))
    paired = data["paired"]
    assert paired["method"] == "clustered" and paired["paired"] == 20
    diff = paired["pass_difference"]
    assert diff["cluster_by"] == "record" and diff["clusters"] == 10 and diff["n"] == 20
    assert diff["df"] == pytest.approx(9.0) and diff["p_value"] is not None
    assert diff["se_clustered"] > diff["se"]


def test_a_cluster_field_no_line_has_is_a_usage_error(
    pair: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_legaleval.cli import main

    assert main(["compare", str(pair[0]), str(pair[1]), "--cluster-by", "datset"]) == 2
    err = capsys.readouterr().err
    assert "--cluster-by datset: none of the 20 prediction lines has this field" in err
    assert "did you mean dataset" in err
