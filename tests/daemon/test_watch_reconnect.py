"""``troupe watch`` outlives a daemon restart: it says the daemon is gone, waits for it, says it is
back and prints the next save's findings, like ``tail -F``. Other followers of the daemon-wide
stream keep giving up after their retries."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import pytest

from daemon.api.protocol import CONNECTION_EVENT
from daemon.client import DaemonClient, DaemonError, SyncClient
from tests.daemon.conftest import REPO, DaemonProcess

PATIENCE = 8.0  # well past the ~3 s after which an impatient follower gives up


class Output:
    """A subprocess's stdout and stderr, read line by line in the background."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.lines: dict[str, list[str]] = {"stdout": [], "stderr": []}
        assert proc.stdout is not None and proc.stderr is not None
        for name, stream in (("stdout", proc.stdout), ("stderr", proc.stderr)):
            threading.Thread(target=self._read, args=(name, stream), daemon=True).start()

    def _read(self, name: str, stream: IO[str]) -> None:
        for line in stream:
            self.lines[name].append(line.rstrip("\n"))

    def matching(self, name: str, predicate: Callable[[str], bool]) -> list[str]:
        return [line for line in list(self.lines[name]) if predicate(line)]

    def until(self, name: str, predicate: Callable[[str], bool], timeout: float = 60.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.matching(name, predicate)
            if found:
                return found[0]
            if self.proc.poll() is not None:
                time.sleep(0.2)  # let the readers catch the last lines
                raise AssertionError(f"troupe watch exited ({self.proc.returncode}): {self.lines}")
            time.sleep(0.05)
        raise AssertionError(f"not printed within {timeout}s; got {self.lines}")


def watched_again(daemon: DaemonProcess, root: Path, timeout: float = 60.0) -> None:
    """The restarted daemon watches its registered workspaces again in the background: wait for it."""
    client = SyncClient(socket_path=daemon.socket, autostart=False)
    deadline = time.monotonic() + timeout
    while str(root) not in client.health().watch.get("workspaces", {}):
        if time.monotonic() > deadline:
            raise AssertionError(f"{root} is not watched after the restart")
        time.sleep(0.1)


def stream_open(out: Output, root: Path, as_json: bool) -> None:
    """Wait until ``troupe watch`` follows the stream: a save's finding comes through it (saved again
    while it does not: a save reviewed before the stream opened is not replayed)."""
    seen = event_of("finding", message="scripted review of before.py") if as_json else (
        lambda line: "scripted review of before.py" in line)
    for attempt in range(4):
        (root / "before.py").write_text(f"x = {attempt}\n")
        try:
            out.until("stdout", seen, timeout=5.0)
            return
        except AssertionError:
            continue
    raise AssertionError(f"troupe watch never showed a save's finding: {out.lines}")


def event_of(kind: str, **data: Any) -> Callable[[str], bool]:
    def matches(line: str) -> bool:
        try:
            event = json.loads(line)
        except ValueError:
            return False
        return event.get("kind") == kind and all(event["data"].get(k) == v for k, v in data.items())
    return matches


@pytest.mark.parametrize("stop,as_json,new_store", [("sigterm", False, False), ("kill9", True, False),
                                                    ("sigterm", False, True)])
def test_troupe_watch_waits_for_a_restarted_daemon_and_follows_again(
        make_daemon: Any, repo: Path, stop: str, as_json: bool, new_store: bool) -> None:
    """``new_store``: the daemon comes back without its database, so ``troupe watch`` registers the
    workspace again."""
    root = repo.resolve()
    daemon = make_daemon().start()
    command = [sys.executable, "-m", "daemon.cli.main", "watch", str(root), *(["--json"] if as_json else [])]
    watcher = subprocess.Popen(command, env=dict(daemon.env), cwd=REPO, text=True, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    try:
        out = Output(watcher)
        if as_json:
            lost, back = event_of(CONNECTION_EVENT, state="lost"), event_of(CONNECTION_EVENT, state="back")
            where = "stdout"
        else:
            out.until("stderr", lambda line: line.startswith(f"watching {root} ("))
            lost, back = (lambda line: "daemon unreachable" in line), (lambda line: "daemon is back" in line)
            where = "stderr"
        watched_again(daemon, root)
        stream_open(out, root, as_json)
        if stop == "kill9":
            daemon.kill9()
        else:
            assert daemon.stop() == 0
        out.until(where, lost)
        started_waiting = time.monotonic()
        while time.monotonic() - started_waiting < PATIENCE:
            assert watcher.poll() is None, f"troupe watch gave up: {out.lines}"
            time.sleep(0.1)
        if new_store:
            for path in daemon.home.glob("troupe.db*"):
                path.unlink()

        daemon.start()
        out.until(where, back)
        watched_again(daemon, root)
        (root / "calc.py").write_text("import os\n\n\ndef add(a, b):\n    return a + b\n")
        if as_json:
            finding = out.until("stdout", event_of("finding", message="scripted review of calc.py"))
            assert json.loads(finding)["workspace"] == str(root)
        else:
            assert out.until("stdout", lambda line: "scripted review of calc.py" in line).split()[1] == "calc.py:1"
        assert watcher.poll() is None
        assert len(out.matching(where, lost)) == 1 and len(out.matching(where, back)) == 1  # not once per retry
        if not as_json:
            assert "waiting for it to come back — Ctrl-C stops" in out.matching("stderr", lost)[0]
    finally:
        watcher.kill()
        watcher.wait(10)


async def test_other_followers_still_give_up_and_a_patient_one_waits(home: Path) -> None:
    """Without ``patient`` an absent daemon raises after the retries; with it, a ``lost`` event and no error."""
    impatient = DaemonClient(home / "troupe.sock", autostart=False, retries=2)
    started = time.monotonic()
    with pytest.raises(DaemonError, match="cannot reach the Troupe daemon") as raised:
        async for _ in impatient.watch_events(str(home)):
            pass
    assert raised.value.status == 0 and time.monotonic() - started < 10
    await impatient.close()

    async with DaemonClient(home / "troupe.sock", autostart=False, retries=2) as patient:
        events = patient.watch_events(str(home), patient=True)
        first = await anext(events)
        assert first.kind == CONNECTION_EVENT and first.data["state"] == "lost" and first.data["error"]
        with pytest.raises(TimeoutError):  # still waiting well after an impatient one gave up
            await asyncio.wait_for(anext(events), 3.0)
        await events.aclose()


async def test_a_patient_follower_still_raises_the_daemons_own_errors(daemon: DaemonProcess) -> None:
    async with daemon.client() as client:
        with pytest.raises(DaemonError, match="absolute path") as raised:
            async for _ in client.watch_events("relative/path", patient=True):
                pass
    assert raised.value.status == 400


def test_a_stream_replayed_after_a_reconnect_repeats_no_job_event_and_keeps_one_published_out_of_order() -> None:
    """What another node (or a restarted daemon) replays is dropped by the job's seq; an event that
    came after a later one of its job (a gap) still gets through once; notices always do."""
    from daemon.client_stream import JobSeqs
    from daemon.messages import StreamEvent

    seen = JobSeqs(jobs=2)
    stream = [("a", 5), ("a", 6), ("a", 8), ("a", 7), ("a", 8), ("a", 6), ("a", 9), ("a", 4), ("b", 1), ("b", 1)]
    assert [seen.first_time(StreamEvent(kind="log", data={}, job_id=job, seq=seq)) for job, seq in stream] == [
        True, True, True, True, False, False, True, False, True, False]
    notice = StreamEvent(kind="watch", data={})
    assert seen.first_time(notice) and seen.first_time(notice)
    seen.first_time(StreamEvent(kind="log", data={}, job_id="c", seq=1))  # a third job: the oldest, a, is forgotten
    assert seen.first_time(StreamEvent(kind="log", data={}, job_id="a", seq=9))
