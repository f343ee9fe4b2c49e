"""Every path a model names stays inside the workspace, or is refused with a reason."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from daemon.workspace.paths import PathOutsideWorkspace, confine, normalize_rel


def test_relative_paths_resolve_inside_the_workspace(tmp_path: Path) -> None:
    assert confine(tmp_path, "pkg/mod.py") == tmp_path.resolve() / "pkg" / "mod.py"
    assert confine(tmp_path, "./pkg//mod.py") == tmp_path.resolve() / "pkg" / "mod.py"
    assert normalize_rel("pkg\\mod.py") == "pkg/mod.py"  # Windows separators from a model


@pytest.mark.parametrize("path", ["../../x", "pkg/../../x", "..\\..\\x", "pkg/.."])
def test_parent_references_are_refused(tmp_path: Path, path: str) -> None:
    with pytest.raises(PathOutsideWorkspace, match=r"'\.\.' would leave the workspace") as caught:
        confine(tmp_path, path)
    assert caught.value.path == path and repr(path) in str(caught.value)


@pytest.mark.parametrize("path", ["/etc/passwd", "~/.ssh/id_rsa", "C:\\Windows\\x", "//server/share"])
def test_absolute_paths_are_refused(tmp_path: Path, path: str) -> None:
    with pytest.raises(PathOutsideWorkspace, match="absolute paths are not allowed"):
        confine(tmp_path, path)


@pytest.mark.parametrize("path", ["", "   ", ".", "a\x00b"])
def test_empty_and_malformed_paths_are_refused(tmp_path: Path, path: str) -> None:
    with pytest.raises(PathOutsideWorkspace):
        confine(tmp_path, path)


def test_a_symlink_leading_outside_is_refused_and_named(tmp_path: Path) -> None:
    root, outside = tmp_path / "work", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    os.symlink(outside, root / "escape")
    with pytest.raises(PathOutsideWorkspace, match="'escape' is a symlink leading outside the workspace"):
        confine(root, "escape/x.py")
    os.symlink("/etc/passwd", root / "passwd")
    with pytest.raises(PathOutsideWorkspace, match="'passwd' is a symlink"):
        confine(root, "passwd")


def test_a_symlink_that_stays_inside_is_followed(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    os.symlink("real", tmp_path / "alias")
    assert confine(tmp_path, "alias/x.py") == tmp_path.resolve() / "real" / "x.py"
