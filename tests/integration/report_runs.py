"""A real multi-model run that has everything a reviewer's report must show.

Three models answer live through the mock server, one LLM judge grades the open and rubric
records. The run holds passes and wrong answers on which the models disagree, a reply with
no extractable answer, rubric records with a per-criterion verdict and long judge
rationales, a scanned PDF attachment (``no text layer`` warning), a judge error, a
generation error, an invalid record and a skipped record. ``reviewer_run`` drives the
session with pytester, as the other integration tests do.

``tests/data/report/run_v0`` is this run as the code of before the count vocabulary wrote
it (kept to prove that old run directories stay readable).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from pytest_legaleval.testing.mock_openai import MockOpenAIServer, prompt_text

from .conftest import mcq_row, run_dirs, write_jsonl

MODELS = ("openai/alpha", "openai/beta", "openai/gamma")
HOSTILE = '<script>document.title="pwned"</script><img src=x onerror="alert(1)"> & "q"'

# (record marker, model short name) -> the candidate's reply; "*" is every model.
_ANSWERS: dict[tuple[str, str], str] = {
    ("Question mq1?", "alpha"): "Answer: B",
    ("Question mq1?", "beta"): "Answer: B",
    ("Question mq1?", "gamma"): "Answer: C",
    ("Question mq2?", "*"): "Answer: A",
    ("Question mq3?", "*"): "Answer: A",
    ("Question mq4?", "alpha"): "I cannot tell which option is right.",
    ("Question mq4?", "*"): "The answer is (C).",
    ("Question mq5?", "*"): f"{HOSTILE} Answer: D",
    ("Open question ref1", "*"): "GOOD: liability for fault in negotiations.",
    ("Open question ref1", "gamma"): "BAD: a tort of nuisance.",
    ("Open question ref2", "*"): "GOOD: the scanned lease governs.",
    ("Open question ref3", "beta"): "WOBBLY: perhaps.",
    ("Open question ref3", "*"): "GOOD: it is culpa in contrahendo.",
}

_CRITERIA = {
    "CRIT-STATUTE": ("Cites Art. 271 OR", 3),
    "CRIT-NOTICE": ("Mentions the notice period", 1),
    "CRIT-INVENTED": ("Invents a case", -2),
}


def _rubric_answer(model: str) -> str:
    body = (
        "# Advice to the landlord\n\n## Short answer\n\nYes, the notice is valid, "
        "provided the statutory form is used.\n\n## Reasons\n\n"
    )
    if model == "alpha":
        body += "Art. 271 OR governs abusive notices; the notice period of three months runs "
        body += "from the next quarter day. [ALPHA]\n" + "The tenant may object. " * 40
    elif model == "beta":
        body += "The notice period is three months. See Smith v. Jones (invented). [BETA]\n"
    else:
        body += "It depends. [GAMMA]\n" + "Further analysis would be needed. " * 30
    return body


def _met(title: str, answer: str) -> dict[str, Any]:
    statute = "Art. 271 OR" in answer
    notice = "notice period" in answer
    invented = "invented" in answer
    met = {"CRIT-STATUTE": statute, "CRIT-NOTICE": notice, "CRIT-INVENTED": invented}[title]
    why = (
        f"The answer {'does' if met else 'does not'} satisfy {title}. "
        "First, the criterion asks for a specific element. "
        "Second, the candidate's text was read in full, including its reasons section. "
        f"Third, {'the element is stated explicitly' if met else 'the element is absent'}; "
        f"quoting it: {HOSTILE}"
    )
    return {"met": met, "rationale": why}


def reply(body: dict[str, Any]) -> str | dict[str, Any] | None:
    """The mock server's answer to a candidate or judge request of the review run."""
    prompt = prompt_text(body.get("messages"))
    model = str(body.get("model") or "").rsplit("/", 1)[-1]
    if "met" in prompt and "CRIT-" in prompt:  # a rubric judge call: one criterion each
        title = next(t for t in _CRITERIA if t in prompt)
        return json.dumps(_met(title, prompt))
    graded = re.search(r"(?:Answer to grade|Student answer):\n+(GOOD|BAD|WOBBLY)", prompt)
    if graded:
        return {
            "GOOD": json.dumps({"score": 0.9, "verdict": "correct", "rationale": "matches"}),
            "BAD": json.dumps({"score": 0.1, "verdict": "incorrect", "rationale": "nuisance"}),
            "WOBBLY": "I think it is fine, probably.",
        }[graded.group(1)]
    if "Rubric task" in prompt:
        return _rubric_answer(model)
    if "Question mq6?" in prompt and model == "gamma":
        return {"status": 400, "content": "this model refuses the request"}
    for (marker, who), answer in _ANSWERS.items():
        if marker in prompt and who == model:
            return answer
    for (marker, who), answer in _ANSWERS.items():
        if marker in prompt and who == "*":
            return answer
    return None  # the server's default reply


def _pdf_without_text(path: Path) -> Path:
    """A one-page PDF whose page has no text layer (like a scan)."""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
        b"<< /Length 0 >>\nstream\n\nendstream",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    path.write_bytes(bytes(out))
    return path


def _reference(record_id: str, **extra: Any) -> dict[str, Any]:
    row = {
        "schema_version": "legal_eval_v1",
        "id": record_id,
        "dataset": "casebook",
        "task_type": "reference_qa",
        "prompt": f"Open question {record_id}: what is culpa in contrahendo?",
        "reference_answers": ["Liability for fault in contract negotiations."],
    }
    row.update(extra)
    return row


def _rubric(record_id: str) -> dict[str, Any]:
    return {
        "schema_version": "legal_eval_v1",
        "id": record_id,
        "dataset": "casebook",
        "task_type": "rubric_qa",
        "prompt": f"Rubric task {record_id}: advise the landlord on the notice.",
        "rubric": [
            {"id": "statute", "title": "CRIT-STATUTE", "weight": 3},
            {"id": "notice", "title": "CRIT-NOTICE", "weight": 1},
            {"id": "invented", "title": "CRIT-INVENTED", "weight": -2},
        ],
    }


def dataset_rows(root: Path) -> list[dict[str, Any]]:
    """Fourteen records: six MCQ, three open, two rubric, one skipped, one invalid."""
    (root / "docs").mkdir(exist_ok=True)
    _pdf_without_text(root / "docs" / "scan.pdf")
    return [
        mcq_row("mq1", dataset="casebook"),
        mcq_row("mq2", correct="A", dataset="casebook"),
        mcq_row("mq3", correct="D", dataset="casebook"),
        mcq_row("mq4", correct="C", dataset="casebook"),
        mcq_row("mq5", correct="D", dataset="casebook"),
        mcq_row("mq6", correct="A", dataset="casebook"),
        _reference("ref1"),
        _reference("ref2", attachments=[{"path": "docs/scan.pdf", "kind": "pdf"}]),
        _reference("ref3"),
        _rubric("rub1"),
        _rubric("rub2"),
        mcq_row("skipme", dataset="casebook"),
        mcq_row("bad", dataset="casebook", choices=[{"id": "A", "text": "only"}], correct="A"),
    ]


SKIP_CONFTEST = """
import pytest

def pytest_collection_modifyitems(items):
    for item in items:
        if "skipme" in item.nodeid:
            item.add_marker(pytest.mark.skip(reason="excluded by the reviewer"))
"""


def reviewer_run(
    pytester: pytest.Pytester, server: MockOpenAIServer, *extra: str
) -> tuple[Path, pytest.RunResult]:
    """Run the review dataset with the three models; returns the run directory and result.

    ``server`` answers with :func:`reply` (as candidate and as judge).
    """
    pytester.makeconftest(SKIP_CONFTEST)
    data = write_jsonl(pytester.path / "review.jsonl", dataset_rows(pytester.path))
    models = [arg for model in MODELS for arg in ("--model", model)]
    result = pytester.runpytest(
        "--dataset", str(data), *models, "--base-url", server.base_url,
        "--judge-model", "openai/judge", "--judge-reasks", "0",
        "--retry-delays", "0.01,0.02", "--run-dir", "runs", *extra,
    )  # fmt: skip
    (run,) = run_dirs(pytester.path / "runs")
    return run, result


# -- a large run, written directly (the report's reading is under test, not the session) ---

_WORDS = (
    "the tenant landlord notice period contract clause statute court held that article "
    "liability damages breach good faith negotiation pursuant to under Swiss law obligations "
    "however therefore the claim fails because requirement of form written consent party "
    "remedy termination rent deposit appeal federal tribunal precedent analysis"
).split()


def _texts(count: int, length: int, seed: int) -> list[str]:
    import random

    rng = random.Random(seed)
    out = []
    for n in range(count):
        words: list[str] = [f"## Answer {n}\n\n"]
        size = 0
        while size < length:
            word = rng.choice(_WORDS)
            words.append(word + ("\n\n" if rng.random() < 0.02 else " "))
            size += len(words[-1])
        out.append("".join(words))
    return out


def write_scale_run(
    root: Path, *, items: int = 50_000, models: int = 8, answer_chars: int = 3000,
    reviewer: bool = False,
) -> Path:  # fmt: skip
    """A finished run directory of ``items`` real-shaped prediction lines (no session).

    A quarter of the records are rubric records (ten criteria, a judge's reason each); the
    answers are ``answer_chars`` long; about 30 % fail, 2 % are judge errors, 1 % have an
    attachment warning. Built from ``run_v0``'s line shapes. With ``reviewer``, the run
    also has what the item view shows: ``input_dataset.json`` (prompts of 600 to 1,800
    characters, four choices or a reference answer or the rubric) and ``transcripts.jsonl``
    (the messages sent, the reply, a judge call per criterion).
    """
    run = root / "run_scale"
    run.mkdir(parents=True)
    names = [f"provider/model-{m}" for m in range(models)]
    answers = _texts(64, answer_chars, 1)
    reasons = _texts(16, 280, 2)
    manifest = {"run_id": "run_scale", "status": "completed_with_failures", "models": names}
    (run / "run_manifest.json").write_text(json.dumps(manifest))
    with (run / "predictions.jsonl").open("w", encoding="utf-8") as out:
        for n in range(items):
            record, model = n // models, names[n % models]
            rubric = record % 4 == 0
            failed = (n * 7919) % 10 < 3
            error = (n * 104729) % 50 == 0
            line: dict[str, Any] = {
                "item_id": f"test_suite.py::test_record[big/r{record}-{model}]",
                "record_id": f"big:r{record:06d}", "dataset": "big", "dataset_id": "big",
                "task_type": "rubric_qa" if rubric else "reference_qa", "model": model,
                "outcome": "error" if error else ("failed" if failed else "passed"),
                "passed": None if error else not failed,
                "score": None if error else (0.2 if failed else 0.9),
                "reason": "judge_error" if error else ("below_threshold" if failed else "correct"),
                "explanation": "judge score 0.20 < threshold 0.50. " + reasons[n % 16][:200],
                "model_response": f"[{record}/{model}] " + answers[n % 64],
                "latency_ms": 800.0 + (n % 997), "tags": [], "metadata": {},
                "details": {"threshold": 0.5}, "judge": None, "policy_id": "default",
            }  # fmt: skip
            if n % 100 == 1:
                line["details"]["attachment_warnings"] = ["lease.pdf: cut at 100,000 characters"]
            if rubric and not error:
                criteria = [
                    {"id": f"c{i}", "title": f"Criterion {i}: " + reasons[i][:60],
                     "weight": 5.0 - i, "met": float((n + i) % 3 != 0),
                     "rationale": reasons[(n + i) % 16]}
                    for i in range(10)
                ]  # fmt: skip
                line["details"]["criteria"] = criteria
                line["judge"] = {
                    "models": ["judge/j"], "kind": "rubric", "score": line["score"],
                    "verdicts": [{"model": "judge/j", "criteria": [
                        {"id": c["id"], "met": bool(c["met"]), "rationale": c["rationale"]}
                        for c in criteria
                    ]}],
                }  # fmt: skip
            out.write(json.dumps(line, ensure_ascii=False) + "\n")
    if reviewer:
        _write_reviewer_files(run, items // models, names, answers, reasons)
    return run


def _scale_record(record: int, prompts: list[str], reasons: list[str]) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "id": f"big:r{record:06d}", "dataset": "big",
        "prompt": f"Question {record}. " + prompts[record % len(prompts)],
        "context": "", "messages": [], "attachments": [], "choices": [],
        "correct_choice_ids": [], "rubric": [], "reference_answers": [],
        "required_criteria": [], "tags": [], "expected": {}, "metadata": {},
    }  # fmt: skip
    if record % 4 == 0:
        payload["task_type"] = "rubric_qa"
        payload["rubric"] = [
            {"id": f"c{i}", "title": f"Criterion {i}: " + reasons[i][:60], "weight": 5.0 - i}
            for i in range(10)
        ]
    else:
        payload["task_type"] = "reference_qa"
        payload["reference_answers"] = [reasons[record % 16][:300]]
    return {"index": record, "record_id": payload["id"], "dataset_id": "big", "payload": payload}


def _write_reviewer_files(
    run: Path, records: int, names: list[str], answers: list[str], reasons: list[str]
) -> None:
    prompts = _texts(32, 1200, 3)
    with (run / "input_dataset.json").open("w", encoding="utf-8") as out:
        head = {"run_id": "run_scale", "mode": "inline", "datasets": [], "record_count": records}
        out.write(json.dumps(head)[:-1] + ', "records": [\n')
        for record in range(records):
            line = json.dumps(_scale_record(record, prompts, reasons), ensure_ascii=False)
            out.write(("" if record == 0 else ",\n") + line)
        out.write("\n]}\n")
    system = "You are a careful Swiss lawyer. Answer the question; cite the statutes."
    with (run / "transcripts.jsonl").open("w", encoding="utf-8") as out:
        for n in range(records * len(names)):
            record, model = n // len(names), names[n % len(names)]
            judge = [
                {"model": "judge/j", "criterion_id": f"c{i}" if record % 4 == 0 else None,
                 "messages": [{"role": "system", "content": "Grade the answer. " + reasons[i]},
                              {"role": "user", "content": prompts[record % 32][:400]}],
                 "reply": reasons[(n + i) % 16]}
                for i in range(10 if record % 4 == 0 else 1)
            ]  # fmt: skip
            line = {
                "item_id": f"test_suite.py::test_record[big/r{record}-{model}]",
                "record_id": f"big:r{record:06d}", "model": model, "epoch": 0,
                "request": {"messages": [{"role": "system", "content": system},
                                         {"role": "user", "content": prompts[record % 32]}],
                            "params": {"temperature": 0.0, "max_tokens": 2048}},
                "reply": f"[{record}/{model}] " + answers[n % 64], "judge": judge,
                "truncated": False,
            }  # fmt: skip
            out.write(json.dumps(line, ensure_ascii=False) + "\n")


# -- a reviewer's run directory, written by hand (what the item view reads) ----------------

LEASE_PROMPT = "Which article governs the termination of a residential lease? " + HOSTILE
LEASE_CHOICES = ("Art. 266a OR", "Art. 271 OR <b>abusive</b>", "Art. 41 OR", "Art. 1 ZGB")
GIP_RUBRIC = (
    ("2d318e18-8d8e-40b1-b7a8-39ded8ed0f52", "Mentions the law n°2011-525 of May 17, 2011", 10.0),
    ("653be4fa-008d-463d-be79-15d2a946ba77", "Mentions the Decree n°2013-292 on GIP staff", 9.0),
    ("f2025f74-1c61-4025-980c-1f0f8fddea22", "Invents a decision of the Conseil d'État", -5.0),
)
REVIEW_MODELS = ("openai/m1", "openai/m2")
DEPOSIT = (("A", 3), ("B", 6), ("C", 1), ("D", 2))


def _payload(record_id: str, task_type: str, prompt: str, **extra: Any) -> dict[str, Any]:
    payload = {
        "id": record_id, "dataset": "review", "task_type": task_type, "prompt": prompt,
        "context": "", "messages": [], "attachments": [], "choices": [],
        "correct_choice_ids": [], "rubric": [], "reference_answers": [],
        "required_criteria": [], "tags": [], "expected": {}, "metadata": {},
    }  # fmt: skip
    payload.update(extra)
    return payload


def _review_records() -> list[dict[str, Any]]:
    choices = [{"id": c, "text": t} for c, t in zip("ABCD", LEASE_CHOICES, strict=True)]
    return [
        _payload("q-lease", "mcq", LEASE_PROMPT, choices=choices, correct_choice_ids=["B"]),
        _payload("q-deposit", "mcq", "How many months of rent may a deposit be at most?",
                 choices=[{"id": c, "text": f"{n} months"} for c, n in DEPOSIT],
                 correct_choice_ids=["A"]),
        _payload("q-epochs", "mcq", "Is a verbal notice valid for a flat?",
                 choices=[{"id": "A", "text": "yes"}, {"id": "B", "text": "no"}],
                 correct_choice_ids=["B"]),
        _payload("r-gip", "rubric_qa", "Can a French GIP recruit staff under private law?",
                 rubric=[{"id": i, "title": t, "weight": w} for i, t, w in GIP_RUBRIC]),
        _payload("ref-culpa", "reference_qa", "What is culpa in contrahendo?",
                 context="Swiss law of obligations, pre-contractual duties.",
                 messages=[{"role": "user", "content": "I negotiate a lease."},
                           {"role": "assistant", "content": "Go on."}],
                 reference_answers=["Liability for fault in contract negotiations."]),
    ]  # fmt: skip


def _prediction(record: str, model: str, outcome: str, reason: str, **extra: Any) -> dict:
    line: dict[str, Any] = {
        "run_id": "run_review", "item_id": f"test_suite.py::test_record[review/{record}-{model}]",
        "record_id": record, "dataset": "review", "model": model, "outcome": outcome,
        "passed": {"passed": True, "failed": False}.get(outcome), "reason": reason,
        "score": {"passed": 1.0, "failed": 0.0}.get(outcome), "explanation": reason,
        "model_response": f"{record} by {model}", "latency_ms": None, "details": {},
        "judge": None,
    }  # fmt: skip
    line.update(extra)
    return line


def _mcq(record: str, model: str, chosen: list[str], correct: str, epoch: int | None = None):
    right = chosen == [correct]
    line = _prediction(
        record, model, "passed" if right else "failed",
        "correct" if right else ("wrong_answer" if chosen else "no_answer"),
        task_type="mcq", grader="mcq",
        model_response=f"My answer is {', '.join(chosen) or 'unclear'} ({model}).",
        details={"chosen": chosen, "correct": [correct]},
    )  # fmt: skip
    if epoch is not None:
        line["epoch"] = epoch
        line["model_response"] += f" epoch {epoch}"
    return line


def _gip(model: str, mets: tuple[float, ...], judged: bool) -> dict[str, Any]:
    """A replayed rubric item: criteria by id only; ``judged`` adds a judge's verdicts."""
    reasons = ("The answer cites Law 2011-525 in full.", "", "No decision is invented.")
    criteria = [
        {"id": cid, "weight": weight, "met": met, "rationale": reason}
        for (cid, _, weight), met, reason in zip(GIP_RUBRIC, mets, reasons, strict=True)
    ]
    passed = sum(m * w for (_, _, w), m in zip(GIP_RUBRIC, mets, strict=True)) >= 10
    line = _prediction(
        "r-gip", model, "passed" if passed else "failed",
        "correct" if passed else "below_threshold", task_type="rubric_qa",
        grader="judge:rubric", score=0.9 if passed else 0.4,
        explanation="replayed: minmax score, scored over all 3 criteria",
        details={"threshold": 0.7, "criteria": criteria,
                 "replayed_from": {"file": "judgments.jsonl", "line": 1, "format": "lbr"}},
    )  # fmt: skip
    if judged:
        line["judge"] = {"models": ["judge/j"], "kind": "rubric", "verdicts": [
            {"model": "judge/j", "criteria": [
                {"id": c["id"], "met": bool(c["met"]), "rationale": c["rationale"]}
                for c in criteria]}]}  # fmt: skip
    return line


def review_lines(variant: str) -> list[dict[str, Any]]:
    """The prediction lines of run ``a`` or of run ``b`` (the candidate, some flipped)."""
    m1, m2 = REVIEW_MODELS
    b = variant == "b"
    lines = [
        _mcq("q-lease", m1, ["B"] if b else ["C"], "B"),
        _mcq("q-lease", m2, ["B"], "B"),
        _mcq("q-deposit", m1, ["C"] if b else ["A"], "A"),
        _mcq("q-deposit", m2, [], "A"),
        *(_mcq("q-epochs", m1, [c], "B", epoch=e) for e, c in enumerate("BAB")),
        *(_mcq("q-epochs", m2, [c], "B", epoch=e) for e, c in enumerate("AAB")),
        _gip(m1, (1.0, 0.0, 0.0), judged=False),
        _gip(m2, (1.0, 1.0, 0.0), judged=True),
        _prediction("ref-culpa", m1, "failed", "below_threshold", task_type="reference_qa",
                    score=0.2, model_response="A tort of nuisance.",
                    explanation="judge score 0.20 < threshold 0.50",
                    details={"threshold": 0.5}),
    ]  # fmt: skip
    if b:
        lines.append(
            _prediction("ref-culpa", m2, "passed", "correct", task_type="reference_qa",
                        score=0.9, model_response="Fault in negotiations.",
                        details={"threshold": 0.5})
        )  # fmt: skip
    else:
        lines.append(
            _prediction("ref-culpa", m2, "error", "judge_error", task_type="reference_qa",
                        model_response="Liability for fault while negotiating.",
                        explanation="the judge's reply could not be parsed: 'probably'")
        )  # fmt: skip
    return lines


def _transcript(line: dict[str, Any], number: int) -> dict[str, Any]:
    record = line["record_id"]
    judge = []
    if record == "r-gip":
        judge = [
            {"model": "judge/j", "criterion_id": cid,
             "messages": [{"role": "system", "content": "Grade one criterion."},
                          {"role": "user", "content": f"Criterion: {title}\nAnswer: ..."}],
             "reply": '{"met": true}' if n == 0 else None}
            for n, (cid, title, _) in enumerate(GIP_RUBRIC)
        ]  # fmt: skip
    sent = f"TEMPLATED PROMPT of {record}: answer with a letter. " + HOSTILE
    return {
        "item_id": line["item_id"] if number % 3 else "", "record_id": record,
        "model": line["model"], "epoch": line.get("epoch", 0),
        "request": {"messages": [{"role": "system", "content": "You are a lawyer."},
                                 {"role": "user", "content": sent}],
                    "params": {"temperature": 0.0, "seed": 7}},
        "reply": line["model_response"] if number % 2 else f"RAW REPLY of {record}",
        "judge": judge, "truncated": number == 1,
    }  # fmt: skip


def write_review_dir(root: Path, variant: str = "a", *, transcripts: bool = True) -> Path:
    """A finished run directory with what the item view reads, written by hand.

    Five records (two MCQ, an MCQ with three epochs, a replayed PRBench-like rubric whose
    criteria the lines name by id only, a reference question with context and earlier
    turns) × two models; ``input_dataset.json`` inline; with ``transcripts``, a
    ``transcripts.jsonl`` line for every shown item but ``ref-culpa``×``m2`` (some matched
    by item id, some by record, model and epoch; the first cut to the runner's bound).
    """
    run = root / f"run_review_{variant}"
    run.mkdir(parents=True)
    manifest = {"run_id": run.name, "status": "completed_with_failures",
                "models": list(REVIEW_MODELS), "datasets": []}  # fmt: skip
    (run / "run_manifest.json").write_text(json.dumps(manifest))
    records = [
        {"index": n, "record_id": p["id"], "dataset_id": "review", "payload": p}
        for n, p in enumerate(_review_records())
    ]
    head = {"run_id": run.name, "mode": "inline", "datasets": [], "record_count": len(records)}
    (run / "input_dataset.json").write_text(json.dumps({**head, "records": records}, indent=2))
    lines = review_lines(variant)
    write_jsonl(run / "predictions.jsonl", lines)
    if transcripts:
        shown = [
            line for line in lines
            if (line["record_id"], line["model"]) != ("ref-culpa", REVIEW_MODELS[1])
        ]  # fmt: skip
        write_jsonl(run / "transcripts.jsonl", [_transcript(x, n) for n, x in enumerate(shown, 1)])
    return run
