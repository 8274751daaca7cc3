"""Gates on any number of ``metrics_summary.json``, named by its dotted path."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.metrics._gate_paths import describe_path, parse_path, resolve_path
from pytest_legaleval.metrics._gates import default_gates, evaluate_gates, parse_gate

from .test_metrics_benchmarks import lb_line

SUMMARY: dict[str, Any] = {
    "pass_rate": 0.9,
    "benchmarks": {
        "legalbench": {
            "score": 0.62, "score_ci95": [0.5, 0.7],
            "tasks": {"opp115_user_access,_edit_and_deletion": {"test": {"value": 0.4, "n": 9}}},
            "models": {"openai/gpt-4.1": {"score": 0.7}, "ollama/llama3:8b": {"score": 0.2}},
        },
        "lexam": {"open": {"score": 61.5}, "mcq": {"accuracy": None}},
    },
    "judge_audit": {"cohen_kappa": 0.55, "ppi_pass_rate": {"estimate": 0.8, "ci95": [0.7, 0.9]}},
    "uncertainty": {"clusters": [3, 4]},
}  # fmt: skip


@pytest.mark.parametrize(
    ("text", "value", "interval", "n"),
    [
        ("benchmarks.legalbench.score", 0.62, (0.5, 0.7), 0),
        ("benchmarks.legalbench.tasks.opp115_user_access,_edit_and_deletion.test.value", 0.4,
         None, 9),
        ("benchmarks.legalbench.models.openai/gpt-4.1.score", 0.7, None, 0),  # a key with a dot
        ('benchmarks.legalbench.models["ollama/llama3:8b"].score', 0.2, None, 0),
        ("benchmarks.legalbench.models['openai/gpt-4.1'].score", 0.7, None, 0),
        ("benchmarks.lexam.open.score", 61.5, None, 0),
        ("judge_audit.cohen_kappa", 0.55, None, 0),
        ("judge_audit.ppi_pass_rate.estimate", 0.8, (0.7, 0.9), 0),
        ("uncertainty.clusters[1]", 4.0, None, 0),
    ],
)  # fmt: skip
def test_a_path_names_a_number(
    text: str, value: float, interval: tuple[float, float] | None, n: int
) -> None:
    steps = parse_path(text)
    assert steps is not None
    found = resolve_path(SUMMARY, steps)
    assert (found.found, found.value, found.interval, found.n, found.note) == (
        True, value, interval, n, "",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("text", "note"),
    [
        ("benchmarks.legalbench.scor",
         "benchmarks.legalbench has no 'scor' (it has: models, score"),
        ("benchmarks.legalbench", "benchmarks.legalbench is an object, not a number; its fields:"),
        ("benchmarks.lexam.mcq.accuracy", "benchmarks.lexam.mcq.accuracy is null"),
        ("pass_rate.low", "pass_rate is float, it has no 'low'"),
        ("uncertainty.clusters[7]", "uncertainty.clusters is a list of 2: no [7]"),
        ("nothing.here", "the summary has no 'nothing'"),
    ],
)  # fmt: skip
def test_a_path_to_no_number_says_where_it_stopped(text: str, note: str) -> None:
    steps = parse_path(text)
    assert steps is not None
    found = resolve_path(SUMMARY, steps)
    assert found.value is None and found.note.startswith(note), found.note


@pytest.mark.parametrize("text", ["pass_rate", "a..b", "a.b c", ".a", "a.", "a[b]", "[0].a", ""])
def test_what_is_not_a_path(text: str) -> None:
    assert parse_path(text) is None


def test_gate_expressions_with_paths_parse() -> None:
    gate = parse_gate("benchmarks.legalbench.score>=0.6")
    assert (gate.metric, gate.op, gate.threshold, gate.slice) == (
        "benchmarks.legalbench.score", ">=", 0.6, (),
    )  # fmt: skip
    colon = parse_gate('benchmarks.legalbench.models["ollama/llama3:8b"].score > 0.1')
    assert colon.metric == 'benchmarks.legalbench.models["ollama/llama3:8b"].score'
    assert colon.slice == ()
    sliced = parse_gate("model=ollama/llama3:8b:benchmarks.lexam.open.score>=50")
    assert sliced.slice == (("model", "ollama/llama3:8b"),) and sliced.threshold == 50
    assert parse_gate("judge_audit.cohen_kappa>=60%").threshold == 0.6
    for bad in ("pass_rat>=0.5", "benchmarks..score>=1", "benchmarks.legalbench.score>=high"):
        with pytest.raises(ConfigError, match="accepted grammar"):
            parse_gate(bad)
    # a path gate is the user's: the implicit no-error gates still apply beside it
    assert [g.metric for g in default_gates([gate])] == ["invalid_rate", "error_rate"]


def _evaluate(text: str, rows: list[dict[str, Any]], summary: dict[str, Any] | None) -> Any:
    (result,) = evaluate_gates([parse_gate(text)], rows, summary=summary)
    return result


def test_path_gates_read_the_summary_or_compute_the_benchmarks_from_the_rows() -> None:
    assert _evaluate("benchmarks.legalbench.score>=0.6", [], SUMMARY).passed is True
    assert _evaluate("benchmarks.legalbench.score>=0.63", [], SUMMARY).passed is False
    rows = [lb_line("hearsay", "test", 1, "Yes", "Yes"), lb_line("hearsay", "test", 2, "x", "No")]
    # a summary without the block (written before it existed): computed from the rows
    computed = _evaluate("benchmarks.legalbench.score>=0.5", rows, {"pass_rate": 0.5})
    assert (computed.passed, computed.value) == (True, 0.5)
    sliced = evaluate_gates(
        [parse_gate("model=other:benchmarks.legalbench.score>=0.1")], rows, summary=SUMMARY
    )
    assert sliced[0].passed is False and "no 'legalbench'" in sliced[0].note
    typo = _evaluate("benchmarks.legalbench.scor>=0.1", rows, SUMMARY)
    assert typo.passed is False and typo.value is None
    assert "has no 'scor'" in typo.describe() and "(it has:" in typo.describe()
    null = _evaluate("benchmarks.lexam.mcq.accuracy>=0.1", rows, SUMMARY)
    assert null.passed is False and "is null" in null.note
    kappa = _evaluate("judge_audit.cohen_kappa<0.6", [], SUMMARY)
    assert kappa.passed is True and kappa.to_dict()["metric"] == "judge_audit.cohen_kappa"


keys = st.text(
    st.characters(
        blacklist_categories=("Cc", "Cs", "Zs", "Zl", "Zp"), blacklist_characters=".[]\"'<>=!"
    ),
    min_size=1,
    max_size=6,
)
leaves = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=3))
blocks = st.recursive(leaves, lambda inner: st.dictionaries(keys, inner, max_size=4), max_leaves=12)


@given(blocks, st.lists(keys, min_size=2, max_size=5))
def test_resolving_any_path_in_any_block_never_raises(block: Any, parts: list[str]) -> None:
    steps = parse_path(".".join(parts))
    assert steps is not None and describe_path(steps) == ".".join(parts)
    found = resolve_path({"root": block}, (("root", False), *steps))
    assert found.value is None or isinstance(found.value, float)
    assert found.found or found.note


def test_an_audit_gate_prints_the_number_of_labels_it_used() -> None:
    # the issue: "judge_audit.cohen_kappa>=0.6" printed n=0 with 6 labels
    summary = {
        "judge_audit": {
            "labelled": 6,
            "score_labelled": 4,
            "cohen_kappa": 0.7,
            "cohen_kappa_ci95": [0.2, 1.0],
            "krippendorff_alpha": 0.5,
            "ppi_pass_rate": {"estimate": 0.8, "ci95": [0.5, 1.0], "labelled": 6},
        }
    }
    gates = [
        parse_gate("judge_audit.cohen_kappa>=0.6"),
        parse_gate("judge_audit.krippendorff_alpha>=0.4"),
        parse_gate("judge_audit.ppi_pass_rate.estimate>=0.6"),
    ]
    kappa, alpha, ppi = evaluate_gates(gates, [], summary=summary)
    assert (kappa.n, alpha.n, ppi.n) == (6, 4, 6)
    assert kappa.describe().endswith("(95% CI 0.2000–1), n=6")
