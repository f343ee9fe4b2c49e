"""The language server's latencies, seen from the editor, with model reviews in flight.

    .venv/bin/python bench/lsp.py [--saves 30] [--opens 10] [--asks 5] [--model-latency 8] [--starts 3]

* initialize: spawning ``troupe lsp`` until the ``initialize`` answer (cold), and one request
  round trip on the running server (``troupe/getStatus``, warm).
* For 0, 2 and 5 model reviews in flight (review jobs submitted to the daemon, the fake LLM
  answering each model call after ``--model-latency`` seconds; two run, the rest queue):
  - save -> static diagnostic: the buffer gains a new undefined name (``didChange``) and is
    saved at once (written, then ``didSave``); the time until a ``publishDiagnostics`` carries
    its F821. The workspace's ``reviewOnSave`` is off, so the reviews in flight are exactly N.
  - open -> static diagnostics: ``didOpen`` of a file with an undefined name, until its F821.
* With 5 reviews in flight: ``troupe.ask`` until its first work-done progress report (the job
  running, past ``begin``); each ask is then cancelled.

Runs a real daemon (the agent engine, the fake OpenAI-compatible server in this process) in a
temporary TROUPE_HOME and the server over stdio with pytest-lsp's client. Prints one line per
figure (p50 / p99 / max) and the load average before and after: the machine may be shared.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from daemon.api.protocol import ACTIVE_STATES, SubmitJob  # noqa: E402
from tests.daemon.conftest import DaemonProcess  # noqa: E402
from tests.fakes.llm_server import FakeLLM  # noqa: E402
from tests.lsp.conftest import REVIEW, Editor, engine_env, new_repo, start_editor, stop_editor, uri_of  # noqa: E402

LEVELS = (0, 2, 5)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def line(name: str, values: list[float]) -> str:
    ms = [v * 1000 for v in values]
    return (f"{name:<52} n={len(ms):<3} p50 {statistics.median(ms):7.1f} ms   p99 {percentile(ms, 0.99):7.1f} ms"
            f"   max {max(ms):7.1f} ms")


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


async def wait_for(predicate: Callable[[], Any], timeout: float = 30.0) -> float:
    began = time.perf_counter()
    while time.perf_counter() - began < timeout:
        if predicate():
            return time.perf_counter()
        await asyncio.sleep(0.001)
    raise TimeoutError("the condition never held")


def has_name(editor: Editor, path: Path, name: str) -> bool:
    return any(d.code == "F821" and name in d.message for d in editor.diagnostics(path))


async def initialize_latency(home: Path, root: Path, starts: int) -> tuple[list[float], list[float]]:
    cold, warm = [], []
    for _ in range(starts):
        began = time.perf_counter()
        editor = await start_editor(home, [root])
        cold.append(time.perf_counter() - began)
        for _ in range(5):
            began = time.perf_counter()
            await editor.status()
            warm.append(time.perf_counter() - began)
        await stop_editor(editor)
    return cold, warm


async def in_flight(daemon: DaemonProcess, root: Path, count: int) -> list[str]:
    """``count`` review jobs of their own files, active (running or queued) when this returns."""
    ids = []
    async with daemon.client() as client:
        for i in range(count):
            job = await client.submit(SubmitJob(kind="review", workspace=str(root), files=[f"busy{i}.py"],
                                                priority="background", options={"trigger": "save"}))
            ids.append(job.id)
        running = 0
        while running < min(count, 2):
            running = sum(1 for j in await client.jobs(workspace=str(root)) if j.state == "running")
            await asyncio.sleep(0.05)
    return ids


async def warm_up(daemon: DaemonProcess, root: Path) -> None:
    """One review to its end: litellm imported, the engine's first job done (a daemon in use)."""
    async with daemon.client() as client:
        job = await client.submit(SubmitJob(kind="review", workspace=str(root), files=["busy0.py"]))
        while (await client.job(job.id)).state in ACTIVE_STATES:
            await asyncio.sleep(0.1)


async def cancel_all(daemon: DaemonProcess, root: Path) -> None:
    async with daemon.client() as client:
        for job in await client.jobs(workspace=str(root), state=",".join(ACTIVE_STATES), limit=1000):
            await client.cancel(job.id)


async def save_latency(editor: Editor, path: Path, saves: int, tag: str) -> list[float]:
    text = "def f():\n    return 1\n"
    editor.open(path, text)
    await wait_for(lambda: editor.client.diagnostics.get(uri_of(path)) is not None)
    timings = []
    for i in range(saves):
        name = f"undefined_{tag}_{i}"
        line_no = len(text.splitlines())
        editor.edit(path, (line_no, 0), (line_no, 0), f"x{i} = {name}\n")
        text += f"x{i} = {name}\n"
        saved = time.perf_counter()
        editor.save(path, text)
        timings.append(await wait_for(lambda n=name: has_name(editor, path, n)) - saved)
        await asyncio.sleep(0.05)
    return timings


async def open_latency(editor: Editor, root: Path, opens: int, tag: str) -> list[float]:
    timings = []
    for i in range(opens):
        path = root / f"open_{tag}_{i}.py"
        name = f"missing_{tag}_{i}"
        began = time.perf_counter()
        editor.open(path, f"import os\n\n\ndef g():\n    return {name}\n")
        timings.append(await wait_for(lambda p=path, n=name: has_name(editor, p, n)) - began)
    return timings


async def ask_latency(editor: Editor, daemon: DaemonProcess, path: Path, asks: int) -> list[float]:
    timings = []
    for _ in range(asks):
        began = time.perf_counter()
        job_id = (await editor.command("troupe.ask", {"prompt": "what does f do?", "file": uri_of(path)}))["jobId"]

        def first_report(job_id: str = job_id) -> bool:
            return any(job_id in str(t) and len(r) >= 2 for t, r in editor.client.progress_reports.items())

        timings.append(await wait_for(first_report) - began)
        async with daemon.client() as client:
            await client.cancel(job_id)
    return timings


async def run(args: argparse.Namespace) -> None:
    print(load(), "(before)")
    with FakeLLM(latency=args.model_latency) as llm:
        llm.default_reply = REVIEW
        home = Path(tempfile.mkdtemp(prefix="trb-lsp-", dir="/tmp"))
        daemon = DaemonProcess(home, engine_env(home, llm, TROUPE_PRELOAD_LLM="1",
                                                TROUPE_WATCH_JOBS_PER_MINUTE="1000")).start()
        try:
            busy = {f"busy{i}.py": f"def b{i}(x):\n    return x - {i}\n" for i in range(max(LEVELS))}
            root = new_repo(home, "bench", busy)
            await warm_up(daemon, root)
            if args.starts:
                cold, warm = await initialize_latency(home, root, args.starts)
                print(line("spawn + initialize (cold)", cold))
                print(line("request round trip (troupe/getStatus)", warm))
            editor = await start_editor(home, [root], options={"reviewOnSave": False})
            try:
                await editor.registered(root)
                await save_latency(editor, root / "warmup.py", 3, "warmup")  # first ruff run, first lint route
                for level in LEVELS:
                    await in_flight(daemon, root, level)
                    saves = await save_latency(editor, root / f"saved{level}.py", args.saves, f"s{level}")
                    print(line(f"save -> static diagnostic, {level} reviews in flight", saves))
                    opens = await open_latency(editor, root, args.opens, f"o{level}")
                    print(line(f"open -> static diagnostics, {level} reviews in flight", opens))
                    if level == max(LEVELS):
                        asks = await ask_latency(editor, daemon, root / f"saved{level}.py", args.asks)
                        print(line(f"ask -> first progress report, {level} reviews in flight", asks))
                    await cancel_all(daemon, root)
            finally:
                await stop_editor(editor)
            print(f"fake model latency {args.model_latency:g} s; {len(llm.aborted)} model request(s) dropped "
                  "by cancelled reviews")
        finally:
            daemon.stop()
            shutil.rmtree(home, ignore_errors=True)
    print(load(), "(after)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--saves", type=int, default=30, help="saves to time per load level")
    parser.add_argument("--opens", type=int, default=10, help="opens to time per load level")
    parser.add_argument("--asks", type=int, default=5, help="asks to time with the most reviews in flight")
    parser.add_argument("--starts", type=int, default=3, help="server starts to time (0: skip)")
    parser.add_argument("--model-latency", type=float, default=8.0, help="seconds the fake LLM takes to answer")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
