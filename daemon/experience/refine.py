"""Iterative experience refinement (IER): batches, the two modes, and elimination.

Jobs are mined in batches of ``batch_size``. *Cumulative* mode retrieves from every batch;
*successive* mode only from the previous batch and the current one, so each batch builds on the
one before (higher peaks, less stable). After each batch, elimination keeps the most-retrieved
experiences that together cover ``coverage`` (95%) of all retrievals, plus the new ones (this
batch's) whose gain or reward is at least ``keep_gain``; the rest go, and what went is logged.
Pinned experiences and learnings from people are never eliminated.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING

from daemon.experience.settings import ExperienceSettings
from storage.experience import Experience

if TYPE_CHECKING:
    from storage import AsyncStore

log = logging.getLogger("troupe.experience")

REFINED_POOLS = ("instructor", "assistant", "agent", "workflow")
MINED = "mined_jobs"  # the counter of mined jobs; batch = mined_jobs // batch_size


def batch_of(mined_jobs: int, settings: ExperienceSettings) -> int:
    return mined_jobs // settings.batch_size


def min_batch(settings: ExperienceSettings, current: int) -> int | None:
    """The oldest batch retrieval may use: None (all) in cumulative mode."""
    return max(0, current - 1) if settings.mode == "successive" else None


def survivors(items: Iterable[Experience], *, batch: int, coverage: float = 0.95,
              keep_gain: float = 0.95) -> set[int]:
    """The ids elimination keeps (see the module docstring)."""
    items = list(items)
    keep = {e.id for e in items if e.pinned or e.pool not in REFINED_POOLS}
    used = sorted((e for e in items if e.uses > 0 and e.id not in keep), key=lambda e: (-e.uses, -e.score, e.id))
    total = sum(e.uses for e in used)
    covered = 0
    for e in used:
        if total and covered >= coverage * total:
            break
        keep.add(e.id)
        covered += e.uses
    keep |= {e.id for e in items if e.batch >= batch and e.score >= keep_gain}
    return keep


async def eliminate(store: AsyncStore, settings: ExperienceSettings, batch: int) -> list[Experience]:
    """Run elimination over the refined pools now; returns what was removed (also logged)."""
    items = [e for pool in REFINED_POOLS for e in await store.list_experience(pool=pool, limit=None)]
    keep = survivors(items, batch=batch, coverage=settings.coverage, keep_gain=settings.keep_gain)
    doomed = [e.id for e in items if e.id not in keep]
    removed = await store.eliminate_experience(doomed, batch=batch) if doomed else []
    if removed:
        log.info("experience refinement (batch %d): kept %d, removed %d: %s", batch, len(items) - len(removed),
                 len(removed), ", ".join(f"#{e.id} {e.pool} ({e.uses} uses, score {e.score:.2f})" for e in removed))
    return removed
