"""The puppeteer: an orchestrator that picks which of a chain's loops runs its next cycle.

Where a chain has consecutive loops (completion, review, test), the written order runs each to
its end in turn. With ``orchestrator = "heuristic"`` or ``"learned"`` the runner hands those
loops to a :class:`Puppeteer` instead (``daemon.agents.hooks``): before every cycle it reads
the state, asks its policy for the next agent, and stops when the policy says ``finish`` or
every loop has spent its cycles. The decisions form an :class:`~daemon.teams.policy.Episode`
that :class:`PolicyBook` learns from once the job's outcome is known.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from daemon.agents.hooks import LoopControl
from daemon.agents.model import Loop, Until
from daemon.agents.placeholders import find_unfinished
from daemon.payloads import LogData, OrchestratorStep
from daemon.teams.policy import (
    FINISH,
    Episode,
    HeuristicPolicy,
    LinearPolicy,
    PolicyParams,
    State,
    new_params,
    reinforce,
    reward,
)

if TYPE_CHECKING:
    from daemon.workspace.reports import TestReport
    from storage import AsyncStore


class Puppeteer:
    def __init__(self, policy: LinearPolicy | HeuristicPolicy) -> None:
        self.policy = policy
        self.episode = Episode()

    async def drive(self, loops: list[Loop], control: LoopControl) -> None:
        by_name = {loop.name: loop for loop in loops}
        kinds = tuple((loop.name, str(loop.until)) for loop in loops)
        cycles = dict.fromkeys(by_name, 0)
        satisfied: dict[str, int] = {}  # loop -> code states when its goal last held
        max_turns = sum(loop.max_cycles for loop in loops)
        last_action, last_agent = "start", "none"
        report_seen: TestReport | None = None
        tested_at = -1
        for turn in range(max_turns + 1):
            bench = control.bench
            states = len(bench.scratch.states) if bench.scratch is not None else 0
            if bench.test_report is not report_seen:
                report_seen, tested_at = bench.test_report, states
            tests = "unknown" if report_seen is None or tested_at != states else (
                "pass" if report_seen.ok else "fail")
            for name, at in list(satisfied.items()):
                if by_name[name].until is not Until.FINISHED and at != states:
                    del satisfied[name]  # the code changed since: the goal must be checked again
            available = tuple(n for n, loop in by_name.items() if cycles[n] < loop.max_cycles and n not in satisfied)
            reviews_open = sum(1 for n, loop in by_name.items()
                               if loop.until is Until.FINISHED and cycles[n] and n not in satisfied)
            files = [(p, bench.read(p) or "") for p in bench.changed_files()]
            state = State(last_action, last_agent, tests, len(await asyncio.to_thread(find_unfinished, files)),
                          len(bench.lint) + reviews_open, control.tokens, turn, max_turns, (*available, FINISH),
                          kinds)
            step = self.policy.choose(state)
            self.episode.steps.append(step)
            await control.say(LogData(level="info", text=f"orchestrator: next {step.action} "
                                      f"(turn {turn + 1}; tests {tests}; heuristic: {step.suggested})",
                                      orchestrator=OrchestratorStep(action=step.action, turn=turn + 1)))
            if step.action == FINISH:
                break
            loop = by_name[step.action]
            cycles[loop.name] += 1
            if await control.cycle(loop, cycles[loop.name]):
                satisfied[loop.name] = len(bench.scratch.states) if bench.scratch is not None else 0
            last_action, last_agent = loop.name, loop.phases[-1].assistant
        self.episode.tokens = control.tokens


class PolicyBook:
    """Learned policies by name (the chain's), kept in the store when there is one, else in memory.

    ``store``: where the policies are kept (None: in memory only).
    """

    def __init__(self, store: AsyncStore | None = None, *, cost_weight: float = 0.1) -> None:
        self.store, self.cost_weight = store, cost_weight
        self._memory: dict[str, tuple[PolicyParams, int]] = {}

    async def load(self, name: str) -> tuple[PolicyParams, int | None]:
        if self.store is None:
            params, version = self._memory.get(name, (new_params(), 0))
            return params, version or None
        latest = await self.store.latest_policy(name)
        return (new_params(), None) if latest is None else (latest.params, latest.version)

    async def learn(self, name: str, outcomes: list[tuple[Episode, bool]]) -> int | None:
        """Apply one REINFORCE update per episode (success, cost = its tokens) and store the result
        as the next version. Returns the new version (None when there was nothing to learn from)."""
        outcomes = [(e, ok) for e, ok in outcomes if e.steps]
        if not outcomes:
            return None
        for _attempt in range(5):  # another job may have stored a version meanwhile: redo on top of it
            params, version = await self.load(name)
            rewards = [reward(ok, e.tokens, cost_weight=self.cost_weight) for e, ok in outcomes]
            for (episode, _), value in zip(outcomes, rewards, strict=True):
                params = reinforce(params, episode, value)
            if self.store is None:
                self._memory[name] = (params, (version or 0) + 1)
                return (version or 0) + 1
            from storage.verbs.policies import PolicyConflict

            try:
                saved = await self.store.save_policy(name, params, parent_version=version,
                                                     episodes=params["episodes"], mean_reward=params["baseline"])
            except PolicyConflict:
                continue
            return saved.version
        raise RuntimeError(f"policy {name!r} kept changing under this update; it was not saved")
