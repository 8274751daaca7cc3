"""The official benchmark figures of a run: ``metrics_summary.json``'s ``benchmarks`` block.

:func:`benchmark_figures` reads prediction lines (``predictions.jsonl`` rows, or the result
dicts they are made from) and, for every protocol of the registry
(:mod:`pytest_legaleval.grading._protocols`) that graded an item, builds the block its
leaderboard reports: ``benchmarks.<protocol.benchmark>``. The protocol computes the figures
(from the per-item facts its graders put in ``details.official``); this module only groups
the lines by protocol, model and epoch and adds what every block has: ``protocol``,
``protocol_version``, ``upstream``, ``models`` and ``other_protocols``.

Items without an official verdict (no response, a generation or judge call that failed,
a task unknown upstream) are not in any figure and are counted in ``not_scored``. With
several models every figure is per model under ``models``; the top-level figures are
there only when the run has one model. With several epochs each figure is the mean of
its per-epoch values (``epochs`` says how many).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from pytest_legaleval.grading._protocols import BenchmarkProtocol, protocol_for_policy, protocols
from pytest_legaleval.records import PredictionLine, Record

__all__ = ["benchmark_figures", "benchmark_protocols"]

Key = tuple[str, int]
"""(model, epoch)."""


def benchmark_protocols() -> dict[str, str]:
    """Each registered benchmark's official protocol id, by benchmark name."""
    return {protocol.benchmark: protocol.id for protocol in protocols()}


def _block(protocol: BenchmarkProtocol, tallies: list[Any]) -> dict[str, Any]:
    figures = protocol.figures(tallies)
    if len(tallies) > 1:
        figures["epochs"] = len(tallies)
    return figures


def benchmark_figures(
    lines: Iterable[PredictionLine], records: Mapping[str, Record] | None = None
) -> dict[str, Any]:
    """The ``benchmarks`` block of a run: each benchmark run under its official protocol.

    Args:
        lines: prediction lines (as ``predictions.jsonl`` holds them): ``record_id``,
            ``model``, ``epoch`` (optional), ``policy_id``, ``dataset``, ``reason``,
            ``score``, ``details`` (``details.official`` from the official graders),
            ``metadata`` and ``model_response``.
        records: the run's records by id, when at hand (a protocol may score an item
            graded without ``details.official`` from its answer and the record's gold).

    Returns:
        ``{"<benchmark>": {...}}`` — only the benchmarks that have an item under their
        official protocol; each with ``protocol``, ``protocol_version``, ``upstream``,
        ``other_protocols`` (items of the same dataset graded under another policy, by
        policy), ``models`` (per model) and, for a one-model run, the model's figures at
        the top level. Never raises on a malformed line: it is skipped.

    """
    known = {protocol.benchmark: protocol for protocol in protocols()}
    tallies: dict[str, dict[Key, Any]] = {name: {} for name in known}
    others: dict[str, dict[str, int]] = {name: defaultdict(int) for name in known}
    for line in lines:
        if not isinstance(line, Mapping):
            continue
        policy = line.get("policy_id")
        protocol = protocol_for_policy(policy)
        if protocol is None or protocol.benchmark not in known:
            dataset = line.get("dataset", line.get("dataset_id"))
            if isinstance(dataset, str) and dataset in others:
                others[dataset][str(policy)] += 1
            continue
        epoch = line.get("epoch")
        key = (str(line.get("model", "")), epoch if isinstance(epoch, int) else 0)
        tally = tallies[protocol.benchmark].get(key)
        if tally is None:
            tally = tallies[protocol.benchmark][key] = protocol.tally()
        record = records.get(str(line.get("record_id"))) if records is not None else None
        tally.add(line, record)
    out: dict[str, Any] = {}
    for name, by_key in tallies.items():
        if not by_key:
            continue
        protocol = known[name]
        models: dict[str, dict[str, Any]] = {}
        for model in sorted({m for m, _ in by_key}):
            epochs = [by_key[k] for k in sorted(k for k in by_key if k[0] == model)]
            models[model] = _block(protocol, epochs)
        block: dict[str, Any] = protocol.metadata()
        if len(models) == 1:
            block.update(next(iter(models.values())))
        block["models"] = models
        block["other_protocols"] = dict(sorted(others[name].items()))
        out[name] = block
    return out
