"""Experience is scoped by repository: a finding a person dismissed in one repository (through the
API, as the editor's "dismiss" and Slack's buttons do) keeps the same finding from coming back
there, and never silences it, nor reaches the reviewer's prompt, in another repository holding the
same code. Through a real daemon (the agent engine, experience on) and the fake LLM; the retrieval
log says why the learning reached each review (``troupe experience used JOB``)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from daemon.client import DaemonClient
from daemon.messages import JobOptions, SubmitJob
from daemon.payloads import LogData
from tests.daemon.conftest import REPO, DaemonProcess, daemon_env, wait_for
from tests.fakes.llm_server import FakeLLM

APP = '''def divide(a, b):
    """a over b."""
    return a / b
'''
MESSAGE = "divide() does not handle b == 0"
FINDING = json.dumps([{"file": "app.py", "start_line": 3, "severity": "major", "message": MESSAGE,
                       "quote": "return a / b"}])
REASON = "b is never 0 here: every caller validates it first"


def reviewer(body: dict[str, Any]) -> str:
    """The reviewer always reports the same finding; every other step has nothing to say."""
    system = " ".join(str(m.get("content")) for m in body.get("messages", []) if m.get("role") == "system")
    return FINDING if "code reviewer" in system else "<INFO> Finished"


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    fake = FakeLLM(default_reply=reviewer).start_in_thread()
    yield fake
    fake.stop_thread()


@pytest.fixture
def daemon(llm: FakeLLM) -> Iterator[DaemonProcess]:
    home = Path(tempfile.mkdtemp(prefix="trs-", dir="/tmp"))
    process = DaemonProcess(home, daemon_env(home, **llm.env(), TROUPE_EXECUTOR="daemon.jobs.engine:EngineExecutor"))
    yield process.start()
    process.kill9()
    shutil.rmtree(home, ignore_errors=True)


def troupe(daemon: DaemonProcess, *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "daemon.cli.main", *args], cwd=REPO, text=True,
                          capture_output=True, env=daemon.env, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def repository(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "app.py").write_text(APP)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


JOBS: list[str] = []  # the reviews' job ids, in order


async def review(client: DaemonClient, repo: Path, options: JobOptions | None = None) -> tuple[list[str], list[int]]:
    """Review app.py in ``repo``: the messages of the findings that job reported (open ones), and the
    learnings its experience notes say kept a finding from being reported again."""
    job = await client.submit(SubmitJob(kind="review", workspace=str(repo), files=["app.py"],
                                        options=options or JobOptions()))
    JOBS.append(job.id)
    done = await wait_for(client, job.id, timeout=60)
    assert done.state == "succeeded", done.error
    reported = [f.message for f in await client.findings(str(repo)) if f.job_id == job.id and f.rule is None]
    notes = [e.payload for e in (await client.event_list(job.id)).events]
    return reported, [n.learning for n in notes if isinstance(n, LogData) and n.learning is not None]


async def test_a_finding_dismissed_in_one_repository_never_silences_it_in_another(
        llm: FakeLLM, daemon: DaemonProcess, tmp_path: Path) -> None:
    JOBS.clear()
    first, other = repository(tmp_path / "first"), repository(tmp_path / "other")
    async with daemon.client() as client:
        for repo in (first, other):
            await client.register_workspace(str(repo), watch=False)
        reported, _ = await review(client, first)
        assert reported == [MESSAGE]
        (finding,) = [f for f in await client.findings(str(first)) if f.message == MESSAGE]
        await client.set_finding_state(finding.id, "dismissed", REASON)  # the editor's "dismiss"
        (learning,) = await client.experience(pool="learning")
        assert learning.workspace == str(first) and REASON in learning.value

        seen = len(llm.requests)
        assert await review(client, first) == ([], [learning.id]), "dismissed here: not reported again"
        assert any(REASON in r.prompt for r in llm.requests[seen:]), "the reviewer was told what was said"

        seen = len(llm.requests)
        assert await review(client, other) == ([MESSAGE], []), "the other repository still hears it"
        assert not any(REASON in r.prompt for r in llm.requests[seen:]), "nor is it told the first one's word"
        assert [e.id for e in await client.experience(pool="learning", workspace=str(other))] == []

        assert await review(client, first) == ([], [learning.id]), "and the first repository still does not"

        # why it reached the first repository's reviews, as the log, the job's notes and the CLI say
        logged = await client.retrievals(job_id=JOBS[1])
        assert [(r.experience_id, r.why, r.pool) for r in logged] == [
            (learning.id, "learning", "learning"), (learning.id, "screening", "learning")]
        shown, screened = logged
        assert shown.matched == ["app.py"] and shown.relevance is None, "a word of this repository's, on this file"
        assert {"divide", "handle"} <= set(screened.matched) and screened.relevance == 1.0, screened
        assert await client.retrievals(job_id=JOBS[2]) == [], "nothing of it reached the other repository"
        notes = [e.payload.text for e in (await client.event_list(JOBS[1])).events
                 if isinstance(e.payload, LogData) and e.payload.text.startswith("experience retrieved:")]
        assert notes == [f"experience retrieved: #{learning.id} learning (matched: app.py)",
                         f"experience retrieved: #{learning.id} screening (relevance 1.00; matched: "
                         + ", ".join(screened.matched) + ")"]
        assert [r.job_id for r in await client.retrievals(experience_id=learning.id)] == [JOBS[3]] * 2 + [JOBS[1]] * 2

    used = troupe(daemon, "experience", "used", JOBS[1])
    assert f"#{learning.id:<5} learning   learning   matched: app.py" in used, used
    assert "screening  relevance 1.00; matched: " in used, used
    assert "no experience reached the prompts of job" in troupe(daemon, "experience", "used", JOBS[2])
    assert f"job {JOBS[3]} review" in troupe(daemon, "experience", "show", str(learning.id)), "where it was used"


async def test_a_dismissal_joins_the_store_its_job_kept_experience_in(
        llm: FakeLLM, daemon: DaemonProcess, tmp_path: Path) -> None:
    """An eval's items are copies of one repository sharing one store (``options.experience_workspace``):
    a person's word on a finding one of them made joins that store, so the copies that read it hear it,
    and a job that keeps its own experience does not."""
    first, second, third, shared = (repository(tmp_path / name) for name in ("first", "second", "third", "store"))
    into_store = JobOptions(experience_workspace=str(shared))
    async with daemon.client() as client:
        for repo in (first, second, third, shared):
            await client.register_workspace(str(repo), watch=False)
        assert await review(client, first, into_store) == ([MESSAGE], [])
        (finding,) = [f for f in await client.findings(str(first)) if f.message == MESSAGE]
        await client.set_finding_state(finding.id, "dismissed", REASON)
        (learning,) = await client.experience(pool="learning")
        assert learning.workspace == str(shared), "kept where the job kept its experience"

        assert await review(client, second, into_store) == ([], [learning.id]), "a copy reading that store"
        assert await review(client, third) == ([MESSAGE], []), "a job keeping its own experience"

        await client.set_finding_state(finding.id, "open")  # reopened: the store forgets it again
        assert await client.experience(pool="learning") == []


async def test_a_job_with_no_repository_reads_only_global_experience(store, tmp_path):
    from daemon.experience.retrieve import ranked

    mine = await store.add_workspace(tmp_path / "mine")
    theirs = await store.add_workspace(tmp_path / "theirs")
    query = "parse the invoice totals"
    local = await store.add_experience("agent", query, "def parse_totals(): ...  # mine", workspace_id=mine.id,
                                       task=query, score=1.0)
    other = await store.add_experience("agent", query, "def parse_totals(): ...  # theirs", workspace_id=theirs.id,
                                       task=query, score=1.0)
    shared = await store.add_experience("agent", query, "def parse_totals(): ...  # global", task=query, score=1.0)
    seen = {e.id for e, _ in await ranked(store, query, pools=["agent"], workspace_id=mine.id, floor=None)}
    assert seen == {local.id, shared.id}  # its repository's and the global ones, never another's
    nowhere = {e.id for e, _ in await ranked(store, query, pools=["agent"], workspace_id=None, floor=None)}
    assert nowhere == {shared.id} and other.id not in nowhere  # no repository: no repository's code
