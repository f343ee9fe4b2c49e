"""The daemon as a process: ``troupe daemon`` (foreground), ``troupe up`` (background),
``troupe down`` (graceful: SIGTERM, then wait), and the log file with secrets redacted."""

from __future__ import annotations

import asyncio
import logging
import logging.handlers
import os
import signal
import subprocess
import sys
import time

from daemon import paths
from daemon.redact import install_log_redaction, register_environment_secrets
from daemon.service.pidfile import AlreadyRunning, read_pid_file, socket_answers

log = logging.getLogger("troupe.daemon")


def log_file() -> os.PathLike[str]:
    return paths.log_dir() / "daemon.log"


def setup_logging(*, to_stderr: bool, level: str | None = None) -> None:
    """Log to ``TROUPE_HOME/logs/daemon.log`` (rotated), and stderr in the foreground; secrets redacted."""
    register_environment_secrets()
    root = logging.getLogger()
    root.setLevel(level or os.environ.get("TROUPE_LOG_LEVEL", "INFO").upper())
    fmt = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    handlers: list[logging.Handler] = [
        logging.handlers.RotatingFileHandler(log_file(), maxBytes=5_000_000, backupCount=3, encoding="utf-8")]
    if to_stderr:
        handlers.append(logging.StreamHandler(sys.stderr))
    for handler in handlers:
        handler.setFormatter(fmt)
        root.addHandler(handler)
    install_log_redaction(root)
    for noisy in ("aiohttp.access", "LiteLLM", "litellm", "httpx"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def run_foreground() -> int:
    """``troupe daemon``: serve until SIGTERM/SIGINT; exit status 0 on a clean stop."""
    setup_logging(to_stderr=True)

    from daemon.service.daemon import Daemon

    async def main() -> None:
        daemon = Daemon()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, daemon.request_stop)
        await daemon.serve()

    try:
        asyncio.run(main())
    except (AlreadyRunning, ValueError) as exc:  # ValueError: bad configuration, said in words
        log.error("the daemon could not start: %s", exc)
        print(f"troupe: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        log.error("the daemon could not start: %s", exc)
        print(f"troupe: the daemon could not start: {exc}", file=sys.stderr)
        return 1
    return 0


def running_pid() -> int | None:
    """The pid of the daemon serving this TROUPE_HOME, or None."""
    info = read_pid_file()
    if not info or not socket_answers(paths.socket_path()):
        return None
    pid = int(info.get("pid", 0))
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return None
    return pid


def start_background(*, wait: float = 20.0) -> tuple[int, bool]:
    """Start the daemon detached (own session, output to the log); ``(pid, started_now)``.

    Returns the running daemon's pid when one already serves this TROUPE_HOME.
    """
    pid = running_pid()
    if pid is not None:
        return pid, False
    with open(paths.log_dir() / "daemon.out", "ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "daemon.cli.main", "daemon"], stdin=subprocess.DEVNULL, stdout=out,
            stderr=subprocess.STDOUT, start_new_session=True, close_fds=True, cwd=paths.troupe_home(),
        )
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pid = running_pid()  # lost a race with another `troupe up`: that one serves
            if pid is not None:
                return pid, False
            raise RuntimeError(f"the daemon exited at start-up (status {proc.returncode}); "
                               f"see {paths.log_dir() / 'daemon.log'}")
        if socket_answers(paths.socket_path()) and running_pid() == proc.pid:
            return proc.pid, True
        time.sleep(0.05)
    raise RuntimeError(f"the daemon did not answer within {wait:.0f}s; see {paths.log_dir() / 'daemon.log'}")


def stop_background(*, wait: float = 30.0) -> int | None:
    """SIGTERM the running daemon and wait for it to exit; its pid, or None when none ran."""
    pid = running_pid()  # only a pid whose socket answers: a stale pid file may name someone else's process
    if pid is None:
        return None
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return None
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return pid
        if read_pid_file() is None and not paths.socket_path().exists():
            return pid
        time.sleep(0.05)
    raise RuntimeError(f"the daemon (pid {pid}) did not stop within {wait:.0f}s; `kill -9 {pid}` stops it "
                       "(its jobs are resumed or failed with the reason at the next start)")
