"""Which files of a repository the team may see: ``.gitignore`` honoured, no binaries, no build output.

One walk classifies every file, so the scratch copy, the repository map and the watcher's
idea of "a file of this repository" agree.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import pathspec

from daemon.workspace.paths import check_named_file, confine, is_inside

MAX_FILE_BYTES = 1_000_000
"""Files larger than this are neither copied nor shown to a model, nor stored: the one size policy
(:func:`too_large` says so in words)."""

# Folders that never hold source the team should read: VCS data, caches, dependencies.
SKIP_DIRS = frozenset({
    ".git", ".hg", ".svn", ".venv", "node_modules", "__pycache__", ".mypy_cache", ".pytest_cache",
    ".ruff_cache", ".tox", ".nox", ".eggs", ".idea", ".gradle", ".next", ".parcel-cache", ".cache",
    "bower_components",
})
# Folders that usually hold build output, unless they are a Python package of that name.
BUILD_DIRS = frozenset({"build", "dist", "out", "target", "_build", "htmlcov", "coverage"})


@dataclass
class RepoScan:
    """A repository's files, classified. Paths are relative, with forward slashes, sorted."""

    text: list[str] = field(default_factory=list)       # UTF-8 text files the team may read and edit
    binary: list[str] = field(default_factory=list)     # binary or non-UTF-8: copied for tests, never shown
    symlinks: dict[str, str] = field(default_factory=dict)  # link -> target text, for links that stay inside
    skipped: dict[str, str] = field(default_factory=dict)   # path -> why it was left out


def too_large(path: Path) -> str | None:
    """Why the file at ``path`` is too large for a prompt ("too large: 52,428,800 bytes, …"), or None."""
    try:
        size = path.stat().st_size
    except OSError:
        return None
    if size <= MAX_FILE_BYTES or not path.is_file():
        return None
    return f"too large: {size:,} bytes; Troupe shows a model files of up to {MAX_FILE_BYTES:,} bytes"


class FileTooLarge(OSError):
    """A file over the size policy: not read into a prompt (an OSError, as an unreadable file is)."""


def read_for_prompt(path: Path) -> str:
    """A file's text for a prompt; FileTooLarge when it is over the size policy."""
    reason = too_large(path)
    if reason:
        raise FileTooLarge(f"{path.name}: skipped: {reason}")
    return path.read_text(encoding="utf-8")


def named_files(root: Path, files: list[str]) -> tuple[list[str], dict[str, str]]:
    """The files a request named, checked where the daemon receives them (one place for every
    surface): ``(kept, {file: why it was skipped})``, files over the size policy skipped. A file
    outside the workspace, through a symlink, or missing raises PathOutsideWorkspace or
    FileNotFoundError naming it."""
    kept: list[str] = []
    skipped: dict[str, str] = {}
    for name in files:
        clean = check_named_file(root, name)
        reason = too_large(confine(root, clean))
        if reason:
            skipped[clean] = reason
        elif clean not in kept:
            kept.append(clean)
    return kept, skipped


def list_repo_files(root: Path) -> list[str]:
    """The repository's text files: ``.gitignore`` (nested ones too) honoured, no binaries, no build output."""
    return scan_repo(root).text


def is_binary(data: bytes) -> bool:
    """True for content that is not UTF-8 text (a NUL byte, or undecodable bytes)."""
    if b"\x00" in data[:8192]:
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def scan_repo(root: Path) -> RepoScan:
    root = Path(root)
    scan = RepoScan()
    ignores: dict[str, pathspec.GitIgnoreSpec] = {}
    exclude = root / ".git" / "info" / "exclude"
    if exclude.is_file():
        ignores[""] = _spec_from(exclude)
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        rel_dir = "" if here == root else here.relative_to(root).as_posix()
        gitignore = here / ".gitignore"
        if gitignore.is_file():
            spec = _spec_from(gitignore)
            ignores[rel_dir] = ignores[rel_dir] + spec if rel_dir in ignores else spec
        kept = []
        for name in sorted(dirnames):
            rel = f"{rel_dir}/{name}" if rel_dir else name
            full = here / name
            if full.is_symlink():
                _classify_link(root, rel, full, scan)
            elif not _skip_dir(name, full) and not _ignored(ignores, rel, is_dir=True):
                kept.append(name)
        dirnames[:] = kept
        for name in sorted(filenames):
            rel = f"{rel_dir}/{name}" if rel_dir else name
            if _ignored(ignores, rel, is_dir=False):
                continue
            full = here / name
            if full.is_symlink():
                _classify_link(root, rel, full, scan)
            else:
                _classify_file(rel, full, scan)
    scan.text.sort()
    scan.binary.sort()
    return scan


def _classify_file(rel: str, full: Path, scan: RepoScan) -> None:
    try:
        size = full.stat().st_size
        if not full.is_file():
            scan.skipped[rel] = "not a regular file"
            return
        if size > MAX_FILE_BYTES:
            scan.skipped[rel] = too_large(full) or "too large"
            return
        data = full.read_bytes()
    except OSError as exc:
        scan.skipped[rel] = f"unreadable ({exc.strerror or exc})"
        return
    (scan.binary if is_binary(data) else scan.text).append(rel)


def _classify_link(root: Path, rel: str, full: Path, scan: RepoScan) -> None:
    if is_inside(root, full) and full.exists():
        scan.symlinks[rel] = os.readlink(full)
    else:
        scan.skipped[rel] = "symlink leading outside the repository (or dangling)"


def _skip_dir(name: str, full: Path) -> bool:
    if name in SKIP_DIRS or name.endswith(".egg-info") or name.startswith("troupe-scratch-"):
        return True
    if (full / "pyvenv.cfg").exists() or (full / "CACHEDIR.TAG").exists():
        return True  # a virtualenv or a cache folder under any name
    return name in BUILD_DIRS and not (full / "__init__.py").exists()


def _spec_from(path: Path) -> pathspec.GitIgnoreSpec:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        lines = []
    return pathspec.GitIgnoreSpec.from_lines(lines)


def _ignored(ignores: dict[str, pathspec.GitIgnoreSpec], rel: str, *, is_dir: bool) -> bool:
    """Git's rule: the deepest ``.gitignore`` with an opinion on the path decides."""
    for base in sorted(ignores, key=len, reverse=True):
        if base and not rel.startswith(base + "/"):
            continue
        sub = rel[len(base) + 1:] if base else rel
        result = ignores[base].check_file(sub + "/" if is_dir else sub)
        if result.include is not None:
            return bool(result.include)
    return False
