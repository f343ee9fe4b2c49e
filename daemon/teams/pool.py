"""Croto's pooling: reduce many solutions to one.

    pool = Pool(merger, scorer, budget_chars=24_000)
    best = await pool.reduce(solutions)
    pool.rounds   # what happened: who waited, their scores, who was kept, how they were grouped

Identical solutions count once. Each round: when more than ``prune_above`` (4) solutions
wait, score each and keep the top half; pack the rest greedily into groups that fit the context
budget (largest first, first fit); one model call merges each group of two or more. Repeat until
one remains. When no two solutions fit in one prompt, the best-scored one is the result.

A merge is checked when its group's scores come cheap (the members were scored, or carry their
team's fresh test run): the merged solution is scored like them, and when it scores below the
best member (a test it broke, a placeholder it left), that member goes on instead and the
round's report says so. A group whose members never ran their tests is not checked: that would
run the project's tests once per member just to compare (``verify=False`` never checks, as in
the paper). The merged solution's own test run travels with it, so proposing it runs nothing twice.

``merge="when-needed"`` stops as soon as the best solution is flawless (its tests ran and pass,
nothing unfinished, no lint): a merge cannot raise that score, and it costs a model call in
sequence. The default, ``"always"``, merges as Croto does, for what the score cannot see (a
second team's edge cases, docs, tests).

Scoring may start before everything has arrived: :meth:`Pool.prescore` scores a solution as its
team finishes, together with any others that finish while a batch runs (one ruff run for all),
so the wait for the last team overlaps the scoring of the first ones.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

from daemon.json_types import JsonObject
from daemon.teams.config import MERGE_WHEN
from daemon.teams.merge import describe, ranked
from daemon.teams.scoring import Scorer
from daemon.teams.solution import Solution

Merge = Callable[[list[Solution]], Awaitable[Solution]]
Note = JsonObject
"""A pool round's report, or a merge it dropped: free-form JSON, handed on whole as ``LogData.pool``
(:mod:`daemon.payloads` has no record for it) and read back by :func:`_round_text`."""
Say = Callable[[str, Note], Awaitable[None]]


def distinct(solutions: list[Solution]) -> list[Solution]:
    """The solutions with identical files and notes dropped (the first of each stays): a copy adds
    nothing to a merge, and it would be scored and tested again for nothing."""
    seen: set[tuple[str, tuple[tuple[str, str | None], ...]]] = set()
    out = []
    for solution in solutions:
        key = (solution.notes, tuple(sorted(solution.files.items())))
        if key not in seen:
            seen.add(key)
            out.append(solution)
    return out


def greedy_groups(solutions: list[Solution], budget_chars: int, max_group: int | None = None) -> list[list[Solution]]:
    """First-fit decreasing: every group's total size stays within ``budget_chars`` (a solution
    larger than the budget is a group of its own)."""
    groups: list[list[Solution]] = []
    sizes: list[int] = []
    for solution in sorted(solutions, key=lambda s: s.chars, reverse=True):
        for i, group in enumerate(groups):
            if sizes[i] + solution.chars <= budget_chars and (max_group is None or len(group) < max_group):
                group.append(solution)
                sizes[i] += solution.chars
                break
        else:
            groups.append([solution])
            sizes.append(solution.chars)
    return groups


class Pool:
    def __init__(self, merge: Merge, score: Scorer, budget_chars: int, *, say: Say | None = None,
                 prune_above: int = 4, max_group: int | None = None, score_concurrency: int = 4,
                 merge_when: str = "always", verify: bool = True) -> None:
        if merge_when not in MERGE_WHEN:
            raise ValueError(f"merge_when must be one of {MERGE_WHEN}, got {merge_when!r}")
        self.merge, self.score, self.budget_chars, self.say = merge, score, budget_chars, say
        self.prune_above, self.max_group, self.merge_when = prune_above, max_group, merge_when
        self.verify = verify
        self._score_slots = asyncio.Semaphore(score_concurrency)
        self._arrived: list[tuple[Solution, asyncio.Future[None]]] = []
        self._batching = asyncio.Lock()
        self.rounds: list[Note] = []
        self.merges = 0

    def scores(self, count: int) -> bool:
        """Whether pooling ``count`` solutions scores them (so they may be scored as they arrive)."""
        return count > self.prune_above or self.merge_when == "when-needed"

    async def prescore(self, solution: Solution) -> None:
        """Score ``solution`` now, in one batch with any that arrive while a batch is running.

        A failure here is not the caller's: the solution stays unscored and :meth:`reduce`
        scores it again (and reports what went wrong then)."""
        arrived = asyncio.get_running_loop().create_future()
        self._arrived.append((solution, arrived))
        await asyncio.sleep(0)  # teams finishing in the same moment go in one batch
        async with self._batching:
            if arrived.done():  # an earlier batch took it
                return
            batch, self._arrived = self._arrived, []
            try:
                with contextlib.suppress(Exception):  # left unscored: reduce() scores it again, and raises
                    await self.score_all([s for s, _ in batch])
            finally:
                for _, future in batch:
                    if not future.done():
                        future.set_result(None)

    async def _scored(self, solution: Solution) -> Solution:
        if solution.score is None:
            async with self._score_slots:
                solution.score = await self.score(solution)
        return solution

    async def score_all(self, solutions: list[Solution]) -> list[Solution]:
        batch = getattr(self.score, "batch", None)  # a scorer that scores several at once, faster
        unscored = [s for s in solutions if s.score is None]
        if batch is not None and unscored:
            for solution, score in zip(unscored, await batch(unscored), strict=True):
                solution.score = score
            return solutions
        return list(await asyncio.gather(*(self._scored(s) for s in solutions)))

    async def reduce(self, solutions: list[Solution]) -> Solution:
        if not solutions:
            raise ValueError("nothing to pool: no solution arrived")
        waiting = distinct(solutions)
        while len(waiting) > 1:
            report: Note = {"round": len(self.rounds) + 1, "waiting": len(waiting)}
            # also when every solution carries its team's test run: cheap then, and it lets merges be checked
            if self.scores(len(waiting)) or (self.verify and all(s.score or s.test_report for s in waiting)):
                waiting = ranked(await self.score_all(waiting))
                report["scores"] = describe(waiting)
                best = waiting[0]
                if self.merge_when == "when-needed" and best.score is not None and best.score.flawless:
                    report["result"] = f"{best.label} is flawless (tests pass, nothing unfinished, no lint): no merge"
                    await self._report(report)
                    return best
            if len(waiting) > self.prune_above:
                waiting = waiting[:(len(waiting) + 1) // 2]
                report["kept"] = [s.label for s in waiting]
            groups = greedy_groups(waiting, self.budget_chars, self.max_group)
            report["groups"] = [[s.label for s in g] for g in groups]
            await self._report(report)
            if all(len(g) == 1 for g in groups):
                best = ranked(await self.score_all(waiting))[0]
                report["result"] = f"no two solutions fit in one prompt; kept the best, {best.label}"
                return best
            merged = list(await asyncio.gather(*(self._merge(g) for g in groups)))
            if self.verify:
                merged = await self._verified(groups, merged, report)
            waiting = distinct(merged)
        return waiting[0]

    async def _verified(self, groups: list[list[Solution]], merged: list[Solution],
                        report: Note) -> list[Solution]:
        """Each merge, or the best of its group where the merge scores lower."""
        checked = [all(result is not s for s in group) and all(s.score for s in group)
                   for group, result in zip(groups, merged, strict=True)]
        await self.score_all([result for result, check in zip(merged, checked, strict=True) if check])
        out = []
        for group, result, check in zip(groups, merged, checked, strict=True):
            best = ranked(group)[0]
            if check and result.score and best.score and result.score.value < best.score.value:
                dropped = {"merge": result.label, "score": result.score.to_dict(), "kept": best.label,
                           "kept_score": best.score.to_dict()}
                report.setdefault("merges_dropped", []).append(dropped)
                if self.say is not None:
                    await self.say(f"pool round {report['round']}: the {result.label} scored "
                                   f"{result.score.value:g}, below {best.label}'s {best.score.value:g}: "
                                   f"kept {best.label}", dropped)
                out.append(best)
            else:
                out.append(result)
        return out

    async def _report(self, report: Note) -> None:
        self.rounds.append(report)
        if self.say is not None:
            await self.say(_round_text(report), report)

    async def _merge(self, group: list[Solution]) -> Solution:
        if len(group) == 1:
            return group[0]
        self.merges += 1
        return await self.merge(group)


def _round_text(report: Note) -> str:
    text = f"pool round {report['round']}: {report['waiting']} solution(s) waiting"
    if "kept" in report:
        text += f", kept the top {len(report['kept'])} by score"
    if "groups" not in report:
        return f"{text}; {report['result']}"
    sizes = [len(g) for g in report["groups"]]
    return text + f"; {sum(1 for n in sizes if n > 1)} merge(s) of groups sized {sizes}"
