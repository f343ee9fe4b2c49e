"""The MCP server: one small function per tool and resource, each a daemon call and a rendering.

The SDK builds each tool's input schema from its typed arguments and refuses malformed ones before
the function runs. Paths are workspace-relative (an absolute path inside the workspace is taken as
its relative form); the daemon confines them, and its refusal comes back as the tool's error.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable
from pathlib import Path
from typing import Annotated, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp_types import CallToolResult, ToolAnnotations
from pydantic import Field

from daemon.api.protocol import FindingInfo, JobOptions, ProtocolError, SubmitJob
from daemon.client import DaemonClient, DaemonError
from daemon.workspace.paths import PathOutsideWorkspace, normalize_rel
from mcp_server import render
from mcp_server.jobs import JobRunner, tool_result

INSTRUCTIONS = """Troupe is a virtual software team (LLM agents) beside this repository, run by a local daemon.
`ask` answers questions about the code; `review` returns findings on files or a diff; `change` proposes
a diff (nothing is written until `apply_change`); `test` runs the repository's tests and explains
failures. Long jobs report progress; `job_status` and `cancel` manage them, `answer` answers a question
the team asked. Paths are relative to the workspace root."""

Files = Annotated[list[str] | None, Field(description="files to focus on, relative to the workspace root")]
JobId = Annotated[str, Field(min_length=1, max_length=200, description="a job id, as a tool result named it")]
ChangeId = Annotated[str, Field(min_length=1, max_length=200, description="the change id `change` returned")]
Base = Annotated[str | None, Field(
    description="review only the lines changed since BASE (a commit, branch or tag), as `git diff BASE`")]
Staged = Annotated[bool, Field(description="review only the staged lines (the index against HEAD)")]
UnifiedDiff = Annotated[str | None, Field(description="a unified diff (`git diff` output) whose hunks are reviewed")]
StaticOnly = Annotated[bool, Field(description="with base or staged: only the static checks (fast, no model)")]
R = TypeVar("R")
READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
WORKS = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)


def workspace_names(root: Path, names: list[str] | None) -> list[str]:
    """``names`` relative to ``root`` where they are absolute paths inside it; the rest as given (the
    daemon refuses a name that leaves the workspace, saying why)."""
    out = []
    for name in names or []:
        rel = os.path.relpath(os.path.abspath(name), root) if os.path.isabs(name) else name
        out.append(name if rel == ".." or rel.startswith(".." + os.sep) else Path(rel).as_posix())
    return out


def one_file(root: Path, name: str) -> str:
    """A single file named by the client, in its canonical relative form, or a tool error."""
    try:
        return normalize_rel(workspace_names(root, [name])[0])
    except PathOutsideWorkspace as exc:
        raise ToolError(f"Troupe refused the request: {exc}") from None


def build_server(root: Path, client: DaemonClient) -> MCPServer:
    """The server for the workspace at ``root`` (an absolute path), speaking to the daemon through ``client``."""
    server: MCPServer = MCPServer("troupe", title="Troupe", instructions=INSTRUCTIONS, version="0.1.0")
    runner = JobRunner(client)
    workspace = str(root)

    async def held_findings(file: str | None = None, state: str = "open") -> list[FindingInfo]:
        try:
            return await client.findings(workspace, file, state=state)
        except DaemonError as exc:
            if exc.code == "not_found":  # no job has run here yet: the first one registers the workspace
                return []
            raise

    @server.tool(annotations=READ_ONLY)
    async def ask(question: Annotated[str, Field(min_length=1, description="what to ask the team, in words")],
                  ctx: Context, files: Files = None) -> CallToolResult:
        """Ask the team a question about the code; waits for the answer."""
        return await runner.run(ctx, SubmitJob(kind="ask", workspace=workspace, prompt=question,
                                               files=workspace_names(root, files)))

    @server.tool(annotations=READ_ONLY)
    async def review(ctx: Context, files: Files = None, base: Base = None, staged: Staged = False,
                     diff: UnifiedDiff = None, static_only: StaticOnly = False) -> CallToolResult:
        """Review files, the lines changed since a base (or staged), or a unified diff's hunks; returns the
        findings (file, line, severity, message)."""
        if base is not None or staged:
            if diff is not None or (base is not None and staged):
                raise ToolError("Troupe refused the request: give one of base, staged or diff")
            from mcp_server.diffreview import review_changes  # git and ruff: only a diff review needs them

            return await review_changes(runner, ctx, root, base=base, staged=staged,
                                        paths=[one_file(root, name) for name in files or []], static_only=static_only)
        return await runner.run(ctx, SubmitJob(kind="review", workspace=workspace, files=workspace_names(root, files),
                                               options=JobOptions(diff=diff or None)))

    @server.tool(annotations=WORKS)
    async def change(request: Annotated[str, Field(min_length=1, description="the change to make, in words")],
                     ctx: Context, files: Files = None) -> CallToolResult:
        """Have the team write a change; returns the proposed diff and its change id. Nothing is written
        to the files until `apply_change`."""
        return await runner.run(ctx, SubmitJob(kind="change", workspace=workspace, prompt=request,
                                               files=workspace_names(root, files)))

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False))
    async def apply_change(change_id: ChangeId) -> CallToolResult:
        """Write a proposed change to the files (refused when they changed since it was proposed)."""
        applied = await runner.call(client.apply_change(change_id))
        return tool_result(f"Applied change {applied.id} to {', '.join(applied.files) or 'no files'}.",
                           change=applied.to_json())

    @server.tool(annotations=WORKS)
    async def discard_change(change_id: ChangeId) -> CallToolResult:
        """Discard a proposed change (the files are left as they are)."""
        discarded = await runner.call(client.discard_change(change_id))
        return tool_result(f"Discarded change {discarded.id}.", change=discarded.to_json())

    @server.tool(annotations=READ_ONLY)
    async def findings(file: Annotated[str | None, Field(description="only this file (relative path)")] = None,
                       include_closed: Annotated[bool, Field(
                           description="also dismissed, resolved and applied findings")] = False) -> CallToolResult:
        """The review findings the team holds on the workspace (or one file): open ones unless asked."""
        rel = one_file(root, file) if file else None
        found = await runner.call(held_findings(rel, state="all" if include_closed else "open"))
        return tool_result(render.findings_text(found), findings=[f.to_json() for f in found])

    @server.tool(annotations=WORKS)
    async def test(ctx: Context, files: Files = None) -> CallToolResult:
        """Run the repository's tests (those related to `files`, else all), explain failures, propose fixes."""
        return await runner.run(ctx, SubmitJob(kind="test", workspace=workspace, files=workspace_names(root, files)))

    @server.tool(annotations=READ_ONLY)
    async def job_status(job_id: JobId, ctx: Context, wait: Annotated[bool, Field(
            description="wait for the job to finish (or to ask a question), with progress")] = False,
                         ) -> CallToolResult:
        """Where a job stands; with wait, follow it to its outcome."""
        job = await runner.call(client.job(job_id))
        return await (runner.follow(ctx, job) if wait else runner.outcome(job))

    @server.tool(annotations=WORKS)
    async def cancel(job_id: JobId) -> CallToolResult:
        """Cancel a queued or running job."""
        job = await runner.call(client.cancel(job_id))
        return tool_result(f"{job.kind} job {job.id} {job.state}.", job=job.to_json())

    @server.tool(annotations=WORKS)
    async def answer(job_id: JobId, text: Annotated[str, Field(min_length=1, description="the answer")],
                     ctx: Context, question_id: Annotated[str | None, Field(
                         description="the question answered (default: the one the job waits on)")] = None,
                     wait: Annotated[bool, Field(description="then wait for the job's outcome")] = True,
                     ) -> CallToolResult:
        """Answer the question a waiting job asked; then (by default) wait for its outcome."""
        job = await runner.call(client.answer(job_id, text, question_id))
        return await (runner.follow(ctx, job) if wait else runner.outcome(job))

    @server.resource("troupe://findings", name="findings", mime_type="text/plain",
                     description="The open review findings of the workspace, per file")
    async def all_findings() -> str:
        found = await _resource(held_findings())
        by_file: dict[str, list[str]] = {}
        for f in found:
            by_file.setdefault(f.file, []).append(render.finding_line(f))
        return "\n\n".join(f"## {name}\n" + "\n".join(lines) for name, lines in sorted(by_file.items())) or \
            "no open findings\n"

    @server.resource("troupe://findings/{+path}", name="file-findings", mime_type="text/plain",
                     description="The open review findings of one file (a workspace-relative path)")
    async def file_findings(path: str) -> str:
        try:
            rel = normalize_rel(path)
        except PathOutsideWorkspace as exc:
            raise ResourceError(str(exc)) from None
        return render.findings_text(await _resource(held_findings(rel))) + "\n"

    @server.resource("troupe://jobs/{job_id}/transcript", name="job-transcript", mime_type="text/markdown",
                     description="What happened in a job: phases, who said what to whom, tools run, findings")
    async def job_transcript(job_id: str) -> str:
        job = await _resource(client.job(job_id))
        events = await _resource(client.event_list(job.id))
        return render.transcript(job, events.events)

    return server


async def _resource(what: Awaitable[R]) -> R:
    try:
        return await what
    except (DaemonError, ProtocolError) as exc:
        raise ResourceError(f"Troupe: {exc}") from None
