"""Full-text search over event text and findings: plain words, ranked, immune to FTS syntax."""

from __future__ import annotations

import pytest

from storage import FindingDraft, Job, Store, Workspace


@pytest.fixture
def searchable(store: Store, workspace: Workspace, job: Job) -> Store:
    text = 'The "checkout" handler crashes near the end AND NOT before -- see OR-1234 *urgent*'
    store.append_event(job.id, "message", {"text": text})
    store.append_event(job.id, "tool_run", {"tool": "pytest", "ok": False, "summary": "3 tests failed in cart"})
    store.append_event(job.id, "message", {"text": "Refactoring the payment module"})
    store.add_findings(workspace.id, job.id, "shop/cart.py", [
        FindingDraft("Division by zero when the cart is empty", "major", 10, rule="bug/zero-division"),
        FindingDraft('Catching bare "except:" hides errors (use -W error)', "minor", 20, rule="E722"),
    ])
    return store


def test_events_are_found_by_words_of_their_text(searchable: Store) -> None:
    assert [e.seq for e in searchable.search_events("checkout handler")] == [1]
    assert [e.seq for e in searchable.search_events("tests failed")] == [2]


def test_every_word_must_match(searchable: Store) -> None:
    assert searchable.search_events("checkout payment") == []


def test_words_match_their_other_forms(searchable: Store) -> None:
    assert [e.seq for e in searchable.search_events("refactor payments")] == [3]


@pytest.mark.parametrize("query", ['"checkout', 'checkout"', '-- checkout', "checkout OR", "OR-1234",
                                   "*urgent*", "NEAR(checkout handler)", "checkout AND NOT", "(checkout",
                                   "checkout:", "^checkout", "checkout +handler"])
def test_fts_syntax_in_user_text_is_searched_as_plain_words(searchable: Store, query: str) -> None:
    assert [e.seq for e in searchable.search_events(query)] == [1]


@pytest.mark.parametrize("query", ["", "   ", '"', "-", "*", "()", '""', "NEAR/3"])
def test_a_query_without_matching_words_finds_nothing_and_does_not_fail(searchable: Store, query: str) -> None:
    assert searchable.search_events(query) == []
    assert searchable.search_findings(query) == []


def test_the_word_or_is_an_ordinary_word(searchable: Store) -> None:
    assert [e.seq for e in searchable.search_events("OR")] == [1]


def test_event_search_is_filtered_by_job_and_workspace(searchable: Store, workspace: Workspace) -> None:
    other = searchable.record_job("ask", {})
    searchable.append_event(other.id, "message", {"text": "checkout again"})
    assert len(searchable.search_events("checkout")) == 2
    assert [e.job_id for e in searchable.search_events("checkout", job_id=other.id)] == [other.id]
    assert len(searchable.search_events("checkout", workspace_id=workspace.id)) == 1
    assert len(searchable.search_events("checkout", limit=1)) == 1


def test_findings_are_found_by_message_rule_or_file(searchable: Store) -> None:
    assert [f.start_line for f in searchable.search_findings("empty cart division")] == [10]
    assert [f.start_line for f in searchable.search_findings("E722")] == [20]
    assert [f.start_line for f in searchable.search_findings('bare "except:" -W')] == [20]
    assert len(searchable.search_findings("cart")) == 2


def test_finding_search_follows_rewording_and_state(searchable: Store, workspace: Workspace, job: Job) -> None:
    searchable.add_findings(workspace.id, job.id, "shop/cart.py", [
        FindingDraft("Divide by zero if cart has no items", "major", 10, fingerprint=None, rule="bug/zero-division")])
    assert [f.message for f in searchable.search_findings("items", state="open")] == [
        "Divide by zero if cart has no items"]
    assert [f.state for f in searchable.search_findings("hides errors")] == ["resolved"]
    assert searchable.search_findings("hides errors", state="open") == []
    assert searchable.search_findings("cart", workspace_id=workspace.id + 1) == []


def test_the_best_match_comes_first(store: Store, job: Job) -> None:
    store.append_event(job.id, "log", {"text": "timeout once, then lots of other unrelated words here"})
    store.append_event(job.id, "log", {"text": "timeout timeout timeout"})
    assert [e.seq for e in store.search_events("timeout")] == [2, 1]
