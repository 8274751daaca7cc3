"""The API's routes, one module per resource (FastAPI ``APIRouter``s).

``health`` (``/healthz``), ``runs`` (``/v1/runs`` and a run, its cancellation) and
``artifacts`` (a run's files). Each handler takes what it needs through ``Depends(...)``
(``service.deps``); ``service.app`` includes the routers in this order.
"""

from __future__ import annotations

from typing import Any

from pytest_legaleval.service.models import ErrorEnvelope

ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorEnvelope} for code in (400, 401, 403, 404)
}
"""The errors every authenticated route may answer (for the OpenAPI document)."""
