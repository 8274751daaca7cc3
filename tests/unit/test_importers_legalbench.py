"""``legalbench``: real task directories (base_prompt.txt, TSVs) in their upstream layout."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

import pytest

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.importers import ImportOptions, get_importer, run_import
from pytest_legaleval.importers.legalbench_prompt import parse_prompt

TASKS = Path(__file__).resolve().parents[1] / "data" / "importers" / "legalbench" / "tasks"


def tsv(task: str, name: str) -> list[dict[str, str]]:
    with (TASKS / task / name).open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


def imported(tmp_path: Path, *args: Any, **options: Any) -> dict[str, dict[str, Any]]:
    out = tmp_path / "lb.jsonl"
    summary = run_import(
        "legalbench", [TASKS, *args], out, options=ImportOptions(**options), force=True
    )
    assert summary.failed == 0, summary.failures
    return {
        json.loads(line)["id"]: json.loads(line)
        for line in out.read_text(encoding="utf-8").split("\n")[:-1]
    }


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    # Our own protocol's prompts; the official protocol's: test_official_legalbench.py.
    return imported(tmp_path_factory.mktemp("lb"), protocol="legalbench")


def test_every_row_of_every_tsv_becomes_a_record(records: dict[str, dict[str, Any]]) -> None:
    expected = {
        f"legalbench:{task.name}:{path.stem}:{n:04d}"
        for task in TASKS.iterdir()
        for path in task.glob("*.tsv")
        for n in range(1, len(tsv(task.name, path.name)) + 1)
    }
    assert set(records) == expected and len(expected) == 29


def test_label_tasks_are_mcq_with_the_labels_as_choices(
    records: dict[str, dict[str, Any]],
) -> None:
    for position, row in enumerate(tsv("abercrombie", "train.tsv"), start=1):
        record = records[f"legalbench:abercrombie:train:{position:04d}"]
        texts = {c["id"]: c["text"] for c in record["choices"]}
        assert list(texts.values()) == ["generic", "descriptive", "suggestive", "arbitrary",
                                        "fanciful"]  # fmt: skip
        assert [texts[i] for i in record["correct_choice_ids"]] == [row["answer"]]
        assert record["metadata"]["license"] == "CC BY 4.0"
        assert record["metadata"]["task_type_upstream"] == "5-way classification"
    hearsay = records["legalbench:hearsay:train:0002"]
    assert [c["text"] for c in hearsay["choices"]] == ["Yes", "No"]
    assert hearsay["correct_choice_ids"] == ["A"] and hearsay["metadata"]["slice"]


def test_zero_shot_prompt_drops_the_demonstrations(records: dict[str, dict[str, Any]]) -> None:
    row = tsv("hearsay", "train.tsv")[0]
    prompt = records["legalbench:hearsay:train:0001"]["prompt"]
    assert prompt == (
        "Hearsay is an out-of-court statement introduced to prove the truth of the matter "
        f"asserted.\n\nQ: {row['text']} Is there hearsay?\nA:"
    )
    assert records["legalbench:hearsay:train:0001"]["metadata"]["prompt_template"] == (
        "base_prompt.txt, zero-shot"
    )


def test_open_tasks_are_reference_qa_and_tsv_quoting_is_read(
    records: dict[str, dict[str, Any]],
) -> None:
    record = records["legalbench:citation_prediction_open:train:0001"]
    assert record["task_type"] == "reference_qa"
    assert record["reference_answers"] == ["Phillips v. AWH Corp."]
    # The cell is quoted in the TSV, with doubled quotes inside.
    assert (
        '"in the context of the entire patent, including the specification."' in (record["prompt"])
    )
    assert "Circuit: Federal Circuit\nCitation:" in record["prompt"]


def test_maud_options_and_multi_block_templates(records: dict[str, dict[str, Any]]) -> None:
    maud = records["legalbench:maud_cor_standard_(superior_offer):train:0001"]
    assert [c["id"] for c in maud["choices"]] == list("ABCDEFGHIJ")
    assert maud["choices"][8]["text"] == "None" and maud["correct_choice_ids"] == ["B"]
    assert "Option J: Other specified standard" in maud["prompt"]
    assert maud["prompt"].count("Answer:") == 1  # the upstream demonstration is gone
    jcrew = records["legalbench:jcrew_blocker:train:0001"]
    assert jcrew["prompt"].endswith("\n\nLabel:") and jcrew["prompt"].count("Provision:") == 1
    supply = records["legalbench:supply_chain_disclosure_best_practice_audits:train:0001"]
    assert supply["prompt"].startswith(tsv("supply_chain_disclosure_best_practice_audits",
                                           "train.tsv")[0]["text"][:40])  # fmt: skip


def test_prerelease_label_column_and_few_shot(tmp_path: Path) -> None:
    test_rows = tsv("hearsay", "test.tsv")  # the pre-release layout: label, text, slice
    found = imported(tmp_path, split="test", few_shot=2, seed=3, protocol="legalbench")
    assert set(found) == {"legalbench:hearsay:test:0001", "legalbench:hearsay:test:0002"}
    record = found["legalbench:hearsay:test:0002"]
    labels = {c["id"]: c["text"] for c in record["choices"]}
    assert [labels[i] for i in record["correct_choice_ids"]] == [test_rows[1]["label"]]
    assert record["metadata"]["prompt_template"] == "base_prompt.txt, 2-shot"
    shots = [line for line in record["prompt"].split("\n") if line.startswith("A: ")]
    assert len(shots) == 2
    again = imported(tmp_path, split="test", few_shot=2, seed=3, protocol="legalbench")
    assert again["legalbench:hearsay:test:0002"]["prompt"] == record["prompt"]
    with pytest.raises(ConfigError, match="only 5 row"):
        imported(tmp_path, split="test", few_shot=9, protocol="legalbench")


def test_prompt_parser() -> None:
    parsed = parse_prompt("Intro.\n\nQ: x?\nA: Yes\n\nQ: {{text}}?\nA:", "p")
    assert parsed.instructions == ("Intro.",) and parsed.demonstrations == 1
    assert parsed.fields == ["text"]
    assert parsed.render({"text": "y"}) == "Intro.\n\nQ: y?\nA:"
    assert parsed.render({"text": "y"}, [{"text": "z", "answer": "No"}]) == (
        "Intro.\n\nQ: z?\nA: No\n\nQ: y?\nA:"
    )
    leading = parse_prompt("{{text}}\n\nQuestion: yes or no?\nAnswer:", "p")
    assert leading.instructions == () and leading.demonstrations == 0
    with pytest.raises(ValueError, match=re.escape("no {{field}} template")):
        parse_prompt("No fields here.", "p")


def test_a_missing_column_fails_the_row_not_the_import(tmp_path: Path) -> None:
    task = tmp_path / "t"
    task.mkdir()
    (task / "base_prompt.txt").write_text("Q: {{text}} {{other}}\nA:", encoding="utf-8")
    (task / "train.tsv").write_text("index\tanswer\ttext\n0\tYes\tfoo\n1\tNo\tbar\n")
    rows = list(get_importer("legalbench").rows([task], ImportOptions()))
    assert [r.error for r in rows] == ["no column 'other', which base_prompt.txt names"] * 2


def test_a_task_without_data_is_counted_as_skipped(tmp_path: Path) -> None:
    task = tmp_path / "scalr"  # upstream ships this task's prompt but no TSV
    task.mkdir()
    (task / "base_prompt.txt").write_text("Question: {{question}}\nAnswer:", encoding="utf-8")
    summary = run_import("legalbench", [tmp_path], tmp_path / "out.jsonl")
    assert (summary.read, summary.written, summary.failed) == (1, 0, 0)
    assert summary.skipped == {"task folder without a TSV file": 1}
