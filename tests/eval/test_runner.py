"""The runner goes on past an item that fails, keeps the fixed order, and sums what jobs cost."""

from __future__ import annotations

from daemon.eval.report import EvalReport
from daemon.eval.runner import run_suite
from daemon.eval.suite import Item, ItemResult, JobRun, load_suite


class Flaky:
    name = "flaky"
    score_names = ()

    def items(self) -> list[Item]:
        return [Item("a"), Item("b"), Item("c")]

    async def run(self, item, row, ctx):  # type: ignore[no-untyped-def]
        if item.id == "b" and row == "team":
            raise ConnectionError("the daemon went away")
        runs = [JobRun("j1", "review", "succeeded", prompt_tokens=10, completion_tokens=2, calls=1, seconds=1.5),
                JobRun("j2", "review", "failed" if item.id == "c" else "succeeded", error="model refused",
                       prompt_tokens=5, calls=1, seconds=0.5)]
        return ItemResult.of(self.name, item, row, runs, solved=item.id == "a")


async def test_a_failed_item_is_recorded_and_the_run_goes_on() -> None:
    seen: list[tuple[str, str, int, int]] = []
    results = await run_suite(Flaky(), None, rows=("team", "bare"),
                              on_result=lambda r, done, total: seen.append((r.item, r.row, done, total)))
    assert [(r.item, r.row, r.status) for r in results] == [
        ("a", "team", "ok"), ("a", "bare", "ok"), ("b", "team", "failed"), ("b", "bare", "ok"),
        ("c", "team", "failed"), ("c", "bare", "failed")]
    crashed = results[2]
    assert not crashed.solved and crashed.error.startswith("ConnectionError: the daemon went away")
    assert results[4].error == "review job failed: model refused"
    assert (results[0].prompt_tokens, results[0].completion_tokens, results[0].calls, results[0].seconds) == (
        15, 2, 2, 2.0)
    assert seen[-1] == ("c", "bare", 6, 6)


async def test_limit_takes_the_first_items_of_the_fixed_order() -> None:
    results = await run_suite(Flaky(), None, rows=("bare",), limit=2)
    assert [r.item for r in results] == ["a", "b"]


def test_the_shipped_suites_list_their_items_in_a_fixed_order() -> None:
    review, fix = load_suite("review"), load_suite("fix")
    assert [i.id for i in review.items()[:3]] == ["Python/0", "Python/1", "Python/2"]
    assert [i.id for i in fix.items()] == [i.id for i in review.items()] and len(fix.items()) == 164


def test_tokens_per_solved_item_are_a_rows_tokens_over_its_solved_items_and_a_dash_when_none() -> None:
    results = [ItemResult("s", "a", "team", True, prompt_tokens=100, completion_tokens=20),
               ItemResult("s", "b", "team", False, prompt_tokens=50, completion_tokens=10),
               ItemResult("s", "a", "bare", False, prompt_tokens=5, completion_tokens=1)]
    report = EvalReport("s", "m", "abc", ["a", "b"], ["team", "bare"], (), results)
    head, team, bare = report.table().splitlines()[1:]
    assert "tok/solved" in head and " 180 " in team and " — " in bare
    assert report.to_json()["summary"]["team"]["tokens_per_solved"] == 180
    assert report.to_json()["summary"]["bare"]["tokens_per_solved"] is None


def test_a_row_reports_its_slowest_item_and_job_beside_the_mean() -> None:
    results = [ItemResult("s", "a", "team", True, seconds=10.0, job_seconds=6.0),
               ItemResult("s", "b", "team", True, seconds=50.0, job_seconds=35.0)]
    report = EvalReport("s", "m", "abc", ["a", "b"], ["team"], (), results)
    head, team = report.table().splitlines()[1:]
    assert head.split()[-8:] == ["s/item", "max", "s", "max", "job", "s", "failed", "capped"]
    assert team.split()[-5:] == ["30.0", "50.0", "35.0", "0", "0"]
    summary = report.to_json()["summary"]["team"]
    assert (summary["seconds"], summary["max_seconds"], summary["max_job_seconds"]) == (30.0, 50.0, 35.0)
