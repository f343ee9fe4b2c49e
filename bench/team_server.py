"""A team server's throughput: jobs per minute with 1, 2 and 3 workers.

    .venv/bin/python bench/team_server.py [--jobs 50] [--workers 1,2,3] [--latency 2]

Each round is a fresh PostgreSQL database, one API node (``troupe server``) and N worker processes
(``troupe worker``, one job at a time each), all real processes; the fake model (its own process)
answers every call after ``--latency`` seconds. Every job is a ``test`` job on a repository whose
one test fails: the worker clones it at the job's commit, runs the test in the sandbox, the team
explains the failure and fixes it (two model calls), and runs the test again, which passes; the
job proposes the fix as a diff. Jobs per minute count from the first submit to the last job's end.
Prints one line per round, then the ratio of the last to the first.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from daemon.api.protocol import SubmitJob  # noqa: E402
from storage import Store  # noqa: E402
from tests.fakes.llm_server import ServerProcess  # noqa: E402
from tests.fixtures.postgres import PostgresServer, _binaries, _has_user  # noqa: E402
from tests.team_server.conftest import TeamCluster  # noqa: E402

FILES = {"app.py": "def add(a, b):\n    return a - b\n",
         "test_app.py": "from app import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"}
FIX = "add subtracts instead of adding.\n```python app.py\ndef add(a, b):\n    return a + b\n```\n"


def wait_for_workers(pg: PostgresServer, url: str, count: int, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while pg.execute("SELECT count(*) FROM procrastinate_workers", dbname=url.rsplit("/", 1)[1])[0][0] < count:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{count} workers did not start within {timeout:.0f} s")
        time.sleep(0.2)


async def round_trip(cluster: TeamCluster, jobs: int, workers: int) -> tuple[float, dict[str, int]]:
    client = cluster.client(cluster.urls[0], cluster.tokens["ada"])
    try:
        started = time.monotonic()
        submitted = [await client.submit(SubmitJob(kind="test", workspace="/team/shop")) for _ in range(jobs)]

        async def end(job_id: str) -> str:
            async for _ in client.events(job_id):
                pass
            info = await client.job(job_id)
            return f"{info.state}{'+change' if info.outcome.change_id else ''}"

        states = await asyncio.gather(*(end(job.id) for job in submitted))
        elapsed = time.monotonic() - started
    finally:
        await client.close()
    counts: dict[str, int] = {}
    for state in states:
        counts[state] = counts.get(state, 0) + 1
    return elapsed, counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=50)
    parser.add_argument("--workers", default="1,2,3")
    parser.add_argument("--latency", type=float, default=2.0)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="trbench-", dir="/tmp"))
    pg = PostgresServer(_binaries(), folder, ("postgres" if _has_user("postgres") else "nobody")
                        if os.geteuid() == 0 else None)
    pg.start()
    rates: list[float] = []
    try:
        with ServerProcess("--latency", str(args.latency), "--default-reply", FIX) as llm_url:
            for workers in (int(n) for n in args.workers.split(",")):
                url = pg.create_database()
                Store.open(url).close()  # migrated once, before the processes open it
                round_folder = folder / f"round{workers}"
                round_folder.mkdir()
                cluster = TeamCluster(round_folder, url, llm_url=llm_url, files=FILES)
                try:
                    cluster.add_people("ada")
                    cluster.start_servers(1)
                    for index in range(workers):
                        cluster.start_worker(f"w{index}")
                    wait_for_workers(pg, url, workers)  # litellm imported: the clock starts with every worker up
                    elapsed, states = asyncio.run(round_trip(cluster, args.jobs, workers))
                finally:
                    cluster.stop()
                rate = args.jobs / elapsed * 60
                rates.append(rate)
                print(f"{workers} worker(s): {args.jobs} jobs in {elapsed:.1f} s = {rate:.1f} jobs/min "
                      f"({', '.join(f'{n} {s}' for s, n in sorted(states.items()))})", flush=True)
        if len(rates) > 1:
            print(f"ratio {args.workers.split(',')[-1]} : {args.workers.split(',')[0]} workers = "
                  f"{rates[-1] / rates[0]:.2f}x")
    finally:
        pg.stop()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
