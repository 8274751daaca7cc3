"""A benchmark is one object: a toy protocol registered from this file reaches every layer.

The toy protocol (``toy_official``, benchmark ``toybench``) is one class plus one
:func:`~pytest_legaleval.grading.register_protocol` call. A real session under it shows
its figures in ``metrics_summary.json``, its line in the terminal, a gate on its figure,
and its section and card in the HTML report — with no other module naming it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_legaleval.grading._base import Grade, GradeRequest
from pytest_legaleval.grading._protocols import (
    BenchmarkProtocol,
    Card,
    Cell,
    Row,
    Table,
    Upstream,
    figure,
    protocols,
    register,
    unregister,
)
from pytest_legaleval.metrics._runfiles import load_run
from pytest_legaleval.records import Record
from pytest_legaleval.report import render_report

from .conftest import read_jsonl, run_dirs, run_eval, write_jsonl

POLICY = """\
id: toy_official
version: 1
description: the toy benchmark's own protocol (a test's)
pass_threshold: 1.0
"""


class _ToyTally:
    def __init__(self) -> None:
        self.words: list[int] = []
        self.not_scored = 0

    def add(self, line: Mapping[str, Any], record: Record | None) -> None:
        official = (line.get("details") or {}).get("official") or {}
        if isinstance(official.get("words"), int):
            self.words.append(official["words"])
        else:
            self.not_scored += 1


class _WordGrader:
    """Passes an answer of exactly three words; the official fact is the word count."""

    name = "toy_words"
    needs_judge = False

    async def grade(self, request: GradeRequest) -> Grade:
        words = len(request.answer.split())
        official = {"benchmark": "toybench", "words": words}
        if words == 3:
            return Grade.passing(self.name, official=official)
        return Grade.failing(self.name, "wrong_answer", f"{words} words", official=official)


class ToyProtocol(BenchmarkProtocol):
    id = "toy_official"
    benchmark = "toybench"
    title = "ToyBench"
    version = 7
    upstream = Upstream("example/toybench", "0123456789abcdef0123")

    def tally(self) -> _ToyTally:
        return _ToyTally()

    def figures(self, tallies: Sequence[Any]) -> dict[str, Any]:
        means = [sum(t.words) / len(t.words) for t in tallies if t.words]
        return {
            "mean_words": sum(means) / len(means) if means else None,
            "n": len(tallies[0].words),
            "not_scored": tallies[0].not_scored,
        }

    def terminal_line(self, figures: Mapping[str, Any]) -> str:
        return f"mean words {figure(figures.get('mean_words'), 2)} (n={figures.get('n')})"

    def report_intro(self) -> str:
        return "Words per answer, counted by `str.split`."

    def report_tables(self, models: Sequence[tuple[str, Mapping[str, Any]]]) -> list[Table]:
        head = Row((Cell("model", kind="", header=True), Cell("mean words", header=True)))
        rows = tuple(
            Row(
                (Cell(m or "this run", kind=""), Cell(figure(f.get("mean_words"), 2))),
                data=(("model", m),),
            )
            for m, f in models
        )
        return [Table("toybench-headline", (head,), rows)]

    def cards(self, figures: Mapping[str, Any], protocol: str) -> list[Card]:
        return [Card("ToyBench words (official)", figure(figures.get("mean_words"), 2),
                     "benchmarks.toybench.mean_words", protocol)]  # fmt: skip

    def graders(self) -> list[tuple[Any, str | None]]:
        return [(_WordGrader(), None)]


@pytest.fixture
def toy() -> Iterator[ToyProtocol]:
    protocol = register(ToyProtocol())
    try:
        yield protocol
    finally:
        unregister(protocol.id)
    assert all(p.id != "toy_official" for p in protocols())


def test_a_toy_protocol_reaches_the_summary_terminal_gates_and_report(
    pytester: pytest.Pytester, suite: Path, toy: ToyProtocol
) -> None:
    (pytester.path / "policies").mkdir()
    (pytester.path / "policies" / "toy_official.yaml").write_text(POLICY, encoding="utf-8")
    records = [
        {"schema_version": "legal_eval_v1", "id": f"toy:{n}", "dataset": "toybench",
         "task_type": "reference_qa", "prompt": f"Say something {n}.",
         "reference_answers": ["three words here"],
         "metadata": {"policy_id": "toy_official"}}
        for n in range(3)
    ]  # fmt: skip
    data = write_jsonl(pytester.path / "toy.jsonl", records)
    answers = ["one two three", "one two", "a b c d e f g"]
    responses = write_jsonl(
        pytester.path / "responses.jsonl",
        [{"record_id": f"toy:{n}", "response": a} for n, a in enumerate(answers)],
    )
    result = run_eval(
        pytester, data, responses, "--policy-dir", "policies",
        "--gate", "benchmarks.toybench.mean_words>=4",
    )  # fmt: skip
    # the gate reads the protocol's figure: (3 + 2 + 7) / 3 = 4
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.fnmatch_lines(["*official toybench (toy_official): mean words 4.00 (n=3)*"])
    (run,) = run_dirs(pytester.path / "runs")
    summary = json.loads((run / "metrics_summary.json").read_text(encoding="utf-8"))
    block = summary["benchmarks"]["toybench"]
    assert block["mean_words"] == 4.0 and block["n"] == 3 and block["not_scored"] == 0
    assert (block["protocol"], block["protocol_version"]) == ("toy_official", 7)
    assert block["upstream"] == {"repo": "example/toybench", "commit": "0123456789abcdef0123"}
    lines = read_jsonl(run / "predictions.jsonl")
    assert [p["passed"] for p in sorted(lines, key=lambda p: p["record_id"])] == [
        True, False, False,
    ]  # fmt: skip
    failing = run_eval(
        pytester, data, responses, "--policy-dir", "policies",
        "--gate", "benchmarks.toybench.mean_words>4",
    )  # fmt: skip
    failing.stdout.fnmatch_lines(["FAILED gate benchmarks.toybench.mean_words>4*"])
    assert failing.ret == pytest.ExitCode.TESTS_FAILED
    page = render_report(load_run(run))
    assert '<div class="benchmark" data-benchmark="toybench"><h3>ToyBench</h3>' in page
    assert "toy_official</code> version <b>7</b>" in page
    assert "counted by <code>str.split</code>" in page
    assert '<table class="official" id="toybench-headline">' in page
    assert 'data-metric="benchmarks.toybench.mean_words"' in page
    assert "<td class=num>4.00</td>" in page


def test_the_importers_choices_name_every_registered_protocol_with_a_source() -> None:
    # An importer only names a protocol (importers and grading never import each other):
    # the importer's table and the registry must agree.
    from pytest_legaleval.importers.protocols import PROTOCOLS

    sourced = [p for p in protocols() if p.source is not None]
    assert {p.benchmark for p in sourced} >= {"legalbench", "lexam"}
    for protocol in sourced:
        assert protocol.source is not None
        choices = PROTOCOLS[protocol.source]
        assert choices.default == protocol.id and protocol.id in choices.names


def test_a_protocol_without_figures_cannot_be_registered() -> None:
    class Half(BenchmarkProtocol):
        id = "half"
        benchmark = "half"
        title = "Half"

        def tally(self) -> _ToyTally:
            return _ToyTally()

    with pytest.raises(TypeError, match="abstract"):
        Half()  # type: ignore[abstract]
