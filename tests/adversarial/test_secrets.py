"""An endpoint that echoes the API key cannot make any output hold it.

The hostile server answers every call — generations and judge calls — with the request's
``Authorization`` header and the whole request echoed into the reply, also inside a JSON
reply the judge parser will try, and once as an error body. After the run not a byte of
the key (as is, URL-encoded or base64) may be in any file under the working directory
(run directory, HTML report, JUnit XML, response cache, pytest's cache) nor in what the
session printed, with and without ``--redact pii``, in one process and under xdist.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from urllib.parse import quote

import pytest

from pytest_legaleval.testing.mock_openai import HostileOpenAIServer

KEY = "sk-canary-Z3t9Qw7vLp2Xr8Ya5Nc1"
TOKEN = "svc-token-Hq4Lm8Pz2Wx6Rt0V"  # a service token in the environment as well
SUITE = """
def test_record(record, evaluation):
    evaluation.check()

def test_users_own_assertion(record, evaluation):
    assert "nothing" in (evaluation.response or ""), evaluation.response
"""


def _forms(secret: str) -> list[bytes]:
    raw = secret.encode()
    forms = {raw, quote(secret, safe="").encode(), base64.b64encode(raw).rstrip(b"=")}
    for offset in (1, 2):  # the key inside a longer base64 text (Basic credentials)
        encoded = base64.b64encode(b"\0" * offset + raw).rstrip(b"=")
        forms.add(encoded[(offset * 8 + 5) // 6 : -1])
    return sorted(forms)


@pytest.fixture
def server() -> Iterator[HostileOpenAIServer]:
    with HostileOpenAIServer() as srv:
        srv.add_hostile("echo", match="q002", status=500)  # the key in an error body too
        srv.add_hostile("echo")  # everything else: the key in the reply's content
        yield srv


def _rows() -> list[dict[str, object]]:
    rows: list[dict[str, object]] = [
        {
            "schema_version": "legal_eval_v1",
            "id": f"q{i:03d}",
            "dataset": "t",
            "task_type": "mcq",
            "prompt": f"Question q{i:03d}: write me@example.com, call +41 44 123 45 67?",
            "choices": [{"id": c, "text": f"option {c}"} for c in "ABCD"],
            "correct_choice_ids": ["B"],
        }
        for i in range(4)
    ]
    rows.append(
        {
            "schema_version": "legal_eval_v1",
            "id": "r001",
            "dataset": "t",
            "task_type": "rubric_qa",
            "prompt": "Advise.",
            "rubric": [{"id": "c1", "title": "Cites the statute", "weight": 1}],
        }
    )
    return rows


@pytest.mark.slow
@pytest.mark.parametrize(
    "extra",
    [[], ["--redact", "pii"], ["-n", "2"]],
    ids=["plain", "redact-pii", "xdist"],
)
def test_no_output_holds_the_key(
    pytester: pytest.Pytester,
    server: HostileOpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
    extra: list[str],
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("LEGALEVAL_API_TOKENS", f"{TOKEN},short")
    pytester.makepyfile(test_suite=SUITE)
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    data = pytester.path / "d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in _rows()), encoding="utf-8")
    result = pytester.runpytest_subprocess(
        "--dataset", str(data), "--model", "openai/echo", "--judge-model", "openai/judge",
        "--base-url", server.base_url, "--run-dir", "runs", "--cache", "cache.sqlite",
        "--retry-delays", "0.01,0.01", "--max-attempts", "2", "--judge-reasks", "1",
        "--junitxml", "junit.xml", "-rA", "--tb=long", *extra,
        timeout=180,
    )  # fmt: skip
    assert result.ret in (0, 1), result.stdout.str()[-2000:]
    assert server.count_for("q001") >= 1  # the key went out, and came back echoed
    printed = (result.stdout.str() + result.stderr.str()).encode()
    files = [p for p in pytester.path.rglob("*") if p.is_file()]
    assert any(p.name == "junit.xml" for p in files) and any(p.suffix == ".sqlite" for p in files)
    from pytest_legaleval.cli import main

    (run,) = [p for p in (pytester.path / "runs").iterdir() if p.is_dir()]
    assert main(["report", str(run), "--out", str(pytester.path / "report.html")]) == 0
    files.append(pytester.path / "report.html")
    for secret in (KEY, TOKEN):
        for form in _forms(secret):
            assert form not in printed, form
            for path in files:
                assert form not in path.read_bytes(), (form, path)
    if "pii" in extra:  # chosen PII is gone from everything meant to be read
        outputs = [p for p in files if p.suffix in (".jsonl", ".json", ".xml", ".html")]
        for path in [p for p in outputs if p != data]:  # the input itself holds it
            assert b"me@example.com" not in path.read_bytes(), path
        assert b"me@example.com" not in printed


def test_a_base_url_s_user_and_password_never_reach_the_manifest(
    pytester: pytest.Pytester, server: HostileOpenAIServer
) -> None:
    server.clear_hostile()
    server.add_reply("Question", "Answer: B")
    pytester.makepyfile(test_suite=SUITE.split("\n\ndef test_users_own")[0] + "\n")
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    data = pytester.path / "d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in _rows()[:2]), encoding="utf-8")
    base = server.base_url.replace("http://", "http://alice:pa55-Wordz9Q@")
    result = pytester.runpytest(
        "--dataset", str(data), "--model", "openai/m", "--base-url", base,
        "--run-dir", "runs", "--no-cache",
    )  # fmt: skip
    assert result.ret in (0, 1)
    (run,) = [p for p in (pytester.path / "runs").iterdir() if p.is_dir()]
    manifest = (run / "run_manifest.json").read_text(encoding="utf-8")
    assert "pa55-Wordz9Q" not in manifest and "alice" not in manifest
    assert "http://***@127.0.0.1" in manifest
