"""``troupe ask`` / ``review`` / ``test``: submit a job, follow it live, show what it produced."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from daemon.api.protocol import ChangeInfo, JobInfo, SubmitJob
from daemon.cli.render import Progress, money
from daemon.cli.viewer_link import print_viewer_link
from daemon.client import DaemonClient, DaemonError
from daemon.payloads import QuestionData


async def _ask_person(progress: Progress, client: DaemonClient, job_id: str, question: QuestionData) -> None:
    progress.say(f"\n? the team asks: {question.text}")
    if not sys.stdin.isatty():
        progress.say(f"  answer with: troupe answer {job_id} \"…\"")
        return
    loop = asyncio.get_running_loop()
    progress.paused = True
    try:
        reply = await loop.run_in_executor(None, lambda: input("  your answer> "))
    finally:
        progress.paused = False
    if reply.strip():
        await client.answer(job_id, reply, question.question_id or None)


async def follow_job(client: DaemonClient, job: JobInfo, *, quiet: bool) -> JobInfo:
    """Stream the job's events until it finishes; Ctrl-C cancels it."""
    progress = Progress(live=None if not quiet else False)
    try:
        async with progress:
            async for event in client.events(job.id):
                if quiet:
                    continue
                progress.update(event)
                body = event.payload
                if isinstance(body, QuestionData) and body.for_person:
                    await _ask_person(progress, client, job.id, body)
    except (KeyboardInterrupt, asyncio.CancelledError):
        progress.say(f"\ninterrupted: cancelling job {job.id[:8]}")
        await client.cancel(job.id)
        raise
    return await client.job(job.id)


def print_outcome(job: JobInfo, change: ChangeInfo | None, *, applied: ChangeInfo | None = None) -> None:
    result = job.outcome
    if result.reply:
        print(result.reply)
    if result.test_report is not None and result.test_report.summary():
        print(f"\ntests: {result.test_report.summary()}")
    if change is not None:
        print(f"\nproposed change {change.id} ({', '.join(change.files) or 'no files'}):\n")
        print(change.diff)
        if applied is None:
            print(f"apply it with: troupe apply {change.id}   (or discard: troupe discard {change.id})")
    if applied is not None:
        print(f"applied: {', '.join(applied.files)}")
    usage = job.usage
    tail = (f"{usage.total_tokens:,} tokens{usage.cached_note}, {money(usage.cost)}" if usage.total_tokens
            else "no model calls")
    line = f"\n{job.kind} job {job.id[:8]} {job.state} ({tail})"
    if job.error:
        line += f": {job.error}"
    print(line, file=sys.stderr if job.state != "succeeded" else sys.stdout)


async def submit_and_follow(client: DaemonClient, request: SubmitJob, args: argparse.Namespace) -> int:
    job = await client.submit(request)
    if getattr(args, "no_wait", False):
        print(json.dumps(job.to_json()) if args.json else job.id)
        return 0
    if not args.json:
        print(f"{request.kind} job {job.id[:8]} queued", file=sys.stderr)
        await print_viewer_link(client, job.id)
    try:
        job = await follow_job(client, job, quiet=args.json)
    except KeyboardInterrupt:
        print(f"\ncancelled job {job.id[:8]}", file=sys.stderr)
        return 130
    change_id = job.outcome.change_id
    change = await client.change(change_id) if change_id else None
    applied = None
    if change is not None and getattr(args, "apply", False) and job.state == "succeeded":
        try:
            applied = await client.apply_change(change.id)
        except DaemonError as exc:
            print(f"troupe: the change was not applied: {exc}", file=sys.stderr)
            return 1
    if request.kind in ("review", "test") and job.workspace:
        findings = [f for f in await client.findings(job.workspace) if f.job_id == job.id]
    else:
        findings = []
    if args.json:
        print(json.dumps({"job": job.to_json(), "change": change.to_json() if change else None,
                          "applied": applied is not None, "findings": [f.to_json() for f in findings]}, indent=2))
    else:
        if request.kind == "review" and not findings and job.state == "succeeded":
            print("no findings")  # the ones found were printed as they streamed
        print_outcome(job, change, applied=applied)
    return 0 if job.state == "succeeded" else 1
