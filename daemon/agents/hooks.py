"""Two hooks through which ``daemon.teams`` changes how a chain runs, without the engine knowing teams.

- A **phase delegate** does one phase's work in place of the instructor/assistant dialogue (a
  MacNet network of agents writes the code of the chain's network phase). It gets a
  :class:`DelegatedPhase` and returns ``(files, conclusion)``; the runner writes the files into
  the scratch copy (confined, as every edit), records the code state and carries on::

      class Delegate:
          def handles(self, phase: Phase) -> bool: ...
          async def produce(self, work: DelegatedPhase) -> tuple[dict[str, str | None], str]: ...

- An **orchestrator** decides, for a run of consecutive loops, which loop runs its next cycle
  and when to stop (the puppeteer). It gets the loops and a :class:`LoopControl`::

      class Orchestrator:
          async def drive(self, loops: list[Loop], control: LoopControl) -> None: ...
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from daemon.agents.model import Chain, Loop, Phase, Until
from daemon.agents.workbench import Workbench
from daemon.events import Say
from daemon.llm.budget import Budget
from daemon.llm.gateway import Completion
from daemon.payloads import Payload

if TYPE_CHECKING:
    from daemon.agents.runner import _Run

Account = Callable[[Completion, float], None]
"""Charge one model call (and the seconds it took) to the job and the current phase."""


@dataclass
class DelegatedPhase:
    phase: Phase
    prompt: str                          # the phase's rendered template
    chain: Chain
    read: Callable[[str], str | None]    # the team's current text of a file (None: no such file)
    say: Say                             # say(payload, role): an event of this phase
    account: Account
    budget: Budget | None
    job_id: str | None


class PhaseDelegate(Protocol):
    def handles(self, phase: Phase) -> bool: ...

    async def produce(self, work: DelegatedPhase) -> tuple[dict[str, str | None], str]: ...


class Orchestrator(Protocol):
    async def drive(self, loops: list[Loop], control: LoopControl) -> None: ...


@dataclass(frozen=True)
class RunHooks:
    """The hooks of one run (``ChainRunner(context, hooks)``); none: the chain runs as written."""

    delegate: PhaseDelegate | None = None
    orchestrator: Orchestrator | None = None


NO_HOOKS = RunHooks()


class LoopControl:
    """What an orchestrator may do inside a run: run one cycle of a loop, and read the state."""

    def __init__(self, run: _Run) -> None:
        self._run = run

    @property
    def bench(self) -> Workbench:
        bench = self._run.bench
        assert bench is not None, "a run's workbench exists before its orchestrator runs"
        return bench

    @property
    def tokens(self) -> int:
        """Tokens the job has used so far."""
        return self._run.meter.job.tokens

    async def say(self, data: Payload) -> None:
        await self._run.say(data)

    async def cycle(self, loop: Loop, number: int) -> bool:
        """Run one cycle of ``loop`` (``number`` counts from 1). True when the loop's goal holds: the
        tests pass or no placeholder is left (checked first; nothing else runs then), or the
        reviewer answered with the stop word."""
        run = self._run
        if loop.until is not Until.FINISHED and (await run._loop_done(loop) or await run._nothing_to_test(loop)):
            return True
        for position, phase in enumerate(loop.phases):
            concluded = await run._phase(phase, number)
            if loop.until is Until.FINISHED and position == 0 and run._says_done(loop, phase, concluded):
                return True
        return False
