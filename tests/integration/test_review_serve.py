"""The review routes under ``legaleval serve``: raters named by their own tokens."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="legaleval serve needs the [serve] extra")
pytest.importorskip("hypercorn", reason="legaleval serve needs the [serve] extra")

from pytest_legaleval.testing.mock_openai import MockOpenAIServer

from ..service_harness import Script, ServiceProcess, document, record, wait_for, write

API_TOKEN = "api-token-0123456789abcdef"
ANN, BOB = "ann-token-0123456789abcdef", "bob-token-fedcba9876543210"


@pytest.fixture
def service(tmp_path: Path) -> Iterator[ServiceProcess]:
    with MockOpenAIServer() as mock:
        mock.add_reply(None, Script())
        process = ServiceProcess(
            tmp_path / "data",
            ["--model", "openai/cand", "--judge-model", "openai/judge", "--base-url",
             mock.base_url, "--retry-delays", "0.01", "--workers", "1", "--log-level",
             "warning"],
            tokens=API_TOKEN,
        )  # fmt: skip
        process.env["LEGALEVAL_REVIEW_RATERS"] = f"ann={ANN}, bob={BOB}"
        process.start()
        yield process
        assert process.stop() == 0, process.log()


def test_raters_label_a_held_run_with_their_own_tokens(
    service: ServiceProcess, tmp_path: Path
) -> None:
    doc = document("qa", [record(f"q{i}", f"Question {i}?") for i in range(6)])
    api = service.client(API_TOKEN)
    status, _, accepted = api.request(
        "POST", "/v1/runs", body=write(tmp_path / "doc.json", doc).read_bytes(),
        headers={"Content-Type": "application/json"},
    )  # fmt: skip
    assert status == 202, accepted
    run_id = accepted["run_id"]
    wait_for(api, run_id, ["completed", "completed_with_failures"])
    base = f"/v1/runs/{run_id}/review"
    status, headers, _ = service.client().request("GET", f"{base}/")
    assert status == 200 and "script-src 'self'" in headers["content-security-policy"]
    for token, code in ((None, 401), ("wrong", 401), (API_TOKEN, 401)):
        status, _, error = service.client(token).request("GET", f"{base}/api/review/next")
        assert status == code and "rater's token" in error["error"]["message"]
    ann, bob = service.client(ANN), service.client(BOB)
    status, _, shown = ann.request("GET", f"{base}/api/review/next")
    assert status == 200 and shown["progress"]["rater"] == "ann"
    text = json.dumps(shown)
    assert "scripted" not in text and "openai/cand" not in text and "q0" not in text
    total = shown["progress"]["total"]
    assert total == 6  # the whole run: fewer judged items than the default sample
    status, _, done = ann.request(
        "POST", f"{base}/api/review/labels",
        body=json.dumps({"item": shown["item"]["id"], "passed": True}).encode(),
    )  # fmt: skip
    assert status == 201 and done["progress"]["done"] == 1
    assert bob.json("GET", f"{base}/api/review/progress")["seat"] == 1
    status, _, error = ann.request(
        "GET", "/v1/runs/run_01NOSUCHRUN000000000000000/review/api/review/next"
    )
    assert status == 404
    labels = service.data_dir / "reviews" / run_id / "labels" / "ann.jsonl"
    row = json.loads(labels.read_text())
    assert row["rater"] == "ann" and row["model"] == "openai/cand"
    assert not (service.data_dir / "runs" / run_id / "labels").exists()


def test_rater_tokens_are_name_token_pairs() -> None:
    from pytest_legaleval.errors import ConfigError
    from pytest_legaleval.service.review.serve import RATERS_ENV, RaterTokens

    raters = RaterTokens.from_env({RATERS_ENV: f" ann={ANN} ,, bob = {BOB} "})
    assert raters.rater(ANN) == "ann" and raters.rater(BOB) == "bob"
    assert raters.rater("ann") is None and ANN not in repr(raters)
    for bad in ("ann", "=tok", "ann="):
        with pytest.raises(ConfigError, match="name=token"):
            RaterTokens.from_env({RATERS_ENV: bad})
