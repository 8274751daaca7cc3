"""A real HTTP server on 127.0.0.1 that speaks the OpenAI Chat Completions API.

The server exists so that the evaluation engine, the benchmarks and users' own suites can talk to
an "OpenAI-compatible endpoint" through the real ``openai`` SDK (or any HTTP client) without a
network, a key or a model, while scripting exactly what the endpoint answers and which faults it
injects.

Quick start::

    from pytest_legaleval.testing.mock_openai import MockOpenAIServer

    with MockOpenAIServer(latency=0.05) as server:
        server.add_reply(r"capital of France", "Paris")
        server.add_fault("500", match="record-7", times=2)  # record-7 fails twice, then succeeds
        client = openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0)
        ...
        assert server.count_for("record-7") == 3

Standalone (a parent process reads the ``MOCK_OPENAI_URL=...`` line from stdout)::

    python -m pytest_legaleval.testing.mock_openai --port 0 --latency 0.1 --fault 429=0.05
    python -m pytest_legaleval.testing.mock_openai --port 0 --hostile lone_surrogate=record-3

Endpoints:

* ``POST /v1/chat/completions`` -- non-streaming ``chat.completion`` objects.
* ``GET /v1/models`` and ``GET /v1/models/{id}`` -- the configured model names.
* ``POST /v1/files``, ``GET /v1/files/{id}/content``, ``POST /v1/batches``,
  ``GET /v1/batches/{id}``, ``POST /v1/batches/{id}/cancel`` -- the Batch API
  (:mod:`.batches`; its knobs: :meth:`MockOpenAIServer.batch_knobs`).
* ``GET /stats`` -- the counters of :meth:`MockOpenAIServer.stats` as JSON.
* ``POST /reset`` -- :meth:`MockOpenAIServer.reset`.

The ``/v1`` prefix is optional, so a client whose base URL is the server root works as well.

How a chat completion request is answered, in order:

1. The request is validated like OpenAI does (JSON object, ``model`` string, non-empty
   ``messages`` list, no ``stream``); a bad request gets a 400 in OpenAI's error format.
2. Fault rules (:class:`FaultRule`) are tried in order; the first one that fires decides the
   outcome (an error status, a hang, a connection reset, a malformed body, or a 200 whose
   ``finish_reason`` is ``content_filter`` or ``length``).
3. Otherwise reply rules (:class:`ReplyRule`) are tried in order; the first that matches gives the
   reply (text, or a dict with ``content``, ``finish_reason``, ``usage``, ``status``, ``delay``,
   ``headers``).
4. Otherwise the deterministic default reply, see :func:`default_reply`.

Token usage is deterministic: a text of ``n`` characters counts as ``ceil(n / 4)`` tokens; the
prompt's tokens are those of all message contents joined by newlines (at least 1). A scripted
``usage`` overrides either number. When ``max_completion_tokens`` (or ``max_tokens``) is smaller
than the reply's tokens the reply is cut to ``4 * limit`` characters with ``finish_reason``
``"length"``, as OpenAI does (switch off with ``MockConfig.honor_max_tokens``).

Hostile mode (:class:`HostileOpenAIServer`, ``--hostile KIND[=REGEX]``): the same logic
behind a byte-level server that can also send what no HTTP library would — invalid JSON,
lone surrogate escapes, a lying ``Content-Length``, a cut body, the request's secrets echoed
back (see :mod:`.hostile`). ``python -m ... --port BUSY`` is one error line and exit 2.

Layout: ``rules`` (prompt helpers, reply rules), ``faults``, ``hostile`` (hostile rules and
their bytes), ``config``, ``core`` (the request logic, independent of HTTP), ``outcome``
(OpenAI's response and error shapes, request validation), ``handle``
(configuration and observation methods), ``server`` (lifecycle, HTTP on ``aiohttp``'s
low-level server, a core dependency through ``openai[aiohttp]``), ``hostile_server`` and
``cli``.
"""

from __future__ import annotations

from pytest_legaleval.testing.mock_openai.batches import BatchKnobs
from pytest_legaleval.testing.mock_openai.cli import main
from pytest_legaleval.testing.mock_openai.config import Latency, MockConfig
from pytest_legaleval.testing.mock_openai.faults import FAULT_KINDS, FaultKind, FaultRule
from pytest_legaleval.testing.mock_openai.hostile import (
    HOSTILE_KINDS,
    HostileKind,
    HostileRule,
    render_hostile,
)
from pytest_legaleval.testing.mock_openai.hostile_server import HostileOpenAIServer
from pytest_legaleval.testing.mock_openai.rules import (
    ReplyFunction,
    ReplyRule,
    ReplyValue,
    count_tokens,
    default_reply,
    prompt_hash,
    prompt_text,
)
from pytest_legaleval.testing.mock_openai.server import MockOpenAIServer

__all__ = [
    "FAULT_KINDS",
    "HOSTILE_KINDS",
    "BatchKnobs",
    "FaultKind",
    "FaultRule",
    "HostileKind",
    "HostileOpenAIServer",
    "HostileRule",
    "Latency",
    "MockConfig",
    "MockOpenAIServer",
    "ReplyFunction",
    "ReplyRule",
    "ReplyValue",
    "count_tokens",
    "default_reply",
    "main",
    "prompt_hash",
    "prompt_text",
    "render_hostile",
]
