"""A row's review (or fix) alone on the saves of a mutants run: caught and false findings per clean save, or fixed.

    PYTHONPATH=CHECKOUT TROUPE_HOME=NEW TROUPE_LOCAL_MODEL=qwen2.5-coder-1.5b TROUPE_EXPERIENCE=off \\
        .venv/bin/python bench/mutants_review.py RESULTS.json --repo COPY [--row team|bare] [--first N] [--out F]

RESULTS.json is a ``troupe eval mutants --on-save --out`` file (finished or not: its ``items`` are the draw);
COPY the repository it ran on. Each drawn mutant (rebuilt from its id: file, line, operator, occurrence) is
saved over the unmutated commit and reviewed as the suite reviews it (the team's review job on the daemon of
TROUPE_HOME, started if needed, or the bare call), and so is its clean save, as the suite does: the mutant
committed and the unmutated file saved over it (false findings). A review change is measured this way in
minutes an item, without the `troupe test` jobs that make a mutants item take several: the fix column stays
the run's. ``--out`` keeps each item's findings as JSON lines. ``--draw N [--files GLOB] [--tests CMD]
[--seed S]`` draws the mutants first, as the suite does, and writes them to RESULTS.json. ``--fix`` runs
the row's fix instead (the team's ``troupe test`` job, or the bare call), judged by the repository's tests.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from daemon.client import DaemonClient  # noqa: E402
from daemon.eval.mutants import MutantsSuite, _item, _read_texts, covers  # noqa: E402
from daemon.eval.mutation import Mutant, candidates  # noqa: E402
from daemon.eval.runner import DaemonContext  # noqa: E402
from daemon.eval.suite import Row  # noqa: E402


def same_code(fix: str, original: str) -> bool:
    """Whether a one-line fix is the original line, spacing aside."""
    return "".join(fix.split()) == "".join(original.split())


def drawn(ids: list[str], snapshot: dict[str, str]) -> list[Mutant]:
    """The run's mutants, rebuilt from their ids (the draw is Cosmic Ray's operators at fixed occurrences)."""
    out = []
    for path in dict.fromkeys(i.split(":", 1)[0] for i in ids):
        by_id = {c.id: c for c in candidates(path, snapshot[path])}
        out += [m for i in ids if i.startswith(path + ":") and (m := by_id[i].apply(snapshot[path])) is not None]
    order = {i: n for n, i in enumerate(ids)}
    return sorted(out, key=lambda m: order[m.id])


async def review_one(suite: MutantsSuite, ctx: DaemonContext, row: Row, mutant: Mutant) -> dict[str, Any]:
    """The mutant's save reviewed, and its clean save (the mutant committed, put right)."""
    file, line, text = mutant.file, mutant.line, mutant.text
    root, diff = await suite.saved(ctx, file, text)
    review, spots = await suite.review(ctx, row, root, file, text, diff=diff)
    hit = any(covers(line, s.start, s.end) for s in spots)
    restores = any(covers(line, s.start, s.end) and s.fix is not None and same_code(s.fix, mutant.original)
                   for s in spots)  # the finding's fix puts the line back as it was: it saw the bug
    print(f"{file}:{line} {'caught' if hit else 'missed'} ({review.seconds:.0f} s): "
          + "; ".join(f"{s.start}: {s.message[:90]}" for s in spots), flush=True)
    clean_root, clean_diff = await suite.saved(ctx, file, suite.snapshot[file], base={**suite.snapshot, file: text})
    clean_run, clean = await suite.review(ctx, row, clean_root, file, suite.snapshot[file], diff=clean_diff,
                                          probe=True)
    print(f"  its clean save ({clean_run.seconds:.0f} s): "
          + ("; ".join(f"{s.start}: {s.message[:90]}" for s in clean) or "no finding"), flush=True)
    return {"caught": hit, "restores": restores, "false": len(clean),
            "false_majors": sum(s.severity == "major" for s in clean),
            "seconds": review.seconds, "clean_seconds": clean_run.seconds,
            "findings": [[s.start, s.end, s.severity, s.message, s.fix] for s in spots],
            "clean_findings": [[s.start, s.end, s.severity, s.message, s.fix] for s in clean]}


async def fix_one(suite: MutantsSuite, ctx: DaemonContext, row: Row, mutant: Mutant) -> dict[str, Any]:
    """The row's fix of the mutant saved over the unmutated commit (``troupe test``, or the bare call shown the
    failing tests' output), judged by the repository's tests as the suite judges it."""
    files = {**suite.snapshot, mutant.file: mutant.text}
    item = _item(mutant, await suite.run_tests(files, command=suite.tests))
    root, _ = await suite.saved(ctx, mutant.file, mutant.text)
    run, fixed_files, note = await suite.fix(ctx, row, root, item)
    report = await suite.run_tests(fixed_files, command=suite.tests) if fixed_files else None
    fixed = bool(report and report.ok)
    said = note if report is None else "tests pass" if report.ok else report.summary(max_failures=1, max_chars=200)
    print(f"{mutant.id} {'fixed' if fixed else 'not fixed'} ({run.seconds:.0f} s, "
          f"{run.prompt_tokens + run.completion_tokens} tokens): {said.splitlines()[0] if said else ''}", flush=True)
    return {"fixed": fixed, "seconds": run.seconds, "tokens": run.prompt_tokens + run.completion_tokens,
            "note": said}


async def run(results: Path, repo: Path, row: Row, first: int | None, out: Path | None,
              args: argparse.Namespace) -> None:
    if args.draw:  # the suite's own draw (its tests must kill each kept mutant), kept in RESULTS.json
        suite = MutantsSuite(repo, files=args.files, n=args.draw, seed=args.seed, on_save=True, tests=args.tests,
                             progress=lambda text: print(text, flush=True))
        ids = [item.id for item in await suite.prepare()]
        results.write_text(json.dumps({"items": ids, "files": args.files, "tests": args.tests, "seed": args.seed,
                                       "mutants": asdict(suite.stats)}, indent=1), encoding="utf-8")
    else:
        saved = json.loads(results.read_text(encoding="utf-8"))
        ids, tests = saved["items"], saved.get("tests") or args.tests
        suite = MutantsSuite(repo, on_save=True, tests=tests)
        suite.snapshot = _read_texts(suite.root)
    mutants = drawn(ids[:first], suite.snapshot)
    one = fix_one if args.fix else review_one
    done: list[dict[str, Any]] = []
    async with DaemonClient() as client:
        await client.health()
        ctx = DaemonContext(client, model=None, job_timeout=900)
        try:
            for mutant in mutants:
                done.append({"id": mutant.id, "row": row, **await one(suite, ctx, row, mutant)})
                if out is not None:
                    with out.open("a", encoding="utf-8") as handle:
                        handle.write(json.dumps(done[-1]) + "\n")
        finally:
            await ctx.close()
    if args.fix:
        seconds = sorted(float(d["seconds"]) for d in done)
        print(f"{row}: fixed {sum(bool(d['fixed']) for d in done)}/{len(done)}; "
              f"job seconds p50 {seconds[len(seconds) // 2]:.0f}, max {seconds[-1]:.0f}" if seconds else "nothing")
        return
    false, majors = sum(int(d["false"]) for d in done), sum(int(d["false_majors"]) for d in done)
    print(f"{row}: caught {sum(bool(d['caught']) for d in done)}/{len(done)} (the fix puts the line back in "
          f"{sum(bool(d['restores']) for d in done)}); {false} false findings in "
          f"{len(done)} clean saves ({false / max(1, len(done)):.2f} per clean save, {majors} of them major)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, help="a troupe eval mutants --on-save --out file (with --draw: where "
                        "the draw is written)")
    parser.add_argument("--repo", type=Path, required=True, help="the repository copy that run used")
    parser.add_argument("--row", choices=("team", "bare"), default="team")
    parser.add_argument("--first", type=int, help="only the first N items")
    parser.add_argument("--out", type=Path, help="append each item's findings here, as JSON lines")
    parser.add_argument("--fix", action="store_true", help="the row's fix (troupe test) instead of its review")
    parser.add_argument("--draw", type=int, metavar="N", help="draw N mutants first, as troupe eval mutants does")
    parser.add_argument("--files", help="with --draw: the files to mutate (a glob), as troupe eval mutants --files")
    parser.add_argument("--tests", help="with --draw: the command whose tests judge the mutants (--tests)")
    parser.add_argument("--seed", type=int, default=0, help="with --draw: the draw's seed")
    args = parser.parse_args()
    asyncio.run(run(args.results, args.repo, args.row, args.first, args.out, args))


if __name__ == "__main__":
    main()
