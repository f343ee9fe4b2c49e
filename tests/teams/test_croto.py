"""Croto against the fake LLM server: teams run the same chain concurrently at their own
temperatures, their solutions are scored by real runs, pruned, merged and proposed; costs are
counted per team; a failing team is dropped; cancelling the job cancels every team."""

from __future__ import annotations

import asyncio
from dataclasses import replace

from daemon.agents.context import RunContext
from daemon.agents.job import JobSpec
from daemon.events import EventKind
from daemon.teams.croto import TeamsOutcome
from daemon.teams.puppeteer import PolicyBook
from daemon.teams.run import TeamsRunner
from tests.teams.conftest import mini_chains, program

CHECK = "import app\nassert app.double(2) == 4\n"


def solution(body: str, check: str = CHECK) -> str:
    return program("app.py", body) + "\n\n" + program("check.py", check)


GOOD = "def double(x):\n    return 2 * x"
WRONG = "def double(x):\n    return x + 1"      # check.py fails
STUB = "def double(x):\n    pass"              # a placeholder: check.py fails too
MERGED = "def double(x):\n    \"\"\"Twice x.\"\"\"\n    return x * 2"


def script(fake_llm, code_by_temperature: dict[float, str]) -> None:  # type: ignore[no-untyped-def]
    fake_llm.add_rule(program("app.py", MERGED), system="keep the strengths")
    fake_llm.add_rule("<INFO> Finished", user="Give the ONE most important problem")
    fake_llm.add_rule(lambda body: code_by_temperature[body["temperature"]], user="Write the program")


def runner(gateway, recorder, tmp_path, *, chains=None, on_checkpoint=None, experience=None,  # type: ignore[no-untyped-def]
           **kwargs):
    context = RunContext.of(gateway, recorder, chains=chains or mini_chains(tmp_path), scratch_dir=tmp_path / "scratch",
                            on_checkpoint=on_checkpoint, experience=experience)
    return TeamsRunner(context, **kwargs)


SPEC = JobSpec(chain="mini", task="Write app.py with double(x).", job_id="job-croto", test_command="python check.py")


async def test_teams_work_at_once_at_their_temperatures_and_the_merged_solution_is_proposed(
        fake_llm, gateway, recorder, tmp_path) -> None:
    script(fake_llm, {0.2: solution(GOOD), 0.6: solution(WRONG), 1.0: solution(STUB)})
    fake_llm.latency = 0.3
    outcome = await runner(gateway, recorder, tmp_path, chains=mini_chains(tmp_path, "teams = 3")).run(SPEC)

    assert isinstance(outcome, TeamsOutcome) and outcome.ok, outcome.error
    coding = [r for r in fake_llm.requests if "Write the program" in r.last_user]
    assert sorted(r.body["temperature"] for r in coding) == [0.2, 0.6, 1.0]
    # concurrent: every team started coding before any team finished it
    events = [(e.kind, e.data.phase) for e in recorder.events
              if e.kind in (EventKind.PHASE_STARTED, EventKind.PHASE_FINISHED)]
    assert events[:3] == [(EventKind.PHASE_STARTED, "coding")] * 3
    assert {e.data.team for e in recorder.of(EventKind.MESSAGE)} == {0, 1, 2}
    # three solutions wait (not more than 4): none is pruned, one merge call over all of them
    merge = fake_llm.prompts_containing("keep the strengths")[0].last_user
    assert "return 2 * x" in merge and "return x + 1" in merge and "    pass" in merge
    assert outcome.change is not None and outcome.change.files == ["app.py", "check.py"]
    assert '"""Twice x."""' in outcome.change.edits[0].after
    assert outcome.test_report.ok  # the merged solution was run: python check.py passes
    # costs per team, and the pool's own
    teams = {t["team"]: t for t in outcome.teams}
    assert [teams[t]["temperature"] for t in (0, 1, 2)] == [0.2, 0.6, 1.0]
    assert all(teams[t]["usage"]["calls"] == 2 and teams[t]["status"] == "succeeded" for t in (0, 1, 2))
    assert teams["pool"]["usage"]["calls"] == 1
    assert outcome.usage.calls == len(fake_llm.requests) == 7
    assert outcome.summary()["teams"] == outcome.teams
    assert not list((tmp_path / "scratch").iterdir())


async def test_more_than_four_teams_are_scored_by_real_runs_and_only_the_best_half_is_merged(
        fake_llm, gateway, recorder, tmp_path) -> None:
    script(fake_llm, {0.2: solution(WRONG), 0.4: solution(GOOD), 0.6: solution(STUB),
                      0.8: solution("import os\n\n\n" + GOOD.replace("2 * x", "x * 2")),
                      1.0: solution(GOOD.replace("2 * x", "x + x"))})
    outcome = await runner(gateway, recorder, tmp_path, options={"teams": 5}).run(SPEC)

    assert outcome.ok, outcome.error
    (pooling,) = outcome.pools
    scores = {s["label"]: s["score"] for s in pooling["rounds"][0]["scores"]}
    assert scores["team 0"]["executability"] == 0.0 and scores["team 1"]["executability"] == 1.0
    assert scores["team 2"]["placeholders"] == 1 and scores["team 2"]["unimplemented"] == 1
    assert scores["team 3"]["lint"] == scores["team 1"]["lint"] + 1  # the unused import, found by ruff
    assert pooling["rounds"][0]["scores"][0]["label"] in ("team 1", "team 4")  # lint breaks the tie
    assert sorted(pooling["rounds"][0]["kept"]) == ["team 1", "team 3", "team 4"]
    merge = fake_llm.prompts_containing("keep the strengths")[0].last_user
    assert "return x + 1" not in merge and "    pass" not in merge
    assert "return 2 * x" in merge and "return x * 2" in merge and "return x + x" in merge


async def test_merge_when_needed_proposes_a_flawless_team_without_a_merge_call(
        fake_llm, gateway, recorder, tmp_path) -> None:
    clean = "import app\n\nassert app.double(2) == 4\n"  # nothing for ruff to find: team 1 is flawless
    script(fake_llm, {0.2: solution(WRONG, clean), 0.6: solution(GOOD, clean), 1.0: solution(STUB, clean)})
    outcome = await runner(gateway, recorder, tmp_path, options={"teams": 3, "merge": "when-needed"}).run(SPEC)

    assert outcome.ok, outcome.error
    (pooling,) = outcome.pools
    assert pooling["merges"] == 0 and pooling["result"] == "team 1", pooling["rounds"][0]["scores"]
    assert not [r for r in fake_llm.requests if "keep the strengths" in r.system]
    assert "team 1 is flawless" in pooling["rounds"][0]["result"]
    assert {s["label"] for s in pooling["rounds"][0]["scores"]} == {"team 0", "team 1", "team 2"}
    assert "return 2 * x" in outcome.change.edits[0].after and outcome.test_report.ok
    assert {t["team"]: t["usage"]["calls"] for t in outcome.teams}["pool"] == 0
    assert any("no merge" in e.data.text for e in recorder.of(EventKind.LOG) if e.data.team == "pool")


async def test_team_0_carries_the_jobs_experience_and_its_trajectory_is_recorded(fake_llm, gateway, recorder,
                                                                                 tmp_path) -> None:
    from daemon.experience.session import JobExperience
    from storage import AsyncStore

    store = await AsyncStore.open(tmp_path / "troupe.db")
    try:
        await store.add_experience("agent", f"{SPEC.task}\nWrite the program", "Name it double and return 2 * x.",
                                   chain="mini", phase="coding", role="programmer", task=SPEC.task, score=0.9)
        script(fake_llm, {0.2: solution(GOOD), 1.0: solution(WRONG)})
        experience = JobExperience(store, job_id=SPEC.job_id)
        outcome = await runner(gateway, recorder, tmp_path, options={"teams": 2}, experience=experience).run(SPEC)
    finally:
        await store.close()

    assert outcome.ok, outcome.error
    coding = {r.body["temperature"]: r.last_user for r in fake_llm.prompts_containing("Write the program")}
    assert "<<<experience" in coding[0.2] and "Name it double" in coding[0.2]
    assert "<<<experience" not in coding[1.0]  # the other team is an independent draw
    assert experience.record is not None and experience.record.chain == "mini"
    assert [p.phase for p in experience.record.phases][:1] == ["coding"] and experience.used


async def test_pooling_after_a_phase_hands_every_team_the_merged_solution(fake_llm, gateway, recorder,
                                                                        tmp_path) -> None:
    script(fake_llm, {0.2: solution(GOOD), 1.0: solution(WRONG)})
    saved: list[tuple[str, dict]] = []

    async def save(last_phase: str, checkpoint: dict) -> None:
        saved.append((last_phase, checkpoint))

    chains = mini_chains(tmp_path, 'teams = 2\npool_after = ["coding"]')
    outcome = await runner(gateway, recorder, tmp_path, chains=chains, on_checkpoint=save).run(SPEC)

    assert outcome.ok, outcome.error
    reviews = fake_llm.prompts_containing("Give the ONE most important problem")
    assert len(reviews) == 2 and all('"""Twice x."""' in r.last_user for r in reviews)
    (last_phase, checkpoint), = saved  # one resumable checkpoint, after the pool
    assert last_phase == "pool after coding" and checkpoint["next"] == [1, 0, 0]
    assert '"""Twice x."""' in checkpoint["files"]["app.py"]
    assert [p["after"] for p in outcome.pools] == ["coding", "review"]


async def test_a_failing_team_is_dropped_and_the_others_carry_on(fake_llm, gateway, recorder, tmp_path) -> None:
    script(fake_llm, {0.2: solution(GOOD), 1.0: "I would rather describe the code than write it."})
    outcome = await runner(gateway, recorder, tmp_path, options={"teams": 2}).run(SPEC)

    assert outcome.ok, outcome.error
    teams = {t["team"]: t for t in outcome.teams}
    assert teams[0]["status"] == "succeeded" and teams[1]["status"] == "failed"
    assert "could not be used" in teams[1]["error"] and outcome.warnings[0].startswith("team 1 failed")
    assert fake_llm.prompts_containing("keep the strengths") == []  # one solution left: nothing to merge
    assert outcome.change is not None and "return 2 * x" in outcome.change.edits[0].after


async def test_cancelling_the_job_cancels_every_team_and_leaves_nothing_half_written(
        fake_llm, gateway, recorder, tmp_path) -> None:
    script(fake_llm, {t: solution(GOOD) for t in (0.2, 0.6, 1.0)})
    fake_llm.latency = 30
    saved: list[str] = []

    async def save(last_phase: str, checkpoint: dict) -> None:
        saved.append(last_phase)

    policies = PolicyBook()
    before = asyncio.all_tasks()
    job = asyncio.create_task(runner(gateway, recorder, tmp_path, on_checkpoint=save, policies=policies,
                                     options={"teams": 3, "orchestrator": "learned"}).run(SPEC))
    for _ in range(400):
        if len(fake_llm.requests) == 3:
            break
        await asyncio.sleep(0.05)
    assert len(fake_llm.requests) == 3  # all three teams are waiting on the model
    job.cancel()
    try:
        await job
        raise AssertionError("the job was not cancelled")
    except asyncio.CancelledError:
        pass
    for _ in range(100):  # the cancelled teams unwind; a task that leaked would wait on the model for good
        if not engine_tasks(asyncio.all_tasks() - before - {job}):
            break
        await asyncio.sleep(0.01)
    assert engine_tasks(asyncio.all_tasks() - before - {job}) == []  # (the fake server's handlers still wait)
    assert not list((tmp_path / "scratch").iterdir())  # every team removed its scratch copy
    assert saved == []  # no checkpoint from a half-done pool
    assert (await policies.load("mini"))[1] is None  # the orchestrator learnt nothing from a cancelled job


def engine_tasks(tasks: set[asyncio.Task]) -> list[asyncio.Task]:
    """Unfinished tasks running Troupe's own code (the daemon package, litellm's calls for it)."""
    return [t for t in tasks if not t.done()
            and any("/daemon/" in frame.f_code.co_filename or "litellm" in frame.f_code.co_filename
                    for frame in t.get_stack())]


async def test_a_restarted_job_resumes_every_team_from_the_last_pool(fake_llm, gateway, recorder, tmp_path) -> None:
    script(fake_llm, {0.2: solution(GOOD), 1.0: solution(WRONG)})
    saved: list[dict] = []

    async def save(last_phase: str, checkpoint: dict) -> None:
        saved.append(checkpoint)

    chains = mini_chains(tmp_path, 'teams = 2\npool_after = ["coding"]')
    await runner(gateway, recorder, tmp_path, chains=chains, on_checkpoint=save).run(SPEC)
    coding_calls = len(fake_llm.prompts_containing("Write the program"))

    resumed = await runner(gateway, recorder, tmp_path, chains=chains).run(replace(SPEC, resume_from=saved[0]))

    assert resumed.ok, resumed.error
    assert len(fake_llm.prompts_containing("Write the program")) == coding_calls  # coding was not redone
    assert [p["after"] for p in resumed.pools] == ["review"]
    assert '"""Twice x."""' in resumed.change.edits[0].after
