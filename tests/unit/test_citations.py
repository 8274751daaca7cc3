from __future__ import annotations

import pytest

from pytest_legaleval.grading._citations import check_citations, cited_markers, curated_targets

CONTEXTS = ["[1] a", "[2] b", "[3] c"]


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("no citations", ()),
        ("see [2] and [1]", (1, 2)),
        ("both [1, 3]", (1, 3)),
        ("range [1-3]; again [2]", (1, 2, 3)),
        ("en dash [2–3] and a link [x] and [1a]", (2, 3)),
        ("wide [1-9999]", (1, 9999)),
    ],
)
def test_cited_markers(answer: str, expected: tuple[int, ...]) -> None:
    assert cited_markers(answer) == expected


def test_valid_citations_covering_the_curated_ones_pass() -> None:
    check = check_citations("72 hours [1], notify [2].", CONTEXTS, [{"marker": "[2]"}])
    assert check.passed and check.score == 1.0
    assert (check.cited, check.unknown, check.missing, check.required) == ((1, 2), (), (), (2,))


def test_a_marker_beyond_the_contexts_fails() -> None:
    check = check_citations("per [4] and [1]", CONTEXTS)
    assert not check.passed
    assert check.unknown == (4,)
    assert check.score == 0.5


def test_a_missing_curated_citation_fails() -> None:
    curated = [{"marker": "[1]"}, {"number": 3}]
    check = check_citations("only [1]", CONTEXTS, curated)
    assert not check.passed
    assert check.missing == (3,)
    assert check.score == 0.5


def test_curated_citations_resolve_by_marker_number_or_source() -> None:
    curated = [{"marker": 2}, {"number": 1}, {"source": "s3"}, {"span": "text"}]
    assert curated_targets(curated, ["s1", "s2", "s3"]) == ((1, 2, 3), 1)


def test_no_citations_and_nothing_required_pass_with_full_score() -> None:
    check = check_citations("an answer", CONTEXTS)
    assert check.passed and check.score == 1.0 and check.cited == ()
