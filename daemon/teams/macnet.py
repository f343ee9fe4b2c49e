"""MacNet: agents on a directed acyclic graph, run layer by layer in topological order.

Nodes are actors: each produces a solution. Edges are critics: the critic on ``u -> v`` reads
``u``'s solution and gives ``v`` the one highest-priority suggestion. Only solutions travel along
edges, never dialogues, so a prompt holds the task, one solution (or a group being merged) and
the suggestions. A node with one predecessor refines that solution; a node with several pools
them as Croto does (score and prune when more than 4 wait, greedy groups under the context
budget, one merge call per group). Layer ``d`` samples at temperature 1 - d / max depth.

Model calls run concurrently up to ``concurrency``. A node's solution is dropped as soon as its
last successor has used it, so memory holds one frontier of solutions, not the whole network.

    network = Network(topology, complete, task=prompt, base=Solution("base", base=read_file))
    result = await network.run()   # the output node's solution
    network.calls, network.stats
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TypedDict

from daemon.teams.merge import Complete, Merger
from daemon.teams.pool import Pool, distinct
from daemon.teams.scoring import Scorer, static_score
from daemon.teams.solution import EditApplyError, EditParseError, Solution, apply_reply
from daemon.teams.topology import Topology
from daemon.workspace.edits import EDIT_FORMAT_HELP

Log = Callable[[str, Mapping[str, object]], Awaitable[None]]
"""A note of the network: a finished layer's :class:`LayerStats`, or ``{"level": "warning"}``."""


class LayerStats(TypedDict):
    """One layer of the network as it runs: the fields of ``daemon.payloads.NetworkLayer``."""

    layer: int
    agents: int
    calls: int
    temperature: float | None
    finished_at: float  # seconds since the network started; 0 until the layer finishes
_node_calls: contextvars.ContextVar[list[int]] = contextvars.ContextVar("node_calls")  # one counter per node task

ACTOR_ROLE, CRITIC_ROLE = "programmer", "reviewer"
ACTOR_SYSTEM = "You are a programmer in a large team. You write complete, working code."
CRITIC_SYSTEM = ("You are a critic in a large team. You read a colleague's solution and name the one change "
                 "that would improve it most.")


def refine_prompt(task: str, solution: Solution, suggestion: str) -> str:
    return (f"{task}\n\nA colleague's solution (the files it wrote):\n\n{solution.render()}\n\n"
            f"A critic's suggestion: {suggestion}\n\nImprove the solution as the critic suggests. Send only the "
            f"files that change, as whole files or SEARCH/REPLACE blocks against the solution above."
            + ("" if EDIT_FORMAT_HELP[:40] in task else f"\n\n{EDIT_FORMAT_HELP}"))


def critic_prompt(task: str, solution: Solution) -> str:
    return (f"{task}\n\nA colleague's solution (the files it wrote):\n\n{solution.render()}\n\n"
            "Give the ONE most important improvement to make, with the file and what to change, in a few "
            "sentences. Do not write the code.")


class Network:
    def __init__(self, topology: Topology, complete: Complete, *, task: str, base: Solution,
                 concurrency: int = 8, budget_chars: int = 32_000, log: Log | None = None,
                 score: Scorer = static_score, actor: tuple[str, str] = (ACTOR_ROLE, ACTOR_SYSTEM),
                 critic: tuple[str, str] = (CRITIC_ROLE, CRITIC_SYSTEM)) -> None:
        self.topology, self._complete, self.task, self.base = topology, complete, task, base
        self.budget_chars, self.log, self.score = budget_chars, log, score
        self.actor, self.critic = actor, critic
        self._slots = asyncio.Semaphore(max(1, concurrency))
        self.calls = 0
        self.warnings: list[str] = []
        self.stats: list[LayerStats] = []
        self.peak_live = 0  # the most solutions held at once
        self.live = 0
        self._uses: list[int] = []
        self._futures: dict[int, asyncio.Future[Solution]] = {}
        self._started = 0.0

    async def call(self, system: str, prompt: str, role: str, temperature: float,
                   history: list[dict[str, str]] | None = None) -> str:
        messages = [{"role": "system", "content": system}, {"role": "user", "content": prompt}, *(history or [])]
        return await self._call(messages, role, temperature)

    async def _call(self, messages: list[dict[str, str]], role: str, temperature: float | None) -> str:
        async with self._slots:
            self.calls += 1
            _node_calls.get([0])[0] += 1
            return await self._complete(messages, role, temperature)

    async def run(self) -> Solution:
        topo = self.topology.validate()
        depths, layers = topo.depths(), topo.layers()
        left_in_layer = [len(layer) for layer in layers]
        self.stats = [{"layer": d, "agents": len(layer), "calls": 0, "temperature": topo.temperature(d),
                       "finished_at": 0.0} for d, layer in enumerate(layers)]
        self._uses = [len(s) for s in topo.succs]  # successors that still need each node's solution
        self._futures = {}
        self._started = time.monotonic()
        loop = asyncio.get_running_loop()
        for node in topo.order():
            self._futures[node] = loop.create_future()
        tasks = [asyncio.create_task(self._run_node(node, depths[node], left_in_layer)) for node in topo.order()]
        try:
            result = await self._futures[topo.output]
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for future in self._futures.values():
                if future.done() and not future.cancelled():
                    future.exception()  # seen: an error is reported once, by the run, not again at exit
            self._futures.clear()
        return result

    async def _run_node(self, node: int, depth: int, left_in_layer: list[int]) -> None:
        """Wait for the predecessors, run this node's critics and actor, publish its solution."""
        future = self._futures[node]
        try:
            preds = self.topology.preds[node]
            temperature = self.topology.temperature(depth)
            calls = [0]
            _node_calls.set(calls)  # this task's context: its critics and merges count here too
            solution = await self._node(node, preds, temperature)
            future.set_result(solution)
            self.live += 1
            self.peak_live = max(self.peak_live, self.live)
            for u in preds:  # this node has used them; drop those nobody else needs
                self._uses[u] -= 1
                if self._uses[u] == 0 and u != self.topology.output:
                    del self._futures[u]
                    self.live -= 1
            stat = self.stats[depth]
            stat["calls"] += calls[0]
            left_in_layer[depth] -= 1
            if left_in_layer[depth] == 0:
                stat["finished_at"] = round(time.monotonic() - self._started, 4)
                if self.log is not None:
                    await self.log(f"network layer {depth + 1}/{len(self.stats)}: {stat['agents']} agent(s), "
                                   f"{stat['calls']} call(s), temperature {temperature}", dict(stat))
        except asyncio.CancelledError:
            future.cancel()
            raise
        except Exception as exc:
            if not future.done():
                future.set_exception(exc)  # its successors fail with it, and so does the run
            raise

    async def _node(self, node: int, preds: list[int], temperature: float) -> Solution:
        label = f"agent {node}"
        if not preds:
            return await self._act(label, self.base, self.task, temperature)
        inputs_and_notes = await asyncio.gather(*(self._criticise(u, temperature) for u in preds))
        candidates = distinct([Solution(s.label, s.files, s.base, notes=note) for s, note in inputs_and_notes])
        if len(candidates) == 1:  # one predecessor (or all alike): refine it as its critic suggests
            only = candidates[0]
            return await self._act(label, only, refine_prompt(self.task, only, only.notes), temperature)
        merger = Merger(self._merge_call, self.task, warn=self._warn, temperature=temperature)
        merged = await Pool(merger, self.score, self.budget_chars).reduce(candidates)
        return Solution(label, merged.files, merged.base)

    async def _merge_call(self, messages: list[dict[str, str]], role: str, temperature: float | None) -> str:
        return await self._call(messages, self.actor[0], temperature)

    async def _criticise(self, pred: int, temperature: float) -> tuple[Solution, str]:
        """The critic on the edge from ``pred``: waits for its solution, returns it with one suggestion."""
        solution = await asyncio.shield(self._futures[pred])
        reply = await self.call(self.critic[1], critic_prompt(self.task, solution), self.critic[0], temperature)
        return solution, " ".join(reply.split())[:2000] or "(no suggestion)"

    async def _act(self, label: str, start: Solution, prompt: str, temperature: float) -> Solution:
        history: list[dict[str, str]] = []
        for attempt in range(2):
            reply = await self.call(self.actor[1], prompt, self.actor[0], temperature, history)
            try:
                return start.derive(label, apply_reply(start, reply))
            except (EditParseError, EditApplyError) as exc:
                if attempt == 0:
                    history = [{"role": "assistant", "content": reply},
                               {"role": "user", "content": f"Your edits were not applied. {exc}"}]
                else:
                    await self._warn(f"{label}: its edits could not be used ({str(exc)[:160]}); it passes on "
                                     f"{start.label}'s solution unchanged")
        return start.derive(label, start.files)

    async def _warn(self, text: str) -> None:
        if len(self.warnings) < 50:  # a thousand agents must not flood the job's events
            self.warnings.append(text)
            if self.log is not None:
                await self.log(text, {"level": "warning"})
