"""The static check of a review: ruff on the project's files as they are on disk.

The review job's first step (``static_check`` in a chain) and the candidates' scorer of Croto's
teams run it; the editor's text is linted by :mod:`daemon.lint.ruff` instead. Both honour the
project's own ruff configuration, else ruff's conservative defaults (:mod:`daemon.lint.config`).
This module builds on the workspace (its files, its confinement); the workspace never imports
the lint package.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from daemon.lint.config import config_args
from daemon.workspace.files import list_repo_files
from daemon.workspace.paths import PathOutsideWorkspace, confine

__all__ = ["LintIssue", "ruff_command", "static_check"]

log = logging.getLogger("troupe.workspace")  # the review's static check logged as it was before the move


def _existing_inside(root: Path, rel: str) -> bool:
    try:
        return confine(root, rel).is_file()
    except PathOutsideWorkspace:
        return False


@dataclass
class LintIssue:
    file: str
    line: int
    col: int
    code: str
    message: str
    fixable: bool = False  # ruff can fix it


@functools.cache
def ruff_command() -> tuple[str, ...]:
    """Ruff's own binary: ``python -m ruff`` would start an interpreter (~40 ms) only to exec it."""
    try:
        from ruff import find_ruff_bin

        return (os.fsdecode(find_ruff_bin()),)
    except (ImportError, FileNotFoundError):
        return (sys.executable, "-m", "ruff")


async def static_check(root: Path, files: list[str] | None = None) -> list[LintIssue]:
    """Ruff's findings on the project's Python files (its own ruff configuration honoured; without
    one, ruff's conservative defaults: :mod:`daemon.lint.config`).

    Ruff reads code, it does not run it, so it runs outside the sandbox. Never raises: a
    missing or failing ruff is logged and gives [].
    """
    root = Path(root)
    candidates = files if files is not None else list_repo_files(root)
    targets = [f for f in candidates if f.endswith((".py", ".pyi")) and _existing_inside(root, f)]
    if not targets:
        return []
    argv = [*ruff_command(), "check", "--output-format", "json", "--no-cache", "--exit-zero",
            "--force-exclude", *config_args(root, targets), "--", *targets]
    try:
        process = await asyncio.create_subprocess_exec(
            *argv, cwd=root, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
    except OSError as exc:
        log.warning("static check skipped: could not start ruff (%s)", exc)
        return []
    try:
        stdout, stderr = await asyncio.wait_for(process.communicate(), timeout=60)
    except TimeoutError:
        process.kill()
        await process.wait()
        log.warning("static check skipped: ruff took more than 60 s")
        return []
    try:
        raw = json.loads(stdout or b"[]")
    except json.JSONDecodeError:
        log.warning("static check skipped: ruff failed (exit %s): %s", process.returncode, stderr.decode()[-500:])
        return []
    issues = []
    real_root = root.resolve()
    for item in raw:
        path = Path(item.get("filename", ""))
        rel = path.relative_to(real_root).as_posix() if path.is_relative_to(real_root) else str(path)
        location = item.get("location") or {}
        issues.append(LintIssue(file=rel, line=int(location.get("row") or 1), col=int(location.get("column") or 1),
                                code=item.get("code") or "invalid-syntax", message=item.get("message", ""),
                                fixable=bool(item.get("fix"))))
    return sorted(issues, key=lambda i: (i.file, i.line, i.col))
