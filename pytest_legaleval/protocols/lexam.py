# ruff: noqa: E501
"""LEXam's prompts, verbatim: the answering prompts and the open-question judge.

Copied, as the official protocol requires, from LEXam-Benchmark/LEXam at commit
487f729e85725e5d3e00c0b25142de1e86cda643 (code licence Apache-2.0, see NOTICE):
``litellm_eval.py`` (``QA_PROMPT``, ``MCQ_PROMPT``) and ``customized_judge_async.py``
(``JUDGE_SYSTEM``, ``JUDGE_PROMPT``). Every text is kept byte for byte — trailing spaces,
the tab in the judge prompt, the ``[...]`` around the judged answer — and filled with
``str.format`` as upstream fills it. The tests pin their sha256.

LEXam's lighteval task files (``lighteval/community_tasks/lexam_*_evals.py``) carry the
same answering prompts; their judge prompt differs only in not wrapping the answer in
``[...]``. The standalone judge script is the one LEXam's README names for its
expert-verified grader, so it is the one used here.

Why here, below ``importers`` and ``grading``: the LEXam importer writes the answering
prompts into the records and the ``lexam_official`` protocol's judge reads the bare
question back out of them, and those two siblings never import each other (DESIGN §11).
The protocol's face over these texts is ``grading.official.lexam_prompts``.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "JUDGE_PROMPT",
    "JUDGE_SYSTEM",
    "LETTERS",
    "MCQ_PROMPT_LETTERS",
    "MCQ_PROMPT_NUMBERS",
    "OPEN_QUESTION_PROMPT",
    "mcq_format",
    "mcq_prompt",
    "open_prompt",
    "question_of",
]

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
"""``letter_list`` of ``litellm_eval.py``: questions with more choices use numbers."""

OPEN_QUESTION_PROMPT = (
    "You are an expert in {course_name} and address legal issues in a structured, exam-style manner.\n"
    "Assume Swiss law applies unless specifically mentioned; if the course context justifies, address legal issues beyond Swiss law as well.\n"
    'Use precise legal language and formal "Sie" when answering.\n'
    "Do NOT state any disclaimer or refer to the need for external legal advice.\n"
    "Do NOT request the user to consult laws or to research on their own.\n"
    "Offer focused legal analyses and individualized advice.\n"
    "Speak directly and authoritatively without mentioning that your response is merely for general information.\n"
    "Incorporate Swiss-specific legal terminology.\n"
    "If you have discovered relevant legal considerations (Erwägungen), respond with a concise, clear legal analysis.\n"
    "Cite only from your identified considerations.\n"
    "Always cite the specific legal provision, explicitly indicating paragraphs (Abs.), numbers (Ziff.), or letters (lit.) where available (e.g., “'Art. 74 Abs. 2 Ziff. 2 OR”, “Art. 336 lit. a StGB”). Avoid general references (such as 'Art. 3 ZGB') without mentioning the specific paragraph, number, or letter, if applicable.\n"
    "If no relevant considerations are found, explicitly state that no pertinent information is available.\n"
    "If you do have reliable sources, share practical guidance or insights from them.\n"
    "Respond in the same language as the question.\n"
    "If the question specifically requests a short answer, provide a concise response.\n"
    "If the prompt asks you to analyze a specific case provided in the exam, but the text or details of that case have not been provided in the prompt, explicitly flag that the required case material is missing.\n"
    "\n"
    "Question:\n"
    "{question}\n"
    "\n"
    "Answer:"
)
"""``QA_PROMPT`` (``litellm_eval.py``; the same text in ``lexam_oq_evals.py``): the open
question's one user message. Fields ``{course_name}``, ``{question}``."""


MCQ_PROMPT_LETTERS = (
    "You are an expert in {course_name} and address legal issues in a structured, exam-style manner.\n"
    "You are given a multiple-choice question, where only one choice (e.g., A, B, C, etc.) is correct.\n"
    "Assume Swiss law applies unless specifically stated otherwise. If the context of the course justifies it, consider legal frameworks beyond Swiss law as well.\n"
    "\n"
    "Please reason through the question step by step, using a chain-of-thought approach:\n"
    "- Clarify the facts: Briefly restate or highlight the key facts in the question to anchor your reasoning.\n"
    "- Issue Identification: What legal issue(s) arise from the facts?\n"
    "- Rule Explanation: What legal rules or principles are relevant, and what are their sources (e.g., statutes, case law, doctrine)?\n"
    "- Application and Reasoning: Apply the relevant rules to the facts, carefully weighing any ambiguities, exceptions, or competing interpretations.\n"
    "- Eliminate Incorrect Answers: Briefly explain why each incorrect answer is wrong or less convincing.\n"
    "- Conclusion: Clearly state the correct answer choice (e.g., A, B, C, etc.) with a brief justification for why it best fits the legal analysis.\n"
    "\n"
    "Format your final answer as follows:\n"
    " Correct Answer: ###C### \n"
    "\n"
    "Question:\n"
    " {question}\n"
    "\n"
    "Answer:"
)
"""``MCQ_PROMPT["letters"]``: questions of up to 26 choices, listed ``A. text``."""


MCQ_PROMPT_NUMBERS = (
    "You are an expert in {course_name} and address legal issues in a structured, exam-style manner.\n"
    "You are given a multiple-choice question, where only one choice (e.g., 1, 2, 3, etc.) is correct.\n"
    "Assume Swiss law applies unless specifically stated otherwise. If the context of the course justifies it, consider legal frameworks beyond Swiss law as well.\n"
    "\n"
    "Please reason through the question step by step, using a chain-of-thought approach:\n"
    "- Clarify the facts: Briefly restate or highlight the key facts in the question to anchor your reasoning.\n"
    "- Issue Identification: What legal issue(s) arise from the facts?\n"
    "- Rule Explanation: What legal rules or principles are relevant, and what are their sources (e.g., statutes, case law, doctrine)?\n"
    "- Application and Reasoning: Apply the relevant rules to the facts, carefully weighing any ambiguities, exceptions, or competing interpretations.\n"
    "- Eliminate Incorrect Answers: Briefly explain why each incorrect answer is wrong or less convincing.\n"
    "- Conclusion: Clearly state the correct answer choice (e.g., 1, 2, 3, etc.) with a brief justification for why it best fits the legal analysis.\n"
    "\n"
    "Format your final answer as follows:\n"
    " Correct Answer: ###3### \n"
    "\n"
    "Question:\n"
    " {question}\n"
    "\n"
    "Answer:"
)
"""``MCQ_PROMPT["numbers"]``: questions of more than 26 choices, listed ``1. text``."""


JUDGE_SYSTEM = "Act as a Judge specializing in the evaluation of Swiss law schools exams. Your task is to assess how well the response aligns with the reference answer, with a focus on accuracy, completeness, and legal reasoning."
"""``JUDGE_SYSTEM`` (``customized_judge_async.py``): the judge's system message."""


JUDGE_PROMPT = (
    "Goal:\n"
    "Your task is to assess how well the response aligns with the reference answer, with a focus on accuracy, completeness, and legal reasoning.\n"
    "\n"
    "Context:\n"
    "You will be provided with a response (labeled: Model's Answer) to a law school exam question (labeled: Question) and a reference answer (labeled: Reference Answer). \n"
    "\n"
    "Return format:\n"
    "    After reviewing the response:\n"
    "    1. Explanation: Briefly explain your reasoning regarding how the response conforms to or deviates from the reference answer. \n"
    "    2. Constructive feedback: Additionally, provide neutral, constructive feedback and corrections in the style of a university professor.\n"
    "    3. Correctness score: Assign a final correctness score on a scale from 0.0 to 1.0 (in increments of 0.1). This score should reflect the extent to which the response satisfies the reference answer, where \n"
    "        - 1.0 = complete fulfillment (100%) \n"
    "        - lower scores reflect proportionate shortfalls (e.g. 0.5 = 50% fulfillment). \n"
    '\t    - strictly follow the format: "[[score]]", e.g., "The correctness score: [[0.5]]". \n'
    "\n"
    "Warnings:\n"
    "    - In some cases, the reference answer may include only keywords or factual elements to be examined, along with (+), (-) or (+/-). Respect these indications when determining correctness:\n"
    "        - (+) means the element must be affirmed.\n"
    "        - (–) means the element must be denied.\n"
    "        - (-/+) indicates that arguments in either direction are acceptable if legally sound.\n"
    "    - Deviations or additional elements not found in the reference answer should generally be penalized unless you are certain they are legally correct and relevant. Assume the reference answer includes all information necessary for a perfect response.\n"
    "    - The reference answer may contain citations (e.g., from books or law review articles), which the response does not need to replicate. However, statutes should be cited precisely, specifying Abs., Ziff., or lit. whenever applicable.\n"
    "    - If the reference answer includes separate sub-points, use these for proportional scoring guidance (e.g., addressing 2 out of 4 sub-points correctly equals approximately a 0.5 score).\n"
    "Judge the below case, give the brief reasoning process and the final grade.\n"
    "\n"
    "\n"
    "Question:\n"
    "```{question_fact}```\n"
    "\n"
    "Reference Answer:\n"
    "```{ref_answer}```\n"
    "\n"
    "Model's Answer:\n"
    "```[{model_answer}]```\n"
    "\n"
    "Your Judgment:\n"
)
"""``JUDGE_PROMPT`` (``customized_judge_async.py``): the judge's user message. Fields
``{question_fact}``, ``{ref_answer}``, ``{model_answer}`` (the answer inside ``[...]``)."""


def mcq_format(n_choices: int) -> str:
    """``letters`` for up to 26 choices, ``numbers`` above (LEXam's 32-choice questions)."""
    return "letters" if n_choices <= len(LETTERS) else "numbers"


def mcq_prompt(question: str, choices: Sequence[str], course: str) -> str:
    """The user message of an MCQ, as ``litellm_eval.py`` builds it.

    The question, then one ``A. text`` (or ``1. text``) line per choice, inside the letters
    (or numbers) prompt.
    """
    numbers = mcq_format(len(choices)) == "numbers"
    listed = question
    for i, choice in enumerate(choices):
        label = str(i + 1) if numbers else LETTERS[i]
        listed += f"\n{label}. {choice}"
    template = MCQ_PROMPT_NUMBERS if numbers else MCQ_PROMPT_LETTERS
    return template.format(course_name=course, question=listed)


def open_prompt(question: str, course: str) -> str:
    """The user message of an open question."""
    return OPEN_QUESTION_PROMPT.format(course_name=course, question=question)


def question_of(prompt: str, course: str) -> str:
    """The bare question inside an :func:`open_prompt`; another prompt as it is.

    LEXam's judge is shown the bare question, not the answering prompt.
    """
    head, _, tail = OPEN_QUESTION_PROMPT.partition("{question}")
    head = head.format(course_name=course)
    if len(prompt) >= len(head) + len(tail) and prompt.startswith(head) and prompt.endswith(tail):
        return prompt[len(head) : len(prompt) - len(tail)]
    return prompt
