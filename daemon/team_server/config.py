"""The team server's configuration: one TOML file shared by every API node and worker.

``TROUPE_TEAM_CONFIG`` (or ``--config``) names it; ``TROUPE_STORE_URL`` overrides ``[store] url``::

    [store]
    url = "postgresql://troupe@db.example/troupe"   # the jobs, events, findings, queue and people

    [queue]                  # optional: the queue's and event channel's PostgreSQL, when the store
    url = "postgresql://…"   # is elsewhere (TROUPE_QUEUE_URL; default: the store's URL)

    [server]                 # troupe server
    host = "0.0.0.0"
    port = 8790

    [worker]                 # troupe worker
    concurrency = 2          # jobs at once per worker process
    cache = "/var/cache/troupe"   # bare clones of the workspaces' remotes, and per-job checkouts

    [limits]                 # per person, on every API node (over one: 429 with Retry-After)
    jobs = 20                # jobs queued, running or waiting for an answer at once (0: no limit)
    requests_per_second = 20 # per token, per node, with bursts of up to ``burst`` (0: no limit)
    burst = 40

    [[workspace]]
    name = "shop"
    remote = "git@git.example:shop.git"   # any URL or path `git clone` takes
    channel = "C0123SHOP"                 # the Slack channel whose mentions work on this repository
    shared_with = ["ada", "bob"]          # people (``troupe server add-person``) who may see it
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from daemon.config import ConfigError
from daemon.json_types import Json, JsonObject

TEAM_ROOT = "/team"
"""A team workspace's root in the store is ``/team/<name>``: a name, not a folder on the API node
(the repository lives on the workers, at the job's commit)."""
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


@dataclass(frozen=True)
class TeamWorkspace:
    name: str
    remote: str
    channel: str | None = None
    shared_with: tuple[str, ...] = ()

    @property
    def root(self) -> str:
        return f"{TEAM_ROOT}/{self.name}"


@dataclass
class TeamConfig:
    store_url: str
    queue_url_setting: str = ""
    host: str = "127.0.0.1"
    port: int = 8790
    concurrency: int = 2
    cache: Path = field(default_factory=lambda: Path("~/.cache/troupe-worker").expanduser())
    workspaces: dict[str, TeamWorkspace] = field(default_factory=dict)
    source: str = "(defaults)"
    jobs_per_person: int = 20
    requests_per_second: float = 20.0
    burst: int = 40

    @property
    def queue_url(self) -> str:
        """The PostgreSQL URL the queue and the event channel use (default: the store's)."""
        url = self.queue_url_setting or self.store_url
        if not url.startswith(("postgresql://", "postgres://")):
            raise ConfigError(f"the team server needs PostgreSQL: [store] url in {self.source} (or "
                              "TROUPE_STORE_URL) must be a postgresql:// URL")
        return url

    def workspace(self, name_or_root: str) -> TeamWorkspace | None:
        name = name_or_root.removeprefix(TEAM_ROOT + "/").strip("/")
        return self.workspaces.get(name)

    def for_channel(self, channel: str) -> TeamWorkspace | None:
        return next((ws for ws in self.workspaces.values() if ws.channel == channel), None)

    def for_remote(self, remote: str) -> list[TeamWorkspace]:
        """The workspaces cloned from ``remote`` (an editor's clone names its origin); a trailing
        ``/`` or ``.git`` does not matter."""
        def bare(url: str) -> str:
            return url.strip().rstrip("/").removesuffix(".git").rstrip("/")

        return [ws for ws in self.workspaces.values() if bare(ws.remote) == bare(remote)]


def _get(data: JsonObject, key: str, kind: type | tuple[type, ...], where: str, default: object) -> Json:
    """``data[key]`` (else ``default``) of ``kind`` (checked at run time, so Json to mypy), from the TOML file."""
    value = data.get(key, default)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        raise ConfigError(f"{where}.{key} must be {getattr(kind, '__name__', kind)}, got {value!r}")
    return value


def load_team_config(path: str | os.PathLike[str] | None = None) -> TeamConfig:
    """The file named by ``path`` or ``TROUPE_TEAM_CONFIG``; the store URL may come from the environment alone."""
    raw_path = path or os.environ.get("TROUPE_TEAM_CONFIG")
    data: JsonObject = {}
    source = "(no file)"
    if raw_path:
        source = str(raw_path)
        try:
            data = tomllib.loads(Path(raw_path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"cannot read the team config {raw_path}: {exc.strerror}") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{raw_path} is not valid TOML: {exc}") from None
    store = _get(data, "store", dict, source, {})
    url = os.environ.get("TROUPE_STORE_URL") or _get(store, "url", str, f"{source}: [store]", "")
    if not url:
        raise ConfigError(f"say where the team's store is: [store] url in {source}, or TROUPE_STORE_URL")
    queue = _get(data, "queue", dict, source, {})
    server = _get(data, "server", dict, source, {})
    worker = _get(data, "worker", dict, source, {})
    config = TeamConfig(
        store_url=url, queue_url_setting=os.environ.get("TROUPE_QUEUE_URL") or _get(queue, "url", str, "[queue]", ""),
        host=_get(server, "host", str, "[server]", "127.0.0.1"),
        port=_get(server, "port", int, "[server]", 8790),
        concurrency=_get(worker, "concurrency", int, "[worker]", 2),
        cache=Path(_get(worker, "cache", str, "[worker]", "~/.cache/troupe-worker")).expanduser(),
        source=source)
    limits = _get(data, "limits", dict, source, {})
    config.jobs_per_person = _get(limits, "jobs", int, "[limits]", 20)
    config.requests_per_second = float(_get(limits, "requests_per_second", (int, float), "[limits]", 20.0))
    config.burst = _get(limits, "burst", int, "[limits]", 40)
    if min(config.jobs_per_person, config.requests_per_second, config.burst) < 0:
        raise ConfigError(f"{source}: [limits] must not be negative (0: no limit)")
    for index, item in enumerate(_get(data, "workspace", list, source, [])):
        where = f"{source}: [[workspace]] #{index + 1}"
        if not isinstance(item, dict):
            raise ConfigError(f"{where} must be a table")
        name = _get(item, "name", str, where, "")
        if not NAME.match(name):
            raise ConfigError(f"{where}: name {name!r} must be letters, digits, '.', '_' or '-' (at most 64)")
        shared = _get(item, "shared_with", list, where, [])
        if not all(isinstance(person, str) for person in shared):
            raise ConfigError(f"{where}: shared_with must be a list of people's names")
        channel = item.get("channel")
        config.workspaces[name] = TeamWorkspace(name, _get(item, "remote", str, where, ""),
                                                str(channel) if channel else None, tuple(shared))
        if not config.workspaces[name].remote:
            raise ConfigError(f"{where}: say where its repository is: remote = \"<git URL or path>\"")
    return config
