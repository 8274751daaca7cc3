"""``--dataset SOURCE:PATH``: an import run on demand and kept by content hash.

``--dataset lexam:data/MCQs_test.xlsx`` imports the file as ``legaleval import lexam``
would and hands the loader the resulting JSONL, so a run needs no intermediate file. The
result is kept under ``.legaleval/imports/`` (relative to the working directory, like the
response cache) as ``<source>-<key>.jsonl``, where the key hashes the source name, the
importers' own code and every input file's name and bytes: the same inputs are imported
once, a changed input or importer is imported again. Writes go through a temporary file
and an atomic rename, so xdist workers resolving the same argument at once are safe.

An import with a failed row is an error here (the message names the first failure and the
command that lists them all): a run must not quietly evaluate fewer records than the
source has.

Files the records name (APEX's attached documents) stay where the source keeps them: their
paths are relative to the source folder the user named (``DIR`` of ``apex:DIR``, or the
folder of a named file), not to the cached copy. ``util.paths.source_folder`` tells the
attachment reader that folder, and it becomes the records' base folder, confined exactly as
a dataset file's own folder is (nothing outside it and ``--attachments-root`` is read). The
fact is kept in this process only, learnt from the command line, never from data: a dataset
cannot claim another folder by naming one, and the cached file passed as a plain
``--dataset`` path resolves from its own folder, like any dataset. An importer whose
records name files (:attr:`~.base.Importer.names_files`) is keyed by that folder too, since
the same rows in another folder name other files.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

from pytest_legaleval import protocols
from pytest_legaleval.errors import ConfigError
from pytest_legaleval.formats import LoadResult
from pytest_legaleval.formats import dataset_files as formats_dataset_files
from pytest_legaleval.formats import load_dataset as formats_load_dataset
from pytest_legaleval.importers.base import ImportOptions
from pytest_legaleval.importers.protocols import resolve_protocol
from pytest_legaleval.importers.registry import IMPORTER_NAMES, get_importer
from pytest_legaleval.importers.writer import write_records
from pytest_legaleval.util.paths import remember_source_folder, source_folder

__all__ = [
    "IMPORT_CACHE_DIR",
    "cache_key",
    "dataset_files",
    "load_dataset",
    "resolve_arguments",
    "resolve_import",
    "source_folder",
    "split_import_arg",
]

IMPORT_CACHE_DIR = Path(".legaleval") / "imports"
_CHUNK = 1 << 20


def split_import_arg(given: str) -> tuple[str, str] | None:
    """``("lexam", "data/x.xlsx")`` for ``"lexam:data/x.xlsx"``; ``None`` for a plain path.

    A path that exists as written is a plain path even if it looks like ``name:rest``.
    """
    name, colon, rest = given.partition(":")
    if not colon or not rest or name not in IMPORTER_NAMES or Path(given).exists():
        return None
    return name, rest


def _digest_file(digest: hashlib._Hash, path: Path) -> None:
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)


def cache_key(
    source: str,
    inputs: list[Path],
    root: Path,
    protocol: str | None = None,
    *,
    by_folder: bool = False,
) -> str:
    """The content hash of an import: source, protocol, importer code, input names, bytes.

    With ``by_folder`` the source folder's real path is hashed too (records that name
    files relative to it).
    """
    head = source if protocol is None else f"{source}\0protocol={protocol}"
    digest = hashlib.sha256(f"{head}\0".encode())
    if by_folder:
        digest.update(os.path.realpath(root).encode("utf-8", "surrogatepass") + b"\0")
    for code in sorted(Path(__file__).parent.glob("*.py")):
        _digest_file(digest, code)
    # The protocols' texts the importers write (a changed text: a new import).
    for text in sorted(Path(protocols.__file__).parent.glob("*.py")):
        _digest_file(digest, text)
    for path in inputs:
        try:
            name = path.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            name = path.name
        digest.update(f"\0{name}\0".encode("utf-8", "surrogatepass"))
        _digest_file(digest, path)
    return digest.hexdigest()[:32]


def resolve_import(
    source: str, path: str | Path, cache_dir: Path | None = None, *, protocol: str | None = None
) -> Path:
    """The JSONL file of ``source`` imported from ``path``, importing it when not cached.

    ``protocol`` is ``legaleval import``'s ``--protocol`` (``None``: the benchmark's
    official protocol, see ``importers.protocols``).

    Raises:
        ConfigError: an unknown source, a missing path, an unreadable input, a missing
            reader extra, or an import in which some row failed.

    """
    given = Path(path)
    if not given.exists():
        raise ConfigError(f"--dataset {source}:{path}: no such file or directory")
    importer = get_importer(source)
    resolve_protocol(source, protocol)
    root = given if given.is_dir() else given.parent
    key = cache_key(source, importer.files([given]), root, protocol, by_folder=importer.names_files)
    target = (cache_dir or IMPORT_CACHE_DIR) / f"{source}-{key}.jsonl"
    if target.is_file():
        remember_source_folder(target, root)
        return target
    options = ImportOptions(protocol=protocol)
    summary = write_records(importer.rows([given], options), target, force=True)
    if summary.failed:
        target.unlink(missing_ok=True)
        first = summary.failures[0]
        raise ConfigError(
            f"--dataset {source}:{path}: {summary.failed} of {summary.read} row(s) failed to "
            f"import (first: {first.where}: {first.reason}); "
            f"`legaleval import {source} {path} --out FILE.jsonl` lists them"
        )
    if summary.written == 0:
        target.unlink(missing_ok=True)
        raise ConfigError(f"--dataset {source}:{path}: the import found no rows")
    remember_source_folder(target, root)
    return target


def resolve_arguments(paths: Sequence[str | Path], protocol: str | None = None) -> list[str | Path]:
    """``--dataset`` arguments with each ``SOURCE:PATH`` replaced by its imported file.

    ``lexam:data/MCQs_test.xlsx`` becomes the ``legal_eval_v1`` file its importer writes,
    cached by content hash under ``.legaleval/imports/`` (:func:`resolve_import`); every
    other argument is kept as given for the dataset loader (``formats``), which never
    imports. ``protocol`` is ``--protocol`` (``None``: each benchmark's official one).

    Raises:
        ConfigError: an import that fails (the message names the first failed row).

    """
    out: list[str | Path] = []
    for given in paths:
        split = split_import_arg(given) if isinstance(given, str) else None
        out.append(given if split is None else resolve_import(*split, protocol=protocol))
    return out


def dataset_files(paths: Sequence[str | Path], protocol: str | None = None) -> list[Path]:
    """:func:`formats.dataset_files <pytest_legaleval.formats.dataset_files>`, imports included."""
    return formats_dataset_files(resolve_arguments(paths, protocol))


def load_dataset(
    paths: Sequence[str | Path], fmt: str = "auto", protocol: str | None = None
) -> LoadResult:
    """:func:`formats.load_dataset <pytest_legaleval.formats.load_dataset>`, imports included."""
    return formats_load_dataset(resolve_arguments(paths, protocol), fmt)
