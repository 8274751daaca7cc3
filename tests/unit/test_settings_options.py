"""The option table: declared once on ``Settings``, read the same from every source.

Covers the table's invariants (one field per option, flags that match their dest, paths
marked once) and the parsing and validation of this round's options (``--epochs``,
``--epoch-reducer``, ``--cluster-by``, ``--human-labels``, ``--judge-epochs``,
``--protocol``) from the command line, ini keys and YAML.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_legaleval.errors import ConfigError
from pytest_legaleval.pipeline import options as options_module
from pytest_legaleval.pipeline.settings import (
    EPOCH_REDUCERS,
    OPTIONS,
    PATH_OPTIONS,
    OptionSpec,
    Settings,
    resolve_settings,
)

NEW = ("epochs", "epoch_reducer", "cluster_by", "human_labels", "judge_epochs", "protocol")


@pytest.fixture(autouse=True)
def _no_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


# --- the table -------------------------------------------------------------------------------


def test_every_option_is_one_settings_field_with_a_matching_flag() -> None:
    fields = {f.name: f for f in dataclasses.fields(Settings)}
    dests = [spec.dest for spec in OPTIONS]
    assert len(dests) == len(set(dests))
    # DESIGN §10 fixes these names (--no-cache and --legaleval-config are not settings).
    fixed = {
        "--dataset", "--dataset-format", "--responses", "--judgments", "--model", "--base-url",
        "--judge-model", "--concurrency", "--run-dir", "--run-id", "--limit", "--shard",
        "--cache", "--gate", "--baseline", "--attachments-root", "--epochs", "--epoch-reducer",
        "--cluster-by", "--human-labels", "--judge-epochs", "--max-cost", "--estimate-only",
    }  # fmt: skip
    assert fixed <= {spec.flag for spec in OPTIONS}
    assert len({spec.flag for spec in OPTIONS}) == len(OPTIONS)
    for spec in OPTIONS:
        assert isinstance(spec, OptionSpec)
        assert spec.flag == "--" + spec.dest.replace("_", "-")
        assert fields[spec.dest].default == spec.default  # the default is written once
        assert spec.help and "%" not in spec.help.replace("%%", "")  # argparse %-formats help
    # The fields that are not options come after them.
    assert [f.name for f in dataclasses.fields(Settings)][len(OPTIONS) :] == [
        "per_model",
        "config_file",
        "sources",
    ]


def test_the_settings_table_keeps_today_s_options_in_order() -> None:
    # The manifest's public_dict() and --help list the options in this order.
    old = [spec.dest for spec in OPTIONS if spec.dest not in NEW]
    assert old[:4] == ["dataset", "dataset_format", "responses", "judgments"]
    assert old[-4:] == ["baseline", "max_regression", "allow_scoring_mismatch", "regression_alpha"]
    assert list(Settings().public_dict())[: len(OPTIONS)] == [spec.dest for spec in OPTIONS]


def test_path_options_are_the_ones_marked_as_paths() -> None:
    assert PATH_OPTIONS == {
        "dataset", "responses", "judgments", "conversation_from", "policy_dir", "price_table",
        "cache", "run_dir", "baseline", "attachments_root", "human_labels",
    }  # fmt: skip


def test_option_returns_a_field_that_carries_its_spec() -> None:
    made = options_module.option(flag="--x-y", help="h", default=3, metavar="N")
    assert isinstance(made, dataclasses.Field)
    assert made.default == 3
    spec = next(iter(made.metadata.values()))
    assert spec == OptionSpec("--x-y", "", "h", 3, None, False, "N", False, False)


# --- this round's options: declarations and defaults -------------------------------------------


def test_new_options_default_to_today_s_behaviour() -> None:
    settings = resolve_settings({})
    assert (settings.epochs, settings.epoch_reducer, settings.judge_epochs) == (1, "mean", 1)
    assert (settings.cluster_by, settings.human_labels, settings.protocol) == (None, None, None)
    assert all(settings.sources[dest] == "default" for dest in NEW)
    assert settings == Settings(sources=settings.sources)
    public = settings.public_dict()
    assert {dest: public[dest] for dest in NEW} == {
        "epochs": 1, "epoch_reducer": "mean", "cluster_by": None, "human_labels": None,
        "judge_epochs": 1, "protocol": None,
    }  # fmt: skip
    json.dumps(public)


@pytest.mark.parametrize(
    ("dest", "flag", "metavar"),
    [
        ("epochs", "--epochs", "K"),
        ("epoch_reducer", "--epoch-reducer", "NAME"),
        ("cluster_by", "--cluster-by", "FIELD"),
        ("human_labels", "--human-labels", "PATH"),
        ("judge_epochs", "--judge-epochs", "K"),
        ("protocol", "--protocol", "NAME"),
    ],
)
def test_new_option_declarations(dest: str, flag: str, metavar: str) -> None:
    spec = next(spec for spec in OPTIONS if spec.dest == dest)
    assert (spec.flag, spec.metavar, spec.multiple, spec.switch) == (flag, metavar, False, False)
    assert len(spec.help) > 40


# --- this round's options: parsing ------------------------------------------------------------

GOOD: list[tuple[str, Any, Any]] = [
    ("epochs", "1", 1),
    ("epochs", " 5 ", 5),
    ("epochs", "100", 100),
    ("epoch_reducer", "mean", "mean"),
    ("epoch_reducer", "majority", "majority"),
    ("epoch_reducer", "all", "all"),
    ("epoch_reducer", " Any ", "any"),
    ("cluster_by", "metadata.exam", "metadata.exam"),
    ("cluster_by", "metadata.task", "metadata.task"),
    ("cluster_by", "dataset", "dataset"),
    ("cluster_by", "metadata.source_path.court-level", "metadata.source_path.court-level"),
    ("human_labels", "labels/gold.jsonl", "labels/gold.jsonl"),
    ("judge_epochs", "1", 1),
    ("judge_epochs", "20", 20),
    ("protocol", "legalbench_official", "legalbench_official"),
    ("protocol", "lexam_mcq_v1", "lexam_mcq_v1"),
    ("protocol", "ours-2.1", "ours-2.1"),
]

BAD: list[tuple[str, str, str]] = [
    ("epochs", "0", "--epochs (command line): must be in [1, 100], got 0"),
    ("epochs", "101", "--epochs (command line): must be in [1, 100], got 101"),
    ("epochs", "-3", "must be in [1, 100]"),
    ("epochs", "2.5", "--epochs (command line): expects a whole number, got '2.5'"),
    ("epochs", "five", "expects a whole number"),
    ("epochs", "1e3", "expects a whole number"),
    ("epoch_reducer", "median", "--epoch-reducer (command line): expects one of mean, majority"),
    ("epoch_reducer", "mean,all", "expects one of mean, majority, all, any, got 'mean,all'"),
    ("cluster_by", "metadata.", "--cluster-by (command line): expects a record field such as"),
    ("cluster_by", ".metadata", "expects a record field"),
    ("cluster_by", "metadata..exam", "expects a record field"),
    ("cluster_by", ".", "expects a record field"),
    ("cluster_by", "metadata exam", "expects a record field"),
    ("cluster_by", "metadata.exam[0]", "expects a record field"),
    ("cluster_by", "metadata.1st", "expects a record field"),
    ("cluster_by", "metadata.prüfung", "expects a record field"),
    ("cluster_by", "a." * 100 + "a", "expects a record field"),
    ("judge_epochs", "0", "--judge-epochs (command line): must be in [1, 20], got 0"),
    ("judge_epochs", "21", "must be in [1, 20], got 21"),
    ("judge_epochs", "nan", "expects a whole number"),
    ("protocol", "a b", "--protocol (command line): expects a name of letters, digits"),
    ("protocol", "../official", "expects a name"),
    ("protocol", "-official", "expects a name"),
    ("protocol", "lexam/official", "expects a name"),
    ("protocol", "x" * 129, "expects a name"),
]


@pytest.mark.parametrize(("dest", "text", "value"), GOOD)
def test_new_options_parse_from_the_command_line_and_ini(dest: str, text: str, value: Any) -> None:
    from_cli = resolve_settings({dest: text})
    assert getattr(from_cli, dest) == value and from_cli.sources[dest] == "cli"
    from_ini = resolve_settings({}, ini={dest: text})
    assert getattr(from_ini, dest) == value and from_ini.sources[dest] == "ini"


@pytest.mark.parametrize(("dest", "text", "message"), BAD)
def test_bad_values_of_new_options_are_config_errors(dest: str, text: str, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        resolve_settings({dest: text})
    assert message in str(raised.value)
    with pytest.raises(ConfigError, match=r"\(ini\)"):
        resolve_settings({}, ini={dest: text})


def test_the_epoch_reducers_are_the_ones_the_option_accepts() -> None:
    assert EPOCH_REDUCERS == ("mean", "majority", "all", "any")
    for name in EPOCH_REDUCERS:
        assert resolve_settings({"epoch_reducer": name.upper()}).epoch_reducer == name


def _yaml(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "legaleval.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_new_options_from_yaml_keep_their_types(tmp_path: Path) -> None:
    config = _yaml(
        tmp_path,
        "epochs: 5\nepoch_reducer: majority\ncluster_by: metadata.exam\n"
        "human_labels: gold.jsonl\njudge_epochs: 3\nprotocol: legalbench_official\n",
    )
    settings = resolve_settings({}, config_file=config)
    assert settings.epochs == 5 and settings.judge_epochs == 3
    assert settings.epoch_reducer == "majority" and settings.cluster_by == "metadata.exam"
    assert settings.human_labels == "gold.jsonl" and settings.protocol == "legalbench_official"
    assert {settings.sources[dest] for dest in NEW} == {"yaml"}


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("epochs: 0", "must be in [1, 100], got 0"),
        ("epochs: 2.5", "expects a whole number, got '2.5'"),
        ("epochs: true", "expects a whole number, got 'True'"),
        ("judge_epochs: 50", "must be in [1, 20], got 50"),
        ("epoch_reducer: median", "expects one of mean, majority, all, any"),
        ("cluster_by: 'metadata.'", "expects a record field"),
        ("protocol: 'a b'", "expects a name"),
    ],
)
def test_bad_new_options_in_yaml_name_the_file(tmp_path: Path, line: str, message: str) -> None:
    config = _yaml(tmp_path, line + "\n")
    with pytest.raises(ConfigError) as raised:
        resolve_settings({}, config_file=config)
    flag = "--" + line.split(":")[0].replace("_", "-")
    assert f"{flag} ({config}): " in str(raised.value)
    assert message in str(raised.value)


def test_precedence_of_a_new_option(tmp_path: Path) -> None:
    config = _yaml(tmp_path, "epochs: 4\n")
    ini = {"epochs": "3"}
    assert resolve_settings({"epochs": "5"}, ini=ini, config_file=config).epochs == 5
    assert resolve_settings({"epochs": None}, ini=ini, config_file=config).epochs == 4
    assert resolve_settings({}, ini=ini).epochs == 3
    assert resolve_settings({}, ini={"epochs": ""}).epochs == 1


def test_an_automatic_yaml_may_not_name_human_labels_outside_its_project(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    config = _yaml(project, "human_labels: ../secrets/labels.jsonl\n")
    with pytest.raises(ConfigError, match=r"sets human_labels: .*outside its folder"):
        resolve_settings({}, config_file=config, config_is_automatic=True)
    config.write_text("human_labels: gold/labels.jsonl\n", encoding="utf-8")
    settings = resolve_settings({}, config_file=config, config_is_automatic=True)
    assert settings.human_labels == str(project.resolve() / "gold" / "labels.jsonl")


# --- YAML values of the wrong shape -------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("epochs: [2, 3]", "--epochs ({config}): expects a single value, got a list"),
        ("concurrency: {a: 1}", "--concurrency ({config}): expects a single value, got a mapping"),
        ("run_dir: [a, b]", "--run-dir ({config}): expects a single value, got a list"),
        ("protocol: [lexam]", "--protocol ({config}): expects a single value, got a list"),
        ("epochs: null", "--epochs ({config}): expects a value, got null"),
        ("epoch_reducer: null", "--epoch-reducer ({config}): expects a value, got null"),
        ("estimate_only: null", "--estimate-only ({config}): expects a value, got null"),
        # These two ended in a TypeError (a traceback) before: None < 0, [1] < 0.
        ("judge_reasks: null", "--judge-reasks ({config}): expects a value, got null"),
        ("judge_reasks: [1]", "--judge-reasks ({config}): expects a single value, got a list"),
    ],
)
def test_a_yaml_value_of_the_wrong_shape_is_a_config_error(
    tmp_path: Path, line: str, message: str
) -> None:
    config = _yaml(tmp_path, line + "\n")
    with pytest.raises(ConfigError) as raised:
        resolve_settings({}, config_file=config)
    assert str(raised.value) == message.format(config=config)


def test_yaml_null_still_unsets_an_option_without_a_typed_default(tmp_path: Path) -> None:
    config = _yaml(tmp_path, "cache: null\ncluster_by: null\nlimit: null\n")
    settings = resolve_settings({}, config_file=config)
    assert (settings.cache, settings.cluster_by, settings.limit) == (None, None, None)
    assert settings.sources["cache"] == "yaml"
    config.write_text("retry_delays: [1, 2.5]\ngate: pass_rate>=0.5\n", encoding="utf-8")
    settings = resolve_settings({}, config_file=config)
    assert settings.retry_delays == (1.0, 2.5) and settings.gate == ("pass_rate>=0.5",)
