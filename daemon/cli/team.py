"""``troupe server`` (an API node of a team server), its admin commands, and ``troupe worker``."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from daemon.team_server.config import TeamConfig


def add_team_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("server", help="a team server's API node on TCP, for many people (PostgreSQL, "
                                      "jobs run by `troupe worker`)")
    p.add_argument("--config", metavar="FILE", help="the team config (default: TROUPE_TEAM_CONFIG)")
    p.add_argument("--host", help="listen on this address (default: [server] host)")
    p.add_argument("--port", type=int, help="listen on this port (default: [server] port; 0: any free one)")
    admin = p.add_subparsers(dest="server_command", metavar="ADMIN")
    q = admin.add_parser("add-person", help="add a person (or give them a new token); prints their token once")
    q.add_argument("name")
    q.add_argument("--slack", metavar="USER_ID", help="their Slack user id (U…), so the bot acts as them")
    q.add_argument("--bot", action="store_true", default=None,
                   help="a bot's token (the Slack bot's): it may act for the Slack users mapped to people")
    q = admin.add_parser("set-person", help="change a person's Slack user id or bot mark; their token stays")
    q.add_argument("name")
    q.add_argument("--slack", metavar="USER_ID", help="their Slack user id ('' to unmap it)")
    q.add_argument("--bot", action=argparse.BooleanOptionalAction, default=None, help="mark (or unmark) a bot")
    q = admin.add_parser("remove-person", help="remove a person; their token stops working")
    q.add_argument("name")
    admin.add_parser("people", help="list the people: name, Slack user, bot (never their tokens)")
    q = admin.add_parser("audit", help="who submitted, applied, discarded or cancelled what, who added or "
                                       "removed a person, who hit a limit (newest first; never a token)")
    q.add_argument("--person", help="only this person's entries")
    q.add_argument("--action", help="only this action (submit, apply, discard, cancel, add-person, "
                                    "remove-person, limited)")
    q.add_argument("-n", "--limit", type=int, default=50, help="at most this many entries (default 50)")

    p = sub.add_parser("worker", help="run a team server's jobs (on any machine that reaches its PostgreSQL)")
    p.add_argument("--config", metavar="FILE", help="the team config (default: TROUPE_TEAM_CONFIG)")
    p.add_argument("--concurrency", type=int, help="jobs at once (default: [worker] concurrency)")
    p.add_argument("--name", help="this worker's name in logs and events (default: host-pid)")


def _logging() -> None:
    from daemon.redact import install_log_redaction, register_environment_secrets

    register_environment_secrets()
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    install_log_redaction(logging.getLogger())
    for noisy in ("aiohttp.access", "LiteLLM", "litellm", "httpx", "procrastinate"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def _secrets(*urls: str) -> None:
    """The databases' passwords never reach a log line or an error we print."""
    from urllib.parse import urlsplit

    from daemon.redact import register_secret

    for url in urls:
        if url:
            register_secret(urlsplit(url).password)


def run_team(args: argparse.Namespace) -> int:
    from daemon.config import ConfigError
    from daemon.team_server.config import load_team_config

    try:
        config = load_team_config(args.config)
        _secrets(config.store_url, config.queue_url_setting)
        if args.command == "worker":
            if args.concurrency:
                config.concurrency = args.concurrency
            _logging()
            return asyncio.run(_worker(config, args.name))
        if args.server_command in ADMIN:
            return asyncio.run(_admin(config, args))
        config.host = args.host or config.host
        config.port = config.port if args.port is None else args.port
        _logging()
        return asyncio.run(_server(config))
    except ConfigError as exc:
        print(f"troupe: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # the database refused or is unreachable: say so in a line, no traceback
        import psycopg
        from procrastinate.exceptions import ConnectorException

        from daemon.redact import redact
        from storage.errors import StoreError

        if isinstance(exc, StoreError):  # its message names the database, never the password
            print(f"troupe: {exc}", file=sys.stderr)
            return 1
        if not isinstance(exc, psycopg.Error | ConnectorException | OSError):
            raise
        print(f"troupe: cannot reach the team's PostgreSQL: {redact(str(exc)).strip()}", file=sys.stderr)
        return 1


ADMIN = ("add-person", "set-person", "remove-person", "people", "audit")


def _admin_name() -> str:
    """Who ran an admin command, for the audit log: the login on the machine it ran on."""
    import getpass
    import socket

    try:
        return f"admin {getpass.getuser()}@{socket.gethostname()}"
    except (KeyError, OSError):
        return "admin"


async def _admin(config: TeamConfig, args: argparse.Namespace) -> int:
    """The people commands, on the team's store (the token is printed once; the store keeps its SHA-256)."""
    from daemon.team_server.people import People
    from storage import AsyncStore

    async with await AsyncStore.open(config.store_url) as store:
        people = People(store)
        try:
            if args.server_command == "add-person":
                token = await people.add(args.name, slack_user=args.slack, bot=args.bot)
                await store.record_audit(_admin_name(), "add-person", args.name,
                                         "a bot" if args.bot else f"Slack user {args.slack}" if args.slack else "")
                print(token)
                print(f"(the token of {args.name}: shown only now; they set TROUPE_TOKEN to it)", file=sys.stderr)
                return 0
            if args.server_command == "audit":
                import time

                for entry in reversed(await store.list_audit(limit=args.limit, actor=args.person,
                                                             action=args.action)):
                    at = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(entry.at))
                    who = f"{entry.actor} (via {entry.via})" if entry.via else entry.actor
                    print(f"{at}\t{who}\t{entry.action}\t{entry.target or '-'}\t{entry.detail or '-'}")
                return 0
            if args.server_command == "people":
                for found in await store.list_people():
                    print(f"{found.name}\t{found.slack_user or '-'}\t{'bot' if found.bot else 'person'}")
                return 0
            if args.server_command == "set-person":
                changes = {k: v for k, v in (("slack_user", args.slack), ("bot", args.bot)) if v is not None}
                if not changes:
                    print("troupe: say what to change: --slack USER_ID, --bot or --no-bot", file=sys.stderr)
                    return 2
                done = await store.update_person(args.name, **changes) is not None
            else:
                done = await people.remove(args.name)
                if done:
                    await store.record_audit(_admin_name(), "remove-person", args.name)
        except ValueError as exc:  # e.g. that Slack user is already someone else's
            print(f"troupe: {exc}", file=sys.stderr)
            return 2
    if not done:
        print(f"troupe: no person named {args.name!r}; `troupe server people` lists them", file=sys.stderr)
        return 1
    return 0


async def _server(config: TeamConfig) -> int:
    from daemon.service.team import TeamServer

    server = TeamServer(config)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, server.request_stop)

    def ready(node: TeamServer) -> None:
        print(f"TROUPE_SERVER_URL=http://{config.host}:{node.port}", flush=True)
        logging.getLogger("troupe.server").info("troupe server listening on %s:%s", config.host, node.port)

    await server.serve(ready)
    return 0


async def _worker(config: TeamConfig, name: str | None) -> int:
    from daemon.service.worker import TeamWorker

    await TeamWorker(config, name=name).run()
    return 0
