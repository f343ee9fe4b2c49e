"""``python -m slack_bot [--http --port N] [--host H]``: what ``troupe slack`` runs."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("--http", action="store_true",
                        help="serve the Events API at /slack/events (needs SLACK_SIGNING_SECRET) "
                             "instead of Socket Mode (SLACK_APP_TOKEN)")
    parser.add_argument("--port", type=int, default=3000, help="HTTP mode: the port (default 3000; 0 picks one)")
    parser.add_argument("--host", default="127.0.0.1",
                        help="HTTP mode: the address to listen on (default 127.0.0.1; put a TLS proxy in front)")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    return parser


def run(args: argparse.Namespace) -> int:
    """Entry point for ``troupe slack`` (the CLI passes its parsed arguments here)."""
    from daemon.client import DaemonError
    from slack_bot.app import serve
    from slack_bot.config import SlackConfigError, load_config

    logging.basicConfig(level=logging.DEBUG if getattr(args, "verbose", False) else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        config = load_config()
        return asyncio.run(serve(config, http=args.http, host=args.host, port=args.port,
                                 ready=lambda where: print(f"SLACK_BOT_READY={where}", flush=True)))
    except SlackConfigError as exc:
        print(f"troupe slack: {exc}", file=sys.stderr)
        return 2
    except DaemonError as exc:
        print(f"troupe slack: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def main(argv: list[str] | None = None) -> int:
    parser = add_arguments(argparse.ArgumentParser(prog="troupe slack", description="Run the Troupe Slack bot."))
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
