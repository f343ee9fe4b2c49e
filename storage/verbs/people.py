"""People of a team server: their API tokens (kept as SHA-256), Slack user ids and bot mark.

::

    store.add_person("ada", token, slack_user="U0ADA")   # or a new token for ada (the old one ends)
    store.add_person("slack-bot", bot_token, bot=True)   # may act for the Slack users mapped to people
    store.person_by_token(token)                          # Person(name="ada", slack_user="U0ADA", ...)
    store.person_by_slack_user("U0ADA")                   # the same Person
    store.list_people(); store.remove_person("ada")

A token is never stored, only its SHA-256 (:func:`token_hash`): a token is 32 random bytes, so a
plain hash is enough, there is nothing to guess. Which workspaces a person sees is the team
config's ``shared_with``, not the store's.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from storage import values
from storage.verbs.base import Verbs

_UNCHANGED: Any = object()


@dataclass(frozen=True)
class Person:
    name: str
    slack_user: str | None = None
    bot: bool = False  # its token may act for Slack users (X-Troupe-On-Behalf-Of)
    created: float = 0.0


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _person(row: dict[str, Any]) -> Person:
    return values.record(Person, row, bot=bool(row["bot"]))


class PeopleVerbs(Verbs):
    def add_person(self, name: str, token: str, *, slack_user: str | None = None,
                   bot: bool | None = None) -> Person:
        """Add ``name`` with ``token``, or give them ``token`` in place of their old one (which stops
        working). ``slack_user`` and ``bot`` None keep what they had (a new person: no Slack user, not a
        bot). A Slack user is one person's: mapping it to a second one raises ValueError naming the first."""
        slack = values.optional_text(slack_user, "Slack user id") or None
        row_values = {"name": values.text(name, "person name"), "slack_user": slack,
                      "bot": None if bot is None else int(bot), "created": values.now(),
                      "token_sha256": token_hash(values.text(token, "token"))}
        with self._conn.write():
            self._check_slack_user(slack, name)
            row = self._conn.one(
                "INSERT INTO people (name, token_sha256, slack_user, bot, created) "
                "VALUES (:name, :token_sha256, :slack_user, coalesce(:bot, 0), :created) "
                "ON CONFLICT (name) DO UPDATE SET token_sha256 = excluded.token_sha256, "
                "bot = coalesce(:bot, people.bot), slack_user = coalesce(excluded.slack_user, people.slack_user) "
                "RETURNING *", row_values)
        assert row is not None
        return _person(row)

    def update_person(self, name: str, *, slack_user: str | None = _UNCHANGED, bot: bool = _UNCHANGED) -> Person | None:
        """Change ``name``'s Slack user (None: none) or bot mark, keeping their token; None when there is
        no such person."""
        with self._conn.write():
            if slack_user is not _UNCHANGED:
                slack_user = values.optional_text(slack_user, "Slack user id") or None
                self._check_slack_user(slack_user, name)
                self._conn.execute("UPDATE people SET slack_user = ? WHERE name = ?", [slack_user, name])
            if bot is not _UNCHANGED:
                self._conn.execute("UPDATE people SET bot = ? WHERE name = ?", [int(bool(bot)), name])
            row = self._conn.one("SELECT * FROM people WHERE name = ?", [name])
        return None if row is None else _person(row)

    def _check_slack_user(self, slack_user: str | None, name: str) -> None:
        owner = slack_user and self._conn.scalar("SELECT name FROM people WHERE slack_user = ? AND name <> ?",
                                                 [slack_user, name])
        if owner:
            raise ValueError(f"Slack user {slack_user} is already {owner}'s; one Slack user is one person")

    def remove_person(self, name: str) -> bool:
        """Remove ``name`` (their token stops working); False when there was no such person."""
        with self._conn.write():
            found = self._conn.scalar("SELECT 1 FROM people WHERE name = ?", [name])
            self._conn.execute("DELETE FROM people WHERE name = ?", [name])
        return bool(found)

    def person_by_token(self, token: str) -> Person | None:
        return self.person_by_token_hash(token_hash(token))

    def person_by_token_hash(self, digest: str) -> Person | None:
        """The person whose token's SHA-256 (hex) is ``digest``."""
        row = self._conn.one("SELECT * FROM people WHERE token_sha256 = ?", [digest])
        return None if row is None else _person(row)

    def person_by_slack_user(self, slack_user: str) -> Person | None:
        row = self._conn.one("SELECT * FROM people WHERE slack_user = ?", [slack_user])
        return None if row is None else _person(row)

    def list_people(self) -> list[Person]:
        return [_person(row) for row in self._conn.all("SELECT * FROM people ORDER BY name")]
