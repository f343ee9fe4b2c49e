"""Custom requests for richer clients (the VS Code extension's chat and status views).

``troupe/jobs`` lists jobs, ``troupe/experience`` searches what the team has learnt (the
daemon's ``SearchResults``), ``troupe/getStatus`` answers with the same payload as the
``troupe/status`` notification, ``troupe/debug`` tells what this process has loaded (tests use
it to check that the server stays light). Their records are declared in :mod:`lsp.messages`;
see lsp/README.md for every custom message.
"""

from __future__ import annotations

import os
import sys

from daemon.api.protocol import JobList, SearchResults
from daemon.client import DaemonError
from lsp.messages import DebugInfo, Empty, ExperienceQuery, JobsQuery, ServerStatus
from lsp.rpc import daemon_failed, request
from lsp.server import TroupeServer

ENGINE_MODULES = ("litellm", "daemon.agents", "daemon.llm")  # the language server must never load these


def register(server: TroupeServer) -> None:
    @request(server, "troupe/jobs")
    async def jobs(ls: TroupeServer, query: JobsQuery) -> JobList:
        try:
            found = await ls.link.call(lambda c: c.jobs(state=query.state, workspace=query.workspace,
                                                        limit=query.limit))
        except DaemonError as exc:
            raise daemon_failed(exc) from None
        return JobList(jobs=found)

    @request(server, "troupe/experience")
    async def experience(ls: TroupeServer, query: ExperienceQuery) -> SearchResults:
        try:
            return await ls.link.call(lambda c: c.search(query.query, limit=query.limit))
        except DaemonError as exc:
            raise daemon_failed(exc) from None

    @request(server, "troupe/getStatus")
    async def get_status(ls: TroupeServer, _: Empty) -> ServerStatus:
        return ls.status()

    @request(server, "troupe/debug")
    async def debug(ls: TroupeServer, _: Empty) -> DebugInfo:
        engine = sorted(m for m in sys.modules if m.split(".")[0] == "litellm" or m.startswith(ENGINE_MODULES[1:]))
        return DebugInfo(pid=os.getpid(), engine_modules=engine, modules=len(sys.modules),
                         documents=sorted(ls.documents), folders=ls.folders, followed_jobs=sorted(ls.jobs.tasks))
