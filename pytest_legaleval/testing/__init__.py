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

import importlib
from typing import TYPE_CHECKING, Any

from pytest_legaleval.errors import UnknownAttribute

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


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise UnknownAttribute(f"module {__name__!r} has no attribute {name!r}")
    if name == "strategies":
        value: Any = importlib.import_module(module)
    else:
        value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
