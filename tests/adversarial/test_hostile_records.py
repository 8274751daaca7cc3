"""Hostile records and hostile answers, driven through the whole pipeline in process.

Hypothesis writes a dataset of valid rows, rows with one field broken, arbitrary JSON
lines and raw bytes, plus a responses file whose answers may carry lone surrogates, NUL,
markup and a secret canary; the run goes through the same pipeline as ``pytest suites/``
(``pipeline.driver.run_evaluation``: plan, grade, record, finalize). Whatever the input:
the run ends, every valid record has exactly one prediction line, every line of the file
has its validation line, and no byte of the canary is in any file the run wrote.
Examples: 2,000 under ``CI`` (the ``adversarial`` profile), a quick few otherwise.
"""

from __future__ import annotations

import base64
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_legaleval.pipeline.driver import run_evaluation
from pytest_legaleval.pipeline.settings import Settings
from pytest_legaleval.run.verify import check_run_directory
from pytest_legaleval.testing.strategies import (
    hostile_text,
    json_values,
    legal_eval_mutations,
    legal_eval_rows,
)

CANARY = "sk-canary-HostileRecordsZ7q9Xw3"

_line = st.one_of(
    legal_eval_rows().map(lambda row: ("valid", row)),
    legal_eval_mutations().map(lambda m: ("broken", m.row)),
    json_values().map(lambda value: ("junk", value)),
    st.binary(max_size=64).map(lambda raw: ("bytes", raw)),
)
_answer = st.one_of(
    st.just("Answer: A"),
    hostile_text(),
    st.text(max_size=60),
    st.just(f"Authorization: Bearer {CANARY}"),
    st.just("A \ud83d and \x00 <script>alert(1)</script>"),
)


def _jsonl(path: Path) -> list[dict[str, Any]]:
    # "\n" only: a JSON string may hold U+0085 or U+2028, which splitlines() splits on.
    return [json.loads(x) for x in path.read_text(encoding="utf-8").split("\n") if x.strip()]


def _encode(kind: str, value: Any) -> bytes:
    if kind == "bytes":
        return bytes(value).replace(b"\n", b" ")
    return json.dumps(value, ensure_ascii=True).encode()


@settings(settings.get_profile("adversarial"))
@given(lines=st.lists(_line, min_size=1, max_size=6), answers=st.lists(_answer, min_size=1))
def test_any_dataset_and_any_answers_end_in_one_line_per_record(
    lines: list[tuple[str, Any]], answers: list[str]
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        data = root / "d.jsonl"
        data.write_bytes(b"\n".join(_encode(kind, value) for kind, value in lines) + b"\n")
        ids = [v["id"] for k, v in lines if k == "valid" and isinstance(v.get("id"), str)]
        responses = root / "r.jsonl"
        responses.write_text(
            "".join(
                json.dumps({"record_id": rid, "response": answers[i % len(answers)]}) + "\n"
                for i, rid in enumerate(ids)
            )
            or json.dumps({"record_id": "none", "response": "x"}) + "\n",
            encoding="utf-8",
        )
        runs = root / "runs"
        settings_ = Settings(
            dataset=(str(data),),
            responses=str(responses),
            run_dir=str(runs),
            cache=None,
        )
        os.environ["OPENAI_API_KEY"] = CANARY
        try:
            outcome = run_evaluation(settings_, "run_prop")
        except Exception as exc:  # a responses file that matches nothing is refused: fine
            assert type(exc).__name__ in ("ResponsesError", "ConfigError"), exc
            assert not (runs / "run_prop").exists()
            return
        finally:
            os.environ.pop("OPENAI_API_KEY", None)
        if outcome.status == "rejected":
            assert not (runs / "run_prop").exists()  # a rejected dataset writes nothing
            return
        run = runs / "run_prop"
        predictions = _jsonl(run / "predictions.jsonl")
        accepted = [v for v in _jsonl(run / "record_validation.jsonl") if v["status"] == "accepted"]
        assert len(predictions) == len(accepted)  # one line per valid record, no more
        assert len({(p["dataset"], p["record_id"]) for p in predictions}) == len(predictions)
        assert check_run_directory(run) == []  # every line valid against its schema
        forms = [CANARY.encode(), base64.b64encode(CANARY.encode()).rstrip(b"=")]
        for path in run.rglob("*"):
            if path.is_file():
                content = path.read_bytes()
                assert not any(form in content for form in forms), path
