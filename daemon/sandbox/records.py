"""What a sandboxed run may use, and what came of it."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

MiB = 1024 * 1024


class SandboxError(RuntimeError):
    """The sandbox itself could not be set up (not a failure of the program run inside it)."""


@dataclass(frozen=True)
class SandboxLimits:
    """Resource limits for one sandboxed run (each applies per process, except `max_processes`)."""

    cpu_seconds: int | None = None  # None: the wall-clock timeout, rounded up, plus one second
    memory_bytes: int = 2048 * MiB  # address space (RLIMIT_AS): allocations beyond it fail
    max_processes: int = 128  # processes and threads of the sandbox (RLIMIT_NPROC)
    file_size_bytes: int = 64 * MiB  # largest file the program may write (RLIMIT_FSIZE)
    open_files: int = 256  # RLIMIT_NOFILE
    output_bytes: int = 256 * 1024  # kept per stream (stdout, stderr); the middle is cut beyond it

    def rlimits(self, timeout: float) -> dict[str, tuple[int, int]]:
        """The (soft, hard) resource limits, by RLIMIT name without its prefix."""
        cpu = self.cpu_seconds if self.cpu_seconds is not None else math.ceil(timeout) + 1
        return {
            # SIGXCPU at the soft limit, SIGKILL one second later at the hard one.
            "CPU": (cpu, cpu + 1),
            "AS": (self.memory_bytes, self.memory_bytes),
            "NPROC": (self.max_processes, self.max_processes),
            "FSIZE": (self.file_size_bytes, self.file_size_bytes),
            "NOFILE": (self.open_files, self.open_files),
            "CORE": (0, 0),
        }


@dataclass
class SandboxResult:
    """The outcome of `run_sandboxed`. `returncode` is negative (-signal) when a signal killed it."""

    returncode: int
    stdout: str
    stderr: str
    timed_out: bool
    killed_by_signal: int | None
    duration_s: float
    network_isolated: bool
    notes: list[str] = field(default_factory=list)

    @property
    def succeeded(self) -> bool:
        return self.returncode == 0 and not self.timed_out
