# ruff: noqa: E501
"""APEX's response-generation prompt: its importer writes it, its protocol re-exports it.

The text of Mercor-Intelligence/apex-evals at commit
fc4ca761d291486fca905adb2c4ebd0dfad0caa5 (``apex-evals-v1-extended/prompt/
response_generation_prompt.txt``), byte for byte, and how its script fills it.
``grading.official.apex`` re-exports them.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "FILES_HEADER",
    "RESPONSE_GENERATION_PROMPT",
    "generation_prompt",
]

FILES_HEADER = "==== Attached files content: ===="

RESPONSE_GENERATION_PROMPT = (
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


def generation_prompt(domain: str, prompt: str, files: Sequence[tuple[str, str]] = ()) -> str:
    """The one user message that asks for an answer (``files``: name and text of each)."""
    text = RESPONSE_GENERATION_PROMPT.replace("{{Domain}}", domain).replace(
        "{{Prompt}}", prompt
    )
    parsed = "\n\n".join(f"=== {name} ===\n{body.strip()}" for name, body in files)
    if parsed.strip():
        return f"{text}\n\n{FILES_HEADER}\n\n{parsed}"
    return text
