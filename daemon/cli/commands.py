"""The ``troupe`` sub-commands that talk to the daemon, each a few lines over :mod:`daemon.client`."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from daemon.api.protocol import JobOptions, Message, ProtocolError, SubmitJob
from daemon.cli.experience import cmd_experience
from daemon.cli.follow import submit_and_follow
from daemon.cli.render import finding_line, job_line
from daemon.client import DaemonClient, DaemonError
from daemon.job_options import TEAM_OPTIONS
from daemon.json_types import JsonDict
from daemon.payloads import ConnectionData, FindingData, JobStateData, WatchData


def repo_root(start: str | os.PathLike[str] | None = None) -> Path:
    """The git root above ``start`` (default: the current folder), or ``start`` itself. The walk is
    lexical: a symlink on the way is not followed out of the repository it sits in."""
    here = Path(os.path.abspath(start or Path.cwd()))
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return folder
    return here


def workspace_of(args: argparse.Namespace, files: list[str] | None = None) -> tuple[str, list[str]]:
    """(workspace root, the files relative to it, as named). Names are taken as typed, never through
    their symlinks: the daemon resolves and confines them (a link leading out of the workspace is
    refused there, with the reason); a name outside the workspace is an error here."""
    root = Path(os.path.abspath(args.workspace)) if getattr(args, "workspace", None) else repo_root(
        os.path.dirname(os.path.abspath(files[0])) if files else None)
    relative = []
    for name in files or []:
        rel = os.path.relpath(os.path.abspath(name), root)
        if rel == ".." or rel.startswith(".." + os.sep):
            raise SystemExit(f"troupe: {name} is outside the workspace {root}; pass --workspace")
        relative.append(Path(rel).as_posix())
    return str(root), relative


def emit(args: argparse.Namespace, value: Message | Sequence[Message] | JsonDict, text: str) -> None:
    if getattr(args, "json", False):
        data = value.to_json() if isinstance(value, Message) else (
            value if isinstance(value, dict) else [v.to_json() for v in value])
        print(json.dumps(data, indent=2))
    elif text:
        print(text)


async def cmd_status(client: DaemonClient, args: argparse.Namespace) -> int:
    try:
        health = await client.health()
    except DaemonError as exc:
        emit(args, {"running": False, "error": str(exc)}, f"not running ({exc})")
        return 3
    workspaces = health.watch.get("workspaces", {})
    lines = [f"running: pid {health.pid}, up {health.uptime_s:.0f}s, api v{health.api_version}, "
             f"executor {health.executor}, home {health.home}",
             "jobs: " + ", ".join(f"{n} {state}" for state, n in health.jobs.items())]
    lines += [f"watching {root} ({w['mode']}{': ' + w['note'] if w.get('note') else ''})"
              for root, w in workspaces.items()] or ["watching nothing (`troupe watch PATH`)"]
    lines.append(f"run viewer: {health.viewer} (`troupe jobs --open [ID]` opens it)" if health.viewer
                 else "run viewer: off (no loopback TCP listener; TROUPE_TCP_PORT=off?)")
    emit(args, health, "\n".join(lines))
    return 0


async def cmd_jobs(client: DaemonClient, args: argparse.Namespace) -> int:
    if args.open is not None:
        from daemon.cli.viewer_link import open_viewer

        return await open_viewer(client, args.open or None)
    jobs = await client.jobs(state=args.state, limit=args.limit)
    emit(args, jobs, "\n".join(job_line(j) for j in jobs) or "no jobs yet")
    return 0


async def cmd_findings(client: DaemonClient, args: argparse.Namespace) -> int:
    root, files = workspace_of(args, [args.file] if args.file else None)
    found = await client.findings(root, files[0] if files else None, state="all" if args.all else "open")
    emit(args, found, "\n".join(finding_line(f) for f in found) or "no open findings")
    return 0


async def still_registered(client: DaemonClient, root: str) -> None:
    """After a restart the daemon watches its registered workspaces again by itself; register ``root``
    only when the daemon no longer knows it (a new store), never over a `troupe watch --stop`."""
    try:
        if all(ws.root != root for ws in await client.workspaces()):
            await client.register_workspace(root)
    except DaemonError as exc:
        if exc.status:  # unreachable again: the stream reports it and this runs at the next "back"
            raise


async def cmd_watch(client: DaemonClient, args: argparse.Namespace) -> int:
    root = str(Path(args.path).resolve())
    if args.stop:
        for ws in await client.workspaces():
            if ws.root == root:
                emit(args, await client.unregister_workspace(ws.id), f"stopped watching {root}")
                return 0
        print(f"troupe: {root} is not a registered workspace", file=sys.stderr)
        return 1
    ws = await client.register_workspace(root)
    if args.no_follow:
        emit(args, ws, f"watching {ws.root} ({ws.watch_mode})")
        return 0
    if not args.json:
        print(f"watching {ws.root} ({ws.watch_mode}); findings appear as you save. Ctrl-C stops following "
              f"(the daemon keeps watching; `troupe watch --stop {args.path}` stops it)", file=sys.stderr)
    shown: dict[object, str] = {}  # a finding re-sent unchanged (stored, then streamed again) prints once
    async for event in client.watch_events(ws.root, patient=True):  # waits out a daemon restart
        body = event.payload
        if isinstance(body, ConnectionData) and body.state == "back":
            await still_registered(client, ws.root)
        if args.json:
            print(json.dumps(event.to_json()), flush=True)
        elif isinstance(body, ConnectionData):
            if body.state == "lost":
                print(f"· daemon unreachable ({body.error}); waiting for it to come back — "
                      "Ctrl-C stops", file=sys.stderr, flush=True)
            else:
                print("· daemon is back; following again", file=sys.stderr, flush=True)
        elif isinstance(body, FindingData):
            line = finding_line(body)
            key = body.id or line
            if shown.get(key) != line:
                shown[key] = line
                print(line, flush=True)
        elif isinstance(body, WatchData):
            print(f"· {body.action}: {', '.join(body.files[:5])} {body.reason or ''}".rstrip(), flush=True)
        elif isinstance(body, JobStateData) and body.state == "failed":
            print(f"! job {str(event.job_id)[:8]} failed: {body.error}", flush=True)
    return 0


async def cmd_change(client: DaemonClient, args: argparse.Namespace) -> int:
    if args.command == "apply":
        change = await client.apply_change(args.change_id)
        emit(args, change, f"applied {change.id}: {', '.join(change.files)}")
    else:
        change = await client.discard_change(args.change_id)
        emit(args, change, f"discarded {change.id}")
    return 0


async def cmd_answer(client: DaemonClient, args: argparse.Namespace) -> int:
    job = await client.answer(args.job_id, args.text, args.question)
    emit(args, job, f"answered; job {job.id[:8]} is {job.state}")
    return 0


async def cmd_cancel(client: DaemonClient, args: argparse.Namespace) -> int:
    job = await client.cancel(args.job_id)
    emit(args, job, f"job {job.id[:8]} {job.state}")
    return 0


async def cmd_submit(client: DaemonClient, args: argparse.Namespace) -> int:
    if args.command == "ask":
        root, files = workspace_of(args, args.file)
        scale = JobOptions(**{key: getattr(args, key, None) for key in TEAM_OPTIONS})  # checked by SubmitJob.validate
        request = SubmitJob(kind=args.kind, workspace=root, prompt=args.prompt, files=files, options=scale)
    elif args.command == "review":
        root, files = workspace_of(args, args.files)
        request = SubmitJob(kind="review", workspace=root, files=files)
    else:
        root, files = workspace_of(args, args.files)
        request = SubmitJob(kind="test", workspace=root, files=files)
    request.validate()
    return await submit_and_follow(client, request, args)


COMMANDS = {"status": cmd_status, "jobs": cmd_jobs, "findings": cmd_findings, "watch": cmd_watch,
            "apply": cmd_change, "discard": cmd_change, "answer": cmd_answer, "cancel": cmd_cancel,
            "experience": cmd_experience, "ask": cmd_submit, "review": cmd_submit, "test": cmd_submit}


def run_command(args: argparse.Namespace) -> int:
    if args.command == "up":
        from daemon.service.process import start_background

        try:
            pid, started = start_background()
        except RuntimeError as exc:
            print(f"troupe: {exc}", file=sys.stderr)
            return 1
        print(f"daemon {'started' if started else 'already running'} (pid {pid})")
        return 0
    if args.command == "down":
        from daemon.service.process import stop_background

        try:
            stopped = stop_background()
        except RuntimeError as exc:
            print(f"troupe: {exc}", file=sys.stderr)
            return 1
        print(f"daemon stopped (pid {stopped})" if stopped else "daemon was not running")
        return 0

    async def run() -> int:
        autostart = False if args.command == "status" else None
        async with DaemonClient(autostart=autostart, retries=0 if args.command == "status" else 5) as client:
            return await COMMANDS[args.command](client, args)

    try:
        return asyncio.run(run())
    except (DaemonError, ProtocolError) as exc:
        print(f"troupe: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
