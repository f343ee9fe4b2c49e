"""The team's review alone on the saves of a finished mutants run: caught, findings, false findings.

    PYTHONPATH=CHECKOUT TROUPE_HOME=NEW TROUPE_LOCAL_MODEL=qwen2.5-coder-1.5b TROUPE_EXPERIENCE=off \\
        .venv/bin/python bench/mutants_review.py RESULTS.json --repo COPY

RESULTS.json is a ``troupe eval mutants --on-save --out`` file; COPY the repository it ran on. Each of its
team items' mutants is saved over the unmutated commit again and reviewed by the suite's own review job
(the daemon of TROUPE_HOME, started if needed), and so is its clean save, as the suite does: the mutant
committed and the unmutated file saved over it (false findings). A review change is measured this way in
minutes, without the `troupe test` jobs that make a mutants item take several: the fix column of the run
stays the run's. ``--first N`` reviews only the first N items.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from daemon.client import DaemonClient  # noqa: E402
from daemon.eval.mutants import MutantsSuite, _read_texts, covers  # noqa: E402
from daemon.eval.runner import DaemonContext  # noqa: E402


async def run(results: Path, repo: Path, first: int | None = None) -> None:
    saved = json.loads(results.read_text(encoding="utf-8"))
    items = [r["detail"] for r in saved["results"] if r["row"] == "team"][:first]
    suite = MutantsSuite(repo, on_save=True)
    suite.snapshot = _read_texts(suite.root)
    caught = false = 0
    async with DaemonClient() as client:
        await client.health()
        ctx = DaemonContext(client, model=None, job_timeout=900)
        try:
            for item in items:
                file, line = item["file"], item["line"]
                lines = suite.snapshot[file].split("\n")
                lines[line - 1] = item["mutated"]
                text = "\n".join(lines)
                root, diff = await suite.saved(ctx, file, text)
                review, spots = await suite.review(ctx, "team", root, file, text, diff=diff)
                hit = any(covers(line, s.start, s.end) for s in spots)
                caught += hit
                print(f"{file}:{line} {'caught' if hit else 'missed'} ({review.seconds:.0f} s): "
                      + "; ".join(f"{s.start}: {s.message[:90]}" for s in spots), flush=True)
                clean_root, clean_diff = await suite.saved(ctx, file, suite.snapshot[file],
                                                           base={**suite.snapshot, file: text})
                clean_run, clean = await suite.review(ctx, "team", clean_root, file, suite.snapshot[file],
                                                      diff=clean_diff, probe=True)
                false += len(clean)
                print(f"  its clean save ({clean_run.seconds:.0f} s): "
                      + ("; ".join(f"{s.start}: {s.message[:90]}" for s in clean) or "no finding"), flush=True)
        finally:
            await ctx.close()
    print(f"caught {caught}/{len(items)}; {false} false findings in {len(items)} clean saves")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, help="a troupe eval mutants --on-save --out file")
    parser.add_argument("--repo", type=Path, required=True, help="the repository copy that run used")
    parser.add_argument("--first", type=int, help="only the first N items")
    args = parser.parse_args()
    asyncio.run(run(args.results, args.repo, args.first))


if __name__ == "__main__":
    main()
