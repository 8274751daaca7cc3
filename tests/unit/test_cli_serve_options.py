"""`legaleval serve`'s run options: the server-wide ones, and those each upload decides."""

from __future__ import annotations

import pytest

from pytest_legaleval.cli import build_parser
from pytest_legaleval.cli.serve import PER_RUN
from pytest_legaleval.pipeline.settings import OPTIONS


def test_options_about_one_dataset_are_not_server_wide(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--help"])
    text = capsys.readouterr().out
    flags = {spec.dest: spec.flag for spec in OPTIONS}
    for dest in ("protocol", "judgments", "human_labels", "estimate_only", "dataset", "shard"):
        assert dest in PER_RUN
        assert f"{flags[dest]} " not in text and f"{flags[dest]}\n" not in text, dest
    for dest in ("epochs", "cluster_by", "judge_epochs", "model", "transport"):
        assert dest not in PER_RUN
        assert flags[dest] in text, dest


@pytest.mark.parametrize("flag", ["--human-labels", "--judgments", "--protocol"])
def test_serve_refuses_a_per_run_option(flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(["serve", flag, "x"])
    assert exit_info.value.code == 2
    assert f"unrecognized arguments: {flag}" in capsys.readouterr().err


def test_every_per_run_name_is_an_option() -> None:
    assert PER_RUN <= {spec.dest for spec in OPTIONS}
