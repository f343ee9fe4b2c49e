"""What a diff review looks at: the files a ``git diff`` changes and the lines it adds or changes.

``git diff BASE`` compares the working tree with BASE (a commit, branch or tag); ``--staged``
compares the index with HEAD, and the text reviewed is the staged one (``git show :path``), so
edits not yet staged never leak into a pre-commit check. The patch is read with ``unidiff``.
A file that cannot be reviewed (deleted, binary, a symlink or submodule, not UTF-8, too large)
is kept as a :class:`SkippedFile` with the reason, never silently dropped.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from unidiff.patch import PatchedFile  # unidiff's __init__ re-exports it without saying so

_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@", re.MULTILINE)
_DIFF_FILE = re.compile(r"^\+\+\+ (.+)$", re.MULTILINE)
MAX_FILE_BYTES = 1_000_000  # what the static lane's LintRequest accepts
GIT_TIMEOUT_S = 60

FileStatus = Literal["added", "modified", "renamed"]


class DiffError(Exception):
    """The diff could not be read: not a git repository, an unknown BASE, git missing. The message
    names the input and says what to do."""


@dataclass(frozen=True)
class ChangedFile:
    path: str  # relative to the repository root, with / separators
    status: FileStatus
    lines: tuple[tuple[int, int], ...]  # the added or changed lines, as 1-based inclusive ranges
    text: str  # the content under review: the staged one with --staged, else the working tree's
    old_path: str | None = None  # a renamed file's name at BASE

    def touches(self, start: int, end: int | None = None) -> bool:
        """True when the lines ``start..end`` overlap an added or changed line."""
        last = max(start, end or start)
        return any(a <= last and start <= b for a, b in self.lines)


@dataclass(frozen=True)
class SkippedFile:
    path: str
    reason: str


@dataclass(frozen=True)
class DiffScope:
    root: Path
    base: str  # as given, or "the index" (--staged)
    base_commit: str | None  # BASE resolved to a commit; None for --staged
    files: tuple[ChangedFile, ...] = ()
    skipped: tuple[SkippedFile, ...] = ()
    diff: str = ""  # the reviewed files' hunks (-U0), for a model review job's options.diff
    unstaged: tuple[str, ...] = field(default=())  # --staged: reviewed files whose working tree differs

    @property
    def staged(self) -> bool:
        return self.base_commit is None

    def file(self, path: str) -> ChangedFile | None:
        return next((f for f in self.files if f.path == path), None)


def _git(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[bytes]:
    try:
        proc = subprocess.run(["git", "-C", str(root), *args], capture_output=True, timeout=GIT_TIMEOUT_S,
                              check=False, env={**os.environ, "LC_ALL": "C", "GIT_PAGER": "cat"})
    except FileNotFoundError:
        raise DiffError("git is not installed (or not on PATH): a diff review needs it") from None
    except subprocess.TimeoutExpired:
        raise DiffError(f"git {args[0]} took more than {GIT_TIMEOUT_S} s in {root}") from None
    if check and proc.returncode != 0:
        why = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise DiffError(f"git {' '.join(args[:2])} failed in {root}: {why[-1] if why else proc.returncode}")
    return proc


def repository_root(start: Path) -> Path:
    """The root of the git work tree that holds ``start``; :class:`DiffError` outside one."""
    if not Path(start).is_dir():
        raise DiffError(f"{start} is not a folder")
    proc = _git(Path(start), "rev-parse", "--show-toplevel", check=False)
    if proc.returncode != 0:
        raise DiffError(f"{start} is not inside a git repository: a diff review needs one "
                        "(run it in a clone, or pass --workspace)")
    return Path(proc.stdout.decode("utf-8", "surrogateescape").strip())


def resolve_base(root: Path, base: str) -> str:
    """BASE as a commit id; :class:`DiffError` naming it when it is no commit, branch or tag here."""
    if not base.strip() or base.startswith("-"):
        raise DiffError(f"the base {base!r} is not a commit, branch or tag name")
    proc = _git(root, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{base}^{{commit}}", check=False)
    if proc.returncode != 0:
        hint = " (a shallow CI clone may lack it: fetch it first, e.g. `git fetch origin main`)" if "/" in base else ""
        raise DiffError(f"the base {base!r} is not a commit, branch or tag in {root}{hint}")
    return proc.stdout.decode().strip()


def _added_ranges(patched: PatchedFile) -> tuple[tuple[int, int], ...]:
    return tuple(_ranges({line.target_line_no for hunk in patched for line in hunk
                          if line.is_added and line.target_line_no}))


def _ranges(numbers: set[int]) -> list[tuple[int, int]]:
    """Line numbers as inclusive ranges of consecutive lines."""
    ranges: list[tuple[int, int]] = []
    for n in sorted(numbers):
        if ranges and n == ranges[-1][1] + 1:
            ranges[-1] = (ranges[-1][0], n)
        else:
            ranges.append((n, n))
    return ranges


def changed_lines(diff: str) -> dict[str, list[tuple[int, int]]]:
    """For each file of a unified diff (a save's, any context), the new-side lines it adds or changes, as
    inclusive ranges; a hunk that only removes lines is the line now before them (the first line when they
    began the file): where a finding about the change belongs. A diff unidiff cannot read changes nothing."""
    from itertools import takewhile

    from unidiff.errors import UnidiffParseError
    from unidiff.patch import PatchSet

    try:
        patch = PatchSet(diff)
    except UnidiffParseError:
        return {}
    out: dict[str, list[tuple[int, int]]] = {}
    for patched in patch:
        numbers: set[int] = set()
        for hunk in patched:
            added = {line.target_line_no for line in hunk if line.is_added and line.target_line_no}
            if added:
                numbers |= added
                continue
            before = [line.target_line_no for line in takewhile(lambda line: not line.is_removed, hunk)]
            numbers.add(next((n for n in reversed(before) if n), max(1, hunk.target_start)))
        if numbers and not patched.is_removed_file:
            out[patched.path] = _ranges(numbers)
    return out


def _content(root: Path, path: str, staged: bool) -> bytes | str:
    """The bytes under review, or why they cannot be read."""
    if staged:
        proc = _git(root, "cat-file", "blob", f":{path}", check=False)
        return proc.stdout if proc.returncode == 0 else "not in the index"
    target = root / path
    try:
        if target.is_symlink() or not target.is_file():
            return "not a regular file in the working tree"
        return target.read_bytes()
    except OSError as exc:
        return f"unreadable ({exc.strerror})"


def diff_scope(start: Path, base: str | None = None, *, staged: bool = False,
               paths: Sequence[str] = ()) -> DiffScope:
    """The files and lines changed since ``base`` (the working tree against it), or staged in the
    index (``staged=True``, against HEAD). ``paths`` (relative to the repository root) narrows the
    diff to those files, as pre-commit passes them."""
    from unidiff.patch import PatchSet  # small, but only a diff review needs it

    if staged == (base is not None):
        raise DiffError("say what to compare with: a BASE (commit, branch or tag) or --staged, not both")
    root = repository_root(start)
    commit = None if base is None else resolve_base(root, base)
    spec = [f":(literal){p}" for p in paths]
    compare = ["--cached"] if staged else [commit or ""]
    raw = _git(root, "-c", "core.quotePath=false", "diff", "--no-color", "--no-ext-diff", "--no-textconv",
               "--no-relative", "-U0", "-M", "--src-prefix=a/", "--dst-prefix=b/", *compare, "--", *spec).stdout
    files: list[ChangedFile] = []
    skipped: list[SkippedFile] = []
    hunks: list[str] = []
    for patched in PatchSet(raw.decode("utf-8", "replace")):
        path = patched.path
        reason = None
        if patched.is_removed_file:
            reason = "deleted"
        elif patched.is_binary_file:
            reason = "binary: not reviewed"
        elif patched.is_symlink:
            reason = "a symbolic link: not reviewed"
        elif patched.is_submodule:
            reason = "a submodule: not reviewed"
        elif path.startswith('"'):
            reason = "a name git has to quote: not reviewed"
        ranges = _added_ranges(patched) if reason is None else ()
        if reason is None and not ranges:
            reason = (f"renamed from {patched.source_file[2:]}, no line added or changed" if patched.is_rename
                      else "no line added or changed (only removed lines or a mode change)")
        content = _content(root, path, staged) if reason is None else b""
        if reason is None and isinstance(content, str):
            reason = content
        elif reason is None and isinstance(content, bytes) and len(content) > MAX_FILE_BYTES:
            reason = f"larger than {MAX_FILE_BYTES // 1000} kB: not reviewed"
        elif reason is None and isinstance(content, bytes) and b"\0" in content[:8192]:
            reason = "binary: not reviewed"
        text = None
        if reason is None and isinstance(content, bytes):
            try:
                text = content.decode("utf-8")
            except UnicodeDecodeError:
                reason = "not UTF-8 text: not reviewed"
        if reason is not None or text is None:
            skipped.append(SkippedFile(path, reason or "not reviewed"))
            continue
        status: FileStatus = "added" if patched.is_added_file else "renamed" if patched.is_rename else "modified"
        files.append(ChangedFile(path, status, ranges, text,
                                 old_path=patched.source_file[2:] if patched.is_rename else None))
        hunks.append(str(patched))
    unstaged: tuple[str, ...] = ()
    if staged and files:
        names = _git(root, "diff", "--name-only", "-z", "--no-relative", "--",
                     *[f":(literal){f.path}" for f in files]).stdout
        unstaged = tuple(sorted(n.decode("utf-8", "surrogateescape") for n in names.split(b"\0") if n))
    return DiffScope(root=root, base="the index" if staged else str(base), base_commit=commit, files=tuple(files),
                     skipped=tuple(skipped), diff="".join(hunks), unstaged=unstaged)


def diff_ranges(diff: str) -> dict[str, list[tuple[int, int]]]:
    """For each file of a unified diff, the new-side line ranges of its hunks."""
    ranges: dict[str, list[tuple[int, int]]] = {}
    for block in re.split(r"^(?=diff --git |--- )", diff, flags=re.MULTILINE):
        match = _DIFF_FILE.search(block)
        path = _diff_path(match.group(1)) if match else "/dev/null"
        if path == "/dev/null":
            continue
        spans = ranges.setdefault(path, [])
        for hunk in _HUNK.finditer(block):
            start, length = int(hunk.group(1)), int(hunk.group(2) or 1)
            spans.append((start, start + max(length, 1) - 1))
    return ranges


def _diff_path(raw: str) -> str:
    """The path of a ``+++`` line: ``b/my file.py``, ``"b/caf\\303\\251.py"`` (git quotes unusual
    names, UTF-8 bytes as octal), ``file.py`` then a tab and the time (``diff -u``)."""
    raw = raw.split("\t", 1)[0].rstrip("\r")
    if len(raw) > 1 and raw[0] == raw[-1] == '"' and raw.isascii():
        raw = raw[1:-1].encode("ascii").decode("unicode_escape").encode("latin-1").decode("utf-8", "replace")
    return raw if raw == "/dev/null" else raw.removeprefix("b/")
