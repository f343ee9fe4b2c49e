"""Store benchmark: insert throughput and full-text search latency at 1k, 10k and 100k rows.

    .venv/bin/python bench/store.py            # 1k, 10k, 100k (about a minute on 2 cores)
    .venv/bin/python bench/store.py --sizes 1000,10000

One database in a temporary folder grows through each size. Events are appended one per call
(one transaction each, as the engine does); findings arrive in reviews of 50 per file. Text is
drawn from a Zipf-like vocabulary, and queries are 1-3 words from the same distribution, so some
hit thousands of rows and some only a few. Latencies are for ``search_events`` and
``search_findings`` with the default limit of 20, on a warm connection.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from storage import FindingDraft, Store

FINDINGS_PER_REVIEW = 50
QUERIES = 300
VOCABULARY = [f"w{i:04d}" for i in range(3000)] + [
    "timeout", "null", "pointer", "cache", "retry", "deadlock", "injection", "unused", "import", "handler"]
WEIGHTS = [1 / (rank + 1) for rank in range(len(VOCABULARY))]


def sentence(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choices(VOCABULARY, WEIGHTS, k=rng.randint(low, high)))


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def latencies_ms(search, rng: random.Random) -> tuple[float, float, float]:
    samples = []
    for _ in range(QUERIES):
        query = " ".join(rng.choices(VOCABULARY, WEIGHTS, k=rng.randint(1, 3)))
        started = time.perf_counter()
        search(query)
        samples.append((time.perf_counter() - started) * 1000)
    return percentile(samples, 0.50), percentile(samples, 0.99), statistics.fmean(samples)


def run(sizes: list[int]) -> None:
    rng = random.Random(42)
    with tempfile.TemporaryDirectory() as folder:
        store = Store.open(Path(folder) / "troupe.db")
        workspace = store.add_workspace(folder)
        job = store.record_job("review", {"bench": True}, workspace_id=workspace.id)
        events = findings = reviews = 0
        print(f"SQLite store benchmark (python {sys.version.split()[0]})")
        print(f"{'rows':>8} | {'events/s':>9} {'findings/s':>10} | "
              f"{'event search p50/p99 ms':>24} | {'finding search p50/p99 ms':>26}")
        for size in sizes:
            started = time.perf_counter()
            added = size - events
            for _ in range(added):
                store.append_event(job.id, "message", {"text": sentence(rng, 8, 30)}, role="reviewer")
            events_per_s = added / (time.perf_counter() - started)

            started = time.perf_counter()
            added = size - findings
            while findings < size:
                count = min(FINDINGS_PER_REVIEW, size - findings)
                store.add_findings(workspace.id, job.id, f"src/module{reviews}.py", [
                    FindingDraft(sentence(rng, 5, 15), "minor", line + 1, rule=f"R{rng.randint(1, 200)}")
                    for line in range(count)], replace_open=False)
                findings += count
                reviews += 1
            findings_per_s = added / (time.perf_counter() - started)
            events = size

            event_p50, event_p99, _ = latencies_ms(store.search_events, rng)
            finding_p50, finding_p99, _ = latencies_ms(store.search_findings, rng)
            print(f"{size:>8} | {events_per_s:>9.0f} {findings_per_s:>10.0f} | "
                  f"{event_p50:>11.2f} / {event_p99:<10.2f} | {finding_p50:>12.2f} / {finding_p99:<11.2f}")
        size_mb = (Path(folder) / "troupe.db").stat().st_size / 1e6
        print(f"integrity_check: {store.integrity_check()}; file size {size_mb:.1f} MB "
              f"(+ WAL); {QUERIES} queries per cell, limit 20")
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000",
                        help="comma-separated cumulative row counts (default: 1000,10000,100000)")
    sizes = sorted(int(size) for size in parser.parse_args().sizes.split(","))
    started = time.perf_counter()
    run(sizes)
    print(f"total {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
