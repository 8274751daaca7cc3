"""Dataset tooling outside pytest: builder, checker, agreement and export.

The RAG split builder and checker, judge agreement, the Turing automated- and
human-evaluation exports, and the expert review's sample, blind view and labels
(:mod:`.review`). Each piece backs one ``legaleval`` subcommand (see
:mod:`pytest_legaleval.cli.datasets`) and is usable as a library.
"""

from __future__ import annotations

from pytest_legaleval.datasets.agreement import (
    AgreementReport,
    GroupAgreement,
    cohen_kappa,
    compare_decisions,
    confusion_matrix,
    load_decisions,
)
from pytest_legaleval.datasets.builder import BuildFailed, BuildPaths, BuildResult, build_dataset
from pytest_legaleval.datasets.check import DatasetCheck, check_dataset
from pytest_legaleval.datasets.config import DatasetConfig, load_dataset_config
from pytest_legaleval.datasets.turing_export import (
    automated_evaluation_from_predictions,
    automated_evaluation_from_run,
)
from pytest_legaleval.importers.convert import ConversionFailed, ConversionResult, convert
from pytest_legaleval.importers.mapping import ConversionMapping, load_mapping

__all__ = [
    "AgreementReport",
    "BuildFailed",
    "BuildPaths",
    "BuildResult",
    "ConversionFailed",
    "ConversionMapping",
    "ConversionResult",
    "DatasetCheck",
    "DatasetConfig",
    "GroupAgreement",
    "automated_evaluation_from_predictions",
    "automated_evaluation_from_run",
    "build_dataset",
    "check_dataset",
    "cohen_kappa",
    "compare_decisions",
    "confusion_matrix",
    "convert",
    "load_dataset_config",
    "load_decisions",
    "load_mapping",
]
