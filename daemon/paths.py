"""Where Troupe keeps its state: ``TROUPE_HOME`` (default ``~/.local/share/troupe``)."""

from __future__ import annotations

import os
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
