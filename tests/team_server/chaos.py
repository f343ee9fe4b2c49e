"""Faults for a team server under test, shared by tests/team_server/test_chaos.py and
bench/team_chaos.py: a PostgreSQL of its own (so it can be stopped without the other tests'),
an outage of it, a worker SIGKILLed in a loop and started again, and recorders of the event
streams that reconnect with ``Last-Event-ID`` and count what each saw (lost and duplicated events
are counted against the store, which is the record)."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from daemon.api.protocol import FINAL_STATES, JobInfo, StreamEvent
from daemon.client import DaemonClient, DaemonError
from tests.fixtures.postgres import PostgresServer, _binaries, _has_user
from tests.team_server.conftest import TeamCluster

SHOP = "/team/shop"


def own_postgres(folder: Path) -> PostgresServer:
    """A started PostgreSQL cluster in ``folder`` (stop it with ``.stop()``)."""
    folder.mkdir(parents=True, exist_ok=True)
    folder.parent.chmod(0o711)  # the server's user (not root) goes through to its folder
    run_as = ("postgres" if _has_user("postgres") else "nobody") if os.geteuid() == 0 else None
    pg = PostgresServer(_binaries(), folder, run_as)
    pg.start()
    return pg


def stop_postgres(pg: PostgresServer) -> None:
    """PostgreSQL stopped (fast shutdown: sessions are cut, as by a restart for an upgrade)."""
    if pg._admin is not None:
        pg._admin.close()
        pg._admin = None
    done = pg._run("pg_ctl", "-D", str(pg.data), "-m", "fast", "-w", "stop")
    assert done.returncode == 0, done.stderr


def start_postgres(pg: PostgresServer) -> None:
    """PostgreSQL started again on the same port."""
    options = (f"-c listen_addresses=127.0.0.1 -p {pg.port} -k {pg.folder} -c fsync=off "
               "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200 -c shared_buffers=32MB")
    done = pg._run("pg_ctl", "-D", str(pg.data), "-l", str(pg.folder / "log"), "-w", "-t", "60", "-o", options,
                   "start")
    assert done.returncode == 0, done.stderr


@dataclass
class Probe:
    """API calls made while PostgreSQL is down: each answer's status and how long it took."""

    answers: list[tuple[int, float]] = field(default_factory=list)

    async def run(self, client: DaemonClient, job_id: str, until: asyncio.Event) -> None:
        while not until.is_set():
            started = time.monotonic()
            try:
                await client.job(job_id)
                status = 200
            except DaemonError as exc:
                status = exc.status
            self.answers.append((status, time.monotonic() - started))
            await asyncio.sleep(0.5)


class Recorder:
    """One node's workspace stream, followed as the language server follows it (reconnecting with
    ``Last-Event-ID``, patiently): every job event it saw, in order."""

    def __init__(self, client: DaemonClient) -> None:
        self.client = client
        self.seen: dict[str, list[int]] = {}
        self.ended: set[str] = set()
        self.task = asyncio.create_task(self._follow())

    async def _follow(self) -> None:
        async for event in self.client.watch_events(SHOP, patient=True):
            if event.job_id and event.seq is not None:
                self.seen.setdefault(event.job_id, []).append(event.seq)
                if event.kind == "job_state" and event.data.get("state") in FINAL_STATES:
                    self.ended.add(event.job_id)

    async def stop(self) -> None:
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)


@dataclass
class Tally:
    """What a fault did to the jobs: how many were submitted, ended, lost; events lost and duplicated."""

    submitted: int = 0
    ended: int = 0
    states: dict[str, int] = field(default_factory=dict)
    lost_events: int = 0
    duplicated_events: int = 0
    max_resumes: int = 0
    resumes: int = 0
    missed: list[str] = field(default_factory=list)  # per job and recorder: the seqs it lacks, and what it saw

    @property
    def lost(self) -> int:
        return self.submitted - self.ended


async def tally(client: DaemonClient, jobs: list[str], recorders: list[Recorder]) -> Tally:
    """Each job's state and stored events against what every recorder saw."""
    result = Tally(submitted=len(jobs))
    for job_id in jobs:
        info: JobInfo = await client.job(job_id)
        result.states[info.state] = result.states.get(info.state, 0) + 1
        if info.state in FINAL_STATES:
            result.ended += 1
        stored = (await client.event_list(job_id)).events
        resumes = sum(1 for e in stored if e.kind == "log" and "resuming" in str(e.data.get("text", "")))
        result.resumes += resumes
        result.max_resumes = max(result.max_resumes, resumes)
        expected = [e.seq for e in stored]
        for index, recorder in enumerate(recorders):
            got = recorder.seen.get(job_id, [])
            result.duplicated_events += len(got) - len(set(got))
            result.lost_events += len(set(expected) - set(got))
            if set(expected) - set(got) or len(got) != len(set(got)):
                kinds = {e.seq: f"{e.kind}:{e.data.get('state') or str(e.data.get('text', ''))[:30]}" for e in stored}
                result.missed.append(f"{job_id} on recorder {index}: lacks {sorted(set(expected) - set(got))}, "
                                     f"saw {got}; stored {kinds}")
    return result


async def wait_for(condition: Callable[[], Awaitable[bool]], what: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not await condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.2)


async def not_ended(client: DaemonClient, jobs: list[str], recorders: list[Recorder]) -> str:
    """Which jobs have not ended, in the store or on which recorder (what it saw against what is stored)."""
    lines = []
    for job_id in jobs:
        info = await client.job(job_id)
        stored = [(e.seq, e.kind, e.data.get("state") or e.data.get("text", "")) for e in
                  (await client.event_list(job_id)).events]
        missing = [index for index, r in enumerate(recorders) if job_id not in r.ended]
        if info.state not in FINAL_STATES or missing:
            seen = {index: recorders[index].seen.get(job_id, []) for index in missing}
            lines.append(f"{job_id} {info.state}; not ended on recorders {missing}, which saw {seen}; "
                         f"stored {stored}")
    return "\n".join(lines)


async def all_ended(client: DaemonClient, jobs: list[str], recorders: list[Recorder]) -> bool:
    """Every job is final in the store and its end reached every recorder."""
    try:
        for job_id in jobs:
            if (await client.job(job_id)).state not in FINAL_STATES:
                return False
    except DaemonError:
        return False
    return all(set(jobs) <= r.ended for r in recorders)


async def connected(client: DaemonClient, *recorders: Recorder) -> str:
    """Once the ``recorders``' streams are open: each has seen a job submitted after they started end
    (that job's id is returned).
    A stream shows each job's events from the first one it saw on, so one opened after a job began is
    not expected to have that job's earlier events (and one still opening misses a job's first)."""
    from daemon.api.protocol import SubmitJob

    probe = await client.submit(SubmitJob(kind="ask", workspace=SHOP, prompt="scripted(phases=1,sleep=0) probe"))

    async def seen() -> bool:
        return all(probe.id in recorder.ended for recorder in recorders)
    await wait_for(seen, "the streams to open", 60)
    return probe.id


class KillLoop:
    """One worker SIGKILLed every ``every`` seconds (the workers in turn), each started again at once
    under a new name (a fresh process, as a supervisor restarts a crashed host's worker)."""

    def __init__(self, cluster: TeamCluster, every: float) -> None:
        self.cluster, self.every = cluster, every
        self.kills = 0

    async def run(self, duration: float) -> None:
        deadline = time.monotonic() + duration
        while time.monotonic() < deadline:
            await asyncio.sleep(self.every)
            alive = [name for name, proc in self.cluster.workers.items() if proc.poll() is None]
            busy = [name for name in alive if any((self.cluster.folder / "cache" / name / "jobs").glob("*"))]
            victim = (busy or alive)[self.kills % len(busy or alive)]
            proc = self.cluster.workers.pop(victim)
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
            self.kills += 1
            self.cluster.start_worker(f"{victim.split('r')[0]}r{self.kills}")


def state_of(event: StreamEvent) -> str | None:
    return str(event.data.get("state")) if event.kind == "job_state" else None
