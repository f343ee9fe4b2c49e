"""A proposed change: what the team wants to do to the user's files, and the one way to apply it.

The team works in a scratch copy; what comes back is a :class:`ProposedDiff` — a unified
diff (``git apply`` compatible) plus the edits as structured before/after texts, and the
sha256 of every touched file as it was when the team started. :func:`apply_change` writes
to the user's tree only if none of those files changed since, each file atomically.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from daemon.json_types import JsonDict, JsonObject
from daemon.workspace.paths import confine


@dataclass
class FileEdit:
    path: str
    before: str | None  # None: the file did not exist
    after: str | None   # None: the file is deleted

    @property
    def kind(self) -> str:
        if self.before is None:
            return "create"
        return "delete" if self.after is None else "modify"


@dataclass
class ProposedDiff:
    diff: str
    edits: list[FileEdit] = field(default_factory=list)
    base_hashes: dict[str, str | None] = field(default_factory=dict)  # sha256 in the user's tree at creation

    @property
    def files(self) -> list[str]:
        return [edit.path for edit in self.edits]

    @property
    def empty(self) -> bool:
        return not self.edits

    def to_dict(self) -> JsonDict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: JsonObject) -> ProposedDiff:  # to_dict's, as the store keeps a change's edits
        edits = [FileEdit(**edit) for edit in data.get("edits", [])]
        return cls(diff=data.get("diff", ""), edits=edits, base_hashes=dict(data.get("base_hashes", {})))


class ChangeConflict(RuntimeError):
    """Files in the user's tree changed since the team started; nothing was written."""

    def __init__(self, conflicts: dict[str, str]) -> None:
        self.conflicts = conflicts
        listing = "; ".join(f"{path}: {why}" for path, why in sorted(conflicts.items()))
        super().__init__(
            f"not applied, nothing written: {len(conflicts)} file(s) changed since the team started ({listing}). "
            "Ask the team to redo the change on the current files."
        )

    @property
    def files(self) -> list[str]:
        return sorted(self.conflicts)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def file_sha256(path: Path) -> str | None:
    """The sha256 of a file's bytes; None when there is no file."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except (FileNotFoundError, NotADirectoryError):
        return None


def split_lines(text: str) -> list[str]:
    """Lines with their ``\\n`` kept; unlike str.splitlines, form feeds and U+2028 do not split."""
    if not text:
        return []
    lines = [line + "\n" for line in text.split("\n")]
    if text.endswith("\n"):
        lines.pop()
    else:
        lines[-1] = lines[-1][:-1]
    return lines


def render_diff(edits: list[FileEdit], context: int = 3) -> str:
    """A unified diff with ``a/``/``b/`` paths and git headers, accepted by ``git apply``."""
    out: list[str] = []
    for edit in edits:
        if edit.before == edit.after:
            continue
        out.append(f"diff --git a/{edit.path} b/{edit.path}\n")
        if edit.before is None:
            out.append("new file mode 100644\n")
        elif edit.after is None:
            out.append("deleted file mode 100644\n")
        old = split_lines(edit.before or "")
        new = split_lines(edit.after or "")
        if not old and not new:
            continue  # an empty file created or deleted: the header says it all
        fromfile = "/dev/null" if edit.before is None else f"a/{edit.path}"
        tofile = "/dev/null" if edit.after is None else f"b/{edit.path}"
        for line in difflib.unified_diff(old, new, fromfile, tofile, n=context):
            out.append(line)
            if not line.endswith("\n"):
                out.append("\n\\ No newline at end of file\n")
    return "".join(out)


def apply_change(target_root: Path, change: ProposedDiff) -> list[str]:
    """Write ``change`` into ``target_root`` and return the paths written.

    Every touched file must still have the sha256 recorded in ``change.base_hashes``
    (absent files: None); otherwise :class:`ChangeConflict` names the files and nothing is
    written. Paths are confined to ``target_root``. Each file is replaced atomically (temp
    file + rename); if a write fails midway, the files already written are restored.
    """
    target_root = Path(target_root)
    planned: list[tuple[FileEdit, Path]] = []
    conflicts: dict[str, str] = {}
    for edit in change.edits:
        target = confine(target_root, edit.path)
        expected = change.base_hashes.get(edit.path, None if edit.before is None else sha256_text(edit.before))
        if target.is_dir():
            conflicts[edit.path] = "is a folder now"
            continue
        current = file_sha256(target)
        if current != expected:
            if expected is None:
                conflicts[edit.path] = "exists now, but the team created it as a new file"
            elif current is None:
                conflicts[edit.path] = "was deleted"
            else:
                conflicts[edit.path] = "was modified"
        planned.append((edit, target))
    if conflicts:
        raise ChangeConflict(conflicts)
    done: list[tuple[FileEdit, Path]] = []
    try:
        for edit, target in planned:
            if edit.after is None:
                target.unlink(missing_ok=True)
            else:
                write_atomic(target, edit.after)
            done.append((edit, target))
    except OSError:
        for edit, target in reversed(done):
            if edit.before is None:
                target.unlink(missing_ok=True)
            else:
                write_atomic(target, edit.before)
        raise
    return [edit.path for edit, _ in done]


def write_atomic(target: Path, text: str, *, durable: bool = True) -> None:
    """Replace ``target`` with ``text`` (UTF-8, newlines as given) via a temp file and a rename.

    ``durable`` fsyncs before the rename: needed in the user's tree, wasted on a scratch copy."""
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = target.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o644  # mkstemp's 0600 would hide a new file from the user's other tools
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".troupe-tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8"))
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
