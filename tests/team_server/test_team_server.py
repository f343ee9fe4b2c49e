"""The team server end to end: PostgreSQL, two API nodes, three worker processes, real HTTP with
per-person tokens.

The first test is the issue's (#21): 50 jobs from the three adapters for real, on one cluster — 2
from the ``troupe`` command (subprocesses, one per node; each follows its job and prints the
answer), 23 from the language server (a subprocess with ada's clone of the workspace's remote as
its folder, mapped by the server to /team/shop; ``troupe.ask`` on a selection, followed with
work-done progress) and 25 from the Slack bot (app_mentions in CSHOP, the channel the config maps
to shop; signed requests, the fake Slack Web API, the bot's token acting for ada). The CLI's first
job checkpoints a phase and holds; its worker is SIGKILLed there. Every job must end succeeded,
with its events seq 1..N each once on both nodes' workspace streams and in the store, each phase
once, the killed one resumed from its checkpoint on another worker; and every adapter must show
its person the end (the CLI's output, the editor's progress end and message, Slack's reaction and
answer in the thread). The jobs run the scripted executor (tests/daemon/executors.py), which reads
what to do from the prompt; the agent engine against the fake model is bench/team_server.py's."""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from daemon.api.protocol import FINAL_STATES, JobInfo, JobOptions, StreamEvent, SubmitJob
from daemon.client import DaemonError
from tests.lsp.conftest import until, uri_of
from tests.team_server import adapters
from tests.team_server.conftest import TeamCluster

SHOP = "/team/shop"
TAGS = {"cli": [f"[cli-{i:02}]" for i in range(2)], "editor": [f"[editor-{i:02}]" for i in range(23)],
        "slack": [f"[slack-{i:02}]" for i in range(25)]}
JOBS = sum(len(tags) for tags in TAGS.values())  # 50
VICTIM = "scripted(phases=3,hold=120)"  # tests/daemon/executors.py: one phase, hold (killed), two more


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


def _tagged(jobs: list[JobInfo], tag: str) -> JobInfo | None:
    return next((job for job in jobs if tag in str(job.request.get("prompt", ""))), None)


async def _asked(client: Any, tag: str) -> JobInfo | None:
    """The job whose prompt carries ``tag`` (each adapter's prompts are tagged [cli-00], [editor-07]…)."""
    return _tagged(await client.jobs(workspace=SHOP, limit=200), tag)


async def _record(client: Any, into: dict[str, list[StreamEvent]]) -> None:
    """The workspace's stream on one node (from the start of its history), by job."""
    async for _, event in client._sse("/events", "stale-0", workspace=SHOP):
        if event.job_id:
            into.setdefault(event.job_id, []).append(event)


def _ended(events: list[StreamEvent]) -> bool:
    return any(e.kind == "job_state" and e.data.get("state") in FINAL_STATES for e in events)


async def test_50_jobs_from_cli_editor_and_slack_all_end_with_each_event_once_on_both_nodes_when_a_worker_is_killed(
        team: TeamCluster, tmp_path: Path) -> None:
    ada = team.tokens["ada"]
    nodes = [team.client(url, ada) for url in team.urls]
    seen: list[dict[str, list[StreamEvent]]] = [{}, {}]
    streams = [asyncio.create_task(_record(node, into)) for node, into in zip(nodes, seen, strict=True)]
    clone = tmp_path / "shop"  # ada's clone of the workspace's remote, open in her editor
    subprocess.run(["git", "clone", "-q", str(team.remote), str(clone)], check=True)
    app = clone / "app.py"
    # the CLI's first job checkpoints one phase and holds on its worker, which is killed; the CLI's
    # other job runs meanwhile, the editor's and Slack's come while the workers find the dead one
    victim_cli = await adapters.troupe(team, team.urls[0], ada, "ask", "-w", SHOP,
                                       f"{VICTIM} where is add? {TAGS['cli'][0]}")
    clis = [await adapters.troupe(team, team.urls[(i + 1) % 2], ada, "ask", "-w", SHOP, f"where is add? {tag}")
            for i, tag in enumerate(TAGS["cli"][1:])]
    try:
        victim = await _wait(lambda: _asked(nodes[0], TAGS["cli"][0]), "the CLI's first job")
        await _wait(lambda: _holding(nodes[0], victim.id), "the CLI's first job to checkpoint and hold")
        worker = team.running_on(victim.id)
        assert worker is not None
        team.kill9(worker)  # in the middle of the job: one phase done, two to go
        async with (adapters.editor(tmp_path / "lsp", clone, team.urls[1], ada) as editor,
                    adapters.slack_bot(tmp_path, team.urls[0], team.tokens["slack-bot"]) as slack):
            await editor.registered(Path(SHOP))  # the language server mapped ada's clone to /team/shop
            editor.open(app, app.read_text())
            whole = {"start": {"line": 0, "character": 0}, "end": {"line": 1, "character": 0}}
            asked, mentions = await asyncio.gather(
                asyncio.gather(*(editor.command("troupe.ask", {
                    "prompt": f"what does this do? {tag}", "file": uri_of(app), "selection": whole})
                    for tag in TAGS["editor"])),
                asyncio.gather(*(slack.mention(f"what does add do? {tag}", channel="CSHOP")
                                 for tag in TAGS["slack"])))

            # each adapter shows its person the end: the CLI prints it, the editor ends the progress
            # and shows the answer, Slack reacts on the mention and posts the answer in its thread
            outputs = await asyncio.wait_for(asyncio.gather(*(p.communicate() for p in [victim_cli, *clis])), 120)
            for tag, proc, (out, err) in zip(TAGS["cli"], [victim_cli, *clis], outputs, strict=True):
                assert proc.returncode == 0, (tag, err.decode(), team.logs())
                assert "echo: " in out.decode() and tag in out.decode(), out.decode()
                assert " succeeded (" in out.decode(), out.decode()  # "ask job 1a2b3c4d succeeded (no model calls)"
            ids = {str(answer["jobId"]) for answer in asked}
            def finished() -> dict[str, Any] | None:
                done = {n.job.id: n.job for n in editor.notifications("troupe/jobFinished")}
                return done if done.keys() >= ids else None

            ended = await until(finished, 120, "the editor's jobs to finish")
            assert {ended[i].state for i in ids} == {"succeeded"}
            for job_id in ids:  # the progress the editor showed ended with the job's state
                (token,) = [t for t in editor.client.progress_reports if job_id in str(t)]
                assert editor.client.progress_reports[token][-1].message == "succeeded"
            for tag in TAGS["editor"]:  # the answer, shown after the end
                await until(lambda tag=tag: [m for m in editor.shown("Troupe: echo: ") if tag in m], 30, tag)
            # the language server's own stream (every workspace shared with ada) held all along
            assert (await editor.status()).daemon == "connected" and not editor.shown("cannot reach"), \
                editor.client.messages
            for (ts, _), tag in zip(mentions, TAGS["slack"], strict=True):
                assert "white_check_mark" in await slack.finished(ts, 120)
                thread = [m for (channel, _), m in slack.slack.messages.items()
                          if channel == "CSHOP" and m.get("thread_ts") == ts]
                assert any("echo: " in json.dumps(m) and tag in json.dumps(m) for m in thread), (tag, thread)

        jobs = await nodes[0].jobs(workspace=SHOP, limit=200)
        mine = {tag: _tagged(jobs, tag) for tags in TAGS.values() for tag in tags}
        assert all(mine.values()) and len({job.id for job in mine.values() if job}) == JOBS
        assert {mine[tag].id for tag in TAGS["editor"] if mine[tag]} == ids
        assert {str(mine[tag].request["files"]) for tag in TAGS["editor"] if mine[tag]} == {"['app.py']"}
        await _wait(lambda: _all_streamed(seen, ids=[job.id for job in mine.values() if job]),
                    "every job's end on both nodes' streams")
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=team.remote, capture_output=True, text=True,
                              check=True).stdout.strip()
        for tag, job in mine.items():
            assert job is not None
            info = await nodes[0].job(job.id)
            assert info.state == "succeeded", (tag, info.state, info.error, team.logs())
            assert info.request["options"]["commit"] == head  # run on a checkout of the remote's commit
            stored = (await nodes[1].event_list(job.id)).events
            assert [e.seq for e in stored] == list(range(1, len(stored) + 1))
            for node in seen:  # each event once, in order, on both nodes
                assert [e.seq for e in node[job.id]] == [e.seq for e in stored], tag
            phases = ["phase1", "phase2", "phase3"] if job.id == victim.id else ["phase1"]
            assert [e.phase for e in stored if e.kind == "phase_finished"] == phases  # each phase's work once:
            # the resumed job went on after its checkpoint, and no other job ran twice
            notes = [str(e.data.get("text")) for e in stored if e.kind == "log"]
            if job.id == victim.id:
                assert any(note.startswith("the worker running this job stopped; resuming") for note in notes)
                assert info.result is not None and info.result["resumed_from"] == 1  # from its checkpoint
            else:
                assert not any("stopped" in note for note in notes), (tag, notes)
    finally:
        for task in streams:
            task.cancel()
        await asyncio.gather(*streams, return_exceptions=True)
        for node in nodes:
            await node.close()


async def _all_streamed(seen: list[dict[str, list[StreamEvent]]], *, ids: list[str]) -> bool:
    return all(_ended(node.get(job_id, [])) for node in seen for job_id in ids)


async def test_a_job_cancelled_on_one_node_is_stopped_on_the_worker_running_it(team: TeamCluster) -> None:
    ada = [team.client(url, team.tokens["ada"]) for url in team.urls]
    try:
        job = await ada[0].submit(SubmitJob(kind="ask", workspace=SHOP, prompt="wait",
                                            options=JobOptions(script={"phases": 2, "hold": 120})))
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
                                            options=JobOptions(script={"ask": "which file?"})))

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


async def test_an_editor_clone_maps_to_the_workspace_of_its_remote_and_the_stream_carries_only_those_shared(
        team: TeamCluster) -> None:
    ada = team.client(team.urls[0], team.tokens["ada"])
    eve = team.client(team.urls[1], team.tokens["eve"])
    try:
        # both workspaces are cloned from one remote: each person gets the one shared with them
        assert (await ada.register_workspace("/home/ada/shop", remote=f"{team.remote}.git/")).root == SHOP
        assert (await eve.register_workspace("/home/eve/vault", remote=str(team.remote))).root == "/team/vault"
        for body, status in (({"remote": "git@elsewhere:other.git"}, 403), ({}, 400)):
            with pytest.raises(DaemonError) as caught:
                await ada.register_workspace("/home/ada/other", **body)
            assert caught.value.status == status, caught.value
        # the stream without ?workspace= (the language server's): eve's carries her job, none of ada's
        shop = await ada.submit(SubmitJob(kind="ask", workspace=SHOP, prompt="ada's"))
        await _follow(ada, shop.id)
        vault = await eve.submit(SubmitJob(kind="ask", workspace="/team/vault", prompt="eve's"))
        streams: list[list[StreamEvent]] = [[], []]
        for client, into, last in ((eve, streams[1], vault.id), (ada, streams[0], shop.id)):
            async for _, event in client._sse("/events", "stale-0"):  # from the start of the node's history
                into.append(event)
                if event.job_id == last and event.kind == "job_state" and event.data["state"] in FINAL_STATES:
                    break
        assert {e.workspace for e in streams[1]} == {"/team/vault"}
        assert shop.id in {e.job_id for e in streams[0]} and "/team/vault" not in {e.workspace for e in streams[0]}
    finally:
        await ada.close()
        await eve.close()
