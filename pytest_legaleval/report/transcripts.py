"""The exchange behind an item, from the run's ``transcripts.jsonl`` (when it has one).

The item runner writes one line per item and epoch::

    {"item_id", "record_id", "model", "epoch", "request": {"messages": [...], "params": {}}
     | null, "reply": str | null, "judge": [{"model", "criterion_id", "messages", "reply"}],
     "truncated": bool}

Older run directories have no such file; the item view then says so. A line is matched to
its item by ``item_id`` and ``epoch``, else by ``record_id``, ``model`` and ``epoch``; lines
of no shown item (another epoch than the one shown) are skipped. Its texts are previews on
the page's budget: the request and the reply get half of the item's preview length, the
judge's prompts and replies a quarter (:mod:`~pytest_legaleval.report.budget`).
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_legaleval.metrics.artifacts import TRANSCRIPTS
from pytest_legaleval.report.budget import Budget, judge_cap, other_cap, transcript_cap
from pytest_legaleval.report.epochs import epoch_of
from pytest_legaleval.report.texts import cut, text

__all__ = ["TranscriptIndex", "transcript_json"]

_MAX_PARAMS = 300
"""Characters of a request's parameters shown (as JSON)."""
_NOMINAL = 100
"""Characters per text a transcript is reckoned to need when the page chooses which to show."""


def _messages(value: Any) -> list[tuple[str, str]]:
    if not isinstance(value, list):
        return []
    return [(text(m.get("role")), text(m.get("content"))) for m in value if isinstance(m, Mapping)]


def _judges(line: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    found = line.get("judge")
    return [j for j in found if isinstance(j, Mapping)] if isinstance(found, list) else []


@dataclass
class _Found:
    """What the first pass learnt of one row's transcript line."""

    line: int
    structure: int
    """JSON bytes of its preview besides the texts."""
    main: array[int]
    """Lengths of the request's messages and of the reply (when it is not the response)."""
    judge: array[int]
    """Lengths of the judge's prompts and replies."""


def _structure(line: Mapping[str, Any]) -> int:
    request = line.get("request")
    size = 24
    if isinstance(request, Mapping):
        size += sum(len(role) + 16 for role, _ in _messages(request.get("messages")))
        params = request.get("params")
        size += min(len(json.dumps(params, default=str)), _MAX_PARAMS) + 8 if params else 0
    for call in _judges(line):
        size += len(text(call.get("model"))) + len(text(call.get("criterion_id"))) + 24
        size += sum(len(role) + 16 for role, _ in _messages(call.get("messages")))
    return size


@dataclass
class TranscriptIndex:
    """Which line of ``transcripts.jsonl`` belongs to which row of the page.

    ``by_item`` maps ``(item_id, epoch)`` and ``by_record`` ``(record_id, model, epoch)``
    to a row's index (of the shown epoch's line). A run of 50,000 items with a judge call
    per rubric criterion has far more transcript than a 10 MB page holds: :meth:`select`
    gives the transcripts a share of the page, failures first.
    """

    path: Path
    by_item: dict[tuple[str, int], int] = field(default_factory=dict)
    by_record: dict[tuple[str, str, int], int] = field(default_factory=dict)
    found: dict[int, _Found] = field(default_factory=dict)
    """Row index -> its line (after :meth:`scan`)."""
    chosen: dict[int, int] = field(default_factory=dict)
    """Line number -> row, of the transcripts the page shows (after :meth:`select`)."""
    note: str = ""

    @property
    def present(self) -> bool:
        """Whether the run directory has the file at all."""
        return self.path.is_file()

    def row_of(self, line: Mapping[str, Any]) -> int | None:
        """The row a transcript line belongs to, if any."""
        epoch = epoch_of(line.get("epoch"))
        found = self.by_item.get((text(line.get("item_id")), epoch))
        if found is None:
            found = self.by_record.get(
                (text(line.get("record_id")), text(line.get("model")), epoch)
            )
        return found

    def _lines(self, wanted: Mapping[int, int] | None = None) -> Iterator[tuple[int, Any]]:
        """``(line number, object)`` of each line (of ``wanted`` lines only, if given)."""
        try:
            with self.path.open(encoding="utf-8") as handle:
                for number, raw in enumerate(handle, 1):
                    if (wanted is None or number in wanted) and raw.strip():
                        try:
                            yield number, json.loads(raw)
                        except json.JSONDecodeError:
                            self.note = f"{TRANSCRIPTS} line {number} is not JSON"
        except (OSError, UnicodeDecodeError) as exc:
            self.note = f"{TRANSCRIPTS} is unreadable from here on ({exc})"

    def scan(self, responses: list[int]) -> None:
        """First pass: match lines to rows, measure their texts and structure.

        ``responses`` holds the hash of each row's response: a reply equal to it is not
        shown twice.
        """
        self.found.clear()
        for number, line in self._lines():
            if not isinstance(line, Mapping):
                continue
            row = self.row_of(line)
            if row is None or row in self.found:
                continue
            main, judge = array("q"), array("q")
            request = line.get("request")
            if isinstance(request, Mapping):
                main.extend(len(c) for _, c in _messages(request.get("messages")))
            reply = line.get("reply")
            if isinstance(reply, str) and hash(reply) != responses[row]:
                main.append(len(reply))
            for call in _judges(line):
                judge.extend(len(c) for _, c in _messages(call.get("messages")))
                judge.append(len(text(call.get("reply"))))
            self.found[row] = _Found(number, _structure(line), main, judge)

    def select(self, share: int, urgent: list[bool], budget: Budget) -> int:
        """Choose the transcripts the page shows within ``share`` bytes; count their texts.

        Failures and errors come first, then the rest, each in row order; a transcript is
        taken while its structure and a short preview of each of its texts fit. Returns the
        structure's bytes of those taken.
        """
        self.chosen.clear()
        used = structure = 0
        order = sorted(self.found, key=lambda row: (not urgent[row], row))
        for row in order:
            found = self.found[row]
            cost = found.structure + sum(min(n, _NOMINAL) for n in (*found.main, *found.judge))
            if used + cost > share:
                break
            used += cost
            structure += found.structure
            self.chosen[found.line] = row
            main, judge = ("transcript", "judge") if urgent[row] else ("transcript_other",
                                                                      "judge_other")  # fmt: skip
            budget.add_all(main, found.main)
            budget.add_all(judge, found.judge)
        return structure

    def previews(
        self, cap: int, urgent: list[bool], responses: list[int], labels: list[dict[str, str]]
    ) -> dict[int, dict[str, Any]]:
        """Second pass: each chosen row's transcript, cut (see :func:`transcript_json`)."""
        out: dict[int, dict[str, Any]] = {}
        for number, line in self._lines(self.chosen):
            row = self.chosen[number]
            item_cap = cap if urgent[row] else other_cap(cap)
            out[row] = transcript_json(line, number, item_cap, responses[row], labels[row])
        return out

    def missing(self, rows: int) -> list[int]:
        """The rows no line belongs to (after :meth:`scan`)."""
        return [row for row in range(rows) if row not in self.found]


def _cut_messages(messages: list[tuple[str, str]], cap: int) -> list[list[Any]]:
    out: list[list[Any]] = []
    for role, content in messages:
        entry: list[Any] = [role, cut(content, cap)]
        if len(content) > cap:
            entry.append(len(content))
        out.append(entry)
    return out


def transcript_json(
    line: Mapping[str, Any], number: int, cap: int, response: int, labels: Mapping[str, str]
) -> dict[str, Any]:
    """One transcript line as the page's JSON, its texts cut for an item preview of ``cap``.

    ``l`` the line number; ``m`` the request's messages ``[role, text(, full length)]``;
    ``p`` its parameters (JSON, cut); ``a`` the reply (``true`` when it equals the response
    shown above; ``an`` its full length when cut; absent when there was none); ``j`` each
    judge call ``[model, criterion, messages, reply, reply's full length or null]``,
    ``criterion`` a title from ``labels`` (criterion id -> title) or the id; ``t`` true when
    the runner cut some content to its size bound.
    """
    own, judge = transcript_cap(cap), judge_cap(cap)
    out: dict[str, Any] = {"l": number}
    request = line.get("request")
    if isinstance(request, Mapping):
        out["m"] = _cut_messages(_messages(request.get("messages")), own)
        params = request.get("params")
        if isinstance(params, Mapping) and params:
            out["p"] = cut(json.dumps(params, ensure_ascii=False, default=str), _MAX_PARAMS)
    reply = line.get("reply")
    if isinstance(reply, str):
        if hash(reply) == response:
            out["a"] = True
        else:
            out["a"] = cut(reply, own)
            if len(reply) > own:
                out["an"] = len(reply)
    calls = []
    for call in _judges(line):
        criterion = text(call.get("criterion_id")) if call.get("criterion_id") else ""
        answer = call.get("reply")
        said = text(answer)
        calls.append(
            [
                text(call.get("model")),
                labels.get(criterion, criterion),
                _cut_messages(_messages(call.get("messages")), judge),
                cut(said, judge) if answer is not None else None,
                len(said) if len(said) > judge else None,
            ]
        )
    if calls:
        out["j"] = calls
    if line.get("truncated") is True:
        out["t"] = True
    return out
