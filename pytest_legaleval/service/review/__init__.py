"""The expert review page and its JSON API (FastAPI, the ``[serve]`` extra).

``routes`` builds the router both servers mount; ``local`` serves it for one rater
(``legaleval review``); ``serve`` mounts it under ``legaleval serve`` for the runs the
service holds, raters named by their tokens. The data (sample, blind view, labels) is
``datasets.review``'s. Never imports pytest.
"""

from __future__ import annotations

__all__: list[str] = []
