"""Policies: built-in set, fallback, user policies, and prompts that lose nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.grading.policies import PolicyBook, PolicyWarning
from pytest_legaleval.grading.prompts import build_messages
from pytest_legaleval.records import Attachment, Choice, Criterion, Message, Record, SourceRef

BUILT_IN = (
    "default",
    "prbench_v1",
    "apexv1_extended_v1",
    "lexam_oq_v1",
    "lexam_mcq_v1",
    "includebase_default_v1",
    "lar_echr_mcq_v1",
    "rag_qa_v1",
    "rag_summary_v1",
    "lexam",
    "legalbench",
    "ace",
)


def _record(policy: str, tmp_path: Path, **fields: object) -> Record:
    (tmp_path / "brief.txt").write_text("Exhibit A: the lease of 1 May 2020.", encoding="utf-8")
    values: dict[str, object] = {
        "id": f"{policy}-1",
        "dataset": "d",
        "task_type": "rubric_qa",
        "prompt": "FINAL QUESTION: is the clause valid?",
        "context": "CONTEXT: clause 12 excludes all liability.",
        "messages": (
            Message("system", "SYSTEM TURN of the record"),
            Message("user", "FIRST USER TURN"),
            Message("assistant", "FIRST ASSISTANT TURN"),
            Message("user", "FINAL QUESTION: is the clause valid?"),
        ),
        "attachments": (Attachment("brief.txt", "text", "Brief"),),
        "rubric": (Criterion("c1", "t"),),
        "metadata": {"policy_id": policy, "task_domain": "Tenancy law"},
        "source": SourceRef(path=str(tmp_path / "data.jsonl"), index=0),
    }
    values.update(fields)
    return Record(**values)  # type: ignore[arg-type]


def test_every_built_in_policy_loads_with_a_content_hash() -> None:
    book = PolicyBook()
    assert set(BUILT_IN) <= set(book.ids)
    hashes = {book.get(p).sha256 for p in BUILT_IN}
    assert len(hashes) == len(BUILT_IN)
    assert book.get("prbench_v1").system_prompt is None
    assert book.get("apexv1_extended_v1").judge.criterion_format == "result"
    assert book.get("lexam_oq_v1").judge.reference_step == 0.1
    assert book.get("lexam_mcq_v1").answer_contract == "json"


@pytest.mark.parametrize("policy", BUILT_IN)
def test_prompt_snapshot_keeps_every_turn_context_and_attachment(
    policy: str, tmp_path: Path
) -> None:
    book = PolicyBook()
    record = _record(policy, tmp_path)
    messages = build_messages(record, book.for_record(record))
    roles = [m["role"] for m in messages]
    text = "\n".join(m["content"] for m in messages)
    # every turn, in order, the final question once, with its context and the attachment
    assert roles[-4:] == ["system", "user", "assistant", "user"]
    for piece in ("SYSTEM TURN", "FIRST USER TURN", "FIRST ASSISTANT TURN", "CONTEXT: clause 12"):
        assert piece in text
    assert text.count("FINAL QUESTION") == 1
    assert "Exhibit A: the lease of 1 May 2020." in messages[-1]["content"]
    assert "CONTEXT: clause 12" in messages[-1]["content"]
    system = book.get(policy).system_prompt
    if system:
        assert messages[0] == {"role": "system", "content": system.strip()}
    else:
        assert messages[0]["content"] == "SYSTEM TURN of the record"


def test_apex_scaffold_sections(tmp_path: Path) -> None:
    book = PolicyBook()
    record = _record("apexv1_extended_v1", tmp_path)
    last = build_messages(record, book.for_record(record))[-1]["content"]
    positions = [last.index(h) for h in ("Inputs:", "Task Domain:", "Task Prompt:", "Attachments:")]
    assert positions == sorted(positions)
    assert "Task Domain: Tenancy law" in last


def test_mcq_choices_and_answer_contract(tmp_path: Path) -> None:
    book = PolicyBook()
    record = _record(
        "lexam_mcq_v1",
        tmp_path,
        task_type="mcq",
        rubric=(),
        choices=(Choice("A", "valid"), Choice("B", "void")),
        correct_choice_ids=("B",),
    )
    last = build_messages(record, book.for_record(record))[-1]["content"]
    assert "A) valid" in last and "B) void" in last
    assert '{"answer": ["<letter>"]}' in last


def test_unknown_policy_falls_back_to_default_with_one_warning(tmp_path: Path) -> None:
    book = PolicyBook()
    record = _record("no_such_policy", tmp_path)
    with pytest.warns(PolicyWarning, match="no_such_policy"):
        assert book.for_record(record).id == "default"
    with pytest.warns() as caught:
        import warnings

        warnings.warn("sentinel", UserWarning, stacklevel=1)
        assert book.for_record(record).id == "default"
    assert [str(w.message) for w in caught] == ["sentinel"]  # warned once only


def test_user_policy_extends_a_built_in(tmp_path: Path) -> None:
    (tmp_path / "strict.yaml").write_text(
        "id: strict_lexam\nextends: lexam_oq_v1\npass_threshold: 0.8\n", encoding="utf-8"
    )
    book = PolicyBook(str(tmp_path))
    strict = book.get("strict_lexam")
    assert strict.pass_threshold == 0.8
    assert strict.judge.reference_step == 0.1
    assert strict.system_prompt == book.get("lexam_oq_v1").system_prompt
    assert strict.sha256 != book.get("lexam_oq_v1").sha256


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("id: x\nuser_template: '$prompt $nope'\n", "unknown placeholders ['nope']"),
        ("id: x\npass_threshold: 2\n", "pass_threshold"),
        ("id: x\ncolour: red\n", "unknown policy keys ['colour']"),
        ("id: x\nextends: missing\n", "extends unknown policy 'missing'"),
        ("id: x\njudge: {criterion_format: stars}\n", "criterion_format"),
        ("- not a mapping\n", "holds a mapping"),
    ],
)
def test_bad_user_policies_are_config_errors(tmp_path: Path, text: str, fragment: str) -> None:
    (tmp_path / "bad.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=r"bad\.yaml") as info:
        PolicyBook(str(tmp_path))
    assert fragment in str(info.value)


def test_rag_records_reach_the_model_with_their_prompt_and_numbered_contexts() -> None:
    from pytest_legaleval.formats import load_dataset

    repo = Path(__file__).resolve().parents[2]
    record = load_dataset([str(repo / "examples" / "rag" / "qa_pairs.jsonl")], "auto").records[0]
    book = PolicyBook()
    messages = build_messages(record, book.for_record(record))
    assert messages[0] == {"role": "system", "content": record.metadata["rag"]["rag_prompt"]}
    assert "[1] Personal data must be processed lawfully" in messages[-1]["content"]
    assert "[2] Processing is lawful only if" in messages[-1]["content"]
    assert record.prompt in messages[-1]["content"]
