"""The controller's run recorder: the only writer of the run directory."""

from __future__ import annotations

import platform
import sys
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from pytest_legaleval.errors import ConfigError, DatasetRejected
from pytest_legaleval.evaluation import cancelled_result
from pytest_legaleval.formats import RejectedRecord
from pytest_legaleval.metrics.summary import SummaryAccumulator
from pytest_legaleval.records import Record
from pytest_legaleval.run.directory import RunDirectory
from pytest_legaleval.session import ItemSpec, LegalEvalState

__all__ = ["RunRecorder", "utc_now"]

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


def _package_versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def _validation_line(entry: Record | RejectedRecord) -> dict[str, Any]:
    source = {"path": entry.source.path, "index": entry.source.index, "line": entry.source.line}
    if isinstance(entry, Record):
        return {
            "index": entry.source.index,
            "record_id": entry.id,
            "dataset_id": entry.dataset,
            "status": "accepted",
            "record_sha256": entry.sha256,
            "source": source,
            "errors": [],
        }
    return {
        "index": entry.source.index,
        "record_id": entry.record_id,
        "dataset_id": entry.dataset,
        "status": "rejected",
        "record_sha256": None,
        "source": source,
        "errors": [error.to_dict() for error in entry.errors],
    }


class RunRecorder:
    """Writes ``<run-dir>/<run_id>/`` as results arrive; registered on the controller only."""

    def __init__(self, config: pytest.Config, state: LegalEvalState, run_id: str) -> None:
        self.config = config
        self.state = state
        self.run_id = run_id
        self.directory: RunDirectory | None = None
        self.summary = SummaryAccumulator()
        self.created_at = utc_now()
        self.transitions: list[dict[str, str]] = [{"state": "queued", "at": self.created_at}]
        self.status: str | None = None
        self._reported: set[tuple[str, str]] = set()
        self._retried = False

    # -- lifecycle -------------------------------------------------------------------------

    def _transition(self, state: str) -> None:
        self.transitions.append({"state": state, "at": utc_now()})

    def _open(self) -> None:
        """Create the run directory once the dataset is known to be accepted."""
        self._transition("validating")
        try:
            loaded = self.state.load()
        except (DatasetRejected, ConfigError):
            return  # collection reports it as an error, and nothing is written
        self.directory = RunDirectory.create(self.state.settings.run_dir, self.run_id)
        for entry in loaded.entries:
            self.directory.append("record_validation.jsonl", _validation_line(entry))
        self.summary.total_records = len(loaded.entries)
        self.summary.valid_records = len(loaded.records)
        self.directory.touch("predictions.jsonl")
        self.directory.touch("attempt_logs.jsonl")
        self._transition("running")
        self.directory.write_json("run_manifest.json", self._manifest())

    def _manifest(self) -> dict[str, Any]:
        settings = self.state.settings
        loaded = self.state.load()
        return {
            "run_id": self.run_id,
            "status": self.status or self.transitions[-1]["state"],
            "created_at": self.created_at,
            "started_at": next(
                (t["at"] for t in self.transitions if t["state"] == "running"), None
            ),
            "completed_at": self.transitions[-1]["at"] if self.status else None,
            "state_transitions": self.transitions,
            "request_id": self.state.request_id,
            "datasets": [
                {
                    "dataset_id": info.dataset_id,
                    "dataset_version": info.dataset_version,
                    "schema_version": info.schema_version,
                    "format": info.format,
                    "path": info.path,
                    "sha256": info.sha256,
                    "total_records": info.total_records,
                    "accepted_records": info.accepted_records,
                }
                for info in loaded.datasets
            ],
            "models": list(self.state.models),
            "response_source": ("prefilled" if settings.responses else "live"),
            "responses_path": settings.responses,
            "selection": {
                "shard": str(settings.shard) if settings.shard else None,
                "sample": settings.sample,
                "seed": settings.seed,
                "limit": settings.limit,
                "selected_records": len(self.state.selected),
                "items": len(self.state.items),
            },
            "configuration": settings.public_dict(),
            "package_versions": _package_versions(),
            "platform": {
                "system": platform.system(),
                "machine": platform.machine(),
                "python": sys.version.split()[0],
            },
            "denominators": {
                key: value
                for key, value in self.summary.to_dict().items()
                if key.endswith("_records")
            },
        }

    def _finalize(self, interrupted: bool) -> None:
        if self.directory is None:
            return
        if interrupted:
            self._cancel_unreported()
        self._transition("finalizing")
        data = self.summary.to_dict()
        if interrupted:
            self.status = "cancelled"
        elif data["failed_records"]:
            self.status = "completed_with_failures"
        else:
            self.status = "completed"
        self._transition(self.status)
        self.directory.write_json("metrics_summary.json", {"run_id": self.run_id, **data})
        self.directory.write_json("run_manifest.json", self._manifest())
        self.directory.close()

    # -- hooks -----------------------------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Any:
        if not self.config.option.collectonly:
            self._open()
        interrupted = False
        try:
            return (yield)
        except KeyboardInterrupt:
            interrupted = True
            raise
        finally:
            self._finalize(interrupted)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.directory is None:
            return
        if report.when == "setup" and getattr(report, "legaleval_invalid", None):
            self.summary.add_invalid()
            return
        result = getattr(report, "legaleval", None)
        if result is None:
            return
        if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
            self._record(result, report.nodeid, report.outcome)

    def _record(self, result: dict[str, Any], item_id: str, test_outcome: str) -> None:
        assert self.directory is not None
        self._reported.add((result["record_id"], result["model"]))
        attempts = result.get("attempts") or []
        if len(attempts) > 1 and not self._retried:
            self._retried = True
            self._transition("retrying")
        for attempt in attempts:
            self.directory.append(
                "attempt_logs.jsonl",
                {
                    "run_id": self.run_id,
                    "record_id": result["record_id"],
                    "model": result["model"],
                    **attempt,
                },
            )
        line = {"run_id": self.run_id, "item_id": item_id, **result, "test_outcome": test_outcome}
        self.directory.append("predictions.jsonl", line)
        self.summary.add(result["outcome"], result["reason"])

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        for item in items:
            spec = getattr(getattr(item, "callspec", None), "params", {}).get("record")
            if isinstance(spec, ItemSpec) and isinstance(spec.entry, Record):
                self._reported.add((spec.entry.id, spec.model))

    def _cancel_unreported(self) -> None:
        """After Ctrl-C: every selected item without a result is recorded as cancelled."""
        for spec in self.state.items:
            entry = spec.entry
            if not isinstance(entry, Record) or (entry.id, spec.model) in self._reported:
                continue
            result = cancelled_result(entry, spec.model)
            self._record(dict(result), spec.item_id, "cancelled")

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.directory is None:
            return
        data = self.summary.to_dict()
        rate = data["pass_rate"]
        ci = data["pass_rate_ci95"]
        text = (
            f"{data['evaluated_records']} evaluated, {data['pass_count']} passed, "
            f"{data['fail_count']} failed, {data['failed_records']} errors, "
            f"{data['skipped_records']} skipped"
        )
        if rate is not None and ci is not None:
            text += f"; pass rate {rate:.1%} (95% CI {ci[0]:.1%}–{ci[1]:.1%})"
        terminalreporter.write_sep("=", "legaleval")
        terminalreporter.write_line(text)
        terminalreporter.write_line(f"status: {self.status}")
        terminalreporter.write_line(f"run directory: {Path(self.directory.path)}")
