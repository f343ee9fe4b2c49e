"""Croto: several teams run the same chain on the same task at once, and their solutions are pooled.

The chain is cut after each step named in ``pool_after`` (and at its end). Every team runs a
segment in its own scratch copy, at its own temperature (and model, if given); then their
solutions are pooled (:class:`~daemon.teams.pool.Pool`: score, keep the top half when more
than 4 wait, merge groups under the context budget, check each merge; ``merge = "when-needed"``
stops at a flawless solution). Each team's solution is scored as the team finishes, while the
others still work, so only the merge waits for the last team. Every team continues the next
segment from the one merged solution (a checkpoint, so the engine's resume does the work). After
the last segment the merged solution is tested (unless its scoring just did) and becomes the
job's proposed change.

Events carry ``data["team"]`` (an index, or ``"pool"`` for pooling). Only team 0 may ask the
person a question; the others assume. Only team 0 gets the job's experience (retrieved examples,
shortcuts, and the record that is mined afterwards): one trajectory is learnt from, not eight
near-copies, and the other teams stay independent draws. Cancelling the job cancels every team
(they run in one task group) and each removes its scratch copy. A team that fails is dropped
with its error; the job fails only when every team does.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

import msgspec

from daemon.agents.accounting import Tally
from daemon.agents.context import RunContext
from daemon.agents.hooks import NO_HOOKS, RunHooks
from daemon.agents.job import Checkpoint, JobOutcome, JobSpec
from daemon.agents.model import Chain, ChainSet
from daemon.agents.placeholders import CODE_SUFFIXES
from daemon.agents.runner import CONTEXT_SHARE, ChainRunner
from daemon.events import Event, EventSink
from daemon.json_types import JsonDict
from daemon.payloads import CodeStateData, LogData, ToolRunData, UsageData
from daemon.teams.config import TeamsConfig
from daemon.teams.merge import Merger
from daemon.teams.pool import Note, Pool
from daemon.teams.scoring import Scorer, WorkspaceScorer, materialize
from daemon.teams.solution import BaseReader, Solution, no_base
from daemon.teams.team_gateway import TeamGateway
from daemon.workspace import testing
from daemon.workspace.files import read_for_prompt
from daemon.workspace.paths import confine

Prescore = Callable[[Solution], Awaitable[None]]


@dataclass
class TeamsOutcome(JobOutcome):
    teams: list[JsonDict] = field(default_factory=list)  # per team: temperature, model, status, usage
    pools: list[JsonDict] = field(default_factory=list)  # per pooling: rounds, merges, winner

    def summary(self) -> JsonDict:
        return {**super().summary(), "teams": self.teams, "pools": self.pools}


def workspace_reader(root: Path | None) -> BaseReader:
    if root is None:
        return no_base

    def read(path: str) -> str | None:
        try:
            return read_for_prompt(confine(root, path))
        except (OSError, UnicodeDecodeError, ValueError):
            return None

    return read


class _TeamEvents:
    """Tags a team's events and notices whether its last test run still matches its code."""

    def __init__(self, emit: EventSink, team: int) -> None:
        self.emit, self.team, self.tests_fresh = emit, team, False

    async def __call__(self, event: Event) -> None:
        data = event.data
        if isinstance(data, ToolRunData) and data.tool == "tests":
            self.tests_fresh = True
        elif isinstance(data, CodeStateData) and any(f.endswith(CODE_SUFFIXES) for f in data.files):
            self.tests_fresh = False
        await self.emit(replace(event, data=msgspec.structs.replace(data, team=self.team)))


class CrossTeams:
    def __init__(self, context: RunContext, *, chain: Chain, config: TeamsConfig,
                 hooks_for: Callable[[int], RunHooks] = lambda team: NO_HOOKS, scorer: Scorer | None = None) -> None:
        self.context = context
        self.gateway, self.emit, self.settings = context.gateway, context.emit, context.settings
        self.on_checkpoint, self.scratch_dir = context.on_checkpoint, context.scratch_dir
        self.chain, self.config, self.hooks_for, self.scorer = chain, config, hooks_for, scorer
        self.usage = [Tally() for _ in range(config.teams)]
        self.pool_usage = Tally()
        self.reports: list[JsonDict] = [
            {"team": t, "temperature": config.temperature(t), "model": config.model(t), "status": "running",
             "error": None} for t in range(config.teams)]
        self.pools: list[JsonDict] = []
        self._spec = JobSpec(chain.name, "")

    def segments(self, start: int) -> list[int]:
        """The step index each segment ends at (exclusive), after ``start``."""
        names = set(self.config.pool_after)
        ends = {i + 1 for i, step in enumerate(self.chain.steps) if step.name in names}
        return sorted(e for e in ends | {len(self.chain.steps)} if e > start)

    async def run(self, spec: JobSpec) -> TeamsOutcome:
        started = time.monotonic()
        self._spec = spec
        checkpoint = spec.resume_from
        start = int(checkpoint["next"][0]) if checkpoint else 0
        reader = workspace_reader(spec.workspace if self.chain.start == "repository" else None)
        final: Solution | None = None
        for end in self.segments(start):
            pool = self._pool(spec)
            solutions = await self._segment(spec, checkpoint, end, reader, pool)
            if not solutions:
                errors = "; ".join(f"team {r['team']}: {r['error']}" for r in self.reports if r["error"])
                return self._outcome("failed", None, started, error=f"all {self.config.teams} teams failed: {errors}")
            final = await pool.reduce(solutions)
            self.pools.append({"after": self.chain.steps[end - 1].name, "solutions": len(solutions),
                               "rounds": pool.rounds, "merges": pool.merges, "result": final.label})
            checkpoint = self._merged_checkpoint(final, end)
            if end < len(self.chain.steps) and self.on_checkpoint is not None:
                await self.on_checkpoint(f"pool after {self.chain.steps[end - 1].name}", checkpoint)
        assert final is not None
        return await self._finish(spec, final, started)

    async def _segment(self, spec: JobSpec, checkpoint: Checkpoint | None, end: int,
                       reader: BaseReader, pool: Pool) -> list[Solution]:
        chains = ChainSet({self.chain.name: replace(self.chain, steps=self.chain.steps[:end])}, self.chain.roles)
        alive = [t for t in range(self.config.teams) if self.reports[t]["status"] != "failed"]
        score = pool.prescore if pool.scores(len(alive)) else None
        async with asyncio.TaskGroup() as group:
            tasks = {t: group.create_task(self._team(t, spec, checkpoint, chains, reader, score)) for t in alive}
        return [s for s in (tasks[t].result() for t in alive) if s is not None]

    async def _team(self, team: int, spec: JobSpec, checkpoint: Checkpoint | None, chains: ChainSet,
                    reader: BaseReader, score: Prescore | None = None) -> Solution | None:
        events = _TeamEvents(self.emit, team)
        gateway = TeamGateway(self.gateway, temperature=self.config.temperature(team), model=self.config.model(team))
        first = team == 0  # asks the person and keeps the experience; the others only propose
        context = self.context.replace(gateway=gateway, emit=events, chains=chains, on_checkpoint=None,
                                       ask_human=self.context.ask_human if first else None,
                                       experience=self.context.experience if first else None)
        runner = ChainRunner(context, self.hooks_for(team))
        outcome = await runner.run(replace(spec, resume_from=checkpoint))
        self.usage[team].merge(outcome.usage)
        if not outcome.ok or outcome.checkpoint is None:
            self.reports[team].update(status="failed", error=outcome.error or "it finished without a checkpoint")
            return None
        self.reports[team]["status"] = "succeeded"
        cp = outcome.checkpoint
        solution = Solution(f"team {team}", dict(cp.get("files") or {}), reader, conclusions=dict(cp["conclusions"]),
                            test_report=outcome.test_report if events.tests_fresh else None, origin=cp)
        if score is not None:
            await score(solution)
        return solution

    async def _merge_call(self, messages: list[dict[str, str]], role: str, temperature: float | None) -> str:
        began = time.monotonic()
        completion = await self.gateway.complete(messages, role=role, temperature=temperature,
                                                 budget=self._spec.budget, job_id=self._spec.job_id)
        self.pool_usage.add(completion, time.monotonic() - began)
        await self.emit(Event(UsageData(model=completion.model, team="pool",
                                        prompt_tokens=completion.usage.prompt_tokens,
                                        completion_tokens=completion.usage.completion_tokens,
                                        cost=completion.usage.cost), role=role, job_id=self._spec.job_id))
        return completion.text

    async def _say(self, text: str, data: Note) -> None:
        note = LogData(level=data.get("level", "info"), text=text, team="pool", pool=data)
        await self.emit(Event(note, job_id=self._spec.job_id))

    def _pool(self, spec: JobSpec) -> Pool:
        budget = int(self.settings.model.context_window * CONTEXT_SHARE * 4)
        scorer = self.scorer or WorkspaceScorer(spec.workspace if self.chain.start == "repository" else None,
                                                test_command=spec.test_command or self.settings.test_command,
                                                scratch_dir=self.scratch_dir)
        merger = Merger(self._merge_call, spec.task, warn=lambda text: self._say(text, {"level": "warning"}))
        return Pool(merger, scorer, budget, say=self._say, merge_when=self.config.merge)

    def _merged_checkpoint(self, solution: Solution, end: int) -> JsonDict:
        origin = dict(solution.origin or {})
        return {**origin, "next": [end, 0, 0], "files": dict(solution.files),
                "test_report": msgspec.to_builtins(solution.test_report),
                "conclusions": dict(solution.conclusions), "usage": Tally().to_dict(), "states": [], "lint": [],
                "last_phase": self.chain.steps[end - 1].name}

    async def _finish(self, spec: JobSpec, final: Solution, started: float) -> TeamsOutcome:
        """Test the merged solution (unless it is one team's, tested as it is) and propose it."""
        root = spec.workspace if self.chain.start == "repository" else None
        scratch = await materialize(final, root, self.scratch_dir)
        try:
            report = final.test_report
            if report is None and self.chain.writes_code:
                command = spec.test_command or self.settings.test_command
                report = await testing.run_tests(scratch.root, command)
            change = scratch.proposed_change()
        finally:
            await asyncio.to_thread(scratch.cleanup)
        outcome = self._outcome("succeeded", final, started)
        outcome.test_report, outcome.change = report, None if change.empty else change
        return outcome

    def _outcome(self, status: Literal["succeeded", "failed"], final: Solution | None, started: float,
                 error: str | None = None) -> TeamsOutcome:
        total = Tally()
        for tally in [*self.usage, self.pool_usage]:
            total.merge(tally)
        total.seconds = time.monotonic() - started
        teams = [{**r, "usage": self.usage[t].to_dict()} for t, r in enumerate(self.reports)]  # team t is t-th
        teams.append({"team": "pool", "usage": self.pool_usage.to_dict()})
        outcome = TeamsOutcome(status, self.chain.name, usage=total, error=error,
                               teams=teams, pools=self.pools)
        if final is not None:
            outcome.conclusions = dict(final.conclusions)
            last = [p.name for p in self.chain.phases() if p.name in final.conclusions]
            outcome.conclusion = (final.conclusions[last[-1]] if last else "") + \
                f"\n(merged from {sum(r['status'] == 'succeeded' for r in self.reports)} teams: {final.label})"
            outcome.warnings = [f"team {r['team']} failed: {r['error']}" for r in self.reports if r["error"]]
        return outcome
