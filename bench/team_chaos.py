"""The team server under faults and load (issue #34): real PostgreSQL, 2 API nodes, 3 workers.

    .venv/bin/python bench/team_chaos.py [--outage 10] [--kill-every 10] [--kill-for 180]
                                         [--sse 200] [--people 50] [--jobs-each 4]

Faults (one cluster, jobs from the API client, the ``troupe`` command, the language server and the
Slack bot):
- PostgreSQL stopped for ``--outage`` s mid-run and started again;
- one worker SIGKILLed every ``--kill-every`` s for ``--kill-for`` s, started again each time;
- one API node SIGKILLed mid-run, the clients given both nodes' addresses.
For each: jobs submitted / ended / lost, events lost and duplicated on both nodes' workspace
streams (followed as the language server does, reconnecting with Last-Event-ID), the time from the
fault's end to the last job's end, and the HTTP statuses the API gave during the outage.

Load (a fresh cluster per round): ``--sse`` clients on the workspace stream (half on each node)
and ``--people`` people each submitting ``--jobs-each`` jobs one after another; p50/p99 submit
latency, events delivered per second, the API nodes' memory (RSS); then with one flooder (a
script submitting as fast as it can), without and with limits ([limits] jobs = 20, 20 requests/s).
The jobs run the scripted executor (tests/daemon/executors.py), so this measures the server, not a
model. Prints one line per measurement and the load average.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from daemon.api.protocol import SubmitJob  # noqa: E402
from daemon.client import DaemonClient, DaemonError  # noqa: E402
from storage import Store  # noqa: E402
from tests.fixtures.postgres import PostgresServer  # noqa: E402
from tests.lsp.conftest import until, uri_of  # noqa: E402
from tests.team_server import adapters  # noqa: E402
from tests.team_server.chaos import (  # noqa: E402
    SHOP,
    KillLoop,
    Probe,
    Recorder,
    all_ended,
    connected,
    own_postgres,
    start_postgres,
    stop_postgres,
    tally,
    wait_for,
)
from tests.team_server.conftest import SCRIPTED, TeamCluster  # noqa: E402


def cluster_on(pg: PostgresServer, folder: Path, *, people: list[str], limits: str = "", servers: int = 2,
               workers: int = 3) -> TeamCluster:
    url = pg.create_database()
    Store.open(url).close()
    cluster = TeamCluster(folder, url, executor=SCRIPTED, limits=limits or "jobs = 0\nrequests_per_second = 0")
    text = cluster.config.read_text().replace('shared_with = ["ada"]', f"shared_with = {['ada', *people]!r}"
                                               .replace("'", '"'))
    cluster.config.write_text(text)
    cluster.add_people("ada", *people)
    cluster.add_person("slack-bot", bot=True)
    cluster.add_person("ada", slack_user="UANN")
    for index in range(workers):
        cluster.start_worker(f"w{index}")
    cluster.start_servers(servers)
    return cluster


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def row(name: str, result: Any, recover: float, extra: str = "") -> None:
    print(f"{name}: submitted {result.submitted}, ended {result.ended}, lost {result.lost}, events lost "
          f"{result.lost_events}, duplicated {result.duplicated_events}; states {result.states}; "
          f"last job ended {recover:.1f} s after the fault{extra}", flush=True)


async def faults(cluster: TeamCluster, pg: PostgresServer, args: argparse.Namespace, folder: Path) -> None:
    ada = cluster.tokens["ada"]
    both = ",".join(cluster.urls)
    client = DaemonClient(tcp_url=both, token=ada, autostart=False, retries=5)
    recorders = [Recorder(cluster.client(url, ada)) for url in cluster.urls]
    try:
        probe = await connected(client, *recorders)
        # PostgreSQL stopped mid-run
        jobs = [(await client.submit(SubmitJob(kind="ask", workspace=SHOP, prompt=f"scripted(phases=4,sleep=1) {i}"
                                               ))).id for i in range(20)]
        cli = await adapters.troupe(cluster, cluster.urls[1], ada, "ask", "-w", SHOP,
                                    "scripted(phases=4,sleep=1) [cli]")
        clone = folder / "shop"  # ada's clone of the workspace's remote, open in her editor
        subprocess.run(["git", "clone", "-q", str(cluster.remote), str(clone)], check=True)
        async with (adapters.slack_bot(folder, cluster.urls[0], cluster.tokens["slack-bot"]) as slack,
                    adapters.editor(folder / "lsp", clone, cluster.urls[1], ada) as editor):
            mentions = [await slack.mention(f"scripted(phases=4,sleep=1) [slack-{i}]", channel="CSHOP")
                        for i in range(5)]
            await editor.registered(Path(SHOP))  # the language server mapped the clone to /team/shop
            app = clone / "app.py"
            editor.open(app, app.read_text())
            asked = [await editor.command("troupe.ask", {"prompt": f"scripted(phases=4,sleep=1) [editor-{i}]",
                                                         "file": uri_of(app)}) for i in range(5)]

            async def submitted() -> bool:
                return len(await client.jobs(workspace=SHOP, limit=500)) >= 32  # and the probe
            await wait_for(submitted, "the adapters' jobs", 60)
            jobs = [j.id for j in await client.jobs(workspace=SHOP, limit=500) if j.id != probe]
            stop_postgres(pg)
            probe, back = Probe(), asyncio.Event()
            prober = cluster.client(cluster.urls[0], ada)
            prober.retries = 0
            probing = asyncio.create_task(probe.run(prober, jobs[0], back))
            await asyncio.sleep(args.outage)
            back.set()
            await probing
            await prober.close()
            start_postgres(pg)
            restarted = time.monotonic()
            while True:  # the API answers again
                try:
                    await client.job(jobs[0])
                    break
                except DaemonError:
                    await asyncio.sleep(0.1)
            api_back = time.monotonic() - restarted
            await wait_for(lambda: all_ended(client, jobs, recorders), "every job's end", 300)
            recover = time.monotonic() - restarted
            await cli.communicate()
            for ts, _ in mentions:
                await slack.finished(ts, 60)
            editors = {str(answer["jobId"]) for answer in asked}
            await until(lambda: editors <= {n.job.id for n in editor.notifications("troupe/jobFinished")}, 60,
                        "the editor's jobs to finish in the editor")
        statuses = sorted({s for s, _ in probe.answers})
        row(f"PostgreSQL stopped {args.outage:g} s", await tally(client, jobs, recorders), recover,
            f"; API during the outage: {len(probe.answers)} calls, statuses {statuses}, slowest "
            f"{max(t for _, t in probe.answers):.2f} s; the API answered again {api_back:.1f} s after the "
            f"restart; CLI exit {cli.returncode}; the editor's 5 and Slack's 5 shown ended")

        # a worker SIGKILLed in a loop
        jobs = [(await client.submit(SubmitJob(kind="ask", workspace=SHOP, prompt=f"scripted(phases=3,sleep=2) k{i}"
                                               ))).id for i in range(40)]
        loop = KillLoop(cluster, every=args.kill_every)
        feeding = asyncio.create_task(_feed(client, jobs, args.kill_for))
        await loop.run(args.kill_for)
        await feeding
        stopped = time.monotonic()
        await wait_for(lambda: all_ended(client, jobs, recorders), "every job's end", 300)
        result = await tally(client, jobs, recorders)
        row(f"worker SIGKILLed every {args.kill_every:g} s for {args.kill_for:g} s", result,
            time.monotonic() - stopped, f"; {loop.kills} kills, {result.resumes} resumes, at most "
            f"{result.max_resumes + 1} attempts for one job")

        # an API node killed
        failover = Recorder(DaemonClient(tcp_url=both, token=ada, autostart=False, retries=5))
        await connected(client, failover)  # it is to see every event of the jobs below
        jobs = [(await client.submit(SubmitJob(kind="ask", workspace=SHOP, prompt=f"scripted(phases=3,sleep=1) n{i}"
                                               ))).id for i in range(20)]
        await asyncio.sleep(2)
        node, _ = cluster.servers[0]
        node.send_signal(signal.SIGKILL)
        node.wait(10)
        killed = time.monotonic()
        await client.close()  # as the next `troupe` command would: a new connection,
        client.tcp_url = cluster.urls[0]  # first to the node now gone, then the other one
        more = [(await client.submit(SubmitJob(kind="ask", workspace=SHOP, prompt=f"after {i}"))).id
                for i in range(5)]
        alive = [recorders[1], failover]
        await wait_for(lambda: all_ended(client, jobs + more, alive), "every job's end", 300)
        result = await tally(client, jobs + more, [failover])
        row("API node SIGKILLed", result, time.monotonic() - killed,
            f"; the client moved to {client.tcp_url}; the failover stream (both addresses) lost "
            f"{result.lost_events}, duplicated {result.duplicated_events}")
        await failover.stop()
        await failover.client.close()
    finally:
        for recorder in recorders:
            await recorder.stop()
            await recorder.client.close()
        await client.close()


async def _feed(client: DaemonClient, jobs: list[str], seconds: float) -> None:
    """A job every 3 s while the workers die."""
    deadline = time.monotonic() + seconds
    index = 0
    while time.monotonic() < deadline:
        await asyncio.sleep(3)
        jobs.append((await client.submit(SubmitJob(kind="ask", workspace=SHOP,
                                                   prompt=f"scripted(phases=2,sleep=1) f{index}"))).id)
        index += 1


async def load(cluster: TeamCluster, args: argparse.Namespace, *, flooder: bool) -> str:
    people = [f"p{i:02}" for i in range(args.people)]
    watchers = [cluster.client(cluster.urls[i % 2], cluster.tokens[people[i % len(people)]])
                for i in range(args.sse)]
    received = [0]

    async def watch(client: DaemonClient) -> None:
        async for _ in client.watch_events(SHOP, patient=True):
            received[0] += 1

    streams = [asyncio.create_task(watch(c)) for c in watchers]
    await asyncio.sleep(3)
    latencies: list[float] = []
    jobs: list[str] = []
    stop_flood = asyncio.Event()
    flood = {"ok": 0, "429": 0}

    async def person(name: str, index: int) -> None:
        client = DaemonClient(tcp_url=cluster.urls[index % 2], token=cluster.tokens[name], autostart=False,
                              retries=5)
        try:
            for job in range(args.jobs_each):
                started = time.monotonic()
                info = await client.submit(SubmitJob(kind="ask", workspace=SHOP, prompt=f"{name} {job}"))
                latencies.append(time.monotonic() - started)
                jobs.append(info.id)
                await asyncio.sleep(0.5)
        finally:
            await client.close()

    async def flood_it() -> None:
        """8 loops on one token, each submitting a 5-second job as soon as the last submit returned."""
        client = DaemonClient(tcp_url=cluster.urls[0], token=cluster.tokens["flood"], autostart=False, retries=0)
        try:
            await asyncio.gather(*(flood_loop(client) for _ in range(8)))
        finally:
            await client.close()

    async def flood_loop(client: DaemonClient) -> None:
        while not stop_flood.is_set():
            try:
                await client.submit(SubmitJob(kind="ask", workspace=SHOP, prompt="scripted(phases=1,sleep=5) flood"))
                flood["ok"] += 1
            except DaemonError as exc:
                if exc.status != 429:
                    raise
                flood["429"] += 1
                await asyncio.sleep(0.05)  # a script that ignores Retry-After

    flooding = asyncio.create_task(flood_it()) if flooder else None
    started = time.monotonic()
    rss = [0.0]

    async def sample() -> None:
        while True:
            rss[0] = max(rss[0], sum(rss_mb(p.pid) for p, _ in cluster.servers))
            await asyncio.sleep(0.5)

    sampler = asyncio.create_task(sample())
    await asyncio.gather(*(person(name, i) for i, name in enumerate(people)))
    submitting = time.monotonic() - started
    stop_flood.set()
    if flooding is not None:
        await flooding
    events_before = received[0]
    await asyncio.sleep(3)
    elapsed = time.monotonic() - started
    sampler.cancel()
    for task in streams:
        task.cancel()
    await asyncio.gather(*streams, sampler, return_exceptions=True)
    for client in watchers:
        await client.close()
    q = statistics.quantiles(latencies, n=100)
    return (f"{args.sse} SSE + {args.people} submitters{' + 1 flooder' if flooder else ''}: {len(latencies)} "
            f"submits in {submitting:.1f} s, p50 {statistics.median(latencies) * 1000:.0f} ms, p99 "
            f"{q[98] * 1000:.0f} ms; {received[0]} events delivered ({received[0] / elapsed:.0f}/s; "
            f"{events_before} by the end of the submits); API nodes' RSS peak {rss[0]:.0f} MB"
            + (f"; flooder {flood['ok']} accepted, {flood['429']} refused (429)" if flooder else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--outage", type=float, default=10.0)
    parser.add_argument("--kill-every", type=float, default=10.0)
    parser.add_argument("--kill-for", type=float, default=180.0)
    parser.add_argument("--sse", type=int, default=200)
    parser.add_argument("--people", type=int, default=50)
    parser.add_argument("--jobs-each", type=int, default=4)
    parser.add_argument("--only", choices=["faults", "load"], default=None)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="trchaos-", dir="/tmp"))
    pg = own_postgres(folder / "pg")
    try:
        if args.only in (None, "faults"):
            cluster = cluster_on(pg, folder / "faults", people=[])
            try:
                asyncio.run(faults(cluster, pg, args, folder / "faults"))
            finally:
                cluster.stop()
        if args.only in (None, "load"):
            people = [f"p{i:02}" for i in range(args.people)]
            for name, limits, flooder in (("no limits", "", False), ("no limits", "", True),
                                          ("limits on", "jobs = 20\nrequests_per_second = 20\nburst = 40", True)):
                cluster = cluster_on(pg, folder / f"load-{name}-{flooder}".replace(" ", "-"),
                                     people=[*people, "flood"], limits=limits)
                try:
                    print(f"{name}: " + asyncio.run(load(cluster, args, flooder=flooder)), flush=True)
                finally:
                    cluster.stop()
        print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} CPUs)")
    finally:
        pg.stop()
        shutil.rmtree(folder, ignore_errors=True)
        subprocess.run(["true"])


if __name__ == "__main__":
    main()
