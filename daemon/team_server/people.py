"""People of a team server and their API tokens, for the API edge and ``troupe server add-person``.

A token is shown once, when ``troupe server add-person NAME`` makes it; the store keeps only its
SHA-256 (:mod:`storage.verbs.people`). A person marked as a bot (``--bot``: the Slack bot's token)
may act for the Slack users mapped to people (``--slack USER_ID``). Which workspaces a person sees
is the team config's ``shared_with``.
"""

from __future__ import annotations

import secrets
import time
from typing import TYPE_CHECKING

from storage import Person
from storage.verbs.people import token_hash

if TYPE_CHECKING:
    from storage import AsyncStore

__all__ = ["People", "Person", "new_token"]


def new_token() -> str:
    return "trp_" + secrets.token_urlsafe(32)


class People:
    """Look-ups for the API edge, cached: every request checks a token, and the bot's name a Slack user."""

    def __init__(self, store: AsyncStore, *, ttl: float = 30.0) -> None:
        self.store, self.ttl = store, ttl
        self._cache: dict[tuple[str, str], tuple[float, Person | None]] = {}

    async def add(self, name: str, *, slack_user: str | None = None, bot: bool | None = None) -> str:
        """Add ``name`` (or give them a new token, which ends the old one); returns the token."""
        token = new_token()
        await self.store.add_person(name, token, slack_user=slack_user, bot=bot)
        self._cache.clear()
        return token

    async def remove(self, name: str) -> bool:
        self._cache.clear()
        return await self.store.remove_person(name)

    async def by_token(self, token: str) -> Person | None:
        """Whose token this is (None: nobody's). A removed person's token stops working within ``ttl``."""
        return await self._cached("token", token_hash(token))

    async def by_slack_user(self, slack_user: str) -> Person | None:
        """The person a Slack user is mapped to (None: nobody)."""
        return await self._cached("slack", slack_user)

    async def _cached(self, kind: str, key: str) -> Person | None:
        cached = self._cache.get((kind, key))
        if cached is not None and time.monotonic() - cached[0] < self.ttl:
            return cached[1]
        found = await (self.store.person_by_token_hash(key) if kind == "token" else
                       self.store.person_by_slack_user(key))
        if len(self._cache) > 10_000:
            self._cache.clear()
        self._cache[(kind, key)] = (time.monotonic(), found)
        return found
