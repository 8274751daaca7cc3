"""The review desk: one rater's next item, their submission, their progress.

Labels are written in the ``--human-labels`` format (``schemas/human_label.schema.json``),
so ``legaleval audit`` reads the file as it is: per submitted item one line without
``criterion_id`` (the verdict: ``passed``, and ``score`` when the expert gave a grade),
then one line per criterion the expert marked met or not met. Every line carries
``rater``; the item line also ``comment`` (the note), ``seconds`` (time spent),
``labelled_at`` and ``review_item`` (the opaque id). The lines of one submission are
appended with one ``write`` on a file opened ``O_APPEND`` and flushed to disk before the
answer, so a restart (or a crash) loses nothing that was acknowledged, and raters who
share one file do not interleave.

What a rater has done is read back from the labels file, so a restarted desk resumes
where each rater stopped. A last line cut short by a crash in the middle of a write (never
acknowledged) is ignored on reading and cut before the next write.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pytest_legaleval.datasets.review.items import ItemSource, item_view
from pytest_legaleval.datasets.review.sample import (
    ReviewSample,
    SampleItem,
    join_seat,
    sample_keys,
)
from pytest_legaleval.errors import ConfigError

__all__ = ["MAX_NOTE", "ReviewDesk", "ReviewRefused", "labels_path_for"]

MAX_NOTE = 4000
"""Characters a note may have."""
MAX_SECONDS = 7 * 24 * 3600.0
MAX_TORN = 1 << 20
"""Bytes looked back for the last newline before a torn line (one submission is smaller)."""
_FIELDS = frozenset({"item", "passed", "grade", "criteria", "note", "seconds"})


class ReviewRefused(ConfigError):
    """A labelling request that cannot be accepted; ``status`` is its HTTP status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def labels_path_for(folder: Path, rater: str) -> Path:
    """The default labels file of ``rater`` in a review folder: ``labels/<rater>.jsonl``."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in rater).strip(".")
    return folder / "labels" / f"{safe or 'rater'}.jsonl"


def _label_rows(path: Path) -> Iterator[dict[str, Any]]:
    """The rows of a labels file, a torn last line left out.

    A last line without its newline is a crash in the middle of a write, never
    acknowledged; any other line that is not a JSON object is an error.

    Raises:
        ConfigError: a line in the middle of the file is not a JSON object.

    """
    if not path.is_file():
        return
    data = path.read_bytes()
    lines = data.split(b"\n")
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            row = None
        if isinstance(row, dict):
            yield row
        elif number < len(lines):  # a whole line, ended by a newline: damaged, not torn
            raise ConfigError(f"{path}:{number}: not a label row; fix or remove the line")


def _check_rater(rater: str) -> str:
    if not isinstance(rater, str) or not rater.strip() or len(rater) > 256:
        raise ConfigError(f"a rater name must be 1 to 256 characters, got {rater!r}")
    return rater.strip()


class ReviewDesk:
    """The labelling of one sample by its raters (thread-safe; one per process).

    Args:
        folder: the review folder (sample, seats, default labels files).
        sample: the sample (:func:`~.sample.open_sample`).
        run_dir: the run directory the sample was drawn from.
        labels: a labels file for every rater (default: one file per rater in the folder).
        attachments_roots: folders attachments may be read from besides the dataset's.

    """

    def __init__(
        self,
        folder: Path,
        sample: ReviewSample,
        run_dir: Path,
        *,
        labels: Path | None = None,
        attachments_roots: tuple[Path, ...] = (),
    ) -> None:
        self.folder = folder
        self.sample = sample
        self.labels = labels
        self.source = ItemSource(run_dir, sample_keys(sample), attachments_roots)
        self._lock = threading.Lock()
        self._done: dict[str, dict[str, dict[str, Any]]] = {}
        self._seats: dict[str, int] = {}
        self._served: dict[tuple[str, str], float] = {}

    def labels_file(self, rater: str) -> Path:
        """Where ``rater``'s labels go."""
        return self.labels if self.labels is not None else labels_path_for(self.folder, rater)

    def _state(self, rater: str) -> tuple[int, dict[str, dict[str, Any]]]:
        """The rater's seat and submitted items (read back from the labels file once)."""
        rater = _check_rater(rater)
        if rater not in self._seats:
            self._seats[rater] = join_seat(self.folder, self.sample, rater)
            self._done[rater] = self._read_done(rater)
        return self._seats[rater], self._done[rater]

    def _read_done(self, rater: str) -> dict[str, dict[str, Any]]:
        """The items ``rater`` submitted, by opaque id, as their labels file says."""
        done: dict[str, dict[str, Any]] = {}
        keys = {(i.record_id, i.model): i.id for i in self.sample.items}
        for row in _label_rows(self.labels_file(rater)):
            if row.get("rater") != rater:
                continue
            opaque = keys.get((str(row.get("record_id")), str(row.get("model"))))
            if opaque is None:
                continue
            entry = done.setdefault(opaque, {"criteria": {}})
            if row.get("criterion_id") is None:
                entry.update(
                    passed=row.get("passed"), grade=row.get("score"),
                    note=row.get("comment"), seconds=row.get("seconds"),
                )  # fmt: skip
            else:
                entry["criteria"][str(row["criterion_id"])] = row.get("passed")
        return done

    def _mine(self, rater: str) -> list[SampleItem]:
        seat, _ = self._state(rater)
        return self.sample.order(rater, seat)

    def progress(self, rater: str) -> dict[str, Any]:
        """How far ``rater`` is: counts, time per item, the submitted items in order."""
        with self._lock:
            return self._progress(rater)

    def _progress(self, rater: str) -> dict[str, Any]:
        seat, done = self._state(rater)
        mine = self._mine(rater)
        seconds = sorted(
            float(e["seconds"]) for e in done.values() if isinstance(e.get("seconds"), int | float)
        )
        median = None
        if seconds:
            middle = len(seconds) // 2
            median = (
                seconds[middle] if len(seconds) % 2 else (seconds[middle - 1] + seconds[middle]) / 2
            )
        return {
            "rater": rater,
            "seat": seat,
            "total": len(mine),
            "done": len(done),
            "remaining": len(mine) - len(done),
            "seconds_median": median,
            "seconds_total": math.fsum(seconds),
            "submitted": [item.id for item in mine if item.id in done],
        }

    def next_item(self, rater: str) -> dict[str, Any] | None:
        """The next item ``rater`` has not labelled (their own order), or ``None`` when done."""
        with self._lock:
            _, done = self._state(rater)
            for item in self._mine(rater):
                if item.id not in done:
                    self._served.setdefault((rater, item.id), time.monotonic())
                    view = item_view(self.source, item.id, (item.record_id, item.model))
                    return {"item": view, "progress": self._progress(rater)}
            return None

    def item(self, rater: str, opaque: str) -> dict[str, Any]:
        """One item of ``rater``'s sample by id, with their own labels once submitted.

        Raises:
            ReviewRefused: 404 for an item not in the rater's sample.

        """
        with self._lock:
            found = self._find(rater, opaque)
            _, done = self._state(rater)
            view = item_view(self.source, found.id, (found.record_id, found.model))
            return {"item": view, "submitted": done.get(found.id)}

    def _find(self, rater: str, opaque: Any) -> SampleItem:
        if isinstance(opaque, str):
            for item in self._mine(rater):
                if item.id == opaque:
                    return item
        shown = repr(opaque) if len(repr(opaque)) <= 80 else repr(opaque)[:77] + "…"
        raise ReviewRefused(404, f"unknown item {shown}: it is not in rater {rater!r}'s sample")

    def submit(self, rater: str, body: Any) -> dict[str, Any]:
        """Record one item's labels (appended and flushed); returns the new progress.

        ``body``: ``{"item": id, "passed": bool, "grade"?: number in [0, 1],
        "criteria"?: {criterion id: bool}, "note"?: str, "seconds"?: number}``; an item
        whose judge scores takes a grade alone too (the audit then reads pass from the
        item's threshold, as it does for any score-only label).

        Raises:
            ReviewRefused: 422 for a malformed body or verdict, 404 for an unknown item,
                409 for an item this rater already submitted. Nothing is written then.

        """
        if not isinstance(body, Mapping):
            raise ReviewRefused(422, "the body must be a JSON object")
        extra = sorted(set(body) - _FIELDS)
        if extra:
            named = ", ".join(repr(name[:40]) for name in extra[:5])
            raise ReviewRefused(422, f"unknown field(s) {named}; allowed: "
                                f"{', '.join(sorted(_FIELDS))}")  # fmt: skip
        with self._lock:
            found = self._find(rater, body.get("item"))
            _, done = self._state(rater)
            if found.id in done:
                raise ReviewRefused(
                    409, f"item {found.id} was already submitted by rater {rater!r}; "
                    "a label is final"
                )  # fmt: skip
            lines = self._lines(rater, found, body)

            def still_new() -> None:
                # Under the file's lock: another process (a second replica of the
                # service, a second review process on the same file) may have written it.
                done.update(self._read_done(rater))
                if found.id in done:
                    raise ReviewRefused(409, f"item {found.id} was already submitted by rater "
                                        f"{rater!r}; a label is final")  # fmt: skip

            self._append(self.labels_file(rater), lines, still_new)
            entry = {
                "passed": body.get("passed"), "grade": body.get("grade"), "note": body.get("note"),
                "seconds": lines[0].get("seconds"),
                "criteria": {line["criterion_id"]: line["passed"] for line in lines[1:]},
            }  # fmt: skip
            done[found.id] = entry
            self._served.pop((rater, found.id), None)
            return {"item": found.id, "lines": len(lines), "progress": self._progress(rater)}

    def _lines(self, rater: str, item: SampleItem, body: Mapping[str, Any]) -> list[dict[str, Any]]:
        passed = body.get("passed")
        view = item_view(self.source, item.id, (item.record_id, item.model))
        grade = body.get("grade")
        if passed is None and grade is None:
            more = " (or a grade)" if view["grade_allowed"] else ""
            raise ReviewRefused(422, f"a verdict is required: passed true or false{more}")
        if passed is not None and not isinstance(passed, bool):
            raise ReviewRefused(422, f"passed must be true or false, got {passed!r}")
        if grade is not None:
            if not view["grade_allowed"]:
                raise ReviewRefused(422, "this item takes pass or fail only, not a grade")
            if (
                isinstance(grade, bool)
                or not isinstance(grade, int | float)
                or not (0.0 <= grade <= 1.0)
            ):
                raise ReviewRefused(422, f"grade must be a number in [0, 1], got {grade!r}")
        note = body.get("note")
        if note is not None and (not isinstance(note, str) or len(note) > MAX_NOTE):
            raise ReviewRefused(422, f"note must be text of at most {MAX_NOTE} characters")
        seconds = body.get("seconds")
        if seconds is None:
            served = self._served.get((rater, item.id))
            seconds = round(time.monotonic() - served, 1) if served is not None else None
        elif (
            isinstance(seconds, bool)
            or not isinstance(seconds, int | float)
            or not (0.0 <= seconds <= MAX_SECONDS)
        ):
            raise ReviewRefused(422, f"seconds must be a number in [0, {MAX_SECONDS:g}]")
        criteria = body.get("criteria") or {}
        known = {c["id"] for c in view["rubric"]} | {c["id"] for c in view["required_criteria"]}
        if not isinstance(criteria, Mapping):
            raise ReviewRefused(422, "criteria must be an object of criterion id: true/false")
        for cid, met in criteria.items():
            if cid not in known:
                raise ReviewRefused(422, f"criterion {cid!r} is not a criterion of this item")
            if not isinstance(met, bool):
                raise ReviewRefused(422, f"criterion {cid!r} must be true or false, got {met!r}")
        base = {"record_id": item.record_id, "model": item.model}
        head: dict[str, Any] = dict(base)
        if passed is not None:
            head["passed"] = passed
        if grade is not None:
            head["score"] = float(grade)
        head["rater"] = rater
        if note:
            head["comment"] = note
        if seconds is not None:
            head["seconds"] = seconds
        head["labelled_at"] = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        head["review_item"] = item.id
        return [head] + [
            {**base, "criterion_id": cid, "passed": met, "rater": rater}
            for cid, met in criteria.items()
        ]

    @staticmethod
    def _append(path: Path, lines: list[dict[str, Any]], check: Callable[[], None]) -> None:
        """Append ``lines`` in one write, flushed, after ``check()`` passed under the lock."""
        data = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # raters sharing one file write whole submissions
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                # A torn last line: a crash in the middle of a write that was never
                # acknowledged. Cut it (every writer holds the lock, so none is writing).
                tail = os.pread(fd, min(size, MAX_TORN), size - min(size, MAX_TORN))
                cut = tail.rfind(b"\n")
                os.ftruncate(fd, size - len(tail) + cut + 1 if cut >= 0 else size - len(tail))
            check()
            payload = data.encode("utf-8")
            while payload:
                payload = payload[os.write(fd, payload) :]
            os.fsync(fd)
        finally:
            os.close(fd)
