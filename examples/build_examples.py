"""Rebuild the bundled examples from the shared public data (run from the repo root).

    python examples/build_examples.py ../shared/data

The responses are illustrative answers written by this script in the styles real models
use (JSON, "Answer: B", bold letters, prose); about two thirds are correct. They are not
the output of any model.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

HERE = Path(__file__).parent


def _rows(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _pick_mcq(rows: list[dict], n_options: int, language: str | None, k: int) -> list[dict]:
    out = [r for r in rows if r["task_type"] == "mcq" and len(r["choices"]) == n_options
           and (language is None or r["metadata"].get("language") == language)]
    return out[:k]


STYLES = (
    'Answer: {ids}',
    '{{"answer": {json_ids}}}',
    'Looking at each statement in turn, the correct option is **{ids}**.',
    'The correct answer is {ids}.',
    'Antwort: {ids}',
    '({ids_lower})',
)


def _response(row: dict, rng: random.Random, correct: bool) -> str:
    ids = [c["id"] for c in row["choices"]]
    chosen = list(row["correct_choice_ids"])
    if not correct:
        wrong = [i for i in ids if i not in chosen]
        chosen = [rng.choice(wrong)]
    style = rng.choice(STYLES if len(chosen) == 1 else STYLES[:2] + STYLES[3:5])
    return style.format(ids=", ".join(chosen), json_ids=json.dumps(chosen),
                        ids_lower=", ".join(c.lower() for c in chosen))


def main(shared: Path) -> None:
    lexam = _rows(shared / "lexam.jsonl")
    legalbench = _rows(shared / "legalbench.jsonl")
    mcq = (_pick_mcq(lexam, 4, "en", 6) + _pick_mcq(lexam, 4, "de", 4)
           + _pick_mcq(lexam, 8, None, 2) + _pick_mcq(lexam, 16, None, 2)
           + [r for r in legalbench if r["task_type"] == "mcq"][:6])
    rng = random.Random(7)
    with (HERE / "legal_mcq.jsonl").open("w", encoding="utf-8") as out, \
            (HERE / "legal_mcq.responses.jsonl").open("w", encoding="utf-8") as resp:
        for i, row in enumerate(mcq):
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
            text = _response(row, rng, correct=i % 3 != 2)
            if i == len(mcq) - 1:
                text = "I am not able to determine which statements are correct."
            resp.write(json.dumps({"record_id": row["id"], "response": text,
                                   "model": "example-model"}, ensure_ascii=False) + "\n")
    reference = [r for r in legalbench if r["task_type"] == "reference_qa"][:6]
    document = {
        "dataset_id": "legalbench_rule_qa_sample",
        "dataset_version": "2024-01-pre-release",
        "schema_version": "1.0",
        "created_at": "2026-11-22T00:00:00Z",
        "metadata": {"owner": "pytest-legaleval examples", "source": "HazyResearch/legalbench",
                     "license": "CC-BY-4.0"},
        "records": [
            {"record_id": r["id"].replace(":", "_"), "input": {"prompt": r["prompt"]},
             "reference": {"answer": r["reference_answers"][0]},
             "tags": [r["metadata"].get("task", "legalbench")],
             "expected": {"max_latency_ms": 30000, "required_criteria": ["accuracy"]},
             "metadata": {k: r["metadata"][k] for k in ("source_repo", "source_path",
                                                         "license", "original_id")}}
            for r in reference
        ],
    }
    (HERE / "contract_reference.json").write_text(
        json.dumps(document, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    ace = _rows(shared / "ace_rubrics.jsonl")[:3]
    open_q = [r for r in lexam if r["task_type"] == "reference_qa"][:3]
    with (HERE / "legal_judged.jsonl").open("w", encoding="utf-8") as out:
        for row in open_q + ace:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/data"))
