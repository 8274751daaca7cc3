"""Properties of the gate grammar and of McNemar's exact test."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.metrics._baseline import mcnemar_exact
from pytest_legaleval.metrics._gates import METRICS, OPERATORS, SLICE_KEYS, parse_gate

values = st.text(
    st.characters(blacklist_categories=("Cs", "Cc", "Zs", "Zl", "Zp"), blacklist_characters=",="),
    min_size=1,
    max_size=20,
).filter(lambda v: v == v.strip())


@given(
    metric=st.sampled_from(list(METRICS)),
    op=st.sampled_from(list(OPERATORS)),
    fraction=st.floats(min_value=0, max_value=1, allow_nan=False),
    conditions=st.lists(st.tuples(st.sampled_from(SLICE_KEYS), values), max_size=3),
)
def test_formatted_gates_parse_back(
    metric: str, op: str, fraction: float, conditions: list[tuple[str, str]]
) -> None:
    # rates take a share in [0, 1]; latency and cost any non-negative number
    threshold = fraction if METRICS[metric].rate else fraction * 1e6
    head = ",".join(f"{k}={v}" for k, v in conditions)
    text = f"{head}:{metric}{op}{threshold!r}" if conditions else f"{metric}{op}{threshold!r}"
    gate = parse_gate(text)
    assert (gate.metric, gate.op, gate.slice) == (metric, op, tuple(conditions))
    assert math.isclose(gate.threshold, threshold, rel_tol=1e-12, abs_tol=0)


@given(st.text(max_size=40))
def test_any_text_parses_or_raises_the_usage_error(text: str) -> None:
    try:
        parse_gate(text)
    except ConfigError as exc:
        assert "accepted grammar" in str(exc)


@given(st.integers(0, 400), st.integers(0, 400))
def test_mcnemar_is_symmetric_and_a_probability(b: int, c: int) -> None:
    p = mcnemar_exact(b, c)
    assert p == mcnemar_exact(c, b)
    assert 0 < p <= 1
    if b + c:
        # one more flip in the majority direction can only make it more significant
        assert mcnemar_exact(max(b, c) + 1, min(b, c)) <= p + 1e-15


@pytest.mark.parametrize("n", [1, 2, 10, 50])
def test_all_flips_one_way_is_the_smallest_p(n: int) -> None:
    assert mcnemar_exact(n, 0) == pytest.approx(min(1.0, 2 / 2**n))


@given(
    metric=st.sampled_from([name for name, spec in METRICS.items() if spec.rate]),
    op=st.sampled_from(list(OPERATORS)),
    threshold=st.floats(allow_nan=False, allow_infinity=False).filter(lambda t: not 0 <= t <= 1),
)
def test_a_rate_threshold_outside_zero_one_is_a_usage_error(
    metric: str, op: str, threshold: float
) -> None:
    with pytest.raises(ConfigError) as info:
        parse_gate(f"{metric}{op}{threshold!r}")
    message = str(info.value)
    assert f"{metric} is a share between 0 and 1" in message and "accepted grammar" in message
    if 1 < threshold <= 100:
        assert f"did you mean {threshold!r}%" in message
