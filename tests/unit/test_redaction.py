"""Secrets are always redacted, PII on request; ordinary text survives."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_legaleval.run.redaction import Redactor, mark

OPENAI = "sk-" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6"
OPENAI_PROJECT = "sk-proj-" + "Zx9_Yw8-Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe"
ANTHROPIC = "sk-ant-api03-" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_abcd"
AWS = "AKIA" + "IOSFODNN7EXAMPLE"
GITHUB = "ghp_" + "0123456789abcdefABCDEF0123456789abcd"
GITHUB_PAT = "github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz"
JWT = "eyJhbGciOiJIUzI1NiJ9." + "eyJzdWIiOiIxMjM0NTY3ODkwIn0." + "dozjgNryP4J3jVmNHl0w5N"
IBAN = "DE89 3704 0044 0532 0130 00"
CARD = "4111 1111 1111 1111"


@pytest.mark.parametrize(
    ("text", "secret", "kind"),
    [
        (f"key {OPENAI} here", OPENAI, "openai_key"),
        (f"key={OPENAI_PROJECT}", OPENAI_PROJECT, None),
        (f"use {ANTHROPIC}.", ANTHROPIC, "anthropic_key"),
        (f"aws {AWS} id", AWS, "aws_access_key"),
        (f"token {GITHUB}", GITHUB, "github_token"),
        (f"pat {GITHUB_PAT}", GITHUB_PAT, "github_token"),
        (f"jwt {JWT}", JWT, "jwt"),
        ("Authorization: Bearer abc.DEF-123_456~xyz", "abc.DEF-123_456~xyz", "bearer_token"),
        ("api_key=hunter2hunter2", "hunter2hunter2", None),
        ('"password": "correct horse"', "correct", None),
        ("OPENAI_API_KEY: s3cr3t-value", "s3cr3t-value", None),
        ("client_secret = 'abc123'", "abc123", None),
    ],
)
def test_secret_shapes_are_always_redacted(text: str, secret: str, kind: str | None) -> None:
    out = Redactor().text(text)
    assert secret not in out
    assert "[REDACTED:" in out
    if kind:
        assert mark(kind) in out


def test_credential_assignments_keep_their_name() -> None:
    assert Redactor().text("api_key=abcdef123") == f"api_key={mark('secret')}"


def test_configured_key_values_are_redacted_literally_whatever_their_shape() -> None:
    env = {
        "OPENAI_API_KEY": "plain-looking-value-42",
        "MY_KEY": "another:key/with.dots",
        "SHORT": "x",
    }
    redactor = Redactor.for_settings((), ["OPENAI_API_KEY", "MY_KEY", "SHORT", "UNSET"], env)
    out = redactor.text("a plain-looking-value-42 b another:key/with.dots c x")
    assert "plain-looking-value-42" not in out and "another:key/with.dots" not in out
    assert out.count(mark("configured_key")) == 2
    assert out.endswith(" c x")  # values under 8 characters are not redacted literally


def test_secret_named_keys_lose_their_values_in_objects() -> None:
    obj = {
        "headers": {"Authorization": "Basic dXNlcjpwYXNz", "X-Api-Key": "k", "accept": "json"},
        "input_tokens": 12,
        "max_tokens": 100,
        "token_f1": 0.5,
        "nested": [{"api_key": "zzz"}, "Bearer abcdefgh12345678"],
    }
    out = Redactor()(obj)
    assert out["headers"] == {"Authorization": mark("secret"), "X-Api-Key": mark("secret"),
                              "accept": "json"}  # fmt: skip
    assert out["input_tokens"] == 12 and out["max_tokens"] == 100 and out["token_f1"] == 0.5
    assert out["nested"][0] == {"api_key": mark("secret")}
    assert "abcdefgh12345678" not in json.dumps(out)


@pytest.mark.parametrize(
    ("text", "pii", "kind"),
    [
        ("mail jane.doe+law@example.co.uk now", "jane.doe+law@example.co.uk", "email"),
        (f"pay to {IBAN} today", IBAN, "iban"),
        ("pay to GB82WEST12345698765432 today", "GB82WEST12345698765432", "iban"),
        (f"card {CARD}", CARD, "card_number"),
        ("ssn 123-45-6789.", "123-45-6789", "us_ssn"),
        ("NI number AB 12 34 56 C", "AB 12 34 56 C", "uk_nino"),
        ("call +41 44 668 18 00", "+41 44 668 18 00", "phone"),
        ("call (555) 123-4567", "(555) 123-4567", "phone"),
        ("call +14155552671", "+14155552671", "phone"),
    ],
)
def test_pii_is_redacted_only_on_request(text: str, pii: str, kind: str) -> None:
    assert pii in Redactor().text(text)
    out = Redactor(pii=["pii"]).text(text)
    assert pii not in out
    assert mark(kind) in out


def test_pii_kinds_can_be_chosen_one_by_one() -> None:
    redactor = Redactor(pii=["email"])
    out = redactor.text("a@b.org, 123-45-6789")
    assert mark("email") in out and "123-45-6789" in out
    with pytest.raises(ValueError, match="unknown PII kinds"):
        Redactor(pii=["shoe_size"])


def test_extra_patterns_extend_the_list() -> None:
    out = Redactor(extra_patterns={"case_number": r"\bCASE-\d{6}\b"}).text("see CASE-123456")
    assert out == f"see {mark('case_number')}"


@pytest.mark.parametrize(
    "text",
    [
        "Article 6 ECHR, decided 2019-03-15, see paragraphs 12-14 and 1999/2000.",
        "sha256 8593e26e27aaf11346062066d8dc73999285424797f5f040c0389d5f9ad31d51",
        "run_01J8Q4ER9Z7Y5V5K6F4A1P2M3N at 2026-01-15T10:05:12.123Z",
        "DE89 3704 0044 0532 0130 01 (bad IBAN checksum)",
        "4111 1111 1111 1112 (fails Luhn)",
        "The answer is B; max_tokens=1024 and total_tokens: 300; F1 0.75.",
        "Skipped tokens: none. The secret of good drafting is brevity.",
        "§ 823 BGB, 1 000 EUR, score 0.5",
    ],
)
def test_ordinary_legal_text_survives_even_with_pii_on(text: str) -> None:
    assert Redactor(pii=["pii"]).text(text) == text


def test_non_string_values_and_structure_are_kept() -> None:
    obj = {"a": [1, 2.5, None, True], "b": {"c": "text"}}
    assert Redactor(pii=["pii"])(obj) == obj


_FRAGMENTS = [
    "Answer: B",
    "sk-proj-abcdefghijklmnopqrstuvwx",
    "Bearer abcdefgh12345678",
    "mail jane.doe@example.org now",
    "+41 44 123 45 67",
    "DE89 3704 0044 0532 0130 00",
    "password=hunter22",
    "API-KEY : 'abcd1234efgh'",
    "token:",
    "input_tokens",
    "cache_key: 12ab",
    "SecretKey = zz99",
    "my_api-key:x1",
    "monkey=banana",
    "risk-based",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----",
    "§ 536 BGB",
    "\n",
    "",
]


@given(
    st.recursive(
        st.sampled_from(_FRAGMENTS) | st.integers() | st.none(),
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(st.sampled_from(["text", "api_key", "meta", "Authorization"]), inner)
        ),
        max_leaves=8,
    )
)
@settings(max_examples=150, deadline=None)
def test_the_fast_path_agrees_with_full_redaction(value: object) -> None:
    redactor = Redactor(pii=["email", "phone", "iban"], literals=["hunter22"])
    fast = redactor(value)
    assert json.dumps(fast) == json.dumps(redactor._redact(value))
    if fast is value:  # nothing to redact: the very same object, no copy
        assert not redactor.needed(value)


_KEYS = [
    "text", "api_key", "X-Api-Key", "TOKEN", "input_tokens", "meta", "Authorization", "pwd",
    "cache_key", "secret_key", "SecretKey", "client-secret", "my_apikey", "monkey",
]  # fmt: skip


@given(
    st.recursive(
        st.sampled_from(_FRAGMENTS) | st.text(max_size=30) | st.integers() | st.none(),
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(st.sampled_from(_KEYS) | st.text(max_size=8), inner)
        ),
        max_leaves=8,
    )
)
@settings(max_examples=300, deadline=None)
def test_a_line_cleared_by_its_json_text_needs_no_redaction(value: object) -> None:
    """``clean_json`` never clears a value that redaction would change (compact or not)."""
    redactor = Redactor(literals=["hunter22", 'quo"ted-secret-value'])
    for text in (
        json.dumps(value, ensure_ascii=False, separators=(",", ":")),
        json.dumps(value, ensure_ascii=False),
    ):
        if redactor.clean_json(text):
            assert not redactor.needed(value)
            assert json.dumps(redactor._redact(value), ensure_ascii=False) == json.dumps(
                value, ensure_ascii=False
            )


def test_clean_json_clears_ordinary_lines_and_not_secrets() -> None:
    redactor = Redactor(literals=["hunter22"])
    ordinary = {
        "record_id": "q1",
        "input_tokens": 12,
        "model_response": "Answer: B",
        "details": {"cache_key": "ad3c57a9", "monkey": 1},  # keys, not credentials
    }
    assert redactor.clean_json(json.dumps(ordinary))
    for secret in (
        {"api_key": "x"},
        {"X-Api-Key": "x"},
        {"text": "secret_key: abc123"},
        {"text": "the ApiKey=abc123"},
        {"text": "my password is hunter22"},
        {"text": "sk-proj-abcdefghijklmnopqrstuvwx"},
        {"text": 'say "hi"'},  # escaped: looked at closer, whatever it holds
    ):
        assert not redactor.clean_json(json.dumps(secret, ensure_ascii=False)), secret
    assert not Redactor(pii=["email"]).clean_json(json.dumps(ordinary))  # PII: always search


def test_a_key_is_redacted_as_is_url_encoded_and_base64_encoded() -> None:
    import base64
    from urllib.parse import quote

    from pytest_legaleval.run.redaction import Redactor

    key = "sk-live-Zq8+/=&Kp2Mx7Rt4Yu1"
    redactor = Redactor(literals=[key])
    texts = [
        key,
        quote(key, safe=""),
        base64.b64encode(key.encode()).decode(),
        "Basic " + base64.b64encode(b"user:" + key.encode()).decode(),
        base64.b64encode(b"xy" + key.encode() + b"tail").decode(),
    ]
    for text in texts:
        out = redactor.text(f"before {text} after")
        assert key not in out and "[REDACTED:configured_key]" in out, text


def test_url_user_info_and_secret_query_parameters_are_redacted() -> None:
    from pytest_legaleval.run.redaction import Redactor

    redactor = Redactor()
    assert redactor({"base_url": "http://user:pass@host:8000/v1"}) == {
        "base_url": "http://***@host:8000/v1"
    }
    out = redactor.text("GET https://api.example/v1?key=abc123xyz&model=m&sig=QWERTY")
    assert "abc123xyz" not in out and "QWERTY" not in out and "model=m" in out


def test_service_tokens_are_secrets_and_placeholders_are_not() -> None:
    from pytest_legaleval.run.redaction import Redactor

    env = {"OPENAI_API_KEY": "EMPTY", "LEGALEVAL_API_TOKENS": "tok-abcdefgh1234, short,"}
    redactor = Redactor.for_settings((), ["OPENAI_API_KEY"], env=env)
    redacted = redactor.text("the token tok-abcdefgh1234 here")
    assert redacted == "the token [REDACTED:configured_key] here"
    assert redactor.text("api key EMPTY; short") == "api key EMPTY; short"


def test_redact_chooses_pii_kinds_one_by_one() -> None:
    from pytest_legaleval.pipeline.settings import REDACT_KINDS, resolve_settings
    from pytest_legaleval.run.redaction import PII_KINDS, Redactor

    assert set(REDACT_KINDS) == {"pii", *PII_KINDS}
    settings = resolve_settings({"redact": ["email,phone"]})
    assert settings.redact == ("email", "phone")
    redactor = Redactor(pii=settings.redact)
    text = redactor.text("me@example.com, +41 44 123 45 67, 4111 1111 1111 1111")
    assert text == "[REDACTED:email], [REDACTED:phone], 4111 1111 1111 1111"
