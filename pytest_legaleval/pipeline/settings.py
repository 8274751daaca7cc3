"""The options of a run and how their values are resolved (no pytest here).

The pytest layer (``pytest_legaleval.pytest.options``) and the ``legaleval serve`` command
register the same :data:`OPTIONS` under the same names.

Precedence: command line > ``--legaleval-config`` YAML (or ``legaleval.yaml`` at the
rootdir) > ``[tool.pytest.ini_options]`` keys (``legaleval_<name>``) > defaults.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_legaleval.engine.types import TRANSPORTS, EngineSettings
from pytest_legaleval.errors import ConfigError

__all__ = [
    "OPTIONS",
    "PATH_OPTIONS",
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

REDACT_KINDS: tuple[str, ...] = (
    "pii", "email", "phone", "iban", "card_number", "us_ssn", "uk_nino",
)  # fmt: skip
"""Opt-in redaction kinds: ``pii`` (all of them) or single kinds (secrets always go)."""

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


def _number(text: str, kind: type[int] | type[float]) -> float:
    try:
        value = float(text) if kind is float else int(str(text).strip())
    except ValueError:
        raise ValueError(
            f"expects {'a number' if kind is float else 'a whole number'}, got {text!r}"
        ) from None
    if not math.isfinite(value):
        raise ValueError(f"expects a finite number, got {text!r}")
    return value


def _bounded(
    kind: type[int] | type[float], low: float, high: float, *, low_open: bool = False
) -> Callable[[str], Any]:
    """A converter to ``kind`` that accepts finite values in [low, high] (``(low, high]``)."""

    def convert(text: str) -> Any:
        value = _number(text, kind)
        if (value <= low if low_open else value < low) or value > high:
            bracket = "(" if low_open else "["
            raise ValueError(f"must be in {bracket}{low:g}, {high:g}], got {text}")
        return value

    return convert


_positive_int = _bounded(int, 1, 10**9)
_count = _bounded(int, 1, 100_000)
"""Concurrency and the like: at least 1, and no more than any endpoint could take."""
_tokens = _bounded(int, 1, 10_000_000)
_per_minute = _bounded(float, 0.0, 1e12, low_open=True)
_timeout = _bounded(float, 0.0, 86_400.0, low_open=True)
_sampling_temperature = _bounded(float, 0.0, 2.0)
_unit_open = _bounded(float, 0.0, 1.0, low_open=True)
_seed = _bounded(int, -(2**63), 2**64 - 1)
_MAX_DELAY_S = 3600.0


def _usd(text: str) -> float:
    value = float(text)
    if not 0 < value < float("inf"):
        raise ValueError(f"expects a finite amount of USD > 0, got {text!r}")
    return value


def _delays(text: str) -> tuple[float, ...]:
    values = []
    for part in str(text).split(","):
        if not part.strip():
            continue
        value = _number(part, float)
        if not 0 <= value <= _MAX_DELAY_S:
            raise ValueError(
                f"expects comma-separated seconds in [0, {_MAX_DELAY_S:g}], got {text!r}"
            )
        values.append(value)
    if not values:
        raise ValueError(f"expects comma-separated seconds >= 0, got {text!r}")
    return tuple(values)


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


_ENGINE = EngineSettings()
"""The engine's own defaults: an option that configures the engine defaults to them."""

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
        _ENGINE.concurrency,
        _count,
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
        _seed,
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
        "--cache", "cache", "SQLite response cache.", _ENGINE.cache_path, None, False, "PATH"
    ),
    OptionSpec(
        "--api-key-env",
        "api_key_env",
        "Environment variable holding the API key (the key is never read elsewhere).",
        _ENGINE.api_key_env,
        None,
        False,
        "VAR",
    ),
    OptionSpec(
        "--temperature",
        "temperature",
        "Sampling temperature of generation.",
        None,
        _sampling_temperature,
        False,
        "T",
    ),
    OptionSpec(
        "--top-p", "top_p", "Nucleus sampling top_p of generation.", None, _unit_open, False, "P"
    ),
    OptionSpec(
        "--max-new-tokens",
        "max_new_tokens",
        "Maximum tokens per answer.",
        None,
        _tokens,
        False,
        "N",
    ),
    OptionSpec(
        "--rpm",
        "rpm",
        "Requests per minute, in total over all workers.",
        None,
        _per_minute,
        False,
        "N",
    ),
    OptionSpec(
        "--tpm",
        "tpm",
        "Tokens per minute, in total over all workers.",
        None,
        _per_minute,
        False,
        "N",
    ),
    OptionSpec(
        "--request-timeout",
        "request_timeout",
        "Seconds per model call attempt.",
        _ENGINE.request_timeout_s,
        _timeout,
        False,
        "S",
    ),
    OptionSpec(
        "--retry-delays",
        "retry_delays",
        "Backoff before retries 1, 2, … in seconds (±20 %% jitter).",
        _ENGINE.retry.delays_s,
        _delays,
        False,
        "S,S,…",
    ),
    OptionSpec(
        "--max-attempts",
        "max_attempts",
        "Attempts per call, the first included.",
        _ENGINE.retry.max_attempts,
        _bounded(int, 1, 100),
        False,
        "N",
    ),
    OptionSpec(
        "--transport",
        "transport",
        "HTTP client: auto (= wire, the wire format on aiohttp) or sdk (the openai SDK's client).",
        _ENGINE.transport,
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
        "--attachments-root",
        "attachments_root",
        "A folder attachments may be read from besides their dataset's (repeatable); "
        "a path named by a dataset is otherwise confined to the dataset's folder.",
        (),
        None,
        True,
        "DIR",
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
        _sampling_temperature,
        False,
        "T",
    ),
    OptionSpec(
        "--judge-max-tokens",
        "judge_max_tokens",
        "Maximum tokens per judge reply.",
        1024,
        _tokens,
        False,
        "N",
    ),
    OptionSpec(
        "--judge-concurrency",
        "judge_concurrency",
        "Judge calls in flight, in total (their own pool, so judging overlaps generation).",
        _ENGINE.concurrency,
        _count,
        False,
        "N",
    ),
    OptionSpec(
        "--judge-reasks",
        "judge_reasks",
        "Times an unparseable judge reply is re-asked with the parse error before it is a "
        "judge_error.",
        2,
        _bounded(int, 0, 20),
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
        "Extra redaction of every output meant to be read or shared: pii, or kinds among "
        "email, phone, iban, card_number, us_ssn, uk_nino (comma-separated or repeated; "
        "secrets are always redacted).",
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
        "--max-cost",
        "max_cost",
        "Spend cap in USD: no call is sent that would take the spent plus in-flight cost "
        "past it (the rest end cancelled, reason budget); needs a price for every model.",
        None,
        _usd,
        False,
        "USD",
    ),
    OptionSpec(
        "--estimate-only",
        "estimate_only",
        "Print the planned calls and their estimated cost, then stop without any call.",
        False,
        _boolean,
        switch=True,
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
        _bounded(float, 0.0, 1.0),
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
        _bounded(float, 0.0, 1.0, low_open=True),
        False,
        "A",
    ),
)

_BY_DEST = {spec.dest: spec for spec in OPTIONS}


def _default(dest: str) -> Any:
    """An option's default, written once, in :data:`OPTIONS`."""
    return _BY_DEST[dest].default


@dataclass(frozen=True, slots=True)
class Settings:
    """The resolved configuration of one session."""

    dataset: tuple[str, ...] = _default("dataset")
    dataset_format: str = _default("dataset_format")
    responses: str | None = _default("responses")
    judgments: str | None = _default("judgments")
    model: tuple[str, ...] = _default("model")
    base_url: str | None = _default("base_url")
    judge_model: tuple[str, ...] = _default("judge_model")
    concurrency: int = _default("concurrency")
    run_dir: str = _default("run_dir")
    run_id: str | None = _default("run_id")
    limit: int | None = _default("limit")
    sample: int | None = _default("sample")
    seed: int | None = _default("seed")
    shard: Shard | None = _default("shard")  # noqa: RUF009 - the default is None
    cache: str | None = _default("cache")
    api_key_env: str = _default("api_key_env")
    temperature: float | None = _default("temperature")
    top_p: float | None = _default("top_p")
    max_new_tokens: int | None = _default("max_new_tokens")
    rpm: float | None = _default("rpm")
    tpm: float | None = _default("tpm")
    request_timeout: float = _default("request_timeout")
    retry_delays: tuple[float, ...] = _default("retry_delays")
    max_attempts: int = _default("max_attempts")
    transport: str = _default("transport")
    conversation_from: str | None = _default("conversation_from")
    per_model: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Per-model settings from the YAML ``models:`` mapping."""
    attachments_root: tuple[str, ...] = _default("attachments_root")
    generate_ungraded: bool = _default("generate_ungraded")
    judge_base_url: str | None = _default("judge_base_url")
    judge_temperature: float = _default("judge_temperature")
    judge_max_tokens: int = _default("judge_max_tokens")
    judge_concurrency: int = _default("judge_concurrency")
    judge_reasks: int = _default("judge_reasks")
    policy_dir: str | None = _default("policy_dir")
    slice_by: tuple[str, ...] = _default("slice_by")
    redact: tuple[str, ...] = _default("redact")
    price_table: str | None = _default("price_table")
    max_cost: float | None = _default("max_cost")
    estimate_only: bool = _default("estimate_only")
    gate: tuple[str, ...] = _default("gate")
    baseline: str | None = _default("baseline")
    max_regression: float | None = _default("max_regression")
    regression_alpha: float = _default("regression_alpha")
    allow_scoring_mismatch: bool = _default("allow_scoring_mismatch")
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
    from pytest_legaleval.formats.safe_yaml import load_yaml

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read --legaleval-config {path}: {exc}") from None
    data = load_yaml(text, source=str(path))
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


PATH_OPTIONS = frozenset(
    {
        "dataset", "responses", "judgments", "conversation_from", "policy_dir", "price_table",
        "cache", "run_dir", "baseline", "attachments_root",
    }
)  # fmt: skip
"""Options whose values are paths (confined when an automatically read YAML gives them)."""


def _confined_yaml_path(value: str, folder: Path, dest: str, config_file: Path) -> str:
    """A path from a ``legaleval.yaml`` read automatically: inside its folder, or refused.

    Such a file comes with the repository being tested, not from the person running the
    tests, so it may not point the run at files elsewhere (``/etc``, ``~/.ssh``, a FIFO) or
    write outside its project. Relative paths are taken from the file's folder.
    """
    from pytest_legaleval.formats.paths import SYSTEM_TREES, is_within

    prefix = ""
    if dest == "dataset" and ":" in value:
        from pytest_legaleval.importers.cache import split_import_arg

        split = split_import_arg(value)
        if split is not None:
            prefix, value = f"{split[0]}:", split[1]
    root = os.path.realpath(folder)
    target = os.path.realpath(os.path.join(folder, value))
    if not is_within(target, root) or any(is_within(target, t) for t in SYSTEM_TREES):
        flag = _BY_DEST[dest].flag
        raise ConfigError(
            f"{config_file} (read automatically from the rootdir) sets {dest}: {value!r}, "
            f"which leads outside its folder {root}: a configuration that comes with a "
            f"project may only name paths inside it; pass {flag} on the command line, or "
            "name the file with --legaleval-config, to use it anyway"
        )
    return prefix + target


def resolve_settings(
    cli: Mapping[str, Any],
    *,
    ini: Mapping[str, Any] | None = None,
    config_file: Path | None = None,
    config_is_automatic: bool = False,
    no_cache: bool = False,
) -> Settings:
    """Resolve every option by precedence; raise ``ConfigError`` on bad values.

    Args:
        cli: command-line values by option ``dest`` (``None`` or ``[]`` when not given).
        ini: ``[tool.pytest.ini_options]`` values by ``dest`` (pytest only).
        config_file: the YAML configuration, if any (see :func:`find_config_file`).
        config_is_automatic: ``config_file`` was found at the rootdir, not named by the
            user: the paths it gives must lie inside its folder.
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
            value = _coerce(spec, yaml_values[yaml_key], str(config_file))
            if config_is_automatic and spec.dest in PATH_OPTIONS and value is not None:
                assert config_file is not None
                folder = config_file.parent
                value = (
                    tuple(
                        _confined_yaml_path(str(v), folder, spec.dest, config_file) for v in value
                    )
                    if spec.multiple
                    else _confined_yaml_path(str(value), folder, spec.dest, config_file)
                )
            values[spec.dest], sources[spec.dest] = value, "yaml"
        elif ini_value not in (None, "", []):
            values[spec.dest], sources[spec.dest] = _coerce(spec, ini_value, "ini"), "ini"
        else:
            values[spec.dest], sources[spec.dest] = spec.default, "default"
    if no_cache:
        values["cache"], sources["cache"] = None, "cli"
    run_id = values.get("run_id")
    if run_id is not None and (not _RUN_ID_RE.match(str(run_id)) or str(run_id).startswith(".")):
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
    if values["transport"] not in TRANSPORTS:
        raise ConfigError(f"--transport {values['transport']!r}: choose auto, wire or sdk")
    if values["judge_reasks"] < 0:
        raise ConfigError(f"--judge-reasks must be >= 0, got {values['judge_reasks']}")
    # --redact email,phone and --redact email --redact phone say the same.
    values["redact"] = tuple(
        kind.strip() for value in values["redact"] for kind in value.split(",") if kind.strip()
    )
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
