"""Schema loading and the mapping of schema failures to the contract's error codes.

The JSON Schemas in ``schemas/`` are the single source of truth. They are compiled once
with ``jsonschema_rs`` (Draft 2020-12, formats asserted): ``is_valid`` is the fast path for
the common case of a valid record, and only failing values are walked with ``iter_errors``
to build :class:`~pytest_legaleval.validation.checks.Issue` objects.
"""

from __future__ import annotations

import copy
import functools
import json
import math
from collections.abc import Iterator
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

import jsonschema_rs

from pytest_legaleval.errors import InvalidValue, UnknownName
from pytest_legaleval.validation.checks import NON_FINITE, Issue, PathParts, json_type, show

__all__ = ["load_schema", "schema_issues", "schema_names", "schema_validator"]

_SUFFIX = ".schema.json"


@functools.cache
def _schema_dir() -> Traversable:
    packaged = files("pytest_legaleval") / "schemas"
    if packaged.is_dir():
        return packaged
    # Editable or source checkout: the wheel's force-include has not run, so read the
    # repository's top-level schemas/ that sits next to the package directory.
    return Path(__file__).resolve().parents[2] / "schemas"


@functools.cache
def _raw_schema(name: str) -> dict[str, Any]:
    resource = _schema_dir() / f"{name}{_SUFFIX}"
    if not resource.is_file():
        known = ", ".join(schema_names())
        raise UnknownName(f"no schema named {name!r}; known schemas: {known}")
    loaded = json.loads(resource.read_text(encoding="utf-8"))
    if not isinstance(loaded, dict):
        raise InvalidValue(f"schema {name!r} is not a JSON object")
    return loaded


def schema_names() -> list[str]:
    """List the stems of every shipped schema (``legal_eval_v1``, ``record_error`` …), sorted."""
    return sorted(
        entry.name[: -len(_SUFFIX)]
        for entry in _schema_dir().iterdir()
        if entry.name.endswith(_SUFFIX)
    )


def load_schema(name: str) -> dict[str, Any]:
    """Load ``schemas/<name>.schema.json`` as a dict (a fresh copy; parsing is cached).

    Args:
        name: the file stem, e.g. ``"legal_eval_v1"``.

    Raises:
        KeyError: there is no schema of that name.

    """
    return copy.deepcopy(_raw_schema(name))


def _no_remote(uri: str) -> dict[str, Any]:
    raise InvalidValue(
        f"refusing to fetch remote schema {uri}: every $ref must be a shipped schema"
    )


@functools.cache
def _registry() -> jsonschema_rs.Registry:
    resources = [(_raw_schema(n)["$id"], _raw_schema(n)) for n in schema_names()]
    return jsonschema_rs.Registry(resources)


@functools.cache
def schema_validator(name: str) -> Any:
    """Compile (once) a ``jsonschema_rs`` Draft 2020-12 validator for a shipped schema.

    ``$ref`` between shipped schemas resolves through a registry of all of them; formats
    (``date-time``, ``uuid``) are asserted, not just annotated.
    """
    return jsonschema_rs.Draft202012Validator(
        _raw_schema(name),
        validate_formats=True,
        registry=_registry(),
        retriever=_no_remote,
    )


def _lookup(root: object, parts: PathParts) -> object:
    # Read the offending value from the caller's own object: jsonschema_rs hands back a
    # converted copy in which, for example, infinities have become null.
    value = root
    for part in parts:
        if isinstance(value, dict) and isinstance(part, str):
            value = value.get(part)
        elif isinstance(value, list) and isinstance(part, int) and 0 <= part < len(value):
            value = value[part]
        else:
            return None
    return value


def _types_phrase(types: list[str]) -> str:
    articles = {"array": "an", "integer": "an", "object": "an"}
    words = [f"{articles.get(t, 'a')} {t}" for t in types]
    return " or ".join(words)


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _issues_for(error: Any, root: object, forbidden: str) -> Iterator[Issue]:
    kind = error.kind
    keyword = kind.name
    parts: PathParts = tuple(error.instance_path)
    value = _lookup(root, parts)
    size = len(value) if isinstance(value, str | list | dict) else 0
    if keyword == "required":
        yield Issue("missing_required_field", (*parts, kind.property), "is required")
    elif (
        keyword == "type"
        and isinstance(value, float)
        and not math.isfinite(value)
        and {"number", "integer"} & set(kind.types)
    ):
        # 1e400 parses as inf: a number JSON can write but no double holds, so a range
        # problem rather than a type problem (scan_values reports the same issue).
        yield Issue("value_out_of_range", parts, NON_FINITE)
    elif keyword == "type":
        yield Issue(
            "invalid_field_type",
            parts,
            f"must be {_types_phrase(list(kind.types))}, got {json_type(value)}",
        )
    elif keyword == "enum":
        options = ", ".join(show(option) for option in kind.options)
        yield Issue("invalid_enum_value", parts, f"must be one of {options}, got {show(value)}")
    elif keyword == "const":
        yield Issue(
            "invalid_enum_value", parts, f"must be {show(kind.expected_value)}, got {show(value)}"
        )
    elif keyword == "minItems":
        yield Issue(
            "value_out_of_range",
            parts,
            f"must have at least {_plural(kind.limit, 'item')}, got {size}",
        )
    elif keyword == "maxItems":
        yield Issue(
            "value_out_of_range",
            parts,
            f"must have at most {_plural(kind.limit, 'item')}, got {size}",
        )
    elif keyword == "minLength":
        text = (
            "must not be empty"
            if kind.limit == 1
            else f"must be at least {_plural(kind.limit, 'character')} long, got {size}"
        )
        yield Issue("value_out_of_range", parts, text)
    elif keyword == "maxLength":
        yield Issue(
            "string_too_long",
            parts,
            f"is too long: {_plural(size, 'character')}, at most {kind.limit} allowed",
        )
    elif keyword in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        bound = {
            "minimum": "at least",
            "exclusiveMinimum": "greater than",
            "maximum": "at most",
            "exclusiveMaximum": "less than",
        }[keyword]
        yield Issue("value_out_of_range", parts, f"must be {bound} {kind.limit}, got {show(value)}")
    elif keyword in ("falseSchema", "not"):
        yield Issue("unsupported_field", parts, forbidden)
    elif keyword == "additionalProperties":
        for name in kind.unexpected:
            yield Issue("unsupported_field", (*parts, name), "is not an allowed field")
    elif keyword == "uniqueItems":
        yield Issue("value_out_of_range", parts, "must not contain duplicate items")
    elif keyword == "pattern":
        yield Issue(
            "value_out_of_range", parts, f"must match the pattern {kind.pattern}, got {show(value)}"
        )
    elif keyword == "format":
        yield Issue(
            "value_out_of_range", parts, f"must be a valid {kind.format}, got {show(value)}"
        )
    elif keyword in ("minProperties", "maxProperties"):
        yield Issue("value_out_of_range", parts, f"has the wrong number of fields ({size})")
    else:
        # Keywords our schemas do not use yet: still an error, with the engine's own words.
        message = error.message.encode("utf-8", "backslashreplace").decode("utf-8")
        yield Issue("invalid_field_type", parts, f"is invalid: {message}")


def _without_surrogates(value: object) -> object:
    # jsonschema_rs cannot take strings holding lone surrogates; the encoding check reports
    # them, and the schema still sees the rest of the value (a surrogate becomes U+FFFD, so
    # every length stays the same).
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    if isinstance(value, dict):
        return {str(_without_surrogates(k)): _without_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_surrogates(item) for item in value]
    return value


def schema_issues(
    name: str, instance: object, *, forbidden: str = "is not allowed here"
) -> list[Issue]:
    """Validate ``instance`` against schema ``name`` and return every failure as an issue.

    Args:
        name: the schema stem.
        instance: the value to validate.
        forbidden: the text for a field the schema forbids (``false`` subschema).

    Returns:
        An empty list when the instance is valid.

    """
    validator = schema_validator(name)
    try:
        if validator.is_valid(instance):
            return []
        errors = list(validator.iter_errors(instance))
    except (ValueError, TypeError, OverflowError, RecursionError):
        try:
            errors = list(validator.iter_errors(_without_surrogates(instance)))
        except (ValueError, TypeError, OverflowError, RecursionError) as exc:
            reason = str(exc).encode("utf-8", "backslashreplace").decode("utf-8")
            return [Issue("invalid_field_type", (), f"could not be validated: {reason}")]
    return [issue for error in errors for issue in _issues_for(error, instance, forbidden)]
