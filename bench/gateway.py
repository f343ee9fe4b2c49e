"""The gateway's own cost per model call: client CPU and wall time for many calls through the real
gateway, litellm and HTTP to the fake OpenAI-compatible server (its own process, no latency).

The client's CPU per call is what bounds throughput on one event loop (MacNet's 1,000 agents,
Croto's teams): at 4 ms a call one loop does at most ~250 calls a second, however fast the model.

    .venv/bin/python bench/gateway.py --calls 1000 --concurrency 16
    .venv/bin/python bench/gateway.py --model openai/gpt-4o-mini   # a model litellm has a price for
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from daemon.config import ModelSettings, Secret
from daemon.llm.gateway import Gateway, import_litellm
from tests.fakes.llm_server import ServerProcess


async def run(calls: int, concurrency: int, model: str) -> dict[str, float]:
    with ServerProcess() as url:
        await asyncio.to_thread(import_litellm)
        gateway = Gateway(ModelSettings(default=model, api_base=f"{url}/v1", api_key=Secret("sk-fake"),
                                        concurrency=concurrency))
        for _ in range(20):  # warm up: litellm's first calls build its clients
            await gateway.complete([{"role": "user", "content": "warm up"}])
        slots = asyncio.Semaphore(concurrency)

        async def one(i: int) -> None:
            async with slots:
                await gateway.complete([{"role": "user", "content": f"hello {i}"}], temperature=0.5)

        cpu, began = time.process_time(), time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(calls)))
        wall, cpu = time.perf_counter() - began, time.process_time() - cpu
    return {"wall": wall, "cpu_ms": 1000 * cpu / calls, "per_second": calls / wall}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--model", default="openai/fake-model", help="default: a model litellm has no price for")
    args = parser.parse_args()
    result = asyncio.run(run(args.calls, args.concurrency, args.model))
    print(f"{args.calls} calls of {args.model} at concurrency {args.concurrency}: wall {result['wall']:.2f} s "
          f"({result['per_second']:.0f} calls/s), client CPU {result['cpu_ms']:.2f} ms a call")


if __name__ == "__main__":
    main()
