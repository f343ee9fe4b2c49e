"""The team server under faults (issue #34), on a PostgreSQL of this module's own: two API nodes,
three workers, jobs from the API client, the ``troupe`` command and the Slack bot.

- PostgreSQL stopped for a few seconds and started again while jobs run: every job ends, each
  node's workspace stream (followed with ``Last-Event-ID``, as the language server follows it) has
  every job's events once, API calls meanwhile get a 503 at once (never a hang, never a 500), and
  the workers and the nodes' event relays reconnect on their own.
- one worker SIGKILLed every few seconds, started again each time: every job ends, each within
  (kills + 1) attempts, and the resumes are recorded in the job's events.
- an API node SIGKILLed under a stream given both nodes' addresses: the stream goes on from the
  other node (which counts its own ids: it replays what it holds) and has every job's events once.

bench/team_chaos.py runs the same faults longer (10 s outage, 3 minutes of kills) and under load."""

from __future__ import annotations

import asyncio
import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from daemon.api.protocol import SubmitJob
from daemon.client import DaemonClient
from storage import Store
from tests.fixtures.postgres import PostgresServer
from tests.team_server import adapters
from tests.team_server.chaos import (
    SHOP,
    KillLoop,
    Probe,
    Recorder,
    all_ended,
    connected,
    not_ended,
    own_postgres,
    start_postgres,
    stop_postgres,
    tally,
    wait_for,
)
from tests.team_server.conftest import SCRIPTED, TeamCluster


@pytest.fixture(scope="module")
def chaos_team() -> Iterator[tuple[TeamCluster, PostgresServer]]:
    folder = Path(tempfile.mkdtemp(prefix="trchaos-", dir="/tmp"))
    pg = own_postgres(folder / "pg")
    cluster = None
    try:
        url = pg.create_database()
        Store.open(url).close()  # migrated once, before the processes open it
        cluster = TeamCluster(folder / "cluster", url, executor=SCRIPTED)
        cluster.add_people("ada")
        cluster.add_person("slack-bot", bot=True)
        cluster.add_person("ada", slack_user="UANN")  # the Slack bot acts for her (tests/slack's ANN)
        for index in range(3):
            cluster.start_worker(f"w{index}")
        cluster.start_servers(2)
        yield cluster, pg
    finally:
        if cluster is not None:
            cluster.stop()
        pg.stop()
        shutil.rmtree(folder, ignore_errors=True)


def _relay_lost(cluster: TeamCluster) -> bool:
    return all("lost the event channel" in (cluster.folder / f"server{i}.log").read_text(errors="replace")
               for i in range(2))


async def test_postgresql_restarted_mid_run_every_job_ends_each_event_once_and_calls_meanwhile_get_503(
        chaos_team: tuple[TeamCluster, PostgresServer], tmp_path: Path) -> None:
    team, pg = chaos_team
    ada = team.tokens["ada"]
    clients = [team.client(url, ada) for url in team.urls]
    recorders = [Recorder(team.client(url, ada)) for url in team.urls]
    try:
        probe = await connected(clients[0], *recorders)
        jobs = [(await clients[i % 2].submit(SubmitJob(kind="ask", workspace=SHOP,
                                                        prompt=f"scripted(phases=4,sleep=1) api {i}"))).id
                for i in range(6)]
        cli = await adapters.troupe(team, team.urls[1], ada, "ask", "-w", SHOP, "scripted(phases=4,sleep=1) [cli]")
        async with adapters.slack_bot(tmp_path, team.urls[0], team.tokens["slack-bot"]) as slack:
            ts, _ = await slack.mention("scripted(phases=4,sleep=1) what does add do? [slack]", channel="CSHOP")

            async def adapters_submitted() -> bool:
                listed = await clients[0].jobs(workspace=SHOP, limit=200)
                return sum(1 for j in listed if "[cli]" in str(j.request.get("prompt"))
                           or "[slack]" in str(j.request.get("prompt"))) == 2

            try:
                await wait_for(adapters_submitted, "the CLI's and the bot's jobs", 60)
            except AssertionError:
                cli.kill()
                raise AssertionError(f"{await cli.communicate()}\n{slack.slack.messages}\n{team.logs()}") from None
            jobs += [j.id for j in await clients[0].jobs(workspace=SHOP, limit=200) if j.id not in [*jobs, probe]]
            stop_postgres(pg)  # mid-run: the jobs have begun their phases
            probe, back = Probe(), asyncio.Event()
            prober = team.client(team.urls[0], ada)
            probing = asyncio.create_task(probe.run(prober, jobs[0], back))
            await asyncio.sleep(5)
            back.set()
            await probing
            await prober.close()
            start_postgres(pg)
            await wait_for(lambda: all_ended(clients[0], jobs, recorders), "every job's end on both streams", 90)
            out, err = await asyncio.wait_for(cli.communicate(), 60)
            assert cli.returncode == 0 and " succeeded (" in out.decode(), (out, err, team.logs())
            assert "white_check_mark" in await slack.finished(ts, 60)

        assert probe.answers and {status for status, _ in probe.answers} == {503}, probe.answers
        assert max(took for _, took in probe.answers) < 10, probe.answers  # the client's 2 retries of 2 s
        result = await tally(clients[0], jobs, recorders)
        assert (result.submitted, result.lost, result.lost_events, result.duplicated_events) == (8, 0, 0, 0), \
            "\n".join(result.missed) or result
        assert set(result.states) <= {"succeeded", "failed"}, result
        for job_id in jobs:  # a failed one says why
            info = await clients[0].job(job_id)
            assert info.state == "succeeded" or info.error, (info.state, info.error)
        logs = {name: (team.folder / f"{name}.log").read_text(errors="replace") for name in team.workers}
        assert any("lost the queue's PostgreSQL" in text for text in logs.values()), team.logs()
        assert all(proc.poll() is None for proc in team.workers.values()), team.logs()  # reconnected, alive
        assert _relay_lost(team), team.logs()
        # after the outage a new job runs as before
        again = await clients[1].submit(SubmitJob(kind="ask", workspace=SHOP, prompt="after"))
        await wait_for(lambda: all_ended(clients[0], [again.id], recorders), "a job after the outage", 60)
    finally:
        for recorder in recorders:
            await recorder.stop()
            await recorder.client.close()
        for client in clients:
            await client.close()


async def test_a_worker_killed_every_few_seconds_every_job_ends_within_kills_plus_one_attempts(
        chaos_team: tuple[TeamCluster, PostgresServer]) -> None:
    team, _ = chaos_team
    ada = team.tokens["ada"]
    client = team.client(team.urls[0], ada)
    recorders = [Recorder(team.client(url, ada)) for url in team.urls]
    try:
        await connected(client, *recorders)
        jobs = [(await client.submit(SubmitJob(kind="ask", workspace=SHOP,
                                               prompt=f"scripted(phases=3,sleep=1) kill {i}"))).id
                for i in range(9)]
        loop = KillLoop(team, every=4)
        await loop.run(16)
        try:
            await wait_for(lambda: all_ended(client, jobs, recorders), "every job's end on both streams", 120)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{await not_ended(client, jobs, recorders)}\n{team.logs()}") from None
        result = await tally(client, jobs, recorders)
        assert loop.kills == 4
        assert (result.submitted, result.lost, result.lost_events, result.duplicated_events) == (9, 0, 0, 0), \
            "\n".join(result.missed) or result
        assert result.resumes >= 1, result  # a killed worker's job went on elsewhere
        assert result.max_resumes <= loop.kills, result  # each ended within kills + 1 attempts
        assert set(result.states) <= {"succeeded", "failed"}, result
    finally:
        for recorder in recorders:
            await recorder.stop()
            await recorder.client.close()
        await client.close()


async def test_an_api_node_killed_under_a_stream_it_goes_on_from_the_other_node_with_each_event_once(
        chaos_team: tuple[TeamCluster, PostgresServer]) -> None:
    team, _ = chaos_team
    team.start_servers(1)  # a node of this test's own, killed below
    (node, doomed), alive = team.servers[-1], team.urls[0]
    ada = team.tokens["ada"]
    client = team.client(alive, ada)
    failover = Recorder(DaemonClient(tcp_url=f"{doomed},{alive}", token=ada, autostart=False, retries=5))
    try:
        await connected(client, failover)
        jobs = [(await client.submit(SubmitJob(kind="ask", workspace=SHOP,
                                               prompt=f"scripted(phases=3,sleep=1) node {i}"))).id
                for i in range(6)]

        async def streaming() -> bool:
            return sum(map(len, failover.seen.values())) >= 6
        await wait_for(streaming, "the stream from the node to be killed", 60)
        node.send_signal(signal.SIGKILL)
        node.wait(10)
        jobs += [(await client.submit(SubmitJob(kind="ask", workspace=SHOP, prompt=f"after the node {i}"))).id
                 for i in range(3)]
        await wait_for(lambda: all_ended(client, jobs, [failover]), "every job's end on the failover stream", 90)
        result = await tally(client, jobs, [failover])
        assert (result.submitted, result.lost, result.lost_events, result.duplicated_events) == (9, 0, 0, 0), \
            "\n".join(result.missed) or result
    finally:
        await failover.stop()
        await failover.client.close()
        await client.close()
