"""Workflow shortcuts (Co-Saving): after similar successful runs in which the review loop did
nothing and requirements.txt stayed empty, a new similar job skips both — and still runs the
tests, fixes what they find, and passes. Urgency weighs cost more as the budget runs out."""

from __future__ import annotations

from daemon.agents.model import Loop, Phase, Produces, Until
from daemon.events import EventKind
from daemon.experience.session import JobExperience
from daemon.experience.workflow import StepPlan, plan_step
from daemon.llm.budget import Budget
from tests.experience.conftest import BUGGY_CODE, GOOD_CODE, script_quiet_build

# an unused import: ruff is not clean, so the review loop runs (a program that runs lint-clean gets none)
LINTED, LINTED_BUGGY = (code.replace("import sys\n", "import os\nimport sys\n", 1) for code in (GOOD_CODE, BUGGY_CODE))

REVIEW = Loop("review", Until.FINISHED, (Phase("review_comment", "programmer", "reviewer", "t"),
                                         Phase("review_modify", "reviewer", "programmer", "t", Produces.CODE)))
TESTS = Loop("test", Until.TESTS_PASS, (Phase("test_fix", "tester", "programmer", "t", Produces.CODE),))


def runs(redundant: int, busy: int, tokens: int = 1000) -> list[tuple[float, int, dict]]:
    step = {"tokens": tokens, "calls": 1, "work_cycles": 0, "finished": True, "redundant": True}
    busy_step = {**step, "work_cycles": 1, "redundant": False}
    return [(1.0, i, {"tokens": 10_000, "steps": {"loop:review": step if i < redundant else busy_step}})
            for i in range(redundant + busy)]


def test_urgency_skips_a_likely_redundant_step_only_when_the_budget_runs_low():
    history = runs(redundant=3, busy=1)  # redundant 3 times in 4; a tenth of a typical job's tokens
    calm = plan_step(REVIEW, history, budget=Budget(tokens=20_000), min_support=2, urgency=4.0)
    assert calm is None or calm.cycles != 0
    late = Budget(tokens=20_000, used_tokens=17_000)
    plan = plan_step(REVIEW, history, budget=late, min_support=2, urgency=4.0)
    assert plan is not None and plan.cycles == 0 and "75% of 4 similar runs" in plan.reason
    always = plan_step(REVIEW, runs(redundant=3, busy=0), budget=None, min_support=2, urgency=4.0)
    assert always is not None and always.cycles == 0
    assert plan_step(REVIEW, runs(redundant=1, busy=0), budget=None, min_support=2, urgency=4.0) is None  # support
    assert plan_step(TESTS, runs(redundant=5, busy=0), budget=late, min_support=2, urgency=4.0) is None


async def test_a_similar_job_skips_what_was_redundant_but_never_the_tests(fake_llm, gateway, run_job, recorder):
    for number, task in enumerate(["a CLI that counts the words in a file",
                                   "a CLI that counts the words in a text file"]):
        script_quiet_build(fake_llm, LINTED)
        outcome, experience = await run_job(task, job_id=f"job-{number}")
        assert outcome.ok and experience.record.steps["loop:review"]["redundant"]
        await experience.mine(gateway)
        fake_llm.reset()
    recorder.events.clear()

    script_quiet_build(fake_llm, LINTED_BUGGY)  # this time the tests find a bug
    outcome, experience = await run_job("a CLI that counts the words in files", job_id="job-3")
    assert outcome.ok, outcome.error
    assert not fake_llm.prompts_containing("Give the ONE most important problem")  # the review loop was skipped
    assert not fake_llm.prompts_containing("Write requirements.txt")
    skipped = [e.data for e in recorder.of(EventKind.PHASE_FINISHED) if e.data.skipped]
    assert [s.phase for s in skipped] == ["environment"]
    # the environment phase is skipped by its chain rule (only standard-library imports), the review loop by experience
    assert {p.step for p in experience.plans} == {"loop:review"}
    notes = [e.data.text for e in recorder.of(EventKind.LOG) if e.data.experience]
    assert any("loop 'review' did nothing in 100% of 2 similar runs" in n for n in notes)
    # the tests still ran, failed, the failure reached the programmer, and the fix passed
    assert [e.data.ok for e in recorder.of(EventKind.TOOL_RUN) if e.data.tool == "tests"][:2] == [False, True]
    assert fake_llm.prompts_containing("The program fails when it runs:")
    assert outcome.test_report.ok
    assert "README.md" in outcome.change.files


class SkipEverything(JobExperience):
    """A hook that would skip every loop it is offered: the runner must not offer the tests."""

    offered: list[str]

    async def plan_loop(self, spec, chain, loop):
        self.offered = [*getattr(self, "offered", []), loop.name]
        return StepPlan(f"loop:{loop.name}", cycles=0, reason="greedy")


async def test_the_runner_never_offers_the_test_loop_for_skipping(fake_llm, run_job, store, recorder):
    script_quiet_build(fake_llm, BUGGY_CODE)
    greedy = SkipEverything(store, job_id="job-g")
    outcome, _ = await run_job("a CLI that counts the words in a file", job_id="job-g", experience=greedy)
    assert greedy.offered == ["completion", "review"]  # the test loop is never offered
    assert outcome.ok and outcome.test_report.ok
    assert [e.data.ok for e in recorder.of(EventKind.TOOL_RUN) if e.data.tool == "tests"] == [False, True]
