"""``load_dataset``: expand paths, pick each file's format, load and validate."""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path

from pytest_legaleval.errors import ConfigError, LegalEvalWarning
from pytest_legaleval.formats.base import DatasetInfo, Entry, LoadContext, LoadResult
from pytest_legaleval.formats.detect import detect_format
from pytest_legaleval.formats.rag import MANIFEST_NAME, offline_dataset_name
from pytest_legaleval.formats.registry import FORMATS, REGISTRY

__all__ = [
    "DATASET_SUFFIXES",
    "SIDECAR_NAMES",
    "DatasetStream",
    "dataset_files",
    "load_dataset",
]

DATASET_SUFFIXES = (".jsonl", ".json")
"""Files a directory argument contributes."""
SIDECAR_NAMES = frozenset({MANIFEST_NAME})
"""Files that describe the datasets next to them instead of being one (a RAG manifest)."""


def dataset_files(paths: Sequence[str | Path]) -> list[Path]:
    """Expand ``--dataset`` arguments into files, in order, each file once.

    A directory contributes its ``*.jsonl`` and ``*.json`` files (not recursively; hidden
    files, a RAG ``manifest.json`` and the offline dataset it names skipped, and a link that
    leads out of the folder skipped with a warning naming it), sorted by name.
    A ``SOURCE:PATH`` argument (``lexam:data/MCQs_test.xlsx``, a benchmark in its upstream
    layout) is not read here: the layers above resolve it first to the file its importer
    writes (``importers.cache.resolve_arguments``).

    Raises:
        ConfigError: no paths, a path that does not exist, or a directory without datasets.

    """
    if not paths:
        raise ConfigError("no dataset given; pass --dataset PATH (a file or a directory)")
    files: list[Path] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            skip = {*SIDECAR_NAMES, offline_dataset_name(path)}
            found = sorted(
                child
                for child in path.iterdir()
                if child.suffix.lower() in DATASET_SUFFIXES
                and not child.name.startswith(".")
                and child.name not in skip
                and _inside(child, path)
                and child.is_file()
            )
            if not found:
                raise ConfigError(
                    f"--dataset {given}: the directory has no *.jsonl or *.json files"
                )
            files.extend(found)
        elif path.exists():
            files.append(path)
        else:
            raise ConfigError(f"--dataset {given}: no such file or directory")
    unique: dict[Path, Path] = {}
    for file in files:
        # The same file given twice (a directory and one of its files) loads once, instead
        # of turning every row of the second copy into a duplicate id.
        unique.setdefault(file.resolve(), file)
    return list(unique.values())


def _inside(child: Path, folder: Path) -> bool:
    """Whether ``child`` of ``folder`` stays in it; a link out is skipped with a warning.

    A directory argument means the files in that folder: a symlink among them that leads
    elsewhere (``../secrets.jsonl``, ``/etc/...``) is never followed, as attachments'
    links are not.
    """
    if not child.is_symlink():
        return True
    try:
        target = child.resolve(strict=True)
        inside = target.is_relative_to(folder.resolve())
    except (OSError, RuntimeError):  # a dangling link or a loop
        inside = False
    if not inside:
        warnings.warn(
            LegalEvalWarning(
                f"--dataset {folder}: skipped {child.name}, a link that leads out of the folder"
            ),
            stacklevel=3,
        )
    return inside


class DatasetStream:
    """The entries of ``--dataset`` files, read one at a time and never held.

    Iterating reads (and validates) every file again, in order; :attr:`datasets` is filled
    as each file ends. A dataset-level failure is raised by the iteration when it is known,
    at the latest after a file's last entry, so a caller that must not act on a rejected
    dataset iterates once to get the verdict (and the counts) and again to use the entries.
    The run recorder of an xdist controller, which never collects items, works this way and
    so holds no record in memory.
    """

    def __init__(self, paths: Sequence[str | Path], fmt: str = "auto") -> None:
        """Resolve the files and formats.

        Raises:
            ConfigError: a missing path, an unknown format name, an undetectable format or
                an unreadable file.

        """
        if fmt != "auto" and fmt not in REGISTRY:
            raise ConfigError(
                f"unknown --dataset-format {fmt!r}; choose auto or one of: {', '.join(FORMATS)}"
            )
        self.files = [
            (path, detect_format(path) if fmt == "auto" else fmt)
            for path in dataset_files(paths)
        ]
        self.datasets: list[DatasetInfo] = []
        """One entry per file read so far, in load order."""

    def __iter__(self) -> Iterator[Entry]:
        """Every entry (valid ``Record`` or ``RejectedRecord``), files in order.

        Raises:
            ConfigError: an unreadable file.
            DatasetRejected: a dataset-level failure of any file (the contract's 400/413).

        """
        self.datasets = []
        context = LoadContext()
        for path, name in self.files:
            try:
                info = yield from REGISTRY[name].scan(path, context)
            except OSError as exc:
                raise ConfigError(f"cannot read dataset {path}: {exc.strerror or exc}") from None
            self.datasets.append(info)


def load_dataset(paths: Sequence[str | Path], fmt: str = "auto") -> LoadResult:
    """Load and validate dataset files into records and rejected records.

    Args:
        paths: files or directories, in order (``--dataset``, repeatable).
        fmt: a format name from :data:`FORMATS`, or ``"auto"`` to detect each file's
            format from its content.

    Returns:
        The datasets read and every entry (valid ``Record`` or ``RejectedRecord``) in file
        order, files in the given order, a directory's files by name.

    Raises:
        ConfigError: a missing path, an unknown format name, an undetectable format or
            an unreadable file.
        DatasetRejected: a dataset-level failure of any file (the contract's 400/413).

    """
    stream = DatasetStream(paths, fmt)
    entries = list(stream)
    return LoadResult(datasets=stream.datasets, entries=entries)
