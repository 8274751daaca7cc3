"""Write the expected official figures the tests compare ours with (not run by the tests).

The values come from the benchmarks' own code, run once on answers written here:

    python tests/data/official/make_expected.py LEGALBENCH_CHECKOUT LEXAM_CHECKOUT

with checkouts of HazyResearch/legalbench at ce482446b8eac4403b6db2c17223af4514bb24e3
(``evaluation.py`` needs scikit-learn, NumPy and NLTK) and LEXam-Benchmark/LEXam at
487f729e85725e5d3e00c0b25142de1e86cda643 (``evaluation.py``, ``customized_judge_async.py``,
``litellm_eval.py``). Neither is a dependency of the package or of its tests: the JSON
files written here are. The answer forms are ours (exact, cased, punctuated, bracketed,
quoted, prefixed, letters, prose, empty, numbers …), applied to the real sample rows of
``tests/data/importers/legalbench`` and ``tests/data/official/legalbench``.
"""

from __future__ import annotations

import csv
import hashlib
import importlib.util
import json
import random
import re
import string
import sys
import warnings
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SAMPLES = [HERE.parents[0] / "importers" / "legalbench" / "tasks", HERE / "legalbench" / "tasks"]
MAX_ROWS = 40


def forms(gold: str, others: list[str], letter: str, number: int) -> list[str]:
    """Answer forms models write, for one gold label."""
    other = next((o for o in others if o != gold), "Yes")
    half = gold[: max(1, len(gold) // 2)]
    return [
        gold, gold.upper(), gold.lower(), gold.title(), f" {gold} ", f"{gold}.", f"{gold}?",
        f"{gold},", f"({gold})", f"[{gold}]", f'"{gold}"', f"“{gold}”", f"'{gold}'",
        f"Answer: {gold}", f"A: {gold}", f"The answer is {gold}.", f"{gold}\n\nBecause ...",
        letter, f"{letter})", f"Option {letter}", "", " ", "\n", other, f"{other}.",
        f"**{gold}**", f"{gold}\x00", "\x00", str(number), f"${number:,}", f"{gold} {gold}",
        gold.replace(" ", "  "), f"{gold}!", f"<{gold}>", f"{gold}\t", f"İ{gold}", f"{gold}s",
        f"{gold}ing", f"{gold}ed", f"{gold}, {other}", ",".join(others[:3]), f"{gold},{other}",
        half, f"No, {gold}", "N/A", "None", "٣٤٥", f"{gold}\u00a0", f"\u200b{gold}",
        f"{gold} – {other}", f"I think it's {gold.lower()}", f"{gold}\n{other}",
    ]  # fmt: skip


def _load(path: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _float(value: Any) -> float:
    return float(value)


def _safe(evaluate: Any, task: str, gens: list[str], answers: list[str]) -> tuple[Any, Any]:
    try:
        return _float(evaluate(task, gens, answers)), None
    except Exception as exc:  # upstream raises for manual tasks and some answers
        return None, f"{type(exc).__name__}: {exc}"[:200]


def legalbench(checkout: Path) -> dict[str, Any]:
    """Per-item and per-task values of ``evaluation.evaluate`` on the sample rows."""
    up = _load(checkout / "evaluation.py", "lb_evaluation")
    cases = []
    for root in SAMPLES:
        for folder in sorted(p for p in root.iterdir() if p.is_dir()):
            for tsv in sorted(folder.glob("*.tsv")):
                with tsv.open(newline="", encoding="utf-8") as handle:
                    rows = list(csv.DictReader(handle, delimiter="\t"))[:MAX_ROWS]
                if not rows:
                    continue
                column = "answer" if "answer" in rows[0] else "label"
                answers = [row[column] for row in rows]
                labels = sorted(set(answers))
                for set_no in range(8):
                    rng = random.Random(f"{folder.name}:{tsv.stem}:{set_no}")
                    gens = []
                    for i, gold in enumerate(answers):
                        options = forms(gold, labels, rng.choice("ABCDE"), rng.randint(0, 99999))
                        if set_no == 0:
                            gens.append(gold)
                        elif set_no < 4:
                            gens.append(options[(i + set_no * 7) % len(options)])
                        else:
                            gens.append(rng.choice(options))
                    figure, raises = _safe(up.evaluate, folder.name, gens, answers)
                    items = [
                        _safe(up.evaluate, folder.name, [g], [a])[0]
                        for g, a in zip(gens, answers, strict=True)
                    ]
                    cases.append({
                        "task": folder.name, "split": tsv.stem, "sample": root.parent.name,
                        "answers": answers, "generations": gens, "item_scores": items,
                        "figure": figure, "raises": raises,
                    })  # fmt: skip
    cases.extend(_synthetic(up))
    return {
        "upstream": {
            "repo": "HazyResearch/legalbench",
            "commit": "ce482446b8eac4403b6db2c17223af4514bb24e3",
            "file": "evaluation.py",
        },
        "cases": cases,
    }


def _synthetic(up: Any) -> list[dict[str, Any]]:
    """Invented rows for each metric's corners (many labels: NumPy's pairwise mean)."""
    rng = random.Random(0)
    out = []

    def add(task: str, answers: list[str], gens: list[str]) -> None:
        figure, raises = _safe(up.evaluate, task, gens, answers)
        items = [_safe(up.evaluate, task, [g], [a])[0] for g, a in zip(gens, answers, strict=True)]
        case = {"task": task, "split": "synthetic", "sample": "invented", "answers": answers}
        case.update(generations=gens, item_scores=items, figure=figure, raises=raises)
        out.append(case)

    for n_labels, n_rows in ((3, 30), (9, 60), (20, 200), (140, 600)):
        labels = [f"Label {i}" for i in range(n_labels)]
        answers = [rng.choice(labels) for _ in range(n_rows)]
        gens = [
            rng.choice([a, a.upper(), f"{a}.", rng.choice(labels), "", f"{a}\x00"]) for a in answers
        ]
        add("abercrombie", answers, gens)
    add("hearsay", ["Yes", "No", "Yes"], ["yes\x00", "NO!", "İyes"])
    add("successor_liability", ["de facto merger,mere continuation", "express agreement"],
        ["de facto merger, mere continuation", "Express agreement."])  # fmt: skip
    add("sara_numeric", ["$1000", "$0", "$2500", "$99", "$12345"],
        ["$1,050.00 is owed", "nothing", "About 2,400 dollars", "٩٩", "12345 or 99"])  # fmt: skip
    add("citation_prediction_open", ["Roe v. Wade", "Marbury v. Madison"],
        ["See ROE V WADE, 410 U.S. 113", "Madison v. Marbury"])  # fmt: skip
    add("definition_extraction", ["authorize,authorized", "hawkers and peddlers", "relational"],
        ["Authorization", "the term: hawkers and peddler", "relate, conditional"])  # fmt: skip
    add("ssla_plaintiff", ["['Ruth C May', 'Donna E Ledgerwood']", "['Not named']", "A,B,C"],
        ["Ruth C May, Donna Ledgerwood", "not named", "A,A,B,D"])  # fmt: skip
    add("ssla_company_defendants", ["Juniper Networks, Inc.", ""], ["Juniper Networks Inc", "x"])
    add("rule_qa", ["a"], ["a"])
    add("no_such_task", ["a"], ["a"])
    return out


LETTER_FORMS = [
    "Correct Answer: ###{g}###", "###{g}###", "Reasoning ...\n Correct Answer: ###{g}### ",
    "###{o}### then ###{g}###", "###{g}### then ###{o}###", "### {g} ###", "###{gl}###",
    "Correct Answer: {g}", "**{g}**", "", "##{g}##", "####{g}####", "###{g}###{o}###",
    "###{g}###.", "###Z###", "###AB###", "###{g}", "<think>###{o}###</think> ###{g}###",
    "###{n}###", "Correct Answer: ###{g}###\n\n(I considered ###{o}### too)",
]  # fmt: skip
NUMBER_FORMS = [
    "Correct Answer: ###{n}###", "###{n}###", "###0{n}###", "###0###", "###{m}### then ###{n}###",
    "### {n} ###", "###{g}###", "Correct Answer: {n}", "", "###33###", "###１###", "###٣###",
    "###{n}###{m}###", "###-{n}###", "###{n}.###",
]  # fmt: skip
JUDGE_REPLIES = [
    "The correctness score: [[0.5]]", "[[1.0]]", "[[0.0]]", "[[1]]", "[[0.75]]", "[[ 0.5 ]]",
    "Score [[0.3]] then [[0.9]]", "[[1.5]]", "[[0,5]]", "[[0 5]]", "[[0_5]]", "[[٠.٥]]",
    "no grade at all", "", "[[score]]", "[[.5]]", "Grade: 0.8", "[[0.8]]\n", "[[2.0]] [[0.4]]",
    "[[0a5]]", "[[-0.5]]", "[[0.5]", "[[0.9]]] extra", "```[[0.6]]```",
]  # fmt: skip


def lexam(checkout: Path) -> dict[str, Any]:
    """LEXam's extraction and judge grade on answer forms, and its prompts' digests."""
    up = _load(checkout / "evaluation.py", "lexam_evaluation")
    source = (checkout / "customized_judge_async.py").read_text(encoding="utf-8")
    grade_src = re.search(r"def process_judge_response_grade_gpt\(x\):\n(?:    .*\n)+", source)
    assert grade_src is not None
    scope: dict[str, Any] = {"re": re}
    exec(grade_src.group(0), scope)  # the function alone: the script imports litellm
    grade = scope["process_judge_response_grade_gpt"]
    letters = string.ascii_uppercase
    mcq = []
    rng = random.Random(1)
    for n_choices in (4, 8, 16, 26, 32):
        for gold in sorted({0, n_choices - 1, rng.randrange(n_choices)}):
            other = (gold + 1) % n_choices
            if n_choices <= 26:
                values = {"g": letters[gold], "o": letters[other], "n": gold + 1}
                values["gl"] = letters[gold].lower()
                for form in LETTER_FORMS:
                    response = form.format(**values)
                    p = up.extract_letter(response)
                    index = None if p is None else letters.index(p)
                    mcq.append({"response": response, "n_choices": n_choices, "gold_index": gold,
                                "extracted": p, "correct": index == gold})  # fmt: skip
            else:
                values = {"n": gold + 1, "m": other + 1, "g": letters[gold % 26]}
                for form in NUMBER_FORMS:
                    response = form.format(**values)
                    p = up.extract_number(response)
                    mcq.append({"response": response, "n_choices": n_choices, "gold_index": gold,
                                "extracted": None if p is None else str(p),
                                "correct": p is not None and p - 1 == gold})  # fmt: skip
    judge = []
    for reply in JUDGE_REPLIES:
        try:
            judge.append({"reply": reply, "grade": grade(reply), "raises": None})
        except Exception as exc:  # float() of a marker that is no number
            judge.append({"reply": reply, "grade": None, "raises": type(exc).__name__})
    texts = _lexam_texts(checkout)
    example = texts["judge_prompt"].format(
        question_fact="Frage {1}?", ref_answer="Antwort", model_answer="Mein [Ansatz]"
    )
    return {
        "upstream": {
            "repo": "LEXam-Benchmark/LEXam",
            "commit": "487f729e85725e5d3e00c0b25142de1e86cda643",
        },
        "mcq": mcq,
        "judge": judge,
        "texts_sha256": {k: hashlib.sha256(v.encode()).hexdigest() for k, v in texts.items()},
        "judge_prompt_example": example,
        "mcq_prompt_example": texts["letters"].format(
            course_name="Steuerrecht", question="Q?\nA. a\nB. b"
        ),
    }


def _lexam_texts(checkout: Path) -> dict[str, str]:
    answering = (checkout / "litellm_eval.py").read_text(encoding="utf-8")
    judging = (checkout / "customized_judge_async.py").read_text(encoding="utf-8")
    qa = re.search(r'QA_PROMPT = """(.*?)"""', answering, re.S)
    mcq = re.search(r"MCQ_PROMPT = (\{.*?\n\})", answering, re.S)
    system = re.search(r'JUDGE_SYSTEM = "(.*?)"\n', judging)
    prompt = re.search(r'JUDGE_PROMPT = """(.*?)"""', judging, re.S)
    assert qa and mcq and system and prompt
    prompts = eval(mcq.group(1))  # a dict literal of two string literals
    return {
        "open": qa.group(1), "letters": prompts["letters"], "numbers": prompts["numbers"],
        "judge_system": system.group(1), "judge_prompt": eval('"""' + prompt.group(1) + '"""'),
    }  # fmt: skip


if __name__ == "__main__":
    warnings.simplefilter("ignore")
    lb_checkout, lexam_checkout = Path(sys.argv[1]), Path(sys.argv[2])
    for name, data in (("legalbench_expected.json", legalbench(lb_checkout)),
                       ("lexam_expected.json", lexam(lexam_checkout))):  # fmt: skip
        text = json.dumps(data, ensure_ascii=False, indent=1) + "\n"
        (HERE / name).write_text(text, encoding="utf-8")
        print(name, len(json.dumps(data)))
