"""Typed payloads and job progress, computed once by the daemon: every event carries the job's
progress after it, every JobInfo carries it, and data that does not fit its kind is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from daemon.api.protocol import JobOptions, ProtocolError, StreamEvent, SubmitJob
from daemon.jobs.progress import advance
from daemon.payloads import PAYLOADS, JobProgress, PayloadError, QuestionData, UsageData, job_result, payload
from tests.daemon.conftest import DaemonProcess, wait_for


def test_every_event_kind_reads_as_its_own_record() -> None:
    assert isinstance(payload("usage", {"model": "m", "prompt_tokens": 3, "completion_tokens": 2}), UsageData)
    question = payload("question", {"question_id": "q1", "text": "Which database?"})
    assert isinstance(question, QuestionData) and question.for_person  # "to" defaults to the person
    assert not payload("question", {"question_id": "q2", "text": "?", "to": "instructor"}).for_person
    assert set(PAYLOADS) >= {"job_state", "usage", "finding", "log", "watch", "connection"}


def test_data_of_the_wrong_type_is_refused_naming_the_field() -> None:
    with pytest.raises(PayloadError, match=r"usage event data: prompt_tokens: Expected `int`, got `str`"):
        payload("usage", {"prompt_tokens": "5"})
    with pytest.raises(ProtocolError, match="tool_run event data: ok: Expected `bool`"):
        StreamEvent.from_json({"kind": "tool_run", "data": {"tool": "tests", "ok": "yes"}})
    with pytest.raises(PayloadError, match=r"job result: test_report\.failed: Expected `int`"):
        job_result({"test_report": {"ok": False, "failed": "two"}})


def test_progress_follows_phase_role_tokens_and_the_pending_question() -> None:
    p = advance(JobProgress(), "job_state", {"state": "running"})
    p = advance(p, "phase_started", {"phase": "coding"}, phase="coding", role="programmer")
    p = advance(p, "usage", {"prompt_tokens": 10, "completion_tokens": 5, "cost": 0.5, "cached_prompt_tokens": 8},
                role="programmer")
    p = advance(p, "usage", {"prompt_tokens": 1, "completion_tokens": 1, "cost": 0.25}, role="reviewer")
    assert (p.state, p.phase, p.role, p.tokens, p.cost) == ("running", "coding", "reviewer", 17, 0.75)
    assert p.cached_tokens == 8
    asked = advance(p, "question", {"question_id": "q1", "text": "Which database?", "to": "human"})
    assert asked.question is not None and asked.question.text == "Which database?"
    assert advance(asked, "question", {"question_id": "q2", "text": "?", "to": "instructor"}).question == asked.question
    assert advance(asked, "answer", {"question_id": "q1", "text": "postgres"}).question is None
    done = advance(advance(p, "phase_finished", {"phase": "coding"}), "job_state", {"state": "succeeded"})
    assert (done.phases_done, done.state) == (1, "succeeded")


async def test_every_event_and_the_job_carry_the_progress_the_daemon_computed(
        daemon: DaemonProcess, repo: Path) -> None:
    async with daemon.client() as client:
        job = await client.submit(SubmitJob(kind="ask", workspace=str(repo), prompt="hi",
                                            options=JobOptions(script={"phases": 2, "ask": "Which database?"})))
        waiting = await wait_for(client, job.id, states=("waiting_for_answer",))
        await client.answer(job.id, "postgres")
        events = [e async for e in client.events(job.id)]
        replayed = (await client.event_list(job.id, after=3)).events
        done = await client.job(job.id)
    assert waiting.progress.question is not None and waiting.progress.question.text == "Which database?"
    assert waiting.progress.tokens == 30 and waiting.progress.phases_done == 2
    tokens = [e.progress.tokens for e in events if e.progress is not None]
    assert tokens[0] == 0 and tokens[-1] == 30 and tokens == sorted(tokens)
    asked = next(e for e in events if e.kind == "question")
    assert asked.progress is not None and asked.progress.question is not None
    assert events[-1].progress is not None and events[-1].progress.state == "succeeded"
    assert events[-1].progress.question is None and events[-1].progress.phase == "phase2"
    assert [e.progress for e in replayed] == [e.progress for e in events if (e.seq or 0) > 3]
    assert done.progress.state == "succeeded" and done.progress.tokens == 30
