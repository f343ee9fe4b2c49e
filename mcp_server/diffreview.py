"""``review`` with ``base`` or ``staged``: what ``troupe review --diff BASE`` / ``--staged`` reviews,
for an agent client. :mod:`daemon.review` decides the scope (the changed files and lines, what is
skipped and why) and keeps only findings on changed lines; the static lane runs here, in-process
(ruff: no model), and the model lane is a review job in the daemon on the changed hunks, followed
with progress like every other tool's job."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import anyio.to_thread
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult

from daemon.api.protocol import JobOptions, SubmitJob
from daemon.client import DaemonError
from daemon.review.gitdiff import DiffError, DiffScope, diff_scope
from daemon.review.scoped import DiffFinding, model_findings, static_review
from mcp_server.jobs import JobRunner, Waiting, tool_result


def finding_line(f: DiffFinding) -> str:
    return f"{f.file}:{f.start_line}: {f.level} ({f.severity}, {f.lane}) {f.message} [{f.rule}]"


async def review_changes(runner: JobRunner, ctx: Context, root: Path, *, base: str | None, staged: bool,
                         paths: list[str], static_only: bool) -> CallToolResult:
    try:
        scope: DiffScope = await anyio.to_thread.run_sync(partial(diff_scope, root, base, staged=staged,
                                                                  paths=paths))
    except DiffError as exc:
        raise ToolError(f"Troupe refused the request: {exc}") from None
    static = await static_review(scope)
    findings, errors, job = list(static.findings), list(static.errors), None
    if not static_only and scope.files:
        submitted = await runner.call(runner.client.submit(SubmitJob(
            kind="review", workspace=str(scope.root), files=[f.path for f in scope.files],
            options=JobOptions(diff=scope.diff))))
        ended = await runner.wait(ctx, submitted)
        job = ended.job if isinstance(ended, Waiting) else ended
        if job.state != "succeeded":
            errors.append(f"the review job {job.id} {job.state}: {job.error or 'no reason given'}")
        else:
            try:
                held = [f for f in await runner.client.findings(job.workspace or str(scope.root))
                        if f.job_id == job.id]
            except DaemonError as exc:
                errors.append(f"the review job's findings could not be read: {exc}")
            else:
                findings += model_findings(scope, held)
    findings.sort(key=lambda f: (f.file, f.start_line, f.start_col or 0, f.rule))
    lanes = "static lane" if static_only else "static and model lanes"
    lines = [finding_line(f) for f in findings] or ["no findings on the changed lines"]
    lines += [f"skipped {s.path}: {s.reason}" for s in scope.skipped]
    lines += [f"incomplete: {e}" for e in errors]
    lines.append(f"{len(scope.files)} changed file(s) reviewed against {scope.base} ({lanes}): "
                 f"{len(findings)} finding(s) on the changed lines")
    return tool_result("\n".join(lines), error=bool(errors), base=scope.base, base_commit=scope.base_commit,
                       files=[{"path": f.path, "status": f.status, "lines": [list(r) for r in f.lines]}
                              for f in scope.files],
                       skipped=[{"path": s.path, "reason": s.reason} for s in scope.skipped],
                       findings=[f.to_json() for f in findings], errors=errors,
                       job=job.to_json() if job is not None else None)
