"""The daemon's own costs: start-up time, idle memory, API latency under 50 concurrent clients,
a job's round trip with the model's time taken out, and save → findings latency (static part).

    .venv/bin/python bench/daemon.py [--starts 5] [--clients 50] [--requests 40] [--saves 10]

Runs real daemons (``python -m daemon.cli.main daemon``) in temporary TROUPE_HOMEs, the agent
engine against the fake OpenAI-compatible server with zero latency, over the Unix socket.
Prints one line per figure.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from daemon.api.protocol import SubmitJob  # noqa: E402
from daemon.client import DaemonClient  # noqa: E402
from tests.fakes.llm_server import FakeLLM  # noqa: E402


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Daemon:
    def __init__(self, **env: str) -> None:
        self.home = Path(tempfile.mkdtemp(prefix="trb-", dir="/tmp"))
        self.env = {**{k: v for k, v in os.environ.items() if not k.startswith("TROUPE_")},
                    "TROUPE_HOME": str(self.home), "PYTHONPATH": str(REPO), "TROUPE_AUTOSTART": "0",
                    "XDG_CONFIG_HOME": str(self.home / "config"), "LITELLM_LOCAL_MODEL_COST_MAP": "True",
                    "TROUPE_LOCAL_MODEL": "0", "TROUPE_MODEL": "openai/fake-model", **env}  # no bundled model
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> float:
        """Seconds from exec to the socket accepting connections."""
        started = time.perf_counter()
        self.proc = subprocess.Popen([sys.executable, "-m", "daemon.cli.main", "daemon"], env=self.env, cwd=REPO,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        sock_path = str(self.home / "troupe.sock")
        while True:
            with socket.socket(socket.AF_UNIX) as probe:
                try:
                    probe.connect(sock_path)
                    return time.perf_counter() - started
                except OSError:
                    if self.proc.poll() is not None:
                        raise RuntimeError("the daemon exited at start-up") from None
                    time.sleep(0.005)

    def client(self) -> DaemonClient:
        return DaemonClient(self.home / "troupe.sock", autostart=False)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(30)
        shutil.rmtree(self.home, ignore_errors=True)


def bench_startup(runs: int) -> None:
    times, idle = [], []
    for _ in range(runs):
        daemon = Daemon(TROUPE_PRELOAD_LLM="0")
        try:
            times.append(daemon.start())
            time.sleep(1.0)
            assert daemon.proc is not None
            idle.append(rss_mb(daemon.proc.pid))
        finally:
            daemon.stop()
    print(f"start-up (exec -> socket accepts): median {statistics.median(times) * 1000:.0f} ms, "
          f"max {max(times) * 1000:.0f} ms over {runs} starts")
    print(f"idle RSS, litellm not yet imported: {statistics.median(idle):.0f} MB")
    daemon = Daemon(TROUPE_PRELOAD_LLM="1")
    try:
        daemon.start()
        assert daemon.proc is not None
        previous, settled = 0.0, rss_mb(daemon.proc.pid)
        while abs(settled - previous) > 1:  # until the background litellm import is done
            time.sleep(2.0)
            previous, settled = settled, rss_mb(daemon.proc.pid)
        print(f"idle RSS, litellm preloaded (the default): {settled:.0f} MB")
    finally:
        daemon.stop()


async def bench_api(daemon: Daemon, clients: int, requests: int, repo: Path) -> None:
    async with daemon.client() as warm:
        for _ in range(3):
            await warm.submit(SubmitJob(kind="review", workspace=str(repo), files=["app.py"]))

    for label, path in (("GET /v1/health", "/health"), ("GET /v1/jobs?limit=20", "/jobs")):
        latencies: list[float] = []

        async def one_client(path: str = path, latencies: list[float] = latencies) -> None:
            async with daemon.client() as client:
                for _ in range(requests):
                    started = time.perf_counter()
                    await client.request("GET", path, params={"limit": 20} if path == "/jobs" else None)
                    latencies.append(time.perf_counter() - started)

        wall = time.perf_counter()
        await asyncio.gather(*(one_client() for _ in range(clients)))
        wall = time.perf_counter() - wall
        print(f"{label}, {clients} concurrent clients x {requests}: p50 {percentile(latencies, 50) * 1000:.1f} ms, "
              f"p99 {percentile(latencies, 99) * 1000:.1f} ms, {len(latencies) / wall:.0f} req/s")


async def bench_job(daemon: Daemon, repo: Path, runs: int) -> None:
    async with daemon.client() as client:
        await client.health()
        totals, model = [], []
        for i in range(runs + 1):
            started = time.perf_counter()
            job = await client.submit(SubmitJob(kind="ask", workspace=str(repo), prompt=f"what is add? ({i})"))
            async for event in client.events(job.id):
                if event.kind == "phase_finished":
                    model.append(float(event.data.get("model_seconds", 0.0)))
            if i:  # the first run pays for importing litellm
                totals.append(time.perf_counter() - started)
        spent = statistics.median(totals)
        print(f"ask job round trip (submit -> final event, fake model with zero latency): median "
              f"{spent * 1000:.0f} ms, of which model calls {statistics.median(model[1:]) * 1000:.0f} ms")


async def bench_save(daemon: Daemon, repo: Path, saves: int) -> None:
    async with daemon.client() as client:
        await client.register_workspace(str(repo))
        events = client.watch_events(str(repo))
        first = asyncio.ensure_future(events.__anext__())
        await asyncio.sleep(0.5)
        latencies = []
        for i in range(saves):
            started = time.perf_counter()
            (repo / "saved.py").write_text(f"import os\n\nVALUE = {i}\n")
            while True:
                event = await (first if first is not None else events.__anext__())
                first = None
                if event.kind == "finding" and event.data.get("rule") == "F401" and event.data.get("state") == "open":
                    latencies.append(time.perf_counter() - started)
                    break
            while True:  # let the model part finish before the next save
                event = await events.__anext__()
                if event.kind == "job_state" and event.data.get("state") in ("succeeded", "failed"):
                    break
        await events.aclose()
    debounce = float(daemon.env.get("TROUPE_WATCH_DEBOUNCE", "0.5"))
    print(f"save -> first static finding streamed ({saves} saves, debounce {debounce * 1000:.0f} ms included): "
          f"p50 {percentile(latencies, 50) * 1000:.0f} ms, p99 {percentile(latencies, 99) * 1000:.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--saves", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=5)
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus")
    bench_startup(args.starts)

    llm = FakeLLM().start_in_thread()
    llm.latency = 0.0
    llm.default_reply = "[]"
    daemon = Daemon(**llm.env(), TROUPE_WATCH_JOBS_PER_MINUTE="1000", TROUPE_PRELOAD_LLM="1")
    repo = daemon.home / "repo"
    repo.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "app.py").write_text("def add(a, b):\n    return a + b\n")
    try:
        daemon.start()

        async def run() -> None:
            await bench_api(daemon, args.clients, args.requests, repo)
            await bench_job(daemon, repo, args.jobs)
            await bench_save(daemon, repo, args.saves)

        asyncio.run(run())
    finally:
        daemon.stop()
        llm.stop_thread()


if __name__ == "__main__":
    main()
