"""Judge consistency: flip rates of re-judging and the independence of a judge panel."""

from __future__ import annotations

import itertools
import random

import pytest

from pytest_legaleval.metrics._judge_consistency import (
    ITEM,
    consistency_from_lines,
    effective_judges,
    flip_stats,
    panel_stats,
)

from .audit_lines import line


def _brute_pairwise(verdicts: list[bool]) -> float:
    pairs = list(itertools.combinations(verdicts, 2))
    return sum(a != b for a, b in pairs) / len(pairs)


def test_flip_rates_equal_a_brute_force_count() -> None:
    rng = random.Random(4)
    samples = {
        f"c{c}": [[rng.random() < p for _ in range(rng.randint(2, 6))] for p in (0.1, 0.5, 0.9)]
        for c in range(5)
    }
    samples["c0"].append([True])  # judged once: left out
    found = flip_stats(samples, max_flip_rate=0.4)
    for cid, answers in samples.items():
        kept = [a for a in answers if len(a) >= 2]
        stats = found["criteria"][cid]
        assert stats["answers"] == len(kept)
        assert stats["flip_rate"] == pytest.approx(sum(len(set(a)) > 1 for a in kept) / len(kept))
        assert stats["pairwise_disagreement"] == pytest.approx(
            sum(_brute_pairwise(a) for a in kept) / len(kept)
        )
    unstable = [c for c, s in found["criteria"].items() if s["flip_rate"] > 0.4]
    assert found["unstable_criteria"] == unstable and found["max_flip_rate"] == 0.4


def test_stable_verdicts_never_flip_and_nothing_to_compare_gives_none() -> None:
    found = flip_stats({"c": [[True, True, True], [False, False]]})
    assert found["flip_rate"] == 0.0 and found["unstable_criteria"] == []
    empty = flip_stats({"c": [[True]]})
    assert empty["flip_rate"] is None and empty["criteria"] == {}


def test_effective_judges_is_the_design_effect_formula() -> None:
    assert effective_judges(9, 0.45) == pytest.approx(9 / (1 + 8 * 0.45))
    assert effective_judges(5, 0.0) == 5 and effective_judges(5, 1.0) == 1
    assert effective_judges(5, -0.2) == 5  # negative correlation clipped at 0
    assert effective_judges(3, None) is None


def test_panel_figures_from_verdicts() -> None:
    units = [
        {"a": True, "b": True, "c": False},
        {"a": False, "b": False, "c": False},
        {"a": True, "b": True, "c": True},
        {"a": False, "b": True, "c": True},
        {"a": True, "b": False},  # c did not judge this one
    ]
    found = panel_stats(units)
    assert found is not None and found["judges"] == ["a", "b", "c"]
    ab, ac, bc = found["pairs"]
    assert ab["judges"] == ["a", "b"] and ab["units"] == 5 and ab["agreement"] == 0.6
    assert ac["units"] == 4 and ac["agreement"] == 0.5
    import statistics

    def corr(x: list[bool], y: list[bool]) -> float:
        return statistics.correlation([float(v) for v in x], [float(v) for v in y])

    assert ab["phi"] == pytest.approx(
        corr([u["a"] for u in units], [u["b"] for u in units]), abs=1e-9
    )
    rho = (ab["phi"] + ac["phi"] + bc["phi"]) / 3
    assert found["mean_correlation"] == pytest.approx(rho)
    assert found["effective_judges"] == pytest.approx(3 / (1 + 2 * max(rho, 0.0)))
    assert panel_stats([{"a": True}, {"a": False}]) is None


def _verdict(model: str, score: float, judge_epoch: int | None = None, **criteria: bool) -> dict:
    out = {
        "model": model,
        "score": score,
        "error": None,
        "criteria": [{"id": c, "met": met, "grade": float(met)} for c, met in criteria.items()],
    }
    if judge_epoch is not None:
        out["judge_epoch"] = judge_epoch
    return out


def test_flips_and_panel_from_prediction_lines() -> None:
    lines = [
        line("r1", passed=True, verdicts=[
            _verdict("j1", 0.9, 0, c1=True, c2=True),
            _verdict("j1", 0.5, 1, c1=True, c2=False),
            _verdict("j1", 0.8, 2, c1=True, c2=True),
            _verdict("j2", 0.9, 0, c1=True, c2=False),
            _verdict("j2", 0.9, 1, c1=True, c2=False),
        ]),
        line("r2", passed=False, verdicts=[
            _verdict("j1", 0.2, 0, c1=False, c2=False),
            _verdict("j1", 0.3, 1, c1=False, c2=False),
            _verdict("j2", 0.8, 0, c1=False, c2=True),
            _verdict("j2", 0.1, 1, c1=False, c2=True),
        ]),
        line("q", passed=True, grader="mcq"),
    ]  # fmt: skip
    found = consistency_from_lines(lines, max_flip_rate=0.3)
    assert found["judge_epochs"] == 3
    flips = found["flips"]
    # (item) pass at threshold 0.7: j1 on r1 T,F,T (flip); j2 on r1 T,T; j1 on r2 F,F;
    # j2 on r2 T,F (flip) -> 2 of 4. c2: j1 on r1 T,F,T (flip); the others steady -> 1 of 4.
    assert flips["criteria"][ITEM]["flip_rate"] == 0.5
    assert flips["criteria"]["c2"]["flip_rate"] == 0.25
    assert flips["criteria"]["c1"]["flip_rate"] == 0.0
    assert flips["unstable_criteria"] == [ITEM]
    panel = found["panel"]["items"]  # first judgings: r1 j1 T / j2 T; r2 j1 F / j2 T
    assert panel["judges"] == ["j1", "j2"] and panel["pairs"][0]["agreement"] == 0.5
    criteria_panel = found["panel"]["criteria"]
    assert criteria_panel["units"] == 4  # (r1, c1), (r1, c2), (r2, c1), (r2, c2)


def test_lines_without_repeated_judging_or_a_panel_give_nothing() -> None:
    lines = [line("r1", passed=True, verdicts=[_verdict("j1", 0.9, c1=True)])]
    assert consistency_from_lines(lines) == {"judge_epochs": 1, "flips": None, "panel": None}
    assert consistency_from_lines([line("r2", passed=True)])["judge_epochs"] == 0
