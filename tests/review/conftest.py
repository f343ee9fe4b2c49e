"""Temporary git repositories with history, and ``troupe review --diff`` run as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.conftest import daemon_env

# Two commits: the first has an unused import and an undefined name (old, not under review); the
# second changes `total` so that it uses a name that does not exist (F821, an error) and adds an
# unused import (F401, a warning, with ruff's safe fix).
FIRST = "import os\n\n\ndef old():\n    return missing_before\n\n\ndef total(xs):\n    return sum(xs)\n"
SECOND = ("import os\nimport sys\n\n\ndef old():\n    return missing_before\n\n\n"
          "def total(xs):\n    return sum(xs) + offset\n")


class GitRepo:
    def __init__(self, root: Path) -> None:
        self.root = root

    def git(self, *args: str) -> str:
        proc = subprocess.run(["git", "-C", str(self.root), *args], capture_output=True, text=True, check=True)
        return proc.stdout

    def write(self, path: str, text: str | bytes) -> None:
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(text if isinstance(text, bytes) else text.encode())

    def commit(self, message: str, **files: str | bytes) -> str:
        for path, text in files.items():
            self.write(path, text)
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message)
        return self.git("rev-parse", "HEAD").strip()

    def state(self) -> tuple[str, str]:
        """HEAD and the porcelain status: what a review must leave as it found it."""
        return self.git("rev-parse", "HEAD"), self.git("status", "--porcelain", "--untracked-files=all")


def new_repo(root: Path) -> GitRepo:
    root.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    repo = GitRepo(root)
    repo.git("config", "user.email", "dev@example.com")
    repo.git("config", "user.name", "Dev")
    repo.git("config", "commit.gpgsign", "false")
    return repo


@pytest.fixture
def two_commits(tmp_path: Path) -> GitRepo:
    """main with FIRST then SECOND in calc.py; HEAD~1 is the base."""
    repo = new_repo(tmp_path / "proj")
    repo.commit("first", **{"calc.py": FIRST})
    repo.commit("second", **{"calc.py": SECOND})
    return repo


def troupe(cwd: Path, *args: str, home: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    """``troupe ARGS`` in ``cwd``, as a subprocess (no daemon unless the test started one in ``home``)."""
    return subprocess.run([sys.executable, "-m", "daemon.cli.main", *args], cwd=cwd, text=True, capture_output=True,
                          env=daemon_env(home or cwd.parent / "troupe-home", **env), timeout=120)


def review_json(cwd: Path, *args: str, **env: str) -> tuple[int, dict[str, Any]]:
    proc = troupe(cwd, "review", *args, "--format", "json", **env)
    assert proc.stdout, proc.stderr
    return proc.returncode, json.loads(proc.stdout)
