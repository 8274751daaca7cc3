"""``legaleval compare`` and the run-file readers on runs with epoch lines and clusters."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_legaleval.cli import main
from pytest_legaleval.errors import ConfigError
from pytest_legaleval.metrics._compare import comparison
from pytest_legaleval.metrics._runfiles import (
    item_rows,
    load_run,
    run_cluster_by,
    run_epochs,
    run_reducer,
)
from pytest_legaleval.run.compare_render import render

OLD_RUN = Path(__file__).resolve().parents[1] / "data" / "report" / "run_v0"


def line(record_id: str, epoch: int, passed: bool, exam: str) -> dict[str, Any]:
    return {
        "record_id": record_id,
        "dataset": "lexam",
        "model": "m",
        "task_type": "mcq",
        "item_id": f"suite::test[{record_id}]",
        "epoch": epoch,
        "outcome": "passed" if passed else "failed",
        "passed": passed,
        "score": float(passed),
        "reason": "correct" if passed else "wrong_answer",
        "explanation": "",
        "metadata": {"exam": exam},
    }


def write_run(root: Path, run_id: str, passes: dict[str, list[int]], **config: Any) -> Path:
    run = root / run_id
    run.mkdir()
    manifest = {"run_id": run_id, "models": ["m"], "configuration": config}
    (run / "run_manifest.json").write_text(json.dumps(manifest))
    rows = [
        line(r, e, bool(p), f"exam{int(r[1:]) // 4}")
        for r, ps in passes.items()
        for e, p in enumerate(ps)
    ]
    (run / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return run


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    a = {f"q{i}": [1, 1, 1] for i in range(12)}
    # B loses exam0 entirely (q0-q3), keeps the rest
    b = {f"q{i}": [0, 0, 0] if i < 4 else [1, 1, 1] for i in range(12)}
    return (
        write_run(tmp_path, "run_a", a, epochs=3),
        write_run(tmp_path, "run_b", b, epochs=3, cluster_by="metadata.exam"),
    )


def test_the_readers_know_epochs_reducer_and_cluster_field(runs: tuple[Path, Path]) -> None:
    a, b = load_run(runs[0]), load_run(runs[1])
    assert run_epochs(a) == run_epochs(b) == 3
    assert run_cluster_by(a) is None and run_cluster_by(b) == "metadata.exam"
    assert run_reducer(b) == "mean"
    assert len(a.predictions) == 36 and len(item_rows(a)) == 12
    old = load_run(OLD_RUN)
    assert run_epochs(old) == 1 and run_cluster_by(old) is None
    assert item_rows(old) == old.predictions  # one epoch: the lines as they are


def test_metrics_count_items_not_epoch_lines(runs: tuple[Path, Path]) -> None:
    data = comparison(load_run(runs[0]), load_run(runs[1]))
    assert data["metrics"]["pass_rate"]["a"]["value"] == 1.0
    assert data["metrics"]["pass_rate"]["b"]["value"] == pytest.approx(8 / 12)
    assert data["metrics"]["pass_rate"]["a"]["n"] == 12  # items, not 36 lines
    slices = {(s["dimension"], s["value"]): s for s in data["slices"]}
    assert slices[("dataset", "lexam")]["n"] == {"a": 12, "b": 12}


def test_the_paired_part_is_clustered_by_the_runs_own_field(runs: tuple[Path, Path]) -> None:
    data = comparison(load_run(runs[0]), load_run(runs[1]))
    paired = data["paired"]
    assert paired["method"] == "clustered" and paired["cluster_by"] == "metadata.exam"
    diff = paired["pass_difference"]
    assert diff["delta"] == pytest.approx(-4 / 12) and diff["clusters"] == 3
    assert diff["se_clustered"] > diff["se"]
    text = render(data, "text")
    assert "CR2 se clustered by metadata.exam, Bell-McCaffrey df" in text
    assert f"df {diff['df']:.4g}, p {diff['p_value']:.4g}" in text
    assert "paired items: 12 by (record, model, epoch)" in text
    assert "cluster bootstrap [" in text and "epochs: A 3, B 3 (reducer mean" in text
    assert "pass rate (record means)" in render(data, "markdown")


def test_the_command_line_names_the_cluster_field_and_reducer(
    runs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "cmp.json"
    code = main(
        [
            "compare",
            str(runs[0]),
            str(runs[1]),
            "--format",
            "json",
            "--out",
            str(out),
            "--cluster-by",
            "dataset",
            "--epoch-reducer",
            "all",
        ]
    )
    assert code == 0
    paired = json.loads(out.read_text())["paired"]
    assert paired["cluster_by"] == "dataset" and paired["epoch_reducer"] == "all"
    assert paired["pass_difference"]["clusters"] == 1
    with pytest.raises(SystemExit) as exited:  # argparse's usage error
        main(["compare", str(runs[0]), str(runs[1]), "--epoch-reducer", "median"])
    assert exited.value.code == 2
    assert "invalid choice: 'median'" in capsys.readouterr().err


def test_a_bad_epoch_in_a_run_is_a_clear_error(runs: tuple[Path, Path]) -> None:
    path = runs[1] / "predictions.jsonl"
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    rows[0]["epoch"] = "zero"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(ConfigError, match="epoch must be a non-negative integer, got 'zero'"):
        comparison(load_run(runs[0]), load_run(runs[1]))


def test_an_old_run_compares_with_an_epoch_run(runs: tuple[Path, Path]) -> None:
    data = comparison(load_run(OLD_RUN), load_run(runs[1]))
    assert data["paired"]["paired"] == 0  # no shared items, and nothing breaks
    assert data["paired"]["only_in_current"] == 12
