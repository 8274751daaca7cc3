from __future__ import annotations

import json
import re
from pathlib import Path

from pytest_legaleval.metrics.runfiles import load_run
from pytest_legaleval.report import MAX_TEXT, render_report, write_report

HOSTILE = "</td></tr></table><script>alert(1)</script>\"'&"


def _run(tmp_path: Path) -> Path:
    run = tmp_path / "run_x"
    run.mkdir()
    manifest = {"run_id": "run_x", "status": "completed", "models": ["m<b>"], "datasets": []}
    (run / "run_manifest.json").write_text(json.dumps(manifest))
    rows = [
        {
            "record_id": f"r{i}",
            "dataset": "d",
            "model": "m<b>",
            "outcome": "passed" if i % 2 else "failed",
            "passed": bool(i % 2),
            "score": float(i % 2),
            "reason": "correct" if i % 2 else "wrong_answer",
            "explanation": HOSTILE if i == 0 else "x" * (MAX_TEXT + 10),
            "model_response": HOSTILE,
            "latency_ms": 10.0 * i,
        }
        for i in range(4)
    ]
    (run / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return run


def test_every_value_is_escaped(tmp_path: Path) -> None:
    page = render_report(load_run(_run(tmp_path)))
    assert page.count("<script>") == 1  # ours only
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)" in page
    assert "m<b>" not in page and "m&lt;b&gt;" in page
    assert "</td></tr></table><script>" not in page
    assert "[10 more characters]" in page  # long texts are cut, and say so


def test_page_is_self_contained(tmp_path: Path) -> None:
    page = render_report(load_run(_run(tmp_path)))
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    assert not re.search(r'(?:src|href)\s*=\s*["\']?(?:https?:|//)', page)
    assert "<style>" in page and 'id="latency-histogram"' in page
    # without a summary file the cards are computed from the rows
    assert re.search(r'data-metric="pass_rate".*?50\.0%', page, re.S)


def test_write_report_defaults_beside_the_run(tmp_path: Path) -> None:
    run = _run(tmp_path)
    target = write_report(run)
    assert target == tmp_path / "run_x.html"
    assert sorted(p.name for p in run.iterdir()) == ["predictions.jsonl", "run_manifest.json"]
