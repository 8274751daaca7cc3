"""The labels' population: stated by the audit, and PPI refused outside it; the report's table."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_legaleval.metrics._audit import judge_audit
from pytest_legaleval.metrics._audit_items import collect_items, match_labels
from pytest_legaleval.metrics._audit_text import expert_lines
from pytest_legaleval.metrics._human_labels import labels_from_rows
from pytest_legaleval.metrics._labelled_population import find_sample, population_check
from pytest_legaleval.report.audit import AuditView
from pytest_legaleval.report.calibration import calibration_section

from ..review_run import RUN_ID, predictions, write_run


def _sample(run: Path, keys: list[tuple[str, str]], population: int) -> dict[str, object]:
    return {
        "kind": "legaleval_review_sample", "run_id": RUN_ID, "seed": 1, "size": len(keys),
        "shared": 0, "strata": ["model", "policy_id"],
        "population": {"description": "judge-graded items with a verdict", "items": population},
        "items": [{"record_id": r, "model": m} for r, m in keys],
    }  # fmt: skip


def test_ppi_is_refused_for_a_population_the_labels_were_not_drawn_from(tmp_path: Path) -> None:
    run = write_run(tmp_path)
    lines = predictions(run)
    keys = [(line["record_id"], line["model"]) for line in lines[:6]]
    rows = [{"record_id": r, "model": m, "passed": i % 2 == 0, "rater": "ann"}
            for i, (r, m) in enumerate(keys)]  # fmt: skip
    labels = labels_from_rows(rows)
    items = collect_items(lines)
    matched = match_labels(labels, items)
    fine = _sample(run, keys, 54)
    stated, reason = population_check(fine, RUN_ID, items, matched)
    assert reason is None and stated["population_items"] == 54 and stated["size"] == 6
    for sample, run_id, text in (
        (fine, "run_01SOMEOTHER0000000000000", "drawn from run"),
        (_sample(run, keys, 50), RUN_ID, "drawn from 50 judged items"),
        (_sample(run, keys[:3], 54), RUN_ID, "not in the drawn sample"),
    ):
        assert text in str(population_check(sample, run_id, items, matched)[1])
    from pytest_legaleval.metrics._audit import audit_from_items

    refused = audit_from_items(
        items, matched, labels=labels, sample=_sample(run, keys[:3], 54), run_id=RUN_ID
    )
    for block in (refused.overall, *refused.by_model.values(), *refused.by_policy.values()):
        assert block["ppi_pass_rate"] is None
        assert "not in the drawn sample" in block["notes"]["ppi_pass_rate"]
    given = audit_from_items(items, matched, labels=labels, sample=fine, run_id=RUN_ID)
    assert given.overall["ppi_pass_rate"] is not None
    assert given.overall["sample"]["run_id"] == RUN_ID
    assert judge_audit(lines, labels).overall["expert_agreement"]["items"] is None


def test_the_sample_is_found_beside_the_labels(tmp_path: Path) -> None:
    folder = tmp_path / "run.review"
    (folder / "labels").mkdir(parents=True)
    (folder / "labels" / "ann.jsonl").write_text("")
    assert find_sample(folder / "labels") is None
    (folder / "sample.json").write_text(json.dumps({"kind": "legaleval_review_sample"}))
    for path in (folder / "labels", folder / "labels" / "ann.jsonl"):
        found = find_sample(path)
        assert found is not None and found["path"] == str(folder / "sample.json")
    (folder / "sample.json").write_text("{broken")
    assert find_sample(folder / "labels") is None and find_sample(None) is None


def test_terminal_and_report_show_judge_and_experts_side_by_side() -> None:
    experts = {
        "raters": ["ann", "bob"], "shared_items": 40, "method": "cohen_kappa", "kappa": 0.71,
        "kappa_ci95": [0.52, 0.88], "agreement": 0.9, "agreement_ci95": [0.8, 1.0],
        "krippendorff_alpha": 0.7, "krippendorff_alpha_ci95": [0.5, 0.9], "judge_kappa": 0.58,
        "judge_kappa_by_rater": {}, "notes": {},
    }  # fmt: skip
    block = {
        "expert_agreement": {"items": experts, "criteria": None, "by_criterion": {}},
        "sample": {"population": "judge-graded items with a verdict", "run_id": RUN_ID,
                   "population_items": 340, "size": 60, "strata": ["model"], "seed": 7},
        "notes": {},
    }  # fmt: skip
    lines = expert_lines(block)
    assert any("judge 0.58 vs experts 0.71 [0.5200, 0.8800]" in line
               and "on 40 shared items (ann, bob)" in line for line in lines), lines  # fmt: skip
    assert any("340 items; 60 drawn" in line for line in lines)
    html = calibration_section(AuditView(block=block))
    assert 'id="audit-experts"' in html and 'id="audit-sample"' in html
    assert "0.58" in html and "0.71" in html and "ann, bob" in html


def test_a_run_audited_with_review_labels_states_their_population(tmp_path: Path) -> None:
    # What a pytest run given --human-labels <review folder>/labels computes (judge_audit).
    from pytest_legaleval.datasets.review import ReviewDesk, open_sample, review_folder
    from pytest_legaleval.metrics._human_labels import read_human_labels

    run = write_run(tmp_path)
    folder = review_folder(run)
    sample, _ = open_sample(folder, run, size=10, seed=2)
    desk = ReviewDesk(folder, sample, run)
    while (shown := desk.next_item("ann")) is not None:
        desk.submit("ann", {"item": shown["item"]["id"], "passed": True})
    labels = read_human_labels(folder / "labels")
    assert labels.sample is not None and labels.sample["run_id"] == RUN_ID
    lines = predictions(run)
    audit = judge_audit(lines, labels).summary_block()
    assert audit["sample"]["size"] == 10 and audit["labelled"] == 10
    assert audit["ppi_pass_rate"] is not None
    rerun = [{**line, "run_id": "run_01RERUN00000000000000000"} for line in lines]
    refused = judge_audit(rerun, labels).summary_block()
    assert refused["ppi_pass_rate"] is None
    assert "not from this run" in refused["notes"]["ppi_pass_rate"]
