"""``troupe experience``: search, list, show, pin, delete, stats, export and import what the team
has learnt, and ``used JOB``: which experience reached a job's prompts and why each matched.
Imports nothing heavy at module level (``troupe --help`` stays fast)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from daemon.api.protocol_experience import ExperienceInfo, RetrievalInfo
    from daemon.client import DaemonClient
    from daemon.json_types import JsonObject

POOLS = ("instructor", "assistant", "agent", "workflow", "learning")


def add_experience_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser],
                          json_flag: Callable[[argparse.ArgumentParser], None]) -> None:
    p = sub.add_parser("experience", help="what the team has learnt: search, list, curate, export")
    exp = p.add_subparsers(dest="experience_command", metavar="ACTION")
    s = exp.add_parser("search", help="full-text search over experience, findings and past jobs' events")
    s.add_argument("query", nargs="+")
    s.add_argument("-n", "--limit", type=int, default=20)
    json_flag(s)
    s = exp.add_parser("list", help="experiences, newest (or most used) first")
    s.add_argument("--pool", choices=POOLS)
    s.add_argument("--by-uses", action="store_true", help="most used first")
    s.add_argument("-w", "--workspace", metavar="DIR", help="only this repository's (and global) experience")
    s.add_argument("-n", "--limit", type=int, default=30)
    json_flag(s)
    for name, text in (("show", "one experience in full"), ("pin", "keep it through refinement"),
                       ("unpin", "let refinement judge it again"), ("delete", "remove it for good"),
                       ("forget", "the same as delete")):
        s = exp.add_parser(name, help=text)
        s.add_argument("id", type=int)
        json_flag(s)
    s = exp.add_parser("used", help="which experience reached a job's prompts, and why each matched")
    s.add_argument("job", help="the job's id (`troupe jobs` lists them)")
    json_flag(s)
    json_flag(exp.add_parser("stats", help="how much experience, how often used, what refinement removed"))
    s = exp.add_parser("export", help="every experience as JSON lines (to a file or stdout)")
    s.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")
    s.add_argument("-w", "--workspace", metavar="DIR", help="only this repository's (and global) experience")
    s = exp.add_parser("import", help="add experiences from a JSON-lines export")
    s.add_argument("file", help="the JSONL file ('-' for stdin)")
    json_flag(s)


def _line(e: ExperienceInfo) -> str:
    pin = "*" if e.pinned else " "
    where = f"{e.phase or e.chain or ''}"
    text = e.value.replace("\n", " ")
    return f"{e.id:>5}{pin} {e.pool:<10} {where:<16} {e.uses:>4} uses  {e.score:>5.2f}  {text[:80]}"


def retrieval_line(r: RetrievalInfo, *, job: bool = False) -> str:
    """One retrieval: where, what it was used as, and why it matched (the words, the relevance)."""
    why = [f"relevance {r.relevance:.2f}"] if r.relevance is not None else []
    if r.matched:
        why.append("matched: " + ", ".join(r.matched[:12]) + (" …" if len(r.matched) > 12 else ""))
    where = f"job {r.job_id}" if job else ""
    text = (r.value or "(deleted)").replace("\n", " ")[:60]
    return (f"{where + ' ' if where else ''}{r.phase or '':<12} #{r.experience_id:<5} {r.pool or '':<10} "
            f"{r.why or 'used':<10} {'; '.join(why) or 'no reason kept'}  {text!r}")


def _read_jsonl(name: str) -> list[JsonObject]:  # JSON lines from a file; the daemon checks them
    text = sys.stdin.read() if name == "-" else Path(name).read_text(encoding="utf-8")
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except ValueError as exc:
                raise SystemExit(f"troupe: {name}:{number} is not JSON ({exc})") from None
    return rows


async def cmd_experience(client: DaemonClient, args: argparse.Namespace) -> int:
    from daemon.cli.commands import emit

    action = args.experience_command
    if action == "search":
        results = await client.search(" ".join(args.query), args.limit)
        lines = [f"{h.kind:<22} {(str(h.id) if h.id else (h.job_id or '')[:8]):<8} {h.file or '':<16} "
                 f"{h.text[:90]!r}" for h in results.hits]
        emit(args, results, "\n".join(lines) or "nothing found")
    elif action == "list":
        workspace = str(Path(args.workspace).resolve()) if args.workspace else None
        items = await client.experience(pool=args.pool, workspace=workspace, limit=args.limit,
                                        order="uses" if args.by_uses else "recent")
        emit(args, items, "\n".join(_line(e) for e in items) or "no experience yet")
    elif action == "show":
        e = await client.experience_item(args.id)
        head = f"#{e.id} {e.pool} {e.chain or ''}/{e.phase or ''} {e.role or ''} score {e.score:.2f}, {e.uses} uses"
        used = await client.retrievals(experience_id=e.id, limit=10)
        tail = ("\n--- last used\n" + "\n".join(retrieval_line(r, job=True) for r in used)) if used else ""
        emit(args, e, f"{head}\ntask: {e.task}\n--- key\n{e.key}\n--- value\n{e.value}{tail}")
    elif action == "used":
        retrieved = await client.retrievals(job_id=args.job)
        emit(args, retrieved, "\n".join(retrieval_line(r) for r in retrieved)
             or f"no experience reached the prompts of job {args.job}")
    elif action in ("pin", "unpin"):
        e = await client.pin_experience(args.id, action == "pin")
        emit(args, e, f"#{e.id} {'pinned' if e.pinned else 'unpinned'}")
    elif action in ("delete", "forget"):
        e = await client.delete_experience(args.id)
        emit(args, e, f"#{e.id} ({e.pool}) deleted")
    elif action == "stats":
        stats = await client.experience_stats()
        lines = [f"{stats.total} experiences, {stats.retrievals} retrievals, {stats.eliminations} refinement "
                 f"run(s) removed {stats.eliminated}"]
        lines += [f"  {pool:<10} {p['count']:>6}  {p['uses']:>6} uses  {p['pinned']} pinned"
                  for pool, p in sorted(stats.pools.items())]
        emit(args, stats, "\n".join(lines))
    elif action == "export":
        workspace = str(Path(args.workspace).resolve()) if args.workspace else None
        text = "".join(json.dumps(row, sort_keys=True) + "\n" for row in await client.export_experience(workspace))
        if args.output:
            Path(args.output).write_text(text, encoding="utf-8")
            print(f"wrote {text.count(chr(10))} experiences to {args.output}", file=sys.stderr)
        else:
            sys.stdout.write(text)
    elif action == "import":
        result = await client.import_experience(_read_jsonl(args.file))
        emit(args, result, f"imported {result.added}, {result.skipped} already there")
    return 0
