"""The checks made before any call (metrics._run_checks) and the "nothing evaluated" rule."""

from __future__ import annotations

import pytest

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.metrics._counts import nothing_evaluated
from pytest_legaleval.metrics._gates import parse_gates
from pytest_legaleval.metrics._run_checks import RecordFields, check_gate_paths

RECORDS = [
    {"dataset": "lexam", "task_type": "mcq", "tags": ["tax"], "metadata": {"exam": "E1"}},
    {"dataset": "lexam", "task_type": "mcq", "tags": [], "metadata": {"exam": "E2"}},
    {"dataset": "legalbench", "task_type": "mcq", "tags": ["hearsay"], "metadata": {}},
]


def test_the_cluster_field_nearest_names_and_the_records_lacking_it() -> None:
    fields = RecordFields("metadata.exam")
    fields.extend(RECORDS)
    assert fields.check_cluster_field() == 1  # legalbench's record: a cluster of its own
    typo = RecordFields("metadata.exma")
    typo.extend(RECORDS)
    with pytest.raises(ConfigError, match=r"none of the 3 records.*did you mean metadata\.exam"):
        typo.check_cluster_field()
    far = RecordFields("zzz")
    far.extend(RECORDS)
    with pytest.raises(ConfigError, match=r"the records' fields: dataset, metadata"):
        far.check_cluster_field()
    assert RecordFields(None).check_cluster_field() == 0


def test_gate_slices_are_checked_against_records_and_models() -> None:
    gates = parse_gates(["tag=hearsay:pass_rate>=0.5", "model=m1:pass_rate>=0.5"])
    fields = RecordFields(None, gates)
    fields.extend(RECORDS)
    fields.check_gate_slices(gates, ["m1"])  # both exist
    bad = parse_gates(["tag=hearsy:pass_rate>=0.5"])
    fields = RecordFields(None, bad)
    fields.extend(RECORDS)
    with pytest.raises(ConfigError, match=r"did you mean 'hearsay'\? the run's tag values"):
        fields.check_gate_slices(bad)
    with pytest.raises(ConfigError, match=r"model='m2'.*values: m1"):
        fields.check_gate_slices(parse_gates(["model=m2:pass_rate>=0.5"]), ["m1"])
    # a policy is assigned by the grading plan: not checked against records
    policy = parse_gates(["policy=p:pass_rate>=0.5"])
    fields = RecordFields(None, policy)
    fields.extend(RECORDS)
    fields.check_gate_slices(policy)


def test_gate_paths_start_with_a_summary_field() -> None:
    check_gate_paths(parse_gates(["benchmarks.legalbench.score>=0.5", "pass_rate>=0.5"]))
    check_gate_paths(parse_gates(["uncertainty.se_clustered<=0.05", "by_model.m.error_rate<=0"]))
    with pytest.raises(ConfigError, match="no field 'judge_audti'; did you mean judge_audit"):
        check_gate_paths(parse_gates(["judge_audti.cohen_kappa>=0.6"]))


def test_nothing_evaluated_names_the_reasons() -> None:
    skipped = {
        "total_items": 6,
        "skipped_items": 5,
        "error_items": 1,
        "outcomes_by_reason": {"needs_judge": 5, "missing_response": 1},
    }
    assert nothing_evaluated(skipped) == (
        "5 items need --judge-model (graded by an LLM judge); 1 item has no answer in --responses"
    )
    # answers asked for without grading: the run did its job
    assert nothing_evaluated(skipped, generate_ungraded=True) is None
    assert nothing_evaluated({**skipped, "passed_items": 1}) is None
    assert nothing_evaluated({"total_items": 0}) is None
    odd = {"total_items": 2, "skipped_items": 2, "outcomes_by_reason": {"x": "2", "y": True}}
    assert nothing_evaluated(odd) == "2 items, none with a verdict"
