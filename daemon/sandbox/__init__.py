"""Where generated code and tests run: `await run_sandboxed(argv, cwd=scratch_dir, timeout=30)`.

Every run gets a wall-clock timeout (the whole sandbox is killed at it, or when the awaiting
task is cancelled), per-process resource limits (`SandboxLimits`: CPU time, address space, file
size, open files, no core dumps; processes too where the kernel can count them per sandbox),
a scratch HOME and TMPDIR that are deleted afterwards, and a minimal environment without
secrets. What more the kernel enforces depends on the machine; it is found out once
(`detect_isolation`) and stated in every `SandboxResult.notes`.

As root with util-linux `unshare` (the daemon's usual case on a server): an empty network
namespace (no network at all), its own PID namespace (nothing outlives the run), a mount
namespace where everything but the scratch directory and HOME/TMPDIR is read-only, and a uid of
its own (61000-61999, no capabilities, no_new_privs), so RLIMIT_NPROC counts only its processes
and files private to the daemon's user are unreadable; the scratch directory is handed to that
uid for the run and back afterwards. Private folders above the scratch directory are replaced,
inside the sandbox, by empty read-only ones leading only to the scratch directory, the daemon's
own Python installation (so `sys.executable` works) and the `readable=` folders.
As another user, where user namespaces are allowed: the same namespaces, as root of a user
namespace with every capability dropped. Elsewhere: limits and the scratch HOME/TMPDIR only,
and the notes say so.
"""

from daemon.sandbox.isolation import Isolation, detect_isolation
from daemon.sandbox.records import SandboxError, SandboxLimits, SandboxResult
from daemon.sandbox.runner import run_sandboxed

__all__ = ["Isolation", "SandboxError", "SandboxLimits", "SandboxResult", "detect_isolation", "run_sandboxed"]
