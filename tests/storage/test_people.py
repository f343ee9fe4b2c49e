"""A team server's people in the store (both backends): tokens kept as SHA-256 only, one Slack user
per person, a new token ends the old one, the bot mark kept across new tokens."""

from __future__ import annotations

import hashlib

import pytest

from storage import Person, Store
from storage.db import connect, migrate
from tests.fixtures.postgres import PostgresServer


def test_a_person_is_found_by_their_token_and_slack_user_and_the_token_itself_is_never_stored(store: Store) -> None:
    ada = store.add_person("ada", "trp_ada-secret", slack_user="U0ADA")
    assert (ada.name, ada.slack_user, ada.bot) == ("ada", "U0ADA", False)
    assert store.person_by_token("trp_ada-secret") == ada
    assert store.person_by_slack_user("U0ADA") == ada
    assert store.person_by_token("trp_ada-secre") is None and store.person_by_slack_user("U0BOB") is None
    stored = store._conn.all("SELECT * FROM people")
    assert "trp_ada-secret" not in repr(stored)
    assert stored[0]["token_sha256"] == hashlib.sha256(b"trp_ada-secret").hexdigest()


def test_a_new_token_ends_the_old_one_and_keeps_the_slack_user_and_bot_mark(store: Store) -> None:
    store.add_person("slack-bot", "trp_one", bot=True)
    store.add_person("ada", "trp_ada", slack_user="U0ADA")
    renewed = store.add_person("ada", "trp_ada-2")
    assert store.person_by_token("trp_ada") is None
    assert store.person_by_token("trp_ada-2") == renewed and renewed.slack_user == "U0ADA"
    assert store.add_person("slack-bot", "trp_two").bot is True
    assert store.add_person("slack-bot", "trp_three", bot=False).bot is False


def test_one_slack_user_is_one_person(store: Store) -> None:
    store.add_person("ada", "trp_ada", slack_user="U0ADA")
    store.add_person("bob", "trp_bob")
    with pytest.raises(ValueError, match="Slack user U0ADA is already ada's"):
        store.add_person("bob", "trp_bob-2", slack_user="U0ADA")
    with pytest.raises(ValueError, match="already ada's"):
        store.update_person("bob", slack_user="U0ADA")
    assert store.person_by_token("trp_bob") is not None  # the refused call changed nothing


def test_update_keeps_the_token_and_remove_ends_it(store: Store) -> None:
    store.add_person("ada", "trp_ada", slack_user="U0ADA")
    assert store.update_person("ada", slack_user="U0NEW", bot=True) == Person(
        "ada", "U0NEW", True, store.person_by_token("trp_ada").created)  # type: ignore[union-attr]
    assert store.update_person("ada", slack_user=None).slack_user is None  # type: ignore[union-attr]
    assert store.update_person("nobody", bot=True) is None
    assert [p.name for p in store.list_people()] == ["ada"]
    assert store.remove_person("ada") is True and store.remove_person("ada") is False
    assert store.person_by_token("trp_ada") is None and store.list_people() == []


def test_people_of_a_team_server_from_before_the_store_held_them_move_into_it(postgres: PostgresServer) -> None:
    url = postgres.create_database()
    connection = connect(url)
    migrate(connection, target=6)
    connection.execute("CREATE TABLE troupe_people (name TEXT PRIMARY KEY, token_sha256 TEXT NOT NULL UNIQUE, "
                       "slack_user TEXT UNIQUE, created DOUBLE PRECISION NOT NULL)")
    connection.execute("INSERT INTO troupe_people VALUES ('ada', ?, 'U0ADA', 1.0)",
                       [hashlib.sha256(b"trp_old").hexdigest()])
    connection.close()
    with Store.open(url) as store:
        assert store.person_by_token("trp_old") == Person("ada", "U0ADA", False, 1.0)
        assert store._conn.scalar("SELECT to_regclass('troupe_people')") is None
    postgres.drop_database(url)
