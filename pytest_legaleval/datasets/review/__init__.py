"""Expert review of a run: a blind, random gold slice labelled by lawyers.

:mod:`.sample` draws the seeded, stratified sample (written once, raters join it);
:mod:`.items` builds the blind view of an item (the question, the answer, the rubric —
nothing of the judge); :mod:`.desk` serves a rater their next item and appends their
labels in the ``--human-labels`` format. The web page and its routes live in
``service.review``; the audit's expert–expert agreement in ``metrics._expert_agreement``.
Imports nothing above the ``datasets`` layer (no FastAPI, no pytest).
"""

from __future__ import annotations

from pytest_legaleval.datasets.review.desk import (
    MAX_NOTE,
    ReviewDesk,
    ReviewRefused,
    labels_path_for,
)
from pytest_legaleval.datasets.review.items import ItemSource, item_view
from pytest_legaleval.datasets.review.sample import (
    DEFAULT_STRATA,
    SAMPLE_FILE,
    ReviewSample,
    SampleItem,
    draw_sample,
    join_seat,
    load_sample,
    open_sample,
    review_folder,
    size_for_half_width,
)

__all__ = [
    "DEFAULT_STRATA",
    "MAX_NOTE",
    "SAMPLE_FILE",
    "ItemSource",
    "ReviewDesk",
    "ReviewRefused",
    "ReviewSample",
    "SampleItem",
    "draw_sample",
    "item_view",
    "join_seat",
    "labels_path_for",
    "load_sample",
    "open_sample",
    "review_folder",
    "size_for_half_width",
]
