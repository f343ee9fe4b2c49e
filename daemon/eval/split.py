"""``troupe eval SUITE --experience-split``: does experience pay? Measured as the experience papers
do: the team learns on one half of the suite, then runs the other (held-out) half with experience
off and on.

- The halves are fixed and disjoint, in the order the suite declares (its ``split_order``, see
  :func:`split_order`): "alternate" (the default) takes the chosen items (``--limit`` first) at even
  positions to learn and holds out those at odd ones, so a larger ``--limit`` extends both halves;
  "ordered" learns on the first half in order and holds out the second, as work on one repository
  goes (mutants: one repository's kept mutants, in the draw's order).
- The learning half runs as real jobs do (it reads what the items before it taught, and is mined),
  except that a job ends only once its experience is stored (``options.experience = "learn"``).
  All its items share one store: an empty workspace registered for the run
  (``options.experience_workspace``), forgotten with the other workspaces at the end. Every item
  of a suite that is one repository (mutants) is a copy of it, so that store is the repository's.
- The held-out half runs twice: "off" neither reads nor adds experience; "on" reads what the
  learning half left and adds nothing (``"read"``), so its items are independent of their order.
- A job may ask for less than its arm gives (``options.experience`` "read" or "off": a suite's
  probe, such as the mutants' review of the unmutated file, which holds every mutant's original
  line): it gets the lesser of the two, so what the eval alone knows never becomes experience.

A row per (half, experience) with solved and tokens per solved item; the JSON has every result.
A suite that knows each item's hidden answer (:class:`KnowsAnswer`: mutants, the line each mutant
replaced) also gets the "answer in experience" column: of the held-out "on" items, those whose
answer was, verbatim, in an experience that reached their prompts (the team's own earlier output,
never the eval's). A gain there is recall of the same code, not something learnt that carries over.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

from daemon.client import DaemonError
from daemon.eval.report import RowSummary, head, render, short
from daemon.eval.runner import run_suite
from daemon.eval.suite import Context, Item, ItemResult, Row, Suite
from daemon.json_types import JsonDict
from daemon.messages import JobOptions, SubmitJob

if TYPE_CHECKING:
    from daemon.eval.runner import DaemonContext
    from daemon.eval.suite import JobRun

Half = Literal["learn", "held-out"]
Use = Literal["on", "off"]
SplitOrder = Literal["alternate", "ordered"]
SPLIT_ORDERS: tuple[SplitOrder, ...] = ("alternate", "ordered")
_LESS = {"off": 0, "read": 1, "on": 2, "learn": 2}  # how much a job's experience mode lets it do
ARMS: tuple[tuple[Half, Use], ...] = (("learn", "on"), ("held-out", "off"), ("held-out", "on"))
LEARNT_LIMIT = 10_000  # the most experiences the run counts in its store


@runtime_checkable
class KnowsAnswer(Protocol):
    """A suite that can tell whether ``texts`` (what reached an item's prompts as experience) hold the
    item's hidden answer; asked after the item ran, so the answer never reaches a job."""

    def answer_in(self, result: ItemResult, texts: list[str]) -> bool: ...


def split_order(suite: object) -> SplitOrder:
    """How ``suite`` is split: its ``split_order`` attribute when it declares one, else "alternate"
    (items that share nothing, where no order means anything). A value that is not one of
    :data:`SPLIT_ORDERS` is a ValueError naming the suite."""
    declared = getattr(suite, "split_order", "alternate")
    for order in SPLIT_ORDERS:
        if declared == order:
            return order
    raise ValueError(f"suite {getattr(suite, 'name', suite)!r} declares split_order {declared!r}; "
                     f"it must be one of {', '.join(SPLIT_ORDERS)}")


def halves(items: list[Item], order: SplitOrder = "alternate") -> tuple[list[Item], list[Item]]:
    """(learning half, held-out half). "alternate": the items at even positions, and those at odd ones;
    "ordered": the first half (the larger one when the count is odd) and the rest, each in order."""
    if order == "ordered":
        middle = (len(items) + 1) // 2
        return items[:middle], items[middle:]
    return items[0::2], items[1::2]


class ExperienceContext:
    """The runner's context with every job told how to use experience (its ``options``)."""

    def __init__(self, ctx: DaemonContext, options: JobOptions) -> None:
        self.ctx, self.options = ctx, options
        self.model = ctx.model

    async def workspace(self, files: dict[str, str], name: str = "item") -> Path:
        return await self.ctx.workspace(files, name)

    async def job(self, request: SubmitJob) -> JobRun:
        """``request`` with the arm's experience, or the lesser mode the suite asked for (a probe)."""
        asked, arm = request.options.experience, self.options.experience
        mode = asked if asked is not None and arm is not None and _LESS[asked] < _LESS[arm] else arm
        request.options = replace(request.options, experience=mode,
                                  experience_workspace=self.options.experience_workspace)
        return await self.ctx.job(request)

    async def complete(self, workspace: Path, prompt: str, *, max_tokens: int | None = None) -> JobRun:
        return await self.ctx.complete(workspace, prompt, max_tokens=max_tokens)


class _Items:
    """``suite`` restricted to ``items`` (one half)."""

    def __init__(self, suite: Suite, items: list[Item]) -> None:
        self.suite, self._items = suite, items
        self.name, self.score_names = suite.name, suite.score_names

    def items(self) -> list[Item]:
        return list(self._items)

    async def run(self, item: Item, row: Row, ctx: Context) -> ItemResult:
        return await self.suite.run(item, row, ctx)


@dataclass
class ArmResult:
    """One item in one arm; ``experience_used``: experiences that reached its prompts (None: unknown)."""

    half: Half
    experience: Use
    result: ItemResult
    experience_used: int | None = None
    answer_in_experience: bool | None = None  # held out, "on": its hidden answer was in that experience

    def to_json(self) -> JsonDict:
        return {"half": self.half, "experience": self.experience, "experience_used": self.experience_used,
                "answer_in_experience": self.answer_in_experience, **self.result.to_json()}


@dataclass
class SplitReport:
    suite: str
    model: str
    commit: str
    learn: list[str]
    held_out: list[str]
    score_names: tuple[str, ...]
    results: list[ArmResult] = field(default_factory=list)
    learnt: int | None = None  # experiences the learning half left in the run's store
    order: SplitOrder = "alternate"  # how the halves were taken (the suite's split_order)
    started_at: float = field(default_factory=time.time)
    seconds: float = 0.0
    interrupted: bool = False

    def reached(self, half: Half, use: Use) -> str:
        """How many of the arm's items had experience in their prompts, of those the daemon told."""
        told = [a.experience_used for a in self.results if (a.half, a.experience) == (half, use)
                and a.experience_used is not None]
        return f"{sum(1 for n in told if n)}/{len(told)}"

    def answered(self, half: Half, use: Use) -> str:
        """How many of the arm's items had their hidden answer in that experience ("—": not known)."""
        told = [a.answer_in_experience for a in self.results if (a.half, a.experience) == (half, use)
                and a.answer_in_experience is not None]
        return f"{sum(told)}/{len(told)}" if told else "—"

    def summaries(self) -> list[tuple[Half, Use, RowSummary]]:
        return [(half, use, RowSummary.of(f"{half} ({use})", [a.result for a in self.results
                                                             if (a.half, a.experience) == (half, use)],
                                          self.score_names)) for half, use in ARMS]

    def to_json(self) -> JsonDict:
        return {"suite": self.suite, "model": self.model, "commit": self.commit, "split": "experience",
                "order": self.order, "halves": {"learn": self.learn, "held-out": self.held_out},
                "experience_learnt": self.learnt,
                "started_at": self.started_at, "seconds": round(self.seconds, 1), "interrupted": self.interrupted,
                "summary": [{"half": half, "experience": use, "experience_reached": self.reached(half, use),
                             "answer_in_experience": self.answered(half, use), **vars(s)}
                            for half, use, s in self.summaries()],
                "results": [a.to_json() for a in self.results]}

    def table(self) -> str:
        lines = [["half (experience)", *head(self.score_names), "experience reached", "answer in experience"]]
        lines += [[s.row, *s.cells(self.score_names), self.reached(half, use), self.answered(half, use)]
                  for half, use, s in self.summaries()]
        done = "" if not self.interrupted else f" (interrupted: {len(self.results)} results)"
        learnt = "" if self.learnt is None else f"; the learning half left {self.learnt} experiences"
        return render(f"troupe eval {self.suite} --experience-split — {self.model} @ {short(self.commit)}, "
                      f"{len(self.learn)} items learn, {len(self.held_out)} held out ({self.order}){learnt}{done}",
                      lines)


async def run_split(suite: Suite, ctx: DaemonContext, report: SplitReport, *, limit: int | None = None,
                    on_result: Callable[[ArmResult, int, int], None] | None = None) -> None:
    """Learn on one half, then run the held-out half with experience off and on (see the module
    docstring); ``report.results`` fills as items finish, so an interrupted run keeps them."""
    learn, held = halves(suite.items()[:limit] if limit else suite.items(), split_order(suite))
    shared = await ctx.workspace({}, "experience")
    total = len(learn) + 2 * len(held)
    plan: list[tuple[Half, Use, list[Item], JobOptions]] = [
        ("learn", "on", learn, JobOptions(experience="learn", experience_workspace=str(shared))),
        ("held-out", "off", held, JobOptions(experience="off")),
        ("held-out", "on", held, JobOptions(experience="read", experience_workspace=str(shared)))]
    for half, use, items, options in plan:
        arms: list[ArmResult] = []

        def record(result: ItemResult, done: int, _total: int, half: Half = half, use: Use = use,
                   arms: list[ArmResult] = arms) -> None:
            arms.append(ArmResult(half, use, result, 0 if use == "off" else None))
            report.results.append(arms[-1])
            if on_result is not None:
                on_result(arms[-1], len(report.results), total)

        await run_suite(_Items(suite, items), ExperienceContext(ctx, options), rows=("team",), on_result=record)
        for arm in arms:
            if use == "on":
                arm.experience_used = await _used(ctx, arm.result)
            if (half, use) == ("held-out", "on") and isinstance(suite, KnowsAnswer):
                arm.answer_in_experience = suite.answer_in(arm.result, await _retrieved(ctx, arm.result))
        if half == "learn":
            stored = await ctx.client.experience(workspace=str(shared), limit=LEARNT_LIMIT)
            report.learnt = sum(e.workspace == str(shared) for e in stored)


async def _used(ctx: DaemonContext, result: ItemResult) -> int | None:
    """How many experiences reached the prompts of ``result``'s jobs, as the daemon reports it."""
    used = None
    for job_id in result.jobs:
        digest = ((await ctx.client.job(job_id)).result or {}).get("experience")
        if isinstance(digest, dict) and isinstance(digest.get("used"), int):
            used = (used or 0) + digest["used"]
    return used


async def _retrieved(ctx: DaemonContext, result: ItemResult) -> list[str]:
    """The whole text of every experience that reached the prompts of ``result``'s jobs (the log says
    which); one deleted since is left out."""
    texts: dict[int, str] = {}
    for job_id in result.jobs:
        for retrieval in await ctx.client.retrievals(job_id=job_id):
            if retrieval.experience_id not in texts:
                try:
                    texts[retrieval.experience_id] = (await ctx.client.experience_item(retrieval.experience_id)).value
                except DaemonError:
                    texts[retrieval.experience_id] = ""
    return [t for t in texts.values() if t]
