"""``troupe doctor``: is everything Troupe needs in place? One line per check, or JSON."""

from __future__ import annotations

import asyncio
import json
import os
import platform
import sqlite3
import time
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path

from daemon import paths
from daemon.config import ConfigError, ModelSettings, load_settings, store_target

KEY_LIBRARIES = ("litellm", "pygls", "lsprotocol", "slack-bolt", "slack-sdk", "aiohttp", "sqlite-utils",
                 "watchdog", "pathspec", "ruff")


@dataclass
class Check:
    name: str
    ok: bool
    detail: str


def _versions() -> Check:
    found, missing = [], []
    for name in KEY_LIBRARIES:
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            missing.append(name)
    detail = ", ".join(found) + (f"; missing: {', '.join(missing)}" if missing else "")
    runtime = f"python {platform.python_version()}, sqlite {sqlite3.sqlite_version}"
    return Check("libraries", not missing, f"{runtime}, {detail}")


def _database() -> Check:
    """Which store (a SQLite file, or a PostgreSQL database, host and user: never the password) and its schema."""
    from storage.location import describe

    try:
        target = _team_store() or store_target()
    except ConfigError as exc:
        return Check("database", False, str(exc))
    where = describe(target)
    if isinstance(target, Path) and not target.exists():
        return Check("database", True, f"{where} (not created yet; the daemon creates it on first start)")
    try:
        from storage import Store

        store = Store.open(target)
        try:
            return Check("database", True, f"{where}, schema version {store.schema_version()}")
        finally:
            store.close()
    except Exception as exc:  # a StoreError's message never holds the password
        return Check("database", False, f"{where}: {exc}")


def _team_store() -> str | None:
    """The team config's store URL, when ``TROUPE_TEAM_CONFIG`` names one (a team server's host)."""
    if not os.environ.get("TROUPE_TEAM_CONFIG"):
        return None
    from daemon.team_server.config import load_team_config

    return load_team_config().store_url


def _queue() -> Check | None:
    """A team server's queue (procrastinate, on PostgreSQL): its schema, the workers that sent a heartbeat
    recently, the jobs waiting. None when no team config or PostgreSQL store is set (the laptop has no queue)."""
    from storage.location import describe, scrub

    team = bool(os.environ.get("TROUPE_TEAM_CONFIG"))
    try:
        if team:
            from daemon.team_server.config import load_team_config

            url = load_team_config().queue_url
        else:
            target = store_target()
            if isinstance(target, Path):
                return None
            url = os.environ.get("TROUPE_QUEUE_URL") or str(target)
    except ConfigError as exc:
        return Check("queue", False, str(exc))
    from daemon.team_server.queue import queue_health, stalled_after

    where, silence = describe(url), stalled_after()
    try:
        health = queue_health(url, stalled_after=silence)
    except Exception as exc:  # psycopg's error: unreachable, refused, bad password (never printed)
        reason = scrub(str(exc).strip(), url).splitlines()[0] if str(exc).strip() else type(exc).__name__
        return Check("queue", False, f"cannot reach PostgreSQL ({where}): {reason}")
    if not health.schema:
        return Check("queue", not team, f"procrastinate's schema is not in {where}: "
                     + ("`troupe server` creates it at its start" if team else "no team server has used it"))
    workers = f"{health.alive} worker{'s' * (health.alive != 1)} alive (a heartbeat within {silence:g} s)"
    if health.silent:
        workers += f", {health.silent} silent"
    detail = (f"procrastinate on {where}: schema migrated; {workers}; {health.waiting} job"
              f"{'s' * (health.waiting != 1)} waiting, {health.running} running")
    if not health.alive:
        detail += "; nothing runs the jobs: start `troupe worker`"
    if health.silent:  # a worker died (or lost its PostgreSQL): its jobs run again once another sees it
        detail += (f"; {health.silent} worker{'s' * (health.silent != 1)} stopped sending heartbeats "
                   "(died or cut off; their jobs are resumed by the others)")
    return Check("queue", (health.alive > 0 and not health.silent) or not team, detail)


LIMITS_WINDOW_S = 300.0


def _limits() -> Check | None:
    """A team server's limit hits in the last 5 minutes (the audit log's ``limited`` entries), by person."""
    if not os.environ.get("TROUPE_TEAM_CONFIG"):
        return None
    try:
        import psycopg

        from daemon.team_server.config import load_team_config

        url = load_team_config().store_url
        with psycopg.connect(url, autocommit=True, connect_timeout=5, application_name="troupe-doctor",
                             options="-c default_transaction_read_only=on") as conn:
            present = conn.execute("SELECT to_regclass('audit') IS NOT NULL").fetchone()
            if not present or not present[0]:
                return None
            rows = conn.execute(
                "SELECT actor, target, count(*) FROM audit WHERE action = 'limited' AND at > %s "
                "GROUP BY actor, target ORDER BY count(*) DESC, actor", [time.time() - LIMITS_WINDOW_S]).fetchall()
    except Exception:  # ConfigError or an unreachable database: the queue check says so
        return None
    if not rows:
        return Check("limits", True, f"nobody hit a limit in the last {LIMITS_WINDOW_S / 60:g} minutes")
    hits = ", ".join(f"{actor} ({limit}, {count}x)" for actor, limit, count in rows)
    return Check("limits", False, f"limits hit in the last {LIMITS_WINDOW_S / 60:g} minutes (429s; a 10 s "
                 f"window counts once): {hits}; `troupe server audit --action limited` lists them")


def _nodes() -> Check | None:
    """The team server's API nodes this machine is set to use (``TROUPE_SERVER_URL``, comma-separated
    for several): each one that does not answer. A node answering 503 has lost its PostgreSQL."""
    urls = [u.strip().rstrip("/") for u in os.environ.get("TROUPE_SERVER_URL", "").split(",") if u.strip()]
    if not urls:
        return None
    import urllib.error
    import urllib.request

    from daemon.api.protocol import PREFIX

    down, degraded = [], []
    for url in urls:
        request = urllib.request.Request(f"{url}{PREFIX}/health",
                                         headers={"Authorization": f"Bearer {os.environ.get('TROUPE_TOKEN', '')}"})
        try:
            with urllib.request.urlopen(request, timeout=3):
                pass
        except urllib.error.HTTPError as exc:
            if exc.code == 503:
                degraded.append(url)
        except (OSError, ValueError) as exc:
            down.append(f"{url} ({getattr(exc, 'reason', exc)})")
    if not down and not degraded:
        return Check("nodes", True, f"{len(urls)} API node{'s' * (len(urls) != 1)} answer{'s' * (len(urls) == 1)}")
    parts = [f"unreachable: {', '.join(down)}"] if down else []
    if degraded:
        parts.append(f"answering 503 (its PostgreSQL cannot be reached): {', '.join(degraded)}")
    return Check("nodes", False, f"{len(urls) - len(down) - len(degraded)} of {len(urls)} API nodes answer; "
                 + "; ".join(parts))


def _daemon() -> Check:
    sock = paths.socket_path()
    if not sock.exists():
        return Check("daemon", True, f"not running (socket {sock} absent); start it with `troupe up`")
    mode = oct(sock.stat().st_mode & 0o777)
    try:
        import socket

        with socket.socket(socket.AF_UNIX) as conn:
            conn.settimeout(2)
            conn.connect(str(sock))
    except OSError as exc:
        return Check("daemon", False, f"socket {sock} exists but does not answer ({exc.strerror}); "
                     "remove it or run `troupe up`")
    return Check("daemon", mode == "0o600", f"listening on {sock} (mode {mode})")


def _viewer() -> Check:
    """The loopback TCP listener the run viewer is served on, and its token file (must stay 0600)."""
    from daemon.service.pidfile import read_pid_file

    token = paths.troupe_home() / "token"
    token_mode = oct(token.stat().st_mode & 0o777) if token.exists() else None
    if token_mode not in (None, "0o600"):
        return Check("viewer", False, f"{token} is mode {token_mode}; others may read the TCP token: "
                     f"`chmod 600 {token}` (the daemon narrows it at start)")
    info = read_pid_file() if paths.socket_path().exists() else None
    if not info:
        return Check("viewer", True, "the daemon is not running; it serves the run viewer on a loopback port")
    port = info.get("tcp_port")
    if not port:
        return Check("viewer", True, "off: the daemon has no loopback TCP listener (TROUPE_TCP_PORT=off?)")
    return Check("viewer", True, f"http://127.0.0.1:{port}/viewer/ (token {token}, mode 0o600); "
                 "`troupe jobs --open` opens it")


def _model(check_live: bool) -> Check:
    try:
        settings = load_settings(Path.cwd())
    except ConfigError as exc:
        return Check("model", False, str(exc))
    model = settings.model
    if not model.default:
        return _local_model(check_live, model)
    where = f" at {model.api_base}" if model.api_base else ""
    if not check_live:
        return Check("model", True, f"{model.default}{where} (not contacted)")
    from daemon.llm.gateway import check_model

    ok, detail = asyncio.run(check_model(model, timeout=20))
    return Check("model", ok, f"{model.default}{where}: {detail}")


def _local_model(check_live: bool, settings: ModelSettings) -> Check:
    """The local model: which one, on which runtime, its threads, and its speed (measured at its last
    start; measured now when the live check starts it)."""
    from daemon.llm import local

    none = ("no model configured: set TROUPE_MODEL (any litellm model string), optionally TROUPE_API_BASE / "
            "TROUPE_API_KEY")
    try:
        spec = local.choose(settings.local)
    except local.UnknownLocalModel as exc:
        return Check("model", False, str(exc))
    if spec is None:
        return Check("model", False, f"{none}; the local model is off (TROUPE_LOCAL_MODEL=0)")
    if not local.local_model_installed(spec):
        return Check("model", False, f"{none}; or {local.install_hint(spec)}")
    try:
        server = local.server_for(spec, settings)
    except local.LocalModelError as exc:
        return Check("model", False, str(exc))
    path, threads, why = server.model, server.threads, server.threads_reason
    detail = (f"local model {spec.name} ({path}, SHA-256 verified) on {local.RUNTIME} {local.runtime_version()} "
              f"(llama.cpp server), {threads} thread{'s' * (threads != 1)} ({why}), {server.batch_threads} for prompts "
              f"({server.batch_threads_reason})")
    if server.draft:
        detail += f", drafted by {spec.draft} (speculative decoding; TROUPE_LOCAL_DRAFT=0 turns it off)"
    elif spec.draft and settings.draft is None and server.threads < 2:
        detail += (f", not drafted by {spec.draft} (with one generation thread the draft was slower; "
                   "TROUPE_LOCAL_DRAFT=1 forces it)")
    last = local.last_speed(path)
    if last:
        detail += (f"; last measured {last['tokens_per_s']} tokens/s with {last['threads']} threads at "
                   f"{last['measured_at']} (load {last['load']})")
        if last.get("draft_acceptance") is not None:
            detail += f", {last['draft_acceptance']:.0%} of drafted tokens kept"
    if not check_live:
        return Check("model", True, detail + " (not started)")

    async def probe() -> tuple[bool, str]:
        from daemon.llm.gateway import check_model

        try:
            await server.start()
            ok, said = await check_model(server.model_settings(ModelSettings()), timeout=120)
            speed = f"{server.tokens_per_s:.1f} tokens/s" if server.tokens_per_s else "speed not measured"
            return ok, f"{speed} now; {said}"
        except local.LocalModelError as exc:
            return False, str(exc)
        finally:
            await server.stop()

    ok, said = asyncio.run(probe())
    return Check("model", ok, f"{detail}: {said}")


def _sandbox() -> Check:
    """How generated code runs here: the isolation this machine allows, and which Python runs it."""
    from daemon.sandbox import detect_isolation
    from daemon.workspace.interpreter import project_python

    isolation = detect_isolation()
    kept = [name for name, on in (("network", isolation.network_isolated), ("PID", isolation.pid_namespace),
                                  ("read-only files", isolation.confine_writes),
                                  ("own uid", isolation.own_uid), ("user namespace", isolation.user_namespace)) if on]
    detail = ("isolated: " + ", ".join(kept)) if kept else "NOT isolated (resource limits only)"
    if isolation.limitation:
        detail += f" ({isolation.limitation})"
    return Check("sandbox", True, f"{detail}; project code runs on {project_python()}")


def run_doctor(*, json_output: bool = False, check_model: bool = True) -> int:
    checks = [
        Check("home", True, f"TROUPE_HOME={paths.troupe_home()}"
              + (" (from the environment)" if os.environ.get("TROUPE_HOME") else "")),
        _model(check_model),
        _database(),
        *filter(None, [_queue(), _limits(), _nodes()]),
        _daemon(),
        _viewer(),
        _sandbox(),
        _versions(),
    ]
    if json_output:
        print(json.dumps([asdict(c) for c in checks], indent=2))
    else:
        for c in checks:
            print(f"{'ok ' if c.ok else 'FAIL'} {c.name:<10} {c.detail}")
    return 0 if all(c.ok for c in checks) else 1
