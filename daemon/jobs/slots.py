"""Worker slots in two lanes: ``concurrency`` shared slots any job may take, and ``reserved`` slots
only interactive jobs (ask, change, build: a person is waiting) take, so a person never waits
behind background reviews."""

from __future__ import annotations

import asyncio

from daemon.messages import PRIORITIES

INTERACTIVE = PRIORITIES["interactive"]
SHARED, RESERVED = "shared", "reserved"


class WorkerSlots:
    def __init__(self, concurrency: int, reserved: int) -> None:
        self.concurrency, self.reserved = max(1, concurrency), max(0, reserved)
        self._holding: dict[str, str] = {}  # job (or a claim in progress) -> the lane of the slot it holds
        self._freed = asyncio.Event()

    def free_lane(self, priority: int = INTERACTIVE) -> str | None:
        """The lane of a free slot a job of this priority may take, or None."""
        lanes = list(self._holding.values())
        if lanes.count(SHARED) < self.concurrency:
            return SHARED
        if priority >= INTERACTIVE and lanes.count(RESERVED) < self.reserved:
            return RESERVED
        return None

    def take(self, holder: str, lane: str) -> None:
        self._holding[holder] = lane

    def release(self, holder: str) -> bool:
        """Give the holder's slot back; False when it held none."""
        if self._holding.pop(holder, None) is None:
            return False
        self._freed.set()
        return True

    async def wait_for(self, holder: str, priority: int) -> None:
        """Wait for a slot a job of this priority may take, and take it."""
        while (lane := self.free_lane(priority)) is None:
            self._freed.clear()
            await self._freed.wait()
        self.take(holder, lane)

    @staticmethod
    def min_priority(lane: str) -> int | None:
        """The least priority a job must have to run in this lane (None: any)."""
        return INTERACTIVE if lane == RESERVED else None
