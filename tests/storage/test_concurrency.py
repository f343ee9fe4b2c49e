"""Threads: a sync Store stays on its thread; readers run while a writer writes; seqs never collide."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from storage import FindingDraft, Job, Store, Workspace, WrongThreadError


def run_threads(*targets: Callable[[], None]) -> list[BaseException]:
    """Run each target on its own thread; return what they raised."""
    errors: list[BaseException] = []

    def guarded(target: Callable[[], None]) -> None:
        try:
            target()
        except BaseException as exc:  # handed back to the test, which asserts on it
            errors.append(exc)

    threads = [threading.Thread(target=guarded, args=(target,)) for target in targets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return errors


def test_a_sync_store_used_from_another_thread_raises_and_says_what_to_do(store: Store, job: Job) -> None:
    def use_it() -> None:
        store.get_job(job.id)

    [error] = run_threads(use_it)
    assert isinstance(error, WrongThreadError)
    assert "open one Store per thread, or use AsyncStore" in str(error)
    assert store.get_job(job.id) == job  # still fine on its own thread


def test_concurrent_appends_from_many_connections_get_distinct_increasing_seqs(
        store: Store, job: Job, store_target: Path | str) -> None:
    seqs_by_thread: list[list[int]] = []

    def append_many() -> None:
        with Store.open(store_target) as own:
            seqs_by_thread.append([own.append_event(job.id, "log", {"text": str(i)}) for i in range(40)])

    assert run_threads(*[append_many] * 4) == []
    for seqs in seqs_by_thread:
        assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)  # each writer sees them rise
    assert sorted(s for seqs in seqs_by_thread for s in seqs) == list(range(1, 161))
    assert [e.seq for e in store.events_after(job.id)] == list(range(1, 161))


APPENDER = """
import sys
from storage import Store
with Store.open(sys.argv[1]) as store:
    print("ready", flush=True)
    sys.stdin.readline()  # wait until every writer is ready, so they really overlap
    seqs = [store.append_event(sys.argv[2], "log", {"text": "from a process"}) for _ in range(100)]
print(" ".join(map(str, seqs)))
"""


def test_concurrent_appends_from_several_processes_get_distinct_seqs(
        store: Store, job: Job, store_target: Path | str) -> None:
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    processes = [subprocess.Popen([sys.executable, "-c", APPENDER, str(store_target), job.id], env=env, text=True,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE) for _ in range(2)]
    for process in processes:
        assert process.stdout.readline() == "ready\n"
    for process in processes:
        process.stdin.write("go\n")
        process.stdin.flush()
    mine = [store.append_event(job.id, "log", {"text": "from the test"}) for _ in range(100)]
    theirs = [[int(seq) for seq in process.communicate(timeout=60)[0].split()] for process in processes]
    assert all(process.returncode == 0 for process in processes)
    for seqs in [mine, *theirs]:
        assert len(seqs) == 100 and seqs == sorted(seqs)
    assert sorted(mine + theirs[0] + theirs[1]) == list(range(1, 301))


def test_readers_see_only_whole_transactions_while_a_writer_writes(
        store: Store, workspace: Workspace, job: Job, store_target: Path | str) -> None:
    batch, batches = 20, 25
    writer_done = threading.Event()
    committed = threading.Condition()
    progress = [0]  # batches committed so far
    reads: list[int] = []

    def write() -> None:
        try:
            with Store.open(store_target) as writer:
                for i in range(batches):
                    writer.append_event(job.id, "log", {"text": f"batch {i}"})
                    writer.add_findings(workspace.id, job.id, f"f{i}.py",
                                        [FindingDraft(f"issue {k}", "minor", k + 1) for k in range(batch)])
                    with committed:
                        progress[0] += 1
                        committed.notify_all()
        finally:
            with committed:
                writer_done.set()
                committed.notify_all()

    def read() -> None:
        with Store.open(store_target, read_only=True) as reader:
            seen = 0
            while not writer_done.is_set() or seen < batches:
                with committed:  # read again once the writer moved on (reading while it writes the next batch)
                    committed.wait_for(lambda last=seen: progress[0] > last or writer_done.is_set(), timeout=30)
                seqs = [e.seq for e in reader.events_after(job.id)]
                assert seqs == list(range(1, len(seqs) + 1)), "a gap or reordering in the event log"
                assert len(seqs) >= seen, "a reader went back in time"
                seen = len(seqs)
                per_file: dict[str, int] = {}
                for finding in reader.list_findings(workspace.id):
                    per_file[finding.file] = per_file.get(finding.file, 0) + 1
                assert set(per_file.values()) <= {batch}, f"half a batch of findings is visible: {per_file}"
                reads.append(seen)

    assert run_threads(write, read, read, read) == []
    assert len(reads) >= 3 and max(reads) == batches
    assert len(store.list_findings(workspace.id)) == batch * batches


def test_a_read_only_store_cannot_write(store: Store, store_target: Path | str) -> None:
    with Store.open(store_target, read_only=True) as reader, pytest.raises(Exception, match=r"readonly|read-only"):
        reader.record_job("ask", {})


def test_a_transaction_groups_several_verbs(store: Store, job: Job) -> None:
    with pytest.raises(RuntimeError), store.transaction():
        store.set_job_state(job.id, "failed", error="boom")
        store.append_event(job.id, "job_state", {"state": "failed"})
        raise RuntimeError("crash before commit")
    assert store.get_job(job.id).state == "queued" and store.events_after(job.id) == []
    with store.transaction():
        store.set_job_state(job.id, "running")
        store.append_event(job.id, "job_state", {"state": "running"})
    assert store.get_job(job.id).last_seq == 1


def test_workers_claiming_from_one_queue_at_once_never_get_the_same_job(
        store: Store, store_target: Path | str) -> None:
    queued = {store.record_job("review", {"n": i}).id for i in range(60)}
    claims: list[list[str]] = []

    def claim_until_empty() -> None:
        with Store.open(store_target) as own:
            mine = []
            while (job := own.claim_next_job()) is not None:
                mine.append(job.id)
            claims.append(mine)

    assert run_threads(*[claim_until_empty] * 3) == []
    claimed = [job_id for mine in claims for job_id in mine]
    assert sorted(claimed) == sorted(queued)  # each job once: none twice, none left
    assert {job.state for job in store.list_jobs(limit=100)} == {"running"}
