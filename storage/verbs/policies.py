"""Orchestrator policies: the learned puppeteer's parameters, one row per version.

::

    v1 = store.save_policy("build", {"actions": {...}}, parent_version=None, episodes=1, reward=0.8)
    latest = store.latest_policy("build")            # PolicyVersion(version=1, params={...}, ...)
    store.save_policy("build", new_params, parent_version=latest.version, episodes=1, reward=0.6)
    store.policy_history("build")                    # newest first

Every update is a new version; old versions stay, so a bad update can be inspected or rolled
back (``save_policy`` of an old version's params). ``parent_version`` guards against two jobs
updating from the same version at once: the second gets :class:`PolicyConflict`, reloads the
latest version and applies its update to that.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from storage import values
from storage.errors import StoreError
from storage.verbs.base import Verbs


class PolicyConflict(StoreError):
    """The policy moved on since it was read: reload the latest version and update that."""


@dataclass(frozen=True)
class PolicyVersion:
    name: str
    version: int
    params: dict[str, Any]
    episodes: int          # job outcomes learnt from, over all versions
    mean_reward: float | None  # running mean of their rewards
    created: float


def _version(row: dict[str, Any]) -> PolicyVersion:
    return values.record(PolicyVersion, row, params=json.loads(row["params"]))


class PolicyVerbs(Verbs):
    def latest_policy(self, name: str) -> PolicyVersion | None:
        """The newest version of the policy ``name`` (None when it never learnt)."""
        row = self._conn.one("SELECT * FROM orchestrator_policies WHERE name = ? ORDER BY version DESC LIMIT 1",
                             [values.text(name, "policy name")])
        return None if row is None else _version(row)

    def policy_history(self, name: str, limit: int = 20) -> list[PolicyVersion]:
        """Versions of ``name``, newest first."""
        rows = self._conn.all("SELECT * FROM orchestrator_policies WHERE name = ? ORDER BY version DESC LIMIT ?",
                              [values.text(name, "policy name"), values.integer(limit, "limit", minimum=1)])
        return [_version(row) for row in rows]

    def save_policy(self, name: str, params: dict[str, Any], *, parent_version: int | None,
                    episodes: int = 0, mean_reward: float | None = None) -> PolicyVersion:
        """Store ``params`` as the next version of ``name``; raises PolicyConflict when the latest
        version is not ``parent_version`` (None: the policy must not exist yet)."""
        if not isinstance(params, dict):
            raise ValueError(f"policy params must be a JSON object, not {type(params).__name__}")
        row_values = {"name": values.text(name, "policy name"), "params": json.dumps(params, sort_keys=True),
                      "episodes": values.integer(episodes, "episodes", minimum=0),
                      "mean_reward": None if mean_reward is None else float(mean_reward), "created": values.now()}
        with self._conn.write():
            latest = self._conn.scalar("SELECT max(version) FROM orchestrator_policies WHERE name = ?", [name])
            if latest != parent_version:
                raise PolicyConflict(f"policy {name!r} is at version {latest}, not {parent_version}: "
                                     "reload it and apply the update again")
            row = self._conn.one(
                "INSERT INTO orchestrator_policies (name, version, params, episodes, mean_reward, created) "
                "VALUES (:name, :version, :params, :episodes, :mean_reward, :created) RETURNING *",
                {**row_values, "version": (latest or 0) + 1})
        assert row is not None
        return _version(row)
