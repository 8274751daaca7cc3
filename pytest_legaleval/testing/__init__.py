"""Testing tools shipped with the plugin, for this project's tests and for users' own.

:mod:`.mock_openai`: a real OpenAI-compatible HTTP server on 127.0.0.1 with scripted
replies, fault injection and a byte-level hostile mode; :mod:`.fixtures`: its pytest
fixtures (``mock_openai``, ``hostile_openai``); :mod:`.strategies` and
:mod:`._reply_strategies`: hypothesis strategies for records, documents and hostile replies.

May import pytest and hypothesis; the rest of the package never imports this one.

The public face (README "Python API"): the names below, each loaded on first use (the
servers need aiohttp, the strategies hypothesis); everything else is internal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_legaleval.util.lazy import face_dir, lazy_getattr

if TYPE_CHECKING:  # pragma: no cover - names for type checkers; loaded lazily at run time
    from pytest_legaleval.testing.mock_openai import (
        FaultRule,
        HostileOpenAIServer,
        HostileRule,
        MockConfig,
        MockOpenAIServer,
        ReplyRule,
    )

_LAZY = {
    "FaultRule": "pytest_legaleval.testing.mock_openai",
    "HostileOpenAIServer": "pytest_legaleval.testing.mock_openai",
    "HostileRule": "pytest_legaleval.testing.mock_openai",
    "MockConfig": "pytest_legaleval.testing.mock_openai",
    "MockOpenAIServer": "pytest_legaleval.testing.mock_openai",
    "ReplyRule": "pytest_legaleval.testing.mock_openai",
    "strategies": "pytest_legaleval.testing.strategies",
}

__all__ = [
    "FaultRule",
    "HostileOpenAIServer",
    "HostileRule",
    "MockConfig",
    "MockOpenAIServer",
    "ReplyRule",
    "strategies",
]


__getattr__ = lazy_getattr(__name__, _LAZY, globals(), modules=frozenset({"strategies"}))
__dir__ = face_dir(globals())
