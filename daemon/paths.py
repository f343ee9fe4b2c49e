"""Where Troupe keeps its state: ``TROUPE_HOME`` (default ``~/.local/share/troupe``)."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path


def troupe_home() -> Path:
    """The state folder; created with mode 0700 so only its user can read the database and socket."""
    raw = os.environ.get("TROUPE_HOME") or os.path.join(
        os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share"), "troupe"
    )
    home = Path(raw).expanduser()
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    return home


def database_path() -> Path:
    return troupe_home() / "troupe.db"


def socket_path() -> Path:
    return troupe_home() / "troupe.sock"


def log_dir() -> Path:
    path = troupe_home() / "logs"
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


def user_config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
    return Path(base) / "troupe" / "config.toml"


SCRATCH_TAG = "TROUPE_SCRATCH_TAG"


def temp_prefix(kind: str) -> str:
    """The name prefix of a scratch folder (``kind``: scratch, sandbox) in the system temp folder. In a
    daemon it carries the daemon's tag, so that the next start of the same daemon can sweep what a
    kill left behind without touching another daemon's folders."""
    tag = os.environ.get(SCRATCH_TAG)
    return f"troupe-{kind}-{tag}-" if tag else f"troupe-{kind}-"


def scratch_tag(home: Path) -> str:
    """The tag of the daemon serving ``home``: its folders are ``troupe-<kind>-<tag>-*``."""
    return hashlib.sha256(os.fsencode(os.path.realpath(home))).hexdigest()[:12]


def claim_scratch(home: Path) -> list[str]:
    """For the daemon starting on ``home`` (holding its lock): tag its scratch folders from now on and
    remove those an earlier run of it left (killed before it could clean up). Returns their names."""
    tag = scratch_tag(home)
    os.environ[SCRATCH_TAG] = tag
    swept = []
    with os.scandir(tempfile.gettempdir()) as entries:
        for entry in entries:
            if not (entry.name.startswith(("troupe-scratch-", "troupe-sandbox-")) and f"-{tag}-" in entry.name):
                continue
            if entry.is_dir(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_uid == os.geteuid():
                shutil.rmtree(entry.path, ignore_errors=True)
                swept.append(entry.name)
    return swept
