"""``run_manifest.json``: identity, inputs, configuration, versions, states and status."""

from __future__ import annotations

import platform
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from typing import Any

from pytest_legaleval.formats import DatasetInfo
from pytest_legaleval.pipeline.settings import Settings
from pytest_legaleval.run.artifacts import ARTIFACTS, dataset_entry

__all__ = [
    "RUN_STATES",
    "TERMINAL_STATES",
    "EvaluatorLog",
    "build_manifest",
    "generation_settings",
    "package_version",
    "terminal_status",
    "utc_now",
]

RUN_STATES = ("queued", "validating", "running", "retrying", "finalizing")
"""Non-terminal states of the Dataset Contract §3.1, in order."""
TERMINAL_STATES = ("completed", "completed_with_failures", "failed", "cancelled")
"""Terminal states of §3.1."""

_PACKAGES = (
    "pytest-legaleval",
    "pytest",
    "pytest-xdist",
    "openai",
    "jsonschema",
    "jsonschema-rs",
    "hypothesis",
    "pyyaml",
)
_PARAM_KEYS = ("temperature", "top_p", "max_new_tokens", "seed")


def utc_now() -> str:
    """ISO-8601 UTC timestamp with milliseconds and a ``Z``."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def package_version(name: str = "pytest-legaleval") -> str | None:
    """An installed distribution's version, ``None`` when it is not installed."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def generation_settings(settings: Settings, model: str) -> dict[str, Any]:
    """``temperature``, ``top_p``, ``max_new_tokens``, ``seed`` as the engine sends them.

    As in the engine, a value set for the session (command line or YAML top level) wins;
    the YAML ``models:`` entry fills only what the session leaves unset.
    """
    per_model = settings.per_model.get(model) or {}
    values: dict[str, Any] = {}
    for key in _PARAM_KEYS:
        value = getattr(settings, key)
        values[key] = per_model.get(key) if value is None else value
    return values


def terminal_status(*, failed_records: int, interrupted: bool, run_error: str | None) -> str:
    """The terminal state by §3.3: ``failed`` > ``cancelled`` > failures > ``completed``."""
    if run_error is not None:
        return "failed"
    if interrupted:
        return "cancelled"
    return "completed_with_failures" if failed_records else "completed"


@dataclass
class EvaluatorLog:
    """Graders, judge models, template hashes and policies seen in the results (small sets)."""

    graders: set[str] = field(default_factory=set)
    judge_models: set[str] = field(default_factory=set)
    judge_templates: set[str] = field(default_factory=set)
    prompt_templates: set[str] = field(default_factory=set)
    policies: dict[str, str | None] = field(default_factory=dict)

    def add(self, result: Mapping[str, Any]) -> None:
        """Note the evaluator provenance of one result."""
        if result.get("grader") and result["grader"] != "none":
            self.graders.add(str(result["grader"]))
        judge = result.get("judge") or {}
        self.judge_models.update(str(m) for m in judge.get("models") or [])
        if judge.get("template_sha256"):
            self.judge_templates.add(str(judge["template_sha256"]))
        template = (result.get("details") or {}).get("template_version")
        if template:
            self.prompt_templates.add(str(template))
        if result.get("policy_id"):
            self.policies[str(result["policy_id"])] = result.get("policy_sha256")

    def to_dict(self) -> dict[str, Any]:
        """The manifest's ``evaluators`` object."""
        return {
            "version": package_version() or "unknown",
            "graders": sorted(self.graders),
            "prompt_template_version": ",".join(sorted(self.prompt_templates)) or None,
            "judge_models": sorted(self.judge_models),
            "judge_template_sha256": sorted(self.judge_templates),
            "policies": dict(sorted(self.policies.items())),
        }


def build_manifest(
    *,
    run_id: str,
    request_id: str,
    settings: Settings,
    models: Sequence[str],
    datasets: Sequence[DatasetInfo],
    transitions: Sequence[Mapping[str, str]],
    status: str,
    selection: Mapping[str, Any],
    evaluators: EvaluatorLog,
    denominators: Mapping[str, int],
    error: str | None = None,
) -> dict[str, Any]:
    """The manifest body (the directory writer redacts it like every artifact)."""
    started = next((t["at"] for t in transitions if t["state"] == "running"), None)
    terminal = status in TERMINAL_STATES
    return {
        "run_id": run_id,
        "manifest_version": "1",
        "status": status,
        "created_at": transitions[0]["at"],
        "started_at": started,
        "completed_at": transitions[-1]["at"] if terminal else None,
        "state_transitions": list(transitions),
        "request_id": request_id,
        "datasets": [dataset_entry(info) for info in datasets],
        "dataset_ids": sorted({info.dataset_id for info in datasets}),
        "schema_versions": sorted({info.schema_version for info in datasets}),
        "models": list(models),
        "generation_settings": {m: generation_settings(settings, m) for m in models},
        "response_source": "prefilled" if settings.responses else "live",
        "responses_path": settings.responses,
        "selection": dict(selection),
        "configuration": settings.public_dict(),
        "evaluators": evaluators.to_dict(),
        "package_versions": {
            "python": platform.python_version(),
            **{name: package_version(name) for name in _PACKAGES},
        },
        "platform": {
            "system": platform.system(),
            "machine": platform.machine(),
            "python": sys.version.split()[0],
        },
        "redaction": {"secrets": True, "pii": sorted(settings.redact)},
        "denominators": dict(denominators),
        "artifacts": list(ARTIFACTS),
        "error": error,
    }
