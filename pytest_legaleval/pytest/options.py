"""The ``legaleval`` option group of pytest, resolved into the run's ``Settings``.

The options themselves (names, defaults, conversions) are declared in
:mod:`pytest_legaleval.pipeline.options` and resolved by precedence in
:mod:`pytest_legaleval.pipeline.settings`; this module only speaks pytest.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_legaleval.pipeline.settings import (
    OPTIONS,
    Settings,
    find_config_file,
    resolve_settings,
)

__all__ = ["add_options", "resolve"]


def add_options(parser: pytest.Parser) -> None:
    """Register the ``legaleval`` option group and its ini keys."""
    group = parser.getgroup("legaleval", "LLM evaluation (pytest-legaleval)")
    for spec in OPTIONS:
        if spec.switch:
            group.addoption(
                spec.flag,
                action="store_const",
                const="true",
                dest=f"legaleval_{spec.dest}",
                default=None,
                help=spec.help,
            )
        else:
            group.addoption(
                spec.flag,
                action="append" if spec.multiple else "store",
                dest=f"legaleval_{spec.dest}",
                default=None,
                metavar=spec.metavar,
                help=spec.help,
            )
        if spec.multiple:
            parser.addini(f"legaleval_{spec.dest}", spec.help, type="linelist")
        else:
            parser.addini(f"legaleval_{spec.dest}", spec.help, type="string")
    group.addoption(
        "--no-cache",
        action="store_true",
        dest="legaleval_no_cache",
        default=False,
        help="Do not read or write the response cache.",
    )
    group.addoption(
        "--legaleval-config",
        dest="legaleval_config",
        default=None,
        metavar="FILE",
        help="YAML configuration (default: legaleval.yaml at the rootdir, if any).",
    )


def resolve(config: pytest.Config) -> Settings:
    """The session's settings: command line > YAML > ini keys > defaults.

    Raises:
        ConfigError: a bad value, named with where it came from.

    """
    explicit = config.getoption("legaleval_config")
    config_file = find_config_file(Path(str(config.rootpath)), explicit)
    return resolve_settings(
        {spec.dest: config.getoption(f"legaleval_{spec.dest}") for spec in OPTIONS},
        ini={spec.dest: config.getini(f"legaleval_{spec.dest}") for spec in OPTIONS},
        config_file=config_file,
        config_is_automatic=config_file is not None and not explicit,
        no_cache=bool(config.getoption("legaleval_no_cache")),
    )
