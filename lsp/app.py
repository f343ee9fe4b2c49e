"""Building and running the language server: ``python -m lsp [--tcp --host H --port N]``.

``troupe lsp`` calls :func:`main` with its own arguments. Logs go to stderr (stdout carries the
protocol); pygls' own chatter is kept at WARNING.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

from daemon.client import DaemonClient
from lsp.features import actions, commands, custom, documents, workspace
from lsp.protocol import quiet_answered_messages
from lsp.server import TroupeServer


def build_server(client: DaemonClient | None = None) -> TroupeServer:
    """A server with every feature registered."""
    server = TroupeServer(client)
    for feature in (workspace, documents, actions, commands, custom):
        feature.register(server)
    return server


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="troupe lsp", description="The Troupe language server (stdio by default).")
    parser.add_argument("--stdio", action="store_true", help="serve over stdio (the default; editors pass it)")
    parser.add_argument("--tcp", action="store_true", help="serve one client over TCP instead of stdio (debugging)")
    parser.add_argument("--host", default="127.0.0.1", help="TCP host (default 127.0.0.1; keep it loopback)")
    parser.add_argument("--port", type=int, default=2087, help="TCP port (default 2087)")
    parser.add_argument("--log-level", default=os.environ.get("TROUPE_LSP_LOG_LEVEL", "WARNING"),
                        help="stderr log level for the server (default WARNING)")
    return parser


def setup_logging(level: str) -> None:
    logging.basicConfig(stream=sys.stderr, level=level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("pygls").setLevel(logging.WARNING)  # pygls logs every message it sends at INFO
    quiet_answered_messages()


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    setup_logging(args.log_level)
    server = build_server()
    if args.tcp:
        server.start_tcp(args.host, args.port)
    else:
        server.start_io()
    return 0
