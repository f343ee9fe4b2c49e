"""The daemon API over its Unix socket: jobs, streams, cancellation, questions, changes, errors."""

from __future__ import annotations

import asyncio
import json
import stat
from pathlib import Path
from typing import Any

import aiohttp

from daemon.api.protocol import JobOptions, SubmitJob
from daemon.client import DaemonError
from tests.daemon.conftest import DaemonProcess, wait_for


async def raw(daemon: DaemonProcess, method: str, path: str, data: bytes | None = None,
              headers: dict[str, str] | None = None) -> tuple[int, Any]:
    connector = aiohttp.UnixConnector(path=str(daemon.socket))
    async with aiohttp.ClientSession(connector=connector) as session, session.request(
            method, f"http://troupe{path}", data=data, headers=headers) as resp:
        return resp.status, await resp.json(content_type=None)


SUBTRACT = JobOptions(script={"path": "app.py", "after": "def add(a, b):\n    return a - b\n"})


def ask(repo: Path, prompt: str = "what is add?", **options: Any) -> SubmitJob:
    return SubmitJob(kind="ask", workspace=str(repo), prompt=prompt, options=JobOptions(script=options or None))


async def test_the_socket_and_home_are_private_to_their_user(daemon: DaemonProcess) -> None:
    assert stat.S_IMODE(daemon.socket.stat().st_mode) == 0o600
    assert stat.S_IMODE(daemon.home.stat().st_mode) == 0o700
    async with daemon.client() as client:
        health = await client.health()
    assert health.api_version == 1 and health.executor == "scripted"


async def test_submit_then_stream_every_event_to_the_final_state(daemon: DaemonProcess, repo: Path) -> None:
    async with daemon.client() as client:
        job = await client.submit(ask(repo, "hello", phases=2))
        assert job.state == "queued" and job.workspace == str(repo)
        events = [e async for e in client.events(job.id)]
        done = await client.job(job.id)
    kinds = [e.kind for e in events]
    assert kinds[0] == "job_state" and events[0].data == {"state": "queued", "title": "ask: hello"}
    assert kinds.count("phase_started") == 2 and kinds.count("phase_finished") == 2
    assert events[-1].data["state"] == "succeeded"
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert done.state == "succeeded" and done.result["answer"] == "echo: hello"


async def test_a_stream_resumes_after_the_last_event_id(daemon: DaemonProcess, repo: Path) -> None:
    async with daemon.client() as client:
        job = await client.submit(ask(repo, phases=3))
        everything = [e async for e in client.events(job.id)]
        resumed = [e async for e in client.events(job.id, after=4)]
    assert [e.seq for e in resumed] == [e.seq for e in everything if e.seq > 4]
    async with aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=str(daemon.socket))) as session:
        headers = {"Accept": "text/event-stream", "Last-Event-ID": str(everything[-2].seq)}
        async with session.get(f"http://troupe/v1/jobs/{job.id}/events", headers=headers) as resp:
            body = (await resp.read()).decode()
    assert resp.headers["Content-Type"].startswith("text/event-stream")
    assert f"id: {everything[-1].seq}\nevent: job_state\n" in body and f"id: {everything[-2].seq}\n" not in body


async def test_cancel_stops_a_running_job_and_the_stream_says_so(daemon: DaemonProcess, repo: Path) -> None:
    async with daemon.client() as client:
        job = await client.submit(ask(repo, sleep=30))
        await wait_for(client, job.id, states=("running",))
        cancelled = await client.cancel(job.id)
        events = [e async for e in client.events(job.id)]
        try:
            await client.cancel(job.id)
        except DaemonError as exc:
            again = exc
    assert cancelled.state == "cancelled" and cancelled.error == "cancelled by the user"
    assert events[-1].data["state"] == "cancelled"
    assert again.status == 409 and "already cancelled" in str(again)


async def test_a_waiting_person_beats_background_reviews(make_daemon: Any, repo: Path) -> None:
    daemon = make_daemon().start(TROUPE_JOBS_CONCURRENCY="1")
    async with daemon.client() as client:
        blocker = await client.submit(ask(repo, "blocker", sleep=0.5))
        await wait_for(client, blocker.id, states=("running",))
        reviews = [await client.submit(SubmitJob(kind="review", workspace=str(repo), files=["app.py"],
                                                 priority="background")) for _ in range(3)]
        question = await client.submit(ask(repo, "urgent"))
        queued_review = await client.submit(SubmitJob(kind="review", workspace=str(repo), files=["app.py"],
                                                      priority="background"))
        cancelled = await client.cancel(queued_review.id)
        finished = [await wait_for(client, j.id) for j in (question, *reviews)]
    assert finished[0].started_at < min(r.started_at for r in finished[1:])
    assert cancelled.state == "cancelled" and cancelled.started_at is None


async def test_a_question_waits_for_the_persons_answer(daemon: DaemonProcess, repo: Path) -> None:
    async with daemon.client() as client:
        job = await client.submit(ask(repo, ask="Which database?"))
        waiting = await wait_for(client, job.id, states=("waiting_for_answer",))
        assert waiting.question is not None and waiting.question.text == "Which database?"
        try:
            await client.answer(job.id, "postgres", question_id="not-this-one")
        except DaemonError as exc:
            wrong = exc
        await client.answer(job.id, "postgres")
        done = await wait_for(client, job.id)
        kinds = [e.kind for e in (await client.event_list(job.id)).events]
    assert wrong.status == 409
    assert done.state == "succeeded" and done.result["human_said"] == "postgres"
    assert kinds.index("question") < kinds.index("answer")


async def test_applying_a_change_after_the_file_moved_on_is_refused_and_writes_nothing(
        daemon: DaemonProcess, repo: Path) -> None:
    target = repo / "app.py"
    async with daemon.client() as client:
        job = await client.submit(SubmitJob(kind="change", workspace=str(repo), prompt="subtract instead",
                                            options=SUBTRACT))
        done = await wait_for(client, job.id)
        change = await client.change(done.result["change_id"])
        assert change.state == "proposed" and "-    return a + b" in change.diff
        target.write_text("def add(a, b):\n    return b + a  # the user's own edit\n")
        try:
            await client.apply_change(change.id)
        except DaemonError as exc:
            conflict = exc
        still = await client.change(change.id)
    assert conflict.status == 409 and "app.py: was modified" in str(conflict) and "nothing written" in str(conflict)
    assert target.read_text() == "def add(a, b):\n    return b + a  # the user's own edit\n"
    assert still.state == "proposed"


async def test_applying_a_change_writes_it_and_records_it(daemon: DaemonProcess, repo: Path) -> None:
    async with daemon.client() as client:
        new_file = {"path": "calc/sub.py", "after": "def sub(a, b):\n    return a - b\n"}
        job = await client.submit(SubmitJob(kind="change", workspace=str(repo), prompt="add sub",
                                            options=JobOptions(script=new_file)))
        change_id = (await wait_for(client, job.id)).result["change_id"]
        applied = await client.apply_change(change_id)
        try:
            await client.discard_change(change_id)
        except DaemonError as exc:
            late = exc
    assert applied.state == "applied" and applied.files == ["calc/sub.py"]
    assert (repo / "calc" / "sub.py").read_text() == "def sub(a, b):\n    return a - b\n"
    assert late.status == 409


async def test_a_change_an_editor_applied_itself_is_recorded_without_writing(daemon: DaemonProcess,
                                                                            repo: Path) -> None:
    async with daemon.client() as client:
        job = await client.submit(SubmitJob(kind="change", workspace=str(repo), prompt="subtract instead",
                                            options=SUBTRACT))
        change_id = (await wait_for(client, job.id)).result["change_id"]
        (repo / "app.py").write_text("def add(a, b):\n    return a - b\n  # as the editor saved it\n")
        recorded = await client.apply_change(change_id, write=False)
    assert recorded.state == "applied" and recorded.files == ["app.py"]
    assert (repo / "app.py").read_text() == "def add(a, b):\n    return a - b\n  # as the editor saved it\n"


async def test_errors_are_json_with_a_message_a_person_can_act_on(make_daemon: Any, repo: Path) -> None:
    daemon = make_daemon().start(TROUPE_API_MAX_BODY="4096")
    status, body = await raw(daemon, "POST", "/v1/jobs", b'{"kind": "ask", "prompt": ')
    assert status == 400 and body["error"]["code"] == "bad_request"
    assert "not valid JSON" in body["error"]["message"]
    status, body = await raw(daemon, "POST", "/v1/jobs", json.dumps({"kind": "ask"}).encode())
    assert status == 400 and "needs a prompt" in body["error"]["message"]
    status, body = await raw(daemon, "GET", "/v1/jobs/no-such-job")
    assert status == 404 and "no job with id 'no-such-job'" in body["error"]["message"]
    for options, said in (({"max_tokens": "many"}, "SubmitJob.options.max_tokens: Expected `int | null`, got `str`"),
                          ({"diff": "--- a/x"}, "options.diff is not an option of an ask job"),
                          ({"teams": 0}, "options.teams must be between 1 and 16, got 0"),
                          ({"tems": 2}, "SubmitJob.options: unknown field(s) tems; known fields are agents")):
        status, body = await raw(daemon, "POST", "/v1/jobs", json.dumps(
            {"kind": "ask", "workspace": str(repo), "prompt": "p", "options": options}).encode())
        assert status == 400 and said in body["error"]["message"], body  # a malformed option, named
    status, body = await raw(daemon, "POST", "/v1/jobs", json.dumps(
        {"kind": "ask", "workspace": str(repo), "prompt": "x" * 10_000}).encode())
    assert status == 413 and body["error"]["code"] == "too_large" and "4,096 bytes" in body["error"]["message"]
    status, body = await raw(daemon, "GET", "/v1/nothing-here")
    assert status == 404 and "no such route" in body["error"]["message"]
    status, body = await raw(daemon, "GET", "/v1/jobs/x/events?after=-1")
    assert status == 404  # the unknown job is reported before the bad cursor
    status, body = await raw(daemon, "POST", "/v1/changes/nope/apply")
    assert status == 404 and body["error"]["code"] == "not_found"
    status, body = await raw(daemon, "GET", "/v1/findings?workspace=/not/registered")
    assert status == 404 and "troupe watch" in body["error"]["message"]
    async with daemon.client() as client:
        assert (await client.health()).pid == daemon.proc.pid  # still serving after all of that


async def test_tcp_needs_the_token_and_a_loopback_host(make_daemon: Any) -> None:
    daemon = make_daemon().start(TROUPE_TCP_PORT="0")
    pid_file = daemon.home / "daemon.pid"
    while not pid_file.exists():  # written once both listeners are up
        await asyncio.sleep(0.02)
    port = json.loads(pid_file.read_text())["tcp_port"]
    token_file = daemon.home / "token"
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    token = token_file.read_text().strip()
    url = f"http://127.0.0.1:{port}/v1/health"
    async with aiohttp.ClientSession() as session:
        async with session.get(url) as resp:
            assert resp.status == 401 and "Bearer" in (await resp.json())["error"]["message"]
        async with session.get(url, headers={"Authorization": "Bearer wrong"}) as resp:
            assert resp.status == 401
        async with session.get(url, headers={"Authorization": f"Bearer {token}", "Host": "evil.example:80"}) as resp:
            assert resp.status == 403 and (await resp.json())["error"]["code"] == "bad_host"
        async with session.get(url, headers={"Authorization": f"Bearer {token}"}) as resp:
            assert resp.status == 200 and (await resp.json())["api_version"] == 1


async def test_the_daemon_wide_stream_carries_every_jobs_events(daemon: DaemonProcess, repo: Path) -> None:
    async with daemon.client() as client:
        seen: list[Any] = []

        async def follow() -> None:
            async for event in client.watch_events(str(repo)):
                seen.append(event)
                if event.kind == "job_state" and event.data.get("state") == "succeeded":
                    return

        follower = asyncio.create_task(follow())
        await asyncio.sleep(0.3)
        await client.register_workspace(str(repo), watch=False)
        job = await client.submit(SubmitJob(kind="review", workspace=str(repo), files=["app.py"]))
        await asyncio.wait_for(follower, 10)
        findings = await client.findings(str(repo), "app.py")
    assert {e.job_id for e in seen} == {job.id}
    assert any(e.kind == "finding" and e.data["file"] == "app.py" for e in seen)
    assert [f.message for f in findings] == ["scripted review of app.py"]


async def test_idle_streams_carry_heartbeat_comments(daemon: DaemonProcess, repo: Path) -> None:
    async with daemon.client() as client:
        job = await client.submit(ask(repo, ask="still there?"))
        await wait_for(client, job.id, states=("waiting_for_answer",))
    connector = aiohttp.UnixConnector(path=str(daemon.socket))
    async with aiohttp.ClientSession(connector=connector) as session, session.get(
            f"http://troupe/v1/jobs/{job.id}/events?after=0", headers={"Accept": "text/event-stream"}) as resp:
        received = b""
        while b": heartbeat" not in received:
            received += await asyncio.wait_for(resp.content.readany(), 5)
    assert b"event: question" in received
