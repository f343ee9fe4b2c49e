"""The puppeteer: a heuristic that picks the next agent from the run's state, a learned policy
that REINFORCE moves toward rewarded (and cheaper) agents, its parameters versioned in the store,
and both driving a real chain's loops against the fake LLM server."""

from __future__ import annotations

import random
from pathlib import Path

from daemon.agents.context import RunContext
from daemon.agents.job import JobSpec
from daemon.agents.loader import load_chain_file
from daemon.agents.model import ChainSet
from daemon.events import EventKind
from daemon.teams.policy import FINISH, Episode, LinearPolicy, State, heuristic, new_params, reinforce, reward
from daemon.teams.puppeteer import PolicyBook
from daemon.teams.run import TeamsRunner
from storage import AsyncStore
from tests.teams.conftest import MINI_CHAIN, mini_chains, program

KINDS = (("complete", "no_placeholders"), ("review", "finished"), ("test", "tests_pass"))


def state(**changes) -> State:  # type: ignore[no-untyped-def]
    base = {"last_action": "start", "last_agent": "none", "tests": "unknown", "placeholders": 0, "open_findings": 0,
            "tokens": 0, "turn": 0, "max_turns": 9, "available": ("complete", "review", "test", FINISH),
            "kinds": KINDS}
    return State(**{**base, **changes})


def test_the_heuristic_finishes_placeholders_then_tests_then_review_then_stops() -> None:
    assert heuristic(state(placeholders=2)) == "complete"
    assert heuristic(state(tests="fail")) == "test"
    assert heuristic(state(tests="unknown")) == "test"
    assert heuristic(state(tests="pass")) == "review"
    assert heuristic(state(tests="pass", available=("complete", "test", FINISH))) == FINISH


def test_one_update_moves_probability_toward_the_rewarded_agent() -> None:
    s = state(tests="pass")
    policy = LinearPolicy(new_params(), rng=random.Random(0))
    before = policy.probabilities(s.features(), s.available, heuristic(s))
    step = policy.choose(s)
    step.action = "complete"  # the scripted environment: this agent acted, and the job succeeded
    params = reinforce(policy.params, Episode([step]), reward(True, 1_000))
    after = LinearPolicy(params).probabilities(s.features(), s.available, heuristic(s))
    assert after["complete"] > before["complete"]
    assert sum(after.values()) == 1.0 or abs(sum(after.values()) - 1.0) < 1e-9
    punished = reinforce(params, Episode([step]), reward(False, 30_000))
    assert LinearPolicy(punished).probabilities(s.features(), s.available, heuristic(s))["complete"] < \
        after["complete"]


def test_reinforce_learns_to_prefer_the_cheaper_agent_when_both_succeed() -> None:
    # Toy task: "quick" and "rewrite" both make the job succeed; "rewrite" costs 8x the tokens.
    # The heuristic prefers "rewrite" (the failing tests' loop), so learning must overcome its prior.
    kinds = (("quick", "finished"), ("rewrite", "tests_pass"))
    s = state(tests="fail", available=("quick", "rewrite", FINISH), kinds=kinds)
    tokens = {"quick": 1_000, "rewrite": 8_000, FINISH: 0}
    policy = LinearPolicy(new_params(), rng=random.Random(7))
    first = policy.probabilities(s.features(), s.available, heuristic(s))
    assert first["rewrite"] > first["quick"]
    for _ in range(300):
        step = policy.choose(s)
        value = reward(step.action != FINISH, tokens[step.action], cost_weight=0.5)
        policy.params = reinforce(policy.params, Episode([step]), value)
    learnt = policy.probabilities(s.features(), s.available, heuristic(s))
    assert learnt["quick"] > 0.8 > learnt["rewrite"]
    assert learnt[FINISH] < 0.1  # finishing without any agent never succeeds


STUBBED = program("app.py", "def double(x):\n    pass")
DONE = program("app.py", "def double(x):\n    return 2 * x")


def loop_chain(tmp_path: Path, extra: str) -> ChainSet:
    """``mini`` with a completion loop before its review loop."""
    text = MINI_CHAIN.format(extra=extra).replace('[[steps]]\nloop = "review"', '''[[steps]]
loop = "completion"
until = "no_placeholders"
max_cycles = 2

[[steps.phases]]
phase = "complete"
instructor = "cto"
assistant = "programmer"
produces = "code"
max_questions = 0
template = """Unfinished: {unfinished}

{code}

{edit_format}"""

[[steps]]
loop = "review"''')
    path = tmp_path / "loops.toml"
    path.write_text(text)
    chain = load_chain_file(path)
    return ChainSet({chain.name: chain}, chain.roles)


async def test_the_heuristic_orchestrator_sends_the_programmer_to_the_placeholders_first(
        fake_llm, gateway, recorder, tmp_path) -> None:
    fake_llm.add_rule(STUBBED, user="Write the program")
    fake_llm.add_rule(DONE, user="Unfinished:")
    fake_llm.add_rule("<INFO> Finished", user="Give the ONE most important problem")
    runner = TeamsRunner(RunContext.of(gateway, recorder, chains=loop_chain(tmp_path, ""), scratch_dir=tmp_path / "s"),
                         options={"orchestrator": "heuristic"})
    outcome = await runner.run(JobSpec(chain="mini", task="double(x)", job_id="job-h"))

    assert outcome.ok, outcome.error
    picks = [e.data.orchestrator.action for e in recorder.of(EventKind.LOG) if e.data.orchestrator is not None]
    assert picks == ["completion", "review", FINISH]
    assert [e.data.phase for e in recorder.of(EventKind.PHASE_FINISHED)] == ["coding", "complete",
                                                                                 "review_comment"]
    assert "return 2 * x" in outcome.change.edits[0].after


async def test_the_learned_orchestrator_learns_from_each_job_and_stores_a_new_version(
        fake_llm, gateway, recorder, tmp_path) -> None:
    fake_llm.add_rule(DONE, user="Write the program")
    fake_llm.add_rule("<INFO> Finished", user="Give the ONE most important problem")
    store = await AsyncStore.open(tmp_path / "troupe.db")
    try:
        policies = PolicyBook(store)
        for job in ("job-1", "job-2"):
            context = RunContext.of(gateway, recorder, chains=mini_chains(tmp_path), scratch_dir=tmp_path / "s")
            runner = TeamsRunner(context, options={"orchestrator": "learned"}, policies=policies, rng=random.Random(1))
            outcome = await runner.run(JobSpec(chain="mini", task="double(x)", job_id=job))
            assert outcome.ok, outcome.error
        history = await store.policy_history("mini")
        assert [v.version for v in history] == [2, 1]
        assert history[0].params["episodes"] == 2 and history[0].params != history[1].params
        assert history[0].params["weights"]  # the decisions' features were learnt from
        learnt = [e.data.text for e in recorder.of(EventKind.LOG) if "learnt from this job" in e.data.text]
        assert learnt[-1].endswith("now version 2")
    finally:
        await store.close()
