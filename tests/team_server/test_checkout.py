"""A worker's repository cache: the job's commit, fetched when the clone lacks it, a checkout per job."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from daemon.team_server.checkout import CheckoutError, RepoCache
from daemon.team_server.config import TeamWorkspace
from tests.team_server.conftest import git_repository


def _commit(repo: Path, text: str) -> str:
    (repo / "app.py").write_text(text)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qam", "next"],
                   cwd=repo, check=True)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True,
                          check=True).stdout.strip()


async def test_a_job_gets_the_commit_it_names_even_one_pushed_after_the_cache_was_made(tmp_path: Path) -> None:
    remote = git_repository(tmp_path / "remote")
    first = subprocess.run(["git", "rev-parse", "HEAD"], cwd=remote, capture_output=True, text=True,
                           check=True).stdout.strip()
    cache = RepoCache(tmp_path / "cache")
    shop = TeamWorkspace("shop", str(remote))

    folder, commit = await cache.checkout(shop, None, "job-1")  # no commit named: the default branch now
    assert commit == first
    assert (folder / "app.py").read_text() == "def add(a, b):\n    return a + b\n"

    second = _commit(remote, "def add(a, b):\n    return b + a\n")
    folder2, commit2 = await cache.checkout(shop, second, "job-2")  # not in the cache yet: fetched
    assert commit2 == second
    assert (folder2 / "app.py").read_text() == "def add(a, b):\n    return b + a\n"
    assert (folder / "app.py").read_text() == "def add(a, b):\n    return a + b\n"  # job-1's stays as it was

    cache.release("job-1")
    assert not folder.exists()
    with pytest.raises(CheckoutError, match="has no commit 0000"):
        await cache.checkout(shop, "0" * 40, "job-3")
