"""The metrics and gates take typed prediction lines (issue 42, "types to the end").

``records.PredictionLine`` is the one type a prediction line has once read: the reader that
checks ``predictions.jsonl`` (``metrics._rundir_check.prediction_lines``) makes it, checking
every field it declares, and the metrics and gates take nothing looser. Three guards:

* the public entry points that take lines are annotated with ``PredictionLine`` (or an
  iterable, sequence or list of it), read back through ``typing.get_type_hints``;
* an AST sweep of ``metrics/``, the gates and the tally finds no parameter named like a
  line (``line``, ``rows``, ``result`` …) typed ``Mapping[str, Any]`` or ``dict``, bar the
  few that truly take other rows, each listed with its reason;
* the keys the metrics read from typed lines (``line.get("k")``, ``row["k"]``, ``"k" in
  line``, which mypy does not check for ``.get``) are keys the type declares.
"""

from __future__ import annotations

import ast
import collections.abc
import json
import types
import typing
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, get_args, get_origin, get_type_hints

import pytest

from pytest_legaleval.metrics import _audit as audit
from pytest_legaleval.metrics import _audit_items as audit_items
from pytest_legaleval.metrics import _baseline as baseline
from pytest_legaleval.metrics import _benchmarks as benchmarks
from pytest_legaleval.metrics import _epoch_summary as epoch_summary
from pytest_legaleval.metrics import _epochs as epochs
from pytest_legaleval.metrics import _gate_paths as gate_paths
from pytest_legaleval.metrics import _gates as gates
from pytest_legaleval.metrics import _judge_consistency as judge_consistency
from pytest_legaleval.metrics import _lines as lines
from pytest_legaleval.metrics import _power as power
from pytest_legaleval.metrics import _runfiles as runfiles
from pytest_legaleval.metrics import _slices as slices
from pytest_legaleval.metrics import _summary as summary
from pytest_legaleval.metrics._artifacts import FinishedRun
from pytest_legaleval.metrics._human_labels import LabelFile
from pytest_legaleval.metrics._rundir_check import (
    RunDirectoryError,
    as_prediction_line,
    checked_lines,
    prediction_lines,
)
from pytest_legaleval.pytest import gating
from pytest_legaleval.records import PredictionLine
from pytest_legaleval.run import tally

PACKAGE = Path(__file__).parents[2] / "pytest_legaleval"

# (callable or class, parameter) of every public entry point that takes prediction lines.
ENTRY_POINTS: list[tuple[Callable[..., Any] | type, str]] = [
    (summary.MetricsAccumulator.add, "result"),
    (summary.MetricsAccumulator.add_epoch, "line"),
    (slices.SliceAccumulator.add, "result"),
    (slices.SliceAccumulator.add_epoch, "line"),
    (epochs.item_key, "row"),
    (epochs.epoch_of, "row"),
    (epochs.epoch_verdict, "row"),
    (epochs.group_items, "rows"),
    (epochs.reduce_rows, "rows"),
    (epochs.EpochItem, "lines"),
    (epoch_summary.EpochSummary.add, "row"),
    (epoch_summary.EpochSummary.extend, "rows"),
    (lines.slim_line, "row"),
    (baseline.pair_fields, "row"),
    (baseline.rubric_scorings, "rows"),
    (baseline.check_same_scoring, "baseline"),
    (baseline.check_same_scoring, "current"),
    (baseline.compare_runs, "baseline"),
    (baseline.compare_runs, "current"),
    (baseline.PairedItem, "baseline"),
    (power.estimate_model, "rows"),
    (power.plan, "baseline_rows"),
    (gates.block_from_rows, "rows"),
    (gates.evaluate_gates, "rows"),
    (gate_paths.path_value, "slice_rows"),
    (audit.judge_audit, "lines"),
    (audit_items.collect_items, "lines"),
    (audit_items.epoch_verdict, "line"),
    (audit_items.is_judge_graded, "line"),
    (judge_consistency.consistency_from_lines, "lines"),
    (benchmarks.benchmark_figures, "lines"),
    (tally.RunTally.add_item, "line"),
    (tally.RunTally.add_epoch, "line"),
    (tally.line_figures, "lines"),
    (runfiles.RunData, "predictions"),
    (FinishedRun, "predictions"),
    (gating.Baseline, "predictions"),
]


def _mentions(hint: Any, target: Any) -> bool:
    return hint is target or any(_mentions(arg, target) for arg in get_args(hint))


def _loose(hint: Any) -> bool:
    """A ``Mapping``/``dict``/``Any`` anywhere in the hint: a line typed loosely."""
    if hint is Any:
        return True
    if get_origin(hint) in (dict, typing.Mapping, collections.abc.Mapping):
        return True
    return any(_loose(arg) for arg in get_args(hint))


def _typed_as_lines(hint: Any) -> bool:
    """``PredictionLine`` itself, or a container or callable of lines, maybe optional."""
    if hint is PredictionLine:
        return True
    origin = get_origin(hint)
    args = [a for a in get_args(hint) if a is not type(None)]
    if origin in (typing.Union, types.UnionType):
        return len(args) == 1 and _typed_as_lines(args[0])
    if origin in (list, tuple, Iterable, Iterator, Sequence):
        return _mentions(hint, PredictionLine) and not _loose(hint)
    if origin is collections.abc.Callable:
        return _typed_as_lines(args[-1])
    if origin is collections.abc.Mapping:  # Mapping[int, PredictionLine]: epoch -> line
        return args[-1] is PredictionLine
    return False


@pytest.mark.parametrize(
    ("owner", "name"), ENTRY_POINTS, ids=[f"{o.__qualname__}.{n}" for o, n in ENTRY_POINTS]
)
def test_an_entry_point_that_takes_prediction_lines_is_typed_with_them(
    owner: Callable[..., Any] | type, name: str
) -> None:
    hints = get_type_hints(owner, localns={"LabelFile": LabelFile})  # a TYPE_CHECKING name
    assert name in hints, f"{owner.__qualname__} has no annotated {name!r}"
    assert _typed_as_lines(hints[name]), f"{owner.__qualname__}({name}: {hints[name]!r})"


def test_the_check_of_the_annotations_fails_on_a_loose_one() -> None:
    from collections.abc import Mapping

    assert not _typed_as_lines(Mapping[str, Any])
    assert not _typed_as_lines(Iterable[Mapping[str, Any]])
    assert not _typed_as_lines(dict[str, Any] | None)
    assert not _typed_as_lines(Iterable[PredictionLine | Mapping[str, Any]])
    assert _typed_as_lines(Callable[[], Iterable[PredictionLine]])
    assert _typed_as_lines(PredictionLine | None)


# -- the sweep -----------------------------------------------------------------------------

SWEPT = [*sorted((PACKAGE / "metrics").glob("*.py")), PACKAGE / "pytest" / "gating.py",
         PACKAGE / "run" / "tally.py"]  # fmt: skip
LINE_NAMES = frozenset(
    {"line", "lines", "row", "rows", "result", "results", "predictions", "baseline", "current",
     "slice_rows", "baseline_rows"}
)  # fmt: skip
NOT_LINES = {
    ("_clustered.py", "cluster_value", "row"): "a dataset record or a line (power, run_checks)",
    ("_clustered.py", "slim_cluster_field", "row"): "a record or a line, and nested parts",
    ("_gates.py", "_row_value", "row"): "a line or an invalid item's row (runfiles.invalid_items)",
    ("_gates.py", "row_matches", "row"): "a line or an invalid item's row",
    ("_items.py", "failure_type", "result"): "an EvalResult's dict (run.artifacts) or a line",
    ("_items.py", "item_category", "result"): "an outcome/reason pair (pytest.outcomes) or a line",
    ("_items.py", "record_key", "result"): "an EvalResult's dict or a line",
    ("_items.py", "attachment_warnings", "result"): "an EvalResult's dict (report.texts) or a line",
    ("_rundir_check.py", "_check_fields", "row"): "the conversion itself: a parsed, untyped row",
    ("_rundir_check.py", "as_prediction_line", "row"): "the conversion itself",
    ("_calibration.py", "_gap", "row"): "a calibration table row",
    ("_human_labels.py", "_label_row", "row"): "a human label row",
    ("_human_labels.py", "labels_from_rows", "rows"): "human label rows",
    ("_artifacts.py", "register_artifact", "row"): "a row of the artifact table",
    ("gating.py", "__init__", "baseline"): "the Baseline (its predictions are typed)",
}


def loosely_typed_line_parameters(source: str, module: str) -> list[str]:
    """``module:function(parameter)`` of every line-named parameter not typed as lines."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]:
            if arg.arg not in LINE_NAMES or arg.annotation is None:
                continue
            if "PredictionLine" in ast.unparse(arg.annotation):
                continue
            if (module, node.name, arg.arg) not in NOT_LINES:
                found.append(f"{module}:{node.name}({arg.arg}: {ast.unparse(arg.annotation)})")
    return found


def test_no_metrics_or_gate_function_takes_lines_typed_loosely() -> None:
    offenders = [
        found
        for path in SWEPT
        for found in loosely_typed_line_parameters(path.read_text("utf-8"), path.name)
    ]
    assert offenders == [], "type these with records.PredictionLine (or list why in NOT_LINES)"


def test_the_sweep_catches_a_line_typed_loosely_again() -> None:
    source = (
        "def add(self, result: Mapping[str, Any]) -> None: ...\n"
        "def reduce(rows: Iterable[dict[str, Any]]) -> None: ...\n"
        "def fine(rows: Iterable[PredictionLine], record: Mapping[str, Any]) -> None: ...\n"
    )
    assert loosely_typed_line_parameters(source, "x.py") == [
        "x.py:add(result: Mapping[str, Any])",
        "x.py:reduce(rows: Iterable[dict[str, Any]])",
    ]


# -- the keys read ---------------------------------------------------------------------------


def _typed_names(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """Names that hold one typed line in ``function``: its parameters and annotated names,
    and the loop variables over a parameter that holds several."""
    single: set[str] = set()
    several: set[str] = set()
    annotated = [(a.arg, a.annotation) for a in [*function.args.args, *function.args.kwonlyargs]]
    annotated += [
        (n.target.id, n.annotation)
        for n in ast.walk(function)
        if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
    ]
    for name, annotation in annotated:
        text = ast.unparse(annotation) if annotation is not None else ""
        if text.removesuffix(" | None") in ("PredictionLine", "ItemLine"):
            single.add(name)
        elif "PredictionLine" in text:
            several.add(name)
    for node in ast.walk(function):
        if isinstance(node, ast.For | ast.comprehension):
            if isinstance(node.iter, ast.Name) and node.iter.id in several:
                if isinstance(node.target, ast.Name):
                    single.add(node.target.id)
    return single


def keys_read(source: str) -> list[tuple[str, str]]:
    """``(function, key)`` of every literal key read from a typed line in ``source``."""
    found = []
    for function in ast.walk(ast.parse(source)):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        names = _typed_names(function)
        for node in ast.walk(function):
            owner = key = None
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "get"
                and node.args
            ):
                owner, key = node.func.value, node.args[0]
            elif isinstance(node, ast.Subscript):
                owner, key = node.value, node.slice
            elif isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.In | ast.NotIn):
                owner, key = node.comparators[0], node.left
            if (
                isinstance(owner, ast.Name)
                and owner.id in names
                and isinstance(key, ast.Constant)
                and isinstance(key.value, str)
            ):
                found.append((function.name, key.value))
    return found


def test_the_keys_the_metrics_read_from_lines_are_the_lines_keys() -> None:
    declared = set(get_type_hints(PredictionLine)) | set(get_type_hints(lines.Reduction))
    read = [
        (path.name, function, key)
        for path in SWEPT
        for function, key in keys_read(path.read_text("utf-8"))
    ]
    assert len(read) > 50  # the scan sees the metrics' reads (74 when written)
    assert [r for r in read if r[2] not in declared] == []


def test_the_key_scan_sees_reads_through_get_subscripts_in_and_loops() -> None:
    source = (
        "def f(line: PredictionLine, rows: Iterable[PredictionLine], other: dict) -> None:\n"
        "    line.get('response'); line['score']; 'epochs' in line; other.get('no')\n"
        "    for row in rows:\n"
        "        row.get('dataset')\n"
    )
    assert sorted(keys_read(source)) == [
        ("f", "dataset"), ("f", "epochs"), ("f", "response"), ("f", "score")
    ]  # fmt: skip


# -- the one checked conversion --------------------------------------------------------------

GOOD: dict[str, Any] = {
    "artifact_version": 2, "run_id": "r", "item_id": "i", "record_id": "q1", "dataset": "d",
    "dataset_id": "d", "dataset_version": None, "record_sha256": "0" * 64, "task_type": "mcq",
    "tags": ["a"], "metadata": {"k": 1}, "model": "m", "source": "live",
    "model_response": "A", "outcome": "passed", "passed": True, "score": 1, "reason": "",
    "explanation": "", "grader": "mcq", "evaluator_scores": {}, "evaluator": {},
    "generation_settings": {}, "details": {}, "judge": None, "policy_id": None,
    "policy_sha256": None, "policy_version": None, "scoring": None, "scoring_version": None,
    "latency_ms": 1.5, "input_tokens": 3, "output_tokens": None, "total_tokens": 3,
    "first_attempt_at": None, "last_attempt_at": None, "attempts": [{"n": 1}],
    "attempt_count": 1, "failure_type": None, "test_outcome": "passed", "epoch": 0,
}  # fmt: skip


def _wrong(value: Any) -> Any:
    """A value of another JSON type than ``value``'s."""
    if isinstance(value, bool):
        return "yes"
    if isinstance(value, int | float):
        return "1"
    if isinstance(value, str):
        return 1
    if isinstance(value, list):
        return {}
    return []  # in place of an object


def test_the_good_line_holds_every_declared_field() -> None:
    assert set(GOOD) == set(get_type_hints(PredictionLine))


@pytest.mark.parametrize("name", sorted(GOOD))
def test_every_declared_field_of_the_wrong_type_is_refused_by_name(
    tmp_path: Path, name: str
) -> None:
    row = {**GOOD, name: _wrong(GOOD[name]) if GOOD[name] is not None else []}
    path = tmp_path / "shard_predictions.jsonl"  # any name: the reader says what it reads
    path.write_text(json.dumps(GOOD) + "\n" + json.dumps(row) + "\n", encoding="utf-8")
    read = prediction_lines(path)
    assert next(read) == GOOD
    with pytest.raises(RunDirectoryError, match=rf"shard_predictions\.jsonl:2: {name} must"):
        next(read)


def test_items_of_list_fields_and_nulls_of_required_fields_are_checked(tmp_path: Path) -> None:
    for change, message in [
        ({"tags": ["a", 3]}, "tags must be a list, each item a string"),
        ({"attempts": [{"n": 1}, "x"]}, "attempts must be a list, each item an object"),
        ({"record_id": None}, "record_id must be a string"),
        ({"epoch": -1}, "epoch must be a non-negative integer"),
        ({"score": "0.5"}, "score must be a number or null"),
        ({"cost_usd": "1"}, "cost_usd must be a number"),
    ]:
        with pytest.raises(RunDirectoryError, match=message):
            as_prediction_line({**GOOD, **change}, "here")


def test_what_older_runs_wrote_still_reads(tmp_path: Path) -> None:
    old = {"record_id": "q", "dataset": "d", "model": "m", "outcome": "passed",
           "passed": 1, "score": True, "unknown_key": object.__name__}  # fmt: skip
    assert as_prediction_line(old) is old  # a check, then the same object, typed
    path = tmp_path / "predictions.jsonl"
    path.write_text(json.dumps(old) + "\n\n", encoding="utf-8")
    assert list(prediction_lines(path)) == [old]
    assert list(prediction_lines(tmp_path / "absent.jsonl")) == []


def test_only_prediction_lines_get_the_field_check(tmp_path: Path) -> None:
    # A failure line may quote a dataset's own bad values; it is no prediction line.
    other = tmp_path / "failures.jsonl"
    other.write_text(json.dumps({"record_id": 7, "tags": "x"}) + "\n", encoding="utf-8")
    assert next(checked_lines(other))["record_id"] == 7
    with pytest.raises(RunDirectoryError, match="record_id must be a string"):
        next(prediction_lines(other))


def test_a_slim_line_keeps_what_pairing_reads_and_the_cluster_field() -> None:
    line = as_prediction_line(
        {**GOOD, "details": {"threshold": 0.7, "other": 1}, "metadata": {"course": "x", "y": 2}}
    )
    slim = lines.slim_line(line, cluster_by="metadata.course")
    assert slim == {
        **{k: GOOD[k] for k in lines.SLIM_KEYS if k in GOOD},
        "details": {"threshold": 0.7},
        "metadata": {"course": "x"},
    }
    assert lines.slim_line({"record_id": "q"}) == {"record_id": "q"}  # absent keys stay absent


def test_what_the_writer_writes_passes_the_readers_check() -> None:
    from pytest_legaleval.records import EvalResult, JudgeSummary, Provenance
    from pytest_legaleval.run.artifacts import prediction_line

    result = EvalResult(
        record_id="r1", dataset="d", task_type="rubric_qa", model="m", source="responses",
        outcome="failed", passed=False, score=0.25, reason="below_threshold", explanation="",
        response="B", grader="judge:rubric", details={"threshold": 0.5},
        judge=JudgeSummary.from_dict({"score": 0.25, "models": ["j"], "verdicts": []}),
        attempts=({"attempt": 1, "status": "ok"},), epoch=1,
    )  # fmt: skip
    provenance = Provenance(index=0, dataset_version=None, tags=("t",), metadata={"k": 1},
                            source_index=0)  # fmt: skip
    written = prediction_line("run", "item", result.to_dict(), "failed", record=provenance,
                              generation_settings={"temperature": 0}, version="0")  # fmt: skip
    line = json.loads(json.dumps(written))  # as it is read back from the file
    assert as_prediction_line(line, "written") is line
    # A hand-made result without a dataset still gets a string dataset_id (the type's).
    partial = prediction_line("run", "item", {"record_id": "r", "outcome": "passed"}, "passed",
                              record=None, generation_settings={}, version="0")  # fmt: skip
    assert as_prediction_line(json.loads(json.dumps(partial)))["dataset_id"] == ""
