"""Metrics per dataset, task type, tag, policy, model and metadata key."""

from __future__ import annotations

from pytest_legaleval.metrics._slices import MISSING, SliceAccumulator, metadata_value

from .test_metrics_summary import result


def test_metadata_value_reads_nested_keys_and_marks_missing_ones() -> None:
    metadata = {"jurisdiction": "CH", "court": {"level": 2}, "flag": True, "list": [1]}
    assert metadata_value(metadata, "metadata.jurisdiction") == "CH"
    assert metadata_value(metadata, "metadata.court.level") == "2"
    assert metadata_value(metadata, "metadata.flag") == "true"
    assert metadata_value(metadata, "metadata.list") == MISSING
    assert metadata_value(metadata, "metadata.absent") == MISSING


def test_every_item_lands_in_each_of_its_slices() -> None:
    acc = SliceAccumulator(["metadata.jurisdiction"])
    acc.add(result("passed", dataset="a", record_id="a1"), tags=("tort", "contract"),
            metadata={"jurisdiction": "CH"})  # fmt: skip
    acc.add(result("failed", "wrong_answer", dataset="a", record_id="a2", policy_id=None),
            tags=("tort",), metadata={})  # fmt: skip
    acc.add(result("passed", dataset="b", task_type="rubric_qa", model="m2", record_id="b1"),
            tags=(), metadata={"jurisdiction": "DE"})  # fmt: skip
    acc.add_invalid(dataset="b", model="m2", key=("invalid", "b", 3))
    out = acc.to_dict(resamples=100)
    assert out["dimensions"] == ["dataset", "task_type", "tag", "policy", "model",
                                 "metadata.jurisdiction"]  # fmt: skip
    slices = out["slices"]
    assert slices["dataset"]["a"]["total_records"] == 2
    assert slices["dataset"]["b"]["total_records"] == 2
    assert slices["dataset"]["b"]["invalid_records"] == 1
    assert slices["tag"]["tort"]["total_records"] == 2
    assert slices["tag"]["contract"]["pass_rate"] == 1.0
    assert set(slices["task_type"]) == {"mcq", "rubric_qa"}  # the invalid item has none
    assert slices["policy"][MISSING]["total_records"] == 1
    assert slices["model"]["m2"]["total_records"] == 2
    juris = slices["metadata.jurisdiction"]
    assert {k: v["total_records"] for k, v in juris.items()} == {"CH": 1, "DE": 1, MISSING: 1}
    assert slices["tag"]["tort"]["pass_rate_ci"]["method"] == "wilson"
    assert {k: v["total_items"] for k, v in juris.items()} == {"CH": 1, "DE": 1, MISSING: 1}


def test_slices_count_records_once_and_items_per_model() -> None:
    acc = SliceAccumulator()
    for model in ("m1", "m2", "m3"):
        acc.add(result("passed", model=model, record_id="q1"), tags=("tort",))
        acc.add(result("failed", "wrong_answer", model=model, record_id="q2"), tags=("tort",))
        acc.add_invalid(dataset="d", model=model, key=("invalid", "d", 9))
    slices = acc.to_dict(resamples=50)["slices"]
    dataset = slices["dataset"]["d"]
    assert (dataset["total_records"], dataset["total_items"]) == (3, 9)
    assert (dataset["invalid_records"], dataset["invalid_items"]) == (1, 3)
    assert slices["tag"]["tort"]["total_records"] == 2
    assert slices["tag"]["tort"]["total_items"] == 6
    for model in ("m1", "m2", "m3"):
        block = slices["model"][model]
        assert (block["total_records"], block["total_items"]) == (3, 3)
        assert block["attachment_warnings"] == []  # quoted in the summary only


def test_record_counts_are_exact_in_sparse_and_dense_slices() -> None:
    """A slice keeps few records in a dict and many in a byte per record: same counts."""
    from pytest_legaleval.metrics._summary import MetricsAccumulator

    summary = MetricsAccumulator()
    acc = SliceAccumulator(index=summary.records.index)
    expected: dict[str, dict[str, set[int]]] = {}
    outcomes = [("passed", "correct"), ("failed", "wrong_answer"), ("error", "timeout"),
                ("skipped", "skipped")]  # fmt: skip
    for n in range(3000):
        tags = ("all",) + (("rare",) if n % 97 == 0 else ())
        for model in ("m1", "m2"):
            outcome, reason = outcomes[(n * 7 + (model == "m2")) % 4]
            row = result(outcome, reason, model=model, record_id=f"q{n}")
            summary.add(row)
            acc.add(row, tags=tags)
            for tag in tags:
                sets = expected.setdefault(tag, {k: set() for k in ("error", "graded", "all")})
                sets["all"].add(n)
                if outcome == "error":
                    sets["error"].add(n)
                if outcome in ("passed", "failed"):
                    sets["graded"].add(n)
    tags = acc.to_dict(resamples=10)["slices"]["tag"]
    for tag, sets in expected.items():
        block = tags[tag]
        assert block["total_records"] == len(sets["all"])
        assert block["failed_records"] == len(sets["error"])
        assert block["evaluated_records"] == len(sets["graded"] - sets["error"])
        assert block["skipped_records"] == len(sets["all"] - sets["graded"] - sets["error"])
    assert summary.to_dict(resamples=10)["total_records"] == 3000
    assert isinstance(acc.slices["tag"]["all"].records.flags, bytearray)  # dense
    assert isinstance(acc.slices["tag"]["rare"].records.flags, dict)  # 31 of 3000 records
