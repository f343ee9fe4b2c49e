"""The sandbox launcher: the first process inside a sandbox.

`daemon.sandbox.runner` starts it as `python -I -S launch.py SPEC -- PROGRAM ARGS...`, usually
under `unshare --net --mount --pid --fork --mount-proc`, so it is PID 1 of a fresh PID namespace.
Standard library only: it runs without site-packages. It starts on every sandboxed run, so it
imports only what it needs (no json, re or signal: they pull in enum and the regex compiler,
which was most of its start-up); SPEC and the report are hex-encoded `marshal` data from and for
the daemon's own interpreter (`daemon.sandbox.isolation.encode_spec`, `read_status`). It

1. confines writes (spec "confine_writes"): bind-mounts each writable path onto itself and
   remounts every other mount read-only; when the program will run as another uid, directories
   that uid may not traverse (a 0700 home, say) are covered by an empty read-only tmpfs that
   holds nothing but the way down to the writable and readable paths;
2. forks the program: the child sets the resource limits, drops to the unprivileged uid (or,
   in a user namespace, drops every capability), sets no_new_privs and execs;
3. reaps every process until the program exits, then writes {"status": <wait status>} (or
   {"setup_error": "..."}, marshalled) to the status pipe and exits; as PID 1 its exit kills whatever the
   program left running.
"""

from __future__ import annotations

import ctypes
import errno
import marshal
import os
import resource
import sys
import warnings  # noqa: F401  os.execvp imports it lazily, maybe after we can no longer read the stdlib

TYPE_CHECKING = False  # not typing's: importing typing would cost start-up (it imports re)
if TYPE_CHECKING:
    from daemon.sandbox.isolation import LaunchReport, LaunchSpec

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_NOATIME, MS_NODIRATIME, MS_BIND, MS_REC = 32, 1024, 2048, 4096, 16384
MS_RELATIME = 1 << 21
# Per-mount flags a read-only remount must keep (the kernel refuses to clear locked ones).
KEPT_FLAGS = {
    "nosuid": MS_NOSUID,
    "nodev": MS_NODEV,
    "noexec": MS_NOEXEC,
    "noatime": MS_NOATIME,
    "nodiratime": MS_NODIRATIME,
    "relatime": MS_RELATIME,
}
PR_SET_PDEATHSIG, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 1, 24, 38
SIGKILL = 9  # the same on every Linux architecture; importing `signal` costs milliseconds (enum)

libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    def encode(value: str | None) -> bytes | None:
        return None if value is None else os.fsencode(value)

    _check(
        libc.mount(encode(source), encode(target), encode(fstype), ctypes.c_ulong(flags), encode(data)),
        f"mount {target}",
    )


def _prctl(option: int, value: int) -> None:
    _check(libc.prctl(option, ctypes.c_ulong(value), 0, 0, 0), f"prctl({option})")


def unescape_octal(text: str) -> str:
    """Undo mountinfo's escapes: `\\040` (space), `\\011`, `\\012`, `\\134` become the character."""
    parts = text.split("\\")
    out = [parts[0]]
    for part in parts[1:]:
        digits = part[:3]
        if len(digits) == 3 and all(c in "01234567" for c in digits):
            out.append(chr(int(digits, 8)) + part[3:])
        else:
            out.append("\\" + part)
    return "".join(out)


def _mount_table() -> list[tuple[str, set[str]]]:
    """(mount point, per-mount options) for every mount we can see."""
    with open("/proc/self/mountinfo", encoding="utf-8") as table:
        rows = [line.split() for line in table]
    return [(unescape_octal(row[4]), set(row[5].split(","))) for row in rows]


def _blocked_ancestor(path: str, uid: int) -> str | None:
    """The topmost directory above `path` that `uid` (no groups) may not traverse."""
    parts = path.strip("/").split("/")
    for depth in range(1, len(parts)):
        ancestor = "/" + "/".join(parts[:depth])
        info = os.stat(ancestor)
        searchable = info.st_mode & (0o100 if info.st_uid == uid else 0o001)
        if not searchable:
            return ancestor
    return None


def confine_writes(writable: list[str], readable: list[str], uid: int | None) -> None:
    """Leave only `writable` (and a private /dev/shm) writable in this mount namespace; when the
    program runs as `uid`, let it reach `writable` and `readable` even inside private folders."""
    paths = [*readable, *writable]  # writable last: a writable path inside a readable one wins
    handles = [(path, os.open(path, os.O_PATH | os.O_DIRECTORY)) for path in paths]
    blocked = sorted({a for p in paths if uid is not None and (a := _blocked_ancestor(p, uid))}, key=len)
    for ancestor in blocked:
        if any(ancestor.startswith(outer + "/") for outer in blocked if outer != ancestor):
            continue  # already under a covered directory
        _mount("tmpfs", ancestor, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m")
    for path, handle in handles:
        os.makedirs(path, mode=0o755, exist_ok=True)
        _mount(f"/proc/self/fd/{handle}", path, None, MS_BIND | MS_REC)
        os.close(handle)

    def stays_writable(mount_point: str) -> bool:
        return any(mount_point == path or mount_point.startswith(path.rstrip("/") + "/") for path in writable)

    for mount_point, options in _mount_table():
        if "ro" in options or stays_writable(mount_point):
            continue
        kept = sum(flag for name, flag in KEPT_FLAGS.items() if name in options)
        try:
            _mount(None, mount_point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | kept)
        except OSError as exc:
            if exc.errno not in (errno.EINVAL, errno.ENOENT):
                raise
            # A mount hidden under another one (or under our tmpfs): nothing can reach it.
    if os.path.isdir("/dev/shm"):
        _mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=64m")
    if not os.statvfs("/").f_flag & os.ST_RDONLY:
        raise OSError("the root file system is still writable after remounting it read-only")


def _drop_capabilities() -> None:
    """Root inside a user namespace keeps no capability: empty bounding set, then empty sets."""
    for capability in range(64):
        if libc.prctl(PR_CAPBSET_DROP, ctypes.c_ulong(capability), 0, 0, 0) != 0:
            break  # EINVAL: past the last capability this kernel knows
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    _check(libc.capset(header, (ctypes.c_uint32 * 6)()), "capset")


def become_sandboxed(spec: LaunchSpec) -> None:
    """In the program's process: limits, identity, then the working directory."""
    for name, (soft, hard) in spec["rlimits"].items():
        resource.setrlimit(getattr(resource, f"RLIMIT_{name}"), (soft, hard))
    uid, gid = spec.get("uid"), spec.get("gid")
    if uid is not None:
        if gid is None:
            raise ValueError("the sandbox spec names a uid without a gid")
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
    elif spec.get("drop_capabilities"):
        _drop_capabilities()
    _prctl(PR_SET_NO_NEW_PRIVS, 1)
    _prctl(PR_SET_PDEATHSIG, SIGKILL)  # a credential change cleared the launcher's
    os.chdir(spec["cwd"])


def _report(status_fd: int, report: LaunchReport) -> None:
    os.write(status_fd, marshal.dumps(dict(report)))  # marshal takes a plain dict, not a TypedDict


def main(argv: list[str]) -> None:
    spec: LaunchSpec = marshal.loads(bytes.fromhex(argv[1]))  # the runner's encode_spec
    program = argv[3:]
    status_fd = spec["status_fd"]
    os.set_inheritable(status_fd, False)
    _prctl(PR_SET_PDEATHSIG, SIGKILL)  # the daemon died: so do we
    if spec.get("confine_writes"):
        try:
            confine_writes(spec["writable"], spec.get("readable", []), spec.get("uid"))
        except OSError as exc:
            _report(status_fd, {"setup_error": f"could not confine writes: {exc}"})
            os._exit(125)
    child = os.fork()
    if child == 0:
        try:
            become_sandboxed(spec)
            os.execvp(program[0], program)
        except Exception as exc:  # a limit the kernel refused, a missing program, a denied exec
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            os.write(2, f"sandbox: cannot run {program[0]!r}: {reason}\n".encode())
            os._exit(127 if isinstance(exc, FileNotFoundError) else 126)
    while True:
        reaped, status = os.waitpid(-1, 0)
        if reaped == child:
            break
    _report(status_fd, {"status": status})
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv)
