"""The agent engine's own cost: time per agent turn excluding the model, and prompt tokens per phase.

Runs the built-in ``build`` chain (a small CLI program: demand analysis, design, coding,
completion, review loop, real pytest failing then passing, requirements, manual) against the
fake OpenAI-compatible server started in-process, through the real gateway and litellm. The
time inside gateway calls (litellm + HTTP + the fake's answer) is the "model" time; the
engine's time is each phase's wall time minus that. Tool runs (pytest in the sandbox) happen
between phases and are reported separately.

    LITELLM_LOCAL_MODEL_COST_MAP=True .venv/bin/python bench/engine.py [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

import msgspec

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from daemon.agents.context import RunContext
from daemon.agents.job import JobSpec
from daemon.agents.runner import ChainRunner
from daemon.config import ModelSettings, Secret, Settings
from daemon.events import Event
from daemon.llm.gateway import Gateway, import_litellm
from daemon.payloads import PhaseFinishedData, ToolRunData
from tests.agents.test_build_chain import script_build
from tests.fakes.llm_server import FakeLLM


async def one_run() -> tuple[list[dict], dict]:
    events: list[Event] = []

    async def emit(event: Event) -> None:
        events.append(event)

    async with FakeLLM() as llm:
        script_build(llm)
        settings = ModelSettings(default="openai/fake-model", api_base=llm.api_base, api_key=Secret("sk-fake"),
                                 max_retries=0)
        runner = ChainRunner(RunContext(Gateway(settings), emit, Settings(model=settings)))
        started = time.monotonic()
        outcome = await runner.run(JobSpec(chain="build", task="a CLI that counts the words in a file"))
        wall = time.monotonic() - started
    if not outcome.ok or not outcome.test_report or not outcome.test_report.ok:
        raise SystemExit(f"the build chain did not succeed: {outcome.error or outcome.warnings}")
    phases = [msgspec.structs.asdict(e.data) for e in events if isinstance(e.data, PhaseFinishedData)]
    in_phases = sum(p["seconds"] for p in phases)
    tests = sum(e.data.seconds or 0 for e in events if isinstance(e.data, ToolRunData))
    totals = {"wall": wall, "model": outcome.usage.model_seconds, "engine": sum(p["engine_seconds"] for p in phases),
              "tests": tests, "between": wall - in_phases - tests, "calls": outcome.usage.calls,
              "prompt_tokens": outcome.usage.prompt_tokens, "tokens": outcome.usage.tokens}
    return phases, totals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="measured runs (after one warm-up run)")
    args = parser.parse_args()
    import_litellm()  # once, off the measured path
    asyncio.run(one_run())  # warm-up: first litellm call, first pytest run
    runs = [asyncio.run(one_run()) for _ in range(args.runs)]

    print(f"build chain on the fake LLM server, {args.runs} runs (median), python {sys.version.split()[0]}\n")
    print(f"{'phase':<16}{'turns':>6}{'prompt tok':>12}{'engine ms/turn':>16}{'model ms/turn':>15}")
    names = [(p["phase"], p.get("cycle")) for p in runs[0][0]]
    for index, (name, cycle) in enumerate(names):
        rows = [phases[index] for phases, _ in runs]
        calls = rows[0]["calls"]
        engine = statistics.median(r["engine_seconds"] for r in rows) / calls * 1000
        model = statistics.median(r["model_seconds"] for r in rows) / calls * 1000
        label = f"{name}#{cycle}" if cycle else name
        print(f"{label:<16}{calls:>6}{rows[0]['prompt_tokens']:>12}{engine:>16.2f}{model:>15.2f}")
    totals = [t for _, t in runs]
    med = {k: statistics.median(t[k] for t in totals) for k in totals[0]}
    print(f"\njob: {med['calls']:.0f} model calls, {med['prompt_tokens']:.0f} prompt tokens, "
          f"{med['tokens']:.0f} tokens in all")
    print(f"wall {med['wall']:.2f} s = model {med['model']:.2f} s + engine in phases {med['engine']:.3f} s "
          f"+ pytest runs in the sandbox {med['tests']:.2f} s + engine between phases {med['between']:.3f} s")
    print(f"engine time per agent turn: {med['engine'] / med['calls'] * 1000:.2f} ms")


if __name__ == "__main__":
    main()
