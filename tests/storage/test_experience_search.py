"""Experience search, the same on SQLite and PostgreSQL: any salient word matches, stemmed, filtered,
best first; storing the same experience twice keeps one row with the higher score."""

from __future__ import annotations

from pathlib import Path

from storage import Store


def test_any_salient_word_finds_an_experience_and_filters_apply(store: Store, tmp_path: Path) -> None:
    workspace = store.add_workspace(tmp_path / "shop")
    code = store.add_experience("agent", "count words in a file", "def count_words(text): ...", phase="coding",
                                role="programmer", score=0.9)
    store.add_experience("agent", "parse a csv file", "import csv", phase="coding", role="programmer")
    mine = store.add_experience("learning", "app.py divide by zero", "dismissed", workspace_id=workspace.id)
    hits = store.search_experience("please count the words of my novel", pools=["agent"], phase="coding")
    assert [e.id for e, _ in hits] == [code.id]
    assert [e.id for e, _ in store.search_experience("dividing zeros", workspace_id=workspace.id)] == [mine.id]
    assert store.search_experience("count words", phase="review") == []
    assert store.search_experience("the and of") == []  # only stop words: nothing to look for


def test_search_syntax_in_a_prompt_is_plain_words(store: Store) -> None:
    found = store.add_experience("agent", "retry the flaky upload", "use backoff", phase="coding")
    for query in ['"retry', "upload OR", "retry & !upload", "(flaky | upload)", "upload:*", "-retry"]:
        assert [e.id for e, _ in store.search_experience(query)] == [found.id], query


def test_more_shared_words_rank_first_with_a_higher_relevance(store: Store) -> None:
    one = store.add_experience("agent", "parse dates", "dateutil", phase="coding")
    both = store.add_experience("agent", "parse dates from csv columns", "csv + dateutil", phase="coding")
    [(first, high), (second, low)] = store.search_experience("parse csv columns")
    assert (first.id, second.id) == (both.id, one.id) and high > low > 0


def test_the_same_experience_twice_is_one_row_with_the_higher_score(store: Store) -> None:
    first = store.add_experience("agent", "k", "v", phase="coding", score=0.4)
    again = store.add_experience("agent", "k", "v", phase="coding", score=0.8)
    assert again.id == first.id and again.score == 0.8
    assert store.add_experience("agent", "k", "v", phase="coding", score=0.1).score == 0.8
    assert store.experience_stats()["total"] == 1
