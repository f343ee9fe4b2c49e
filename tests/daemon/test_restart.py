"""Nothing is silently lost: ``kill -9`` or ``troupe down`` mid-job, restart, and every job is
resumed or failed with its reason; finished work, findings and questions are intact."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from daemon.api.protocol import JobOptions, SubmitJob
from tests.daemon.conftest import wait_for


def slow(repo: Path, **options: Any) -> SubmitJob:
    return SubmitJob(kind="ask", workspace=str(repo), prompt="take your time",
                     options=JobOptions(script={"phases": 3, "sleep": 0.4, **options}))


async def wait_event(client: Any, job_id: str, kind: str, text: str = "") -> None:
    for _ in range(400):
        if any(e.kind == kind and str(e.data.get("text", "")).startswith(text)
               for e in (await client.event_list(job_id)).events):
            return
        await asyncio.sleep(0.025)
    raise AssertionError(f"job {job_id} never emitted {kind}")


async def _finished_review(client: Any, repo: Path) -> str:
    review = await client.submit(SubmitJob(kind="review", workspace=str(repo), files=["app.py"]))
    return (await wait_for(client, review.id)).id


async def test_kill_9_mid_job_then_restart_fails_it_with_the_reason(make_daemon: Any, repo: Path) -> None:
    daemon = make_daemon().start()
    async with daemon.client() as client:
        review_id = await _finished_review(client, repo)
        job = await client.submit(slow(repo, sleep=1.0))
        await wait_event(client, job.id, "phase_finished")
    daemon.kill9()

    daemon.start()
    async with daemon.client() as client:
        failed = await client.job(job.id)
        review = await client.job(review_id)
        findings = await client.findings(str(repo))
        events = (await client.event_list(job.id)).events
    assert failed.state == "failed"
    assert failed.error.startswith("daemon stopped while the job was running (last finished phase: phase1")
    assert "submit it again" in failed.error
    assert events[-1].data == {"state": "failed", "error": failed.error}
    assert review.state == "succeeded" and review.result["findings"] == 1
    assert [f.message for f in findings] == ["scripted review of app.py"]


async def test_kill_9_mid_job_then_restart_resumes_it_after_its_last_phase(make_daemon: Any, repo: Path) -> None:
    daemon = make_daemon().start(TROUPE_TEST_RESUMABLE="1")
    async with daemon.client() as client:
        job = await client.submit(slow(repo, hold=60))
        # after phase1's checkpoint is stored (its phase_finished event comes just before the write)
        await wait_event(client, job.id, "log", "holding")
    daemon.kill9()

    daemon.start()
    async with daemon.client() as client:
        done = await wait_for(client, job.id)
        events = (await client.event_list(job.id)).events
    assert done.state == "succeeded"
    assert done.result["resumed_from"] >= 1  # the finished phases were not run again
    assert any(e.kind == "log" and "resuming (last finished phase: phase" in e.data["text"] for e in events)
    assert any(e.kind == "job_state" and e.data.get("resumed") for e in events)


async def test_a_question_survives_a_restart_and_its_answer_finishes_the_job(make_daemon: Any, repo: Path) -> None:
    daemon = make_daemon().start(TROUPE_TEST_RESUMABLE="1")
    async with daemon.client() as client:
        job = await client.submit(SubmitJob(kind="ask", workspace=str(repo), prompt="build it",
                                            options=JobOptions(script={"ask": "SQLite or Postgres?"})))
        await wait_for(client, job.id, states=("waiting_for_answer",))
    daemon.kill9()

    daemon.start()
    async with daemon.client() as client:
        waiting = await client.job(job.id)
        assert waiting.state == "waiting_for_answer" and waiting.question.text == "SQLite or Postgres?"
        await client.answer(job.id, "SQLite", waiting.question.question_id)
        done = await wait_for(client, job.id)
        questions = [e for e in (await client.event_list(job.id)).events if e.kind == "question"]
    assert done.state == "succeeded" and done.result["human_said"] == "SQLite"
    assert len(questions) == 1  # the re-run got the stored answer instead of asking again


async def test_graceful_stop_checkpoints_running_jobs_and_the_next_start_resumes_them(
        make_daemon: Any, repo: Path) -> None:
    daemon = make_daemon().start(TROUPE_TEST_RESUMABLE="1", TROUPE_JOBS_CONCURRENCY="1")
    async with daemon.client() as client:
        await client.register_workspace(str(repo))
        job = await client.submit(slow(repo))
        queued = await client.submit(slow(repo, phases=1, sleep=0))
        await wait_for(client, job.id, states=("running",))
    assert daemon.stop() == 0
    assert not daemon.socket.exists() and not (daemon.home / "daemon.pid").exists()

    daemon.start()
    async with daemon.client() as client:
        done = [await wait_for(client, j.id) for j in (job, queued)]
        health = await client.health()
    assert [j.state for j in done] == ["succeeded", "succeeded"]
    assert list(health.watch["workspaces"]) == [str(repo.resolve())]  # watching again after the restart


async def test_a_client_following_a_job_reconnects_and_resumes_without_gaps_or_repeats(
        make_daemon: Any, repo: Path) -> None:
    daemon = make_daemon().start(TROUPE_TEST_RESUMABLE="1")
    async with daemon.client(retries=8) as client:
        job = await client.submit(slow(repo, phases=4, sleep=0.3))
        seen: list[Any] = []

        async def follow() -> None:
            async for event in client.events(job.id):
                seen.append(event)

        follower = asyncio.create_task(follow())
        await wait_event(client, job.id, "phase_finished")
        daemon.kill9()
        daemon.start()
        await asyncio.wait_for(follower, 30)
    seqs = [e.seq for e in seen]
    assert seqs == sorted(set(seqs)) and seqs == list(range(1, len(seqs) + 1))
    assert seen[-1].data["state"] == "succeeded"
    assert any(e.data.get("resumed") for e in seen if e.kind == "job_state")
