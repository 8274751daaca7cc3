"""Expert–expert agreement against the reference libraries: scikit-learn's Cohen's κ,
statsmodels' Fleiss' κ and the krippendorff package's nominal α."""

from __future__ import annotations

import random

import pytest

from pytest_legaleval.metrics._audit_items import ItemFacts, ItemVerdict, RunItems, Verdict
from pytest_legaleval.metrics._expert_agreement import (
    NO_SHARED,
    expert_agreement,
    fleiss_kappa,
    krippendorff_alpha_nominal,
)
from pytest_legaleval.metrics._human_labels import HumanLabel, LabelFile

from ..extras import needs_stats


def _label(record: str, rater: str, passed: bool, criterion: str | None = None) -> HumanLabel:
    return HumanLabel(record, "m", criterion, passed, None, rater, "f", 0, "labels[0]", "f")


def _run(judge: dict[str, bool], criteria: dict[str, dict[str, bool]] | None = None) -> RunItems:
    items = RunItems()
    for record, passed in judge.items():
        marks = (criteria or {}).get(record, {})
        found = {cid: Verdict(met, float(met)) for cid, met in marks.items()}
        items.verdicts[(record, "m")] = ItemVerdict(
            record, "m", "p", passed, None, 0.7, found, "", {}
        )
        items.facts[(record, "m")] = ItemFacts(True, True, 0.7, set(found))
        items.models_by_record[record] = {"m"}
    return items


@needs_stats
def test_fleiss_and_alpha_match_the_reference_libraries_on_random_tables() -> None:
    import krippendorff
    import numpy as np
    from statsmodels.stats import inter_rater

    rng = random.Random(3)
    for raters in (2, 3, 5):
        for _ in range(20):
            units = [[rng.random() < 0.6 for _ in range(raters)] for _ in range(rng.randint(3, 40))]
            table = np.array([[len(u) - sum(u), sum(u)] for u in units])
            ours = fleiss_kappa(units)
            with np.errstate(invalid="ignore", divide="ignore"):  # their NaN is our None
                theirs = inter_rater.fleiss_kappa(table)
            if ours is None:
                assert not np.isfinite(theirs) or len({v for u in units for v in u}) == 1
            else:
                assert ours == pytest.approx(theirs, abs=1e-9)
            data = np.array(units, dtype=float).T  # raters × units
            alpha = krippendorff_alpha_nominal(units)
            if alpha is not None:
                expected = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
                assert alpha == pytest.approx(expected, abs=1e-9)


@needs_stats
def test_alpha_with_missing_labels_matches_krippendorff() -> None:
    import krippendorff
    import numpy as np

    rng = random.Random(5)
    for _ in range(20):
        grid = [[rng.choice([True, False, None]) for _ in range(4)] for _ in range(30)]
        units = [[v for v in row if v is not None] for row in grid]
        data = np.array([[np.nan if v is None else float(v) for v in row] for row in grid]).T
        ours = krippendorff_alpha_nominal(units)
        if ours is not None:
            theirs = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
            assert ours == pytest.approx(theirs, abs=1e-9)


@needs_stats
def test_two_raters_get_cohen_kappa_beside_the_judge_s_equal_to_sklearn() -> None:
    import krippendorff
    import numpy as np
    from sklearn import metrics

    rng = random.Random(11)
    records = [f"r{i}" for i in range(40)]
    judge = {r: rng.random() < 0.5 for r in records}
    alice = {r: rng.random() < 0.6 for r in records}
    bob = {r: (alice[r] if rng.random() < 0.7 else not alice[r]) for r in records[:25]}
    labels = LabelFile(
        labels=[_label(r, "alice", v) for r, v in alice.items()]
        + [_label(r, "bob", v) for r, v in bob.items()]
    )
    block = expert_agreement(labels, _run(judge), resamples=200)["items"]
    shared = records[:25]
    assert block["raters"] == ["alice", "bob"] and block["shared_items"] == 25
    assert block["method"] == "cohen_kappa"
    expected = metrics.cohen_kappa_score([alice[r] for r in shared], [bob[r] for r in shared])
    assert block["kappa"] == pytest.approx(expected, abs=1e-12)
    low, high = block["kappa_ci95"]
    assert low <= block["kappa"] <= high
    for name, votes in (("alice", alice), ("bob", bob)):
        theirs = metrics.cohen_kappa_score([judge[r] for r in shared], [votes[r] for r in shared])
        assert block["judge_kappa_by_rater"][name] == {"n": 25, "kappa": pytest.approx(theirs)}
    mean = (block["judge_kappa_by_rater"]["alice"]["kappa"]
            + block["judge_kappa_by_rater"]["bob"]["kappa"]) / 2  # fmt: skip
    assert block["judge_kappa"] == pytest.approx(mean)
    data = np.array([[float(alice[r]) for r in shared], [float(bob[r]) for r in shared]])
    assert block["krippendorff_alpha"] == pytest.approx(
        krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
    )


@needs_stats
def test_three_raters_get_fleiss_kappa_per_criterion_and_pooled() -> None:
    import numpy as np
    from statsmodels.stats import inter_rater

    rng = random.Random(2)
    records = [f"r{i}" for i in range(15)]
    criteria = {r: {"a": rng.random() < 0.5, "b": rng.random() < 0.5} for r in records}
    votes = {(r, c, who): rng.random() < 0.5 for r in records for c in "ab" for who in "xyz"}
    labels = LabelFile(labels=[_label(r, who, v, c) for (r, c, who), v in votes.items()])
    found = expert_agreement(labels, _run(dict.fromkeys(records, True), criteria), resamples=200)
    assert found["items"] is None and found["notes"]["items"] == NO_SHARED
    for cid in "ab":
        block = found["by_criterion"][cid]
        table = np.array(
            [[3 - sum(votes[(r, cid, w)] for w in "xyz"), sum(votes[(r, cid, w)] for w in "xyz")]
             for r in records]
        )  # fmt: skip
        assert block["method"] == "fleiss_kappa" and block["fleiss_items"] == 15
        assert block["kappa"] == pytest.approx(inter_rater.fleiss_kappa(table), abs=1e-9)
    assert found["criteria"]["shared_items"] == 30


def test_one_verdict_throughout_is_undefined_with_a_note_not_nan() -> None:
    labels = LabelFile(labels=[_label(f"r{i}", who, True) for i in range(5) for who in ("a", "b")])
    block = expert_agreement(labels, _run({f"r{i}": True for i in range(5)}))["items"]
    assert block["kappa"] is None and block["kappa_ci95"] is None
    assert "undefined" in block["notes"]["kappa"]
    assert block["krippendorff_alpha"] is None
    assert fleiss_kappa([]) is None and fleiss_kappa([[True, False], [True]]) is None
