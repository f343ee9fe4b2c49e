"""What one run of the engine needs from its caller, passed once: :class:`RunContext`.

The daemon (``daemon.jobs.engine``) builds one per job; ``TeamsRunner`` hands it on to
``CrossTeams`` and ``ChainRunner``, and each team of a cross-team run gets its own copy (its
gateway and event sink; questions and experience for the first team only). How teams change a
run (a phase delegate, an orchestrator) is passed beside it: ``daemon.agents.hooks``::

    context = RunContext(gateway, emit, settings, ask_human=ask, on_checkpoint=job.save_checkpoint)
    outcome = await ChainRunner(context).run(spec)
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict, Unpack

from daemon.agents.dialogue import AskHuman
from daemon.agents.loader import load_chains
from daemon.agents.model import ChainSet
from daemon.config import Settings
from daemon.events import EventSink
from daemon.json_types import JsonDict
from daemon.llm.gateway import ModelGateway

if TYPE_CHECKING:
    from daemon.agents.job import JobSpec
    from daemon.experience.session import JobExperience

SaveCheckpoint = Callable[[str, JsonDict], Awaitable[None]]
"""Called after every finished phase with (last phase, checkpoint): what a restarted daemon resumes."""


class ContextOptions(TypedDict, total=False):
    """The fields of a :class:`RunContext` that have defaults (see there)."""

    ask_human: AskHuman | None
    on_checkpoint: SaveCheckpoint | None
    chains: ChainSet | None
    scratch_dir: Path | None
    experience: JobExperience | None


class ContextChanges(ContextOptions, total=False):
    """The fields of a :class:`RunContext` to change, for :meth:`RunContext.replace`."""

    gateway: ModelGateway
    emit: EventSink
    settings: Settings


@dataclass(frozen=True)
class RunContext:
    gateway: ModelGateway
    emit: EventSink
    settings: Settings
    ask_human: AskHuman | None = None  # None: questions for a person are answered "no answer"
    on_checkpoint: SaveCheckpoint | None = None
    chains: ChainSet | None = None  # None: the built-in chains and the repository's own
    scratch_dir: Path | None = None  # where scratch copies go (None: the system's temporary folder)
    experience: JobExperience | None = None  # None: the run neither uses nor records experience

    @classmethod
    def of(cls, gateway: ModelGateway, emit: EventSink, settings: Settings | None = None,
           **rest: Unpack[ContextOptions]) -> RunContext:
        """A context whose settings default to the gateway's model settings (tests and benchmarks)."""
        return cls(gateway, emit, settings or Settings(model=gateway.settings), **rest)

    def replace(self, **changes: Unpack[ContextChanges]) -> RunContext:
        return dataclasses.replace(self, **changes)

    async def chains_for(self, spec: JobSpec) -> ChainSet:
        """The chains this run may use: the given ones, else those of the job's repository."""
        if self.chains is not None:
            return self.chains
        return await asyncio.to_thread(load_chains, spec.workspace)
