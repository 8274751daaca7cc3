"""Replies are data: repaired text, checked token counts, scrubbed messages."""

from __future__ import annotations

import base64
import json
import math
import urllib.parse
from typing import Any

import pytest

from pytest_legaleval.engine import RawCompletion, classify_error, parse_retry_after
from pytest_legaleval.engine.openai_reply import parse_completion, scrub_key
from pytest_legaleval.engine.sanitize import (
    MAX_TOKEN_COUNT,
    checked_completion,
    clean_text,
    token_count,
)


@pytest.mark.parametrize(
    ("value", "expected", "warned"),
    [
        (None, None, False),
        (0, 0, False),
        (123, 123, False),
        (12.0, 12, False),
        (MAX_TOKEN_COUNT, MAX_TOKEN_COUNT, False),
        (-5, None, True),
        (10**30, None, True),
        (MAX_TOKEN_COUNT + 1, None, True),
        (2.5, None, True),
        (math.nan, None, True),
        (math.inf, None, True),
        (True, None, True),
        ("12", None, True),
        ([1], None, True),
        ({"n": 1}, None, True),
    ],
)
def test_token_count(value: object, expected: int | None, warned: bool) -> None:
    warnings: list[str] = []
    assert token_count(value, "usage.prompt_tokens", warnings) == expected
    assert bool(warnings) is warned
    assert all(w.startswith("usage.prompt_tokens dropped: ") for w in warnings)


def test_a_warning_never_quotes_a_string_value() -> None:
    warnings: list[str] = []
    token_count("sk-secret-value", "usage.prompt_tokens", warnings)
    assert warnings == ["usage.prompt_tokens dropped: not a number (str)"]


def test_clean_text_replaces_lone_surrogates_only() -> None:
    assert clean_text("Answer: A \ud83d") == ("Answer: A \ufffd", 1)
    assert clean_text("\udfff x \ud800") == ("\ufffd x \ufffd", 2)
    assert clean_text("emoji \U0001f600 ok") == ("emoji \U0001f600 ok", 0)
    assert clean_text("NUL \x00 stays") == ("NUL \x00 stays", 0)


def test_checked_completion_repairs_and_warns() -> None:
    raw = RawCompletion("A \ud83d", "st\udc00op", input_tokens=-1, output_tokens=10**30)
    checked = checked_completion(raw)
    assert checked.text == "A \ufffd" and checked.finish_reason == "st\ufffdop"
    assert (checked.input_tokens, checked.output_tokens) == (None, None)
    assert len(checked.warnings) == 3
    checked.text.encode("utf-8")  # writable everywhere now


def test_checked_completion_keeps_a_clean_reply_as_it_is() -> None:
    raw = RawCompletion("Answer: B", "stop", 12, 3)
    assert checked_completion(raw) is raw


def test_checked_completion_refuses_a_non_text_reply() -> None:
    with pytest.raises(ValueError, match="not a string"):
        checked_completion(RawCompletion(42, "stop"))  # type: ignore[arg-type]


def body(**fields: Any) -> bytes:
    base: dict[str, Any] = {
        "choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1},
    }
    base.update(fields)
    return json.dumps(base).encode()


@pytest.mark.parametrize(
    ("usage", "tokens", "warnings"),
    [
        ({"prompt_tokens": 3, "completion_tokens": 1}, (3, 1), 0),
        ({"prompt_tokens": -3, "completion_tokens": 1}, (None, 1), 1),
        ({"prompt_tokens": 1e30, "completion_tokens": 10**30}, (None, None), 2),
        ({"prompt_tokens": math.nan, "completion_tokens": "7"}, (None, None), 2),
        ("lots", (None, None), 1),
        (None, (None, None), 0),
        ({}, (None, None), 0),
    ],
)
def test_usage_is_checked_when_parsed(
    usage: object, tokens: tuple[int | None, int | None], warnings: int
) -> None:
    parsed = parse_completion(body(usage=usage))
    assert (parsed.input_tokens, parsed.output_tokens) == tokens
    assert len(parsed.warnings) == warnings


@pytest.mark.parametrize(
    "payload",
    [
        b"not json",
        b"\xff\xfe",
        b"[" * 100_000 + b"]" * 100_000,
        b"1" * 5000,
        body(choices=[]),
        json.dumps({"usage": {}}).encode(),
        body(choices={"0": {}}),
        body(choices=[{"message": {"content": 42}}]),
        body(choices=[{"message": "hi"}]),
        b"[]",
    ],
)
def test_unusable_bodies_are_permanent_invalid_responses(payload: bytes) -> None:
    with pytest.raises((ValueError, RecursionError)) as info:
        parse_completion(payload)
    found = classify_error(info.value)
    assert (found.code, found.transient) == ("invalid_response", False)


def test_scrub_key_removes_raw_url_and_base64_forms() -> None:
    key = "sk-live/abc+def=123456"
    forms = [
        key,
        urllib.parse.quote(key, safe=""),
        base64.b64encode(key.encode()).decode(),
        base64.urlsafe_b64encode(key.encode()).decode().rstrip("="),
    ]
    scrubbed = scrub_key(" | ".join(forms), key)
    assert all(form not in scrubbed for form in forms)
    assert scrub_key("nothing here", key) == "nothing here"


def test_a_secret_is_scrubbed_before_a_long_message_is_cut() -> None:
    key = "sk-" + "k" * 40
    message = "x" * 280 + key  # the cut at 300 characters would leave half the key
    found = classify_error(ValueError(message), scrub=lambda text: scrub_key(text, key))
    assert "kkkkk" not in found.message


def test_error_messages_are_writable_text() -> None:
    found = classify_error(ValueError("bad \ud83d body \x00 here"))
    found.message.encode("utf-8")
    assert "\x00" not in found.message


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "nan"}, None),
        ({"retry-after-ms": "nan", "retry-after": "2"}, 2.0),
        ({"retry-after": "inf"}, math.inf),
        ({"retry-after": "-3"}, 0.0),
    ],
)
def test_retry_after_refuses_nan(headers: dict[str, str], expected: float | None) -> None:
    assert parse_retry_after(headers) == expected
