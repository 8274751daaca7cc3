"""How the options of a run get their values (no pytest here).

The options themselves (flags, defaults, conversions) are the fields of
:class:`~pytest_legaleval.pipeline.options.Settings`; this module resolves them. The pytest
layer (``pytest_legaleval.pytest.options``) and the ``legaleval serve`` command register the
same :data:`OPTIONS` under the same names.

Precedence: command line > ``--legaleval-config`` YAML (or ``legaleval.yaml`` at the
rootdir) > ``[tool.pytest.ini_options]`` keys (``legaleval_<name>``) > defaults.

Trust: a ``legaleval.yaml`` found at the rootdir and the ini keys come with the project
under test, not from the person running it. The automatic file may name paths only inside
its folder, and neither may point an API key anywhere but this machine
(``engine.routing.check_key_destinations``): ``--legaleval-config FILE``, the command line
and the environment may (SECURITY.md).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_legaleval.engine.routing import ProjectChoices, check_key_destinations
from pytest_legaleval.engine.types import TRANSPORTS
from pytest_legaleval.errors import ConfigError
from pytest_legaleval.pipeline.converters import Shard, parse_shard
from pytest_legaleval.pipeline.options import (
    EPOCH_REDUCERS,
    OPTIONS,
    PATH_OPTIONS,
    REDACT_KINDS,
    OptionSpec,
    Settings,
)

__all__ = [
    "EPOCH_REDUCERS",
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

_RUN_ID_RE = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
_BY_DEST = {spec.dest: spec for spec in OPTIONS}


def _read_yaml(path: Path) -> dict[str, Any]:
    from pytest_legaleval.util.safe_yaml import load_yaml

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
        # Only YAML gives null. A typed option with a default has no "unset" value to take;
        # letting None through would surface later as a TypeError mid-run.
        if spec.convert is not None and spec.default is not None:
            raise ConfigError(f"{spec.flag} ({origin}): expects a value, got null")
        return None
    if isinstance(value, list | tuple) and spec.dest == "retry_delays":
        value = ",".join(str(v) for v in value)
    if isinstance(value, list | tuple | Mapping):
        kind = "a mapping" if isinstance(value, Mapping) else "a list"
        raise ConfigError(f"{spec.flag} ({origin}): expects a single value, got {kind}")
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


def _confined_yaml_path(value: str, folder: Path, dest: str, config_file: Path) -> str:
    """A path from a ``legaleval.yaml`` read automatically: inside its folder, or refused.

    Such a file comes with the repository being tested, not from the person running the
    tests, so it may not point the run at files elsewhere (``/etc``, ``~/.ssh``, a FIFO) or
    write outside its project. Relative paths are taken from the file's folder.
    """
    from pytest_legaleval.util.paths import SYSTEM_TREES, is_within

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
    settings = Settings(
        config_file=str(config_file) if config_file else None, sources=sources, **values
    )
    automatic = config_file if config_is_automatic else None
    check_key_destinations(settings, _project_choices(sources, per_model, automatic))
    return settings


_KEY_ROUTING = ("base_url", "judge_base_url", "api_key_env")
"""The options that decide where an API key is sent, and which key."""


def _project_choices(
    sources: Mapping[str, str], per_model: Mapping[str, Any], automatic: Path | None
) -> ProjectChoices:
    """What the configuration that came with the project chose about keys (SECURITY.md).

    ``automatic``: the ``legaleval.yaml`` found at the rootdir, not named by the user.
    """
    return ProjectChoices(
        file=str(automatic) if automatic else "",
        file_options=frozenset(
            d for d in _KEY_ROUTING if automatic is not None and sources[d] == "yaml"
        ),
        ini_options=frozenset(d for d in _KEY_ROUTING if sources[d] == "ini"),
        models=per_model if automatic is not None else {},
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
