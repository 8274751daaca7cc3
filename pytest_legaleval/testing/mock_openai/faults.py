"""Fault rules: injected errors, hangs, resets and odd finishes."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Collection
from typing import Final, Literal, cast, get_args

from pytest_legaleval.errors import InvalidValue
from pytest_legaleval.testing.mock_openai.rules import compile_pattern

__all__ = ["FAULT_KINDS", "FaultKind", "FaultRule"]

FaultKind = Literal[
    "429", "500", "502", "503", "400", "hang", "reset", "malformed", "content_filter", "length"
]
"""The faults the server can inject, see :class:`FaultRule`."""

FAULT_KINDS: Final[tuple[str, ...]] = get_args(FaultKind)


@dataclasses.dataclass
class FaultRule:
    """An injected fault; rules are tried in order and the first that fires decides.

    A rule fires for a request when every selector it sets agrees; a rule with no selector fires
    for every request:

    * ``match``: the regular expression is found in the concatenated prompt;
    * ``calls``: the request's global call number (1-based, counting chat completion requests
      since start or the last reset) is this number or in this set;
    * ``times``: the rule has fired fewer than ``times`` times -- so ``match="record-7", times=2``
      fails the first two attempts for record-7 and lets the third through;
    * ``rate``: a draw of the seeded fault RNG is below ``rate`` (drawn last, only when the
      other selectors agree).

    Kinds: ``"429"`` (with ``Retry-After``), ``"500"``, ``"502"``, ``"503"``, ``"400"`` (a
    permanent error) answer with OpenAI's error format; ``"hang"`` sends nothing until the client
    disconnects or ``hang_seconds`` pass, then closes the connection; ``"reset"`` aborts the TCP
    connection (RST) without a response; ``"malformed"`` answers 200 with a body that is not
    JSON; ``"content_filter"`` answers 200 with empty content and that finish reason;
    ``"length"`` answers 200 with the reply cut in half and finish reason ``"length"``.

    Attributes:
        kind: One of :data:`FAULT_KINDS` (an int such as 429 is accepted).
        rate: Probability per request, 0..1.
        calls: Global call number(s) to fail.
        match: Regular expression on the prompt.
        times: Fire at most this many times.
        retry_after: ``Retry-After`` value of a 429, in seconds (fractions allowed, e.g. 0.05).
        hang_seconds: How long a hang lasts; ``None`` uses ``MockConfig.hang_seconds``.
        message: Error message instead of the default one.
        delay: Seconds before the fault is delivered; ``None`` uses the configured latency.
        fired: How many times this rule fired (maintained by the server).

    """

    kind: FaultKind
    rate: float | None = None
    calls: int | Collection[int] | None = None
    match: str | None = None
    times: int | None = None
    retry_after: float | str = 1.0
    hang_seconds: float | None = None
    message: str | None = None
    delay: float | None = None
    fired: int = dataclasses.field(default=0, init=False, compare=False)
    _pattern: re.Pattern[str] | None = dataclasses.field(
        default=None, init=False, repr=False, compare=False
    )
    _calls: frozenset[int] | None = dataclasses.field(
        default=None, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        kind = str(self.kind)
        if kind not in FAULT_KINDS:
            raise InvalidValue(f"unknown fault kind {self.kind!r}; known: {', '.join(FAULT_KINDS)}")
        self.kind = cast(FaultKind, kind)
        if self.rate is not None and not 0.0 <= self.rate <= 1.0:
            raise InvalidValue(f"rate must be within 0..1, got {self.rate}")
        if self.times is not None and self.times < 0:
            raise InvalidValue(f"times must be >= 0, got {self.times}")
        if self.calls is not None:
            calls = (self.calls,) if isinstance(self.calls, int) else tuple(self.calls)
            if any(not isinstance(n, int) or n < 1 for n in calls):
                raise InvalidValue(f"calls are 1-based call numbers, got {self.calls!r}")
            self._calls = frozenset(calls)
        self._pattern = compile_pattern(self.match)

    @property
    def retry_after_header(self) -> str:
        """The ``Retry-After`` header value, e.g. ``"0.05"`` or ``"1"``."""
        if isinstance(self.retry_after, str):
            return self.retry_after
        return f"{self.retry_after:g}"
