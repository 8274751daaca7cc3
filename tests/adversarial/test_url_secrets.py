"""Issue 41, MED: keys in a base URL never leak.

Before: ``?subscription-key=`` (Azure API Management) and ``?code=`` (Azure Functions) were
written in clear to ``run_manifest.json`` and, where an error quoted the URL, to every other
output. One function (``engine.urls.redact_url``) now decides what of a URL is secret; the
run's redactor calls it for every URL and treats the configured URLs' credentials as
configured secrets, so a server quoting them without the URL is redacted too.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_legaleval.engine.urls import endpoint_url, redact_url, url_secrets
from pytest_legaleval.run.redaction import Redactor
from pytest_legaleval.testing.mock_openai import HostileOpenAIServer

SUBKEY = "apim-canary-Q7w3Zr9Lx2"
FUNCODE = "func-canary-Vb8Nn4Kp6T"
SIG = "sig-canary-Hd5Jm1Ws0Y"
PASSWORD = "pw-canary-Xe2Rt7Uq3I"


@pytest.mark.parametrize(
    "name",
    [
        "key", "api-key", "api_key", "apikey", "subscription-key", "Subscription-Key",
        "code", "token", "access_token", "sig", "signature", "X-Amz-Signature",
        "X-Goog-Credential", "client_secret", "password", "my_custom_token",
    ],
)  # fmt: skip
def test_every_credential_named_parameter_is_redacted(name: str) -> None:
    url = f"https://gw.example/v1?api-version=2024-06&{name}=s3cr3t-VALUE&model=m"
    out = redact_url(url)
    assert "s3cr3t-VALUE" not in out
    assert out == f"https://gw.example/v1?api-version=2024-06&{name}=[REDACTED:secret]&model=m"


def test_user_info_and_a_configured_secret_under_any_name_are_redacted() -> None:
    out = redact_url("https://bob:hunter2-long@h.example:8443/v1?x=CONF-SECRET-1#frag")
    assert out == "https://***@h.example:8443/v1?x=CONF-SECRET-1#frag"
    assert "CONF-SECRET-1" not in redact_url("https://h/v1?x=CONF-SECRET-1", ["CONF-SECRET-1"])


def test_a_url_without_credentials_is_kept_byte_for_byte() -> None:
    for url in (
        "https://api.openai.com/v1",
        "http://127.0.0.1:8000/v1?api-version=2024-06-01&deployment=gpt",
        "https://h.example/a%20b/?q=hello+world#top",
    ):
        assert redact_url(url) == url


def test_the_configured_url_s_credentials_are_configured_secrets() -> None:
    url = f"https://u:{PASSWORD}@h/v1?subscription-key={SUBKEY}&code={FUNCODE}&v=1"
    assert sorted(url_secrets(url)) == sorted([PASSWORD, SUBKEY, FUNCODE])
    redactor = Redactor.for_settings((), [], env={}, urls=[url])
    # quoted without its URL, as a server's error echoing the request line does
    line = f"POST /v1/chat/completions?subscription-key={SUBKEY}&code={FUNCODE} HTTP/1.1"
    out = redactor.text(line)
    assert SUBKEY not in out and FUNCODE not in out


def test_free_text_urls_are_redacted_and_other_secrets_inside_them_too() -> None:
    redactor = Redactor()
    text = (
        f'error calling "https://gw/v1?subscription-key={SUBKEY}" then '
        f"https://fn.example/api/x?code={FUNCODE}&sig={SIG} and https://h/v1/sk-abcdefghijklmnopqrstu"
    )
    out = redactor.text(text)
    for canary in (SUBKEY, FUNCODE, SIG, "sk-abcdefghijklmnopqrstu"):
        assert canary not in out
    assert "https://gw/v1?subscription-key=[REDACTED:secret]" in out


@pytest.mark.parametrize(
    ("base", "joined"),
    [
        ("http://h/v1", "http://h/v1/chat/completions"),
        ("http://h/v1/", "http://h/v1/chat/completions"),
        ("http://h/v1?api-version=2", "http://h/v1/chat/completions?api-version=2"),
        ("http://h/v1/?a=1&b=2", "http://h/v1/chat/completions?a=1&b=2"),
        ("http://u:p@h:9/v1?a=1", "http://u:p@h:9/v1/chat/completions?a=1"),
    ],
)
def test_the_path_is_joined_onto_the_path_not_onto_the_query(base: str, joined: str) -> None:
    assert endpoint_url(base, "/chat/completions") == joined


@pytest.fixture
def server() -> Iterator[HostileOpenAIServer]:
    with HostileOpenAIServer() as srv:
        srv.add_hostile("echo", match="q002", status=500)  # the URL's query in an error body
        srv.add_hostile("echo")  # the request line, query included, in the reply's content
        yield srv


@pytest.mark.slow
def test_no_output_holds_a_key_from_the_base_url_s_query(
    pytester: pytest.Pytester, server: HostileOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    summary = pytester.path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    pytester.makepyfile(test_suite="def test_record(record, evaluation):\n    evaluation.check()\n")
    rows = [
        {
            "schema_version": "legal_eval_v1", "id": f"q00{i}", "dataset": "t",
            "task_type": "mcq", "prompt": f"Question q00{i}?",
            "choices": [{"id": c, "text": c} for c in "AB"], "correct_choice_ids": ["B"],
        }
        for i in (1, 2)
    ]  # fmt: skip
    data = pytester.path / "d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    base = f"{server.base_url}?subscription-key={SUBKEY}&code={FUNCODE}&sig={SIG}"
    result = pytester.runpytest_subprocess(
        "--dataset", str(data), "--model", "openai/m", "--base-url", base,
        "--run-dir", "runs", "--cache", "cache.sqlite", "--retry-delays", "0.01,0.01",
        "--junitxml", "junit.xml", "-rA", "--tb=long",
        timeout=180,
    )  # fmt: skip
    assert result.ret == 1, result.stdout.str()[-2000:]
    assert server.count_for("q001") >= 1
    (run,) = [p for p in (pytester.path / "runs").iterdir() if p.is_dir()]
    from pytest_legaleval.cli import main

    assert main(["report", str(run), "--out", str(pytester.path / "report.html")]) == 0
    printed = result.stdout.str() + result.stderr.str()
    files = [p for p in pytester.path.rglob("*") if p.is_file()]
    names = {p.name for p in files}
    assert {"junit.xml", "report.html", "summary.md", "run_manifest.json"} <= names
    assert {"predictions.jsonl", "failures.jsonl", "attempt_logs.jsonl"} <= names
    for canary in (SUBKEY, FUNCODE, SIG):
        assert canary not in printed
        for path in files:
            assert canary.encode() not in path.read_bytes(), (canary, path)
    manifest = (run / "run_manifest.json").read_text(encoding="utf-8")
    assert "subscription-key=[REDACTED:secret]" in manifest  # the URL still reads


@pytest.mark.slow
def test_the_service_writes_no_key_from_the_base_url_s_query(
    tmp_path: Path, server: HostileOpenAIServer
) -> None:
    pytest.importorskip("fastapi", reason="legaleval serve needs the [serve] extra")
    pytest.importorskip("hypercorn", reason="legaleval serve needs the [serve] extra")
    from ..service_harness import ServiceProcess, document, record, wait_for, write

    token = "svc-url-canary-token-0123456789"
    base = f"{server.base_url}?subscription-key={SUBKEY}&code={FUNCODE}"
    service = ServiceProcess(
        tmp_path / "data",
        ["--model", "openai/cand", "--judge-model", "openai/judge", "--base-url", base,
         "--workers", "1", "--log-level", "info"],
        tokens=token,
    ).start()  # fmt: skip
    try:
        client = service.client(token)
        doc = write(
            tmp_path / "doc.json",
            document(
                "canary", [record("q001", "Question q001?"), record("q002", "Question q002?")]
            ),
        )
        status, _, body = client.upload(doc, None)
        assert status == 202, body
        run_id = body["run_id"]
        wait_for(client, run_id, ("completed", "completed_with_failures", "failed"), 120)
        answers = [client.request("GET", f"/v1/runs/{run_id}")[2]]
        listing = client.json("GET", f"/v1/runs/{run_id}/artifacts")
        for entry in listing["artifacts"]:
            answers.append(client.request("GET", f"/v1/runs/{run_id}/artifacts/{entry['name']}")[2])
    finally:
        assert service.stop() == 0, service.log()
    assert server.count_for("q001") >= 1  # the query went out, and came back echoed
    texts = [str(a) for a in answers] + [service.log()]
    texts += [p.read_bytes().decode("utf-8", "replace") for p in tmp_path.rglob("*")
              if p.is_file() and p.name != "doc.json"]  # fmt: skip
    for canary in (SUBKEY, FUNCODE):
        for text in texts:
            assert canary not in text
