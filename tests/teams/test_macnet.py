"""MacNet networks: run in topological order, only solutions travel along edges, critics give one
suggestion per edge, several predecessors are merged, every layer has its temperature; a
thousand agents run in bounded time and memory; a chain's code phase can be done by a network."""

from __future__ import annotations

import asyncio
import itertools
import time
import tracemalloc

from daemon.agents.context import RunContext
from daemon.agents.job import JobSpec
from daemon.events import EventKind
from daemon.teams.macnet import Network
from daemon.teams.run import TeamsRunner
from daemon.teams.solution import Solution
from daemon.teams.topology import make_topology
from tests.teams.conftest import mini_chains, program

SECRET_REASONING = "I am thinking aloud about private details"


def script_network(fake_llm) -> None:  # type: ignore[no-untyped-def]
    notes = itertools.count(1)
    fake_llm.add_rule(lambda body: f"Handle empty input in app.py (critic {next(notes)}).", system="You are a critic")
    fake_llm.add_rule(program("app.py", "def run(text):\n    return text or ''"), system="keep the strengths")
    fake_llm.add_rule(program("app.py", "def run(text):\n    return text or ''"), user="A critic's suggestion")
    fake_llm.add_rule(f"{SECRET_REASONING}\n\n" + program("app.py", "def run(text):\n    return text"),
                      user="Write app.py")


async def test_layers_run_in_order_with_their_temperatures_and_only_solutions_travel(fake_llm, complete) -> None:
    script_network(fake_llm)
    topo = make_topology("layered", 6, width=2)  # [0] -> [1, 2] -> [3, 4] -> [5], complete between layers
    network = Network(topo, complete, task="Write app.py with run(text).", base=Solution("base"), concurrency=4)

    result = await network.run()

    assert result.files == {"app.py": "def run(text):\n    return text or ''\n"}
    assert network.calls == topo.size + len(topo.edges) == len(fake_llm.requests) == 14
    by_kind = {"actor": [], "critic": [], "merge": []}
    for request in fake_llm.requests:
        kind = ("critic" if "You are a critic" in request.system else
                "merge" if "keep the strengths" in request.system else "actor")
        by_kind[kind].append(request.body["temperature"])
    assert by_kind["actor"] == [1.0, 0.6667, 0.6667]  # the input, then the two single-input refiners of layer 1
    assert sorted(by_kind["critic"]) == [0.0] * 2 + [0.3333] * 4 + [0.6667] * 2  # one critic per edge, at its
    # target's temperature
    assert sorted(by_kind["merge"]) == [0.0, 0.3333, 0.3333]  # nodes with two predecessors merge them
    merge = next(r for r in fake_llm.requests if "keep the strengths" in r.system)
    assert "A critic's suggestion for it: Handle empty input in app.py (critic" in merge.last_user
    # a node's reasoning never travels: later prompts hold its files, not its dialogue
    assert all(SECRET_REASONING not in r.prompt for r in fake_llm.requests[1:])
    assert [s["calls"] for s in network.stats] == [1, 2 * 2, 2 * 3, 3]  # critics + actor (or merge) per node
    assert [s["finished_at"] for s in network.stats] == sorted(s["finished_at"] for s in network.stats)


async def _stub(messages, role, temperature):  # type: ignore[no-untyped-def]
    await asyncio.sleep(0)
    if role == "reviewer":
        return "Name the constant."
    return program("app.py", f"VALUE = {len(messages[-1]['content']) % 7}")


async def _run_network(agents: int) -> tuple[Network, float]:
    network = Network(make_topology("small-world", agents, seed=1), _stub, task="Write app.py.",
                      base=Solution("base"), concurrency=32)
    began = time.perf_counter()
    await network.run()
    return network, time.perf_counter() - began


async def test_a_thousand_agents_run_in_bounded_time_and_linear_memory() -> None:
    network, seconds = await _run_network(1000)
    assert network.calls >= 1000 + 2000 and not network.warnings
    assert seconds < 30  # about 0.5 s on an idle machine: the engine's own cost per call is small
    peaks = {}
    for agents in (250, 1000):
        tracemalloc.start()
        await _run_network(agents)
        peaks[agents] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert peaks[1000] < 5 * peaks[250]  # linear, not quadratic, in the number of agents
    assert peaks[1000] < 40_000_000
    assert network.peak_live < 500  # solutions are dropped once their successors have them


async def test_cancelling_a_network_leaves_no_task_running() -> None:
    started = asyncio.Event()

    async def slow(messages, role, temperature):  # type: ignore[no-untyped-def]
        started.set()
        await asyncio.sleep(30)
        return "never"

    network = Network(make_topology("small-world", 50), slow, task="t", base=Solution("base"), concurrency=8)
    before = asyncio.all_tasks()
    task = asyncio.create_task(network.run())
    await started.wait()
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    await asyncio.sleep(0)
    assert asyncio.all_tasks() - before - {task} == set()


async def test_a_network_does_the_chains_code_phase_and_the_chain_carries_on(fake_llm, gateway, recorder,
                                                                             tmp_path) -> None:
    fake_llm.add_rule("<INFO> Finished", user="Give the ONE most important problem")
    script_network(fake_llm)
    context = RunContext.of(gateway, recorder, chains=mini_chains(tmp_path), scratch_dir=tmp_path / "scratch")
    runner = TeamsRunner(context, options={"topology": "star", "agents": 5})

    outcome = await runner.run(JobSpec(chain="mini", task="Write app.py with run(text).", job_id="job-net"))

    assert outcome.ok, outcome.error
    assert outcome.change is not None and outcome.change.files == ["app.py"]
    assert "return text or ''" in outcome.change.edits[0].after
    coding = next(e for e in recorder.of(EventKind.PHASE_FINISHED) if e.data.phase == "coding")
    assert coding.data.delegated and coding.data.calls == 5 + 6  # 5 agents, 6 edges in a star of 5
    assert "5 agents in a star network" in outcome.conclusions["coding"]
    assert len(fake_llm.prompts_containing("keep the strengths")) == 1  # the output merges the 3 spokes
    assert [e.data.phase for e in recorder.of(EventKind.PHASE_FINISHED)] == ["coding", "review_comment"]
    assert outcome.usage.calls == len(fake_llm.requests) == 12
    layers = [e for e in recorder.of(EventKind.LOG) if e.data.network is not None]
    assert [e.data.network.layer for e in layers] == [0, 1, 2]
    assert not list((tmp_path / "scratch").iterdir())
