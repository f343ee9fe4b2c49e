"""Run a job's chain at the scale its configuration asks for: the one entry point the daemon uses.

    runner = TeamsRunner(RunContext(gateway, emit, settings, ask_human=ask_human), options=job.options.scaling(),
                         policies=PolicyBook(store))
    outcome = await runner.run(spec)   # a JobOutcome (a TeamsOutcome with per-team costs for several teams)

The chain file's ``teams``/``topology``/``agents``/``orchestrator`` (``daemon.teams.config``),
overridden by the job's options, decide: nothing set runs :class:`ChainRunner` as it is; a
``topology`` hands the network phase to a MacNet network; an ``orchestrator`` lets the puppeteer
pick the loops' cycles (and, when ``learned``, learn from the outcome); ``teams > 1`` runs Croto.
They combine: four teams, each with a network and an orchestrator, is a valid job.
"""

from __future__ import annotations

import random
from collections.abc import Mapping

from daemon.agents.context import RunContext
from daemon.agents.hooks import RunHooks
from daemon.agents.job import JobOutcome, JobSpec
from daemon.agents.loader import ChainError
from daemon.agents.model import Chain
from daemon.agents.runner import ChainRunner
from daemon.events import Event
from daemon.payloads import LogData
from daemon.teams.config import TeamsConfig, TeamsConfigError
from daemon.teams.croto import CrossTeams
from daemon.teams.network_phase import NetworkDelegate, network_phase
from daemon.teams.policy import HeuristicPolicy, LinearPolicy
from daemon.teams.puppeteer import PolicyBook, Puppeteer
from daemon.teams.scoring import Scorer


class TeamsRunner:
    def __init__(self, context: RunContext, *, options: Mapping[str, object] | None = None,
                 policies: PolicyBook | None = None, scorer: Scorer | None = None,
                 rng: random.Random | None = None) -> None:
        self.context = context
        self.options, self.policies = options or {}, policies or PolicyBook()
        self.scorer, self.rng = scorer, rng or random.Random()
        self.puppeteers: list[Puppeteer] = []
        self.delegates: list[NetworkDelegate] = []

    async def run(self, spec: JobSpec) -> JobOutcome:
        try:
            chains = await self.context.chains_for(spec)
            chain = chains.get(spec.chain)
            config = chain.scale.with_options(self.options)
            _check(chain, config)
        except (ChainError, KeyError, TeamsConfigError) as exc:
            message = exc.args[0] if isinstance(exc, KeyError) else str(exc)
            return JobOutcome("failed", spec.chain, error=message)
        context = self.context.replace(chains=chains)
        if config.plain:
            return await ChainRunner(context).run(spec)
        policy = await self._policy(chain, config)

        def hooks_for(team: int) -> RunHooks:
            delegate = NetworkDelegate(context.gateway, context.settings, config, chain) \
                if config.topology is not None else None
            orchestrator = Puppeteer(policy) if policy is not None else None
            if delegate is not None:
                self.delegates.append(delegate)
            if orchestrator is not None:
                self.puppeteers.append(orchestrator)
            return RunHooks(delegate=delegate, orchestrator=orchestrator)

        if config.teams > 1:
            outcome: JobOutcome = await CrossTeams(context, chain=chain, config=config, hooks_for=hooks_for,
                                                   scorer=self.scorer).run(spec)
        else:
            outcome = await ChainRunner(context, hooks_for(0)).run(spec)
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
        success = outcome.ok and (outcome.test_report is None or outcome.test_report.ok)
        try:
            version = await self.policies.learn(chain.name, [(p.episode, success) for p in self.puppeteers])
        except Exception as exc:  # learning must never cost the user the job's result
            outcome.warnings.append(f"orchestrator: the policy could not be updated ({type(exc).__name__}: {exc})")
            return
        if version is not None:
            text = f"orchestrator policy {chain.name!r} learnt from this job: now version {version}"
            await self.context.emit(Event(LogData(level="info", text=text), job_id=spec.job_id))


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
