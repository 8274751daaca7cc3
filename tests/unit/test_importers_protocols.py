"""``--protocol``: imports assign the official protocol unless told to use one of ours."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_legaleval.cli import main
from pytest_legaleval.errors import ConfigError
from pytest_legaleval.grading._base import Grade, GradeRequest
from pytest_legaleval.grading._registry import GraderRegistry, default_registry
from pytest_legaleval.grading.official.graders import (
    LegalbenchOfficialGrader,
    LexamMcqOfficialGrader,
)
from pytest_legaleval.importers import ImportOptions, resolve_import, run_import
from pytest_legaleval.importers.protocols import PROTOCOLS, resolve_protocol
from pytest_legaleval.records import Record

TASKS = Path(__file__).resolve().parents[1] / "data" / "importers" / "legalbench" / "tasks"


def _records(tmp_path: Path, protocol: str | None) -> dict[str, dict[str, Any]]:
    out = tmp_path / f"{protocol}.jsonl"
    summary = run_import(
        "legalbench", [TASKS], out, options=ImportOptions(protocol=protocol), force=True
    )
    assert summary.failed == 0
    lines = out.read_text(encoding="utf-8").split("\n")[:-1]
    return {json.loads(line)["id"]: json.loads(line) for line in lines}


def test_the_default_is_the_official_protocol_and_ours_changes_prompt_and_policy_only(
    tmp_path: Path,
) -> None:
    official, ours = _records(tmp_path, None), _records(tmp_path, "legalbench")
    assert official == _records(tmp_path, "legalbench_official")
    assert official.keys() == ours.keys() and len(official) == 29
    for record_id, record in official.items():
        other = ours[record_id]
        assert (record["metadata"]["policy_id"], other["metadata"]["policy_id"]) == (
            "legalbench_official", "legalbench",
        )  # fmt: skip
        changed = {"prompt", "metadata"}
        assert {k: v for k, v in record.items() if k not in changed} == {
            k: v for k, v in other.items() if k not in changed
        }
        kept = {k: v for k, v in record["metadata"].items()
                if k not in ("policy_id", "prompt_template")}  # fmt: skip
        assert kept == {k: v for k, v in other["metadata"].items()
                        if k not in ("policy_id", "prompt_template")}  # fmt: skip
        # the TSV's answer, what LegalBench compares with, is kept either way
        assert record["metadata"]["gold_label"]
        assert len(record["prompt"]) >= len(other["prompt"])  # the demonstrations stay


def test_unknown_or_misplaced_protocols_are_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert resolve_protocol("lexam", None) == "lexam_official"
    assert resolve_protocol("lexam", "lbr") == "lbr"
    assert resolve_protocol("prbench", None) == "prbench_official"
    assert resolve_protocol("apex", None) == "apex_official"
    assert resolve_protocol("apex", "lbr") == "lbr" and resolve_protocol("lar_echr", None) is None
    with pytest.raises(ConfigError, match="not a protocol of legalbench; choose one of"):
        resolve_protocol("legalbench", "lexam")
    with pytest.raises(ConfigError, match="not a protocol of prbench"):
        resolve_protocol("prbench", "prbench_v1")  # LBR's policy is the protocol `lbr`
    with pytest.raises(ConfigError, match="no choice of protocol"):
        resolve_protocol("lar_echr", "lbr")
    out = tmp_path / "x.jsonl"
    assert main(["import", "legalbench", str(TASKS), "--out", str(out), "--protocol", "x"]) == 2
    assert "--protocol 'x' is not a protocol of legalbench" in capsys.readouterr().err
    assert not out.exists()
    code = main(["import", "legalbench", str(TASKS), "--out", str(out), "--few-shot", "2"])
    assert code == 2 and "add --protocol legalbench for --few-shot" in capsys.readouterr().err
    code = main(["import", "legalbench", str(TASKS), "--out", str(out), "--protocol",
                 "legalbench", "--few-shot", "1", "--split", "test"])  # fmt: skip
    assert code == 0 and "wrote 2 legal_eval_v1 record(s)" in capsys.readouterr().out


def test_every_protocol_names_a_policy_that_exists() -> None:
    from pytest_legaleval.grading._policies import PolicyBook
    from pytest_legaleval.importers.lexam import _POLICIES

    book = PolicyBook()
    assert PROTOCOLS["legalbench"].default in book.ids and "legalbench" in book.ids
    for protocol in PROTOCOLS["lexam"].names:
        assert all(policy in book.ids for policy in _POLICIES[protocol]), protocol


def test_dataset_imports_are_cached_per_protocol(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    task = TASKS / "hearsay"
    official = resolve_import("legalbench", task)
    ours = resolve_import("legalbench", task, protocol="legalbench")
    assert official != ours and resolve_import("legalbench", task) == official
    first = json.loads(official.read_text(encoding="utf-8").split("\n")[0])
    assert first["metadata"]["policy_id"] == "legalbench_official"
    with pytest.raises(ConfigError, match="not a protocol"):
        resolve_import("legalbench", task, protocol="nope")


class _Named:
    needs_judge = False

    def __init__(self, name: str) -> None:
        self.name = name

    async def grade(self, request: GradeRequest) -> Grade:
        return Grade.passing(self.name)


def _record(policy: str, task_type: str = "mcq") -> Record:
    return Record(id="r", dataset="d", task_type=task_type, prompt="p",  # type: ignore[arg-type]
                  metadata={"policy_id": policy})  # fmt: skip


def test_a_grader_for_one_task_type_of_one_policy() -> None:
    registry = GraderRegistry()
    registry.register(_Named("mcq"), task_type="mcq")
    registry.register(_Named("judge"), task_type="reference_qa")
    registry.register(_Named("p-mcq"), policy_id="p", task_type="mcq")
    registry.register(_Named("q"), policy_id="q")
    assert registry.for_record(_record("p")).name == "p-mcq"
    assert registry.for_record(_record("p", "reference_qa")).name == "judge"
    assert registry.for_record(_record("q", "reference_qa")).name == "q"
    assert registry.for_record(_record("other"), policy_id="p").name == "p-mcq"
    assert registry.policy_ids() == {"p", "q"}
    with pytest.raises(ConfigError, match="task_type=, policy_id= or both"):
        registry.register(_Named("x"))
    built_in = default_registry()
    assert isinstance(built_in.for_record(_record("legalbench_official", "reference_qa")),
                      LegalbenchOfficialGrader)  # fmt: skip
    assert isinstance(built_in.for_record(_record("lexam_official")), LexamMcqOfficialGrader)
    assert built_in.for_record(_record("lexam_official", "reference_qa")).needs_judge
