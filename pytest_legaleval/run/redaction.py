"""Redaction before persistence: secrets always, personal data (PII) on request.

:class:`Redactor` rewrites every string of a JSON-like value. The run directory applies it
to everything it writes, so no artifact can bypass it.

Secrets: API keys of known shapes (OpenAI ``sk-…``/``sk-proj-…``, Anthropic ``sk-ant-…``,
AWS access key ids, GitHub tokens, JWTs, private-key blocks), ``Bearer`` tokens,
``api_key=…``-style assignments, values under secret-named keys (``authorization`` …), the
user and password of a URL (``http://***@host/v1``), credential-named URL query parameters
(``?key=…``, ``?subscription-key=…``, ``?code=…``, ``&sig=…``: ``engine.urls.redact_url``
decides), and the literal values of the configured key environment
variables and of ``LEGALEVAL_API_TOKENS`` — as they are, URL-encoded and base64-encoded
(placeholders such as ``EMPTY``, ``none`` or ``dummy`` are not secrets).

PII (``--redact pii``): e-mail addresses, phone numbers, IBANs (checksum verified), payment
card numbers (Luhn verified), US social security numbers and UK national insurance numbers.
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import quote

from pytest_legaleval.engine.urls import URL_PATTERN, redact_url, url_secrets
from pytest_legaleval.errors import InvalidValue

__all__ = [
    "PII_KINDS",
    "PLACEHOLDERS",
    "SECRET_KINDS",
    "TOKENS_ENV",
    "Redactor",
    "literal_forms",
    "mark",
]

TOKENS_ENV = "LEGALEVAL_API_TOKENS"
"""The service's bearer tokens (comma-separated): redacted from every output as well."""

PLACEHOLDERS = frozenset(
    {
        "empty", "none", "null", "dummy", "test", "testing", "placeholder", "changeme",
        "not-needed", "not_needed", "no-key", "nokey", "sk-no-key-required", "xxx", "local",
        "ollama", "lm-studio", "vllm", "secret", "password",
    }
)  # fmt: skip
"""Key values local servers are given in place of a key: nothing to hide (lower-cased)."""


def mark(kind: str) -> str:
    """The text that replaces a redacted value of ``kind``."""
    return f"[REDACTED:{kind}]"


SECRET_KINDS: dict[str, str] = {
    "private_key": r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----",
    "anthropic_key": r"\bsk-ant-[A-Za-z0-9_-]{16,}",
    "openai_key": r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{16,}",
    "aws_access_key": r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b",
    "github_token": r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})",
    "jwt": r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
    "bearer_token": r"(?<=\b(?i:bearer) )[A-Za-z0-9._~+/=-]{8,}",
    # Every URL goes through engine.urls.redact_url, the one place that knows which parts
    # of a URL are credentials (user info, ?subscription-key=, ?code=, &sig= …).
    "url": URL_PATTERN.pattern,
    "credential": (
        r"(?<![A-Za-z0-9])(?i:(?:[A-Za-z0-9]+[_-])*(?:api[_-]?key|secret(?:[_-]?key)?|"
        r"access[_-]?token|auth[_-]?token|token|password|passwd|pwd))"
        r"[\"']?\s*[:=]\s*[\"']?(?P<credential>[^\s\"',;&}]+)"
    ),
}
"""Secret shapes, redacted always (order matters: the first matching kind wins)."""

_IBAN_LENGTHS = range(15, 35)


def _iban_ok(text: str) -> bool:
    compact = text.replace(" ", "").upper()
    if len(compact) not in _IBAN_LENGTHS:
        return False
    rearranged = compact[4:] + compact[:4]
    digits = "".join(str(int(ch, 36)) for ch in rearranged)
    return int(digits) % 97 == 1


def _luhn_ok(text: str) -> bool:
    digits = [int(ch) for ch in text if ch.isdigit()]
    if not 13 <= len(digits) <= 19:
        return False
    total = 0
    for position, digit in enumerate(reversed(digits)):
        if position % 2:
            digit = digit * 2 - 9 if digit > 4 else digit * 2
        total += digit
    return total % 10 == 0


PII_KINDS: dict[str, str] = {
    "email": r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b",
    "iban": r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b",
    "card_number": r"\b\d(?:[ -]?\d){12,18}\b",
    "us_ssn": r"\b(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}\b",
    "uk_nino": r"\b[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z] ?\d{2} ?\d{2} ?\d{2} ?[A-D]\b",
    "phone": (
        r"(?<![\w+])(?:\+\d{1,3}[ .-]?)?(?:\(\d{1,4}\)[ .-]?)?\d{2,4}(?:[ .-]\d{2,4}){1,4}(?!\w)"
        r"|(?<![\w+])\+\d{8,14}(?!\w)"
    ),
}
"""PII shapes, redacted with ``--redact pii`` (IBANs and card numbers only when their check
digits hold, so ordinary numbers survive)."""

_CASED_TRIGGERS = (
    "sk-",
    "AKIA",
    "ASIA",
    "ABIA",
    "ACCA",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "eyJ",
)
"""Literals (case-sensitive, as in their patterns) one of which every secret shape contains."""
_CREDENTIAL_KEYWORDS = (
    "api_key", "api-key", "apikey", "secret_key", "secret-key", "secretkey", "secret",
    "token", "password", "passwd", "pwd",
)  # fmt: skip
"""Every credential keyword of ``SECRET_KINDS["credential"]`` ends in one of these.

Not plain ``key``: a key is a credential only as ``api key`` or ``secret key``, and every
result line has a ``"cache_key":`` (which sent each of them down the slow path).
"""

_CHECKS: dict[str, Callable[[str], bool]] = {"iban": _iban_ok, "card_number": _luhn_ok}

SECRET_KEYS = frozenset(
    {
        "api_key",
        "apikey",
        "authorization",
        "proxy_authorization",
        "x_api_key",
        "password",
        "secret",
        "client_secret",
        "access_token",
        "refresh_token",
        "token",
        "cookie",
        "set_cookie",
    }
)
"""Mapping keys whose whole value is a secret (compared lower-cased, ``-`` as ``_``)."""

MIN_LITERAL = 8
"""Environment values shorter than this are not redacted literally (they would match
ordinary words); real API keys are far longer."""


def _gates(words: Iterable[str], gates: Iterable[str]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``words`` grouped under the first of ``gates`` each contains (no gate: itself)."""
    groups: dict[str, list[str]] = {}
    for word in words:
        gate = next((g for g in gates if g in word), word)
        groups.setdefault(gate, []).append(word)
    return tuple((gate, tuple(group)) for gate, group in groups.items())


_CASED_GATES = _gates(_CASED_TRIGGERS, ("IA", "gh"))
"""The cased triggers by a part they share: one search for ``IA`` instead of three."""
_KEYWORD_GATES = _gates(_CREDENTIAL_KEYWORDS, ("api", "secret", "passw"))
"""The credential keywords by a part they share."""
_SECRET_KEY_NEEDLES = tuple(f'"{key}":' for key in sorted(SECRET_KEYS))
"""A secret-named key as it appears in JSON text (lower-cased, ``-`` as ``_``)."""


def _url_with_parts(text: str) -> bool:
    """Whether a URL in ``text`` has user info or a query parameter (``@`` or ``=``).

    The endpoint's own URL (quoted in transcripts and errors) sits beside prompts full of
    ``=``; only a URL holding one of them can carry a credential. A URL that runs on past
    the end of its string in the joined text only widens the test.
    """
    return any("@" in m.group(0) or "=" in m.group(0) for m in URL_PATTERN.finditer(text))


def _assigned(lowered: str, keyword: str) -> bool:
    """``keyword`` directly followed (an optional quote, white space) by ``:`` or ``=``."""
    start = lowered.find(keyword)
    end_of_text = len(lowered)
    while start != -1:
        end = start + len(keyword)
        if end < end_of_text and lowered[end] in "\"'":
            end += 1
        while end < end_of_text and lowered[end].isspace():
            end += 1
        if end < end_of_text and lowered[end] in ":=":
            return True
        start = lowered.find(keyword, start + 1)
    return False


_CACHED_LENGTH = 64
_CACHE_SIZE = 4096


def _phone_ok(text: str) -> bool:
    digits = sum(ch.isdigit() for ch in text)
    return 9 <= digits <= 15


_CHECKS["phone"] = _phone_ok


def literal_forms(value: str) -> set[str]:
    """``value`` as it may appear in an output: as is, URL-encoded, and base64-encoded.

    Base64 is taken at the three byte alignments a value can have inside a longer encoded
    text (``Basic`` credentials, a data URL), without the characters its neighbours share.
    """
    forms = {value, quote(value, safe=""), quote(value)}
    raw = value.encode("utf-8")
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + raw).decode("ascii").rstrip("=")
        start = (offset * 8 + 5) // 6  # the first character made of the value's bits only
        end = len(encoded) - (1 if (offset + len(raw)) % 3 else 0)
        part = encoded[start:end]
        if len(part) >= MIN_LITERAL:
            forms.add(part)
    return {form for form in forms if len(form) >= MIN_LITERAL}


class Redactor:
    """Rewrites strings of JSON-like values; one compiled pattern per run."""

    def __init__(
        self,
        *,
        pii: Iterable[str] = (),
        literals: Iterable[str] = (),
        extra_patterns: Mapping[str, str] | None = None,
    ) -> None:
        """Build the combined pattern.

        Args:
            pii: PII kinds to redact (keys of ``PII_KINDS``; ``"pii"`` means all of them).
            literals: exact secret values (e.g. API keys read from the environment).
            extra_patterns: more ``kind -> regex`` to redact (configurable list).

        """
        kinds = list(pii)
        if "pii" in kinds:
            kinds = list(PII_KINDS)
        unknown = set(kinds) - set(PII_KINDS)
        if unknown:
            raise InvalidValue(f"unknown PII kinds {sorted(unknown)}; known: {sorted(PII_KINDS)}")
        self.pii = tuple(kinds)
        patterns: dict[str, str] = {}
        forms = {
            form
            for value in literals
            if len(value) >= MIN_LITERAL and value.strip().lower() not in PLACEHOLDERS
            for form in literal_forms(value)
        }
        values = sorted(forms, key=len, reverse=True)
        if values:
            patterns["configured_key"] = "|".join(re.escape(v) for v in values)
        patterns.update(SECRET_KINDS)
        patterns.update({kind: PII_KINDS[kind] for kind in self.pii})
        patterns.update(extra_patterns or {})
        self._kinds = list(patterns)
        self._url = self._kinds.index("url")
        self._literals = tuple(values)
        self._literal_values = tuple(literals)
        # Only the built-in secret shapes have literal triggers; PII and extra patterns
        # are always searched in full.
        self._always_search = bool(self.pii or extra_patterns)
        self._cache: dict[str, str] = {}
        self._pattern = re.compile(
            "|".join(f"(?P<k{i}>{p})" for i, p in enumerate(patterns.values()))
        )
        self._inner = re.compile(
            "|".join(f"(?P<k{i}>{p})" for i, p in enumerate(patterns.values()) if i != self._url)
        )

    @classmethod
    def for_settings(
        cls,
        redact: Iterable[str],
        key_env_vars: Iterable[str],
        env: Mapping[str, str] | None = None,
        urls: Iterable[str | None] = (),
    ) -> Redactor:
        """The redactor of a run: ``--redact`` kinds and the values of its key variables.

        ``urls`` are the run's endpoint URLs: the credentials they carry (a password, a
        ``?subscription-key=`` value) are configured secrets too, so they are redacted also
        where a server quotes them without the URL (an error echoing the request line).
        """
        environ = os.environ if env is None else env
        literals = [environ[name] for name in key_env_vars if environ.get(name)]
        literals += [t.strip() for t in environ.get(TOKENS_ENV, "").split(",") if t.strip()]
        literals += [secret for url in urls if url for secret in url_secrets(url)]
        return cls(pii=redact, literals=literals)

    def _replace(self, match: re.Match[str]) -> str:
        group = match.lastgroup
        assert group is not None
        kind = self._kinds[int(group[1:])]
        text = match.group(group)
        check = _CHECKS.get(kind)
        if check is not None and not check(text):
            return text
        if kind == "credential":
            value = match.group("credential")
            start = match.start("credential") - match.start()
            return text[:start] + mark("secret") + text[start + len(value) :]
        if kind == "url":
            # The URL's own credentials first, then any other secret shape inside it.
            return self._inner.sub(self._replace, redact_url(text, self._literal_values))
        return mark(kind)

    def text(self, value: str) -> str:
        """``value`` with every match replaced by ``[REDACTED:<kind>]``."""
        if len(value) > _CACHED_LENGTH:
            return self._pattern.sub(self._replace, value)
        # Short strings (keys, labels, reasons, model names) repeat on every line.
        done = self._cache.get(value)
        if done is None:
            if len(self._cache) >= _CACHE_SIZE:
                self._cache.clear()
            done = self._cache[value] = self._pattern.sub(self._replace, value)
        return done

    def _strings(self, obj: Any, out: list[str]) -> bool:
        """Collect every string of ``obj`` into ``out``; ``True`` at a secret-named key."""
        if isinstance(obj, str):
            out.append(obj)
        elif isinstance(obj, Mapping):
            for key, value in obj.items():
                name = str(key)
                if name.lower().replace("-", "_") in SECRET_KEYS and value not in (None, ""):
                    return True
                out.append(name)
                if self._strings(value, out):
                    return True
        elif isinstance(obj, list | tuple):
            for value in obj:
                if self._strings(value, out):
                    return True
        return False

    def needed(self, obj: Any) -> bool:
        """Whether redacting ``obj`` would change anything (one regex scan, no copy).

        Most lines hold nothing to redact; scanning all their strings joined at once is
        several times cheaper than rebuilding the value string by string. After a hit in
        the joined text each string is redacted on its own (short ones from the cache) and
        compared: a URL without credentials (the endpoint's, quoted in a transcript beside
        a prompt holding ``=``) or an IBAN whose checksum fails changes nothing, so it no
        longer sends the whole line down the copying path.
        """
        strings: list[str] = []
        if self._strings(obj, strings):
            return True
        joined = "\x00".join(strings)
        if not self._always_search and not self._may_match(joined):
            return False
        if self._pattern.search(joined) is None:
            return False
        return any(self.text(value) != value for value in strings)

    def clean_json(self, text: str) -> bool:
        """Whether ``text``, a value serialized as JSON, certainly holds nothing to redact.

        A test on the serialized text, cheaper than walking the value: without a backslash
        in ``text`` no string of the value contained a character JSON escapes, so each one
        appears in ``text`` as is and the literal checks of :meth:`_may_match` see all of
        them; a secret-named key appears as ``"name":``. ``False`` means "look closer"
        (:meth:`needed`), never "redact".
        """
        if self._always_search or "\\" in text:
            return False
        if '":' in text:
            lowered = text.lower().replace("-", "_")
            if any(needle in lowered for needle in _SECRET_KEY_NEEDLES):
                return False
        return not self._may_match(text)

    def _may_match(self, text: str) -> bool:
        """A cheap superset test of the built-in secret patterns (substring checks only).

        Every secret shape needs a literal the text must contain — ``sk-``, ``AKIA``…,
        ``gh?_``, ``eyJ``, ``bearer ``, ``-----begin`` — and a credential assignment needs a
        keyword directly followed by ``:`` or ``=``. A regex search with word-boundary
        anchors costs far more per kilobyte than these substring checks, and a search of an
        alternation of literals more than a few of them: so literals that share a part are
        looked for by that part first (``IA`` for ``AKIA``, ``ASIA`` and ``ABIA``).
        """
        if any(literal in text for literal in self._literals):
            return True
        if any(gate in text and any(t in text for t in group) for gate, group in _CASED_GATES):
            return True
        lowered = text.casefold()  # at least every case-insensitive regex match
        if "bearer " in lowered or "-----begin" in lowered:
            return True
        if "://" in text and ("@" in text or "=" in text) and _url_with_parts(text):
            return True  # URL user info, or a query parameter
        for gate, keywords in _KEYWORD_GATES:
            if gate not in lowered:
                continue
            for keyword in keywords:
                if _assigned(lowered, keyword):
                    return True
        return False

    def __call__(self, obj: Any) -> Any:
        """A redacted copy of a JSON-like value (objects, arrays, strings, scalars).

        Returns ``obj`` itself when nothing in it needs redacting.
        """
        if not self.needed(obj):
            return obj
        return self._redact(obj)

    def _redact(self, obj: Any) -> Any:
        if isinstance(obj, str):
            return self.text(obj)
        if isinstance(obj, Mapping):
            out: dict[str, Any] = {}
            for key, value in obj.items():
                name = str(key)
                if name.lower().replace("-", "_") in SECRET_KEYS and value not in (None, ""):
                    out[self.text(name)] = mark("secret")
                else:
                    out[self.text(name)] = self._redact(value)
            return out
        if isinstance(obj, list | tuple):
            return [self._redact(value) for value in obj]
        return obj
