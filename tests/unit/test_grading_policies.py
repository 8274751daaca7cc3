"""Policies: built-in set, LBR's ids as LBR's behaviour, user policies, verbatim prompts."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.grading._policies import PolicyBook, PolicyWarning
from pytest_legaleval.grading._prompts import build_messages, render, template_version
from pytest_legaleval.records import Attachment, Choice, Criterion, Message, Record, SourceRef

from .. import lbr_run

BUILT_IN = (
    "default",
    "prbench_v1",
    "apexv1_extended_v1",
    "lexam_oq_v1",
    "lexam_mcq_v1",
    "includebase_default_v1",
    "lar_echr_mcq_v1",
    "lbr_default_v1",
    "prbench_paper_v1",
    "rag_qa_v1",
    "rag_summary_v1",
    "lexam",
    "legalbench",
    "ace",
)
LBR_IDS = (
    "prbench_v1",
    "apexv1_extended_v1",
    "lexam_oq_v1",
    "lexam_mcq_v1",
    "includebase_default_v1",
    "lar_echr_mcq_v1",
)
LBR_SYSTEM = (
    "You are a careful legal reasoning assistant. Answer clearly and concisely, state "
    "uncertainty when needed, and avoid fabrication."
)
LBR_JSON = (
    'Return only valid JSON with no markdown. Use this schema exactly: {"answer": '
    '"<choice_id>", "reasoning": "<short text>"}. The answer must be exactly one of the '
    "provided choice IDs."
)
BOOK = PolicyBook()


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


def _mcq(policy: str, tmp_path: Path) -> Record:
    return _record(
        policy,
        tmp_path,
        task_type="mcq",
        rubric=(),
        messages=(),
        attachments=(),
        context="",
        choices=(Choice("A", "valid"), Choice("B", "void")),
        correct_choice_ids=("B",),
    )


def test_every_built_in_policy_loads_with_a_content_hash() -> None:
    assert set(BUILT_IN) <= set(BOOK.ids)
    hashes = {BOOK.get(p).sha256 for p in BUILT_IN}
    assert len(hashes) == len(BUILT_IN)
    assert BOOK.get("default").scoring == "clipped"
    assert BOOK.get("lexam").judge.reference_step == 0.1
    assert BOOK.get("lexam").answer_contract == "json"
    paper = BOOK.get("prbench_paper_v1")
    assert (paper.scoring, paper.judge.criterion_format, paper.system_prompt) == (
        "clipped",
        "criteria_met",
        None,
    )


@pytest.mark.parametrize("policy_id", LBR_IDS)
def test_lbr_ids_carry_lbrs_settings(policy_id: str) -> None:
    policy = BOOK.get(policy_id)
    assert (policy.version, policy.scoring, policy.pass_threshold) == (2, "minmax", 0.7)
    assert policy.on_partial_judge_failure == "error"
    assert policy.answer_contract == "json_single" and policy.mcq_instructions == LBR_JSON
    assert policy.choice_format == "$id. $text"
    expected_system = None if policy_id in ("prbench_v1", "apexv1_extended_v1") else LBR_SYSTEM
    assert policy.system_prompt == expected_system
    judge = policy.judge
    assert (judge.criterion_format, judge.reference_format) == ("grade", "score_pass")
    assert judge.reference_step is None and judge.empty_answer == ""
    assert judge.criterion_system_prompt is not None
    assert judge.criterion_system_prompt.startswith("You are a strict LLM judge.")
    assert policy.provenance() == {
        "policy_id": policy_id,
        "policy_version": 2,
        "policy_sha256": policy.sha256,
        "scoring": "minmax",
        "scoring_version": 1,
        "pass_threshold": 0.7,
    }


# ------------------------------------------------------------------ LBR's run, byte for byte
def test_lbr_generation_prompts_are_lbrs_byte_for_byte() -> None:
    # A request LBR made is in its provider cache under a hash of its exact messages: every
    # request our policies build for its records must be found there (LAR-ECHR and APEX
    # are below: there we send what LBR lost, or read the PDF with another extractor).
    keys = lbr_run.cache_keys()
    candidates = lbr_run.settings()["candidates"]
    missing, checked = [], 0
    for record in lbr_run.records().values():
        policy = BOOK.for_record(record)
        if policy.id in ("lar_echr_mcq_v1", "apexv1_extended_v1"):
            continue
        messages = build_messages(record, policy)
        for name, request in candidates.items():
            checked += 1
            if lbr_run.lbr_cache_key("response", request, messages) not in keys:
                missing.append((record.id, name))
    assert checked == 107 * 4
    # the one generation LBR never got (Mistral capacity error, summary.failed_items)
    (failed,) = lbr_run.summary()["failed_items"]
    assert missing == [(failed["example_id"], failed["candidate_name"])]


def test_lar_echr_sends_the_case_facts_lbr_dropped() -> None:
    keys = lbr_run.cache_keys()
    request = lbr_run.settings()["candidates"]["vercel_openai_gpt_5_2"]
    records = [r for r in lbr_run.records().values() if r.policy_id == "lar_echr_mcq_v1"]
    assert len(records) == 17
    policy = BOOK.get("lar_echr_mcq_v1")
    for record in records:
        ours = build_messages(record, policy)
        # without the context, what we send is exactly what LBR sent
        without = build_messages(dataclasses.replace(record, context=""), policy)
        assert lbr_run.lbr_cache_key("response", request, without) in keys
        assert [m["role"] for m in ours] == ["system", "user", "user", "user"]
        assert ours[1]["content"] == (without[1]["content"] + "\n\nContext:\n" + record.context)
        assert ours[2:] == without[2:]


def test_apex_layout_is_lbrs(tmp_path: Path) -> None:
    record = _record(
        "apexv1_extended_v1",
        tmp_path,
        messages=(),
        context="",
        metadata={"policy_id": "apexv1_extended_v1", "domain": "Legal"},
    )
    (message,) = build_messages(record, BOOK.for_record(record))
    assert message == {
        "role": "user",
        "content": "FINAL QUESTION: is the clause valid?\n\n"
        "You are solving an APEX-style legal evaluation prompt. Use only the provided task "
        "statement and attached materials.\nDomain: Legal\n"
        "==== Attached files content: ====\n\nFile: brief.txt (text)\n"
        "Exhibit A: the lease of 1 May 2020.",
    }


def test_lbr_mcq_prompt_and_json_answer_turn(tmp_path: Path) -> None:
    record = _mcq("lexam_mcq_v1", tmp_path)
    messages = build_messages(record, BOOK.for_record(record))
    assert messages == [
        {"role": "system", "content": LBR_SYSTEM},
        {
            "role": "user",
            "content": "FINAL QUESTION: is the clause valid?\n\nChoices:\nA. valid\nB. void\n\n"
            "Answer with the best option and brief reasoning.",
        },
        {"role": "user", "content": "Select the single best choice from the provided options."},
        {"role": "user", "content": LBR_JSON},
    ]
    # an open question under an LBR policy gets no choices and no JSON turn
    open_question = _record("lexam_oq_v1", tmp_path, messages=(), attachments=(), context="")
    turns = build_messages(open_question, BOOK.for_record(open_question))
    assert [m["content"][:30] for m in turns] == [
        LBR_SYSTEM[:30],
        "FINAL QUESTION: is the clause ",
        "You are a Swiss-law exam exper",
    ]


def test_our_lexam_policy_shows_the_options_and_asks_for_json(tmp_path: Path) -> None:
    record = _mcq("lexam", tmp_path)
    last = build_messages(record, BOOK.for_record(record))[-1]["content"]
    assert "A) valid" in last and "B) void" in last
    assert '{"answer": ["<letter>"]}' in last


# ------------------------------------------------------------------ nothing is lost
@pytest.mark.parametrize("policy", BUILT_IN)
def test_prompt_snapshot_keeps_every_turn_context_and_attachment(
    policy: str, tmp_path: Path
) -> None:
    record = _record(policy, tmp_path)
    messages = build_messages(record, BOOK.for_record(record))
    text = "\n".join(m["content"] for m in messages)
    # every turn of the record, in order, then the policy's user turn(s)
    start = next(i for i, m in enumerate(messages) if m["content"] == "SYSTEM TURN of the record")
    roles = [m["role"] for m in messages[start:]]
    assert roles[:3] == ["system", "user", "assistant"] and set(roles[3:]) == {"user"}
    for piece in ("SYSTEM TURN", "FIRST USER TURN", "FIRST ASSISTANT TURN", "CONTEXT: clause 12"):
        assert piece in text
    assert text.count("FINAL QUESTION") == 1
    turn = messages[start + 3]["content"]
    assert "FINAL QUESTION" in turn and "CONTEXT: clause 12" in turn
    assert "Exhibit A: the lease of 1 May 2020." in turn
    system = BOOK.get(policy).system_prompt
    if system:
        assert messages[0] == {"role": "system", "content": system.strip()}
    else:
        assert start == 0


def test_every_real_lbr_prompt_reaches_the_model_byte_for_byte() -> None:
    records = list(lbr_run.records().values())
    assert len(records) == 125
    with_blank_runs = [r for r in records if "\n\n\n" in r.prompt]
    assert with_blank_runs  # the real data has prompts with 3+ newlines in a row
    for record in records:
        for policy in (BOOK.for_record(record), BOOK.get("default")):
            sent = [m["content"] for m in build_messages(record, policy)]
            assert any(record.prompt in content for content in sent), (record.id, policy.id)
            if record.context:
                assert any(record.context in content for content in sent)
            for choice in record.choices:
                assert any(choice.text in content for content in sent)


texts = st.text(
    st.sampled_from(["a", "B", " ", "\t", "\n", "$", "{", "\x00", "0", "é", "\r"]), min_size=1
).filter(str.strip)


@given(prompt=texts, context=st.one_of(st.just(""), texts), policy_id=st.sampled_from(BUILT_IN))
def test_any_record_text_reaches_the_model_unchanged(
    prompt: str, context: str, policy_id: str
) -> None:
    record = Record(
        id="r",
        dataset="d",
        task_type="mcq",
        prompt=prompt,
        context=context,
        choices=(Choice("A", prompt), Choice("B", "no")),
        correct_choice_ids=("A",),
        metadata={"policy_id": policy_id},
    )
    sent = [m["content"] for m in build_messages(record, BOOK.get(policy_id))]
    assert any(prompt in content for content in sent)
    assert not context or any(context in content for content in sent)


def test_render_lays_out_the_framing_only() -> None:
    values = {"prompt": "  first\n\n\n\nsecond  ", "context_block": "", "tail": "end"}
    template = "Intro\n\n\n$context_block\n\n$prompt\n\n\n$tail\n"
    assert render(template, values) == "Intro\n\n  first\n\n\n\nsecond  \n\nend"
    # a line of empty placeholders goes, a line of framing around an empty value stays
    assert render("a\n$context_block\nb: $context_block\nc", values) == "a\nb: \nc"


# ------------------------------------------------------------------ policy files
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
        "id: strict_prbench\nextends: prbench_v1\npass_threshold: 0.8\n", encoding="utf-8"
    )
    book = PolicyBook(str(tmp_path))
    strict, base = book.get("strict_prbench"), book.get("prbench_v1")
    assert strict.pass_threshold == 0.8 and strict.version == 1  # the version is its own
    assert (strict.scoring, strict.judge, strict.system_prompt) == (
        base.scoring,
        base.judge,
        base.system_prompt,
    )
    assert strict.sha256 != base.sha256
    # only grading changed: answers generated under prbench_v1 are reused
    assert strict.prompt_sha256 == base.prompt_sha256
    assert template_version(strict) != template_version(base)  # (the id is part of it)
    assert strict.template_version().split(":")[1] == base.template_version().split(":")[1]


def test_a_user_policy_can_change_the_scoring_and_partial_failure_rule(tmp_path: Path) -> None:
    (tmp_path / "lenient.yaml").write_text(
        "id: lenient\nversion: 3\nextends: prbench_v1\nscoring: clipped\n"
        "on_partial_judge_failure: score_judged\n",
        encoding="utf-8",
    )
    lenient = PolicyBook(str(tmp_path)).get("lenient")
    assert (lenient.version, lenient.scoring, lenient.on_partial_judge_failure) == (
        3,
        "clipped",
        "score_judged",
    )
    assert lenient.provenance()["scoring"] == "clipped"


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("id: x\nuser_template: '$prompt $nope'\n", "unknown placeholders ['nope']"),
        ("id: x\npass_threshold: 2\n", "pass_threshold"),
        ("id: x\ncolour: red\n", "unknown policy keys ['colour']"),
        ("id: x\nextends: missing\n", "extends unknown policy 'missing'"),
        ("id: x\njudge: {criterion_format: stars}\n", "criterion_format"),
        ("id: x\njudge: {reference_format: stars}\n", "reference_format"),
        ("- not a mapping\n", "holds a mapping"),
        ("id: x\nscoring: mean\n", "scoring must be one of ['minmax', 'clipped']"),
        ("id: x\non_partial_judge_failure: ignore\n", "on_partial_judge_failure"),
        ("id: x\nversion: 0\n", "version must be an integer"),
        ("id: x\nversion: '2'\n", "version must be an integer"),
        ("id: x\nextra_user_turns: 'one'\n", "extra_user_turns must be a list"),
        ("id: x\nextra_user_turns: ['$who']\n", "extra_user_turns[0]: unknown placeholders"),
        ("id: x\nchoice_format: '$id: $label'\n", "choice_format: unknown placeholders"),
        ("id: x\nattachment_style: inline\n", "attachment_style"),
        ("id: x\nanswer_contract: yaml\n", "answer_contract"),
        ("id: x\njudge: {criterion_system_prompt: 3}\n", "criterion_system_prompt"),
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
    messages = build_messages(record, BOOK.for_record(record))
    assert messages[0] == {"role": "system", "content": record.metadata["rag"]["rag_prompt"]}
    assert "[1] Personal data must be processed lawfully" in messages[-1]["content"]
    assert "[2] Processing is lawful only if" in messages[-1]["content"]
    assert record.prompt in messages[-1]["content"]
