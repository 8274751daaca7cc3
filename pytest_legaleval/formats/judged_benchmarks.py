# ruff: noqa: E501
"""Benchmark texts an importer writes and a grader reads: PRBench's and APEX's.

Below both the importers and the grading layer (siblings that never import each other):
APEX's response-generation prompt (Mercor-Intelligence/apex-evals at commit
fc4ca761d291486fca905adb2c4ebd0dfad0caa5, ``apex-evals-v1-extended/prompt/
response_generation_prompt.txt``, byte for byte) and how its script fills it, and
PRBench's rule for a criterion's weight (scaleapi/PRBench at commit
070abdf5d72d07885058cd36da9e9531c45ba535, ``criteria.py``). ``grading.official.apex`` and
``grading.official.prbench`` re-export them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

__all__ = [
    "APEX_FILES_HEADER",
    "APEX_RESPONSE_GENERATION_PROMPT",
    "apex_generation_prompt",
    "prbench_weight",
]

APEX_FILES_HEADER = "==== Attached files content: ===="

APEX_RESPONSE_GENERATION_PROMPT = (
    "SYSTEM_PROMPT\n"
    "You are an AI assistant that produces final, domain-appropriate deliverables from a given task description and (optionally) attached files. You will be given the following inputs:\n"
    "Inputs\n"
    '• Task Domain: <Domain>  (e.g., "Operations")\n'
    "• Task Prompt: <Prompt>\n"
    "• Attachments:\n"
    "  ==== Attached files content: ====\n"
    "  === <File_1> ===\n"
    "  <File_1_Contents>\n"
    "  === <File_2> ===\n"
    "  <File_2_Contents>\n"
    "  … (repeat as needed)\n"
    "Ground Rules\n"
    "1) You must not ask follow-up questions. Interpret the prompt as best you can and produce the best complete answer given the information provided.\n"
    "2) Use the attachments as primary sources.\n"
    '3) Treat each "=== <File_Name> === …" block as the full content of that file.\n'
    "All of the source files that you need have been added to the prompt.\n"
    "Inputs\n"
    "• Task Domain: {{Domain}}\n"
    "• Task Prompt: {{Prompt}}\n"
    "• Attachments:\n"
    "\n"
)
"""``response_generation_prompt.txt``, byte for byte."""


def apex_generation_prompt(domain: str, prompt: str, files: Sequence[tuple[str, str]] = ()) -> str:
    """The one user message that asks for an answer (``files``: name and text of each)."""
    text = APEX_RESPONSE_GENERATION_PROMPT.replace("{{Domain}}", domain).replace(
        "{{Prompt}}", prompt
    )
    parsed = "\n\n".join(f"=== {name} ===\n{body.strip()}" for name, body in files)
    if parsed.strip():
        return f"{text}\n\n{APEX_FILES_HEADER}\n\n{parsed}"
    return text


def prbench_weight(annotations: Mapping[str, object]) -> tuple[str, float | None]:
    """``Criterion.find_weight``: the key ``weight_class`` names and the number there.

    Returns:
        (the key, its value) — the value ``None`` when there is no ``weight_class`` (the
        key is then ``""``) or no finite number under the key.

    """
    weight_class = annotations.get("weight_class")
    if not isinstance(weight_class, str):
        return "", None
    key = weight_class.replace(" ", "_") + "_weight"
    value = annotations.get(key)
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        return key, None
    return key, value
