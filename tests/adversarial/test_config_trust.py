"""Configuration that comes with the project cannot send a key to a host the user did not name.

Before this change a ``legaleval.yaml`` in the repository under test, read automatically
from the rootdir, could say ``models: {openai/m: {base_url: https://evil, api_key_env:
GITHUB_TOKEN}}`` and the run sent ``$GITHUB_TOKEN`` there without a word. The rule now
(SECURITY.md): configuration that comes with the project — that file and the
``legaleval_*`` ini options — may point keys only at this machine (``localhost``,
``127.0.0.0/8``, ``::1``). Anything else is a usage error before any call, naming the
setting, the host, the variable and the fix: give the setting on the command line, or
name the file with ``--legaleval-config`` (the user vouches for it). The environment
(``OPENAI_BASE_URL``, ``LEGALEVAL_<PRESET>_BASE_URL``) is the user's and stays free.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_legaleval.engine.routing import is_loopback_url
from pytest_legaleval.errors import ConfigError
from pytest_legaleval.pipeline.settings import Settings, resolve_settings
from pytest_legaleval.testing.mock_openai import MockOpenAIServer

EVIL = "https://collector.example/v1"
CANARY = "cfg-trust-canary-0123456789"


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "GITHUB_TOKEN", "ANTHROPIC_API_KEY"):
        monkeypatch.setenv(name, CANARY)
    for name in ("OPENAI_BASE_URL", "LEGALEVAL_ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def _resolve(
    tmp_path: Path,
    yaml_text: str | None,
    *,
    automatic: bool = True,
    ini: dict[str, Any] | None = None,
    **cli: Any,
) -> Settings:
    config = None
    if yaml_text is not None:
        config = tmp_path / "legaleval.yaml"
        config.write_text(yaml_text, encoding="utf-8")
    values = {"model": ["openai/m"], **cli}
    return resolve_settings(
        values, ini=ini, config_file=config, config_is_automatic=automatic and bool(config)
    )


MOVES = {
    "a models: entry's URL and key variable": (
        f"models:\n  openai/m:\n    base_url: {EVIL}\n    api_key_env: GITHUB_TOKEN\n",
        {},
        ["models['openai/m'].base_url and ", "models['openai/m'].api_key_env", "$GITHUB_TOKEN"],
    ),
    "a models: entry's URL alone (the session's key)": (
        f"models:\n  openai/m:\n    base_url: {EVIL}\n",
        {},
        ["models['openai/m'].base_url:", "$OPENAI_API_KEY"],
    ),
    "the key variable alone, to the vendor's own host": (
        "api_key_env: GITHUB_TOKEN\n",
        {},
        ["sets api_key_env:", "$GITHUB_TOKEN", "api.openai.com", "--api-key-env on the"],
    ),
    "the session's URL": (
        f"base_url: {EVIL}\n",
        {},
        ["sets base_url:", "$OPENAI_API_KEY", "--base-url on the command line"],
    ),
    "the judges' URL": (
        f"judge_base_url: {EVIL}\n",
        {"judge_model": ["openai/judge"], "responses": "r.jsonl"},
        ["sets judge_base_url:", "for openai/judge", "--judge-base-url on the command line"],
    ),
    "a local/ model's URL (the session's key)": (
        f"models:\n  local/my-gguf:\n    base_url: {EVIL}\n",
        {"model": ["local/my-gguf"]},
        ["models['local/my-gguf'].base_url", "$OPENAI_API_KEY"],
    ),
    "a preset's vendor key to another host": (
        f"models:\n  anthropic/claude-sonnet-4-5:\n    base_url: {EVIL}\n",
        {"model": ["anthropic/claude-sonnet-4-5"]},
        ["models['anthropic/claude-sonnet-4-5'].base_url", "$ANTHROPIC_API_KEY"],
    ),
}


@pytest.mark.parametrize("case", sorted(MOVES))
def test_an_automatic_legaleval_yaml_cannot_move_a_key(tmp_path: Path, case: str) -> None:
    text, cli, expected = MOVES[case]
    with pytest.raises(ConfigError) as caught:
        _resolve(tmp_path, text, **cli)
    message = str(caught.value)
    assert message.startswith(f"{tmp_path / 'legaleval.yaml'} (read automatically"), message
    for part in [*expected, "collector.example" if "vendor's own" not in case else ""]:
        assert part in message, (part, message)
    assert f"--legaleval-config {tmp_path / 'legaleval.yaml'}" in message
    assert CANARY not in message  # the variable is named, never its value
    # The same file named by the user is the user's choice.
    _resolve(tmp_path, text, automatic=False, **cli)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/v1",
        "http://localhost:11434/v1",
        "http://[::1]:8080/v1",
        "http://127.3.4.5/v1",
        "HTTP://LOCALHOST/v1",
    ],
)
def test_a_project_may_point_keys_at_this_machine(tmp_path: Path, url: str) -> None:
    """A local vLLM, llama.cpp or Ollama server: the key never leaves the machine."""
    text = f"base_url: {url}\nmodels:\n  openai/m:\n    base_url: {url}\n    api_key_env: X\n"
    settings = _resolve(tmp_path, text)
    assert settings.per_model["openai/m"]["base_url"] == url
    assert is_loopback_url(url)


@pytest.mark.parametrize(
    "url",
    [
        "http://localhost@collector.example/v1",  # user info, then the real host
        "http://localhost.collector.example/v1",
        "http://127.0.0.1.collector.example/v1",
        "http://0x7f000001.example/v1",
        "http://[::ffff:8.8.8.8]/v1",
        "http://10.0.0.1/v1",  # the network, not this machine
        "not a url",
    ],
)
def test_look_alike_hosts_are_not_this_machine(tmp_path: Path, url: str) -> None:
    assert not is_loopback_url(url)
    with pytest.raises(ConfigError, match="a host you did not name"):
        _resolve(tmp_path, f"models:\n  openai/m:\n    base_url: '{url}'\n")


def test_the_command_line_and_the_environment_name_hosts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # --base-url on the command line wins over the file: the user named the host.
    settings = _resolve(tmp_path, f"base_url: {EVIL}\n", base_url="https://mine.example/v1")
    assert settings.base_url == "https://mine.example/v1"
    _resolve(tmp_path, "api_key_env: GITHUB_TOKEN\n", api_key_env="GITHUB_TOKEN")
    # The environment is the user's: a preset moved by its variable, OPENAI_BASE_URL.
    monkeypatch.setenv("LEGALEVAL_ANTHROPIC_BASE_URL", EVIL)
    monkeypatch.setenv("OPENAI_BASE_URL", EVIL)
    _resolve(tmp_path, None, model=["anthropic/claude-sonnet-4-5", "openai/m"])
    # ... but the file may still not pick the key that goes there.
    with pytest.raises(ConfigError, match=r"sets api_key_env: the key in \$GITHUB_TOKEN"):
        _resolve(tmp_path, "api_key_env: GITHUB_TOKEN\n")


def test_ini_options_come_with_the_project_too(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        _resolve(tmp_path, None, ini={"base_url": EVIL})
    message = str(caught.value)
    assert message.startswith("the ini option legaleval_base_url: the key in $OPENAI_API_KEY")
    assert "--base-url on the command line" in message and "--legaleval-config" not in message
    _resolve(tmp_path, None, ini={"base_url": "http://127.0.0.1:9/v1"})


def test_a_local_model_without_a_url_gets_the_plugins_own_server(tmp_path: Path) -> None:
    settings = _resolve(tmp_path, "api_key_env: GITHUB_TOKEN\n", model=["local/my-gguf"])
    assert settings.model == ("local/my-gguf",)


def test_only_models_the_run_calls_are_checked(tmp_path: Path) -> None:
    """With --responses no candidate is called; an entry for a model not in the run is inert."""
    text = f"models:\n  openai/m:\n    base_url: {EVIL}\n  openai/unused:\n    base_url: {EVIL}\n"
    _resolve(tmp_path, text, responses="r.jsonl")
    with pytest.raises(ConfigError, match=r"openai/m would go to collector\.example"):
        _resolve(tmp_path, text)


SUITE = "def test_record(record, evaluation):\n    evaluation.check()\n"
MCQ = {
    "schema_version": "legal_eval_v1",
    "id": "q1",
    "dataset": "t",
    "task_type": "mcq",
    "prompt": "Question?",
    "choices": [{"id": "A", "text": "a"}, {"id": "B", "text": "b"}],
    "correct_choice_ids": ["B"],
}


def test_a_session_refuses_before_any_call_and_names_the_fix(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_suite=SUITE)
    (pytester.path / "d.jsonl").write_text(json.dumps(MCQ) + "\n", encoding="utf-8")
    with MockOpenAIServer() as server:
        # The repository's file points GITHUB_TOKEN at a host; the mock stands in for it
        # under a name that is not this machine's.
        moved = server.base_url.replace("127.0.0.1", "collector.localtest.me")
        (pytester.path / "legaleval.yaml").write_text(
            f"models:\n  openai/m:\n    base_url: {moved}\n    api_key_env: GITHUB_TOKEN\n",
            encoding="utf-8",
        )
        result = pytester.runpytest("--dataset", "d.jsonl", "--model", "openai/m")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(
            ["*legaleval.yaml (read automatically from the rootdir) sets models*GITHUB_TOKEN*"]
        )
        assert server.requests() == []
        assert CANARY not in result.stdout.str() + result.stderr.str()
        assert not (pytester.path / "legaleval-runs").exists()
        # Pointed at this machine, the same entry needs no flag.
        (pytester.path / "legaleval.yaml").write_text(
            f"models:\n  openai/m:\n    base_url: {server.base_url}\n"
            "    api_key_env: GITHUB_TOKEN\n",
            encoding="utf-8",
        )
        server.add_reply("Question", "Answer: B")
        result = pytester.runpytest("--dataset", "d.jsonl", "--model", "openai/m")
        result.assert_outcomes(passed=1)
        (request,) = server.requests()
        assert request["model"] == "m"
