"""The team's workspace: a scratch copy of the user's repository, never the user's tree.

A :class:`Scratch` is created from a repository (``from_repo``) or empty (``empty``, for
the ``build`` chain). The team reads and writes through it — every path confined — and
each step is recorded as a :class:`CodeState` (hash, files changed, the instruction that
led to it): the sequence experience learning mines. The result is a
:class:`~daemon.workspace.change.ProposedDiff` for the user to apply.

What the team wrote is kept in a content store beside the copy, so the proposed change is
exactly the team's edits: files that tests or the program create while running in the
scratch copy never leak into it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from daemon.paths import temp_prefix
from daemon.workspace.change import (
    ChangeConflict,
    FileEdit,
    ProposedDiff,
    apply_change,
    render_diff,
    write_atomic,
)
from daemon.workspace.files import scan_repo
from daemon.workspace.paths import PathOutsideWorkspace, confine

__all__ = [
    "ChangeConflict", "CodeState", "FileEdit", "NotEditable", "PathOutsideWorkspace", "ProposedDiff", "Scratch",
    "apply_change",
]


class NotEditable(ValueError):
    """The file is binary, not UTF-8, or was left out of the copy; the team cannot read or edit it."""


@dataclass
class CodeState:
    index: int
    hash: str
    files: list[str]   # changed since the previous state (empty for state 0)
    instruction: str
    at: float = field(default_factory=time.time)


class Scratch:
    """A scratch copy the team works in. Read and write through it; never touch ``root`` directly."""

    def __init__(self, root: Path, holder: Path, source: Path | None) -> None:
        self.root = root
        self.source = source
        self.states: list[CodeState] = []
        self.skipped: dict[str, str] = {}          # source files left out of the copy, and why
        self.binary: set[str] = set()              # copied for the program's use, never shown or edited
        self._holder = holder
        self._objects = holder / "objects"
        self._objects.mkdir()
        self._current: dict[str, str] = {}         # path -> sha256 of the team's current text
        self._manifests: list[dict[str, str]] = []

    # -- creation -----------------------------------------------------------------------
    @classmethod
    def from_repo(cls, source: Path, base_dir: Path | None = None) -> Scratch:
        """A copy of ``source``'s working tree (uncommitted changes included).

        ``.gitignore`` is honoured; ``.git``, virtualenvs, ``node_modules``, build output
        and files over 1 MB are skipped. Binary files are copied so the program and its
        tests can use them, but they are not listed, shown or editable.
        """
        source = Path(source).resolve()
        if not source.is_dir():
            raise NotADirectoryError(f"cannot copy the repository {source}: not a folder")
        scratch = cls._create(base_dir, source)
        scan = scan_repo(source)
        scratch.skipped = dict(scan.skipped)
        for rel in scan.text:
            data = (source / rel).read_bytes()
            dest = scratch.root / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data)
            shutil.copymode(source / rel, dest)
            scratch._current[rel] = scratch._store(data)
        for rel in scan.binary:
            dest = scratch.root / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source / rel, dest)
            scratch.binary.add(rel)
        for rel in scan.symlinks:
            # Re-point the link relatively, so it can never reach back into the user's tree.
            link = source / rel
            target = os.path.relpath(os.path.realpath(link), os.path.realpath(link.parent))
            dest = scratch.root / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(target, dest)
        scratch.snapshot("initial state: copy of the repository")
        return scratch

    @classmethod
    def empty(cls, base_dir: Path | None = None) -> Scratch:
        """An empty workspace, for new software (the ``build`` chain)."""
        scratch = cls._create(base_dir, None)
        scratch.snapshot("initial state: empty workspace")
        return scratch

    @classmethod
    def _create(cls, base_dir: Path | None, source: Path | None) -> Scratch:
        if base_dir is not None:
            Path(base_dir).mkdir(parents=True, exist_ok=True)
        holder = Path(tempfile.mkdtemp(prefix=temp_prefix("scratch"), dir=base_dir)).resolve()
        root = holder / "work"
        root.mkdir()
        return cls(root, holder, source)

    # -- files --------------------------------------------------------------------------
    def read(self, rel: str) -> str:
        """The team's current text of ``rel`` (confined); FileNotFoundError when it has none."""
        key, path = self._locate(rel)
        if key in self._current:
            return self._load(self._current[key])
        if key in self.binary:
            raise NotEditable(f"{key} is a binary or non-UTF-8 file; the team cannot read or edit it")
        if not path.is_file():
            raise FileNotFoundError(f"no file {rel!r} in the workspace")
        data = path.read_bytes()  # a file the program created while running
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise NotEditable(f"{key} is not UTF-8 text; the team cannot read or edit it") from None

    def exists(self, rel: str) -> bool:
        key, _ = self._locate(rel)
        return key in self._current

    def write(self, rel: str, text: str) -> None:
        """Create or replace ``rel`` with ``text`` (confined; newlines kept as given)."""
        key, path = self._locate(rel)
        if key in self.binary:
            raise NotEditable(f"{key} is a binary file; the team cannot replace it")
        for part in (key, *(p.as_posix() for p in PurePosixPath(key).parents if p.as_posix() != ".")):
            if part in self.skipped:
                raise NotEditable(f"{part} was left out of the copy ({self.skipped[part]}); "
                                  f"the team cannot write {key}")
        if path.is_dir():
            raise IsADirectoryError(f"cannot write {rel!r}: it is a folder in the workspace")
        write_atomic(path, text, durable=False)
        self._current[key] = self._store(text.encode("utf-8"))

    def delete(self, rel: str) -> None:
        key, path = self._locate(rel)
        if key not in self._current:
            raise FileNotFoundError(f"cannot delete {rel!r}: no such file in the workspace")
        path.unlink(missing_ok=True)
        del self._current[key]

    def list_files(self) -> list[str]:
        """The team's text files, relative paths with forward slashes, sorted."""
        return sorted(self._current)

    def _locate(self, rel: str) -> tuple[str, Path]:
        path = confine(self.root, rel)
        return path.relative_to(self.root).as_posix(), path

    # -- states -------------------------------------------------------------------------
    def snapshot(self, instruction: str) -> CodeState:
        """Record the current files as the next code state."""
        manifest = dict(self._current)
        previous = self._manifests[-1] if self._manifests else manifest
        changed = sorted(p for p in manifest.keys() | previous.keys() if manifest.get(p) != previous.get(p))
        digest = hashlib.sha256("".join(f"{p}\0{h}\n" for p, h in sorted(manifest.items())).encode()).hexdigest()
        state = CodeState(index=len(self.states), hash=digest, files=changed, instruction=instruction)
        self._manifests.append(manifest)
        self.states.append(state)
        return state

    def text_at(self, index: int, rel: str) -> str | None:
        """The text of ``rel`` in code state ``index``; None when the file did not exist then."""
        sha = self._manifests[index].get(rel)
        return None if sha is None else self._load(sha)

    def files_at(self, index: int) -> dict[str, str]:
        """Every file of code state ``index`` with its text."""
        return {rel: self._load(sha) for rel, sha in sorted(self._manifests[index].items())}

    def proposed_change(self) -> ProposedDiff:
        """The team's edits against the initial state, as a unified diff and structured edits."""
        initial = self._manifests[0]
        edits: list[FileEdit] = []
        for rel in sorted(initial.keys() | self._current.keys()):
            before, after = initial.get(rel), self._current.get(rel)
            if before != after:
                edits.append(FileEdit(
                    path=rel,
                    before=None if before is None else self._load(before),
                    after=None if after is None else self._load(after),
                ))
        base_hashes = {edit.path: initial.get(edit.path) for edit in edits}
        return ProposedDiff(diff=render_diff(edits), edits=edits, base_hashes=base_hashes)

    # -- content store ------------------------------------------------------------------
    def _store(self, data: bytes) -> str:
        sha = hashlib.sha256(data).hexdigest()
        blob = self._objects / sha
        if not blob.exists():
            blob.write_bytes(data)
        return sha

    def _load(self, sha: str) -> str:
        return (self._objects / sha).read_bytes().decode("utf-8")

    # -- lifetime -----------------------------------------------------------------------
    def cleanup(self) -> None:
        """Remove the copy and its content store (idempotent)."""
        if self._holder.exists():
            shutil.rmtree(self._holder, onerror=_make_writable_and_retry)

    def __enter__(self) -> Scratch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.cleanup()


def _make_writable_and_retry(func: Callable[[str], object], path: str, _exc_info: object) -> None:
    # Generated code may leave read-only files or folders behind.
    try:
        os.chmod(os.path.dirname(path), stat.S_IRWXU)
        os.chmod(path, stat.S_IRWXU)
        func(path)
    except FileNotFoundError:
        pass
