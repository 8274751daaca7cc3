"""``prbench``: PRBench (professional reasoning, legal and finance) as ``rubric_qa``.

Layout sources: the dataset card of ScaleAI/PRBench on Hugging Face (CC-BY-4.0, Parquet;
its ``dataset_info`` lists the columns and types below), the rows LBR keeps
(DidroPlatform/EU-Legal-Benchmark, ``data/curated/prbench_legal_hard_europe.jsonl``, read
by its ``src/data/build_for_eval.py``), and the benchmark's own code (scaleapi/PRBench,
``util.py``, ``criteria.py``). A row is one conversation: ``task`` (its id), ``turns``,
``prompt_0`` … ``prompt_9`` and ``response_0`` … ``response_8`` (empty turns are null),
``reference_texts_0`` … ``reference_texts_9`` (lists of documents given with that turn),
``rubric`` (criteria with ``id``, ``title`` and ``annotations``: ``weight_class``, one
``<class>_weight`` per class, ``criteria_description``, ``criteria_category``), and
``field``, ``topic``, ``expert``, ``scratchpad``, ``decision_type``, ``economic_pathway``,
``canary``. JSONL, JSON or Parquet.

Every turn is kept in ``messages``: each prompt as a user turn, with its reference texts
put before it as ``Reference Text i:`` blocks (as PRBench's ``process_reference_texts``
does), each response as an assistant turn; the last user turn is also the ``prompt``.
Criterion ids, titles, descriptions and weights are kept (negative weights are
penalties). Id ``prbench:<task>`` (the upstream task id is ``metadata.source_id``).

Protocols (``importers.protocols``): ``prbench_official`` (the default) keeps every turn
byte for byte as PRBench's ``evals.py`` builds its conversation (turns not stripped; a
turn counts when it has text other than blanks), each criterion's ``title`` as given and
its weight where ``weight_class`` names it (a row without one is refused: upstream cannot
score it). Reference texts reach a turn exactly when upstream's code would prepend them:
``process_reference_texts`` prepends a *list* cell. The public ``evals.py`` (d6a7042)
loads the Hub's Parquet release with ``datasets`` and ``to_pandas()``, which hands that
code arrays, so rows from Parquet files get no reference blocks under this protocol; the
earlier ``evals.py`` (070abdf) reads JSON Lines, whose lists it prepends, so rows from JSON
or JSON Lines get them (a list cell beside a turn with no prompt, where upstream would stop
on ``str + None``, adds nothing).
``lbr`` keeps LBR's ``prbench_v1`` policy and ``prbench_paper_v1`` our paper-style one,
both with the stripped turns and every reference text, as before.

The Hard subsets repeat tasks of the main splits (the same ``task``, another ``canary``):
one record per task, ``metadata.splits`` listing every split it belongs to (from the
canary ``prbench:sample:<split>:<task>``, else the file name, else ``field``) and
``metadata.split_positions`` its place among each split's rows (PRBench averages a split's
tasks in its file's order).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_legaleval.importers.base import (
    Importer,
    ImportOptions,
    RowError,
    SourceRow,
    expand_files,
    new_record,
    short_hash,
)
from pytest_legaleval.importers.protocols import resolve_protocol
from pytest_legaleval.importers.readers import read_table
from pytest_legaleval.protocols.prbench import criterion_weight

__all__ = ["IMPORTER", "conversation", "official_conversation", "rubric", "splits_of"]

OFFICIAL = "prbench_official"
_POLICY = {
    "prbench_official": OFFICIAL,
    "lbr": "prbench_v1",
    "prbench_paper_v1": "prbench_paper_v1",
}
SPLITS = ("finance_hard", "legal_hard", "finance", "legal")
"""Split names, the longer first (a file name holding ``legal_hard`` also holds ``legal``)."""

TURNS = 10
_TRAILING_NUMBER = re.compile(r"(\d+)$")
# PRBench's own code (criteria.py) reads the weight named by the criterion's
# ``weight_class``; LBR takes the first weight present in this order. They differ: 140 of
# the 721 criteria LBR curated carry two weights (a "critically detrimental" criterion with
# critically_detrimental_weight -8.0 and critically_important_weight 8.0), where LBR's
# order scores a penalty as a reward. ``prbench`` follows PRBench; ``lbr`` keeps LBR's order.
WEIGHT_KEYS = (
    "critically_important_weight",
    "important_weight",
    "slightly_important_weight",
    "detrimental_weight",
    "slightly_detrimental_weight",
    "critically_detrimental_weight",
)
_METADATA_FIELDS = (
    "topic", "field", "expert", "category", "decision_type", "economic_pathway",
    "classified_countries", "scratchpad",
)  # fmt: skip


def conversation(row: Mapping[str, Any]) -> tuple[list[dict[str, str]], list[dict[str, Any]]]:
    """The row's turns as ``messages`` and as LBR's ``source_turns``.

    Raises:
        RowError: a prompt or response that is not text, or no user turn at all.

    """
    references: dict[int, list[str]] = {i: [] for i in range(TURNS)}
    for key, value in row.items():
        match = _TRAILING_NUMBER.search(str(key))
        if "reference" not in str(key).lower() or not match or not isinstance(value, list):
            continue
        turn = int(match.group(1))
        if turn < TURNS:
            references[turn].extend(v.strip() for v in value if isinstance(v, str) and v.strip())
    messages: list[dict[str, str]] = []
    turns: list[dict[str, Any]] = []
    for turn in range(TURNS):
        prompt, response = row.get(f"prompt_{turn}"), row.get(f"response_{turn}")
        for name, value in ((f"prompt_{turn}", prompt), (f"response_{turn}", response)):
            if value is not None and not isinstance(value, str):
                raise RowError(f"{name} is {type(value).__name__}, not text")
        prompt_text, response_text = (prompt or "").strip(), (response or "").strip()
        turns.append(
            {
                "turn": turn,
                "prompt": prompt_text,
                "response": response_text,
                "reference_texts": references[turn],
            }
        )
        if prompt_text:
            blocks = [f"Reference Text {i}:\n{ref}" for i, ref in enumerate(references[turn])]
            messages.append({"role": "user", "content": "\n\n".join([*blocks, prompt_text])})
        if response_text:
            messages.append({"role": "assistant", "content": response_text})
    if not any(m["role"] == "user" for m in messages):
        raise RowError("no user turn: prompt_0 … prompt_9 are all empty")
    return messages, turns


def official_conversation(row: Mapping[str, Any], prepend: bool) -> list[dict[str, str]]:
    """The turns as ``evals.py`` builds them: unstripped, references where it puts them.

    Raises:
        RowError: no user turn.

    """
    prompts: dict[int, object] = {i: row.get(f"prompt_{i}") for i in range(TURNS)}
    if prepend:
        for key, value in row.items():
            if "reference" not in str(key) or not isinstance(value, list):
                continue
            number = str(key).split("_")[-1]
            if not number.isdigit() or int(number) >= TURNS:
                continue
            current = prompts[int(number)]
            if not isinstance(current, str):
                continue  # upstream's ``str + None`` would stop the run here
            body = "".join(f"Reference Text {i}:\n{ref}\n\n" for i, ref in enumerate(value))
            prompts[int(number)] = body + current
    messages: list[dict[str, str]] = []
    for turn in range(TURNS):
        prompt, response = prompts[turn], row.get(f"response_{turn}")
        if isinstance(prompt, str) and prompt.strip():
            messages.append({"role": "user", "content": prompt})
        if isinstance(response, str) and response.strip():
            messages.append({"role": "assistant", "content": response})
    if not any(m["role"] == "user" for m in messages):
        raise RowError("no user turn: prompt_0 … prompt_9 are all empty")
    return messages


def official_rubric(row: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The criteria as ``criteria.py`` reads them: title as given, weight by weight_class.

    Raises:
        RowError: a criterion upstream cannot read (no title text, no weight_class weight).

    """
    items = row.get("rubric")
    if isinstance(items, str):
        try:
            items = json.loads(items)
        except ValueError:
            raise RowError("rubric is text that is not JSON") from None
    if not isinstance(items, list) or not items:
        raise RowError("rubric is not a list of criteria")
    criteria: list[dict[str, Any]] = []
    for position, item in enumerate(items):
        annotations = item.get("annotations") if isinstance(item, dict) else None
        title = item.get("title") if isinstance(item, dict) else None
        if not isinstance(annotations, dict) or not isinstance(title, str) or not title:
            raise RowError(f"rubric[{position}] has no annotations or no title text")
        key, weight = criterion_weight(annotations)
        if weight is None:
            why = f"{key} is not a number" if key else "no weight_class"
            raise RowError(f"rubric[{position}]: {why}")
        criterion: dict[str, Any] = {
            "id": str(item.get("id") or f"criterion_{position + 1}"),
            "title": title,
            "weight": float(weight),
        }
        description = annotations.get("criteria_description")
        if isinstance(description, str) and description.strip():
            criterion["description"] = description.strip()
        criteria.append(criterion)
    return criteria


def splits_of(row: Mapping[str, Any], path: Path) -> list[str]:
    """The split a row says it is in: its canary, else its file name, else its field."""
    canary = row.get("canary")
    if isinstance(canary, str):
        parts = canary.split(":")
        if len(parts) >= 3 and parts[2] in SPLITS:
            return [parts[2]]
    for name in SPLITS:
        if name in path.name.lower():
            return [name]
    field = row.get("field")
    if isinstance(field, str) and field.strip().lower() in SPLITS:
        return [field.strip().lower()]
    return []


def _weight(annotations: Mapping[str, Any], lbr_order: bool) -> float | None:
    if not lbr_order:
        weight_class = annotations.get("weight_class")
        if isinstance(weight_class, str):
            value = annotations.get(weight_class.replace(" ", "_") + "_weight")
            if isinstance(value, int | float) and not isinstance(value, bool):
                return float(value)
    for key in WEIGHT_KEYS:
        value = annotations.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    return None


def rubric(row: Mapping[str, Any], *, lbr_order: bool = False) -> list[dict[str, Any]]:
    """The row's criteria: id, title, description and weight of each."""
    items = row.get("rubric")
    if isinstance(items, str):  # a JSON text column in CSV-like exports
        try:
            items = json.loads(items)
        except ValueError:
            raise RowError("rubric is text that is not JSON") from None
    criteria: list[dict[str, Any]] = []
    for position, item in enumerate(items if isinstance(items, list) else []):
        if not isinstance(item, dict):
            continue
        criterion: dict[str, Any] = {
            "id": str(item.get("id") or f"criterion_{position + 1}"),
            "title": str(item.get("title") or f"Criterion {position + 1}").strip(),
        }
        annotations = item.get("annotations")
        if isinstance(annotations, dict):
            description = annotations.get("criteria_description")
            if isinstance(description, str) and description.strip():
                criterion["description"] = description.strip()
            weight = _weight(annotations, lbr_order)
            if weight is not None:
                criterion["weight"] = weight
        criteria.append(criterion)
    return criteria


def task_id(row: Mapping[str, Any]) -> str:
    """The row's source id: ``task`` (else ``id``, ``canary``, a hash of the row)."""
    for key in ("task", "id", "canary"):
        if row.get(key):
            return str(row[key])
    return short_hash(json.dumps(dict(row), sort_keys=True, ensure_ascii=False, default=str))


def record(
    row: Mapping[str, Any],
    protocol: str = "lbr",
    path: Path | None = None,
    splits: Sequence[str] = (),
    positions: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """The ``rubric_qa`` record of one PRBench conversation under ``protocol``.

    Raises:
        RowError: no user turn, a non-text turn, a criterion the official protocol cannot
            weigh.

    """
    policy = _POLICY[protocol]
    if policy == OFFICIAL:
        prepend = path is None or path.suffix.lower() != ".parquet"
        messages = official_conversation(row, prepend)
        criteria = official_rubric(row)
    else:
        messages, _ = conversation(row)
        criteria = rubric(row)
    source_id = task_id(row)
    metadata: dict[str, Any] = {"policy_id": policy, "source_id": source_id}
    for key in (*_METADATA_FIELDS, "turns", "canary"):
        if row.get(key) is not None:
            metadata[key] = row[key]
    if splits:
        metadata["splits"] = list(splits)
    if positions:
        metadata["split_positions"] = dict(positions)
    prompt = [m["content"] for m in messages if m["role"] == "user"][-1]
    out = new_record(f"prbench:{source_id}", "prbench", "rubric_qa", prompt, metadata=metadata)
    out["messages"] = messages
    out["rubric"] = criteria
    return out


def files(paths: Sequence[Path]) -> list[Path]:
    """The PRBench data files among ``paths``."""
    return expand_files(paths, (".jsonl", ".json", ".parquet"), "PRBench")


def rows(paths: Sequence[Path], options: ImportOptions) -> Iterator[SourceRow]:
    """One row per task, in the order tasks first appear, with every split it is in.

    A task the Hard subsets repeat is one record: the first row's content, the splits of
    all its rows (``--split NAME`` keeps the tasks in that split).
    """
    protocol = resolve_protocol("prbench", options.protocol) or OFFICIAL
    seen: dict[str, tuple[str, Path, Any, dict[str, int]]] = {}
    counters: dict[str, int] = {}
    unread: list[tuple[str, Any]] = []
    for path in files(paths):
        for position, row in enumerate(read_table(path), start=1):
            where = f"{path.name} row {position}"
            if not isinstance(row, Mapping):
                unread.append((where, row))
                continue
            key = task_id(row)
            if key not in seen:
                seen[key] = (where, path, row, {})
            places = seen[key][3]
            for split in splits_of(row, path):
                if split not in places:  # its place among its split's rows, files in order
                    places[split] = counters[split] = counters.get(split, -1) + 1
    for where, row in unread:
        yield SourceRow.built(where, None, record, row)
    for where, path, row, places in seen.values():
        ordered: list[str] = [
            s for s in ("finance", "legal", "finance_hard", "legal_hard") if s in places
        ]
        ordered += sorted(set(places) - set(ordered))
        if options.split is not None and options.split not in ordered:
            continue
        first = ordered[0] if ordered else None
        positions = {s: places[s] for s in ordered}
        yield SourceRow.built(where, first, record, row, protocol, path, ordered, positions)


IMPORTER = Importer(
    name="prbench",
    what="PRBench conversations: every turn, reference texts, weighted rubric",
    version=2,
    files=files,
    rows=rows,
)
