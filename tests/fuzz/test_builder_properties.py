"""Properties of the RAG dataset builder on generated offline datasets."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import tracemalloc
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_legaleval.datasets.builder import BuildPaths, build_dataset
from pytest_legaleval.errors import ConfigError
from pytest_legaleval.formats import load_dataset
from pytest_legaleval.testing.strategies import clean_text

REPO = Path(__file__).resolve().parents[2]
TASK_TYPES = st.sampled_from(["qa", "qa", "summaries", "citations", "retrieval_diagnostics"])


@st.composite
def offline_rows(draw: st.DrawFn) -> list[dict[str, Any]]:
    rows = []
    for number in range(draw(st.integers(0, 25))):
        task_type = draw(TASK_TYPES)
        contexts = draw(
            st.lists(
                st.tuples(st.sampled_from(["", "[0] ", "[7] ", " [2]  "]), clean_text(1, 30)),
                max_size=4,
            )
        )
        row: dict[str, Any] = {
            "task_id": f"task-{number:04d}",
            "task_type": task_type,
            "rag_prompt": "Answer from the context.",
            "contexts": [marker + text for marker, text in contexts],
            "sources": [f"doc.txt#page={i}" for i in range(len(contexts))],
            "metadata": {"n": number},
        }
        if task_type == "summaries":
            row["instruction"] = "Summarise."
            row["reference_summary"] = draw(clean_text(1, 40))
        else:
            row["question"] = draw(clean_text(1, 40))
            row["reference_answer"] = draw(clean_text(1, 40))
        rows.append(row)
    return rows


def paths_in(root: Path) -> BuildPaths:
    return BuildPaths(
        offline_dataset=root / "offline.jsonl",
        qa_output=root / "out" / "qa_pairs.jsonl",
        summary_output=root / "out" / "summaries.jsonl",
        manifest_output=root / "out" / "manifest.json",
        root=root,
    )


def write_offline(root: Path, rows: list[dict[str, Any]]) -> BuildPaths:
    paths = paths_in(root)
    paths.offline_dataset.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return paths


def ids(path: Path) -> list[str]:
    return [json.loads(line)["task_id"] for line in path.read_text().split("\n") if line]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=offline_rows(), limit=st.none() | st.integers(0, 6))
def test_counts_add_up_ids_are_stable_and_limit_and_force_behave(
    rows: list[dict[str, Any]], limit: int | None
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        paths = write_offline(root, rows)
        totals = Counter(r["task_type"] for r in rows)
        result = build_dataset(paths, limit=limit)
        expected = {
            split: totals[split] if limit is None else min(limit, totals[split])
            for split in ("qa", "summaries")
        }
        assert result.counts == expected
        manifest = json.loads(paths.manifest_output.read_text())
        assert {s: e["count"] for s, e in manifest["splits"].items()} == expected
        if limit is None:
            assert sum(result.counts.values()) + sum(result.excluded.values()) == len(rows)
            assert result.excluded == {
                t: n for t, n in sorted(totals.items()) if t not in ("qa", "summaries")
            }
        for split, target in paths.outputs().items():
            if not expected[split]:
                # a split without rows is not written: pytest --dataset would reject it
                assert not target.exists()
                continue
            wanted = [r["task_id"] for r in rows if r["task_type"] == split][: expected[split]]
            assert ids(target) == wanted
            for line in filter(None, target.read_text().split("\n")):
                contexts = json.loads(line)["contexts"]
                assert [c.split(" ", 1)[0] for c in contexts] == [
                    f"[{i}]" for i in range(1, len(contexts) + 1)
                ]

        def contents() -> dict[str, bytes | None]:
            return {s: t.read_bytes() if t.exists() else None for s, t in paths.outputs().items()}

        before = contents()
        with pytest.raises(ConfigError, match="pass --force"):
            build_dataset(paths, limit=limit)
        build_dataset(paths, limit=limit, force=True)
        assert contents() == before
        if sum(expected.values()):
            nonempty = [t for s, t in paths.outputs().items() if expected[s]]
            loaded = load_dataset(nonempty)
            assert len(loaded.records) == sum(expected.values()) and not loaded.rejected


def _peak_bytes(root: Path, count: int) -> int:
    context = "[1] " + "A passage of retrieved text about a statute. " * 20
    row = {
        "task_type": "qa",
        "question": "What does the statute say?",
        "reference_answer": "It says what it says [1].",
        "rag_prompt": "Answer from the context.",
        "contexts": [context, context],
        "sources": ["a", "b"],
        "retrieved": [],
        "citations": [],
        "metadata": {},
    }
    directory = root / str(count)
    directory.mkdir()
    paths = write_offline(directory, [])
    with paths.offline_dataset.open("w") as handle:
        for number in range(count):
            handle.write(json.dumps({"task_id": f"t{number}", **row}) + "\n")
    tracemalloc.start()
    try:
        build_dataset(paths)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


_MEASURE = """
import json, sys
from pathlib import Path
from tests.fuzz.test_builder_properties import _peak_bytes

root = Path(sys.argv[1])
_peak_bytes(root, 5)  # one-time costs (schema compilation, imports) out of the way
print(json.dumps([_peak_bytes(root, 200), _peak_bytes(root, 2000)]))
"""


def test_memory_does_not_grow_with_input_size(tmp_path: Path) -> None:
    # Measured in a child process: tracemalloc counts every thread's allocations, and in a
    # test process other threads (xdist's channel, other tests' servers) allocate at will,
    # tens of kB against a peak of about 40 kB here.
    child = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,  # a hang guard only
    )
    assert child.returncode == 0, child.stderr
    small, large = json.loads(child.stdout)
    # Ten times the input (about 4 MB instead of 0.4 MB): a builder that held the input
    # would peak near ten times higher; a streaming one peaks the same (about 40 kB).
    assert large < 1.5 * small, (small, large)
