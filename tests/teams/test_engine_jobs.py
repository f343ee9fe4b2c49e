"""Through the daemon's engine executor: a repository's chain file asks for teams, a job's options
add an orchestrator, and the stored result carries each team's costs; the learned orchestrator's
policy lands in the daemon's store."""

from __future__ import annotations

from pathlib import Path

from daemon.jobs.engine import EngineExecutor
from daemon.jobs.executor import RunningJob
from storage import AsyncStore
from tests.teams.conftest import MINI_CHAIN, program


async def _no_answer(question: str) -> str:
    return ""


async def _drop(event) -> None:  # type: ignore[no-untyped-def]
    return None


async def test_a_job_runs_the_teams_its_chain_file_and_options_ask_for(fake_llm_env, tmp_path: Path) -> None:
    fake_llm_env.add_rule("<INFO> Finished", user="Give the ONE most important problem")
    fake_llm_env.add_rule(lambda body: program("app.py", f"T = {body['temperature']}"), user="Write the program")
    fake_llm_env.add_rule(program("app.py", "T = 'merged'"), system="keep the strengths")
    repo = tmp_path / "repo"
    (repo / ".troupe" / "chains").mkdir(parents=True)
    (repo / ".troupe" / "chains" / "change.toml").write_text(
        MINI_CHAIN.format(extra="teams = 2").replace('name = "mini"', 'name = "change"'))
    store = await AsyncStore.open(tmp_path / "troupe.db")
    try:
        request = {"prompt": "write app.py", "options": {"orchestrator": "learned"}}
        await store.record_job("change", request, job_id="job-teams")  # usage is recorded against it
        job = RunningJob("job-teams", "change", request, repo, None)
        executor = EngineExecutor(store=store)
        result = await executor.run(job, _drop, _no_answer)
        await executor.close()  # lets the background mining of team 0's record finish before the store closes
        assert result.status == "succeeded", result.error
        teams = {t["team"]: t for t in result.result["teams"]}
        assert [teams[0]["temperature"], teams[1]["temperature"]] == [0.2, 1.0]
        # the learned policy may stop a team after coding (it samples): every team made its own calls
        assert all(teams[t]["usage"]["calls"] >= 1 for t in (0, 1)) and teams["pool"]["usage"]["calls"] == 1
        assert result.change is not None and "T = 'merged'" in result.change.diff
        policy = await store.latest_policy("change")
        assert policy is not None and policy.version == 1 and policy.params["episodes"] == 2  # one per team
    finally:
        await store.close()
