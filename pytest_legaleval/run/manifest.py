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
from pytest_legaleval.run.artifacts import ARTIFACTS, dataset_entry

__all__ = [
    "RUN_STATES",
    "TERMINAL_STATES",
    "EvaluatorLog",
    "RunConfig",
    "build_manifest",
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


def utc_now() -> str:
    """ISO-8601 UTC timestamp with milliseconds and a ``Z``."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def package_version(name: str = "pytest-legaleval") -> str | None:
    """An installed distribution's version, ``None`` when it is not installed.

    Ours is the package's ``__version__`` (equal to the distribution's, a test checks):
    reading the installed metadata parses the whole long description, tens of milliseconds.
    """
    if name == "pytest-legaleval":
        from pytest_legaleval._version import __version__

        return __version__
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


@dataclass(frozen=True, slots=True)
class RunConfig:
    """What a run directory records about the run's configuration (secrets never here)."""

    run_dir: str
    """The directory that receives run directories."""
    run_id: str
    """This run's id (its directory's name)."""
    request_id: str
    """The request id of the run's validation (the contract's ``request_id``)."""
    models: tuple[str, ...]
    """The models evaluated (or the responses file's labels)."""
    configuration: Mapping[str, Any]
    """The resolved configuration (every option, where it came from)."""
    generation_settings: Mapping[str, Mapping[str, Any]]
    """Per model: ``temperature``, ``top_p``, ``max_new_tokens``, ``seed`` as sent."""
    response_source: str = "live"
    """``live`` or ``prefilled``."""
    responses_path: str | None = None
    """The responses file, when prefilled."""
    selection: Mapping[str, Any] = field(default_factory=dict)
    """``shard``, ``sample``, ``seed``, ``limit``."""
    redact: tuple[str, ...] = ()
    """PII kinds redacted besides secrets."""
    slice_by: tuple[str, ...] = ()
    """Extra slice dimensions (``metadata.KEY``)."""
    seed: int | None = None
    """Seed of the bootstrap intervals (default: :data:`BOOTSTRAP_SEED`)."""
    epochs: int = 1
    """Samples per item (``--epochs``)."""
    epoch_reducer: str = "mean"
    """How an item's epochs become its verdict (``--epoch-reducer``)."""
    cluster_by: str | None = None
    """The field records are clustered by for the uncertainty (``--cluster-by``)."""
    judge_epochs: int = 1
    """Judgings of each answer (``--judge-epochs``)."""
    judge_models: tuple[str, ...] = ()
    """The judge models (``--judge-model``): several make a panel."""


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
    config: RunConfig,
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
        "run_id": config.run_id,
        "manifest_version": "1",
        "status": status,
        "created_at": transitions[0]["at"],
        "started_at": started,
        "completed_at": transitions[-1]["at"] if terminal else None,
        "state_transitions": list(transitions),
        "request_id": config.request_id,
        "datasets": [dataset_entry(info) for info in datasets],
        "dataset_ids": sorted({info.dataset_id for info in datasets}),
        "schema_versions": sorted({info.schema_version for info in datasets}),
        "models": list(config.models),
        "generation_settings": {
            m: dict(config.generation_settings.get(m, {})) for m in config.models
        },
        "response_source": config.response_source,
        "responses_path": config.responses_path,
        "selection": dict(selection),
        "configuration": dict(config.configuration),
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
        "redaction": {"secrets": True, "pii": sorted(config.redact)},
        "denominators": dict(denominators),
        "artifacts": list(ARTIFACTS),
        "error": error,
    }
