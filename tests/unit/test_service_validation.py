"""Upload validation off the HTTP process: the §2 verdicts, and a pool that survives."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path

from pytest_legaleval.service.validation import LARGE_UPLOAD_BYTES, UploadValidator, check_upload

from ..service_harness import document, gone, record, write


def test_check_upload_gives_the_contract_verdicts(tmp_path: Path) -> None:
    good = write(tmp_path / "good.json", document("g", [record("a", "Q?"), {"record_id": "b"}]))
    checked = check_upload(str(good))
    assert checked.status == 202 and checked.valid_records == 1
    assert checked.body["status"] == "accepted_with_record_errors"
    assert checked.body["record_errors"][0]["code"] == "missing_required_field"
    assert checked.dataset is not None and checked.dataset["dataset_id"] == "g"
    assert checked.dataset["bytes"] == good.stat().st_size and len(checked.dataset["sha256"]) == 64
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    refused = check_upload(str(bad))
    assert refused.status == 400 and refused.body["error"]["code"] == "invalid_request"
    assert check_upload(str(tmp_path / "gone.json")).status == 400


def test_the_validator_replaces_a_dead_process_and_checks_large_uploads_apart(
    tmp_path: Path,
) -> None:
    validator = UploadValidator(1, timeout_s=120)
    try:
        validator.warm()
        small = write(tmp_path / "small.json", document("s", [record("a", "Q?")]))
        broken = validator._pool
        (pid,) = broken._processes  # type: ignore[attr-defined]  # the pool's one process
        os.kill(pid, signal.SIGKILL)
        assert gone([pid])
        assert asyncio.run(validator.check(small)).status == 202
        assert validator._pool is not broken  # a fresh pool answered
        prompt = "x" * 200_000
        count = LARGE_UPLOAD_BYTES // len(prompt) + 1
        large = write(
            tmp_path / "large.json", document("l", [record(f"r{i}", prompt) for i in range(count)])
        )
        assert large.stat().st_size >= LARGE_UPLOAD_BYTES
        checked = asyncio.run(validator.check(large))
        assert checked.status == 202 and checked.valid_records == count
        assert json.dumps(checked.body["summary"]) == json.dumps(
            {"total_records": count, "accepted_records": count, "rejected_records": 0}
        )
    finally:
        validator.close()
