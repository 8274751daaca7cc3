"""PRBench's rule for a criterion's weight: its importer and its protocol both apply it.

From scaleapi/PRBench at commit 070abdf5d72d07885058cd36da9e9531c45ba535 (``criteria.py``,
``Criterion.find_weight``). ``grading.official.prbench`` re-exports it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

__all__ = ["criterion_weight"]


def criterion_weight(annotations: Mapping[str, object]) -> tuple[str, float | None]:
    """``Criterion.find_weight``: the key ``weight_class`` names and the number there.

    Returns:
        (the key, its value) — the value ``None`` when there is no ``weight_class`` (the
        key is then ``""``) or no finite number under the key.

    """
    weight_class = annotations.get("weight_class")
    if not isinstance(weight_class, str):
        return "", None
    key = weight_class.replace(" ", "_") + "_weight"
    value = annotations.get(key)
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        return key, None
    return key, value
