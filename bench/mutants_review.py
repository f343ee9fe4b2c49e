"""A row's review alone on the saves of a mutants run: caught, findings, false findings per clean save.

    PYTHONPATH=CHECKOUT TROUPE_HOME=NEW TROUPE_LOCAL_MODEL=qwen2.5-coder-1.5b TROUPE_EXPERIENCE=off \\
        .venv/bin/python bench/mutants_review.py RESULTS.json --repo COPY [--row team|bare] [--first N] [--out F]

RESULTS.json is a ``troupe eval mutants --on-save --out`` file (finished or not: its ``items`` are the draw);
COPY the repository it ran on. Each drawn mutant (rebuilt from its id: file, line, operator, occurrence) is
saved over the unmutated commit and reviewed as the suite reviews it (the team's review job on the daemon of
TROUPE_HOME, started if needed, or the bare call), and so is its clean save, as the suite does: the mutant
committed and the unmutated file saved over it (false findings). A review change is measured this way in
minutes an item, without the `troupe test` jobs that make a mutants item take several: the fix column stays
the run's. ``--out`` keeps each item's findings as JSON lines. ``--draw N [--files GLOB] [--tests CMD]
[--seed S]`` draws the mutants first, as the suite does, and writes them to RESULTS.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from dataclasses import asdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from daemon.client import DaemonClient  # noqa: E402
from daemon.eval.mutants import MutantsSuite, _read_texts, covers  # noqa: E402
from daemon.eval.mutation import Mutant, candidates  # noqa: E402
from daemon.eval.runner import DaemonContext  # noqa: E402
from daemon.eval.suite import Row  # noqa: E402


def drawn(ids: list[str], snapshot: dict[str, str]) -> list[Mutant]:
    """The run's mutants, rebuilt from their ids (the draw is Cosmic Ray's operators at fixed occurrences)."""
    out = []
    for path in dict.fromkeys(i.split(":", 1)[0] for i in ids):
        by_id = {c.id: c for c in candidates(path, snapshot[path])}
        out += [m for i in ids if i.startswith(path + ":") and (m := by_id[i].apply(snapshot[path])) is not None]
    order = {i: n for n, i in enumerate(ids)}
    return sorted(out, key=lambda m: order[m.id])


async def run(results: Path, repo: Path, row: Row, first: int | None, out: Path | None,
              draw: argparse.Namespace) -> None:
    if draw.draw:  # the suite's own draw (its tests must kill each kept mutant), kept in RESULTS.json
        suite = MutantsSuite(repo, files=draw.files, n=draw.draw, seed=draw.seed, on_save=True, tests=draw.tests,
                             progress=lambda text: print(text, flush=True))
        ids = [item.id for item in await suite.prepare()]
        results.write_text(json.dumps({"items": ids, "files": draw.files, "tests": draw.tests, "seed": draw.seed,
                                       "mutants": asdict(suite.stats)}, indent=1), encoding="utf-8")
    else:
        ids = json.loads(results.read_text(encoding="utf-8"))["items"]
        suite = MutantsSuite(repo, on_save=True)
        suite.snapshot = _read_texts(suite.root)
    mutants = drawn(ids[:first], suite.snapshot)
    caught = false = 0
    async with DaemonClient() as client:
        await client.health()
        ctx = DaemonContext(client, model=None, job_timeout=900)
        try:
            for mutant in mutants:
                file, line, text = mutant.file, mutant.line, mutant.text
                root, diff = await suite.saved(ctx, file, text)
                review, spots = await suite.review(ctx, row, root, file, text, diff=diff)
                hit = any(covers(line, s.start, s.end) for s in spots)
                caught += hit
                print(f"{file}:{line} {'caught' if hit else 'missed'} ({review.seconds:.0f} s): "
                      + "; ".join(f"{s.start}: {s.message[:90]}" for s in spots), flush=True)
                clean_root, clean_diff = await suite.saved(ctx, file, suite.snapshot[file],
                                                           base={**suite.snapshot, file: text})
                clean_run, clean = await suite.review(ctx, row, clean_root, file, suite.snapshot[file],
                                                      diff=clean_diff, probe=True)
                false += len(clean)
                print(f"  its clean save ({clean_run.seconds:.0f} s): "
                      + ("; ".join(f"{s.start}: {s.message[:90]}" for s in clean) or "no finding"), flush=True)
                if out is not None:
                    record = {"id": mutant.id, "row": row, "caught": hit, "seconds": review.seconds,
                              "clean_seconds": clean_run.seconds,
                              "findings": [[s.start, s.end, s.message] for s in spots],
                              "clean_findings": [[s.start, s.end, s.message] for s in clean]}
                    with out.open("a", encoding="utf-8") as handle:
                        handle.write(json.dumps(record) + "\n")
        finally:
            await ctx.close()
    print(f"{row}: caught {caught}/{len(mutants)}; {false} false findings in {len(mutants)} clean saves "
          f"({false / max(1, len(mutants)):.2f} per clean save)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, help="a troupe eval mutants --on-save --out file (with --draw: where "
                        "the draw is written)")
    parser.add_argument("--repo", type=Path, required=True, help="the repository copy that run used")
    parser.add_argument("--row", choices=("team", "bare"), default="team")
    parser.add_argument("--first", type=int, help="only the first N items")
    parser.add_argument("--out", type=Path, help="append each item's findings here, as JSON lines")
    parser.add_argument("--draw", type=int, metavar="N", help="draw N mutants first, as troupe eval mutants does")
    parser.add_argument("--files", help="with --draw: the files to mutate (a glob), as troupe eval mutants --files")
    parser.add_argument("--tests", help="with --draw: the command whose tests judge the mutants (--tests)")
    parser.add_argument("--seed", type=int, default=0, help="with --draw: the draw's seed")
    args = parser.parse_args()
    asyncio.run(run(args.results, args.repo, args.row, args.first, args.out, args))


if __name__ == "__main__":
    main()
