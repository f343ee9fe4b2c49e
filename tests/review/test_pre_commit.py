"""The pre-commit hook, run by the real ``pre-commit`` tool from a real ``git commit``: a commit that
adds an undefined name is blocked, a clean one goes through.

What this exercises: this repository's ``.pre-commit-hooks.yaml`` (validated by pre-commit's own
manifest loader), its hook's id, entry, file types and options, pre-commit's git hook, its stash
of unstaged changes, and ``troupe review --staged`` on the files pre-commit passes. What it does
not: the manifest says ``language: python``, so a user's pre-commit pip-installs Troupe into an
environment of its own (minutes, and the package index); here the same hook runs as
``language: system`` from a ``repo: local`` config, with this checkout's virtualenv on PATH.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from pre_commit.clientlib import load_manifest

from tests.daemon.conftest import REPO
from tests.review.conftest import GitRepo, new_repo

BIN = Path(sys.executable).parent


def local_config(manifest_hook: dict[str, Any]) -> str:
    hook = {key: manifest_hook[key] for key in ("id", "name", "entry", "types_or", "require_serial",
                                                "pass_filenames", "args")}
    return yaml.safe_dump({"repos": [{"repo": "local", "hooks": [{**hook, "language": "system"}]}]})


@pytest.fixture
def hooked(tmp_path: Path) -> tuple[GitRepo, dict[str, str]]:
    (hook,) = load_manifest(str(REPO / ".pre-commit-hooks.yaml"))  # pre-commit's own schema check
    assert hook["id"] == "troupe-review" and hook["language"] == "python"
    repo = new_repo(tmp_path / "proj")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TROUPE_", "PRE_COMMIT"))}
    env.update(PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}", PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"),
               TROUPE_HOME=str(tmp_path / "troupe-home"), TROUPE_AUTOSTART="0")
    repo.commit("the hook", **{".pre-commit-config.yaml": local_config(hook), "calc.py": "def one():\n    return 1\n"})
    subprocess.run([str(BIN / "pre-commit"), "install"], cwd=repo.root, env=env, check=True, capture_output=True)
    return repo, env


def commit(repo: GitRepo, env: dict[str, str], message: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "commit", "-m", message], cwd=repo.root, env=env, capture_output=True, text=True,
                          timeout=60)


def test_the_hook_blocks_an_undefined_name_and_lets_a_clean_commit_through(
        hooked: tuple[GitRepo, dict[str, str]]) -> None:
    repo, env = hooked
    head = repo.git("rev-parse", "HEAD")
    repo.write("calc.py", "def one():\n    return 1\n\n\ndef two():\n    return one() + undefined_name\n")
    repo.git("add", "calc.py")
    blocked = commit(repo, env, "two")
    output = blocked.stdout + blocked.stderr
    assert blocked.returncode != 0, output
    assert "troupe review (staged lines)" in output and "Failed" in output
    assert "calc.py:6:" in output and "[F821]" in output and "undefined_name" in output
    assert repo.git("rev-parse", "HEAD") == head  # nothing was committed
    assert repo.git("diff", "--cached", "--name-only") == "calc.py\n"  # the staged change is still there

    repo.write("calc.py", "def one():\n    return 1\n\n\ndef two():\n    return one() + 1\n")
    repo.git("add", "calc.py")
    passed = commit(repo, env, "two, fixed")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "troupe review (staged lines)" in passed.stderr and "Passed" in passed.stderr  # git's hook output
    assert repo.git("log", "-1", "--format=%s") == "two, fixed\n"


def test_only_the_staged_lines_count_not_old_problems_or_unstaged_edits(
        hooked: tuple[GitRepo, dict[str, str]]) -> None:
    repo, env = hooked
    repo.write("legacy.py", "print(old_undefined)\n")
    repo.git("add", "legacy.py")
    repo.git("commit", "-q", "--no-verify", "-m", "legacy code, committed past the hook")
    repo.write("legacy.py", "print(old_undefined)\nprint('a new line')\n")
    repo.git("add", "legacy.py")
    repo.write("legacy.py", "print(old_undefined)\nprint('a new line')\nprint(unstaged_undefined)\n")
    result = commit(repo, env, "a new line")
    assert result.returncode == 0, result.stdout + result.stderr  # F821 on line 1 is old; line 3 is not staged
    assert (repo.root / "legacy.py").read_text().endswith("print(unstaged_undefined)\n")  # pre-commit restored it
