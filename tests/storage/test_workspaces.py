"""Workspaces: one per repository root, found from any path inside it."""

from __future__ import annotations

from pathlib import Path

import pytest

from storage import NotFoundError, Store, Workspace


def test_adding_a_root_twice_returns_the_same_workspace(store: Store, tmp_path: Path) -> None:
    first = store.add_workspace(tmp_path / "shop", settings={"review": {"on_save": True}})
    again = store.add_workspace(str(tmp_path / "shop") + "/", name="other name")
    assert again == first
    assert first.name == "shop" and first.settings == {"review": {"on_save": True}}
    assert store.list_workspaces() == [first]


def test_a_relative_root_is_refused(store: Store) -> None:
    with pytest.raises(ValueError, match="must be an absolute path"):
        store.add_workspace("shop")


def test_the_innermost_workspace_containing_a_path_is_found(store: Store, tmp_path: Path) -> None:
    outer = store.add_workspace(tmp_path / "mono")
    inner = store.add_workspace(tmp_path / "mono" / "services" / "api")
    store.add_workspace(tmp_path / "mono2")
    assert store.find_workspace_for(tmp_path / "mono" / "services" / "api" / "app.py") == inner
    assert store.find_workspace_for(tmp_path / "mono" / "README.md") == outer
    assert store.find_workspace_for(tmp_path / "mono") == outer
    assert store.find_workspace_for(tmp_path / "monolith" / "x.py") is None


def test_workspace_settings_can_be_updated(store: Store, workspace: Workspace) -> None:
    updated = store.update_workspace(workspace.id, settings={"model": "openai/gpt-4o-mini"}, name="Shop")
    assert store.get_workspace(workspace.id) == updated
    assert (updated.name, updated.settings) == ("Shop", {"model": "openai/gpt-4o-mini"})
    with pytest.raises(NotFoundError):
        store.update_workspace(999, name="x")


def test_removing_a_workspace_drops_its_findings_and_changes_but_keeps_its_jobs(
        store: Store, workspace: Workspace) -> None:
    job = store.record_job("review", {}, workspace_id=workspace.id)
    store.add_findings(workspace.id, job.id, "a.py", [{"message": "bad", "severity": "minor", "start_line": 1}])
    change = store.propose_change(job.id, "--- a/a.py\n+++ b/a.py\n")
    assert store.remove_workspace(workspace.id) is True
    assert store.get_workspace(workspace.id) is None
    assert store.get_change(change.id) is None
    assert store.search_findings("bad") == []
    assert store.get_job(job.id).workspace_id is None
    assert store.remove_workspace(workspace.id) is False
