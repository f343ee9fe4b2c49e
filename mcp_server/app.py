"""Running the MCP server: ``troupe mcp [--workspace DIR]`` (stdio; the client starts it).

Logs go to stderr (stdout carries the protocol). The workspace is ``--workspace``, else the git root
above the folder the client started the server in.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

WORKSPACE_ENV = "TROUPE_WORKSPACE"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="troupe mcp", description=(
        "The Troupe team as an MCP server over stdio, for agent clients (Claude Code, Cursor, VS Code): "
        "tools ask, review, change, apply_change, discard_change, findings, test, job_status, cancel, answer."))
    parser.add_argument("-w", "--workspace", metavar="DIR", default=os.environ.get(WORKSPACE_ENV) or None,
                        help=f"the repository root (default: ${WORKSPACE_ENV}, else the git root above the "
                             "current folder)")
    parser.add_argument("--log-level", default=os.environ.get("TROUPE_MCP_LOG_LEVEL", "WARNING"),
                        help="stderr log level (default WARNING)")
    return parser


def workspace_root(given: str | None) -> Path:
    from daemon.cli.commands import repo_root

    root = Path(os.path.abspath(given)) if given else repo_root()
    if not root.is_dir():
        raise SystemExit(f"troupe mcp: the workspace {root} is not a folder")
    return root


async def serve(root: Path) -> None:
    from daemon.client import DaemonClient
    from mcp_server.server import build_server

    async with DaemonClient() as client:
        await build_server(root, client).run_stdio_async()


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=args.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    root = workspace_root(args.workspace)
    import anyio

    anyio.run(serve, root)
    return 0
