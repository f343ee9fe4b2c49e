"""The retrieval log says why each experience matched (what it was used as, the query's words it
shares, its relevance), on SQLite and PostgreSQL alike; a store from before the log had reasons is
migrated with its rows kept, their reasons unknown."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from storage import Retrieval, Store
from storage.db import connect, migrate
from storage.migrations import LATEST_VERSION
from storage.verbs.retrievals import MAX_MATCHED


def test_each_retrieval_is_logged_with_why_it_matched(store: Store) -> None:
    example = store.add_experience("agent", "clamp high low", "compare x with high first", phase="fix")
    hint = store.add_experience("instructor", "calc ops", "Swap the comparison.")
    learning = store.add_experience("learning", "app.py divide", "The user dismissed ...")
    words = tuple(f"w{n}" for n in range(40))

    store.count_retrievals([Retrieval(example.id, "example", ("clamp", "high"), 0.423456),
                            Retrieval(hint.id, "hint", words, 0.2), learning.id, example.id],
                           job_id="job-1", phase="fix")
    store.count_retrievals([Retrieval(learning.id, "screening", ("divide",), 0.75)], job_id="job-2", phase="review")

    logged = store.list_retrievals(job_id="job-1")
    assert [(r.experience_id, r.why, r.phase) for r in logged] == [
        (example.id, "example", "fix"), (hint.id, "hint", "fix"), (learning.id, "", "fix")]
    first = logged[0]
    assert (first.matched, first.relevance, first.job_id) == (("clamp", "high"), 0.4235, "job-1")
    assert logged[1].matched == words[:MAX_MATCHED], "a few words say why; never a whole prompt"
    assert (logged[2].matched, logged[2].relevance) == ((), None), "an id alone: no reason known"
    assert [(r.job_id, r.why, r.matched) for r in store.list_retrievals(experience_id=learning.id)] == [
        ("job-2", "screening", ("divide",)), ("job-1", "", ())]  # newest first
    got = store.get_experience(example.id)
    assert got is not None and got.uses == 1, "named twice in one prompt, counted once"
    assert store.experience_stats()["retrievals"] == 4


def test_a_store_whose_retrievals_had_no_reasons_keeps_them(tmp_path: Path) -> None:
    path = tmp_path / "troupe.db"
    conn = connect(path)
    assert migrate(conn, target=8) == 8
    conn.close()
    raw = sqlite3.connect(path)
    raw.execute("INSERT INTO experiences (pool, key, value, created, fingerprint) VALUES ('agent', 'k', 'v', 1, 'f')")
    raw.execute("INSERT INTO experience_retrievals (experience_id, job_id, phase, at) VALUES (1, 'old', 'fix', 2)")
    raw.commit()
    raw.close()

    with Store.open(path) as store:
        assert store.schema_version() == LATEST_VERSION
        (old,) = store.list_retrievals(job_id="old")
        assert (old.experience_id, old.phase, old.why, old.matched, old.relevance) == (1, "fix", "", (), None)
