"""The options of a run and how their values are resolved (no pytest here).

The pytest layer (``pytest_legaleval.pytest.options``) and the ``legaleval serve`` command
register the same :data:`OPTIONS` under the same names.

Precedence: command line > ``--legaleval-config`` YAML (or ``legaleval.yaml`` at the
rootdir) > ``[tool.pytest.ini_options]`` keys (``legaleval_<name>``) > defaults.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pytest_legaleval.errors import ConfigError

__all__ = [
    "OPTIONS",
    "REDACT_KINDS",
    "OptionSpec",
    "Settings",
    "Shard",
    "find_config_file",
    "generation_settings",
    "parse_shard",
    "resolve_settings",
    "with_local_urls",
]

REDACT_KINDS: tuple[str, ...] = ("pii",)
"""Opt-in redaction kinds (secrets are always redacted)."""

_RUN_ID_RE = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")


@dataclass(frozen=True, slots=True)
class Shard:
    """``--shard K/N``: this run evaluates the K-th of N disjoint parts (1-based)."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str) -> Shard:
    """Parse ``K/N`` with ``1 <= K <= N``."""
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if not match:
        raise ConfigError(f"--shard expects K/N such as 1/4, got {text!r}")
    index, count = int(match.group(1)), int(match.group(2))
    if count < 1 or not 1 <= index <= count:
        raise ConfigError(f"--shard {text}: K must be between 1 and N (N >= 1)")
    return Shard(index, count)


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError(f"must be >= 1, got {value}")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise ValueError(f"must be > 0, got {value}")
    return value


def _delays(text: str) -> tuple[float, ...]:
    values = tuple(float(part) for part in str(text).split(",") if part.strip())
    if not values or any(v < 0 for v in values):
        raise ValueError(f"expects comma-separated seconds >= 0, got {text!r}")
    return values


def _boolean(text: str) -> bool:
    value = str(text).strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"expects true or false, got {text!r}")


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


OPTIONS: tuple[OptionSpec, ...] = (
    OptionSpec(
        "--dataset", "dataset", "Dataset file or directory (repeatable).", (), None, True, "PATH"
    ),
    OptionSpec(
        "--dataset-format",
        "dataset_format",
        "Input format: auto (detect from content), legal_eval_v1 or contract_v1.",
        "auto",
    ),
    OptionSpec(
        "--responses",
        "responses",
        "JSONL of pre-computed responses {record_id, response, model?} (no generation).",
        None,
        None,
        False,
        "PATH",
    ),
    OptionSpec(
        "--judgments",
        "judgments",
        "Recorded judge verdicts (LBR's judgments.jsonl or a run's predictions.jsonl): judged "
        "records are graded from them under their policy, without calling a judge.",
        None,
        None,
        False,
        "PATH",
    ),
    OptionSpec(
        "--model",
        "model",
        "Model to evaluate live, PROVIDER/NAME (repeatable).",
        (),
        None,
        True,
        "PROVIDER/NAME",
    ),
    OptionSpec(
        "--base-url",
        "base_url",
        "OpenAI-compatible endpoint (else OPENAI_BASE_URL).",
        None,
        None,
        False,
        "URL",
    ),
    OptionSpec(
        "--judge-model",
        "judge_model",
        "Judge model PROVIDER/NAME (repeatable).",
        (),
        None,
        True,
        "PROVIDER/NAME",
    ),
    OptionSpec(
        "--concurrency",
        "concurrency",
        "Model calls in flight, in total.",
        32,
        _positive_int,
        False,
        "N",
    ),
    OptionSpec(
        "--run-dir",
        "run_dir",
        "Directory that receives run directories.",
        "legaleval-runs",
        None,
        False,
        "DIR",
    ),
    OptionSpec(
        "--run-id", "run_id", "Run id (default: generated run_<ULID>).", None, None, False, "ID"
    ),
    OptionSpec(
        "--limit",
        "limit",
        "Evaluate only the first N selected records.",
        None,
        _positive_int,
        False,
        "N",
    ),
    OptionSpec(
        "--sample",
        "sample",
        "Evaluate a seeded random sample of N records.",
        None,
        _positive_int,
        False,
        "N",
    ),
    OptionSpec(
        "--seed",
        "seed",
        "Seed for --sample (and for the model, where supported).",
        None,
        int,
        False,
        "S",
    ),
    OptionSpec(
        "--shard",
        "shard",
        "Evaluate the K-th of N parts, stable by record id.",
        None,
        parse_shard,
        False,
        "K/N",
    ),
    OptionSpec(
        "--cache", "cache", "SQLite response cache.", ".legaleval/cache.sqlite", None, False, "PATH"
    ),
    OptionSpec(
        "--api-key-env",
        "api_key_env",
        "Environment variable holding the API key (the key is never read elsewhere).",
        "OPENAI_API_KEY",
        None,
        False,
        "VAR",
    ),
    OptionSpec(
        "--temperature",
        "temperature",
        "Sampling temperature of generation.",
        None,
        float,
        False,
        "T",
    ),
    OptionSpec(
        "--top-p", "top_p", "Nucleus sampling top_p of generation.", None, float, False, "P"
    ),
    OptionSpec(
        "--max-new-tokens",
        "max_new_tokens",
        "Maximum tokens per answer.",
        None,
        _positive_int,
        False,
        "N",
    ),
    OptionSpec(
        "--rpm",
        "rpm",
        "Requests per minute, in total over all workers.",
        None,
        _positive_float,
        False,
        "N",
    ),
    OptionSpec(
        "--tpm",
        "tpm",
        "Tokens per minute, in total over all workers.",
        None,
        _positive_float,
        False,
        "N",
    ),
    OptionSpec(
        "--request-timeout",
        "request_timeout",
        "Seconds per model call attempt.",
        120.0,
        _positive_float,
        False,
        "S",
    ),
    OptionSpec(
        "--retry-delays",
        "retry_delays",
        "Backoff before retries 1, 2, … in seconds (±20 %% jitter).",
        (2.0, 6.0, 14.0),
        _delays,
        False,
        "S,S,…",
    ),
    OptionSpec(
        "--max-attempts",
        "max_attempts",
        "Attempts per call, the first included.",
        3,
        _positive_int,
        False,
        "N",
    ),
    OptionSpec(
        "--transport",
        "transport",
        "HTTP transport of the openai SDK: auto, httpx or aiohttp.",
        "auto",
        None,
        False,
        "NAME",
    ),
    OptionSpec(
        "--conversation-from",
        "conversation_from",
        "Responses file whose answers become the assistant turn before each record's "
        "follow-up prompt.",
        None,
        None,
        False,
        "PATH",
    ),
    OptionSpec(
        "--generate-ungraded",
        "generate_ungraded",
        "Generate answers even for records no configured grader can grade here (judged "
        "records without --judge-model); by default they are skipped before any call.",
        False,
        _boolean,
        switch=True,
    ),
    OptionSpec(
        "--judge-base-url",
        "judge_base_url",
        "OpenAI-compatible endpoint of the judge models (default: --base-url).",
        None,
        None,
        False,
        "URL",
    ),
    OptionSpec(
        "--judge-temperature",
        "judge_temperature",
        "Sampling temperature of the judge.",
        0.0,
        float,
        False,
        "T",
    ),
    OptionSpec(
        "--judge-max-tokens",
        "judge_max_tokens",
        "Maximum tokens per judge reply.",
        1024,
        _positive_int,
        False,
        "N",
    ),
    OptionSpec(
        "--judge-concurrency",
        "judge_concurrency",
        "Judge calls in flight, in total (their own pool, so judging overlaps generation).",
        32,
        _positive_int,
        False,
        "N",
    ),
    OptionSpec(
        "--judge-reasks",
        "judge_reasks",
        "Times an unparseable judge reply is re-asked with the parse error before it is a "
        "judge_error.",
        2,
        int,
        False,
        "N",
    ),
    OptionSpec(
        "--policy-dir",
        "policy_dir",
        "Directory of extra policy YAML files (metadata.policy_id selects one).",
        None,
        None,
        False,
        "DIR",
    ),
    OptionSpec(
        "--slice-by",
        "slice_by",
        "Extra slice dimension for metrics_by_slice.json, e.g. metadata.jurisdiction (repeatable).",
        (),
        None,
        True,
        "metadata.KEY",
    ),
    OptionSpec(
        "--redact",
        "redact",
        "Extra redaction before persistence: pii (secrets are always redacted; repeatable).",
        (),
        None,
        True,
        "KIND",
    ),
    OptionSpec(
        "--price-table",
        "price_table",
        "YAML of USD prices per million input/output tokens per model (overrides the "
        "built-in table).",
        None,
        None,
        False,
        "PATH",
    ),
    OptionSpec(
        "--gate",
        "gate",
        "Quality gate such as pass_rate>=0.8 (repeatable).",
        (),
        None,
        True,
        "EXPR",
    ),
    OptionSpec(
        "--baseline",
        "baseline",
        "Baseline run directory for paired comparison.",
        None,
        None,
        False,
        "PATH",
    ),
    OptionSpec(
        "--max-regression",
        "max_regression",
        "With --baseline: the largest accepted drop in pass rate (absolute, e.g. 0.02).",
        None,
        float,
        False,
        "X",
    ),
    OptionSpec(
        "--allow-scoring-mismatch",
        "allow_scoring_mismatch",
        "With --baseline: pair items even when the baseline scored rubric items under another "
        "rule (minmax, clipped); by default such a baseline fails the regression gate.",
        False,
        _boolean,
        switch=True,
    ),
    OptionSpec(
        "--regression-alpha",
        "regression_alpha",
        "With --baseline: significance level of the paired regression test.",
        0.05,
        _positive_float,
        False,
        "A",
    ),
)

_BY_DEST = {spec.dest: spec for spec in OPTIONS}


@dataclass(frozen=True, slots=True)
class Settings:
    """The resolved configuration of one session."""

    dataset: tuple[str, ...] = ()
    dataset_format: str = "auto"
    responses: str | None = None
    judgments: str | None = None
    model: tuple[str, ...] = ()
    base_url: str | None = None
    judge_model: tuple[str, ...] = ()
    concurrency: int = 32
    run_dir: str = "legaleval-runs"
    run_id: str | None = None
    limit: int | None = None
    sample: int | None = None
    seed: int | None = None
    shard: Shard | None = None
    cache: str | None = ".legaleval/cache.sqlite"
    api_key_env: str = "OPENAI_API_KEY"
    temperature: float | None = None
    top_p: float | None = None
    max_new_tokens: int | None = None
    rpm: float | None = None
    tpm: float | None = None
    request_timeout: float = 120.0
    retry_delays: tuple[float, ...] = (2.0, 6.0, 14.0)
    max_attempts: int = 3
    transport: str = "auto"
    conversation_from: str | None = None
    per_model: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Per-model settings from the YAML ``models:`` mapping."""
    generate_ungraded: bool = False
    judge_base_url: str | None = None
    judge_temperature: float = 0.0
    judge_max_tokens: int = 1024
    judge_concurrency: int = 32
    judge_reasks: int = 2
    policy_dir: str | None = None
    slice_by: tuple[str, ...] = ()
    redact: tuple[str, ...] = ()
    price_table: str | None = None
    gate: tuple[str, ...] = ()
    baseline: str | None = None
    max_regression: float | None = None
    regression_alpha: float = 0.05
    allow_scoring_mismatch: bool = False
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


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read --legaleval-config {path}: {exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(
            f"--legaleval-config {path} must hold a mapping, got {type(data).__name__}"
        )
    return data


def _coerce(spec: OptionSpec, value: Any, origin: str) -> Any:
    """Bring a value from any source to the type the settings hold."""
    if spec.multiple:
        items: Sequence[Any] = value if isinstance(value, list | tuple) else [value]
        return tuple(str(v) for v in items if str(v).strip())
    if value is None:
        return None
    if isinstance(value, list | tuple) and spec.dest == "retry_delays":
        value = ",".join(str(v) for v in value)
    if spec.convert is not None and isinstance(value, str | int | float):
        try:
            return spec.convert(str(value))
        except ConfigError:
            raise
        except ValueError as exc:
            raise ConfigError(f"{spec.flag} ({origin}): {exc}") from exc
    return value


def find_config_file(rootdir: Path, explicit: str | None) -> Path | None:
    """The YAML configuration file of a run, if any.

    ``explicit`` (``--legaleval-config``), else ``legaleval.yaml`` at ``rootdir`` when it
    exists.

    Raises:
        ConfigError: ``explicit`` names no file.

    """
    if explicit:
        config_file = Path(explicit)
        if not config_file.is_file():
            raise ConfigError(f"--legaleval-config {explicit}: no such file")
        return config_file
    found = rootdir / "legaleval.yaml"
    return found if found.is_file() else None


def resolve_settings(
    cli: Mapping[str, Any],
    *,
    ini: Mapping[str, Any] | None = None,
    config_file: Path | None = None,
    no_cache: bool = False,
) -> Settings:
    """Resolve every option by precedence; raise ``ConfigError`` on bad values.

    Args:
        cli: command-line values by option ``dest`` (``None`` or ``[]`` when not given).
        ini: ``[tool.pytest.ini_options]`` values by ``dest`` (pytest only).
        config_file: the YAML configuration, if any (see :func:`find_config_file`).
        no_cache: ``--no-cache`` was given.

    """
    ini = ini or {}
    yaml_values = _read_yaml(config_file) if config_file else {}
    unknown = sorted(
        set(yaml_values) - set(_BY_DEST) - {"models", "gates", "judge", "pricing", "per_model"}
    )
    if unknown:
        raise ConfigError(f"{config_file}: unknown keys {unknown}; accepted: {sorted(_BY_DEST)}")
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for spec in OPTIONS:
        cli_value = cli.get(spec.dest)
        ini_value = ini.get(spec.dest)
        yaml_key = spec.dest if spec.dest in yaml_values else None
        if spec.dest == "gate" and "gates" in yaml_values:
            yaml_key = "gates"
        if cli_value not in (None, []):
            values[spec.dest], sources[spec.dest] = _coerce(spec, cli_value, "command line"), "cli"
        elif yaml_key is not None:
            values[spec.dest] = _coerce(spec, yaml_values[yaml_key], str(config_file))
            sources[spec.dest] = "yaml"
        elif ini_value not in (None, "", []):
            values[spec.dest], sources[spec.dest] = _coerce(spec, ini_value, "ini"), "ini"
        else:
            values[spec.dest], sources[spec.dest] = spec.default, "default"
    if no_cache:
        values["cache"], sources["cache"] = None, "cli"
    run_id = values.get("run_id")
    if run_id is not None and not _RUN_ID_RE.match(str(run_id)):
        raise ConfigError(
            f"--run-id {run_id!r} is not a safe directory name; use letters, digits, '_', '-', '.'"
        )
    per_model = yaml_values.get("models", {})
    if not isinstance(per_model, dict) or not all(isinstance(v, dict) for v in per_model.values()):
        raise ConfigError(
            f"{config_file}: 'models' must map PROVIDER/NAME to a mapping of "
            "settings (base_url, api_key_env, temperature, …)"
        )
    values["per_model"] = per_model
    if values["transport"] not in ("auto", "httpx", "aiohttp"):
        raise ConfigError(f"--transport {values['transport']!r}: choose auto, httpx or aiohttp")
    if values["judge_reasks"] < 0:
        raise ConfigError(f"--judge-reasks must be >= 0, got {values['judge_reasks']}")
    for kind in values["redact"]:
        if kind not in REDACT_KINDS:
            raise ConfigError(f"--redact {kind!r}: choose from {', '.join(REDACT_KINDS)}")
    for key in values["slice_by"]:
        if not re.fullmatch(r"metadata\.[^.\s]+(\.[^.\s]+)*", key):
            raise ConfigError(
                f"--slice-by {key!r}: expected metadata.KEY, e.g. metadata.jurisdiction"
            )
    for dest, flag, role in (
        ("model", "--model", "each model is one item per record"),
        ("judge_model", "--judge-model", "each judge is one vote of the panel"),
    ):
        repeated = sorted({m for m in values[dest] if list(values[dest]).count(m) > 1})
        if repeated:
            raise ConfigError(
                f"{flag} {', '.join(repeated)} is given more than once ({role}): drop the repeat"
            )
    base_url = values.get("base_url") or os.environ.get("OPENAI_BASE_URL") or None
    values["base_url"] = base_url
    return Settings(
        config_file=str(config_file) if config_file else None, sources=sources, **values
    )


def with_local_urls(settings: Settings, urls: Mapping[str, str]) -> Settings:
    """``settings`` routed to the local servers in ``urls`` (``{model: base_url}``).

    Each local model gets ``base_url``, the unset key variable :data:`local_model.LOCAL_API_KEY_ENV`
    and, without ``--max-new-tokens``, a reply budget; ``--concurrency`` and
    ``--judge-concurrency``, when not given, drop to :data:`local_model.LOCAL_DEFAULT_CONCURRENCY`.
    """
    if not urls:
        return settings
    import dataclasses

    from pytest_legaleval.engine import local_model

    per_model = {k: dict(v) for k, v in settings.per_model.items()}
    for model, url in urls.items():
        entry = per_model.setdefault(model, {})
        entry["base_url"] = url
        entry.setdefault("api_key_env", local_model.LOCAL_API_KEY_ENV)
        if settings.max_new_tokens is None:
            entry.setdefault("max_new_tokens", local_model.LOCAL_DEFAULT_MAX_NEW_TOKENS)
    changes: dict[str, Any] = {"per_model": per_model}
    sources = settings.sources
    if sources.get("concurrency", "default") == "default":
        changes["concurrency"] = min(settings.concurrency, local_model.LOCAL_DEFAULT_CONCURRENCY)
    if sources.get("judge_concurrency", "default") == "default":
        changes["judge_concurrency"] = min(
            settings.judge_concurrency, local_model.LOCAL_DEFAULT_CONCURRENCY
        )
    return dataclasses.replace(settings, **changes)


_PARAM_KEYS = ("temperature", "top_p", "max_new_tokens", "seed")


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
