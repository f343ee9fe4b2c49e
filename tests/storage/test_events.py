"""Job events: an ordered log per job, numbered by the store, read from any point."""

from __future__ import annotations

import pytest

from storage import Job, NotFoundError, Store


def test_events_are_numbered_one_two_three_per_job(store: Store, job: Job) -> None:
    other = store.record_job("ask", {})
    assert [store.append_event(job.id, "log", {"text": str(i)}) for i in range(3)] == [1, 2, 3]
    assert store.append_event(other.id, "log") == 1
    assert store.get_job(job.id).last_seq == 3


def test_events_keep_kind_phase_role_and_data(store: Store, job: Job) -> None:
    store.append_event(job.id, "message", {"text": "Is the DB schema final?", "to": "cto"},
                       phase="design", role="programmer", at=123.5)
    [event] = store.events_after(job.id)
    assert (event.job_id, event.seq, event.at, event.kind) == (job.id, 1, 123.5, "message")
    assert (event.phase, event.role) == ("design", "programmer")
    assert event.data == {"text": "Is the DB schema final?", "to": "cto"}


def test_events_after_a_seq_returns_only_the_later_ones_in_order(store: Store, job: Job) -> None:
    for i in range(5):
        store.append_event(job.id, "log", {"text": f"line {i}"})
    assert [e.seq for e in store.events_after(job.id, 2)] == [3, 4, 5]
    assert [e.seq for e in store.events_after(job.id, 2, limit=2)] == [3, 4]
    assert store.events_after(job.id, 5) == []


def test_an_event_for_an_unknown_job_is_refused(store: Store) -> None:
    with pytest.raises(NotFoundError, match="no job with id 'ghost'"):
        store.append_event("ghost", "log", {"text": "x"})


def test_event_data_that_is_not_json_is_refused_without_using_a_seq(store: Store, job: Job) -> None:
    with pytest.raises(ValueError, match="event data must be JSON-serialisable"):
        store.append_event(job.id, "log", {"bytes": b"\x00"})
    assert store.append_event(job.id, "log") == 1


def test_undecodable_text_in_event_data_round_trips(store: Store, job: Job) -> None:
    name = b"caf\xe9.py".decode("utf-8", "surrogateescape")  # a file name that is not UTF-8
    store.append_event(job.id, "tool_run", {"summary": f"failed in {name}"})
    assert store.events_after(job.id)[0].data["summary"] == f"failed in {name}"
    assert [e.seq for e in store.search_events("failed")] == [1]


def test_an_empty_event_kind_is_refused(store: Store, job: Job) -> None:
    with pytest.raises(ValueError, match="event kind must not be empty"):
        store.append_event(job.id, " ")


def test_binary_tool_output_with_nul_bytes_is_kept_and_searchable(store: Store, job: Job) -> None:
    output = "segfault\x00\x00core dumped \udcff"
    store.append_event(job.id, "tool_run", {"tool": "pytest", "output": output})
    [event] = store.events_after(job.id)
    assert event.data["output"] == output
    assert [e.seq for e in store.search_events("segfault core dumped")] == [1]
