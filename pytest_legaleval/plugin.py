"""pytest hooks of pytest-legaleval: options, collection, fixtures and reporting.

Hooks only; the work happens in pure modules (formats, validation, grading, run, metrics).
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_legaleval.errors import ConfigError, DatasetRejected, ResponsesError
from pytest_legaleval.pipeline.plan import ItemSpec, RunPlan
from pytest_legaleval.pipeline.settings import with_local_urls
from pytest_legaleval.pytest import collection, outcomes, tricks
from pytest_legaleval.pytest.fixtures import INVALID_KEY, RESULT_KEY
from pytest_legaleval.pytest.options import add_options, resolve
from pytest_legaleval.pytest.preflight import (
    check_settings,
    interrupt_on_sigterm,
    restore_sigterm,
    warn_below_one_call_per_worker,
)
from pytest_legaleval.pytest.slimming import PAYLOAD_FIELDS, PYTEST_REPORT_FIELDS
from pytest_legaleval.pytest.state import STATE_KEY
from pytest_legaleval.records import TASK_TYPES, Record
from pytest_legaleval.run.ids import new_run_id

if TYPE_CHECKING:
    from pytest_legaleval.pipeline.evaluator import LiveEvaluator

pytest_plugins = ["pytest_legaleval.testing.fixtures", "pytest_legaleval.pytest.fixtures"]



def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from pytest_legaleval.pytest import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    for task_type in TASK_TYPES:
        config.addinivalue_line("markers", f"{task_type}: a legaleval record of type {task_type}")
    config.addinivalue_line("markers", "invalid_record: a dataset record that failed validation")
    try:
        settings = resolve(config)
        if not settings.active:
            if settings.responses or settings.model:
                raise ConfigError("--responses/--model need --dataset PATH")
            return
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
    if workerinput is not None and (state.responses is None or settings.judge_model):
        # Model calls ahead: the engine's import overlaps collection (see warmup).
        tricks.start_engine_import(config)
    # Unknown policy ids are warned about once, not by every xdist worker.
    state.warn_policies = workerinput is None or workerinput.get("workerid") == "gw0"
    if workerinput is not None:
        _use_local_servers(state, workerinput.get(_LOCAL_URLS))
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
        config.pluginmanager.register(_XdistHooks(config), "legaleval-xdist")
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


_LOCAL_KEY = pytest.StashKey[Any]()  # the controller's local_model.LocalModels
_LOCAL_URLS = "legaleval_local_urls"


def _start_local_servers(config: pytest.Config, state: RunPlan) -> None:
    """Start one server per ``local/`` model for the whole session (controller only)."""
    from pytest_legaleval.engine import local_model

    s = state.settings
    models = local_model.local_model_names((*s.model, *s.judge_model), s.per_model)
    if not models or config.option.collectonly:
        return
    servers = local_model.LocalModels()
    config.stash[_LOCAL_KEY] = servers
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


def _scheduler(config: pytest.Config) -> Any:
    """Our xdist scheduler, once the controller's session has one."""
    from pytest_legaleval.pytest.scheduling import RoundRobinScheduling

    dsession = config.pluginmanager.get_plugin("dsession")
    scheduler = getattr(dsession, "sched", None)
    return scheduler if isinstance(scheduler, RoundRobinScheduling) else None


class _XdistHooks:
    """xdist-only hooks, registered only when xdist is loaded."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.collection_errors = 0

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:  # a worker's collection error: pytest's outcome, not ours
            self.collection_errors += 1

    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        """A worker with nothing to run had no record item (``collection``): a usage error."""
        config = self.config
        if not ids and not self.collection_errors and not config.option.collectonly:
            raise collection.no_record_items(config, None)

    def pytest_configure_node(self, node: Any) -> None:
        """Hand the controller's local model servers to the worker; workers start none.

        A node that replaces a dead one is told the items it takes over, to prefetch them.
        """
        servers = node.config.stash.get(_LOCAL_KEY, None)
        if servers is not None:
            node.workerinput[_LOCAL_URLS] = servers.urls()
        scheduler = _scheduler(node.config)
        if scheduler is not None:  # nodes configured once scheduling started: replacements
            from pytest_legaleval.pytest.scheduling import ORPHANS

            # Even none: a replacement must not prefetch a live worker's share.
            node.workerinput[ORPHANS] = scheduler.reserve_orphans(node)

    def pytest_testnodedown(self, node: Any, error: object) -> None:
        """Count the nodes that went down with an error, as xdist does for its restarts."""
        scheduler = _scheduler(node.config)
        if scheduler is not None and error is not None:
            scheduler.crashes += 1

    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        """Our round-robin scheduler, so that every worker can prefetch its items."""
        from pytest_legaleval.pytest.scheduling import RoundRobinScheduling

        return RoundRobinScheduling(config, log)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    collection.parametrize_record_test(metafunc)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    # First, so that -k, -m and --deselect apply to the built-in suite's items too.
    collection.add_default_suite(session, items)
    collection.count_record_items(session, items)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    # After every deselection; first, so that an xdist worker sends its emptied collection.
    collection.require_record_items(session)


def _own_specs(session: pytest.Session) -> list[ItemSpec]:
    """The items this process will run, in order (an xdist worker: its round-robin share)."""
    from pytest_legaleval.pytest.scheduling import (
        ORPHANS,
        own_indices,
        skipped_up_front,
        worker_position,
    )

    items = session.items
    workerinput = getattr(session.config, "workerinput", None)
    if workerinput is not None:
        orphans = workerinput.get(ORPHANS)
        indices: Sequence[int] = (
            orphans
            if orphans is not None  # a replacement: the dead worker's items
            else own_indices(
                len(items),
                worker_position(workerinput["workerid"]),
                int(workerinput["workercount"]),
            )
        )
        items = [items[i] for i in indices if 0 <= i < len(items)]
    specs = []
    skipped_parents: dict[Any, bool] = {}
    for item in items:
        callspec = getattr(item, "callspec", None)
        spec = callspec.params.get("record") if callspec is not None else None
        if (
            isinstance(spec, ItemSpec)
            and isinstance(spec.entry, Record)
            and not skipped_up_front(item, skipped_parents)
        ):
            specs.append(spec)
    return specs


def _live_evaluator(session: pytest.Session, state: RunPlan) -> LiveEvaluator:
    """The evaluator of this process: the SDK imported, its client built, the engine ready."""
    workerinput = getattr(session.config, "workerinput", None)
    share = int(workerinput["workercount"]) if workerinput else 1
    position = 0
    if workerinput:
        from pytest_legaleval.pytest.scheduling import worker_position

        # A worker that replaces a crashed one gets the next free number (gw2 of 2).
        position = worker_position(workerinput["workerid"]) % share
    # The SDK import creates some 85,000 long-lived objects and no garbage; with the
    # collector on, it ran full collections over them (~45 ms of each process's start-up,
    # before its first model call).
    try:
        with tricks.collector_paused():
            from pytest_legaleval.pipeline.evaluator import LiveEvaluator

            live = LiveEvaluator(
                state.settings,
                share=share,
                position=position,
                conversation=state.conversation,
                responses=state.responses,
                policies=state.policies,
                graders=state.graders,
                scrub=state.secret_scrubber(),
                sdk_fast_path=tricks.sdk_fast_path(),
            )
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from None
    # The SDK's modules and the collected items live until the process ends.
    tricks.freeze()
    return live


@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session: pytest.Session) -> Generator[None, object, object]:
    state = session.config.stash.get(STATE_KEY, None)
    live = None
    if (
        state is not None
        and (state.responses is None or state.settings.judge_model)
        and session.items
        and not session.config.option.collectonly
    ):
        live = state.live = _live_evaluator(session, state)
        try:
            # Bulk-creating futures and jobs: no garbage, so no collections meanwhile.
            with tricks.collector_paused():
                live.prefetch(
                    [
                        (spec.entry, spec.model)
                        for spec in _own_specs(session)
                        if isinstance(spec.entry, Record)
                    ]
                )
        except ConfigError as exc:  # the engine starts here (its cache opens)
            live.close()
            raise pytest.UsageError(str(exc)) from None
    try:
        return (yield)
    except KeyboardInterrupt:
        if live is not None:
            live.cancel()
        raise
    finally:
        if live is not None:
            live.close()


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """The planned calls and their estimated cost, before any worker starts or call is paid.

    ``--estimate-only`` stops here with exit status 0 (``pipeline.estimate``).
    """
    config = session.config
    state = config.stash.get(STATE_KEY, None)
    if state is None or hasattr(config, "workerinput") or config.option.collectonly:
        return
    import warnings

    # Loading the plan here warns (unknown policy ids) outside pytest's capture: the
    # warnings are handed to pytest, which shows them in its summary as before.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            _estimate_before_any_call(config, state)
        finally:
            for found in caught:
                config.issue_config_time_warning(found.message, stacklevel=2)  # type: ignore[arg-type]


def _estimate_before_any_call(config: pytest.Config, state: RunPlan) -> None:
    _check_response_rows(config, state)
    s = state.settings
    if not (s.estimate_only or s.judge_model or state.responses is None):
        return  # pre-computed answers graded without a judge: nothing is paid
    from pytest_legaleval.pipeline.estimate import estimate_run

    try:
        lines = estimate_run(state, stream=_streams(config)).lines()
    except (ConfigError, DatasetRejected) as exc:
        if s.estimate_only:
            raise pytest.UsageError(getattr(exc, "message", str(exc))) from None
        return  # collection reports it, as without an estimate
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    for line in lines:
        if reporter is not None:
            reporter.write_line(line)
        else:
            print(line)
    if s.estimate_only:
        pytest.exit("--estimate-only: no call was made", returncode=0)


def _streams(config: pytest.Config) -> bool:
    """An xdist controller reads the dataset as a stream: it never holds it."""
    return config.pluginmanager.get_plugin("dsession") is not None


def _check_response_rows(config: pytest.Config, state: RunPlan) -> None:
    """Rows of --responses / --conversation-from that match no record: a warning; all: an error."""
    from pytest_legaleval.pipeline.responses import ResponsesWarning, match_responses

    tables = [("--responses", state.responses), ("--conversation-from", state.conversation)]
    if all(table is None for _, table in tables):
        return
    from pytest_legaleval.pipeline.estimate import plan_entries

    try:
        entries = plan_entries(state, stream=_streams(config), selected=False)
        ids = [e.id if isinstance(e, Record) else e.record_id for e in entries]
    except (ConfigError, DatasetRejected):
        return  # collection reports it
    for flag, table in tables:
        if table is None:
            continue
        found = match_responses(table, ids)
        try:
            found.check(flag)
        except ResponsesError as exc:
            raise pytest.UsageError(str(exc)) from None
        warning = found.warning()
        if warning is not None:
            config.issue_config_time_warning(ResponsesWarning(f"{flag}: {warning}"), stacklevel=2)


def pytest_sessionfinish(session: pytest.Session) -> None:
    # Before the terminal summary, which runs after every plain sessionfinish hook.
    tricks.drop_empty_hypothesis_summary(session.config)


def pytest_unconfigure(config: pytest.Config) -> None:
    tricks.restore(config)
    restore_sigterm(config)


@pytest.hookimpl(tryfirst=True, specname="pytest_runtest_makereport")
def pytest_runtest_makereport_failed_record(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """A failed record's or an errored item's report: its reason, built without a traceback."""
    return outcomes.fast_report(item, call)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    # Everything the run recorder writes travels on the report: an xdist controller holds
    # no copy of the dataset.
    invalid = item.stash.get(INVALID_KEY, None)
    if report.when == "setup" and invalid is not None:
        report.legaleval_invalid = invalid.rejection()  # type: ignore[attr-defined]
    elif report.when == "call" or (report.when == "setup" and report.failed):
        result = item.stash.get(RESULT_KEY, None)
        if result is not None:
            spec: ItemSpec = item.callspec.params["record"]  # type: ignore[attr-defined]
            report.legaleval = result.to_dict()  # type: ignore[attr-defined]
            report.legaleval_record = spec.provenance()  # type: ignore[attr-defined]
    outcomes.line_mode_repr(item.config, report)
    return report


_PLAIN_REPORT_KEYS = frozenset(("$report_type", *PYTEST_REPORT_FIELDS, *PAYLOAD_FIELDS))
"""A test report made only of these fields (as pytest serializes them) is sent whole as JSON."""


@pytest.hookimpl(wrapper=True)
def pytest_report_to_serializable(
    config: pytest.Config, report: pytest.CollectReport | pytest.TestReport
) -> Generator[None, dict[str, Any] | None, dict[str, Any] | None]:
    """An xdist worker sends a report as one JSON string (``tricks.pack_report``)."""
    data = yield
    # Only on the way to the controller: other users of this hook (report logs) keep the
    # values as they are.
    if data is None or not hasattr(config, "workerinput"):
        return data
    return tricks.pack_report(data, _PLAIN_REPORT_KEYS, PAYLOAD_FIELDS)


@pytest.hookimpl(wrapper=True)
def pytest_report_from_serializable(
    config: pytest.Config, data: dict[str, Any]
) -> Generator[None, object, object]:
    tricks.unpack_report(data)
    report = yield
    if isinstance(report, pytest.TestReport):  # serialization made the reason a plain string
        outcomes.line_mode_repr(config, report)
    return report
