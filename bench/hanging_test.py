"""`troupe test` on a repository with one hanging test: how long until the report names it, and what
the report says.

    .venv/bin/python bench/hanging_test.py [--tests 12]

A real daemon (``python -m daemon.cli.main daemon``, a temporary TROUPE_HOME) runs a ``test`` job,
as ``troupe test`` submits it, on a repository made here: ``--tests`` quick tests, one of which
fails on a planted bug, and one that never returns (it waits on a socket no one writes to). The
model is the fake OpenAI-compatible server (the report is the test run's, not the model's). Prints
the seconds from the submit to the first test report, pytest's own seconds, whether that report
names the hanging test with its file:line, how many of the other tests ran, and the job's end.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from daemon.api.protocol import SubmitJob  # noqa: E402
from daemon.payloads import ToolRunData  # noqa: E402
from tests.fakes.llm_server import FakeLLM  # noqa: E402

WAIT = '''import socket


def test_reads_the_feed():
    left, right = socket.socketpair()
    assert left.recv(1) == b"x"  # no one ever writes: it waits for good
'''


def _daemon_bench():  # bench/daemon.py's Daemon (a module named like the package it runs)
    spec = importlib.util.spec_from_file_location("bench_daemon", REPO / "bench" / "daemon.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def make_repo(root: Path, tests: int) -> Path:
    (root / "shop").mkdir(parents=True)
    (root / "shop" / "__init__.py").write_text("")
    (root / "shop" / "cart.py").write_text("def total(prices, discount=0.0):\n    return sum(prices) * discount\n")
    quick = "".join(f"def test_sum_{i}():\n    assert sum(range({i})) == {i * (i - 1) // 2}\n\n\n"
                    for i in range(tests - 1))
    (root / "tests").mkdir()
    (root / "tests" / "test_quick.py").write_text(quick)
    (root / "tests" / "test_cart.py").write_text("from shop.cart import total\n\n\ndef test_total():\n"
                                                 "    assert total([2, 3]) == 5\n")
    (root / "tests" / "test_feed.py").write_text(WAIT)
    for argv in (["init", "-q"], ["add", "."], ["-c", "user.name=b", "-c", "user.email=b@b.invalid", "commit", "-qm",
                                                "start"]):
        subprocess.run(["git", *argv], cwd=root, check=True, capture_output=True)
    return root


async def run(tests: int) -> None:
    llm = FakeLLM(default_reply="tests/test_feed.py::test_reads_the_feed waits on a socket no one writes to.")
    llm.start_in_thread()
    daemon = _daemon_bench().Daemon(**llm.env(), TROUPE_PRELOAD_LLM="0")
    try:
        daemon.start()
        with tempfile.TemporaryDirectory(prefix="trb-hang-") as tmp:
            repo = make_repo(Path(tmp) / "repo", tests)
            async with daemon.client() as client:
                started = time.perf_counter()
                job = await client.submit(SubmitJob(kind="test", workspace=str(repo)))
                first: tuple[float, ToolRunData] | None = None
                async for event in client.events(job.id):
                    data = event.payload
                    if first is None and isinstance(data, ToolRunData) and data.tool == "tests":
                        first = (time.perf_counter() - started, data)
                    if event.kind == "job_state" and event.data.get("state") in ("succeeded", "failed", "cancelled"):
                        break
                ended = time.perf_counter() - started
                info = await client.job(job.id)
        if first is None:
            print("no test report: the job ran no tests")
            return
        seconds, report = first
        summary = report.summary or ""
        named = next((line for line in summary.splitlines() if line.startswith("HANGING")), "(not named)")
        print(f"submit -> first test report: {seconds:.1f} s (pytest {report.seconds or 0:.1f} s; a test's timeout "
              f"30 s)")
        print(f"hanging test: {named}")
        print(f"the others: {report.passed} passed, {report.failed} failed "
              f"(of {tests - 1} quick, 1 with the bug, 1 hanging)")
        print(f"job: {info.state} after {ended:.1f} s{': ' + info.error if info.error else ''}")
    finally:
        daemon.stop()
        llm.stop_thread()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=12, help="quick tests beside the hanging one (default 12)")
    asyncio.run(run(parser.parse_args().tests))


if __name__ == "__main__":
    main()
