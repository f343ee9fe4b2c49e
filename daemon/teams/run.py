"""Run a job's chain at the scale its configuration asks for: the one entry point the daemon uses.

    runner = TeamsRunner(gateway, emit, ask_human, settings, options=job.options, policies=PolicyBook(store))
    outcome = await runner.run(spec)   # a JobOutcome (a TeamsOutcome with per-team costs for several teams)

The chain file's ``teams``/``topology``/``agents``/``orchestrator`` (``daemon.teams.config``),
overridden by the job's options, decide: nothing set runs :class:`ChainRunner` as it is; a
``topology`` hands the network phase to a MacNet network; an ``orchestrator`` lets the puppeteer
pick the loops' cycles (and, when ``learned``, learn from the outcome); ``teams > 1`` runs Croto.
They combine: four teams, each with a network and an orchestrator, is a valid job.
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

from daemon.agents.dialogue import AskHuman
from daemon.agents.job import JobOutcome, JobSpec
from daemon.agents.loader import ChainError, load_chains
from daemon.agents.model import Chain, ChainSet
from daemon.agents.runner import ChainRunner, SaveCheckpoint
from daemon.config import Settings
from daemon.events import Event, EventKind, EventSink
from daemon.llm.gateway import ModelGateway
from daemon.teams.config import TeamsConfig, TeamsConfigError
from daemon.teams.croto import CrossTeams
from daemon.teams.network_phase import NetworkDelegate, network_phase
from daemon.teams.policy import HeuristicPolicy, LinearPolicy
from daemon.teams.puppeteer import PolicyBook, Puppeteer
from daemon.teams.scoring import Scorer


class TeamsRunner:
    def __init__(self, gateway: ModelGateway, emit: EventSink, ask_human: AskHuman | None = None,
                 settings: Settings | None = None, *, on_checkpoint: SaveCheckpoint | None = None,
                 chains: ChainSet | None = None, scratch_dir: Path | None = None,
                 options: dict[str, Any] | None = None, policies: PolicyBook | None = None,
                 experience: Any = None, scorer: Scorer | None = None, rng: random.Random | None = None) -> None:
        self.gateway, self.emit, self.ask_human = gateway, emit, ask_human
        self.settings = settings or Settings(model=gateway.settings)
        self.on_checkpoint, self.chains, self.scratch_dir = on_checkpoint, chains, scratch_dir
        self.options, self.policies = options or {}, policies or PolicyBook()
        self.experience, self.scorer, self.rng = experience, scorer, rng or random.Random()
        self.puppeteers: list[Puppeteer] = []
        self.delegates: list[NetworkDelegate] = []

    async def run(self, spec: JobSpec) -> JobOutcome:
        try:
            chains = self.chains if self.chains is not None else await asyncio.to_thread(load_chains, spec.workspace)
            chain = chains.get(spec.chain)
            config = chain.scale.with_options(self.options)
            _check(chain, config)
        except (ChainError, KeyError, TeamsConfigError) as exc:
            message = exc.args[0] if isinstance(exc, KeyError) else str(exc)
            return JobOutcome("failed", spec.chain, error=message)
        if config.plain:
            return await ChainRunner(self.gateway, self.emit, self.ask_human, self.settings, chains=chains,
                                     on_checkpoint=self.on_checkpoint, scratch_dir=self.scratch_dir,
                                     experience=self.experience).run(spec)
        policy = await self._policy(chain, config)

        def runner_options(team: int) -> dict[str, Any]:
            options: dict[str, Any] = {}
            if config.topology is not None:
                options["delegate"] = NetworkDelegate(self.gateway, self.settings, config, chain)
                self.delegates.append(options["delegate"])
            if policy is not None:
                options["orchestrator"] = Puppeteer(policy)
                self.puppeteers.append(options["orchestrator"])
            return options

        if config.teams > 1:
            outcome: JobOutcome = await CrossTeams(
                self.gateway, self.emit, self.ask_human, self.settings, chain=chain, config=config,
                on_checkpoint=self.on_checkpoint, scratch_dir=self.scratch_dir, runner_options=runner_options,
                scorer=self.scorer, experience=self.experience).run(spec)
        else:
            outcome = await ChainRunner(self.gateway, self.emit, self.ask_human, self.settings, chains=chains,
                                        on_checkpoint=self.on_checkpoint, scratch_dir=self.scratch_dir,
                                        experience=self.experience, **runner_options(0)).run(spec)
        if config.orchestrator == "learned":
            await self._learn(spec, chain, outcome)
        return outcome

    async def _policy(self, chain: Chain, config: TeamsConfig) -> LinearPolicy | HeuristicPolicy | None:
        if config.orchestrator is None:
            return None
        if config.orchestrator == "heuristic":
            return HeuristicPolicy()
        params, _version = await self.policies.load(chain.name)
        return LinearPolicy(params, rng=self.rng)

    async def _learn(self, spec: JobSpec, chain: Chain, outcome: JobOutcome) -> None:
        """One REINFORCE update per episode: success = the job succeeded and its tests (if any) pass."""
        success = outcome.ok and (outcome.test_report is None or bool(outcome.test_report.get("ok")))
        try:
            version = await self.policies.learn(chain.name, [(p.episode, success) for p in self.puppeteers])
        except Exception as exc:  # learning must never cost the user the job's result
            outcome.warnings.append(f"orchestrator: the policy could not be updated ({type(exc).__name__}: {exc})")
            return
        if version is not None:
            await self.emit(Event(EventKind.LOG, {"level": "info", "text": f"orchestrator policy {chain.name!r} "
                                                  f"learnt from this job: now version {version}"},
                                  job_id=spec.job_id))


def _check(chain: Chain, config: TeamsConfig) -> None:
    if config.teams > 1 and not chain.writes_code:
        raise TeamsConfigError("teams", f"teams = {config.teams} needs a chain that writes code; "
                               f"{chain.name!r} does not (try the change or build chain)")
    if config.topology is not None and network_phase(chain, config) is None:
        raise TeamsConfigError("topology", f"topology needs a phase that writes code; chain {chain.name!r} has none")
    if config.agents is not None and config.topology is None:
        raise TeamsConfigError("agents", f"agents = {config.agents} needs a topology (for example small-world)")
    if config.orchestrator is not None and not any(s.kind == "loop" for s in chain.steps):
        raise TeamsConfigError("orchestrator", f"an orchestrator picks among a chain's loops; chain {chain.name!r} "
                               "has none")
