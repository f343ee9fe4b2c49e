"""The environment a sandboxed program sees: minimal, and never the daemon's secrets."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

SECRET_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD")
# Harmless settings worth keeping from the daemon's own environment.
INHERITED = ("LANG", "LC_ALL", "LC_CTYPE", "TZ", "TERM")
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def looks_secret(name: str) -> bool:
    upper = name.upper()
    return any(marker in upper for marker in SECRET_MARKERS)


def sandbox_environment(
    extra: Mapping[str, str] | None, *, home: Path, tmp: Path, allow: Iterable[str] = ()
) -> tuple[dict[str, str], list[str]]:
    """The child's environment and the names of the variables withheld as secrets.

    Starts from nothing: PATH, a scratch HOME and TMPDIR, a UTF-8 locale and a few harmless
    inherited settings; then `extra` (the caller's variables). A name containing KEY, TOKEN,
    SECRET or PASSWORD is dropped unless it is listed in `allow`; a name in `allow` that
    `extra` lacks is passed through from the daemon's environment, if set there.
    """
    allowed = set(allow)
    env = {name: os.environ[name] for name in INHERITED if name in os.environ}
    env.setdefault("LANG", "C.UTF-8")
    env.update(
        PATH=DEFAULT_PATH,
        HOME=str(home),
        TMPDIR=str(tmp),
        TMP=str(tmp),
        TEMP=str(tmp),
        USER="sandbox",
        LOGNAME="sandbox",
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONUNBUFFERED="1",
    )
    env.update({name: os.environ[name] for name in allowed if name in os.environ})
    withheld = []
    for name, value in (extra or {}).items():
        if looks_secret(name) and name not in allowed:
            withheld.append(name)
        else:
            env[name] = value
    return env, sorted(withheld)
