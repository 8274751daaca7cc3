"""Checks of a run's figures against its records, made before any call is paid for.

A typo in ``--cluster-by metadata.coures`` used to be accepted (every record then a cluster
of its own: "20 clusters, 1.00×"), and a gate naming a slice no record is in
(``dataset=lexm:pass_rate>=0.8``) failed only after the whole run had been paid for. Here
the records are read once and such mistakes become usage errors that list what exists:

- :meth:`RecordFields.check_cluster_field`: no record has the field — an error naming the
  nearest dotted field names; some lack it — their number, for a warning (they are
  clusters of their own, as ``unclustered`` counts them);
- :meth:`RecordFields.check_gate_slices`: a slice value no record (or model) has;
- :func:`check_gate_paths`: a metric path whose first name is no field of
  ``metrics_summary.json``.

Standard library only; fed plain dicts (``metrics.power.record_fields``).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.metrics.artifacts import METRICS_SUMMARY
from pytest_legaleval.metrics.clustered import cluster_value
from pytest_legaleval.metrics.gate_paths import parse_path
from pytest_legaleval.metrics.gates import METRICS, Gate

__all__ = ["SUMMARY_FIELDS", "RecordFields", "check_gate_paths", "summary_fields"]

MAX_PATHS = 2_000
"""Distinct dotted field names kept for the hints (a dataset with a key per record would
otherwise grow without bound)."""
MAX_VALUES = 10_000
"""Distinct values kept per gated slice key."""
_SHOWN = 8

SUMMARY_FIELDS: frozenset[str] = frozenset(
    {
        "run_id", "metrics_version", "computed_at", "models", "price_table", "bootstrap",
        "by_model", "uncertainty", "benchmarks", "judge_audit", "judge_consistency",
        "epochs", "pass_at_k", "pass_hat_k", "pass_at_k_records", "incomplete_records",
        "flaky_records", "errored_epochs", "epoch_lines", "cost", "tokens", "criteria",
        "outcomes_by_reason", "failures_by_type", "score_distribution", "latency_ms",
        "attachment_warnings",
    }
)  # fmt: skip
"""Top-level blocks of ``metrics_summary.json`` besides the gate metrics' own fields."""


def _paths(node: Mapping[str, Any], prefix: str = "", depth: int = 0) -> Iterable[str]:
    for key, value in node.items():
        path = f"{prefix}{key}"
        yield path
        if isinstance(value, Mapping) and depth < 4:
            yield from _paths(value, f"{path}.", depth + 1)


def _text(value: Any) -> str:
    return str(value)


class RecordFields:
    """What a run's records hold, for the checks; fed one record dict at a time.

    Args:
        cluster_by: the ``--cluster-by`` field, or ``None``.
        gates: the parsed gates whose slice values are to be checked.
        noun: what is fed (``records``, or ``prediction lines`` for finished runs).

    """

    def __init__(
        self, cluster_by: str | None = None, gates: Sequence[Gate] = (), *, noun: str = "records"
    ) -> None:
        self.cluster_by = cluster_by or None
        self.noun = noun
        self.records = 0
        self.with_field = 0
        self.paths: set[str] = set()
        self._keys = {key for gate in gates for key, _ in gate.slice if key not in _UNCHECKED}
        self.values: dict[str, set[str]] = {key: set() for key in self._keys}

    def add(self, record: Mapping[str, Any]) -> None:
        """One record (``dataset``, ``task_type``, ``tags``, ``metadata`` …)."""
        self.records += 1
        if len(self.paths) < MAX_PATHS:
            self.paths.update(_paths(record))
        if self.cluster_by and cluster_value(record, self.cluster_by) is not None:
            self.with_field += 1
        for key in self._keys:
            seen = self.values[key]
            if len(seen) >= MAX_VALUES:
                continue
            if key == "tag":
                seen.update(_text(tag) for tag in record.get("tags") or ())
            else:
                value = cluster_value(record, key)
                if value is not None:
                    seen.add(_text(value))

    def extend(self, records: Iterable[Mapping[str, Any]]) -> None:
        """:meth:`add` every record."""
        for record in records:
            self.add(record)

    def check_cluster_field(self) -> int:
        """The records without the cluster field (0 without ``--cluster-by``).

        Raises:
            ConfigError: no record has the field; the message names the nearest ones.

        """
        if not self.cluster_by or not self.records:
            return 0
        if self.with_field == 0:
            fields = sorted(p for p in self.paths if p not in ("id", "source"))
            near = difflib.get_close_matches(self.cluster_by, fields, n=3, cutoff=0.6)
            hint = (
                f"did you mean {' or '.join(near)}?"
                if near
                else f"the records' fields: {', '.join(fields[: _SHOWN * 2]) or 'none'}"
            )
            raise ConfigError(
                f"--cluster-by {self.cluster_by}: none of the {self.records} {self.noun} has "
                f"this field, so every record would be a cluster of its own; {hint}"
            )
        return self.records - self.with_field

    def check_gate_slices(self, gates: Sequence[Gate], models: Sequence[str] = ()) -> None:
        """Every gated slice value is some record's (or, for ``model``, a run model's).

        Raises:
            ConfigError: a slice no record is in; the message lists the values there are.

        """
        for gate in gates:
            for key, value in gate.slice:
                if key == "model":
                    known = set(models)
                elif key in self.values:
                    known = self.values[key]
                else:
                    continue
                if not known or value in known:
                    continue
                shown = sorted(known)
                near = difflib.get_close_matches(value, shown, n=1, cutoff=0.6)
                more = f" (and {len(shown) - _SHOWN} more)" if len(shown) > _SHOWN else ""
                raise ConfigError(
                    f"--gate {gate.text!r}: no record of this run has {key}={value!r}, so the "
                    "gate could only fail after the whole run; "
                    + (f"did you mean {near[0]!r}? " if near else "")
                    + f"the run's {key} values: {', '.join(shown[:_SHOWN])}{more}"
                )


_UNCHECKED = frozenset({"model", "policy"})
"""Slice keys the records do not hold: ``model`` is checked against the run's models, and
a policy is assigned by the grading plan."""


def check_gate_paths(gates: Sequence[Gate]) -> None:
    """A metric path must start with a field ``metrics_summary.json`` can have.

    Raises:
        ConfigError: an unknown first name; the message lists the nearest and the blocks.

    """
    fields = summary_fields()
    for gate in gates:
        if gate.metric in METRICS:
            continue
        steps = parse_path(gate.metric)
        if not steps or steps[0][0] in fields:
            continue
        first = steps[0][0]
        near = difflib.get_close_matches(first, sorted(fields), n=3, cutoff=0.6)
        hint = f"did you mean {' or '.join(near)}? " if near else ""
        raise ConfigError(
            f"--gate {gate.text!r}: {METRICS_SUMMARY} has no field {first!r}; {hint}"
            f"gate metrics: {', '.join(sorted(METRICS))}; blocks: "
            f"{', '.join(sorted(SUMMARY_FIELDS))}"
        )


def summary_fields() -> frozenset[str]:
    """Every top-level name ``metrics_summary.json`` can hold (the counts' own included)."""
    from pytest_legaleval.metrics.summary import MetricsAccumulator

    return frozenset({*SUMMARY_FIELDS, *METRICS, *MetricsAccumulator().to_dict()})
