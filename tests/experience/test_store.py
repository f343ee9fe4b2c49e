"""The store's experience verbs: pools, any-word search, retrieval counts, rewards, curation, and an
export that imports back to the same rows."""

from __future__ import annotations

import pytest

from storage import NotFoundError, Store
from storage.experience import dump_jsonl


@pytest.fixture
def store(tmp_path):
    opened = Store.open(tmp_path / "troupe.db")
    yield opened
    opened.close()


def test_search_matches_any_word_and_filters_by_pool_step_and_workspace(store, tmp_path):
    (tmp_path / "shop").mkdir()
    ws = store.add_workspace(tmp_path / "shop")
    code = store.add_experience("agent", "count words in a file", "def count_words(text): ...", phase="coding",
                                role="programmer", score=0.9)
    store.add_experience("agent", "parse a csv file", "import csv", phase="coding", role="programmer")
    mine = store.add_experience("learning", "app.py divide by zero", "dismissed", workspace_id=ws.id)
    hits = store.search_experience("please count the words of my novel", pools=["agent"], phase="coding")
    assert [e.id for e, _ in hits] == [code.id]
    assert store.search_experience("divide zero", pools=["learning"]) != []
    assert store.search_experience("divide zero", workspace_id=ws.id)[0][0].id == mine.id
    assert store.search_experience("count words", phase="review") == []
    assert store.search_experience("the and of") == []  # only stop words: nothing to look for


def test_the_same_experience_twice_is_one_row_with_the_higher_score(store):
    first = store.add_experience("agent", "k", "v", phase="coding", score=0.4)
    again = store.add_experience("agent", "k", "v", phase="coding", score=0.8)
    assert again.id == first.id and again.score == 0.8
    assert store.add_experience("agent", "k", "v", phase="coding", score=0.1).score == 0.8


def test_retrievals_are_counted_and_logged(store):
    e = store.add_experience("instructor", "state", "add a --lines flag")
    store.count_retrievals([e.id, e.id], job_id="job-9", phase="coding")
    store.count_retrievals([e.id, 12345], job_id="job-10", phase="coding")  # a deleted one is skipped
    assert store.get_experience(e.id).uses == 2
    assert store.experience_stats()["retrievals"] == 2


def test_rewards_pins_and_deletes(store):
    e = store.add_experience("agent", "k", "v", job_id="job-1", score=0.5)
    assert store.reward_job_experience("job-1", 0.3) == 1
    assert store.get_experience(e.id).score == pytest.approx(0.8)
    assert store.update_experience(e.id, pinned=True).pinned
    assert store.eliminate_experience([e.id], batch=1) == []  # pinned: refinement never removes it
    assert store.delete_experience(e.id).id == e.id
    with pytest.raises(NotFoundError, match="no experience with id"):
        store.delete_experience(e.id)
    with pytest.raises(ValueError, match="pool 'wisdom' is not one of"):
        store.add_experience("wisdom", "k", "v")


def test_export_then_import_round_trips(store, tmp_path):
    store.add_experience("instructor", "state one", "do this", chain="build", score=0.7, data={"source": 0})
    e = store.add_experience("agent", "input", "output\nwith lines", phase="design", role="cto", score=1.0)
    store.count_retrievals([e.id])
    exported = store.export_experience()
    other = Store.open(tmp_path / "other.db")
    try:
        assert other.import_experience(exported) == (2, 0)
        assert other.export_experience() == exported
        assert other.import_experience(exported) == (0, 2)  # importing again adds nothing
        assert dump_jsonl(other.export_experience()) == dump_jsonl(exported)
        with pytest.raises(ValueError, match="experience 2: needs pool, key and value"):
            other.import_experience([exported[0], {"pool": "agent"}])
    finally:
        other.close()
