"""A session's set-up: settings resolved and checked, the run's plan and plugins registered.

Every process checks its settings and keeps the run's plan in ``config.stash``; the users'
graders are registered; what pytest prints is scrubbed. Only the controller (or the single
process) claims the run id, starts ``local/`` model servers, and registers the recorder,
the gatekeeper and the xdist hooks: workers compute, the controller records.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_legaleval.errors import ConfigError, ResponsesError
from pytest_legaleval.pipeline.plan import RunPlan
from pytest_legaleval.pipeline.settings import with_local_urls
from pytest_legaleval.pytest import tricks
from pytest_legaleval.pytest.options import resolve
from pytest_legaleval.pytest.preflight import (
    check_settings,
    interrupt_on_sigterm,
    warn_below_one_call_per_worker,
)
from pytest_legaleval.pytest.state import STATE_KEY
from pytest_legaleval.records import TASK_TYPES
from pytest_legaleval.run.ids import new_run_id

__all__ = ["LOCAL_KEY", "LOCAL_URLS", "configure"]


def configure(config: pytest.Config) -> None:
    """Resolve and check the settings; set up this process's part of the run."""
    for task_type in TASK_TYPES:
        config.addinivalue_line("markers", f"{task_type}: a legaleval record of type {task_type}")
    config.addinivalue_line("markers", "invalid_record: a dataset record that failed validation")
    try:
        settings = resolve(config)
        if not settings.active:
            if settings.responses or settings.model:
                raise ConfigError("--responses/--model need --dataset PATH")
            return
        if hasattr(config, "workerinput") and (not settings.responses or settings.judge_model):
            # Model calls ahead: the engine's import overlaps the rest of the set-up and the
            # collection (see tricks); a usage error below still joins it at unconfigure.
            tricks.start_engine_import(config)
        state = RunPlan(settings)
        check_settings(state, controller=not hasattr(config, "workerinput"))
    except (ConfigError, ResponsesError) as exc:
        raise pytest.UsageError(str(exc)) from None
    try:
        config.hook.pytest_legaleval_register_graders(registry=state.graders, config=config)
    except ConfigError as exc:  # a malformed registration names the fix
        raise pytest.UsageError(str(exc)) from None
    config.stash[STATE_KEY] = state
    interrupt_on_sigterm(config)
    from pytest_legaleval.pytest.redacting import RedactingPlugin

    config.pluginmanager.register(RedactingPlugin(state.redactor()), "legaleval-redacting")
    workerinput = getattr(config, "workerinput", None)
    # Unknown policy ids are warned about once, not by every xdist worker.
    state.warn_policies = workerinput is None or workerinput.get("workerid") == "gw0"
    if workerinput is not None:
        _use_local_servers(state, workerinput.get(LOCAL_URLS))
        tricks.quiet_worker_summary(config)
        return  # workers compute; only the controller records the run
    run_id = settings.run_id or new_run_id()
    if settings.run_id and not config.option.collectonly:
        # A named run claims its id now, before any call is paid for.
        from pytest_legaleval.run.claim import claim_run_id

        try:
            config.add_cleanup(claim_run_id(settings.run_dir, run_id).release)
        except ConfigError as exc:
            raise pytest.UsageError(str(exc)) from None
    elif (Path(settings.run_dir) / run_id).exists():
        raise pytest.UsageError(
            f"run directory {Path(settings.run_dir) / run_id} already exists; runs are "
            "write-once — choose another --run-id or omit it"
        )
    _start_local_servers(config, state)
    from pytest_legaleval.pytest.recording import RecordingPlugin

    config.pluginmanager.register(RecordingPlugin(config, state, run_id), "legaleval-recorder")
    if settings.gate or settings.baseline:
        _register_gatekeeper(config, state)
    if config.pluginmanager.hasplugin("xdist"):
        from pytest_legaleval.pytest.xdist_hooks import XdistHooks

        config.pluginmanager.register(XdistHooks(config), "legaleval-xdist")
        warn_below_one_call_per_worker(config, state)


def _register_gatekeeper(config: pytest.Config, state: RunPlan) -> None:
    """Gates and the baseline comparison decide the exit status (controller only)."""
    from pytest_legaleval.metrics.gates import parse_gates
    from pytest_legaleval.pytest.gating import Gatekeeper, load_baseline

    s = state.settings
    try:
        baseline = load_baseline(s.baseline) if s.baseline else None
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from None
    gatekeeper = Gatekeeper(state, parse_gates(s.gate), baseline)
    config.pluginmanager.register(gatekeeper, "legaleval-gates")


LOCAL_KEY = pytest.StashKey[Any]()
"""The controller's ``local_model.LocalModels``."""
LOCAL_URLS = "legaleval_local_urls"
"""``workerinput`` key: the controller's local model servers, by model."""


def _start_local_servers(config: pytest.Config, state: RunPlan) -> None:
    """Start one server per ``local/`` model for the whole session (controller only)."""
    s = state.settings
    if not any(model.startswith("local/") for model in (*s.model, *s.judge_model)):
        return  # the server code (and its ctypes and HTTP imports) is not needed
    from pytest_legaleval.engine import local_model

    models = local_model.local_model_names((*s.model, *s.judge_model), s.per_model)
    if not models or config.option.collectonly:
        return
    servers = local_model.LocalModels()
    config.stash[LOCAL_KEY] = servers
    config.add_cleanup(servers.stop)  # runs at unconfigure: normal end, failure or Ctrl-C
    try:
        urls = servers.start(models)
    except (ConfigError, local_model.LocalModelError) as exc:
        raise pytest.UsageError(str(exc)) from None
    state.settings = with_local_urls(s, urls)


def _use_local_servers(state: RunPlan, urls: dict[str, str] | None) -> None:
    """Route a worker's ``local/`` models to the controller's servers."""
    if urls:
        state.settings = with_local_urls(state.settings, urls)
