"""The learned orchestrator's parameters in the store: versioned, guarded against lost updates."""

from __future__ import annotations

from pathlib import Path

import pytest

from storage import Store
from storage.verbs.policies import PolicyConflict


def test_every_update_is_a_new_version_and_old_versions_stay(tmp_path: Path) -> None:
    with Store.open(tmp_path / "troupe.db") as store:
        assert store.latest_policy("build") is None
        first = store.save_policy("build", {"heuristic": 2.0}, parent_version=None, episodes=1, mean_reward=0.5)
        second = store.save_policy("build", {"heuristic": 2.5}, parent_version=1, episodes=2, mean_reward=0.6)
        assert (first.version, second.version) == (1, 2)
        assert store.latest_policy("build").params == {"heuristic": 2.5}
        assert [v.version for v in store.policy_history("build")] == [2, 1]
        assert store.latest_policy("change") is None


def test_an_update_from_a_stale_version_is_refused(tmp_path: Path) -> None:
    with Store.open(tmp_path / "troupe.db") as store:
        store.save_policy("build", {"a": 1}, parent_version=None)
        store.save_policy("build", {"a": 2}, parent_version=1)
        with pytest.raises(PolicyConflict, match="version 2, not 1"):
            store.save_policy("build", {"a": 3}, parent_version=1)
        assert store.latest_policy("build").params == {"a": 2}
