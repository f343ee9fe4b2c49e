"""Custom requests for richer clients (the VS Code extension's chat and status views).

``troupe/jobs`` lists jobs, ``troupe/experience`` searches what the team has learnt (the
daemon's ``SearchResults``), ``troupe/getStatus`` answers with the same payload as the
``troupe/status`` notification, ``troupe/debug`` tells what this process has loaded (tests use
it to check that the server stays light). See lsp/README.md for every custom message.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from daemon.client import DaemonError
from lsp.arguments import ExperienceQuery, JobsQuery
from lsp.rpc import daemon_failed, parse
from lsp.server import TroupeServer

ENGINE_MODULES = ("litellm", "daemon.agents", "daemon.llm")  # the language server must never load these


def register(server: TroupeServer) -> None:
    @server.feature("troupe/jobs")
    async def jobs(ls: TroupeServer, params: Any) -> dict[str, Any]:
        query = parse(JobsQuery, params if params is not None else {}, "troupe/jobs")
        try:
            found = await ls.link.call(lambda c: c.jobs(state=query.state, workspace=query.workspace,
                                                        limit=query.limit))
        except DaemonError as exc:
            raise daemon_failed(exc) from None
        return {"jobs": [job.to_json() for job in found]}

    @server.feature("troupe/experience")
    async def experience(ls: TroupeServer, params: Any) -> dict[str, Any]:
        query = parse(ExperienceQuery, params if params is not None else {}, "troupe/experience")
        try:
            found = await ls.link.call(lambda c: c.search(query.query, limit=query.limit))
        except DaemonError as exc:
            raise daemon_failed(exc) from None
        return found.to_json()

    @server.feature("troupe/getStatus")
    def get_status(ls: TroupeServer, params: Any) -> dict[str, Any]:
        return ls.status()

    @server.feature("troupe/debug")
    def debug(ls: TroupeServer, params: Any) -> dict[str, Any]:
        engine = sorted(m for m in sys.modules if m.split(".")[0] == "litellm" or m.startswith(ENGINE_MODULES[1:]))
        return {"pid": os.getpid(), "engineModules": engine, "modules": len(sys.modules),
                "documents": sorted(ls.documents), "folders": ls.folders, "followedJobs": sorted(ls.jobs.tasks)}
