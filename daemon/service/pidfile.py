"""Who serves this TROUPE_HOME: the pid file, the socket probe, and the error for a second daemon.

Kept free of the server's imports, so ``troupe up``, ``down`` and ``status`` start fast.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

from daemon import paths
from daemon.json_types import JsonObject


class AlreadyRunning(RuntimeError):
    """Another daemon holds this TROUPE_HOME."""


def pid_path() -> Path:
    return paths.troupe_home() / "daemon.pid"


def read_pid_file() -> JsonObject | None:  # what a daemon wrote; a reader checks the fields it uses
    try:
        written = json.loads(pid_path().read_text())
    except (OSError, ValueError):
        return None
    return written if isinstance(written, dict) else None


def socket_answers(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX) as probe:
        probe.settimeout(1)
        try:
            probe.connect(str(path))
        except OSError:
            return False
    return True
