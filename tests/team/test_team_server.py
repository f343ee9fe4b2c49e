"""The team server end to end: PostgreSQL, two API nodes, three worker processes, real HTTP with
per-person tokens. The 50-job run with the agent engine and the fake model is bench/team_server.py."""

from __future__ import annotations

import asyncio
import subprocess
import time
from typing import Any

import pytest

from daemon.api.protocol import FINAL_STATES, StreamEvent, SubmitJob
from daemon.client import DaemonError
from tests.team.conftest import TeamCluster

JOBS = 12
SHOP = "/team/shop"


async def _wait(condition: Any, what: str, timeout: float = 60.0, every: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    while not (found := await condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(every)
    return found


async def _holding(client: Any, job_id: str) -> bool:
    """The job has checkpointed its first phase and waits (tests/daemon/executors.py's ``hold``)."""
    listed = await client.event_list(job_id)
    return any(e.kind == "log" and str(e.data.get("text", "")).startswith("holding") for e in listed.events)


async def _follow(client: Any, job_id: str) -> list[StreamEvent]:
    return [event async for event in client.events(job_id)]


async def test_every_job_ends_with_each_event_once_on_both_nodes_when_a_worker_is_killed_mid_job(
        team: TeamCluster) -> None:
    nodes = [team.client(url, team.tokens["ada"]) for url in team.urls]
    try:
        jobs = [await nodes[i % 2].submit(SubmitJob(
            kind="ask", workspace=SHOP, prompt=f"job {i}",
            options={"phases": 3, "sleep": 0.05, **({"hold": 120} if i == 0 else {})})) for i in range(JOBS)]
        # each job followed live on the node it was not submitted to
        streams = [asyncio.create_task(_follow(nodes[(i + 1) % 2], job.id)) for i, job in enumerate(jobs)]
        victim = jobs[0].id
        await _wait(lambda: _holding(nodes[0], victim), "the first job to checkpoint and hold")
        worker = team.running_on(victim)
        assert worker is not None
        team.kill9(worker)  # in the middle of the job: one phase done, two to go
        try:
            streamed = await asyncio.wait_for(asyncio.gather(*streams), 60)
        except TimeoutError:
            states = [(await nodes[0].job(job.id)).state for job in jobs]
            raise AssertionError(f"streams still open after 60 s (jobs: {states}):\n{team.logs()}") from None

        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=team.remote, capture_output=True, text=True,
                              check=True).stdout.strip()
        for job, events in zip(jobs, streamed, strict=True):
            info = await nodes[0].job(job.id)
            assert info.state == "succeeded", (info.state, info.error, team.logs())
            assert info.request["options"]["commit"] == head  # run on a checkout of the remote's commit
            stored = (await nodes[1].event_list(job.id)).events
            assert [e.seq for e in events] == [e.seq for e in stored] == list(range(1, len(stored) + 1))
            assert [e.phase for e in stored if e.kind == "phase_finished"] == (
                ["phase1", "phase2", "phase3"])  # each phase's work once: the resumed job went on after phase1
            notes = [str(e.data.get("text")) for e in stored if e.kind == "log"]
            if job.id == victim:
                assert any(note.startswith("the worker running this job stopped; resuming") for note in notes)
                assert info.result is not None and info.result["resumed_from"] == 1  # from its checkpoint
            else:
                assert not any("stopped" in note for note in notes), notes
    finally:
        for node in nodes:
            await node.close()


async def test_a_job_cancelled_on_one_node_is_stopped_on_the_worker_running_it(team: TeamCluster) -> None:
    ada = [team.client(url, team.tokens["ada"]) for url in team.urls]
    try:
        job = await ada[0].submit(SubmitJob(kind="ask", workspace=SHOP, prompt="wait",
                                            options={"phases": 2, "hold": 120}))
        await _wait(lambda: _holding(ada[1], job.id), "the job to hold")
        assert team.running_on(job.id) is not None
        cancelled = await ada[1].cancel(job.id)
        assert (cancelled.state, cancelled.error) == ("cancelled", "cancelled by the user")
        events = await _follow(ada[0], job.id)
        assert events[-1].kind == "job_state" and events[-1].data["state"] == "cancelled"
        assert [e.phase for e in events if e.kind == "phase_finished"] == ["phase1"]

        async def checkout_gone() -> bool:
            return team.running_on(job.id) is None

        await _wait(checkout_gone, "the worker to drop the job's checkout")
    finally:
        for client in ada:
            await client.close()


async def test_a_question_asked_on_a_worker_is_answered_on_either_node(team: TeamCluster) -> None:
    ada = [team.client(url, team.tokens["ada"]) for url in team.urls]
    try:
        job = await ada[0].submit(SubmitJob(kind="ask", workspace=SHOP, prompt="fix it",
                                            options={"ask": "which file?"}))

        async def waiting() -> bool:
            return (await ada[1].job(job.id)).state == "waiting_for_answer"

        await _wait(waiting, "the job's question")
        asked = await ada[1].job(job.id)
        assert asked.question is not None and asked.question.text == "which file?"
        await ada[1].answer(job.id, "app.py")
        events = await _follow(ada[0], job.id)
        assert events[-1].data["state"] == "succeeded"
        result = (await ada[0].job(job.id)).result
        assert result is not None and result["human_said"] == "app.py"
        # the workspace's stream (the language server's), read from the start of the node's history
        seen = []
        async for _, event in ada[1]._sse("/events", "stale-0", workspace=SHOP):
            if event.job_id == job.id:
                seen.append(event.seq)
                if event.kind == "job_state" and event.data["state"] in FINAL_STATES:
                    break
        assert seen == [e.seq for e in events]
    finally:
        for client in ada:
            await client.close()


async def test_a_person_without_access_gets_403_for_jobs_findings_changes_and_events(team: TeamCluster) -> None:
    from storage import AsyncStore, FindingDraft

    ada = team.client(team.urls[0], team.tokens["ada"])
    eve = team.client(team.urls[1], team.tokens["eve"])
    store = await AsyncStore.open(team.store_url)
    try:
        job = await ada.submit(SubmitJob(kind="ask", workspace=SHOP, prompt="what does add do?"))
        await _follow(ada, job.id)
        change = await store.propose_change(job.id, "--- a/app.py\n+++ b/app.py\n")
        ws = await store.find_workspace_for(SHOP)
        assert ws is not None
        [finding] = await store.add_findings(ws.id, job.id, "app.py", [FindingDraft("risky", "minor", 1)])

        refused = [
            eve.job(job.id), eve.event_list(job.id), _follow(eve, job.id), eve.cancel(job.id),
            eve.change(change.id), eve.discard_change(change.id), eve.findings(workspace=SHOP),
            eve.set_finding_state(finding.id, "dismissed"), eve.jobs(workspace=SHOP),
            eve.submit(SubmitJob(kind="ask", workspace=SHOP, prompt="let me in")),
            eve.job("no-such-job"),  # ids cannot be probed either
        ]
        for call in refused:
            with pytest.raises(DaemonError) as caught:
                await call
            assert caught.value.status == 403, caught.value
            assert "eve has no access" in str(caught.value)
        # what eve was refused is there, for the person it is shared with
        assert (await ada.job(job.id)).state in FINAL_STATES
        assert (await ada.change(change.id)).id == change.id
        assert [f.message for f in await ada.findings(workspace=SHOP)] == ["risky"]
        assert [w.root for w in await eve.workspaces()] == ["/team/vault"]
        assert [w.root for w in await ada.workspaces(channel="CSHOP")] == [SHOP]  # the Slack bot's channel map
        assert await eve.workspaces(channel="CSHOP") == []
        stranger = team.client(team.urls[0], "trp_not-a-token")
        with pytest.raises(DaemonError) as caught:
            await stranger.health()
        assert caught.value.status == 401
        await stranger.close()
    finally:
        await ada.close()
        await eve.close()
        await store.close()
