"""The registry of benchmark protocols: a benchmark is one object.

A *protocol* is how a benchmark is officially prompted and scored — LegalBench's
``legalbench_official``, LEXam's ``lexam_official`` (``grading/official/``), and any that
a user or a later benchmark adds. Everything that makes it that benchmark is on the
:class:`BenchmarkProtocol` object; the layers above iterate over :func:`protocols` and name
no benchmark:

- ``metrics._benchmarks.benchmark_figures`` builds ``metrics_summary.json``'s
  ``benchmarks.<benchmark>`` block from each protocol's :meth:`~BenchmarkProtocol.tally`
  and :meth:`~BenchmarkProtocol.figures` (and gates read those figures by path);
- ``run.tally`` and the recorder compute the block when a line's ``policy_id`` is a
  registered protocol's :attr:`~BenchmarkProtocol.id`;
- ``run.console.benchmark_lines`` prints :meth:`~BenchmarkProtocol.terminal_line`;
- ``report.official`` renders :meth:`~BenchmarkProtocol.report_tables` and
  :meth:`~BenchmarkProtocol.cards` (plain data: :class:`Table`, :class:`Cell`,
  :class:`Card`; the report escapes every text and owns the markup);
- ``grading._registry.default_registry`` gives the protocol's records its
  :meth:`~BenchmarkProtocol.graders`.

How to write one (a toy example: ``tests/unit/test_protocol_registry.py``):

1. Subclass :class:`BenchmarkProtocol` in one module of the grading layer (it imports
   nothing above ``grading``: no metrics, run, report or pipeline). Set ``id`` (the policy
   id its records carry in ``metadata.policy_id``; a policy of that id must exist, built in
   or in the user's policy directory), ``benchmark`` (the key under ``benchmarks`` and the
   dataset name its records carry), ``title``, ``version``, ``upstream`` (repo, commit)
   and, when an importer assigns it, ``source`` (the ``legaleval import SOURCE`` /
   ``--dataset SOURCE:PATH`` name).
2. Implement :meth:`~BenchmarkProtocol.tally` (a fresh :class:`Tally` per model and
   epoch: ``add(line, record)`` reads one prediction line) and
   :meth:`~BenchmarkProtocol.figures` (the figures of one model from its epochs' tallies:
   a JSON-ready dict, with ``not_scored``); optionally ``terminal_line``,
   ``report_tables``, ``cards``, ``report_intro`` and ``graders``.
3. Register it: :func:`register` (built-ins are registered on first use of the registry,
   from ``grading/official/``'s ``PROTOCOL_MODULES``; a user's from a conftest or plugin).

Importers and protocols (siblings in DESIGN §11, so neither imports the other): an importer
only *names* the protocol — it writes ``metadata.policy_id = protocol.id`` and keeps the
fields the protocol reads (``metadata.task``, ``split``, ``course``, gold answers). Which
``--protocol`` names an import source accepts is the importer's table
(``importers.protocols.PROTOCOLS``, names only); a protocol whose ``source`` is set must be
one of that source's choices (a unit test checks the two agree). Prompt texts that both an
importer and a grader need (LEXam's answering prompts, which its judge reads back) live
below both, in :mod:`pytest_legaleval.protocols`, and the protocol's module re-exports them.
Anything that needs the protocol and the records at once runs in the layers above, through
this registry.
"""

from __future__ import annotations

import importlib
import math
import threading
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.records import Record

if TYPE_CHECKING:
    from pytest_legaleval.grading._base import Grade, Grader, GradeRequest

__all__ = [
    "DASH",
    "OFFICIAL_PACKAGE",
    "BenchmarkProtocol",
    "Card",
    "Cell",
    "ReferenceJudge",
    "Row",
    "Table",
    "Tally",
    "Upstream",
    "count",
    "figure",
    "heading",
    "mapping",
    "protocol_for_benchmark",
    "protocol_for_policy",
    "protocols",
    "reference_formats",
    "reference_judge",
    "register",
    "unregister",
]

OFFICIAL_PACKAGE = "pytest_legaleval.grading.official"
"""The package of the built-in protocols; its ``PROTOCOL_MODULES`` lists their modules."""

DASH = "–"
"""What a table shows for a figure that is not a finite number."""


def figure(value: Any, digits: int = 3) -> str:
    """A figure with ``digits`` decimals; :data:`DASH` when not a finite number (or a bool)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return DASH
    return f"{value:.{digits}f}" if math.isfinite(value) else DASH


def mapping(value: Any) -> Mapping[str, Any]:
    """``value`` when a mapping, else an empty one (a figures block read back may hold anything)."""
    return value if isinstance(value, Mapping) else {}


def count(value: Any) -> str:
    """A count with thousands separators; :data:`DASH` for ``None`` or a bool; else as text."""
    if isinstance(value, bool) or value is None:
        return DASH
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if not math.isfinite(value):
            return DASH
        shown = f"{value:,.3f}"
        # -0.000: a value that rounds to zero is zero, whatever its sign
        return shown[1:] if shown.startswith("-") and not shown.strip("-0.,") else shown
    return str(value)


@dataclass(frozen=True)
class Upstream:
    """The upstream code a protocol follows: ``repo`` (``owner/name``) at ``commit``."""

    repo: str
    commit: str


@dataclass(frozen=True)
class Cell:
    """One table cell, as data: the report escapes ``text`` and ``note``.

    Attributes:
        text: the value as shown (``"0.688"``, ``"—"``).
        kind: CSS classes (``"num"``, ``"num headline"``, ``"manual"``, ``""``).
        note: a small aside after the value (``"(2)"``: a count), or ``None``.
        title: a tooltip, or ``None``.
        data: ``data-*`` attributes, ``(("figure", "mcq"),)``.
        span: the columns it spans.
        header: a ``<th>`` (a heading cell) rather than a ``<td>``.

    """

    text: str
    kind: str = "num"
    note: str | None = None
    title: str | None = None
    data: tuple[tuple[str, str], ...] = ()
    span: int = 1
    header: bool = False


def heading(text: str, *, title: str | None = None, span: int = 1) -> Cell:
    """A heading cell (``header=True``, no CSS class): a table's column or group name."""
    return Cell(text, kind="", title=title, span=span, header=True)


@dataclass(frozen=True)
class Row:
    """One table row: its cells, its ``data-*`` attributes and CSS classes."""

    cells: tuple[Cell, ...]
    data: tuple[tuple[str, str], ...] = ()
    kind: str = ""


@dataclass(frozen=True)
class Table:
    """One table of a protocol's report section, as data.

    Attributes:
        id: the table's HTML id (``"legalbench-headline"``), unique on the page.
        head: heading rows (cells with ``header=True``).
        rows: body rows.
        heading: a small heading above the table, or ``None``.
        scroll: wrap the table in a horizontally scrolling box (a wide table).
        after: a hint below the table (``"12 more task rows are in …"``), or ``None``.

    """

    id: str
    head: tuple[Row, ...]
    rows: tuple[Row, ...]
    heading: str | None = None
    scroll: bool = False
    after: str | None = None


@dataclass(frozen=True)
class Card:
    """A headline card beside the pass rate (a one-model run).

    Attributes:
        label: ``"LegalBench score (official)"``.
        value: the figure as shown.
        path: its dotted path in ``metrics_summary.json`` (the card's ``data-metric``).
        note: a line under the value.
        help: a tooltip.

    """

    label: str
    value: str
    path: str
    note: str = ""
    help: str = ""


ReferenceJudge = Callable[["GradeRequest", Mapping[str, Any]], Awaitable["Grade"]]
"""A protocol's own judge for reference answers: (request, the judge grader's lexical
details) → the grade. A policy selects it by name (``judge.reference_format``)."""

BUILTIN_REFERENCE_FORMATS: tuple[str, ...] = ("verdict", "score_pass")
"""The reference formats of our own judge (``grading._policy_format``); protocols add theirs."""


class Tally(Protocol):
    """The official facts of one model's items in one epoch, gathered line by line."""

    def add(self, line: Mapping[str, Any], record: Record | None) -> None:
        """Read one prediction line graded under the protocol (``record``: when at hand)."""


class BenchmarkProtocol(ABC):
    """One benchmark's official protocol: everything that makes it that benchmark.

    Class attributes (set them in the subclass): ``id``, ``benchmark``, ``title``,
    ``version``, ``upstream``, ``source`` (module docstring). Methods return data; the
    layers above render it.
    """

    id: ClassVar[str]
    """The policy id its records carry (``metadata.policy_id``), ``legalbench_official``."""
    benchmark: ClassVar[str]
    """Its key under ``benchmarks`` and its records' dataset name, ``legalbench``."""
    title: ClassVar[str]
    """Its display name, ``LegalBench``."""
    version: ClassVar[int] = 1
    """Bumped whenever a figure could change for the same answers."""
    upstream: ClassVar[Upstream | None] = None
    """The upstream code it follows, or ``None``."""
    source: ClassVar[str | None] = None
    """The import source that assigns it by default (``legaleval import SOURCE``), or None."""

    @abstractmethod
    def tally(self) -> Tally:
        """A fresh tally for one model's items in one epoch."""

    @abstractmethod
    def figures(self, tallies: Sequence[Any]) -> dict[str, Any]:
        """One model's figures from its epochs' tallies (at least one), JSON-ready.

        Each figure is the mean of its per-epoch values; ``not_scored`` counts the items
        without an official verdict. Never raises on malformed facts: they are skipped.
        """

    def terminal_line(self, figures: Mapping[str, Any]) -> str:
        """The figures of one model as one terminal line's text (after the label)."""
        return "figures in metrics_summary.json"

    def report_intro(self) -> str:
        """What the figures are, one paragraph; text with ``code`` in backticks."""
        return ""

    def report_tables(self, models: Sequence[tuple[str, Mapping[str, Any]]]) -> list[Table]:
        """The tables of the report's section, from each model's figures (``""``: the run's)."""
        return []

    def cards(self, figures: Mapping[str, Any], protocol: str) -> list[Card]:
        """Headline cards of a one-model run (``protocol``: ``name vVERSION`` to show)."""
        return []

    def graders(self) -> list[tuple[Grader, str | None]]:
        """The graders its records get: (grader, task type or ``None`` for every type)."""
        return []

    def reference_judges(self) -> Mapping[str, ReferenceJudge]:
        """Its own judges of reference answers, by the policy's ``judge.reference_format``.

        LEXam's is ``lexam``; a policy that names it is judged by the protocol's judge.
        """
        return {}

    def metadata(self) -> dict[str, Any]:
        """The block's protocol fields: ``protocol``, ``protocol_version``, ``upstream``."""
        out: dict[str, Any] = {"protocol": self.id, "protocol_version": self.version}
        if self.upstream is not None:
            out["upstream"] = {"repo": self.upstream.repo, "commit": self.upstream.commit}
        return out


_LOCK = threading.Lock()
_REGISTERED: dict[str, BenchmarkProtocol] = {}
_LOADED = False


def _load_builtins() -> None:
    global _LOADED
    if _LOADED:
        return
    _LOADED = True  # set first: each module calls register(), which comes back here
    official = importlib.import_module(OFFICIAL_PACKAGE)
    for module in official.PROTOCOL_MODULES:
        importlib.import_module(f"{OFFICIAL_PACKAGE}.{module}")


def _same_class(a: BenchmarkProtocol, b: BenchmarkProtocol) -> bool:
    one, other = type(a), type(b)
    return (one.__module__, one.__qualname__) == (other.__module__, other.__qualname__)


def register(protocol: BenchmarkProtocol) -> BenchmarkProtocol:
    """Add ``protocol`` to the registry (returned, so it can decorate an instance).

    Raises:
        ConfigError: another protocol has its id or its benchmark name.

    """
    _load_builtins()
    with _LOCK:
        for known in list(_REGISTERED.values()):
            if known is protocol:
                return protocol
            if _same_class(known, protocol) and known.id == protocol.id:
                # Its module imported again (pytester's in-process runs restore
                # sys.modules): the new instance takes the old one's place.
                _REGISTERED[known.id] = protocol
                return protocol
            if protocol.id == known.id or protocol.benchmark == known.benchmark:
                raise ConfigError(
                    f"protocol {protocol.id!r} (benchmark {protocol.benchmark!r}) clashes "
                    f"with the registered {known.id!r} (benchmark {known.benchmark!r})"
                )
        _REGISTERED[protocol.id] = protocol
    return protocol


def unregister(protocol_id: str) -> None:
    """Remove the protocol ``protocol_id`` (a test's toy protocol); unknown ids are ignored."""
    with _LOCK:
        _REGISTERED.pop(protocol_id, None)


def protocols() -> Iterator[BenchmarkProtocol]:
    """Every registered protocol, in registration order (the built-ins first)."""
    _load_builtins()
    with _LOCK:
        found = list(_REGISTERED.values())
    yield from found


def protocol_for_policy(policy_id: object) -> BenchmarkProtocol | None:
    """The protocol whose id is ``policy_id``, or ``None``."""
    _load_builtins()
    return _REGISTERED.get(policy_id) if isinstance(policy_id, str) else None


def protocol_for_benchmark(name: object) -> BenchmarkProtocol | None:
    """The protocol whose ``benchmark`` is ``name`` (a key of ``benchmarks``), or ``None``."""
    for protocol in protocols():
        if protocol.benchmark == name:
            return protocol
    return None


def reference_formats() -> tuple[str, ...]:
    """Every ``judge.reference_format`` a policy may name: ours, then the protocols'."""
    found = [name for protocol in protocols() for name in protocol.reference_judges()]
    return (*BUILTIN_REFERENCE_FORMATS, *found)


def reference_judge(name: str) -> ReferenceJudge | None:
    """The protocol judge that ``judge.reference_format`` ``name`` selects, or ``None``."""
    for protocol in protocols():
        judge = protocol.reference_judges().get(name)
        if judge is not None:
            return judge
    return None
