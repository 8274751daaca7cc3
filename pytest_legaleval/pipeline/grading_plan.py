"""Which policy and which grader apply to a record.

Light on purpose: a run on pre-computed responses without a judge grades through this
module and the item runner alone, and never imports the engine (or aiohttp under it).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pytest_legaleval.grading._base import Grader
from pytest_legaleval.grading._policies import Policy, PolicyBook
from pytest_legaleval.grading._registry import GraderRegistry, default_registry
from pytest_legaleval.records import Record

__all__ = ["GradingPlan"]


@dataclass(frozen=True)
class GradingPlan:
    """Which policy and which grader apply to a record (a run plan's; never changed)."""

    policies: PolicyBook
    """The run's policies."""
    graders: GraderRegistry = field(default_factory=lambda: default_registry().copy(frozen=True))
    """The run's graders (a built plan's is a frozen copy: ``RunPlan.build``)."""

    def policy(self, record: Record) -> Policy:
        """The record's policy (``default`` when it names none or an unknown one).

        An id that only names a user's grader (no policy file) prompts under ``default``
        without the unknown-policy warning.
        """
        wanted = record.policy_id
        if wanted is not None and wanted not in self.policies.ids:
            if wanted in self.graders.policy_ids():
                return self.policies.get("default")
        return self.policies.for_record(record)

    def grader(self, record: Record) -> Grader:
        """The grader of ``record``: its policy's, else its task type's."""
        return self.graders.for_record(record, self.policy(record).id)
