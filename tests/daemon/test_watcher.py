"""The watcher decides which files were saved; the trigger decides how many jobs that is worth."""

from __future__ import annotations

import asyncio
import errno
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from daemon.api.protocol import StreamEvent, SubmitJob
from daemon.watch import watcher as watcher_module
from daemon.watch.trigger import SaveTrigger
from daemon.watch.watcher import RepoWatcher


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("*.log\nsecret/\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / ".gitignore").write_text("generated.py\n")
    return tmp_path


class Batches:
    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.root: Path | None = None

    async def __call__(self, files: list[Path]) -> None:
        assert self.root is not None
        self.batches.append([f.relative_to(self.root).as_posix() for f in files])


async def watching(root: Path, **options: Any) -> tuple[RepoWatcher, Batches]:
    """A started watcher whose watches are in place: a probe saved until it is delivered."""
    seen = Batches()
    seen.root = root.resolve()
    watcher = RepoWatcher(root, seen, debounce=options.pop("debounce", 0.15), **options)
    await asyncio.to_thread(watcher.start)
    for _ in range(30):
        (root / "ready.py").write_text("ready = True\n")
        if await delivered(seen, timeout=1.0, raises=False):
            break
    else:
        raise AssertionError("the watcher never delivered a save")
    seen.batches.clear()
    return watcher, seen


async def delivered(seen: Batches, timeout: float = 10.0, raises: bool = True) -> bool:
    """Until a batch has come (its debounce fired)."""
    deadline = time.monotonic() + timeout
    while not seen.batches:
        if time.monotonic() > deadline:
            if raises:
                raise AssertionError(f"no batch within {timeout} s")
            return False
        await asyncio.sleep(0.01)
    return True


async def handled(root: Path, seen: Batches) -> list[str]:
    """Every save made before this call has been delivered: a probe saved now comes after them, in a
    batch of its own once the batch before it has come. Returns that batch."""
    probe = root / "zz_probe.py"
    probe.write_text("probe = True\n")
    deadline = time.monotonic() + 10
    while not seen.batches or probe.name not in seen.batches[-1]:
        assert time.monotonic() < deadline, f"the probe was never delivered: {seen.batches}"
        await asyncio.sleep(0.01)
    return [probe.name]


@pytest.mark.parametrize("temp_name", [".app.py.tmp", "app.py.8f3a2c"])  # ignored pattern, or any name
async def test_an_atomic_rename_save_counts_once_for_the_target(git_repo: Path, temp_name: str) -> None:
    watcher, seen = await watching(git_repo)
    try:
        temp = git_repo / temp_name
        temp.write_text("x = 1\n")
        os.replace(temp, git_repo / "app.py")
        await delivered(seen)
        probe = await handled(git_repo, seen)
    finally:
        watcher.stop()
    assert seen.batches == [["app.py"], probe]


async def test_a_burst_of_writes_is_one_batch(git_repo: Path) -> None:
    watcher, seen = await watching(git_repo)
    try:
        for i in range(5):
            (git_repo / "a.py").write_text(f"a = {i}\n")
            (git_repo / "b.py").write_text(f"b = {i}\n")
        await delivered(seen)
        probe = await handled(git_repo, seen)
    finally:
        watcher.stop()
    assert seen.batches == [["a.py", "b.py"], probe]


async def test_ignored_paths_start_nothing(git_repo: Path) -> None:
    watcher, seen = await watching(git_repo)
    try:
        for rel in (".git/hooks/x.py", ".venv/lib/x.py", "node_modules/m/x.js", "build/x.py", "dist/x.py",
                    "__pycache__/x.pyc", "debug.log", "secret/key.py", "pkg/generated.py", "notes.txt~"):
            path = git_repo / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("noise\n")
        (git_repo / "pkg" / "real.py").write_text("ok = True\n")  # an ignored path would come with it
        await delivered(seen)
        probe = await handled(git_repo, seen)
    finally:
        watcher.stop()
    assert seen.batches == [["pkg/real.py"], probe]


async def test_it_falls_back_to_polling_when_inotify_runs_out(git_repo: Path, monkeypatch: Any) -> None:
    class Exhausted:
        def schedule(self, *args: Any, **kwargs: Any) -> None:
            raise OSError(errno.ENOSPC, "inotify watch limit reached")

        def stop(self) -> None:
            pass

    monkeypatch.setattr(watcher_module, "Observer", Exhausted)
    watcher, seen = await watching(git_repo, poll_interval=0.1)
    try:
        assert watcher.mode == "polling"
        assert "inotify limit reached" in watcher.note and "max_user_watches" in watcher.note
        (git_repo / "polled.py").write_text("p = 1\n")
        await delivered(seen)
        probe = await handled(git_repo, seen)
    finally:
        watcher.stop()
    assert seen.batches == [["polled.py"], probe]


class FakeQueue:
    """Stands in for the daemon: records submitted jobs and the watcher's notices."""

    def __init__(self) -> None:
        self.jobs: list[SubmitJob] = []
        self.notices: list[StreamEvent] = []
        self.queued: set[str] = set()

    async def submit(self, request: SubmitJob) -> Any:
        self.jobs.append(request)
        job_id = f"job{len(self.jobs)}"
        self.queued.add(job_id)
        return type("Job", (), {"id": job_id})()

    async def is_queued(self, job_id: str) -> bool:
        return job_id in self.queued

    def trigger(self, root: Path, **options: Any) -> SaveTrigger:
        return SaveTrigger(root, self.submit, self.is_queued, self.notices.append, **options)


def write(root: Path, count: int) -> list[Path]:
    files = []
    for i in range(count):
        path = root / f"m{i:03}.py"
        path.write_text(f"value = {i}\n")
        files.append(path)
    return files


async def test_a_checkout_of_200_files_starts_a_bounded_number_of_reviews(tmp_path: Path) -> None:
    queue = FakeQueue()
    trigger = queue.trigger(tmp_path, files_per_job=5, jobs_per_minute=6)
    await trigger.on_change(write(tmp_path, 200))
    assert len(queue.jobs) == 6 and all(len(j.files) == 5 for j in queue.jobs)
    assert {j.priority for j in queue.jobs} == {"background"}
    capped = [n for n in queue.notices if n.data["action"] == "capped"]
    assert len(capped) == 1 and capped[0].data["count"] == 170
    assert "troupe review" in capped[0].data["reason"]
    await trigger.on_change(write(tmp_path, 3))  # the minute's budget is spent: nothing more starts
    assert len(queue.jobs) == 6


async def test_content_already_reviewed_starts_nothing(tmp_path: Path) -> None:
    queue = FakeQueue()
    trigger = queue.trigger(tmp_path)
    path = tmp_path / "app.py"
    path.write_text("a = 1\n")
    await trigger.on_change([path])
    queue.queued.clear()  # the review ran
    await trigger.on_change([path])  # saved again, same content
    path.write_text("a = 2\n")
    await trigger.on_change([path])
    assert [j.files for j in queue.jobs] == [["app.py"], ["app.py"]]
    first, second = queue.jobs[0].options.hashes or {}, queue.jobs[1].options.hashes or {}
    assert first["app.py"] != second["app.py"]


async def test_a_file_waiting_in_a_queued_review_is_not_queued_twice(tmp_path: Path) -> None:
    queue = FakeQueue()
    trigger = queue.trigger(tmp_path)
    path = tmp_path / "app.py"
    for i in range(3):
        path.write_text(f"a = {i}\n")
        await trigger.on_change([path])
    assert len(queue.jobs) == 1


async def test_test_on_save_also_queues_one_test_run(tmp_path: Path) -> None:
    (tmp_path / ".troupe.toml").write_text("[test]\non_save = true\n")
    queue = FakeQueue()
    trigger = queue.trigger(tmp_path)
    await trigger.on_change(write(tmp_path, 2))
    await trigger.on_change([tmp_path / "m000.py"])  # unchanged content: nothing
    assert [j.kind for j in queue.jobs] == ["review", "test"]


async def test_binary_and_huge_files_are_skipped_with_a_notice(tmp_path: Path) -> None:
    queue = FakeQueue()
    trigger = queue.trigger(tmp_path)
    (tmp_path / "blob.py").write_bytes(b"\0\1\2" * 10)
    (tmp_path / "huge.py").write_text("x = 1\n" * 200_000)
    await trigger.on_change([tmp_path / "blob.py", tmp_path / "huge.py"])
    assert queue.jobs == []
    assert queue.notices[0].data["action"] == "skipped" and queue.notices[0].data["count"] == 2


async def test_a_save_of_a_committed_file_sends_its_changed_hunks(git_repo: Path) -> None:
    lines = [f"value_{i} = {i}\n" for i in range(40)]
    (git_repo / "big.py").write_text("".join(lines))
    subprocess.run(["git", "-C", str(git_repo), "add", "big.py"], check=True)
    subprocess.run(["git", "-C", str(git_repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"],
                   check=True)
    lines[30] = "value_30 = 'changed'\n"
    (git_repo / "big.py").write_text("".join(lines))
    (git_repo / "new.py").write_text("fresh = 1\n")
    queue = FakeQueue()
    trigger = queue.trigger(git_repo, files_per_job=1)
    await trigger.on_change([git_repo / "big.py", git_repo / "new.py"])
    by_file = {job.files[0]: job.options for job in queue.jobs}
    big = by_file["big.py"].diff or ""
    assert "+value_30 = 'changed'" in big and "value_5 =" not in big
    assert by_file["new.py"].diff is None  # a new file is reviewed whole


async def test_registering_a_workspace_twice_at_once_starts_one_watcher(git_repo: Path, monkeypatch: Any) -> None:
    from daemon.watch.registry import WatchOptions, WatchRegistry

    started: list[Path] = []
    start = RepoWatcher.start

    def counting_start(self: RepoWatcher) -> None:
        started.append(self.root)
        start(self)

    async def nothing(*args: Any, **kwargs: Any) -> None:
        return None

    monkeypatch.setattr(RepoWatcher, "start", counting_start)
    registry = WatchRegistry(WatchOptions(), nothing, lambda *a: False, nothing)  # type: ignore[arg-type]
    try:
        modes = await asyncio.gather(*(registry.add(str(git_repo)) for _ in range(3)))
        assert len(set(modes)) == 1 and len(started) == 1 and registry.is_watching(str(git_repo))
        assert await asyncio.gather(registry.remove(str(git_repo)), registry.remove(str(git_repo))) in (
            [True, False], [False, True])
    finally:
        await registry.stop()
