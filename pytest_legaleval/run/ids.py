"""Run and request identifiers in the Dataset Contract's formats."""

from __future__ import annotations

import re
import uuid

from ulid import ULID

__all__ = ["RUN_ID_PATTERN", "new_request_id", "new_run_id"]

RUN_ID_PATTERN = re.compile(r"^run_[0-9A-HJKMNP-TV-Z]{26}$")
"""``run_`` followed by a ULID in Crockford base32, as in ``run_01J8Q4ER9Z7Y5V5K6F4A1P2M3N``."""


def new_run_id() -> str:
    """A new, time-ordered run id."""
    return f"run_{ULID()}"


def new_request_id() -> str:
    """A new request id (UUID4), as the contract's envelopes carry."""
    return str(uuid.uuid4())
