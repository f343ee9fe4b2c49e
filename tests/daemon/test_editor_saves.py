"""A save an editor reports where the daemon's watcher does not see saves (``POST /v1/saves``):
the daemon's own save trigger decides what it starts, with the workspace's editor settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from daemon.api.protocol import WorkspaceSettings
from daemon.client import DaemonError
from tests.daemon.conftest import DaemonProcess


async def test_a_reported_save_starts_the_review_a_watched_save_would(daemon: DaemonProcess, repo: Path) -> None:
    async with daemon.client() as client:
        registered = await client.register_workspace(str(repo), watch=False)
        (repo / "app.py").write_text("def add(a, b):\n    return a - b\n")
        info = await client.saved(registered.root, ["app.py"])
        jobs = await client.jobs(limit=10)
    assert not info.watching
    assert [(j.title, j.request["files"]) for j in jobs] == [("review on save: app.py", ["app.py"])]


async def test_a_reported_save_follows_the_editor_settings(daemon: DaemonProcess, repo: Path) -> None:
    async with daemon.client() as client:
        root = (await client.register_workspace(
            str(repo), watch=False, settings=WorkspaceSettings(review_on_save=False, test_on_save=True))).root
        await client.saved(root, ["app.py"])
        jobs = await client.jobs(limit=10)
    assert [j.title for j in jobs] == ["tests on save: app.py"]  # reviewOnSave false, testOnSave true


async def test_a_reported_save_outside_the_workspace_is_refused(daemon: DaemonProcess, repo: Path) -> None:
    async with daemon.client() as client:
        root = (await client.register_workspace(str(repo), watch=False)).root
        with pytest.raises(DaemonError) as refused:
            await client.saved(root, ["../elsewhere.py"])
    assert refused.value.status == 400 and "stay inside it" in str(refused.value)
