"""Sandbox limits: time, CPU, processes, memory, file size, output — and nothing left running."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from pathlib import Path

import pytest

from daemon.sandbox import Isolation, SandboxLimits, run_sandboxed
from tests.sandbox.conftest import gone_soon, python, running_with

MiB = 1024 * 1024

SPIN_WITH_A_CHILD = """
import subprocess, sys
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", sys.argv[1]])
print("started", flush=True)
while True:
    pass
"""

# A fork bomb bounded even if containment failed (at most 64 children, each gone within 5 seconds).
# The parent does all the forking, so the limit is reached however the scheduler orders them.
BOUNDED_FORK_BOMB = """
import os, time
refused = 0
for _ in range(64):  # far past the limit: the kernel must refuse some (children sleep, so none frees a slot)
    try:
        child = os.fork()
    except OSError:
        refused += 1
        continue
    if child == 0:
        time.sleep(5)
        os._exit(0)
print(f"forks refused: {refused}", flush=True)
"""


def child_started(marker: str) -> bool:
    """Whether SPIN_WITH_A_CHILD's child (``python -c "…sleep(600)" MARKER``) is running."""
    needle = f"\0-c\0import time; time.sleep(600)\0{marker}".encode()
    for pid in running_with(marker):
        try:
            if needle in Path(f"/proc/{pid}/cmdline").read_bytes():
                return True
        except OSError:
            continue  # exited while we looked
    return False


async def test_an_infinite_loop_is_killed_at_the_timeout_with_its_children(scratch: Path, marker: str) -> None:
    result = await run_sandboxed(python(SPIN_WITH_A_CHILD, marker), cwd=scratch, timeout=1)

    assert result.timed_out
    assert result.killed_by_signal == signal.SIGKILL and result.returncode == -signal.SIGKILL
    assert 1 <= result.duration_s < 3
    assert result.stdout == "started\n"  # output up to the kill is kept
    assert gone_soon(marker), "a process of the killed sandbox is still running"


async def test_a_process_that_leaves_the_process_group_dies_with_the_sandbox(
    scratch: Path, marker: str, isolation: Isolation
) -> None:
    if not isolation.pid_namespace:
        pytest.skip(f"no PID namespace on this machine, so escaped processes survive: {isolation.limitation}")
    escape = """
import subprocess, sys
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", sys.argv[1]], start_new_session=True)
"""
    result = await run_sandboxed(python(escape, marker), cwd=scratch, timeout=5)

    assert result.returncode == 0
    assert gone_soon(marker)


async def test_cancelling_the_awaiting_task_kills_the_sandbox(scratch: Path, marker: str) -> None:
    run = asyncio.create_task(run_sandboxed(python(SPIN_WITH_A_CHILD, marker), cwd=scratch, timeout=60))
    deadline = time.monotonic() + 30
    while not child_started(marker):  # the program runs and has its child: both must die with the sandbox
        assert time.monotonic() < deadline and not run.done(), "the sandboxed program never started its child"
        await asyncio.sleep(0.02)
    run.cancel()

    with pytest.raises(asyncio.CancelledError):
        await run
    assert gone_soon(marker)


async def test_a_fork_bomb_is_contained(scratch: Path, marker: str, isolation: Isolation) -> None:
    if not (isolation.own_uid or isolation.user_namespace):
        pytest.skip("RLIMIT_NPROC cannot bound the sandbox alone here: it runs as the daemon's own user")
    limits = SandboxLimits(max_processes=16)

    result = await run_sandboxed(python(BOUNDED_FORK_BOMB, marker), cwd=scratch, timeout=10, limits=limits)

    assert result.returncode == 0, result.stderr
    refused = int(result.stdout.removeprefix("forks refused: "))
    assert refused > 0
    assert gone_soon(marker)
    assert subprocess.run(["true"], timeout=5).returncode == 0  # the machine still forks


async def test_a_busy_loop_is_stopped_at_its_cpu_time_limit(scratch: Path) -> None:
    result = await run_sandboxed(
        python("while True: pass"), cwd=scratch, timeout=10, limits=SandboxLimits(cpu_seconds=1)
    )

    assert not result.timed_out
    assert result.killed_by_signal == signal.SIGXCPU
    assert any("CPU-time limit" in note for note in result.notes)


async def test_a_huge_allocation_fails_cleanly(scratch: Path) -> None:
    limits = SandboxLimits(memory_bytes=256 * MiB)

    result = await run_sandboxed(python("x = bytearray(8 * 1024**3)"), cwd=scratch, timeout=10, limits=limits)

    assert result.returncode == 1
    assert "MemoryError" in result.stderr
    assert not result.timed_out and result.duration_s < 5


async def test_writing_past_the_file_size_limit_fails(scratch: Path) -> None:
    writer = """
import errno
try:
    with open("big.bin", "wb") as out:
        for _ in range(4):
            out.write(b"x" * 1024 * 1024)
except OSError as exc:
    print(errno.errorcode[exc.errno])
"""
    result = await run_sandboxed(python(writer), cwd=scratch, timeout=10, limits=SandboxLimits(file_size_bytes=MiB))

    assert result.stdout.strip() == "EFBIG"
    assert (scratch / "big.bin").stat().st_size <= MiB


async def test_output_beyond_the_cap_keeps_its_start_and_end_around_a_marker(scratch: Path) -> None:
    talker = "print('BEGIN'); print('x' * 1_000_000); print('END')"

    result = await run_sandboxed(python(talker), cwd=scratch, timeout=10, limits=SandboxLimits(output_bytes=10_000))

    assert result.stdout.startswith("BEGIN\n")
    assert result.stdout.endswith("END\n")
    assert "bytes cut by the sandbox" in result.stdout
    assert len(result.stdout) < 10_100
    assert any(note.startswith("stdout was ") for note in result.notes)


async def test_runs_at_the_same_time_do_not_share_their_process_limit(scratch: Path, isolation: Isolation) -> None:
    if not (isolation.own_uid or isolation.user_namespace):
        pytest.skip("RLIMIT_NPROC cannot bound the sandbox alone here: it runs as the daemon's own user")
    ten_threads = """
import threading, time
threads = [threading.Thread(target=time.sleep, args=(0.3,)) for _ in range(10)]
for thread in threads:
    thread.start()
print("ten threads ran")
"""
    limits = SandboxLimits(max_processes=12)
    folders = [scratch / str(n) for n in range(3)]
    for folder in folders:
        folder.mkdir()

    results = await asyncio.gather(
        *[run_sandboxed(python(ten_threads), cwd=folder, timeout=10, limits=limits) for folder in folders]
    )

    assert [r.stdout for r in results] == ["ten threads ran\n"] * 3, [r.stderr for r in results]
