"""Helpers for the sandbox tests: a scratch directory, and a look at which processes still run."""

from __future__ import annotations

import sys
import time
import uuid
from pathlib import Path

import pytest

from daemon.sandbox import Isolation, detect_isolation


def python(code: str, *args: str) -> list[str]:
    """argv that runs `code` with the daemon's own interpreter (the sandbox keeps it readable)."""
    return [sys.executable, "-c", code, *args]


def running_with(marker: str) -> list[int]:
    """PIDs of processes whose command line contains `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue  # exited while we looked
    return found


def gone_soon(marker: str, within: float = 3.0) -> bool:
    """Whether every process carrying `marker` has exited within `within` seconds."""
    deadline = time.monotonic() + within
    while running_with(marker):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.fixture
def marker() -> str:
    """A unique word to put on the command line of the processes a test starts."""
    return f"troupe-sandbox-test-{uuid.uuid4().hex}"


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    """The scratch copy a sandboxed program works in."""
    path = tmp_path / "scratch"
    path.mkdir()
    return path


@pytest.fixture(scope="session")
def isolation() -> Isolation:
    return detect_isolation()
