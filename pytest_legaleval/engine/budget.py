"""Spend control (``--max-cost``): no call is sent that would take the spend past the cap.

Each call is priced before it is sent: its prompt's estimated tokens
(``ratelimit.estimate_prompt_tokens``) and its output at ``max_new_tokens`` (or
``ratelimit.DEFAULT_OUTPUT_TOKENS``), at the model's USD price per million tokens. A call
is sent only while what was spent plus what is in flight plus this call stays within the
cap. When a call does not fit, the scheduler waits for the calls in flight (they usually
cost less than reserved); when it still does not fit with nothing in flight, the budget is
exhausted: every call not yet sent ends ``cancelled`` (``cancel_reason="budget"``), and so
does every call submitted later. Calls already in flight finish.

After a call, its reservation is replaced by its real cost (the reply's token counts). A
call that failed with an HTTP status cost nothing; one that failed without a reply (a
timeout, a dropped connection), or whose reply gave no token counts, keeps its reservation,
since the vendor may have billed it. Cache hits and deduplicated calls are never priced:
they send nothing.

What a refused call's message says was spent is the answers' cost — the figure the run's
summary reports (``cost_usd``: every item's tokens at the same prices) — with what else
counts against the cap named beside it: the structured-output probe a judge model gets
once (:data:`OVERHEAD_TEMPLATES`) and the reservations kept for calls without token counts.
Before, one figure held all three, and a cancelled item said "spent $0.0391" where the
summary said $0.0387.

A reply longer than the reserved output (no ``max_new_tokens``) can take the spend past
the cap by that difference: set ``--max-new-tokens`` for a hard bound. Across xdist
workers the cap is split like the other limits (each process gets ``1/share``).

Runs on the engine's loop thread only; no locks.
"""

from __future__ import annotations

from collections.abc import Mapping

from pytest_legaleval.engine.ratelimit import DEFAULT_OUTPUT_TOKENS, estimate_prompt_tokens
from pytest_legaleval.engine.types import EngineSettings, GenerationRequest
from pytest_legaleval.errors import ConfigError

__all__ = ["BUDGET_REASON", "OVERHEAD_TEMPLATES", "Budget", "is_overhead"]

BUDGET_REASON = "budget"
"""``GenerationResult.cancel_reason`` of a call the budget stopped."""
OVERHEAD_TEMPLATES = ("capability-probe",)
"""``template_version`` prefixes of calls made for the engine, not for an item (their cost
reaches no item, so no summary)."""


def is_overhead(request: GenerationRequest) -> bool:
    """Whether ``request`` is the engine's own call (a capability probe), not an item's."""
    return request.template_version.startswith(OVERHEAD_TEMPLATES)


class Budget:
    """The spend of one engine process against its part of ``--max-cost``.

    Args:
        total_usd: the run's cap.
        share: processes sharing it (xdist workers); this one may spend ``total / share``.
        prices: USD per million ``(input, output)`` tokens by ``PROVIDER/NAME``.

    """

    def __init__(
        self, total_usd: float, share: int, prices: Mapping[str, tuple[float, float]]
    ) -> None:
        self.total_usd = total_usd
        self.share = share
        self.cap_usd = total_usd / share
        self._prices = dict(prices)
        self.spent_usd = 0.0
        """Everything that counts against the cap: answers, overhead and held reservations."""
        self.answers_usd = 0.0
        """The items' calls at their replies' token counts (the summary's ``cost_usd``)."""
        self.overhead_usd = 0.0
        """The engine's own calls (capability probes)."""
        self.held_usd = 0.0
        """Reservations kept for calls that gave no token counts (no reply, no usage)."""
        self.held_calls = 0
        self.reserved_usd = 0.0
        self.in_flight = 0
        self.exhausted = False
        self.refused = 0

    @classmethod
    def for_settings(cls, settings: EngineSettings) -> Budget | None:
        """The budget of ``settings`` (``None`` without ``max_cost_usd``)."""
        if settings.max_cost_usd is None:
            return None
        return cls(settings.max_cost_usd, settings.share, settings.prices)

    def cost(self, model: str, input_tokens: int, output_tokens: int) -> float:
        """USD for these tokens of ``model`` (``local/`` models are free).

        Raises:
            ConfigError: ``model`` has no price.

        """
        price = self._prices.get(model)
        if price is None:
            if model.startswith("local/"):
                return 0.0
            raise ConfigError(
                f"--max-cost needs a price for {model!r}: add it to --price-table or to "
                "the pricing: section of legaleval.yaml (USD per million input/output tokens)"
            )
        return (input_tokens * price[0] + output_tokens * price[1]) / 1e6

    def estimate(self, request: GenerationRequest) -> float:
        """The most this request is expected to cost (its reservation)."""
        output = request.params.max_new_tokens
        return self.cost(
            request.model,
            estimate_prompt_tokens(request.messages),
            output if output is not None else DEFAULT_OUTPUT_TOKENS,
        )

    def fits(self, amount: float) -> bool:
        """Whether a call of ``amount`` can be sent now."""
        return not self.exhausted and self.spent_usd + self.reserved_usd + amount <= self.cap_usd

    def reserve(self, amount: float) -> None:
        """Hold ``amount`` for a call being sent."""
        self.reserved_usd += amount
        self.in_flight += 1

    def settle(self, reserved: float, actual: float | None, *, overhead: bool = False) -> None:
        """Replace a call's reservation by what it cost.

        ``actual`` ``None``: the call gave no token counts; its reservation is kept.
        ``overhead``: the engine's own call (:func:`is_overhead`).
        """
        self.reserved_usd = max(0.0, self.reserved_usd - reserved)
        self.in_flight = max(0, self.in_flight - 1)
        if actual is None:
            self.held_usd += reserved
            self.held_calls += 1
            actual = reserved
        elif overhead:
            self.overhead_usd += actual
        else:
            self.answers_usd += actual
        self.spent_usd += actual

    def message(self, amount: float) -> str:
        """Why a call was not sent (the result's error message and explanation).

        "spent" is the answers' cost, the summary's figure (in a single process; an xdist
        worker says what it spent of its share); what else counts is named beside it.
        """
        extra = []
        if self.overhead_usd:
            extra.append(f"${self.overhead_usd:.4f} on structured-output probes")
        if self.held_calls:
            calls = f"{self.held_calls} call{'s' if self.held_calls != 1 else ''}"
            extra.append(f"${self.held_usd:.4f} held for {calls} without token counts")
        also = f" (+ {', '.join(extra)})" if extra else ""
        spent = f"${self.answers_usd:.4f} on answers{also}"
        if self.share > 1:
            spent = (
                f" (this worker's share: ${self.cap_usd:.4f} of {self.share}); this worker "
                f"spent {spent}"
            )
        else:
            spent = f"; spent {spent}"
        return (
            f"not sent: --max-cost ${self.total_usd:.4f} reached{spent}, this call would cost "
            f"up to ${amount:.4f}"
        )
