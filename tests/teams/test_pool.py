"""Croto's pooling: when more than 4 solutions wait, the top half by score is kept; the rest is
packed into groups under the context budget and each group is merged by one model call
(against the fake LLM server); rounds repeat until one solution remains."""

from __future__ import annotations

from daemon.teams.merge import Merger
from daemon.teams.pool import Pool, greedy_groups
from daemon.teams.solution import Score, Solution
from tests.teams.conftest import program


def solutions(count: int, size: int = 40) -> list[Solution]:
    return [Solution(f"team {i}", {f"s{i}.py": f"X_{i} = {i}\n" + "#" * size}) for i in range(count)]


def scripted_scores(values: dict[str, float]):  # type: ignore[no-untyped-def]
    """A scorer that returns the given executability per label and remembers whom it scored."""
    seen: list[str] = []

    async def score(solution: Solution) -> Score:
        seen.append(solution.label)
        return Score(executability=values.get(solution.label, 0.0))

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

    assert sorted(score.seen) == sorted(f"team {i}" for i in range(8))
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
    best = await pool.reduce(solutions(2))
    assert score.seen == [] and pool.merges == 1
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
    twins[0].test_report = {"ok": True, "passed": 1, "failed": 0}
    score = scripted_scores({})
    pool = Pool(Merger(complete, "task"), score, budget_chars=10_000)
    best = await pool.reduce(twins)
    assert pool.rounds[0]["waiting"] == 3  # team 3 is team 0's twin
    assert best is twins[0] and best.test_report["ok"]  # its test run still holds: no new run needed
