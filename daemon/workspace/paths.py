"""Keep every path the team names inside its workspace.

Model output is untrusted: a reply may name ``../../x``, ``/etc/passwd``, or a file reached
through a symlink that leads out of the workspace. :func:`confine` turns a relative path
into a real path inside the workspace, or refuses it with a message that says why.
"""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePosixPath

_WINDOWS_ABSOLUTE = re.compile(r"^(?:[A-Za-z]:|\\\\|//)")


class PathOutsideWorkspace(ValueError):
    """A path that would leave the workspace; the message names the path and the reason."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"refused path {path!r}: {reason}; use a path relative to the repository root")
        self.path = path
        self.reason = reason


def normalize_rel(rel: str) -> str:
    """The canonical form of a workspace-relative path (``a/b.py``), or raise PathOutsideWorkspace.

    Backslashes count as separators (models trained on Windows paths emit them); ``.`` parts
    and repeated slashes are dropped; absolute paths, ``~`` and ``..`` are refused.
    """
    if not isinstance(rel, str) or not rel.strip():
        raise PathOutsideWorkspace(str(rel), "the path is empty")
    if "\x00" in rel:
        raise PathOutsideWorkspace(rel, "the path contains a NUL byte")
    text = rel.strip()
    if text.startswith(("/", "~")) or _WINDOWS_ABSOLUTE.match(text):
        raise PathOutsideWorkspace(rel, "absolute paths are not allowed")
    parts = [part for part in re.split(r"[\\/]+", text) if part not in ("", ".")]
    if ".." in parts:
        raise PathOutsideWorkspace(rel, "'..' would leave the workspace")
    if not parts:
        raise PathOutsideWorkspace(rel, "the path names the workspace itself, not a file")
    return str(PurePosixPath(*parts))


def confine(root: Path, rel: str) -> Path:
    """The resolved path of ``rel`` inside ``root``, or raise PathOutsideWorkspace.

    Symlinks are followed: a path whose real location lies outside ``root`` is refused, and
    the message names the link that leads out. The file need not exist.
    """
    clean = normalize_rel(rel)
    real_root = Path(os.path.realpath(root))
    candidate = Path(os.path.realpath(real_root / clean))
    if candidate == real_root or real_root in candidate.parents:
        return candidate
    # Name the first link on the way that leaves, so the message says what to fix.
    walked = real_root
    for part in PurePosixPath(clean).parts:
        walked = walked / part
        if walked.is_symlink():
            target = Path(os.path.realpath(walked))
            if target != real_root and real_root not in target.parents:
                link = walked.relative_to(real_root).as_posix()
                raise PathOutsideWorkspace(rel, f"'{link}' is a symlink leading outside the workspace (to {target})")
    raise PathOutsideWorkspace(rel, f"it resolves outside the workspace (to {candidate})")


def is_inside(root: Path, path: Path) -> bool:
    """True when the real location of ``path`` lies inside the real ``root``."""
    real_root = Path(os.path.realpath(root))
    real = Path(os.path.realpath(path))
    return real == real_root or real_root in real.parents


def check_named_file(root: Path, rel: str) -> str:
    """The canonical form of ``rel``, a file a person named (``troupe review``, an editor, Slack): it
    must lie inside ``root`` (symlinks followed) and exist. Raises PathOutsideWorkspace or
    FileNotFoundError, each naming the file and why; the daemon answers either as a 400."""
    clean = normalize_rel(rel)
    real = confine(root, clean)
    if not real.exists():
        raise FileNotFoundError(f"{rel!r} does not exist in the workspace {root}")
    return clean
