"""Teams at scale: a 1,000-agent MacNet run against its lower bound, memory per agent, and Croto
(8 teams) against one team for wall time, quality and tokens, on fake-scripted tasks.

1. MacNet, engine only: a small-world network of ``--agents`` agents; every model call is an
   in-process stub that sleeps ``--latency`` seconds. Lower bound = max(critical path in calls x
   latency, calls x latency / concurrency); the ratio wall / bound is the scheduler's overhead.
   Peak traced Python memory at 250 / 500 / 1,000 agents shows how memory grows.
2. MacNet, full stack: the same network through the real gateway, litellm and HTTP to the fake
   OpenAI-compatible server (a separate process, fixed latency per call; ``--http-latency``).
3. Croto: ``--tasks`` fake-scripted tasks (write ``f(x)``; ``python check.py`` judges it) on a
   chain of coding, a review loop (one comment, one fix, then satisfied: 4 calls) and the check.
   The fake programmer is right with probability ``--p-right`` per draft, else writes a bug or a
   stub; the fake merger adds nothing (it returns solution 1), so any quality gain comes from
   Croto's scoring and pruning alone. One team vs ``--teams`` teams: wall time, CPU (this process
   and its children: sandboxed checks, ruff), quality (tasks whose proposed code passes the
   check), tokens; per ``--merge`` setting. The fake runs in its own process, as a model server
   would. With CPU in the picture, ``teams`` teams cannot finish faster than max(one team's wall
   time, their CPU / cores): the script prints that floor too.

    .venv/bin/python bench/teams.py --http-latency 0.02 --http-latency 0.2 --croto-latency 0.02 \
        --croto-latency 0.2 --merge always --merge when-needed
    .venv/bin/python bench/teams.py --skip-macnet --croto-latency 2 --tasks 3 --merge always --merge when-needed
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import random
import re
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from daemon.agents.context import RunContext
from daemon.agents.job import JobSpec
from daemon.agents.loader import load_chain_file
from daemon.agents.model import ChainSet
from daemon.config import ModelSettings, Secret, Settings
from daemon.llm.gateway import Gateway, import_litellm
from daemon.teams.config import MERGE_WHEN
from daemon.teams.macnet import Network
from daemon.teams.run import TeamsRunner
from daemon.teams.solution import Solution
from daemon.teams.topology import make_topology
from daemon.workspace.change import apply_change
from tests.fakes.llm_server import FakeLLM, ServerProcess, serve_until_signalled

CORES = len(os.sched_getaffinity(0))
ACTOR_REPLY = "```python app.py\ndef f(x):\n    return 2 * x\n```"
CRITIC_REPLY = "Name the constant in app.py."
COMMENT = "app.py: mark the code as reviewed."

CHAIN = '''
name = "bench"
description = "coding, a review loop, then the check"
start = "empty"

[[steps]]
phase = "coding"
instructor = "cto"
assistant = "programmer"
produces = "code"
max_questions = 0
template = """Task: {task}

Write app.py and check.py.

{edit_format}"""

[[steps]]
loop = "review"
until = "finished"
max_cycles = 2

[[steps.phases]]
phase = "review_comment"
instructor = "programmer"
assistant = "reviewer"
reflect = false
max_questions = 0
template = """{code}

Give the ONE most important problem. If nothing is wrong, reply only: <INFO> Finished"""

[[steps.phases]]
phase = "review_modify"
instructor = "reviewer"
assistant = "programmer"
produces = "code"
max_questions = 0
template = """{review_comment}

{code}

{edit_format}"""

[[steps]]
tool = "tests"
'''


def bound(network: Network, latency: float, concurrency: int) -> tuple[float, int]:
    topo = network.topology
    critical = 1 + 2 * topo.max_depth  # the input's actor, then a critic and an actor per layer
    return max(critical * latency, network.calls * latency / concurrency), critical


# -- 1. MacNet, engine only -------------------------------------------------------------------
async def macnet_stub(agents: int, latency: float, concurrency: int) -> dict:
    async def stub(messages, role, temperature):  # type: ignore[no-untyped-def]
        await asyncio.sleep(latency)
        return CRITIC_REPLY if role == "reviewer" else ACTOR_REPLY

    network = Network(make_topology("small-world", agents, seed=1), stub, task="Write app.py with f(x).",
                      base=Solution("base"), concurrency=concurrency)
    began = time.perf_counter()
    await network.run()
    wall = time.perf_counter() - began
    low, critical = bound(network, latency, concurrency)
    return {"agents": agents, "edges": len(network.topology.edges), "layers": network.topology.max_depth + 1,
            "calls": network.calls, "critical": critical, "wall": wall, "bound": low,
            "ratio": wall / low if low else 0.0, "peak_live": network.peak_live}


def memory_per_agent(sizes: tuple[int, ...]) -> list[tuple[int, float]]:
    out = []
    for agents in sizes:
        tracemalloc.start()
        asyncio.run(macnet_stub(agents, 0.0, 32))
        out.append((agents, tracemalloc.get_traced_memory()[1] / 1e6))
        tracemalloc.stop()
    return out


# -- 2. MacNet, full stack --------------------------------------------------------------------
async def macnet_http(agents: int, latency: float, concurrency: int) -> dict:
    script = {"default_reply": ACTOR_REPLY, "rules": [{"system": "You are a critic", "reply": CRITIC_REPLY}]}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(script, handle)
    try:
        with ServerProcess("--latency", str(latency), "--script", handle.name) as url:
            return await _macnet_http(agents, latency, concurrency, url)
    finally:
        os.unlink(handle.name)


async def _macnet_http(agents: int, latency: float, concurrency: int, url: str) -> dict:
    await asyncio.to_thread(import_litellm)
    gateway = Gateway(ModelSettings(default="openai/fake-model", api_base=f"{url}/v1", api_key=Secret("sk-fake"),
                                    max_retries=2, concurrency=concurrency))

    async def complete(messages, role, temperature):  # type: ignore[no-untyped-def]
        return (await gateway.complete(messages, role=role, temperature=temperature)).text

    network = Network(make_topology("small-world", agents, seed=1), complete, task="Write app.py with f(x).",
                      base=Solution("base"), concurrency=concurrency)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    cpu, began = time.process_time(), time.perf_counter()
    await network.run()
    wall, cpu = time.perf_counter() - began, time.process_time() - cpu
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    low, _ = bound(network, latency, concurrency)
    return {"agents": agents, "calls": network.calls, "wall": wall, "bound": low, "ratio": wall / low,
            "cpu_per_call_ms": 1000 * cpu / network.calls, "peak_rss_mb": rss_after,
            "rss_growth_mb": rss_after - rss_before}


# -- 3. Croto ---------------------------------------------------------------------------------
def task_code(k: int, kind: str, draft: int) -> str:
    body = {"right": f"return {k} * x", "bug": f"return {k} + x", "stub": "pass"}[kind]
    return (f"```python app.py\n# draft {draft}\ndef f(x):\n    {body}\n```\n\n"
            f"```python check.py\nimport app\n\nassert app.f(3) == {3 * k}\n```")


def script_croto(llm: FakeLLM, p_right: float, seed: int) -> None:
    rng = random.Random(seed)

    def programmer(body: dict) -> str:
        k = int(re.search(r"task (\d+)", body["messages"][-1]["content"]).group(1))  # type: ignore[union-attr]
        kind = "right" if rng.random() < p_right else rng.choice(["bug", "stub"])
        return task_code(k, kind, rng.randrange(10**6))  # every draft differs, as a model's would

    def merger(body: dict) -> str:  # adds nothing: returns solution 1 as it is
        text = body["messages"][-1]["content"]
        first = text.split("### Solution 2")[0]
        return "\n\n".join(re.findall(r"```python [\w.]+\n.*?\n```", first, re.DOTALL))

    def reviewer(body: dict) -> str:  # one comment per team, then satisfied
        return "<INFO> Finished" if "# reviewed" in body["messages"][-1]["content"] else COMMENT

    def modifier(body: dict) -> str:  # does what the comment asks, and nothing more
        code = re.search(r"```python app.py\n(.*?)\n```", body["messages"][-1]["content"], re.DOTALL)
        return f"```python app.py\n{code.group(1) if code else ''}\n# reviewed\n```"

    llm.add_rule(merger, system="keep the strengths")
    llm.add_rule(reviewer, user="Give the ONE most important problem")
    llm.add_rule(modifier, user=COMMENT)
    llm.add_rule(programmer, user="Write app.py and check.py")


def passes(change) -> bool:  # type: ignore[no-untyped-def]
    if change is None:
        return False
    with tempfile.TemporaryDirectory() as folder:
        apply_change(Path(folder), change)
        return subprocess.run([sys.executable, "check.py"], cwd=folder, capture_output=True, timeout=30).returncode == 0


def croto_server(latency: float, p_right: float, seed: int) -> ServerProcess:
    """The scripted fake in its own process (this script with ``--serve-croto``)."""
    return ServerProcess(argv=[sys.executable, str(Path(__file__).resolve()), "--serve-croto", "--croto-latency",
                               str(latency), "--p-right", str(p_right), "--seed", str(seed)])


async def serve_croto(latency: float, p_right: float, seed: int) -> None:
    llm = FakeLLM(latency=latency)
    script_croto(llm, p_right, seed)
    await serve_until_signalled(llm)


def cpu_seconds() -> float:
    """CPU of this process and its finished children (sandboxed test runs, ruff), not the server's."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


async def croto(tasks: int, teams: int, latency: float, p_right: float,
                options: dict | None = None) -> dict[int, dict]:
    results: dict[int, dict] = {}
    await asyncio.to_thread(import_litellm)  # once, before any timing
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench.toml"
        path.write_text(CHAIN)
        chain = load_chain_file(path)
        chains = ChainSet({chain.name: chain}, chain.roles)
        for count in (1, teams):
            with croto_server(latency, p_right, seed=count) as url:
                settings = ModelSettings(default="openai/fake-model", api_base=f"{url}/v1", api_key=Secret("sk-fake"),
                                         max_retries=1, concurrency=2 * teams)
                gateway = Gateway(settings)
                walls, tokens, cpu, good = [], [], [], 0
                await gateway.complete([{"role": "user", "content": "warm up"}])  # litellm's first call is slow
                for k in range(1, tasks + 1):
                    runner = TeamsRunner(RunContext(gateway, _ignore, Settings(model=settings), chains=chains),
                                         options={"teams": count, **(options or {})} if count > 1 else {})
                    began, cpu_began = time.perf_counter(), cpu_seconds()
                    outcome = await runner.run(JobSpec(chain="bench", task=f"task {k}: write f(x) = {k}x",
                                                       test_command="python check.py"))
                    walls.append(time.perf_counter() - began)
                    cpu.append(cpu_seconds() - cpu_began)
                    tokens.append(outcome.usage.tokens)
                    good += passes(outcome.change)
            results[count] = {"wall": sum(walls) / tasks, "tokens": sum(tokens) / tasks, "quality": good / tasks,
                              "cpu": sum(cpu) / tasks}
    return results


async def _ignore(event) -> None:  # type: ignore[no-untyped-def]
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.02, help="seconds per model call (default 0.02)")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--teams", type=int, default=8)
    parser.add_argument("--tasks", type=int, default=6)
    parser.add_argument("--p-right", type=float, default=0.35)
    parser.add_argument("--croto-latency", type=float, action="append",
                        help="latency for the Croto runs (repeatable; default: --latency)")
    parser.add_argument("--merge", choices=MERGE_WHEN, action="append",
                        help="Croto's merge setting (repeatable; default: always)")
    parser.add_argument("--http-latency", type=float, action="append",
                        help="latency for the full-stack MacNet run (repeatable; default: --latency)")
    parser.add_argument("--skip-http", action="store_true", help="skip the full-stack MacNet run")
    parser.add_argument("--skip-macnet", action="store_true", help="only the Croto runs")
    parser.add_argument("--serve-croto", action="store_true", help=argparse.SUPPRESS)  # the fake, in its process
    parser.add_argument("--seed", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_croto:
        asyncio.run(serve_croto(args.croto_latency[0], args.p_right, args.seed))
        return
    if not args.skip_macnet:
        macnet(args)
    for latency, merge in itertools.product(args.croto_latency or [args.latency], args.merge or ["always"]):
        print(f"\n## Croto: 1 team vs {args.teams} teams, {args.tasks} tasks, latency {latency * 1000:.0f} ms, "
              f"programmer right with p = {args.p_right}, merge = {merge}")
        result = asyncio.run(croto(args.tasks, args.teams, latency, args.p_right, {"merge": merge}))
        one, many = result[1], result[args.teams]
        for count, row in result.items():
            print(f"{count} team(s): wall {row['wall']:.2f} s/task, CPU {row['cpu']:.2f} s/task, "
                  f"quality {row['quality']:.2f}, tokens {row['tokens']:.0f}/task")
        floor = max(one["wall"], many["cpu"] / CORES)
        print(f"wall-time ratio {args.teams} teams / 1 team: {many['wall'] / one['wall']:.2f}; "
              f"tokens x{many['tokens'] / one['tokens']:.1f}; on {CORES} cores {args.teams} teams cannot take less "
              f"than max(1 team's wall, their CPU / cores) = {floor:.2f} s/task (ratio {floor / one['wall']:.2f})")


def macnet(args: argparse.Namespace) -> None:
    print(f"## MacNet, engine only (small-world, latency {args.latency * 1000:.0f} ms, concurrency {args.concurrency})")
    stub = asyncio.run(macnet_stub(args.agents, args.latency, args.concurrency))
    print(f"agents {stub['agents']}, edges {stub['edges']}, layers {stub['layers']}, calls {stub['calls']}, "
          f"critical path {stub['critical']} calls; peak solutions held {stub['peak_live']}")
    print(f"wall {stub['wall']:.2f} s, lower bound {stub['bound']:.2f} s, ratio {stub['ratio']:.2f}")
    print("peak traced memory: " + ", ".join(f"{n} agents {mb:.1f} MB ({1000 * mb / n:.1f} KB/agent)"
                                             for n, mb in memory_per_agent((250, 500, 1000))))
    for latency in [] if args.skip_http else args.http_latency or [args.latency]:
        print(f"\n## MacNet, full stack (gateway + litellm + HTTP to the fake server, latency "
              f"{latency * 1000:.0f} ms, concurrency {args.concurrency})")
        http = asyncio.run(macnet_http(args.agents, latency, args.concurrency))
        print(f"agents {http['agents']}, calls {http['calls']}: wall {http['wall']:.2f} s, lower bound "
              f"{http['bound']:.2f} s, ratio {http['ratio']:.2f}; client CPU {http['cpu_per_call_ms']:.1f} ms/call; "
              f"peak RSS {http['peak_rss_mb']:.0f} MB (+{http['rss_growth_mb']:.0f} MB during the run)")

if __name__ == "__main__":
    main()
