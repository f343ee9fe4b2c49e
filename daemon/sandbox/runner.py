"""`run_sandboxed`: run a program under the sandbox and collect what it did."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from daemon.paths import temp_prefix
from daemon.sandbox.environment import sandbox_environment
from daemon.sandbox.isolation import (
    Isolation,
    LaunchReport,
    LaunchSpec,
    change_owner,
    claim_uid,
    detect_isolation,
    read_status,
    release_uid,
)
from daemon.sandbox.records import MiB, SandboxError, SandboxLimits, SandboxResult

# How long output may stay open after the program exits, before what holds it is killed.
OUTPUT_GRACE_S = 1.0
SIGNAL_NOTES: dict[int, str] = {
    signal.SIGXCPU: "stopped by SIGXCPU: it used up its CPU-time limit",
    signal.SIGXFSZ: "stopped by SIGXFSZ: it wrote a file past the file-size limit",
}


async def run_sandboxed(
    argv: Sequence[str],
    *,
    cwd: str | Path,
    timeout: float = 30,
    limits: SandboxLimits | None = None,
    env: Mapping[str, str] | None = None,
    stdin: bytes | str | None = None,
    allow_env: Iterable[str] = (),
    readable: Iterable[str | Path] = (),
) -> SandboxResult:
    """Run `argv` in the scratch directory `cwd` inside the sandbox and wait for it.

    At `timeout` seconds (wall clock), or if the awaiting task is cancelled, the whole sandbox is
    killed. `env` adds variables to a minimal environment; names that look secret (KEY, TOKEN,
    SECRET, PASSWORD) are withheld unless listed in `allow_env`. The daemon's own Python
    installation, and the folders in `readable`, stay readable (never writable) even when they
    sit in a private folder. `result.notes` says what was enforced for this run. Raises
    `SandboxError` when the sandbox itself cannot be set up.
    """
    if not argv:
        raise ValueError("run_sandboxed needs a program to run; argv is empty")
    limits = limits or SandboxLimits()
    workdir = Path(cwd).resolve()
    if not workdir.is_dir():
        raise SandboxError(f"the sandbox's working directory {workdir} does not exist or is not a directory")
    isolation = await asyncio.to_thread(detect_isolation)
    root = Path(tempfile.mkdtemp(prefix=temp_prefix("sandbox")))
    home, tmp = root / "home", root / "tmp"
    home.mkdir()
    tmp.mkdir()
    environment, withheld = sandbox_environment(env, home=home, tmp=tmp, allow=allow_env)
    owner = workdir.stat()
    uid = claim_uid() if isolation.own_uid else None
    notes = _enforcement_notes(isolation, limits, timeout, uid)
    if withheld:
        notes.append(f"withheld secret-looking variables: {', '.join(withheld)} (pass allow_env to keep them)")
    try:
        if uid is not None:
            for folder in (workdir, root):
                await asyncio.to_thread(change_owner, folder, uid, uid)
        rlimits = limits.rlimits(timeout)
        if uid is None and not isolation.user_namespace:
            del rlimits["NPROC"]  # it would count every process of the daemon's user
        spec: LaunchSpec = {
            "cwd": str(workdir),
            "writable": [str(workdir), str(root)],
            "readable": _readable_folders(readable),
            "uid": uid,
            "gid": uid,
            "confine_writes": isolation.confine_writes,
            "drop_capabilities": isolation.user_namespace,
            "rlimits": rlimits,
        }
        return await _run(isolation, spec, list(argv), environment, stdin, timeout, limits, notes)
    finally:
        if uid is not None:
            await asyncio.to_thread(change_owner, workdir, owner.st_uid, owner.st_gid, only_from=uid)
            release_uid(uid)
        shutil.rmtree(root, ignore_errors=True)


async def _run(
    isolation: Isolation,
    spec: LaunchSpec,
    argv: list[str],
    environment: dict[str, str],
    stdin: bytes | str | None,
    timeout: float,
    limits: SandboxLimits,
    notes: list[str],
) -> SandboxResult:
    status_read, status_write = os.pipe()
    spec["status_fd"] = status_write
    started = time.monotonic()
    try:
        process = await asyncio.create_subprocess_exec(
            *isolation.launcher_command(spec, argv),
            stdin=asyncio.subprocess.DEVNULL if stdin is None else asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=spec["cwd"],
            env=environment,
            start_new_session=True,  # its own process group: killed whole
            pass_fds=(status_write,),
        )
    except BaseException:
        os.close(status_read)
        raise
    finally:
        os.close(status_write)
    timed_out = False
    readers = [
        asyncio.create_task(_read_capped(stream, limits.output_bytes)) for stream in (process.stdout, process.stderr)
    ]
    feeder = asyncio.create_task(_feed(process, stdin))
    try:
        try:
            await asyncio.wait_for(process.wait(), timeout)
        except TimeoutError:
            timed_out = True
            notes.append(f"timed out after {timeout:g} s: killed the whole sandbox")
            _kill_group(process)
        if not isolation.pid_namespace:
            _kill_group(process)  # what the program left running in its process group
        _, still_open = await asyncio.wait(readers, timeout=OUTPUT_GRACE_S)
        for reader in still_open:
            reader.cancel()
            notes.append("something outside the sandbox's process group kept its output open; stopped reading")
        stdout, stderr = [
            reader.result() if reader.done() and not reader.cancelled() else ("", 0) for reader in readers
        ]
    finally:
        if process.returncode is None:  # cancelled, or something above failed
            _kill_group(process)
        for task in (*readers, feeder):
            task.cancel()
        await process.wait()
        report = read_status(status_read)
    duration = time.monotonic() - started
    if report.get("setup_error"):
        raise SandboxError(f"could not start the sandbox: {report['setup_error']}")
    returncode, killed_by = _outcome(report, timed_out, process.returncode)
    for name, (_, dropped) in (("stdout", stdout), ("stderr", stderr)):
        if dropped:
            notes.append(f"{name} was {dropped} bytes over the {limits.output_bytes}-byte cap: the middle was cut")
    if killed_by in SIGNAL_NOTES:
        notes.append(SIGNAL_NOTES[killed_by])
    return SandboxResult(
        returncode=returncode,
        stdout=stdout[0],
        stderr=stderr[0],
        timed_out=timed_out,
        killed_by_signal=killed_by,
        duration_s=duration,
        network_isolated=isolation.network_isolated,
        notes=notes,
    )


def _kill_group(process: asyncio.subprocess.Process) -> None:
    # The launcher is PID 1 of the sandbox's PID namespace (when there is one): killing it kills
    # every process inside, even those that left the process group.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


async def _feed(process: asyncio.subprocess.Process, stdin: bytes | str | None) -> None:
    if stdin is None or process.stdin is None:
        return
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        process.stdin.write(stdin.encode() if isinstance(stdin, str) else stdin)
        await process.stdin.drain()
        process.stdin.close()


async def _read_capped(stream: asyncio.StreamReader | None, cap: int) -> tuple[str, int]:
    """Read to the end; keep the first and last cap/2 bytes. Returns (text, bytes dropped)."""
    head, tail, total = bytearray(), bytearray(), 0
    half = cap // 2
    while stream is not None and (chunk := await stream.read(64 * 1024)):
        total += len(chunk)
        room = half - len(head)
        head += chunk[:room] if room > 0 else b""
        tail = (tail + chunk[max(room, 0) :])[-(cap - half) :]
    dropped = total - len(head) - len(tail)
    if dropped <= 0:
        return (head + tail).decode(errors="replace"), 0
    marker = f"\n[... {dropped} bytes cut by the sandbox ...]\n"
    return head.decode(errors="replace") + marker + tail.decode(errors="replace"), dropped


def _outcome(report: LaunchReport, timed_out: bool, launcher_code: int | None) -> tuple[int, int | None]:
    """(returncode, killing signal) of the program itself, from the launcher's report."""
    if "status" in report:
        code = os.waitstatus_to_exitcode(report["status"])
        return code, (-code if code < 0 else None)
    # No report: the launcher was killed (timeout or cancellation) before the program ended.
    if timed_out or launcher_code is None or launcher_code < 0:
        return -signal.SIGKILL, signal.SIGKILL
    return launcher_code, None


def _readable_folders(extra: Iterable[str | Path]) -> list[str]:
    """`extra` and the daemon's Python installation (so `sys.executable` runs in the sandbox)."""
    folders = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, *extra)}
    return sorted(f for f in folders if os.path.isdir(f))


def _enforcement_notes(isolation: Isolation, limits: SandboxLimits, timeout: float, uid: int | None) -> list[str]:
    rl = limits.rlimits(timeout)
    notes = [
        f"limits per process: CPU {rl['CPU'][0]} s, address space {limits.memory_bytes // MiB} MiB, "
        f"files up to {limits.file_size_bytes // MiB} MiB, {limits.open_files} open files, no core dumps",
        "network: none (own empty network namespace)"
        if isolation.network_isolated
        else "network: NOT isolated (no network namespace on this machine)",
    ]
    if isolation.pid_namespace:
        notes.append("processes: own PID namespace; all are killed when the program exits or times out")
    else:
        notes.append("processes: own process group only; a process that leaves it can outlive the run")
    if uid is not None:
        notes.append(
            f"identity: unprivileged uid {uid}, no capabilities; at most {limits.max_processes} "
            "processes and threads (RLIMIT_NPROC)"
        )
    elif isolation.user_namespace:
        notes.append(
            f"identity: root of a user namespace with every capability dropped; at most "
            f"{limits.max_processes} processes and threads (RLIMIT_NPROC)"
        )
    else:
        notes.append(
            "identity: the daemon's own user; NO process-count limit (RLIMIT_NPROC would count every "
            "process of that user, and root is exempt from it)"
        )
    if isolation.confine_writes:
        notes.append("writes: only the scratch directory and the sandbox's HOME/TMPDIR; every other mount is read-only")
    else:
        notes.append("writes: NOT confined by the kernel; HOME and TMPDIR point into a scratch directory")
    if isolation.limitation:
        notes.append(f"limitation: {isolation.limitation}")
    return notes
