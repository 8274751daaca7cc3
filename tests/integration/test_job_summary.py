"""Under GitHub Actions a run appends its Markdown job summary, injection-safe (issue 30).

With ``GITHUB_STEP_SUMMARY`` set, the pytest run (its controller, once under ``-n 2``)
appends a headline with the pass rate and its interval, the gates with their values, the
regressions against the baseline and the worst failures. Record ids, dataset and model
names and reasons from data hold images, links, mentions, ``</details>``, pipes,
backticks, newlines and HTML: rendered by a CommonMark/GFM parser, none of it is markup.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt

from .conftest import mcq_row, run_dirs, write_jsonl

NASTY = [
    "![x](https://evil.example/p.png)",
    "[click](https://evil.example)",
    "@octocat",
    "</details><img src=x>",
    "a|b`c`",
    "line\nbreak",
]


def _tokens(tokens: list[Any]) -> list[Any]:
    out = []
    for token in tokens:
        out.append(token)
        out.extend(_tokens(token.children or []))
    return out


def _data(root: Path) -> tuple[Path, Path, Path]:
    dataset = "ds" + NASTY[3]
    rows = [mcq_row(f"r{i}{text}", dataset=dataset) for i, text in enumerate(NASTY)]
    rows.append(mcq_row("ok", dataset=dataset))
    broken = mcq_row("bad@octocat", dataset=dataset)
    del broken["prompt"]
    data = write_jsonl(root / "d.jsonl", [*rows, broken])
    model = "m![y](https://evil.example/q.png)"
    right = [{"record_id": r["id"], "response": "Answer: B", "model": model} for r in rows]
    base = write_jsonl(root / "base.jsonl", right)
    wrong = [{"record_id": r["id"], "response": "Answer: C " + NASTY[0], "model": model}
             for r in rows[:-1]]  # fmt: skip
    now = write_jsonl(root / "now.jsonl", [*wrong, right[-1]])
    return data, base, now


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["n0", "n2"])
def test_the_job_summary_is_appended_and_holds_no_markup_from_data(
    pytester: pytest.Pytester, suite: Path, monkeypatch: pytest.MonkeyPatch, workers: list[str]
) -> None:
    data, base, now = _data(pytester.path)
    summary = pytester.path / "summary.md"
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    first = pytester.runpytest_subprocess(
        "--dataset", str(data), "--responses", str(base), "--run-dir", "base"
    )
    assert first.ret == 1 and not summary.exists()  # outside GitHub Actions: nothing
    (baseline,) = run_dirs(pytester.path / "base")
    summary.write_text("## an earlier step\n\n", encoding="utf-8")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = pytester.runpytest_subprocess(
        "--dataset", str(data), "--responses", str(now), "--run-dir", "runs",
        "--gate", "pass_rate>=0.5", "--baseline", str(baseline), *workers,
    )  # fmt: skip
    assert result.ret == 1, result.stdout.str()
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("## an earlier step\n\n## legaleval: 14.3% passed (95% CI ")
    assert text.count("## legaleval:") == 1  # the controller's, not one per worker
    assert "1 of 7 graded items passed" in text
    assert "| **FAILED** | pass\\_rate\\>\\=0\\.5 | 0.1429 |" in text
    assert "### Regressions against the baseline" in text and "6 pass→fail" in text
    assert "### Worst failures (7 of 7)" in text
    tokens = _tokens(MarkdownIt("gfm-like").parse(text))
    kinds = {t.type for t in tokens}
    assert not kinds & {"link_open", "image", "html_inline", "html_block", "code_inline"}, kinds
    rendered = "".join(t.content for t in tokens if t.type == "text")
    assert "@octocat" not in rendered and "@\u200b" in rendered
    assert "evil.example" in rendered  # shown as text, not as a link
    # Every table row has its header's cells: no pipe from data split one.
    for table in [t for t in tokens if t.type == "table_open"]:
        at = tokens.index(table)
        end = next(i for i in range(at, len(tokens)) if tokens[i].type == "table_close")
        rows = [[]]  # type: list[list[str]]
        for token in tokens[at:end]:
            if token.type == "tr_close":
                rows.append([])
            elif token.type in ("th_open", "td_open"):
                rows[-1].append(token.type)
        widths = {len(r) for r in rows if r}
        assert len(widths) == 1, widths
