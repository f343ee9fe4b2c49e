"""Budgets stop a job with a clear message, cancellation cleans up, and a job resumes from the
checkpoint of its last finished phase."""

from __future__ import annotations

import asyncio
import json

import pytest

from daemon.agents.job import JobSpec
from daemon.events import EventKind
from daemon.llm.budget import Budget
from daemon.payloads import LogData
from tests.agents.conftest import write_tree
from tests.agents.test_bad_output import scratches, script_change
from tests.agents.test_change_chain import CODE, REPO, TASK


async def test_a_spent_budget_stops_the_job_with_a_clear_message(fake_llm, make_runner, recorder, tmp_path):
    repo = write_tree(tmp_path / "repo", REPO)
    script_change(fake_llm, CODE)
    outcome = await make_runner().run(JobSpec(chain="change", task=TASK, workspace=repo, budget=Budget(tokens=300)))
    assert outcome.status == "failed"
    assert outcome.error.startswith("stopped: token budget spent:") and "TROUPE_BUDGET_TOKENS" in outcome.error
    assert len(fake_llm.requests) == 1  # the plan call spent it all; nothing after
    assert recorder.of(EventKind.LOG)[-1].data == LogData(level="error", text=outcome.error)
    assert outcome.usage.tokens > 300


async def test_cancelling_a_job_removes_its_workspace_copy(fake_llm, make_runner, tmp_path):
    repo = write_tree(tmp_path / "repo", REPO)
    fake_llm.latency = 5.0
    job = asyncio.create_task(make_runner().run(JobSpec(chain="change", task=TASK, workspace=repo)))
    while not fake_llm.requests:
        await asyncio.sleep(0.02)
    assert len(scratches(tmp_path / "scratches")) == 1
    job.cancel()
    with pytest.raises(asyncio.CancelledError):
        await job
    assert scratches(tmp_path / "scratches") == []


async def test_a_job_resumes_after_its_last_finished_phase(fake_llm, make_runner, recorder, tmp_path):
    repo = write_tree(tmp_path / "repo", REPO)
    script_change(fake_llm, CODE)
    saved: list[tuple[str, dict]] = []

    async def save(phase: str, checkpoint: dict) -> None:
        saved.append((phase, json.loads(json.dumps(checkpoint))))  # what the store keeps: JSON

    first = await make_runner(on_checkpoint=save).run(JobSpec(chain="change", task=TASK, workspace=repo))
    assert first.status == "succeeded", first.error
    # the plan, the code, then the end of each loop (review, rewrite, test)
    assert [phase for phase, _ in saved] == ["plan", "code", "review_comment", "review_comment", "review_comment"]
    after_code = saved[1][1]
    assert after_code["next"] == [4, 0, 0] and after_code["last_phase"] == "code"
    assert set(after_code["files"]) == {"pkg_a/greet.py", "pkg_b/shout.py", "tests/test_greet.py"}

    # a restarted daemon: a fresh runner, the saved checkpoint, no plan or code calls again
    calls_before = len(fake_llm.requests)
    recorder.events.clear()
    resumed = await make_runner().run(JobSpec(chain="change", task=TASK, workspace=repo, resume_from=after_code))
    assert resumed.status == "succeeded", resumed.error
    assert recorder.phases_finished() == ["review_comment"]
    assert len(fake_llm.requests) == calls_before + 1
    assert resumed.change is not None and resumed.change.diff == first.change.diff
    assert resumed.conclusions["plan"] == first.conclusions["plan"]
    assert resumed.test_report.ok
    assert [s.hash for s in resumed.code_states][:2] == [s.hash for s in first.code_states][:2]
    assert resumed.usage.calls == first.usage.calls  # the earlier run's usage is carried over


async def test_a_checkpoint_of_another_chain_is_refused(make_runner, tmp_path):
    repo = write_tree(tmp_path / "repo", REPO)
    outcome = await make_runner().run(JobSpec(chain="change", task=TASK, workspace=repo,
                                              resume_from={"version": 1, "chain": "build", "next": [0, 0, 0]}))
    assert outcome.status == "failed"
    assert outcome.error == "cannot resume: the checkpoint is for chain 'build', not 'change'"


async def test_unknown_chain_and_missing_workspace_are_clear_errors(make_runner, tmp_path):
    outcome = await make_runner().run(JobSpec(chain="deploy", task="x"))
    assert outcome.status == "failed" and outcome.error.startswith("no chain named 'deploy' (known: ask, build")
    outcome = await make_runner().run(JobSpec(chain="review", task="x"))
    assert outcome.error == "the 'review' chain works on a repository, but the job names none"


async def test_a_broken_repo_chain_fails_the_job_with_file_and_line(make_runner, tmp_path):
    repo = write_tree(tmp_path / "repo", {**REPO, ".troupe/chains/review.toml": 'name = "review"\nsteps = 3\n'})
    outcome = await make_runner().run(JobSpec(chain="review", task="x", workspace=repo))
    assert outcome.status == "failed"
    assert outcome.error == f"{repo}/.troupe/chains/review.toml:2: 'steps' must be list, got 3"
