"""``troupe review --diff BASE`` / ``--staged``: review what changed, as text, JSON or SARIF 2.1.0.

The static lane (ruff on the text under review) runs in this process: no daemon, no model, a
fraction of a second, which is what a pre-commit hook wants (``--static``, the default).
``--model`` adds the reviewer: a review job in the daemon (started if none runs)
with the hunks as ``options.diff``. What is under review and which findings count (only those on
added or changed lines) is decided in :mod:`daemon.review`; this module renders.

Exit status: 0 when no finding reaches ``--fail-on`` (default ``error``), 1 when one does, 2 when
the review could not run (not a git repository, an unknown BASE, ruff or the daemon failing).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path

from daemon.json_types import JsonDict
from daemon.review.gitdiff import DiffError, DiffScope, diff_scope, repository_root
from daemon.review.scoped import DiffFinding, at_or_above, static_review

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
FORMATS = ("text", "json", "sarif")
FAIL_ON = ("error", "warning", "note", "never")
VERSION = "0.1.0"


class ReviewIncomplete(Exception):
    """The model lane could not finish (the daemon unreachable, the job failed or was cancelled)."""


def add_diff_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("reviewing a diff (CI, pre-commit)")
    g.add_argument("--diff", metavar="BASE", help="review only the lines changed since BASE (a commit, branch or "
                   "tag), the working tree against it; FILEs, if given, narrow it to those files")
    g.add_argument("--staged", action="store_true", help="review only the staged lines (the index against HEAD)")
    g.add_argument("--format", choices=FORMATS, default="text", help="text (default), json, or sarif (SARIF 2.1.0)")
    g.add_argument("--fail-on", choices=FAIL_ON, default="error", metavar="LEVEL",
                   help="exit 1 when a finding at or above LEVEL exists: error (default; critical and major "
                        "findings), warning (also minor), note (any), never")
    lane = g.add_mutually_exclusive_group()
    lane.add_argument("--static", dest="lane", action="store_const", const="static",
                      help="static checks only: no daemon, no model (the default)")
    lane.add_argument("--model", dest="lane", action="store_const", const="model",
                      help="static checks and the team's reviewer (a review job in the daemon, started if none runs)")


def _relative(root: Path, names: list[str]) -> list[str]:
    real_root = os.path.realpath(root)
    out = []
    for name in names:
        rel = os.path.relpath(os.path.realpath(os.path.abspath(name)), real_root)
        if rel == ".." or rel.startswith(".." + os.sep):
            raise DiffError(f"{name} is outside the repository {root}")
        out.append(Path(rel).as_posix())
    return out


async def _model_lane(scope: DiffScope) -> tuple[list[DiffFinding], str]:
    from daemon.cli.follow import follow_job
    from daemon.client import DaemonClient, DaemonError
    from daemon.messages import JobOptions, SubmitJob
    from daemon.review.scoped import model_findings
    from daemon.schema import ProtocolError

    request = SubmitJob(kind="review", workspace=str(scope.root), files=[f.path for f in scope.files],
                        options=JobOptions(diff=scope.diff))
    try:
        request.validate()
        async with DaemonClient(autostart=None, retries=5) as client:
            job = await client.submit(request)
            print(f"review job {job.id[:8]} queued (the model lane)", file=sys.stderr)
            job = await follow_job(client, job, quiet=True)
            if job.state != "succeeded":
                raise ReviewIncomplete(f"the review job {job.id[:8]} {job.state}: {job.error or 'no reason given'}")
            found = [f for f in await client.findings(job.workspace or str(scope.root)) if f.job_id == job.id]
    except (DaemonError, ProtocolError) as exc:
        raise ReviewIncomplete(f"the model lane could not run: {exc}") from None
    return model_findings(scope, found), job.id


def _text_line(f: DiffFinding) -> str:
    from daemon.cli.render import SEVERITY_MARK

    where = f"{f.file}:{f.start_line}" + (f":{f.start_col}" if f.start_col else "")
    return f"{SEVERITY_MARK.get(f.severity, '?')} {where:<28} {f.level:<7} {f.message} [{f.rule}]"


def _render(fmt: str, scope: DiffScope, findings: list[DiffFinding], *, lane: str, errors: list[str],
            notes: list[str], job_id: str | None) -> str:
    if fmt == "sarif":
        from daemon.cli.sarif import sarif_log

        return json.dumps(sarif_log(scope, findings, version=VERSION, errors=errors, notes=notes), indent=2)
    if fmt == "json":
        data: JsonDict = {
            "base": scope.base, "base_commit": scope.base_commit, "lane": lane, "job_id": job_id,
            "files": [{"path": f.path, "status": f.status, "old_path": f.old_path, "lines": [list(r) for r in f.lines]}
                      for f in scope.files],
            "skipped": [{"path": s.path, "reason": s.reason} for s in scope.skipped],
            "findings": [f.to_json() for f in findings], "errors": errors, "notes": notes}
        return json.dumps(data, indent=2)
    return "\n".join(_text_line(f) for f in findings) or "no findings on the changed lines"


def run_review_diff(args: argparse.Namespace) -> int:
    fmt = "json" if getattr(args, "json", False) else args.format
    lane = args.lane or "static"
    try:
        start = Path(os.path.abspath(args.workspace or os.getcwd()))
        paths = _relative(repository_root(start), args.files) if args.files else []
        scope = diff_scope(start, args.diff, staged=args.staged, paths=paths)
    except DiffError as exc:
        print(f"troupe: {exc}", file=sys.stderr)
        return EXIT_ERROR
    for skipped in scope.skipped:
        print(f"· skipped {skipped.path}: {skipped.reason}", file=sys.stderr)
    notes = []
    if lane == "model" and scope.unstaged:
        notes.append(f"unstaged changes in {', '.join(scope.unstaged)}: the model reviewed the working tree's "
                     "version, the static checks the staged one")
    static = asyncio.run(static_review(scope))
    findings, errors, job_id = list(static.findings), list(static.errors), None
    if lane == "model" and scope.files:
        try:
            model, job_id = asyncio.run(_model_lane(scope))
            findings = sorted(findings + model, key=lambda f: (f.file, f.start_line, f.start_col or 0, f.rule))
        except ReviewIncomplete as exc:
            errors.append(str(exc))
        except KeyboardInterrupt:
            return 130
    for note in notes:
        print(f"· {note}", file=sys.stderr)
    print(_render(fmt, scope, findings, lane=lane, errors=errors, notes=notes, job_id=job_id))
    for error in errors:
        print(f"troupe: {error}", file=sys.stderr)
    worst = [f for f in findings if at_or_above(f.level, args.fail_on)]
    print(f"{len(scope.files)} changed file(s) reviewed against {scope.base} ({lane} lane): {len(findings)} "
          f"finding(s) on the changed lines, {len(worst)} at or above --fail-on {args.fail_on}", file=sys.stderr)
    if errors:
        return EXIT_ERROR
    return EXIT_FINDINGS if worst else EXIT_CLEAN
