"""What the sandbox costs per run, and where that time goes.

    .venv/bin/python bench/sandbox.py [--runs 10]

Prints the median wall time of `python -c pass` and of pytest on a 3-test project, each run
through `run_sandboxed` and plainly (an asyncio subprocess with the same argv, cwd and
PYTHONPATH), then a profile of the sandbox's own stages:

- spawn chain: `setpriv --pdeathsig KILL unshare --net --mount --pid --fork --kill-child
  --mount-proc -- true` (three execs, namespace creation, /proc mount, teardown);
- launcher: the same chain running `python -I -S launch.py SPEC -- true`, without and with
  confine_writes (the difference is the bind mounts, tmpfs covers and read-only remounts);
- chown walk there and back (the 3-test project, and a 1,000-file tree);
- the rest of `run_sandboxed` (temporary HOME/TMPDIR, environment, asyncio plumbing, status
  pipe, cleanup): sandboxed `true` minus the launcher with confine_writes;
- the test subject's own start-up: pytest with plugin autoload on and off (what the
  interpreter's installed pytest plugins cost, inside or outside a sandbox).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from daemon.sandbox import detect_isolation, run_sandboxed
from daemon.sandbox.isolation import SANDBOX_UIDS, change_owner, read_status
from daemon.sandbox.runner import _readable_folders

PYTEST = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
PROJECT = {
    "calc.py": "def add(a, b):\n    return a + b\n",
    "tests/test_calc.py": (
        "from calc import add\n\n\ndef test_one():\n    assert add(1, 2) == 3\n\n\n"
        "def test_zero():\n    assert add(0, 0) == 0\n\n\ndef test_negative():\n    assert add(-1, 1) == 0\n"
    ),
}


def write_project(root: Path) -> None:
    for rel, text in PROJECT.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


async def plain(argv: list[str], cwd: Path, env: dict[str, str]) -> int:
    process = await asyncio.create_subprocess_exec(
        *argv, cwd=cwd, env={**os.environ, **env}, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    await process.communicate()
    return process.returncode or 0


async def sandboxed(argv: list[str], cwd: Path, env: dict[str, str]) -> int:
    result = await run_sandboxed(argv, cwd=cwd, timeout=60, env=env)
    if result.returncode != 0:
        raise SystemExit(f"sandboxed {argv} failed: {result.stdout}{result.stderr}")
    return 0


async def median_ms(runner, argv: list[str], cwd: Path, env: dict[str, str], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        if await runner(argv, cwd, env) != 0:
            raise SystemExit(f"{argv} failed")
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def median_cmd_ms(argv: list[str], runs: int, **kwargs) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, **kwargs)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def launcher_ms(scratch: Path, confine: bool, runs: int) -> float:
    isolation = detect_isolation()
    # Without confine_writes there is no tmpfs over private folders: the run keeps our uid.
    uid = SANDBOX_UIDS[-1] if isolation.own_uid and confine else None
    owner = scratch.stat()
    if uid is not None:
        change_owner(scratch, uid, uid)
    times = []
    for _ in range(runs):
        status_read, status_write = os.pipe()
        spec = {
            "status_fd": status_write, "cwd": str(scratch), "writable": [str(scratch)],
            "readable": _readable_folders(()), "confine_writes": confine and isolation.confine_writes,
            "rlimits": {}, "uid": uid, "gid": uid, "drop_capabilities": isolation.user_namespace,
        }
        started = time.perf_counter()
        subprocess.run(isolation.launcher_command(spec, ["true"]), check=True, pass_fds=(status_write,))
        times.append(time.perf_counter() - started)
        os.close(status_write)
        if read_status(status_read).get("status") != 0:
            raise SystemExit("the launcher did not report a clean exit")
    if uid is not None:
        change_owner(scratch, owner.st_uid, owner.st_gid, only_from=uid)
    return statistics.median(times) * 1000


def chown_ms(root: Path, runs: int) -> float:
    owner = root.stat()
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        change_owner(root, SANDBOX_UIDS[-1], SANDBOX_UIDS[-1])
        change_owner(root, owner.st_uid, owner.st_gid, only_from=SANDBOX_UIDS[-1])
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    runs = args.runs
    isolation = detect_isolation()
    work = Path(tempfile.mkdtemp(prefix="troupe-bench-sandbox-"))
    try:
        project = work / "project"
        project.mkdir()
        write_project(project)
        env = {"PYTHONPATH": str(project)}
        await sandboxed(["true"], project, env)  # warm-up: thread pool, page cache
        rows = []
        for label, argv in (("python -c pass", [sys.executable, "-c", "pass"]), ("pytest, 3 tests", PYTEST)):
            bare = await median_ms(plain, argv, project, env, runs)
            boxed = await median_ms(sandboxed, argv, project, env, runs)
            rows.append((label, bare, boxed))
        sandboxed_true = await median_ms(sandboxed, ["true"], project, env, runs)

        flags = " ".join(word for word in isolation.prefix if word.startswith("--") and word != "--")
        print(f"sandbox: {flags or 'no namespaces'}; own uid {isolation.own_uid}; read-only outside the scratch "
              f"{isolation.confine_writes}; {runs} runs, medians; python {sys.version.split()[0]}\n")
        print(f"{'program':<18}{'plain ms':>10}{'sandboxed ms':>14}{'overhead ms':>13}")
        for label, bare, boxed in rows:
            print(f"{label:<18}{bare:>10.1f}{boxed:>14.1f}{boxed - bare:>13.1f}")

        spawn = median_cmd_ms([*isolation.prefix, "true"], runs) if isolation.prefix else 0.0
        direct_true = median_cmd_ms(["true"], runs)
        launcher_bare = launcher_ms(project, False, runs)
        launcher_full = launcher_ms(project, True, runs)
        big = work / "big"
        big.mkdir()
        for n in range(1000):
            (big / f"f{n}").touch()
        no_autoload = {**env, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
        pytest_bare = await median_ms(plain, PYTEST, project, no_autoload, runs)
        print("\nstage                                               ms")
        stages = [
            ("`true` run directly", direct_true),
            ("spawn chain (setpriv, unshare, namespaces) + true", spawn),
            ("+ launcher python -I -S start, no mounts", launcher_bare - spawn),
            ("+ mounts (confine_writes)", launcher_full - launcher_bare),
            ("rest of run_sandboxed (sandboxed `true` - launcher)", sandboxed_true - launcher_full),
            ("= sandboxed `true`", sandboxed_true),
            ("chown walk there and back, 3-test project", chown_ms(project, runs)),
            ("chown walk there and back, 1,000 files", chown_ms(big, runs)),
            ("pytest start-up, plugin autoload on (plain)", rows[1][1]),
            ("pytest start-up, PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 (plain)", pytest_bare),
        ]
        for label, ms in stages:
            print(f"{label:<56}{ms:>8.1f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
