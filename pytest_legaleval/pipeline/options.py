"""The options of a run, each declared once, as a field of :class:`Settings`.

Every option is one field of the frozen ``Settings`` dataclass: its name is the option's
``dest``, its annotation the type the settings hold, and :func:`option` gives its flag,
help, default and conversion. :data:`OPTIONS` is read off the fields, so the pytest layer
(``pytest_legaleval.pytest.options``), the ``legaleval serve`` command and the resolution
(:mod:`pipeline.settings`) see the same table, in the same order, and ``mypy`` still knows
each field's type.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_legaleval.engine.types import EngineSettings
from pytest_legaleval.metrics.artifacts import METRICS_BY_SLICE, PREDICTIONS
from pytest_legaleval.pipeline.converters import (
    Shard,
    boolean,
    bounded,
    choice,
    delays,
    dotted_field,
    name_token,
    parse_shard,
    usd,
)

__all__ = [
    "EPOCH_REDUCERS",
    "OPTIONS",
    "PATH_OPTIONS",
    "REDACT_KINDS",
    "OptionSpec",
    "Settings",
    "option",
]

EPOCH_REDUCERS: tuple[str, ...] = ("mean", "majority", "all", "any")
"""``--epoch-reducer`` values: how the K epochs of a record and model make one verdict."""

REDACT_KINDS: tuple[str, ...] = (
    "pii", "email", "phone", "iban", "card_number", "us_ssn", "uk_nino",
)  # fmt: skip
"""Opt-in redaction kinds: ``pii`` (all of them) or single kinds (secrets always go)."""


@dataclass(frozen=True, slots=True)
class OptionSpec:
    """One option: its flag, its settings attribute and how to read it."""

    flag: str
    dest: str
    help: str
    default: Any = None
    convert: Callable[[str], Any] | None = None
    multiple: bool = False
    metavar: str | None = None
    switch: bool = False
    """A command-line switch without a value (``--generate-ungraded``); YAML takes a bool."""
    path: bool = False
    """The value names a file or folder: a ``legaleval.yaml`` read automatically may only
    name one inside its own folder (see :data:`PATH_OPTIONS`)."""


_SPEC = "legaleval_option"
"""The key of a field's ``metadata`` that holds its :class:`OptionSpec`."""


def option(
    *,
    flag: str,
    help: str,
    default: Any = None,
    convert: Callable[[str], Any] | None = None,
    multiple: bool = False,
    metavar: str | None = None,
    switch: bool = False,
    path: bool = False,
) -> Any:
    """Declare a :class:`Settings` field as an option; the field's name is its ``dest``.

    Returns ``dataclasses.field(default=default, metadata=...)``, typed ``Any`` so that the
    field keeps the type of its annotation.
    """
    spec = OptionSpec(flag, "", help, default, convert, multiple, metavar, switch, path)
    return field(default=default, metadata={_SPEC: spec})


_ENGINE = EngineSettings()
"""The engine's own defaults: an option that configures the engine defaults to them."""

_positive_int = bounded(int, 1, 10**9)
_count = bounded(int, 1, 100_000)
"""Concurrency and the like: at least 1, and no more than any endpoint could take."""
_tokens = bounded(int, 1, 10_000_000)
_per_minute = bounded(float, 0.0, 1e12, low_open=True)
_timeout = bounded(float, 0.0, 86_400.0, low_open=True)
_sampling_temperature = bounded(float, 0.0, 2.0)
_unit_open = bounded(float, 0.0, 1.0, low_open=True)
_seed = bounded(int, -(2**63), 2**64 - 1)
_batch_wait = bounded(float, 0.0, 7 * 86_400.0, low_open=True)


@dataclass(frozen=True, slots=True)
class Settings:
    """The resolved configuration of one session.

    The fields up to ``per_model`` are the options, in the order ``--help`` lists them.
    """

    # fmt: off
    dataset: tuple[str, ...] = option(
        flag="--dataset", metavar="PATH", default=(), multiple=True, path=True,
        help="Dataset file or directory (repeatable).",
    )
    dataset_format: str = option(
        flag="--dataset-format", default="auto",
        help="Input format: auto (detect from content), legal_eval_v1 or contract_v1.",
    )
    protocol: str | None = option(
        flag="--protocol", metavar="NAME", convert=name_token,
        help="Protocol (prompts, policy and grading) of a benchmark imported with --dataset "
        "SOURCE:PATH, e.g. one of our policies instead of the benchmark's official protocol "
        "(the default; `legaleval import --help` lists each source's protocols).",
    )
    responses: str | None = option(
        flag="--responses", metavar="PATH", path=True,
        help="JSONL of pre-computed responses {record_id, response, model?} (no generation).",
    )
    judgments: str | None = option(
        flag="--judgments", metavar="PATH", path=True,
        help=f"Recorded judge verdicts (LBR's judgments.jsonl or a run's {PREDICTIONS}): "
        "judged records are graded from them under their policy, without calling a judge.",
    )
    model: tuple[str, ...] = option(
        flag="--model", metavar="PROVIDER/NAME", default=(), multiple=True,
        help="Model to evaluate live, PROVIDER/NAME (repeatable).",
    )
    base_url: str | None = option(
        flag="--base-url", metavar="URL",
        help="OpenAI-compatible endpoint (else OPENAI_BASE_URL).",
    )
    judge_model: tuple[str, ...] = option(
        flag="--judge-model", metavar="PROVIDER/NAME", default=(), multiple=True,
        help="Judge model PROVIDER/NAME (repeatable).",
    )
    concurrency: int = option(
        flag="--concurrency", metavar="N", default=_ENGINE.concurrency, convert=_count,
        help="Model calls in flight, in total.",
    )
    run_dir: str = option(
        flag="--run-dir", metavar="DIR", default="legaleval-runs", path=True,
        help="Directory that receives run directories.",
    )
    run_id: str | None = option(
        flag="--run-id", metavar="ID",
        help="Run id (default: generated run_<ULID>).",
    )
    limit: int | None = option(
        flag="--limit", metavar="N", convert=_positive_int,
        help="Evaluate only the first N selected records.",
    )
    sample: int | None = option(
        flag="--sample", metavar="N", convert=_positive_int,
        help="Evaluate a seeded random sample of N records.",
    )
    seed: int | None = option(
        flag="--seed", metavar="S", convert=_seed,
        help="Seed for --sample (and for the model, where supported).",
    )
    shard: Shard | None = option(  # noqa: RUF009 - option() returns a dataclasses.field
        flag="--shard", metavar="K/N", convert=parse_shard,
        help="Evaluate the K-th of N parts, stable by record id.",
    )
    epochs: int = option(
        flag="--epochs", metavar="K", default=1, convert=bounded(int, 1, 100),
        help="Answers sampled per record and model (1-100): each epoch is its own call and "
        "grade, and --epoch-reducer makes one verdict of them.",
    )
    epoch_reducer: str = option(
        flag="--epoch-reducer", metavar="NAME", default="mean",
        convert=choice(*EPOCH_REDUCERS),
        help="How the epochs of a record and model make one verdict: mean (the mean score "
        "against the pass threshold), majority (most epochs pass), all (every epoch passes) "
        "or any (one epoch passes).",
    )
    cache: str | None = option(
        flag="--cache", metavar="PATH", default=_ENGINE.cache_path, path=True,
        help="SQLite response cache.",
    )
    api_key_env: str = option(
        flag="--api-key-env", metavar="VAR", default=_ENGINE.api_key_env,
        help="Environment variable holding the API key (the key is never read elsewhere).",
    )
    temperature: float | None = option(
        flag="--temperature", metavar="T", convert=_sampling_temperature,
        help="Sampling temperature of generation.",
    )
    top_p: float | None = option(
        flag="--top-p", metavar="P", convert=_unit_open,
        help="Nucleus sampling top_p of generation.",
    )
    max_new_tokens: int | None = option(
        flag="--max-new-tokens", metavar="N", convert=_tokens,
        help="Maximum tokens per answer.",
    )
    rpm: float | None = option(
        flag="--rpm", metavar="N", convert=_per_minute,
        help="Requests per minute, in total over all workers.",
    )
    tpm: float | None = option(
        flag="--tpm", metavar="N", convert=_per_minute,
        help="Tokens per minute, in total over all workers.",
    )
    request_timeout: float = option(
        flag="--request-timeout", metavar="S", default=_ENGINE.request_timeout_s,
        convert=_timeout,
        help="Seconds per model call attempt.",
    )
    max_response_bytes: int = option(
        flag="--max-response-bytes", metavar="N", default=_ENGINE.max_response_bytes,
        convert=bounded(int, 1024, 2**40),
        help="Most bytes of one model reply, counted after decompression as it arrives "
        "(default 32 MiB); a longer reply is an invalid_response error of its item.",
    )
    retry_delays: tuple[float, ...] = option(
        flag="--retry-delays", metavar="S,S,…", default=_ENGINE.retry.delays_s, convert=delays,
        help="Backoff before retries 1, 2, … in seconds (±20 %% jitter).",
    )
    max_attempts: int = option(
        flag="--max-attempts", metavar="N", default=_ENGINE.retry.max_attempts,
        convert=bounded(int, 1, 100),
        help="Attempts per call, the first included.",
    )
    transport: str = option(
        flag="--transport", metavar="NAME", default=_ENGINE.transport,
        help="HTTP client: auto (= wire, the wire format on aiohttp) or sdk (the openai SDK's "
        "client).",
    )
    batch: bool = option(
        flag="--batch", default=False, convert=boolean, switch=True,
        help="Send generation and judge calls through the endpoint's Batch API (/v1/files + "
        "/v1/batches): about half the price, results within 24 h; the batches are kept in "
        "the cache, so a rerun with the same --cache resumes them instead of paying again.",
    )
    batch_poll: float = option(
        flag="--batch-poll", metavar="S", default=_ENGINE.batch_poll_s,
        convert=bounded(float, 0.0, 3600.0, low_open=True),
        help="With --batch: seconds before a batch's first poll; the waits grow to a minute.",
    )
    batch_attempts: int = option(
        flag="--batch-attempts", metavar="N", default=_ENGINE.batch_attempts,
        convert=bounded(int, 1, 20),
        help="With --batch: batches a failed request may go into before it is retried live.",
    )
    batch_max_wait: float | None = option(
        flag="--batch-max-wait", metavar="S", convert=_batch_wait,
        help="With --batch: a batch still running after S seconds is cancelled; what it "
        "answered is kept and the rest is sent live (default: wait for the provider).",
    )
    conversation_from: str | None = option(
        flag="--conversation-from", metavar="PATH", path=True,
        help="Responses file whose answers become the assistant turn before each record's "
        "follow-up prompt.",
    )
    attachments_root: tuple[str, ...] = option(
        flag="--attachments-root", metavar="DIR", default=(), multiple=True, path=True,
        help="A folder attachments may be read from besides their dataset's (repeatable); "
        "a path named by a dataset is otherwise confined to the dataset's folder.",
    )
    generate_ungraded: bool = option(
        flag="--generate-ungraded", default=False, convert=boolean, switch=True,
        help="Generate answers even for records no configured grader can grade here (judged "
        "records without --judge-model); by default they are skipped before any call.",
    )
    judge_base_url: str | None = option(
        flag="--judge-base-url", metavar="URL",
        help="OpenAI-compatible endpoint of the judge models (default: --base-url).",
    )
    judge_temperature: float = option(
        flag="--judge-temperature", metavar="T", default=0.0, convert=_sampling_temperature,
        help="Sampling temperature of the judge.",
    )
    judge_max_tokens: int = option(
        flag="--judge-max-tokens", metavar="N", default=1024, convert=_tokens,
        help="Maximum tokens per judge reply.",
    )
    judge_concurrency: int = option(
        flag="--judge-concurrency", metavar="N", default=_ENGINE.concurrency, convert=_count,
        help="Judge calls in flight, in total (their own pool, so judging overlaps "
        "generation).",
    )
    judge_reasks: int = option(
        flag="--judge-reasks", metavar="N", default=2, convert=bounded(int, 0, 20),
        help="Times an unparseable judge reply is re-asked with the parse error before it is "
        "a judge_error.",
    )
    judge_epochs: int = option(
        flag="--judge-epochs", metavar="K", default=1, convert=bounded(int, 1, 20),
        help="Times each answer is judged (1-20), to measure how often the judge's verdict "
        "changes.",
    )
    human_labels: str | None = option(
        flag="--human-labels", metavar="PATH", path=True,
        help="JSONL of human grades {record_id, model, passed and/or score, ...} that the "
        "judge's verdicts are audited against (agreement, Cohen's kappa, a corrected pass "
        "rate).",
    )
    policy_dir: str | None = option(
        flag="--policy-dir", metavar="DIR", path=True,
        help="Directory of extra policy YAML files (metadata.policy_id selects one).",
    )
    slice_by: tuple[str, ...] = option(
        flag="--slice-by", metavar="metadata.KEY", default=(), multiple=True,
        help=f"Extra slice dimension for {METRICS_BY_SLICE}, e.g. metadata.jurisdiction "
        "(repeatable).",
    )
    cluster_by: str | None = option(
        flag="--cluster-by", metavar="FIELD", convert=dotted_field,
        help="Record field whose values group the records into clusters for the standard "
        "error, e.g. metadata.exam, metadata.task or dataset (default: no clusters).",
    )
    redact: tuple[str, ...] = option(
        flag="--redact", metavar="KIND", default=(), multiple=True,
        help="Extra redaction of every output meant to be read or shared: pii, or kinds among "
        "email, phone, iban, card_number, us_ssn, uk_nino (comma-separated or repeated; "
        "secrets are always redacted).",
    )
    price_table: str | None = option(
        flag="--price-table", metavar="PATH", path=True,
        help="YAML of USD prices per million input/output tokens per model (overrides the "
        "built-in table).",
    )
    max_cost: float | None = option(
        flag="--max-cost", metavar="USD", convert=usd,
        help="Spend cap in USD: no call is sent that would take the spent plus in-flight cost "
        "past it (the rest end cancelled, reason budget); needs a price for every model.",
    )
    estimate_only: bool = option(
        flag="--estimate-only", default=False, convert=boolean, switch=True,
        help="Print the planned calls and their estimated cost, then stop without any call.",
    )
    gate: tuple[str, ...] = option(
        flag="--gate", metavar="EXPR", default=(), multiple=True,
        help="Quality gate such as pass_rate>=0.8 (repeatable).",
    )
    baseline: str | None = option(
        flag="--baseline", metavar="PATH", path=True,
        help="Baseline run directory for paired comparison.",
    )
    max_regression: float | None = option(
        flag="--max-regression", metavar="X", convert=bounded(float, 0.0, 1.0),
        help="With --baseline: the largest accepted drop in pass rate (absolute, e.g. 0.02).",
    )
    allow_scoring_mismatch: bool = option(
        flag="--allow-scoring-mismatch", default=False, convert=boolean, switch=True,
        help="With --baseline: pair items even when the baseline scored rubric items under "
        "another rule (minmax, clipped); by default such a baseline fails the regression gate.",
    )
    regression_alpha: float = option(
        flag="--regression-alpha", metavar="A", default=0.05,
        convert=bounded(float, 0.0, 1.0, low_open=True),
        help="With --baseline: significance level of the paired regression test.",
    )
    # fmt: on

    per_model: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Per-model settings from the YAML ``models:`` mapping."""
    config_file: str | None = None
    sources: Mapping[str, str] = field(default_factory=dict)
    """Where each value came from: ``cli``, ``yaml``, ``ini`` or ``default``."""

    @property
    def active(self) -> bool:
        """Whether a dataset was configured at all."""
        return bool(self.dataset)

    def public_dict(self) -> dict[str, Any]:
        """JSON-safe view for the run manifest (no secrets are held here)."""
        out: dict[str, Any] = {}
        for spec in OPTIONS:
            value = getattr(self, spec.dest)
            out[spec.dest] = (
                list(value)
                if isinstance(value, tuple)
                else (str(value) if isinstance(value, Shard) else value)
            )
        out["per_model"] = {k: dict(v) for k, v in self.per_model.items()}
        out["config_file"] = self.config_file
        out["sources"] = dict(self.sources)
        return out


OPTIONS: tuple[OptionSpec, ...] = tuple(
    dataclasses.replace(f.metadata[_SPEC], dest=f.name)
    for f in dataclasses.fields(Settings)
    if _SPEC in f.metadata
)
"""Every option, in declaration order (the order of ``--help`` and of the manifest)."""

PATH_OPTIONS = frozenset(spec.dest for spec in OPTIONS if spec.path)
"""Options whose values are paths (confined when an automatically read YAML gives them)."""
