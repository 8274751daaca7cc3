"""The review sample: a seeded, stratified random draw of a run's judged items, written once.

The audit's estimates are unbiased only if the labelled items are a random sample of the
items they speak for, so the sample is drawn by the tool, not picked by hand:

* the **population** is every judge-graded item of the run with a verdict (as the audit
  counts them, :func:`~pytest_legaleval.metrics._audit_items.collect_items`);
* it is cut into **strata** (by default the item's ``model`` and ``policy_id``; any
  top-level prediction fields with ``strata``) and each stratum gets its share of the
  sample by largest remainders (proportional allocation: the sample is self-weighting, so
  a plain mean over it estimates the population's);
* within a stratum the items are drawn with ``random.Random(seed)``; the seed is recorded;
* a fraction ``double`` of the sample (drawn at random from it) is **shared**: a second
  rater labels those items too, which is what the expert–expert agreement is measured on.

Every item gets an **opaque id** (``it_`` and 12 random hex digits): the page never sees a
record id or the run's ``item_id``, which names the model. The sample file
(``sample.json`` in the review folder) is created with ``O_EXCL``: written once, the
raters who come later join it. Raters take **seats**: seat 0 labels every item, seat 1
(only when items are shared) the shared items; ``seats.json`` records who sits where.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import random
import secrets
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.metrics._artifacts import PREDICTIONS
from pytest_legaleval.metrics._audit_items import collect_items, epoch_reducer
from pytest_legaleval.metrics._ppi import labels_needed
from pytest_legaleval.metrics._runfiles import load_run, prediction_lines, run_reducer

__all__ = [
    "DEFAULT_STRATA",
    "SAMPLE_FILE",
    "SAMPLE_KIND",
    "SEATS_FILE",
    "ReviewSample",
    "SampleItem",
    "draw_sample",
    "join_seat",
    "load_sample",
    "open_sample",
    "review_folder",
    "sample_keys",
    "size_for_half_width",
]

SAMPLE_FILE = "sample.json"
SEATS_FILE = "seats.json"
SAMPLE_KIND = "legaleval_review_sample"
DEFAULT_STRATA = ("model", "policy_id")
POPULATION = "judge-graded items with a verdict"


def review_folder(run_dir: Path) -> Path:
    """The default review folder of a run: ``<run_dir>.review`` beside it, never inside."""
    return run_dir.parent / f"{run_dir.name}.review"


@dataclass(frozen=True, slots=True)
class SampleItem:
    """One drawn item."""

    id: str
    """The opaque id the page sees."""
    record_id: str
    model: str
    stratum: str
    shared: bool
    """A second rater labels it too."""


@dataclass(frozen=True, slots=True)
class ReviewSample:
    """A sample file, read."""

    path: Path
    run_id: str
    seed: int
    strata: tuple[str, ...]
    population: int
    """Items in the population (judge-graded items with a verdict)."""
    population_strata: Mapping[str, int]
    items: tuple[SampleItem, ...]
    document: Mapping[str, Any]

    @property
    def seats(self) -> int:
        """Raters the sample has room for: 2 when items are shared, else 1."""
        return 2 if any(item.shared for item in self.items) else 1

    def by_id(self, opaque: str) -> SampleItem | None:
        """The item of an opaque id, or ``None``."""
        for item in self.items:
            if item.id == opaque:
                return item
        return None

    def order(self, rater: str, seat: int) -> list[SampleItem]:
        """The items of ``seat``, in ``rater``'s own random order (stable across restarts)."""
        mine = [item for item in self.items if seat == 0 or item.shared]
        random.Random(f"{self.seed}/{rater}").shuffle(mine)
        return mine


def _stratum(row: Mapping[str, Any], strata: Sequence[str]) -> str:
    return " | ".join(f"{name}={row.get(name)}" for name in strata)


def _allocate(sizes: Mapping[str, int], total: int) -> dict[str, int]:
    """Largest-remainder proportional allocation of ``total`` over strata of ``sizes``."""
    population = sum(sizes.values())
    quotas = {key: total * size / population for key, size in sizes.items()}
    counts = {key: math.floor(q) for key, q in quotas.items()}
    left = total - sum(counts.values())
    ranked = sorted(quotas, key=lambda key: (-(quotas[key] - counts[key]), key))
    for key in ranked[:left]:
        counts[key] += 1
    return counts


def size_for_half_width(half_width: float, population: int) -> int:
    """Labels whose interval of the human pass rate is at most ``half_width`` each side.

    The labels-alone planning count of :func:`~pytest_legaleval.metrics._ppi.labels_needed`
    (p = 0.5, no credit for the judge: the judge's correlation is what the labels will
    measure), capped at the population.
    """
    if not 0.0 < half_width < 1.0:
        raise ConfigError(f"--half-width must be in (0, 1), got {half_width!r}")
    return min(population, labels_needed(half_width))


def _population(run_dir: Path, strata: Sequence[str]) -> tuple[str, dict[str, list[Any]]]:
    run = load_run(run_dir, with_predictions=False)
    predictions = run.path / PREDICTIONS
    if not predictions.is_file():
        raise ConfigError(f"{run.path}: the run has no {PREDICTIONS} to review")
    items = collect_items(prediction_lines(predictions), epoch_reducer(run_reducer(run)))
    fields: dict[tuple[str, str], Mapping[str, Any]] = {}
    for row in prediction_lines(predictions):
        key = (str(row.get("record_id")), str(row.get("model") or ""))
        if key in items.verdicts and key not in fields:
            fields[key] = row
    groups: dict[str, list[Any]] = defaultdict(list)
    for key in items.verdicts:
        groups[_stratum(fields[key], strata)].append(key)
    return run.run_id, groups


def draw_sample(
    run_dir: Path,
    *,
    size: int | None = None,
    half_width: float | None = None,
    strata: Sequence[str] = DEFAULT_STRATA,
    double: float = 0.0,
    seed: int | None = None,
) -> dict[str, Any]:
    """Draw a sample of the run's judged items; returns the sample file's document.

    Exactly one of ``size`` and ``half_width`` is given. ``seed`` ``None`` draws a fresh
    seed (recorded in the document).

    Raises:
        ConfigError: a bad size, fraction or field; a run without judged items.

    """
    if (size is None) == (half_width is None):
        raise ConfigError("give one of --sample N and --half-width H")
    if not 0.0 <= double <= 1.0:
        raise ConfigError(f"--double must be a fraction in [0, 1], got {double!r}")
    if not strata or any(not name or not name.isidentifier() for name in strata):
        raise ConfigError(f"--strata must name prediction fields, got {','.join(strata)!r}")
    run_id, groups = _population(run_dir, strata)
    population = sum(len(keys) for keys in groups.values())
    if population == 0:
        raise ConfigError(f"{run_dir}: the run has no judge-graded item with a verdict to review")
    if half_width is not None:
        size = size_for_half_width(half_width, population)
    assert size is not None
    if size < 1:
        raise ConfigError(f"--sample must be at least 1, got {size}")
    size = min(size, population)
    seed = secrets.randbelow(2**31) if seed is None else seed
    rng = random.Random(seed)
    counts = _allocate({key: len(keys) for key, keys in groups.items()}, size)
    drawn: list[tuple[str, Any]] = []
    for stratum in sorted(groups):
        keys = sorted(groups[stratum])
        drawn.extend((stratum, key) for key in rng.sample(keys, counts[stratum]))
    shared = set(rng.sample(range(len(drawn)), round(double * len(drawn))))
    items = [
        {
            "id": f"it_{secrets.token_hex(6)}",
            "record_id": key[0],
            "model": key[1],
            "stratum": stratum,
            "shared": index in shared,
        }
        for index, (stratum, key) in enumerate(drawn)
    ]
    requested: dict[str, Any] = (
        {"sample": size}
        if half_width is None
        else {
            "half_width": half_width,
            "labels_needed": size,
        }
    )
    return {
        "kind": SAMPLE_KIND,
        "version": 1,
        "run_id": run_id,
        "run_dir": str(run_dir),
        "created_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "seed": seed,
        "strata": list(strata),
        "requested": requested,
        "double": double,
        "size": len(items),
        "shared": len(shared),
        "population": {
            "description": POPULATION,
            "items": population,
            "strata": {key: len(keys) for key, keys in sorted(groups.items())},
            "allocation": "proportional (largest remainders)",
        },
        "items": items,
    }


def _read_document(path: Path) -> Mapping[str, Any]:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: cannot read the review sample ({exc})") from None
    if not isinstance(document, dict) or document.get("kind") != SAMPLE_KIND:
        raise ConfigError(f"{path}: not a review sample (kind {SAMPLE_KIND!r} expected)")
    return document


def load_sample(path: Path) -> ReviewSample:
    """Read a sample file.

    Raises:
        ConfigError: the file cannot be read or is not a review sample.

    """
    document = _read_document(path)
    try:
        items = tuple(
            SampleItem(
                str(i["id"]),
                str(i["record_id"]),
                str(i["model"]),
                str(i["stratum"]),
                bool(i["shared"]),
            )
            for i in document["items"]
        )
        population = document["population"]
        return ReviewSample(
            path=path,
            run_id=str(document["run_id"]),
            seed=int(document["seed"]),
            strata=tuple(document["strata"]),
            population=int(population["items"]),
            population_strata=dict(population["strata"]),
            items=items,
            document=document,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"{path}: the review sample is damaged ({exc!r})") from None


def open_sample(folder: Path, run_dir: Path, **draw: Any) -> tuple[ReviewSample, bool]:
    """The folder's sample, drawn and written first when it has none.

    ``draw`` holds :func:`draw_sample`'s options; they are ignored when the sample exists
    (later raters join the sample as it was drawn). Returns the sample and whether it was
    drawn now.

    Raises:
        ConfigError: the sample belongs to another run, or cannot be drawn or read.

    """
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / SAMPLE_FILE
    created = False
    if not path.exists():
        document = draw_sample(run_dir, **draw)
        text = json.dumps(document, indent=1, ensure_ascii=False) + "\n"
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            pass  # another rater's process drew it first: join that one
        else:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            created = True
    sample = load_sample(path)
    run = load_run(run_dir, with_predictions=False)
    if sample.run_id != run.run_id:
        raise ConfigError(
            f"{path} is the sample of run {sample.run_id}, not of {run.run_id}; "
            "give this run a review folder of its own (--review-dir)"
        )
    return sample, created


def join_seat(folder: Path, sample: ReviewSample, rater: str) -> int:
    """The seat of ``rater`` (taken now if the rater is new), kept in ``seats.json``.

    Raises:
        ConfigError: every seat is taken by other raters.

    """
    path = folder / SEATS_FILE
    with (folder / ".seats.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        seats: dict[str, int] = {}
        if path.is_file():
            try:
                seats = dict(json.loads(path.read_text(encoding="utf-8"))["raters"])
            except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
                raise ConfigError(f"{path}: cannot read the raters' seats ({exc!r})") from None
        if rater in seats:
            return seats[rater]
        free = [seat for seat in range(sample.seats) if seat not in seats.values()]
        if not free:
            taken = ", ".join(sorted(seats))
            more = "" if sample.seats > 1 else " (draw it with --double F for a second rater)"
            raise ConfigError(
                f"every seat of this sample is taken ({taken}){more}; rater {rater!r} "
                "cannot join it"
            )
        seats[rater] = free[0]
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"raters": seats}, indent=1) + "\n", encoding="utf-8")
        os.replace(tmp, path)
        return free[0]


def sample_keys(sample: ReviewSample) -> Iterable[tuple[str, str]]:
    """``(record_id, model)`` of every drawn item."""
    return ((item.record_id, item.model) for item in sample.items)
