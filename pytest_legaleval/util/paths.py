"""Files named by data: confined to the folder of the file that names them.

A dataset, a manifest or a responses file may name other files (an attachment, a split).
Such a name is data, not a command: a third-party dataset must not be able to make the
tool read ``/proc/self/environ``, ``~/.ssh/id_rsa`` or a FIFO that blocks forever. So a
path named by data is resolved against the folder of the file that names it, symlinks
followed, and then checked:

- the result must lie inside that folder or one of the extra roots the user allowed
  explicitly (``--attachments-root DIR``); an absolute path, a ``..`` that climbs out and
  a symlink that points out are refused;
- nothing under ``/proc``, ``/sys`` or ``/dev`` is ever allowed, whatever the roots;
- an existing path must be a regular file: a directory, device, FIFO or socket is refused.

A refused path raises :class:`PathRefused` (naming the path and the rule) before anything
is opened. A path the user types on the command line is trusted and never goes through
here. :func:`read_confined` then opens the checked path without following a symlink
swapped in meanwhile and without blocking on a FIFO.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

from pytest_legaleval.errors import LegalEvalError

__all__ = [
    "SYSTEM_TREES",
    "PathRefused",
    "confined_path",
    "is_within",
    "read_confined",
    "remember_source_folder",
    "source_folder",
]

SYSTEM_TREES: tuple[str, ...] = ("/proc", "/sys", "/dev")
"""Trees no data-named path may reach, even inside an allowed root (``--attachments-root /``)."""

_RULES = {
    "invalid": "it is empty or contains a NUL character",
    "system": "it lies under /proc, /sys or /dev, which data may never name",
    "absolute": "it is an absolute path outside {where}",
    "parent": "its '..' leads outside {where}",
    "symlink": "a symlink in it points outside {where}",
    "not_regular": "it is a {kind}, not a regular file",
}


class PathRefused(LegalEvalError, ValueError):
    """A path named by data that breaks the confinement rules; nothing was opened.

    Attributes:
        name: the path as the data wrote it.
        resolved: where it leads (symlinks followed), or ``None`` when it is unusable.
        rule: ``invalid``, ``system``, ``absolute``, ``parent``, ``symlink`` or
            ``not_regular``.
        reason: the rule in words ("its '..' leads outside the dataset's folder …").

    """

    def __init__(self, name: str, resolved: Path | None, rule: str, reason: str) -> None:
        shown = (
            f" (resolves to {resolved})" if resolved is not None and str(resolved) != name else ""
        )
        super().__init__(f"path {name!r}{shown} is refused: {reason}")
        self.name = name
        self.resolved = resolved
        self.rule = rule
        self.reason = reason


def is_within(path: str, root: str) -> bool:
    """Whether the normalized absolute ``path`` is ``root`` or lies below it."""
    if root == os.sep:
        return True
    return path == root or path.startswith(root + os.sep)


def _system(path: str) -> bool:
    return any(is_within(path, tree) for tree in SYSTEM_TREES)


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISFIFO(mode):
        return "FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return "special file"


def confined_path(
    name: str,
    base_dir: str | Path,
    extra_roots: Iterable[str | Path] = (),
    *,
    where: str = "the folder of the file that names it",
) -> Path:
    """Resolve a path named by data and check that it stays where data may point.

    Args:
        name: the path as written in the data (relative paths start at ``base_dir``).
        base_dir: the folder of the file that names the path; it is also the allowed root.
        extra_roots: further folders the user allowed explicitly (``--attachments-root``).
        where: how messages call the allowed area ("the dataset's folder").

    Returns:
        The resolved path (absolute, symlinks followed). It need not exist; when it exists
        it is a regular file.

    Raises:
        PathRefused: the path breaks a rule (see the module docstring); the message names
            the path and the rule.

    """
    if not isinstance(name, str) or not name or "\x00" in name:
        raise PathRefused(str(name), None, "invalid", _RULES["invalid"])
    base = os.path.abspath(base_dir)
    roots = [base, *(os.path.abspath(root) for root in extra_roots)]
    real_roots = [os.path.realpath(root) for root in roots]
    if len(roots) > 1:
        where = f"{where} and the allowed roots ({', '.join(roots[1:])})"
    candidate = name if os.path.isabs(name) else os.path.join(base, name)
    lexical = os.path.normpath(candidate)
    resolved = os.path.realpath(candidate)
    shown = Path(resolved)
    if _system(lexical) or _system(resolved):
        raise PathRefused(name, shown, "system", _RULES["system"])
    if not any(is_within(resolved, root) for root in real_roots):
        if os.path.isabs(name):
            rule = "absolute"
        elif not any(is_within(lexical, root) for root in [*roots, *real_roots]):
            rule = "parent"
        else:
            rule = "symlink"
        raise PathRefused(name, shown, rule, _RULES[rule].format(where=where))
    try:
        mode = os.stat(resolved).st_mode
    except OSError:
        return shown  # missing (or unreadable): the caller reports it as such
    if not stat.S_ISREG(mode):
        raise PathRefused(
            name, shown, "not_regular", _RULES["not_regular"].format(kind=_kind(mode))
        )
    return shown


def read_confined(path: Path, limit: int) -> tuple[bytes, int]:
    """Read at most ``limit`` bytes of a path returned by :func:`confined_path`.

    The file is opened without following a final symlink (one swapped in after the check
    fails) and without blocking (a FIFO swapped in is refused, not waited on), and it must
    still be a regular file once open.

    Returns:
        ``(data, size)``: the first ``limit`` bytes and the file's full size in bytes.

    Raises:
        OSError: it cannot be opened, or it is no longer a regular file.

    """
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    flags |= getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"{path} is a {_kind(info.st_mode)}, not a regular file")
        chunks = []
        remaining = limit
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks), info.st_size
    finally:
        os.close(fd)


_SOURCE_FOLDERS: dict[str, Path] = {}
# Cached import (real path) → the source folder the user named, for this process. Filled
# only from --dataset SOURCE:PATH arguments (importers.cache), the user's own words.


def remember_source_folder(dataset_file: str | Path, folder: str | Path) -> None:
    """Record that the paths ``dataset_file`` names start at ``folder`` (this process only).

    An imported dataset is a cached copy: the files its records name (APEX's attached
    documents) are relative to the source folder the user named on the command line, not
    to the copy's. Only the import of a command-line argument calls this, never data.
    """
    _SOURCE_FOLDERS[os.path.realpath(dataset_file)] = Path(folder).resolve()


def source_folder(dataset_file: str | Path) -> Path | None:
    """The source folder recorded for ``dataset_file``, if it is an import of this process.

    ``None`` for any other file (and for a cached import named as a plain path): its
    attachments then resolve from its own folder.
    """
    return _SOURCE_FOLDERS.get(os.path.realpath(dataset_file))
