"""A chain's network phase, done by a MacNet network of agents instead of one dialogue.

The phase's rendered prompt (which carries the task, earlier conclusions and the code) is the
network's task; the phase's assistant role acts at the nodes, the ``reviewer`` role criticises
along the edges. What the output node ends with is written into the team's scratch copy, and
the chain carries on (review, tests) from there. Calls are charged to the phase and the job.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Mapping

import msgspec

from daemon.agents.hooks import DelegatedPhase
from daemon.agents.model import Chain, Phase, Produces
from daemon.agents.runner import CONTEXT_SHARE
from daemon.config import Settings
from daemon.llm.gateway import ModelGateway
from daemon.payloads import LogData, NetworkLayer
from daemon.teams.config import TeamsConfig
from daemon.teams.macnet import ACTOR_SYSTEM, CRITIC_ROLE, CRITIC_SYSTEM, Network
from daemon.teams.solution import Solution
from daemon.teams.topology import make_topology


def network_phase(chain: Chain, config: TeamsConfig) -> str | None:
    """The phase the network does: the configured one, else the chain's first phase that writes code."""
    if config.network_phase:
        return config.network_phase
    return next((p.name for p in chain.phases() if p.produces is Produces.CODE), None)


class NetworkDelegate:
    def __init__(self, gateway: ModelGateway, settings: Settings, config: TeamsConfig, chain: Chain) -> None:
        assert config.topology is not None
        self.gateway, self.settings, self.config = gateway, settings, config
        self.target = network_phase(chain, config)
        self.networks: list[Network] = []

    def handles(self, phase: Phase) -> bool:
        return phase.name == self.target

    async def produce(self, work: DelegatedPhase) -> tuple[dict[str, str | None], str]:
        assert self.config.topology is not None
        seed = zlib.crc32((work.job_id or "").encode())
        topology = make_topology(self.config.topology, self.config.network_size(), seed=seed)
        actor = work.chain.roles.get(work.phase.assistant)
        critic = work.chain.roles.get(CRITIC_ROLE)
        models = {work.phase.assistant: actor.model if actor else None, CRITIC_ROLE: critic.model if critic else None}

        async def complete(messages: list[dict[str, str]], role: str, temperature: float | None) -> str:
            began = time.monotonic()
            completion = await self.gateway.complete(messages, role=role, model=models.get(role),
                                                     temperature=temperature, budget=work.budget, job_id=work.job_id,
                                                     max_tokens=work.phase.token_cap)
            work.account(completion, time.monotonic() - began)
            return completion.text

        async def log(text: str, data: Mapping[str, object]) -> None:  # a finished layer's stats, or a level
            layer = msgspec.convert(data, NetworkLayer) if "layer" in data else None
            level = data.get("level", "info")
            await work.say(LogData(level=level if isinstance(level, str) else "info", text=text, network=layer), None)

        network = Network(
            topology, complete, task=work.prompt, base=Solution("the current code", base=work.read),
            concurrency=self.settings.model.concurrency, log=log,
            budget_chars=int(self.settings.model.context_window * CONTEXT_SHARE * 4),
            actor=(work.phase.assistant, f"{actor.prompt}\n\n{ACTOR_SYSTEM}" if actor else ACTOR_SYSTEM),
            critic=(CRITIC_ROLE, f"{critic.prompt}\n\n{CRITIC_SYSTEM}" if critic else CRITIC_SYSTEM))
        self.networks.append(network)
        result = await network.run()
        changed = ", ".join(sorted(result.files)) or "no file"
        return result.files, (f"{topology.size} agents in a {topology.kind} network ({len(topology.edges)} edges, "
                              f"{topology.max_depth + 1} layers, {network.calls} calls) changed {changed}")
