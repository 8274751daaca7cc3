r"""Multiple-choice answer extraction and grading.

A model's reply is free text; the grader needs the set of choice ids it committed to. The
extractor applies an ordered list of small rules to the reply, after NFKC normalisation
(full-width letters) and after dropping ``<think>``/``<reasoning>`` blocks when an answer part
follows them.

**Explicit statements** — every match of every explicit rule is collected and the one that starts
*last* in the reply wins, because models revise ("Answer: A ... wait, Answer: C"). Prose inside a
JSON object that has an answer key ("explanation": "... the answer is D ...") does not count.

1. ``json`` — ``{"answer": "B"}``, ``{"answers": ["A", "C"]}``, ``{"final_answer": "A, C"}``;
   keys ``answer(s)``, ``choice(s)``, ``final_answer``, ``correct_answer`` … in any case, also
   inside prose, code fences or escaped JSON.
2. ``answer_tag`` — ``<answer>B</answer>``.
3. ``boxed`` — ``\boxed{B}``.
4. ``answer_line`` — ``Answer: B``, ``Final answer: (C)``, ``**Answer:** D``, ``Antwort: B``,
   ``Lösung: A und C``, ``Réponse : B``, ``Correct options: A, C``, or an ``Answer`` heading
   with the id on the next line. When the text after the colon does not start with an id
   ("Answer: I think it is B."), the first id on that line that ends a sentence is taken,
   unless the line negates or hedges ("not", "or").
5. ``final_statement`` — ``The correct answer is B``, ``The answer is option B``,
   ``I choose B``, ``Die richtige Antwort lautet B``, ``Richtig ist B``,
   ``La bonne réponse est B``, ``The answer is not A but C``; not inside a hedged clause
   ("if the answer is C", "one might think the answer is C").
6. ``conclusion`` — ``Therefore, B.``, ``Daher ist B richtig`` (only when the sentence ends right
   after the ids or calls them correct, so "Hence B must pay" is not an answer).
7. ``postfix`` — ``C is the correct answer``, ``Option C is correct.``,
   ``Antwort B ist richtig.``

**Formatting** — tried only when no explicit statement exists, in this order; the first rule that
finds anything decides. When its hits name different id sets (the model formatted every option
while discussing it), the result is ``ambiguous`` and nothing is chosen — a wrong guess would be
worse than an honest "no answer":

8. ``bare`` — the whole reply is ids: ``B``, ``b``, ``(B)``, ``B.``, ``A, C``, ``Option B``.
9. ``walkthrough`` — labels of two or more different options where lines or sentences start
   ("A. This is incorrect. B. This is incorrect. C. This is correct."): a discussion of the
   options, so ``ambiguous``, never the first label.
10. ``leading`` — the reply opens with ids and goes on: ``B, because ...``, ``B – ...``.
11. ``bold`` — ``**B**``, ``__B__``, ``**(B)**``, ``**B) The contract is void**``.
12. ``verdict`` — ``B is correct.``, only if no option is called wrong anywhere in the reply
    ("A is wrong, B is wrong, C is right" is a walk-through: ``ambiguous``).
13. ``option_mention`` — ``Option B``, ``Antwort B``, ``choice (C)``.
14. ``parenthesized`` — a standalone ``(B)`` (not a citation such as ``§ 3 (b)``).
15. ``label_line`` — a line starting ``B)``, ``B.`` or ``B -`` (not ``A:``, which is the
    answer line of "Q: ... A: ..." transcripts).

Guards shared by the rules keep words out: ids only count as whole tokens (not in "U.S.A.",
"A's", "B-Plan"); ``A``/``I`` followed by a word ("Answer: A contract is ...", "Answer: I think
...") are the article or the pronoun, not ids; "A or C" (hedging), "A is wrong" (negation) and
"A if ..." (conditional) are not answers; ids next to Roman numerals of LEXam statements
("i und ii") are statement numbers, and with such numerals in the reply a formatted ``i``/``v``/
``x`` is ignored by the formatting rules.

Regexes are compiled once per choice-id set (``functools.lru_cache``); all of them run in linear
time (possessive decoration, atomic and capped id lists), so 50,000 replies grade in seconds.

Layout: ``_patterns`` (regex pieces and the patterns of one id set), ``_matching`` (reading
an id list and its guards), ``_explicit`` and ``_formatting`` (the rules), ``_extract`` (the
driver), ``_grade`` (the grade). The package never imports pytest; it is imported on the
first MCQ grade (``grading._graders``), so its patterns compile then, not when the plugin loads.
"""

from __future__ import annotations

from pytest_legaleval.grading.mcq._extract import Extraction, extract_choice_ids
from pytest_legaleval.grading.mcq._grade import MCQGrade, grade_mcq

__all__ = ["Extraction", "MCQGrade", "extract_choice_ids", "grade_mcq"]
