"""Reading an OpenAI chat completion body, and keeping the key out of what quotes it."""

from __future__ import annotations

import base64
import json
import urllib.parse

from pytest_legaleval.engine.retry import ProviderError
from pytest_legaleval.engine.sanitize import token_count
from pytest_legaleval.engine.types import RawCompletion
from pytest_legaleval.errors import InvalidValue

__all__ = ["DUMMY_KEY", "cached_tokens", "parse_completion", "scrub_key"]

DUMMY_KEY = "not-needed"
"""The key sent to servers that need none (the SDK insists on one); no secret to scrub."""


def _huge_int(text: str) -> int:
    digits = text.lstrip("-")
    if len(digits) <= 4000:
        return int(text)
    magnitude: int = 10 ** (len(digits) - 1)
    return -magnitude if text.startswith("-") else magnitude


def parse_completion(body: bytes) -> RawCompletion:
    """The completion in ``body``; ``ValueError`` when it is none (``invalid_response``).

    Token counts are checked by ``token_count`` (see ``engine.sanitize``); the text is
    repaired by the engine for every provider.
    """
    try:
        data = json.loads(body)
    except RecursionError:
        raise InvalidValue("response body is nested too deeply") from None
    except ValueError as exc:
        if "digits" not in str(exc):
            raise
        # An integer past Python's 4,300-digit conversion limit (a hostile usage count):
        # read it as its order of magnitude, so token_count drops it with a warning.
        data = json.loads(body, parse_int=_huge_int)
    if not isinstance(data, dict):
        raise InvalidValue("response body is not a JSON object")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise InvalidValue("response has no choices")
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, dict):
        raise InvalidValue("response choice has no message")
    finish_reason = choice.get("finish_reason")
    if finish_reason == "content_filter":
        raise ProviderError("content_filter", "response withheld by the content filter")
    content = message.get("content")
    if content is None:
        content = message.get("refusal") or ""
    if not isinstance(content, str):
        raise InvalidValue("response message content is not a string")
    usage = data.get("usage")
    warnings: list[str] = []
    input_tokens = output_tokens = cached = None
    if isinstance(usage, dict):
        input_tokens = token_count(usage.get("prompt_tokens"), "usage.prompt_tokens", warnings)
        output_tokens = token_count(
            usage.get("completion_tokens"), "usage.completion_tokens", warnings
        )
        cached = cached_tokens(usage, warnings)
    elif usage is not None:
        warnings.append(f"usage dropped: not an object ({type(usage).__name__})")
    return RawCompletion(
        text=content,
        finish_reason=finish_reason if isinstance(finish_reason, str) else None,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        warnings=tuple(warnings),
        cached_input_tokens=cached,
    )


def cached_tokens(usage: dict[str, object], warnings: list[str]) -> int | None:
    """Prompt tokens served from the provider's prompt cache, where the usage block says.

    OpenAI (and xAI, Gemini's and Anthropic's compatible endpoints) report
    ``prompt_tokens_details.cached_tokens``; DeepSeek ``prompt_cache_hit_tokens``; some
    proxies pass Anthropic's ``cache_read_input_tokens`` through. The first present wins.
    """
    details = usage.get("prompt_tokens_details")
    if isinstance(details, dict) and details.get("cached_tokens") is not None:
        return token_count(details["cached_tokens"], "usage.cached_tokens", warnings)
    for name in ("prompt_cache_hit_tokens", "cache_read_input_tokens", "cached_tokens"):
        if usage.get(name) is not None:
            return token_count(usage[name], f"usage.{name}", warnings)
    return None


def scrub_key(message: str, api_key: str) -> str:
    """``message`` without ``api_key`` as sent, URL-encoded or base64-encoded."""
    if not api_key or api_key == DUMMY_KEY:
        return message
    forms = {api_key, urllib.parse.quote(api_key, safe=""), urllib.parse.quote_plus(api_key)}
    encoded = api_key.encode()
    forms |= {base64.b64encode(encoded).decode(), base64.urlsafe_b64encode(encoded).decode()}
    for form in sorted(forms, key=len, reverse=True):
        message = message.replace(form, "***")
        stripped = form.rstrip("=")
        if stripped != form:
            message = message.replace(stripped, "***")
    return message
