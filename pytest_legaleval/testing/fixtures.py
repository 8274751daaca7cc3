"""pytest fixtures that serve a mock OpenAI endpoint (see :mod:`.mock_openai`) to a test.

Example::

    def test_retries(mock_openai):
        mock_openai.add_fault("500", match="record-7", times=2)
        client = openai.OpenAI(base_url=mock_openai.base_url, api_key="x", max_retries=0)
        ...

    def test_no_reply_stops_a_run(hostile_openai):
        hostile_openai.add_hostile("lone_surrogate", match="record-3")

    def test_two_endpoints(mock_openai_factory):
        fast = mock_openai_factory()
        slow = mock_openai_factory(latency=0.2, models=["slow-model"])
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    # The server is imported when a test asks for it: this module is loaded as a plugin
    # by every pytest process, which need not import the server (aiohttp) for nothing.
    from pytest_legaleval.testing.mock_openai import (
        HostileOpenAIServer,
        MockConfig,
        MockOpenAIServer,
    )

__all__ = ["MockOpenAIFactory", "hostile_openai", "mock_openai", "mock_openai_factory"]

MockOpenAIFactory = Callable[..., "MockOpenAIServer"]
"""``factory(config: MockConfig | None = None, **config_fields) -> MockOpenAIServer``."""


@pytest.fixture
def mock_openai() -> Iterator[MockOpenAIServer]:
    """Serve a started mock OpenAI endpoint with the default config for one test.

    Configure it in the test through the handle (``add_reply``, ``add_fault``,
    ``set_latency``...). It is stopped after the test.

    Yields:
        The running server; ``mock_openai.base_url`` is the client's base URL.

    """
    from pytest_legaleval.testing.mock_openai import MockOpenAIServer

    with MockOpenAIServer() as server:
        yield server


@pytest.fixture
def hostile_openai() -> Iterator[HostileOpenAIServer]:
    """Serve a started mock endpoint in hostile mode (byte-level replies) for one test.

    It answers like ``mock_openai`` until the test adds hostile rules with
    ``hostile_openai.add_hostile(kind, match=...)``.

    Yields:
        The running server.

    """
    from pytest_legaleval.testing.mock_openai import HostileOpenAIServer

    with HostileOpenAIServer() as server:
        yield server


@pytest.fixture
def mock_openai_factory() -> Iterator[MockOpenAIFactory]:
    """Start any number of configured mock OpenAI endpoints; all are stopped after the test.

    Yields:
        ``factory(config=None, **config_fields)`` returning a started
        :class:`~pytest_legaleval.testing.mock_openai.MockOpenAIServer`.

    """
    from pytest_legaleval.testing.mock_openai import MockOpenAIServer

    servers: list[MockOpenAIServer] = []

    def factory(config: MockConfig | None = None, **config_fields: Any) -> MockOpenAIServer:
        server = MockOpenAIServer(config, **config_fields)
        server.start()
        servers.append(server)
        return server

    try:
        yield factory
    finally:
        for server in servers:
            server.stop()
