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
from pytest_legaleval.grading._registry import default_registry
from pytest_legaleval.pipeline.plan import RunPlan
from pytest_legaleval.pipeline.runner import ItemRunner
from pytest_legaleval.pipeline.settings import Settings, with_local_urls
from pytest_legaleval.pipeline.shards import shard_run_id
from pytest_legaleval.pytest import tricks
from pytest_legaleval.pytest.options import resolve
from pytest_legaleval.pytest.preflight import (
    check_plan,
    check_settings,
    interrupt_on_sigterm,
    warn_below_one_call_per_worker,
)
from pytest_legaleval.pytest.state import GATES_KEY, RECORDER_KEY, RUNNER_KEY, STATE_KEY
from pytest_legaleval.records import TASK_TYPES
from pytest_legaleval.run.ids import new_run_id

__all__ = ["LOCAL_KEY", "LOCAL_URLS", "build_plan", "configure"]


def _share(config: pytest.Config) -> tuple[int, int]:
    """The ``(share, position)`` of this process among those sharing the run's limits."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is None:
        return 1, 0
    from pytest_legaleval.pytest.scheduling import worker_position

    share = int(workerinput["workercount"])
    # A worker that replaces a crashed one gets the next free number (gw2 of 2).
    return share, worker_position(workerinput["workerid"]) % share


def configure(config: pytest.Config) -> None:
    """Resolve and check the settings; build the plan; set up this process's part."""
    for task_type in TASK_TYPES:
        config.addinivalue_line("markers", f"{task_type}: a legaleval record of type {task_type}")
    config.addinivalue_line("markers", "invalid_record: a dataset record that failed validation")
    workerinput = getattr(config, "workerinput", None)
    controller = workerinput is None
    try:
        settings = resolve(config)
        if not settings.active:
            if settings.responses or settings.model:
                raise ConfigError("--responses/--model need --dataset PATH")
            return
        if not controller and (not settings.responses or settings.judge_model):
            # Model calls ahead: the engine's import overlaps the rest of the set-up and the
            # collection (see tricks); a usage error below still joins it at unconfigure.
            tricks.start_engine_import(config)
        # Unknown policy ids are warned about once, not by every xdist worker.
        warn = workerinput is None or workerinput.get("workerid") == "gw0"
        plan = build_plan(config, settings, controller=controller, warn_policies=warn)
    except (ConfigError, ResponsesError) as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[STATE_KEY] = plan
    share, position = _share(config)
    config.stash[RUNNER_KEY] = ItemRunner(plan, share=share, position=position)
    interrupt_on_sigterm(config)
    from pytest_legaleval.pytest.redacting import RedactingPlugin

    config.pluginmanager.register(RedactingPlugin(plan.redactor()))
    if not controller:
        tricks.quiet_worker_summary(config)
        return  # workers compute; only the controller records the run
    try:  # --shard auto: <prefix>-shard-K-of-N, so `legaleval merge --prefix` finds it
        named = shard_run_id(settings.run_id, settings.shard)
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from None
    run_id = named or new_run_id()
    if named and not config.option.collectonly:
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
    from pytest_legaleval.pytest.recorder_plugin import RecorderPlugin

    try:
        recorder = RecorderPlugin(config, plan, run_id)
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[RECORDER_KEY] = recorder
    config.pluginmanager.register(recorder)
    if settings.gate or settings.baseline:
        _register_gatekeeper(config, plan)
    if config.pluginmanager.hasplugin("xdist"):
        from pytest_legaleval.pytest.xdist_hooks import XdistHooks

        config.pluginmanager.register(XdistHooks(config))
        warn_below_one_call_per_worker(config, plan)


def build_plan(
    config: pytest.Config,
    settings: Settings,
    *,
    controller: bool = True,
    warn_policies: bool = True,
    local_servers: bool = True,
) -> RunPlan:
    """The run's plan from checked settings, the users' graders registered.

    ``local_servers``: start the ``local/`` models' servers (not for an estimate).

    Raises:
        ConfigError: impossible settings, a malformed grader registration.
        ResponsesError: an unusable responses file.

    """
    check_settings(settings, controller=controller)
    graders = default_registry()
    try:
        config.hook.pytest_legaleval_register_graders(registry=graders, config=config)
    except ConfigError as exc:  # a malformed registration names the fix
        raise pytest.UsageError(str(exc)) from None
    if local_servers:
        settings = _local_servers(config, settings)
    plan = RunPlan.build(settings, graders=graders, warn_policies=warn_policies)
    check_plan(plan, controller=controller)
    return plan


def _register_gatekeeper(config: pytest.Config, plan: RunPlan) -> None:
    """Gates and the baseline comparison decide the exit status (controller only)."""
    from pytest_legaleval.metrics._gates import parse_gates
    from pytest_legaleval.pytest.gating import Gatekeeper, load_baseline

    s = plan.settings
    try:
        baseline = load_baseline(s.baseline, s.cluster_by) if s.baseline else None
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from None
    gatekeeper = Gatekeeper(plan, parse_gates(s.gate), baseline)
    config.stash[GATES_KEY] = gatekeeper
    config.pluginmanager.register(gatekeeper)


LOCAL_KEY = pytest.StashKey[Any]()
"""The controller's ``local_model.LocalModels``."""
LOCAL_URLS = "legaleval_local_urls"
"""``workerinput`` key: the controller's local model servers, by model."""


def _local_servers(config: pytest.Config, settings: Settings) -> Settings:
    """``local/`` models: the controller starts their servers, a worker uses the controller's.

    One server per ``local/`` model for the whole session; the settings route the models
    to them.
    """
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        urls = workerinput.get(LOCAL_URLS)
        return with_local_urls(settings, urls) if urls else settings
    if not any(model.startswith("local/") for model in (*settings.model, *settings.judge_model)):
        return settings  # the server code (and its ctypes and HTTP imports) is not needed
    from pytest_legaleval.engine import local_model

    models = local_model.local_model_names(
        (*settings.model, *settings.judge_model), settings.per_model
    )
    if not models or config.option.collectonly:
        return settings
    servers = local_model.LocalModels()
    config.stash[LOCAL_KEY] = servers
    config.add_cleanup(servers.stop)  # runs at unconfigure: normal end, failure or Ctrl-C
    try:
        urls = servers.start(models)
    except local_model.LocalModelError as exc:
        raise ConfigError(str(exc)) from None
    return with_local_urls(settings, urls)
