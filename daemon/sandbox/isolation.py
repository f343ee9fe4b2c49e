"""How much isolation this machine allows (found out once), and the identities sandboxes run as.

Best case (the daemon runs as root and util-linux `unshare` works): each run gets new network,
mount and PID namespaces, every mount but the scratch paths is read-only, and the program runs
as its own unprivileged uid, so RLIMIT_NPROC counts only its processes. A non-root daemon gets
the same namespaces inside a user namespace (`unshare --map-root-user`) with every capability
dropped. Where even that fails, the program runs with resource limits only, and every result
says so in its notes.
"""

from __future__ import annotations

import contextlib
import functools
import marshal
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict, cast

LAUNCHER = str(Path(__file__).with_name("launch.py"))
NAMESPACES = ("--net", "--mount", "--pid", "--fork", "--kill-child", "--mount-proc")
USER_NAMESPACE = ("--user", "--map-root-user")
# Sandboxed programs run as uids from this range (no passwd entry), one per concurrent run.
SANDBOX_UIDS = range(61000, 62000)


class LaunchSpec(TypedDict, total=False):
    """What the launcher (launch.py) is told, as `marshal` data; the runner adds status_fd last."""

    status_fd: int  # the write end of the status pipe
    cwd: str
    writable: list[str]
    readable: list[str]
    uid: int | None  # None: the daemon's own uid
    gid: int | None
    confine_writes: bool
    drop_capabilities: bool
    rlimits: dict[str, tuple[int, int]]  # RLIMIT name without its prefix -> (soft, hard)


class LaunchReport(TypedDict, total=False):
    """What the launcher writes to the status pipe: one of the two."""

    status: int  # the program's wait status
    setup_error: str


@dataclass(frozen=True)
class Isolation:
    """What every sandboxed run on this machine gets."""

    prefix: tuple[str, ...]  # the command words run before the launcher
    network_isolated: bool
    pid_namespace: bool
    confine_writes: bool
    own_uid: bool  # root: each run becomes an unprivileged uid of its own
    user_namespace: bool  # not root: root of a user namespace, all capabilities dropped
    limitation: str = ""  # why isolation is less than the best case; "" when it is not

    def launcher_command(self, spec: LaunchSpec, argv: list[str]) -> list[str]:
        return launcher_command(self.prefix, spec, argv)


def launcher_command(prefix: tuple[str, ...], spec: LaunchSpec, argv: list[str]) -> list[str]:
    """The command that runs `argv` through the launcher (isolated Python, no site-packages)."""
    return [*prefix, sys.executable, "-I", "-S", LAUNCHER, encode_spec(spec), "--", *argv]


def encode_spec(spec: LaunchSpec) -> str:
    """The launcher's spec as one argv word: hex of `marshal` data, which the launcher (this same
    interpreter, `sys.executable`) decodes without importing json (and with it re and enum)."""
    return marshal.dumps(dict(spec)).hex()  # marshal takes a plain dict, not a TypedDict


def _probe(prefix: tuple[str, ...], *, confine: bool, uid: int | None, user_namespace: bool) -> str:
    """Run `true` through the launcher under `prefix`; "" on success, else what went wrong."""
    with tempfile.TemporaryDirectory(prefix="troupe-sandbox-probe-") as scratch:
        read_fd, write_fd = os.pipe()
        spec: LaunchSpec = {
            "status_fd": write_fd,
            "cwd": scratch,
            "writable": [scratch],
            "confine_writes": confine,
            "rlimits": {},
            "uid": uid,
            "gid": uid,
            "drop_capabilities": user_namespace,
        }
        if uid is not None:
            os.chown(scratch, uid, uid)
        argv = launcher_command(prefix, spec, ["true"])
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=20, pass_fds=(write_fd,))
        except (OSError, subprocess.TimeoutExpired) as exc:
            return str(exc)
        finally:
            os.close(write_fd)
            report = read_status(read_fd)
    if report.get("setup_error"):
        return report["setup_error"]
    if done.returncode != 0 or report.get("status") != 0:
        return (done.stderr.strip() or f"exit status {done.returncode}").splitlines()[-1]
    return ""


def read_status(fd: int) -> LaunchReport:
    """What the launcher wrote to the status pipe (closed here); {} if it wrote nothing."""
    os.set_blocking(fd, False)
    data = b""
    with contextlib.suppress(BlockingIOError), os.fdopen(fd, "rb") as status:
        data = status.read() or b""
    if not data:
        return {}
    report = marshal.loads(data)
    # The launcher, this same interpreter, wrote it with marshal: a LaunchReport when it is a dict.
    return cast(LaunchReport, report) if isinstance(report, dict) else {}


@functools.cache
def detect_isolation() -> Isolation:
    """Try the strongest isolation first; the answer is cached for the life of the process."""
    root = os.geteuid() == 0
    unshare = shutil.which("unshare")
    if unshare is None:
        return _unisolated("util-linux `unshare` is not installed: no network, mount or PID namespace")
    setpriv = shutil.which("setpriv")
    # If the daemon dies, unshare (and with --kill-child, the whole sandbox) dies with it.
    guard = (setpriv, "--pdeathsig", "KILL", "--") if setpriv else ()
    attempts = ([NAMESPACES] if root else []) + [USER_NAMESPACE + NAMESPACES]
    failures = []
    for flags in attempts:
        prefix = (*guard, unshare, *flags, "--")
        userns = flags[:2] == USER_NAMESPACE
        # Only a real root can give the run a uid of its own (and needs the mount namespace
        # to let that uid reach a scratch directory inside private folders).
        uid = SANDBOX_UIDS[0] if root and not userns else None
        problem = _probe(prefix, confine=True, uid=uid, user_namespace=userns)
        if not problem:
            return Isolation(prefix, True, True, True, own_uid=uid is not None, user_namespace=userns)
        failures.append(f"`unshare {' '.join(flags)}`: {problem}")
        if not _probe(prefix, confine=False, uid=None, user_namespace=userns):
            why = f"cannot make the file system read-only ({problem})"
            return Isolation(prefix, True, True, False, own_uid=False, user_namespace=userns, limitation=why)
    return _unisolated("no namespaces on this machine: " + "; ".join(failures))


def _unisolated(why: str) -> Isolation:
    return Isolation((), False, False, False, own_uid=False, user_namespace=False, limitation=why)


_claimed: set[int] = set()
_claimed_lock = threading.Lock()


def claim_uid() -> int:
    """An unprivileged uid no other sandbox of this process is using."""
    with _claimed_lock:
        uid = random.choice([uid for uid in SANDBOX_UIDS if uid not in _claimed])
        _claimed.add(uid)
    return uid


def release_uid(uid: int) -> None:
    with _claimed_lock:
        _claimed.discard(uid)


def change_owner(root: Path, uid: int, gid: int, *, only_from: int | None = None) -> None:
    """Give `root` and everything under it (symlinks themselves, never their targets) to uid:gid;
    with `only_from`, only what that uid owns."""

    def give(path: str) -> None:
        if only_from is None or os.lstat(path).st_uid == only_from:
            os.lchown(path, uid, gid)

    give(str(root))
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            give(os.path.join(folder, name))
