"""The language server's latencies, seen from the editor.

    .venv/bin/python bench/lsp.py [--starts 5] [--saves 10] [--debounce 0.5] [--model-latency 1.0]

* initialize: spawning ``python -m lsp`` until the ``initialize`` answer (cold), and one more
  ``initialize``-sized round trip on the running server (``troupe/getStatus``, warm).
* didSave -> publishDiagnostics, static part: a file with an unused import is saved (written,
  then ``didSave``); the time until a ``publishDiagnostics`` carries ruff's F401. The model's
  finding (the fake LLM answering after ``--model-latency`` seconds) is timed too, to show that
  the static part does not wait for it. The daemon's watcher debounce is included and printed;
  its rate cap (6 save-triggered jobs per workspace per minute) is lifted for the run.

Runs a real daemon (the agent engine, the fake OpenAI-compatible server) in a temporary
TROUPE_HOME and the server over stdio with pytest-lsp's client. Prints one line per figure.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.daemon.conftest import DaemonProcess  # noqa: E402
from tests.fakes.llm_server import FakeLLM  # noqa: E402
from tests.lsp.conftest import (  # noqa: E402
    BUG_MESSAGE,
    PLANTED,
    REVIEW,
    engine_env,
    new_repo,
    start_editor,
    stop_editor,
)


def line(name: str, values: list[float]) -> str:
    ms = sorted(v * 1000 for v in values)
    return (f"{name:<42} n={len(ms):<3} median {statistics.median(ms):8.1f} ms   min {ms[0]:8.1f} ms   "
            f"max {ms[-1]:8.1f} ms")


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


async def wait_for(predicate: object, timeout: float = 60.0) -> float:
    began = time.perf_counter()
    while time.perf_counter() - began < timeout:
        if predicate():  # type: ignore[operator]
            return time.perf_counter()
        await asyncio.sleep(0.002)
    raise TimeoutError("no diagnostics")


async def save_latency(home: Path, root: Path, saves: int, name: str) -> tuple[list[float], list[float]]:
    editor = await start_editor(home, [root])
    await editor.registered(root)
    static, model = [], []
    try:
        for i in range(saves):
            path = root / f"{name}{i}.py"
            editor.open(path, PLANTED)  # the buffer the user is about to save
            await asyncio.sleep(0.1)
            saved = time.perf_counter()
            editor.save(path, PLANTED)
            codes = lambda p=path: {d.code for d in editor.diagnostics(p)}  # noqa: E731
            static.append(await wait_for(lambda c=codes: "F401" in c()) - saved)
            model.append(await wait_for(lambda p=path: editor.troupe_diagnostics(p, BUG_MESSAGE)) - saved)
    finally:
        await stop_editor(editor)
    return static, model


async def run(args: argparse.Namespace) -> None:
    with FakeLLM(latency=args.model_latency) as llm:
        llm.default_reply = REVIEW
        home = Path(tempfile.mkdtemp(prefix="trb-lsp-", dir="/tmp"))
        daemon = DaemonProcess(home, engine_env(home, llm, TROUPE_PRELOAD_LLM="1", TROUPE_WATCH_DEBOUNCE=str(
            args.debounce), TROUPE_WATCH_JOBS_PER_MINUTE="1000")).start()  # no rate cap while timing
        try:
            root = new_repo(home, "bench")
            cold, warm = await initialize_latency(home, root, args.starts)
            print(line("spawn + initialize (cold)", cold))
            print(line("request round trip (troupe/getStatus)", warm))
            await save_latency(home, root, 1, "warmup")  # the first review imports the model client
            static, model = await save_latency(home, root, args.saves, "mod")
            print(line(f"didSave -> F401 diagnostic (debounce {args.debounce}s)", static))
            print(line(f"didSave -> model diagnostic (model {args.model_latency}s)", model))
        finally:
            daemon.stop()
            shutil.rmtree(home, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=5, help="server starts to time")
    parser.add_argument("--saves", type=int, default=10, help="saves to time")
    parser.add_argument("--debounce", type=float, default=0.5, help="the watcher's debounce (daemon default 0.5)")
    parser.add_argument("--model-latency", type=float, default=1.0, help="seconds the fake LLM takes to answer")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
