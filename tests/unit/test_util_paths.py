"""Paths named by data: resolved from the naming file's folder, then confined."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from pytest_legaleval.util.paths import PathRefused, confined_path, read_confined


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """``tmp/data/`` (the dataset folder, with a document) next to ``tmp/secret.txt``."""
    data = tmp_path / "data"
    (data / "docs").mkdir(parents=True)
    (data / "docs" / "brief.txt").write_text("brief")
    (tmp_path / "secret.txt").write_text("secret")
    return data


def refused(name: str, base: Path, *roots: Path) -> PathRefused:
    with pytest.raises(PathRefused) as info:
        confined_path(name, base, roots)
    assert repr(name) in str(info.value)
    return info.value


def test_a_relative_path_resolves_from_the_naming_files_folder(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tree.parent)  # the working directory plays no part
    assert confined_path("docs/brief.txt", tree) == (tree / "docs" / "brief.txt").resolve()
    assert confined_path("docs/../docs/brief.txt", tree) == (tree / "docs" / "brief.txt").resolve()
    # a missing file is not refused: the caller reports it as missing
    assert confined_path("docs/nothing.txt", tree) == (tree / "docs" / "nothing.txt").resolve()


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        ("../secret.txt", "parent"),
        ("docs/../../secret.txt", "parent"),
        ("/etc/passwd", "absolute"),
        ("/proc/self/environ", "system"),
        ("/sys/kernel/hostname", "system"),
        ("/dev/zero", "system"),
        ("", "invalid"),
        ("docs/\x00brief.txt", "invalid"),
        ("docs", "not_regular"),
    ],
)
def test_escapes_system_trees_and_odd_names_are_refused(tree: Path, name: str, rule: str) -> None:
    error = refused(name, tree)
    assert error.rule == rule
    assert "is refused: " in str(error) and error.reason in str(error)


def test_a_symlink_pointing_out_is_refused_and_one_pointing_in_is_fine(tree: Path) -> None:
    (tree / "out.txt").symlink_to(tree.parent / "secret.txt")
    (tree / "dangling").symlink_to("/etc/no-such-file")
    (tree / "in.txt").symlink_to(tree / "docs" / "brief.txt")
    (tree / "environ").symlink_to("/proc/self/environ")
    assert refused("out.txt", tree).rule == "symlink"
    assert refused("dangling", tree).rule == "symlink"
    assert refused("environ", tree).rule == "system"
    assert confined_path("in.txt", tree) == (tree / "docs" / "brief.txt").resolve()


def test_a_symlinked_folder_on_the_way_out_is_refused(tree: Path) -> None:
    (tree / "up").symlink_to(tree.parent)
    error = refused("up/secret.txt", tree)
    assert error.rule == "symlink"
    assert error.resolved == (tree.parent / "secret.txt").resolve()


def test_fifos_and_sockets_are_refused_before_anything_opens_them(tree: Path) -> None:
    os.mkfifo(tree / "pipe")
    assert refused("pipe", tree).rule == "not_regular"
    assert "FIFO" in str(refused("pipe", tree))
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(tree / "sock"))
        assert "socket" in str(refused("sock", tree))


def test_extra_roots_widen_the_allowed_area_explicitly(tree: Path, tmp_path: Path) -> None:
    other = tmp_path / "shared"
    other.mkdir()
    (other / "law.txt").write_text("law")
    assert refused(str(other / "law.txt"), tree).rule == "absolute"
    assert refused("../shared/law.txt", tree).rule == "parent"
    assert confined_path(str(other / "law.txt"), tree, [other]) == (other / "law.txt").resolve()
    assert confined_path("../shared/law.txt", tree, [other]) == (other / "law.txt").resolve()
    # still not the rest of tmp_path, and never /proc, whatever the roots
    assert "allowed roots" in str(refused("../secret.txt", tree, other))
    assert refused("/proc/self/environ", tree, Path("/")).rule == "system"
    assert confined_path("/etc/hostname", tree, [Path("/")]) == Path("/etc/hostname").resolve()


def test_read_confined_reads_a_bounded_prefix_and_refuses_a_swapped_in_fifo(tree: Path) -> None:
    target = tree / "docs" / "brief.txt"
    assert read_confined(target, 100) == (b"brief", 5)
    assert read_confined(target, 2) == (b"br", 5)
    # a FIFO swapped in after the check: refused at once instead of blocking forever
    swapped = tree / "swapped"
    os.mkfifo(swapped)
    with pytest.raises(OSError, match="FIFO"):
        read_confined(swapped, 100)
    # a symlink swapped in after the check is not followed
    link = tree / "link"
    link.symlink_to(tree.parent / "secret.txt")
    with pytest.raises(OSError):
        read_confined(link, 100)
