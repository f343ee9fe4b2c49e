"""The bundled local model on this machine: load time, tokens per second, and the wall time of one
``review`` job and one small ``ask`` job run by a real daemon on it.

    .venv/bin/python bench/local_model.py [--home DIR] [--runs 3]

Needs the ``local`` extra (scripts/start or scripts/test install it). ``--home`` reuses a
TROUPE_HOME whose model is already assembled (default: a temporary one, assembled first and
timed separately).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from daemon.api.protocol import SubmitJob  # noqa: E402
from daemon.client import DaemonClient  # noqa: E402
from daemon.config import ModelSettings  # noqa: E402
from daemon.llm.gateway import Gateway  # noqa: E402
from daemon.llm.local import LocalModelServer, ensure_model, local_model_installed  # noqa: E402

PROMPT = [{"role": "user", "content": "Write a Python function that returns the n-th Fibonacci number, "
                                      "with a docstring. Reply with one code block."}]
BUGGY = ("import os\n\n\ndef average(xs):\n    return sum(xs) / len(xs)\n\n\n"
         "def find(items, key):\n    for i in range(len(items) + 1):\n        if items[i] == key:\n"
         "            return i\n")


async def load_and_speed(model: Path, runs: int) -> None:
    loads, rates = [], []
    for _ in range(runs):
        server = LocalModelServer(model)
        started = time.perf_counter()
        await server.start()
        loads.append(time.perf_counter() - started)
        try:
            gateway = Gateway(server.model_settings(ModelSettings(timeout=300)))
            await gateway.complete(PROMPT, max_tokens=8, temperature=0)  # warm (and litellm imported)
            reply = await gateway.complete(PROMPT, max_tokens=160, temperature=0)
            rates.append(reply.usage.completion_tokens / reply.seconds)
        finally:
            await server.stop()
    print(f"server start → answering   median {statistics.median(loads):.2f} s  (runs: "
          + ", ".join(f"{x:.2f}" for x in loads) + ")")
    print(f"generation                 median {statistics.median(rates):.1f} tokens/s  (runs: "
          + ", ".join(f"{x:.1f}" for x in rates) + ")")


async def jobs(home: Path, runs: int) -> None:
    from tests.daemon.conftest import DaemonProcess, daemon_env, wait_for

    repo = Path(tempfile.mkdtemp(prefix="bench-local-repo-"))
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "stats.py").write_text(BUGGY)
    env = daemon_env(home, TROUPE_EXECUTOR="daemon.jobs.engine:EngineExecutor", TROUPE_LOCAL_MODEL="1",
                     TROUPE_PRELOAD_LLM="1", TROUPE_EXPERIENCE="off")
    daemon = DaemonProcess(home, env).start(timeout=60)
    try:
        async with DaemonClient(daemon.socket, autostart=False) as client:
            warm = await client.submit(SubmitJob(kind="ask", workspace=str(repo), prompt="Say ready."))
            await wait_for(client, warm.id, timeout=900)  # the local server is up and litellm imported before timing
            for kind in ("review", "ask"):
                times, tokens = [], []
                for run in range(runs):  # a different file and question each run: no reply comes from a cache
                    (repo / "stats.py").write_text(f"# version {run}\n" + BUGGY.replace("xs", f"values{run}"))
                    question = f"In stats.py, what does {('find', 'average')[run % 2]}() return? ({run})"
                    request = SubmitJob(kind="review", workspace=str(repo), files=["stats.py"]) if kind == "review" \
                        else SubmitJob(kind="ask", workspace=str(repo), prompt=question)
                    started = time.perf_counter()
                    job = await wait_for(client, (await client.submit(request)).id, timeout=900)
                    times.append(time.perf_counter() - started)
                    tokens.append(job.usage.total_tokens)
                    assert job.state == "succeeded", job.error
                print(f"{kind:<6} job wall time        median {statistics.median(times):.1f} s, "
                      f"{statistics.median(tokens):.0f} tokens  (runs: " + ", ".join(f"{x:.1f}" for x in times) + ")")
    finally:
        daemon.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, help="a TROUPE_HOME to reuse (its model already assembled)")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if not local_model_installed():
        sys.exit("the local extra is not installed (scripts/start installs it)")
    home = args.home or Path(tempfile.mkdtemp(prefix="bench-local-", dir="/tmp"))
    os.environ["TROUPE_HOME"] = str(home)
    started = time.perf_counter()
    model = ensure_model(home)
    print(f"assemble + verify model    {time.perf_counter() - started:.2f} s  ({model})")
    asyncio.run(load_and_speed(model, args.runs))
    asyncio.run(jobs(home, args.runs))


if __name__ == "__main__":
    main()
