"""What an eval's team jobs spent, phase by phase, read from the daemon's store after the run.

    .venv/bin/python bench/eval_jobs.py TROUPE_HOME [--kind review]

For each job kind (or only ``--kind``): the jobs' wall seconds (p50, p99, max); per phase, in chain
order, how many jobs ran it (a model call), how many skipped it and why (the time limit, a skip
rule), and its seconds (p50, max); how often each phase's calls found their prompt in the model
server's cache (second and later calls of a job: what prefix reuse must show). Reads the store
read-only (``TROUPE_HOME/troupe.db``); run it after ``troupe eval``, with the ``TROUPE_HOME`` the
eval's daemon used.
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
import statistics
from collections import Counter, defaultdict
from itertools import pairwise
from pathlib import Path


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))] if ordered else 0.0


def why(conclusion: str) -> str:
    """A skipped phase's reason without its numbers: "the chain's time limit of 71.9 s" -> "the chain's time limit"."""
    reason = conclusion.removeprefix("(skipped: ").removesuffix(")")
    return re.sub(r" of [\d.]+ s", "", reason)


def report(db: sqlite3.Connection, kind: str) -> None:
    jobs = db.execute("select id, started, finished from jobs where kind = ? and finished is not null "
                      "order by created", (kind,)).fetchall()
    if not jobs:
        return
    walls = [finished - started for _, started, finished in jobs]
    print(f"{kind}: {len(jobs)} jobs, p50 {statistics.median(walls):.1f} s, p99 {percentile(walls, 99):.1f} s, "
          f"max {max(walls):.1f} s")
    ids = [job_id for job_id, _, _ in jobs]
    marks = ",".join("?" * len(ids))
    order: list[str] = []
    ran: Counter[str] = Counter()
    skipped: dict[str, Counter[str]] = defaultdict(Counter)
    seconds: dict[str, list[float]] = defaultdict(list)
    for phase, data in db.execute(f"select phase, data from job_events where kind = 'phase_finished' and job_id in "
                                  f"({marks}) order by job_id, seq", ids):
        event = json.loads(data)
        name = event.get("phase") or phase or "?"
        if name not in order:
            order.append(name)
        if event.get("skipped"):
            skipped[name][why(str(event.get("conclusion", "")))] += 1
        elif event.get("calls"):
            ran[name] += 1
            seconds[name].append(float(event.get("seconds") or 0.0))
    for name in (n for n in order if ran[n] or skipped[n]):
        spent = seconds[name]
        timing = f", {statistics.median(spent):.1f} s p50, {max(spent):.1f} s max" if spent else ""
        skips = "; ".join(f"{n} {reason}" for reason, n in skipped[name].most_common())
        print(f"  {name}: ran in {ran[name]}{timing}" + (f"; skipped: {skips}" if skips else ""))
    calls: dict[str, list[tuple[str, int, int]]] = defaultdict(list)
    for job_id, phase, data in db.execute(f"select job_id, phase, data from job_events where kind = 'usage' and "
                                          f"job_id in ({marks}) order by job_id, seq", ids):
        usage = json.loads(data)
        calls[job_id].append((phase or "?", int(usage.get("prompt_tokens") or 0),
                              int(usage.get("cached_prompt_tokens") or 0)))
    shares: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for made in calls.values():
        for (before, _, _), (phase, prompt, cached) in pairwise(made):
            share = shares[f"{before} -> {phase}"]
            share[0], share[1], share[2] = share[0] + 1, share[1] + cached, share[2] + prompt
    for pair, (n, cached, prompt) in sorted(shares.items()):
        print(f"  cached, {pair}: {cached}/{prompt} prompt tokens ({100 * cached / max(prompt, 1):.0f}%) in {n} calls")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("home", type=Path, help="the TROUPE_HOME the eval's daemon used")
    parser.add_argument("--kind", help="only this job kind (review, test, change, ...)")
    args = parser.parse_args()
    db = sqlite3.connect(f"file:{args.home / 'troupe.db'}?mode=ro", uri=True)
    kinds = [args.kind] if args.kind else [k for (k,) in db.execute("select distinct kind from jobs order by kind")]
    for kind in kinds:
        report(db, kind)


if __name__ == "__main__":
    main()
