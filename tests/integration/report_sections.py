"""Run directories for the report's figure sections (official figures, epochs, calibration).

Written by hand, with the figures the metrics code writes: ``metrics_summary.json``'s
counts, epoch figures and uncertainty come from ``MetricsAccumulator`` and
``EpochSummary`` over the lines, its ``judge_audit`` from ``metrics.audit.judge_audit`` with
the labels written beside the run; the ``benchmarks`` block is written as
``metrics.benchmarks.benchmark_figures`` shapes it. The tests read the page against these
files and against their own count of the lines.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pytest_legaleval.metrics.artifacts import FLAKY_RECORDS
from pytest_legaleval.metrics.audit import judge_audit
from pytest_legaleval.metrics.epoch_summary import EpochSummary
from pytest_legaleval.metrics.human_labels import read_human_labels
from pytest_legaleval.metrics.runfiles import item_rows, load_run
from pytest_legaleval.metrics.summary import MetricsAccumulator

HOSTILE = "</td></tr></table></script><script>alert(1)</script><!--\"'&"
MODELS = ("m/alpha", "m/beta")
EXAMS = ("exam-1", "exam-2", "exam-3", "exam-4")
RECORDS = [f"q{n:02d}" for n in range(1, 13)]
RUBRIC = (("c-cite", "Cites the statute"), ("c-facts", "Invents no fact"))


def _passed(record: int, model: int, epoch: int) -> bool:
    """A fixed pattern: some items pass every epoch, some none, some disagree."""
    return (record * 7 + model * 3 + epoch * 5) % 4 != 0 if record % 3 else record % 2 == 0


def _line(record_id: str, model: str, epoch: int | None, passed: bool, **extra: Any) -> dict:
    index = RECORDS.index(record_id) if record_id in RECORDS else 0
    line: dict[str, Any] = {
        "item_id": f"test_suite.py::test_record[exam/{record_id}-{model}]",
        "record_id": record_id, "dataset": "exam", "model": model,
        "outcome": "passed" if passed else "failed", "passed": passed,
        "score": 0.8 if passed else 0.3,
        "reason": "correct" if passed else "below_threshold",
        "explanation": f"judge score {'0.80' if passed else '0.30'} vs threshold 0.50",
        "model_response": f"The answer of {model} to {record_id}.",
        "grader": "judge:reference", "policy_id": "reference_v1",
        "details": {"threshold": 0.5},
        "judge": {"models": ["judge/j"], "kind": "reference", "verdicts": [
            {"model": "judge/j", "rationale": f"Reason for {record_id} by {model}: "
             + ("it holds." if passed else "it misses the point.")
             + (HOSTILE if index == 3 else "")}
        ]},
        "metadata": {"exam": EXAMS[index % len(EXAMS)]},
        "latency_ms": 100.0 + index,
    }  # fmt: skip
    if epoch is not None:
        line["epoch"] = epoch
    line.update(extra)
    return line


def _rubric_line(model: str, epoch: int | None, mets: tuple[bool, bool]) -> dict[str, Any]:
    passed = all(mets)
    criteria = [
        {"id": cid, "title": title, "weight": 1.0, "met": met,
         "rationale": f"{title}: {'yes' if met else 'no'} ({model})"}
        for (cid, title), met in zip(RUBRIC, mets, strict=True)
    ]  # fmt: skip
    return _line("r-rubric", model, epoch, passed, grader="judge:rubric", policy_id="rubric_v1",
                 details={"threshold": 1.0, "criteria": criteria}, task_type="rubric_qa",
                 score=1.0 if passed else 0.5)  # fmt: skip


def prediction_lines(epochs: int) -> list[dict[str, Any]]:
    """Every line: 12 reference records and one rubric record × two models × ``epochs``."""
    lines = []
    for k in range(epochs):
        epoch = k if epochs > 1 else None
        for r, record in enumerate(RECORDS):
            for m, model in enumerate(MODELS):
                lines.append(_line(record, model, epoch, _passed(r, m, k)))
        for m, model in enumerate(MODELS):
            lines.append(_rubric_line(model, epoch, (True, m == 0)))
    return lines


def label_rows() -> list[dict[str, Any]]:
    """Human labels: eight items (some against the judge) and one criterion."""
    rows = []
    for r, record in enumerate(RECORDS[:8]):
        for m, model in enumerate(MODELS):
            if (r + m) % 2:
                continue
            judge = _passed(r, m, 0)
            rows.append({"record_id": record, "model": model,
                         "passed": judge if r % 3 else not judge, "rater": "expert"})  # fmt: skip
    rows.append({"record_id": "r-rubric", "model": MODELS[1], "criterion_id": "c-facts",
                 "passed": True, "rater": "expert"})  # fmt: skip
    return rows


def _records() -> list[dict[str, Any]]:
    out = []
    for n, record in enumerate([*RECORDS, "r-rubric"]):
        payload: dict[str, Any] = {
            "id": record, "dataset": "exam", "prompt": f"Question {record}: is the lease valid?",
            "task_type": "reference_qa", "reference_answers": ["Yes, under Art. 271 OR."],
            "metadata": {"exam": EXAMS[n % len(EXAMS)]},
        }  # fmt: skip
        if record == "r-rubric":
            payload["task_type"] = "rubric_qa"
            payload["rubric"] = [{"id": c, "title": t, "weight": 1.0} for c, t in RUBRIC]
        out.append({"index": n, "record_id": record, "dataset_id": "exam", "payload": payload})
    return out


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")


LEGALBENCH = {
    "protocol": "legalbench_official", "protocol_version": 1,
    "upstream": {"repo": "HazyResearch/legalbench",
                 "commit": "ce482446b8eac4403b6db2c17223af4514bb24e3"},
    "score": 0.6875, "n_tasks": 2,
    "categories": {"conclusion": {"score": 0.625, "n_tasks": 1},
                   "interpretation": {"score": 0.75, "n_tasks": 1}},
    "train_only": {"score": 0.4, "n_tasks": 1}, "manual": ["rule_qa"], "not_scored": 1,
    "tasks": {
        "hearsay": {"test": {"metric": "balanced_accuracy", "value": 0.625, "n": 8},
                    "train": {"metric": "balanced_accuracy", "value": 0.5, "n": 5}},
        "abercrombie": {"test": {"metric": "balanced_accuracy", "value": 0.75, "n": 4}},
        "sara_numeric": {"train": {"metric": "sara_numeric", "value": 0.4, "n": 5}},
        "rule_qa": {"test": {"metric": "manual", "value": None, "n": 6,
                             "needs_manual_evaluation": True}},
    },
    "other_protocols": {"legalbench": 3},
}  # fmt: skip
LEXAM = {
    "protocol": "lexam_official", "protocol_version": 1,
    "upstream": {"repo": "LEXam-Benchmark/LEXam",
                 "commit": "487f729e85725e5d3e00c0b25142de1e86cda643"},
    "mcq": {"accuracy": 0.28, "n": 25, "by_set": {"mcq": {"accuracy": 0.3, "n": 10},
                                                  "mcq4": {"accuracy": 0.2667, "n": 15}}},
    "open": {"score": 41.25, "scale": "mean of the judge grade x 100", "n": 8,
             "unusable_replies_scored_0": 2,
             "ours": {"graded": 6, "mean_score_x100": 55.0, "judge_errors": 2}},
    "not_scored": 0, "other_protocols": {},
}  # fmt: skip


def benchmarks_block(models: tuple[str, ...] = MODELS[:1]) -> dict[str, Any]:
    """The ``benchmarks`` block of a run of ``models`` (per model; top level for one)."""
    out = {}
    for name, figures in (("legalbench", LEGALBENCH), ("lexam", LEXAM)):
        head = {k: figures[k] for k in ("protocol", "protocol_version", "upstream")}
        body = {k: v for k, v in figures.items() if k not in head and k != "other_protocols"}
        per_model = {}
        for n, model in enumerate(models):
            shifted = json.loads(json.dumps(body))
            if n and name == "legalbench":
                shifted["score"] = 0.5
                shifted["tasks"]["hearsay"]["test"]["value"] = 0.25
            per_model[model] = shifted
        block: dict[str, Any] = dict(head)
        if len(models) == 1:
            block.update(per_model[models[0]])
        block["models"] = per_model
        block["other_protocols"] = figures["other_protocols"]
        out[name] = block
    return out


def write_figures_run(
    root: Path, name: str = "run_figures", *, epochs: int = 3,
    cluster_by: str | None = "metadata.exam", labels: str | None = "inside",
    benchmarks: bool = True, flaky_file: bool = True,
    models: tuple[str, ...] = MODELS,
) -> Path:  # fmt: skip
    """A finished run directory; ``labels``: ``inside`` (``labels.jsonl`` beside the run,
    named absolute in the manifest), ``relative`` (named relative to where the run started),
    ``gone`` (named, then deleted) or ``None`` (no labels)."""
    run = root / "runs" / name
    run.mkdir(parents=True)
    lines = [line for line in prediction_lines(epochs) if line["model"] in models]
    _jsonl(run / "predictions.jsonl", lines)
    records = _records()
    head = {"run_id": name, "mode": "inline", "datasets": [], "record_count": len(records)}
    (run / "input_dataset.json").write_text(json.dumps({**head, "records": records}), "utf-8")
    labels_path = root / "labels.jsonl"
    _jsonl(labels_path, [row for row in label_rows() if row["model"] in models])
    configuration: dict[str, Any] = {"epochs": epochs, "epoch_reducer": "mean",
                                     "cluster_by": cluster_by, "run_dir": "runs"}  # fmt: skip
    if labels is not None:
        configuration["human_labels"] = "labels.jsonl" if labels == "relative" else str(labels_path)
    manifest = {"run_id": name, "status": "completed_with_failures", "models": list(models),
                "datasets": [], "configuration": configuration}  # fmt: skip
    (run / "run_manifest.json").write_text(json.dumps(manifest), "utf-8")
    tally = EpochSummary(epochs=epochs, cluster_by=cluster_by)
    tally.extend(lines)
    counts = MetricsAccumulator()
    for row in item_rows(load_run(run)):
        counts.add(row)
    summary: dict[str, Any] = {
        "run_id": name, **counts.to_dict(seed=7), **tally.to_dict(), "by_model": tally.by_model(),
        "bootstrap": {"seed": 7, "resamples": 300},
    }  # fmt: skip
    if benchmarks:
        summary["benchmarks"] = benchmarks_block(models if len(models) > 1 else models[:1])
    if labels is not None:
        from pytest_legaleval.metrics.audit import AuditSettings

        audit = judge_audit(lines, read_human_labels(labels_path),
                            settings=AuditSettings(seed=7, resamples=300))  # fmt: skip
        summary["judge_audit"] = audit.summary_block()
    (run / "metrics_summary.json").write_text(json.dumps(summary), "utf-8")
    if epochs > 1 and flaky_file:
        _jsonl(run / FLAKY_RECORDS, tally.flaky_lines())
    if labels == "gone":
        labels_path.unlink()
    return run
