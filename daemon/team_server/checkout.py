"""The repositories on a worker: a bare clone per workspace in the cache, fetched when a job names
a commit it does not have, and a checkout of the job's commit for each job (sharing the clone's
objects, so it costs only the files), removed when the job ends."""

from __future__ import annotations

import asyncio
import fcntl
import os
import shutil
from pathlib import Path

from daemon.team_server.config import TeamWorkspace


class CheckoutError(RuntimeError):
    """git could not get the repository or the commit; the message says which and why."""


async def _git(*args: str, cwd: Path | None = None) -> str:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}  # a remote asking for a password fails, not hangs
    proc = await asyncio.create_subprocess_exec("git", *args, cwd=cwd, env=env, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE)
    out, err = await proc.communicate()
    if proc.returncode != 0:
        command = next(a for i, a in enumerate(args)
                       if not a.startswith("-") and (i == 0 or args[i - 1] not in ("-c", "--git-dir")))
        raise CheckoutError(f"git {command} failed: {err.decode(errors='replace').strip()[:500]}")
    return out.decode().strip()


class RepoCache:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._locks: dict[str, asyncio.Lock] = {}

    def _mirror(self, workspace: TeamWorkspace) -> Path:
        return self.root / "repos" / f"{workspace.name}.git"

    async def checkout(self, workspace: TeamWorkspace, commit: str | None, job_id: str) -> tuple[Path, str]:
        """A fresh checkout of ``commit`` (None: the remote's default branch now) for ``job_id``;
        returns its folder and the full commit id."""
        mirror = await self._fetched(workspace, commit)
        try:
            resolved = await _git("--git-dir", str(mirror), "rev-parse", "--verify", f"{commit or 'HEAD'}^{{commit}}")
        except CheckoutError:
            raise CheckoutError(f"{workspace.remote} has no commit {commit or 'HEAD'}") from None
        target = self.root / "jobs" / job_id
        shutil.rmtree(target, ignore_errors=True)  # a retried job starts from its commit again
        target.parent.mkdir(parents=True, exist_ok=True)
        await _git("clone", "--quiet", "--shared", "--no-checkout", str(mirror), str(target))
        await _git("-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", resolved, cwd=target)
        return target, resolved

    def release(self, job_id: str) -> None:
        shutil.rmtree(self.root / "jobs" / job_id, ignore_errors=True)

    async def _fetched(self, workspace: TeamWorkspace, commit: str | None) -> Path:
        mirror = self._mirror(workspace)
        lock = self._locks.setdefault(workspace.name, asyncio.Lock())
        async with lock:  # one clone or fetch at a time per repository in this process
            mirror.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(mirror.parent / f"{workspace.name}.lock", os.O_RDWR | os.O_CREAT, 0o600)
            try:  # and across the worker processes sharing this cache
                await asyncio.to_thread(fcntl.flock, fd, fcntl.LOCK_EX)
                if not (mirror / "HEAD").exists():
                    await _git("clone", "--quiet", "--bare", workspace.remote, str(mirror))
                elif commit is None or not await _has(mirror, commit):
                    await _git("--git-dir", str(mirror), "fetch", "--quiet", "--prune", "origin",
                               "+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*")
            finally:
                os.close(fd)
        return mirror


async def _has(mirror: Path, commit: str) -> bool:
    try:
        await _git("--git-dir", str(mirror), "cat-file", "-e", f"{commit}^{{commit}}")
    except CheckoutError:
        return False
    return True
