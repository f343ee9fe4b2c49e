"""Croto's pooling: when more than 4 solutions wait, the top half by score is kept; the rest is
packed into groups under the context budget and each group is merged by one model call
(against the fake LLM server); rounds repeat until one solution remains."""

from __future__ import annotations

import asyncio

import pytest

from daemon.teams.merge import Merger
from daemon.teams.pool import Pool, greedy_groups
from daemon.teams.solution import Score, Solution
from daemon.workspace.reports import TestReport
from tests.teams.conftest import program


def solutions(count: int, size: int = 40) -> list[Solution]:
    return [Solution(f"team {i}", {f"s{i}.py": f"X_{i} = {i}\n" + "#" * size}) for i in range(count)]


def scripted_scores(values: dict[str, float]):  # type: ignore[no-untyped-def]
    """A scorer that returns the given executability per label (a merge: 1.0, unless given) and
    remembers whom it scored."""
    seen: list[str] = []

    async def score(solution: Solution) -> Score:
        seen.append(solution.label)
        default = 1.0 if solution.label.startswith("merge") else 0.0
        return Score(executability=values.get(solution.label, default))

    score.seen = seen  # type: ignore[attr-defined]
    return score


def test_groups_are_packed_greedily_under_the_budget() -> None:
    sized = [Solution(f"s{n}", {"a.py": "x" * n}) for n in (60, 50, 40, 30, 20, 10)]
    groups = greedy_groups(sized, budget_chars=100)
    assert all(sum(s.chars for s in g) <= 100 for g in groups)
    assert [[s.label for s in g] for g in groups] == [["s60", "s30"], ["s50", "s40"], ["s20", "s10"]]
    assert greedy_groups([Solution("big", {"a.py": "x" * 500})], 100)[0][0].label == "big"


async def test_eight_solutions_are_pruned_to_the_best_four_and_merged_in_one_call(fake_llm, complete) -> None:
    fake_llm.add_rule(program("s7.py", "X_7 = 'merged'"), system="keep the strengths")
    score = scripted_scores({"team 7": 1.0, "team 5": 0.9, "team 2": 0.8, "team 0": 0.7, "team 1": 0.1})
    pool = Pool(Merger(complete, "write the best program"), score, budget_chars=10_000)

    best = await pool.reduce(solutions(8))

    assert sorted(score.seen[:8]) == sorted(f"team {i}" for i in range(8))
    assert score.seen[8:] == [best.label]  # the merge is checked too
    assert pool.rounds[0]["kept"] == ["team 7", "team 5", "team 2", "team 0"]
    assert [sorted(g) for g in pool.rounds[0]["groups"]] == [["team 0", "team 2", "team 5", "team 7"]]
    assert pool.merges == 1 and len(fake_llm.requests) == 1
    prompt = fake_llm.requests[0].last_user
    assert "keep the strengths" in fake_llm.requests[0].system
    for kept in (7, 5, 2, 0):
        assert f"X_{kept} = {kept}" in prompt
    assert "X_3 = 3" not in prompt and "X_1 = 1" not in prompt  # pruned ones never reach the merge
    assert prompt.index("(team 7;") < prompt.index("(team 5;")  # the best is solution 1, the starting point
    # the merge's edits apply on top of the best solution
    assert best.files == {"s7.py": "X_7 = 'merged'\n"}
    assert best.label.startswith("merge of team 7 + team 5")


async def test_four_or_fewer_are_merged_without_scoring(fake_llm, complete) -> None:
    fake_llm.default_reply = program("s0.py", "X_0 = 'both'")
    score = scripted_scores({})
    pool = Pool(Merger(complete, "task"), score, budget_chars=10_000)
    best = await pool.reduce(solutions(2))  # no test ran for them: checking the merge would run them all
    assert score.seen == [] and pool.merges == 1 and "kept" not in pool.rounds[0]
    # the merge starts from solution 1: what the merger did not send back stays as solution 1 had it
    assert best.files == {"s0.py": "X_0 = 'both'\n"}


async def test_a_small_budget_makes_several_groups_and_rounds_repeat_until_one_remains(fake_llm, complete) -> None:
    fake_llm.default_reply = program("merged.py", "M = 1")
    score = scripted_scores({f"team {i}": i / 10 for i in range(6)})
    pool = Pool(Merger(complete, "task"), score, budget_chars=130)

    best = await pool.reduce(solutions(6, size=40))

    first = pool.rounds[0]
    assert first["waiting"] == 6 and first["kept"] == ["team 5", "team 4", "team 3"]
    assert all(len(g) <= 2 for g in first["groups"]) and len(first["groups"]) == 2
    assert len(pool.rounds) >= 2 and pool.rounds[-1]["waiting"] == 2
    assert "merged.py" in best.files


async def test_an_unusable_merge_reply_is_sent_back_once_then_the_best_member_stands(fake_llm, complete) -> None:
    fake_llm.default_reply = "I merged them in my head."
    warnings: list[str] = []

    async def warn(text: str) -> None:
        warnings.append(text)

    group = solutions(2)
    group[1].score = Score(executability=1.0)
    group[0].score = Score(executability=0.2)
    merged = await Merger(complete, "task", warn=warn)(group)
    assert merged is group[1]
    assert len(fake_llm.requests) == 2 and "Your edits were not applied" in fake_llm.requests[1].last_user
    assert warnings and "kept team 1" in warnings[0]


async def test_when_no_two_solutions_fit_one_prompt_the_best_scored_one_wins(fake_llm, complete) -> None:
    score = scripted_scores({"team 0": 0.2, "team 1": 0.9, "team 2": 0.5})
    pool = Pool(Merger(complete, "task"), score, budget_chars=50)
    best = await pool.reduce(solutions(3, size=40))
    assert best.label == "team 1" and fake_llm.requests == []
    assert "kept the best, team 1" in pool.rounds[-1]["result"]


async def test_identical_solutions_count_once_and_a_merge_that_changes_nothing_keeps_the_first(
        fake_llm, complete) -> None:
    fake_llm.default_reply = program("s0.py", "X_0 = 0")  # solution 1 as it already is
    twins = [Solution(f"team {i}", {f"s{i}.py": f"X_{i} = {i}\n"}) for i in range(3)]
    twins.append(Solution("team 3", dict(twins[0].files)))
    twins[0].test_report = TestReport(ok=True, command=["pytest"], passed=1)
    score = scripted_scores({})
    pool = Pool(Merger(complete, "task"), score, budget_chars=10_000)
    best = await pool.reduce(twins)
    assert pool.rounds[0]["waiting"] == 3  # team 3 is team 0's twin
    assert best is twins[0] and best.test_report.ok  # its test run still holds: no new run needed


async def test_when_needed_a_flawless_best_ends_the_pool_without_a_merge_call(fake_llm, complete) -> None:
    fake_llm.default_reply = program("merged.py", "M = 1")
    group = solutions(3)
    scores = {"team 0": Score(1.0, tests="3 passed"), "team 1": Score(1.0, tests="3 passed", lint=2),
              "team 2": Score(0.5, tests="1 failed")}

    async def score(solution: Solution) -> Score:
        return scores[solution.label]

    pool = Pool(Merger(complete, "task"), score, budget_chars=10_000, merge_when="when-needed")
    best = await pool.reduce(group)
    assert best is group[0] and fake_llm.requests == [] and pool.merges == 0
    assert "team 0 is flawless" in pool.rounds[0]["result"] and len(pool.rounds[0]["scores"]) == 3


@pytest.mark.parametrize("flaw", [{"lint": 1}, {"placeholders": 1}, {"unimplemented": 1}, {"executability": 0.9},
                                  {"tested": False}])
async def test_when_needed_anything_short_of_flawless_is_still_merged(fake_llm, complete, flaw) -> None:
    fake_llm.default_reply = program("merged.py", "M = 1")
    values = {"executability": 1.0, "tests": "ran", **flaw}

    async def score(solution: Solution) -> Score:
        return Score(**values)

    pool = Pool(Merger(complete, "task"), score, budget_chars=10_000, merge_when="when-needed")
    best = await pool.reduce(solutions(2))
    assert pool.merges == 1 and "merged.py" in best.files


async def test_solutions_are_scored_as_they_arrive_in_batches_and_not_again(fake_llm, complete) -> None:
    batches: list[list[str]] = []

    class BatchScorer:
        async def __call__(self, solution: Solution) -> Score:
            return (await self.batch([solution]))[0]

        async def batch(self, group: list[Solution]) -> list[Score]:
            batches.append([s.label for s in group])
            await asyncio.sleep(0.1)  # a test run
            return [Score(float(s.label[-1]) / 10, tests="ran") for s in group]

    fake_llm.default_reply = program("merged.py", "M = 1")
    pool = Pool(Merger(complete, "task"), BatchScorer(), budget_chars=10_000)
    assert pool.scores(5) and not pool.scores(4)
    group = solutions(6)

    async def team(solution: Solution, finishes_after: float) -> None:
        await asyncio.sleep(finishes_after)
        await pool.prescore(solution)

    # team 0 finishes first and is scored alone; 1..3 finish together while that runs: one batch;
    # 4 and 5 finish later, together
    await asyncio.gather(team(group[0], 0), *(team(s, 0.01) for s in group[1:4]),
                         *(team(s, 0.6) for s in group[4:]))
    assert batches == [["team 0"], ["team 1", "team 2", "team 3"], ["team 4", "team 5"]]
    assert all(s.score is not None for s in group)
    await pool.reduce(group)
    assert len(batches) == 4 and batches[3][0].startswith("merge of")  # reduce() scored only the merge
    assert pool.rounds[0]["kept"] == ["team 5", "team 4", "team 3"]


async def test_a_scoring_failure_while_teams_work_is_retried_by_the_pool_which_reports_it(fake_llm, complete) -> None:
    calls: list[str] = []

    async def broken(solution: Solution) -> Score:
        calls.append(solution.label)
        raise RuntimeError("the sandbox is gone")

    pool = Pool(Merger(complete, "task"), broken, budget_chars=10_000)
    group = solutions(5)
    await asyncio.gather(*(pool.prescore(s) for s in group))  # does not raise: the teams carry on
    assert all(s.score is None for s in group) and len(calls) == 5
    with pytest.raises(RuntimeError, match="the sandbox is gone"):
        await pool.reduce(group)
    assert len(calls) == 10


async def test_the_workspace_scorer_runs_tests_and_ruff_for_one_solution_as_for_several(tmp_path) -> None:
    from daemon.teams.scoring import WorkspaceScorer

    def made(label: str, check: str) -> Solution:
        return Solution(label, {"app.py": "def f(x):\n    return 2 * x\n", "check.py": check})

    scorer = WorkspaceScorer(None, test_command="python check.py", scratch_dir=tmp_path)
    untidy = "import os\nimport app\n\nassert app.f(2) == 4\n"  # an unused import: ruff finds it
    (alone,) = await scorer.batch([made("alone", untidy)])
    together = await scorer.batch([made("a", untidy), made("b", "import app\n\nassert app.f(2) == 5\n")])
    assert alone.executability == 1.0 and alone.lint >= 1
    assert together[0].lint == alone.lint and together[1].lint == 0
    assert together[1].executability == 0.0 and not together[1].flawless
    assert list(tmp_path.iterdir()) == []  # every scratch copy removed


async def test_a_merge_that_scores_below_the_best_of_its_group_is_dropped_for_it(fake_llm, complete) -> None:
    fake_llm.default_reply = program("s1.py", "X_1 = 'broken by the merge'")
    score = scripted_scores({"team 0": 0.5, "team 1": 1.0, "team 2": 0.2})  # "merge of ..." is given below
    said: list[str] = []

    async def say(text: str, data: dict) -> None:
        said.append(text)

    async def judged(solution: Solution) -> Score:
        if solution.label.startswith("merge"):
            return Score(executability=0.5, tests="1 of 2 failed")
        return await score(solution)

    group = solutions(3)
    for member in group:  # each team ran its tests: scoring the group is cheap, so the merge is checked
        member.test_report = TestReport(ok=True, command=["pytest"], passed=1)
    pool = Pool(Merger(complete, "task"), judged, budget_chars=10_000, say=say)
    best = await pool.reduce(group)
    assert best is group[1] and pool.merges == 1  # the merge was made, scored lower, and dropped
    (dropped,) = pool.rounds[0]["merges_dropped"]
    assert dropped["kept"] == "team 1" and dropped["merge"].startswith("merge of team 1")
    assert any("below team 1's" in text and "kept team 1" in text for text in said)


async def test_a_merge_of_untested_solutions_is_not_checked_and_verify_false_never_checks(fake_llm, complete) -> None:
    fake_llm.default_reply = program("merged.py", "M = 1")
    score = scripted_scores({"team 0": 1.0, "team 1": 1.0, "merge of team 0 + team 1": 0.0})
    best = await Pool(Merger(complete, "task"), score, budget_chars=10_000).reduce(solutions(2))
    assert score.seen == [] and "merged.py" in best.files  # untested members: trusted as the paper does

    tested = solutions(8)
    for member in tested:
        member.test_report = TestReport(ok=True, command=["pytest"])
    unchecked = await Pool(Merger(complete, "task"), scripted_scores({"team 0": 1.0}), budget_chars=10_000,
                           verify=False).reduce(tested)
    assert unchecked.label.startswith("merge of")
