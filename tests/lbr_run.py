"""The Legal Benchmark Runner's real run (tests/data/lbr_run/), loaded for the tests.

Run ``20260216_223746_d7f3`` of DidroPlatform/EU-Legal-Benchmark at commit 61d8da0 (MIT):
its 125 records, its judge verdicts (rationales left out), its summary, the names of its
provider-cache files and the request settings of its judge and non-Bedrock candidates.
See tests/data/lbr_run/README.md.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import tempfile
from collections.abc import Iterator, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from pytest_legaleval.formats import load_dataset
from pytest_legaleval.records import Record

DATA = Path(__file__).parent / "data" / "lbr_run"
RECORDS = DATA / "merged_legal_eval_v1.jsonl.gz"
JUDGMENTS = DATA / "judgments.jsonl.gz"


def gz_lines(path: Path) -> Iterator[str]:
    """The lines of a gzip-compressed text file."""
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        yield from handle


@lru_cache(maxsize=1)
def records() -> dict[str, Record]:
    """LBR's 125 records by id, read by our legal_eval_v1 reader."""
    with gzip.open(RECORDS, "rb") as handle, tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "merged_legal_eval_v1.jsonl"
        path.write_bytes(handle.read())
        loaded = load_dataset([str(path)], "auto").records
    return {record.id: record for record in loaded}


def summary() -> dict[str, Any]:
    """LBR's own summary.json of the run."""
    data: dict[str, Any] = json.loads((DATA / "summary.json").read_text(encoding="utf-8"))
    return data


@lru_cache(maxsize=1)
def cache_keys() -> frozenset[str]:
    """The first 16 hex digits of every file name in LBR's provider cache of the run."""
    return frozenset(line.strip() for line in gz_lines(DATA / "cache_keys.txt.gz"))


def settings() -> dict[str, Any]:
    """Request settings of the run's judge and of its non-Bedrock candidates."""
    data: dict[str, Any] = json.loads((DATA / "request_settings.json").read_text(encoding="utf-8"))
    return data


def responses() -> list[dict[str, Any]]:
    """One candidate's (magistral_medium_latest) answers to every judged record, plus one
    answer that ends in blank space (bedrock_gpt_oss_120b on apexv1:1382)."""
    return [json.loads(line) for line in gz_lines(DATA / "responses_judged_sample.jsonl.gz")]


def lbr_cache_key(stage: str, request: dict[str, Any], messages: Sequence[dict[str, str]]) -> str:
    """The name LBR's disk cache gives a request (the facts of its cache key: stage,
    provider, model, messages and sampling settings as sorted compact JSON, sha256),
    cut to the 16 digits stored here."""
    payload = {"stage": stage, "messages": [dict(m) for m in messages], **request}
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]
