"""Iterative refinement: elimination keeps the most-retrieved experiences that cover 95% of the
retrievals, new ones with a high gain, pinned ones and learnings — and logs what it removed;
successive mode retrieves only from the latest batches."""

from __future__ import annotations

from daemon.experience.refine import eliminate, min_batch, survivors
from daemon.experience.settings import ExperienceSettings

# name: (pool, uses, score, batch, pinned)
HISTORY = {"A": ("agent", 50, 0.2, 0, False), "B": ("instructor", 30, 0.3, 1, False),
           "C": ("assistant", 15, 0.4, 0, False), "D": ("agent", 4, 0.9, 0, False),
           "E": ("workflow", 1, 1.0, 1, False), "F": ("agent", 0, 0.97, 2, False),
           "G": ("agent", 0, 0.5, 2, False), "H": ("instructor", 0, 0.99, 0, False),
           "P": ("agent", 0, 0.1, 0, True), "L": ("learning", 0, 1.0, 0, False)}
KEPT = {"A", "B", "C", "F", "P", "L"}  # A+B+C = 95 of 100 retrievals; F is new with gain >= 0.95


async def seed(store) -> dict[str, int]:
    ids = {}
    for name, (pool, uses, score, batch, pinned) in HISTORY.items():
        e = await store.add_experience(pool, f"key {name}", f"value {name}", score=score, batch=batch,
                                       pinned=pinned, uses=uses)
        ids[name] = e.id
    return ids


async def test_elimination_keeps_the_right_subset_and_logs_what_it_removed(store):
    ids = await seed(store)
    items = await store.list_experience(limit=None)
    assert survivors(items, batch=2) == {ids[n] for n in KEPT}

    removed = await eliminate(store, ExperienceSettings(), batch=2)
    assert {e.id for e in removed} == {ids[n] for n in set(HISTORY) - KEPT}
    assert {e.key for e in await store.list_experience(limit=None)} == {f"key {n}" for n in KEPT}
    (log,) = await store.experience_eliminations()
    assert log["batch"] == 2 and log["kept"] == len(KEPT)
    assert sorted(r["key"] for r in log["removed"]) == ["key D", "key E", "key G", "key H"]
    stats = await store.experience_stats()
    assert stats["eliminations"] == 1 and stats["eliminated"] == 4


async def test_successive_mode_retrieves_from_the_latest_batches_only(store):
    await store.add_experience("agent", "count words", "old advice", batch=0)
    await store.add_experience("agent", "count words", "pinned advice", batch=0, pinned=True)
    await store.add_experience("agent", "count words", "recent advice", batch=2)
    successive = ExperienceSettings(mode="successive")
    assert min_batch(successive, 3) == 2 and min_batch(ExperienceSettings(), 3) is None
    found = await store.search_experience("count words", min_batch=min_batch(successive, 3))
    assert {e.value for e, _ in found} == {"pinned advice", "recent advice"}
    assert len(await store.search_experience("count words", min_batch=None)) == 3
