"""Means computed to the last bit as the upstream evaluators' NumPy computes them.

LegalBench's balanced accuracy and LEXam's open-question score are ``np.mean`` of a float
array. NumPy sums a contiguous float64 array by *pairwise summation* (numpy
``_core/src/umath/loops_utils.h.src``, ``pairwise_sum``): fewer than 8 values are added left
to right; up to 128 values go through eight running accumulators combined as
``((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))`` plus the remainder; longer arrays are
split in two halves (the first a multiple of 8 long) and each half summed the same way. The
mean divides that sum by the count. A plain ``sum(values) / n`` can differ from it in the
last bit, and the official figures must be equal, not close.
"""

from __future__ import annotations

from collections.abc import Sequence

from pytest_legaleval.errors import InvalidValue

__all__ = ["numpy_mean", "pairwise_sum"]

_BLOCK = 128
_UNROLL = 8


def pairwise_sum(values: Sequence[float]) -> float:
    """The sum of ``values`` in NumPy's pairwise order (``np.add.reduce`` on float64)."""
    # NumPy starts the reduction from the identity 0.0; adding 0.0 first changes nothing
    # but the sign of a lone -0.0, as it does there.
    return 0.0 + _pairwise(values, 0, len(values))


def _pairwise(values: Sequence[float], start: int, n: int) -> float:
    if n < _UNROLL:
        total = 0.0
        for i in range(start, start + n):
            total += values[i]
        return total
    if n <= _BLOCK:
        acc = [float(values[start + j]) for j in range(_UNROLL)]
        i = _UNROLL
        while i < n - (n % _UNROLL):
            for j in range(_UNROLL):
                acc[j] += values[start + i + j]
            i += _UNROLL
        total = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]))
        while i < n:
            total += values[start + i]
            i += 1
        return total
    half = n // 2
    half -= half % _UNROLL
    return _pairwise(values, start, half) + _pairwise(values, start + half, n - half)


def numpy_mean(values: Sequence[float]) -> float:
    """``np.mean(values)`` for a non-empty sequence of floats, bit for bit.

    Raises:
        ValueError: ``values`` is empty (NumPy would return NaN with a warning).

    """
    if not values:
        raise InvalidValue("numpy_mean needs at least one value")
    return pairwise_sum([float(v) for v in values]) / len(values)
