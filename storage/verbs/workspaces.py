"""Workspaces: the repositories Troupe works in, one row per root folder."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from storage import values
from storage.errors import NotFoundError
from storage.records import Workspace
from storage.verbs.base import UNSET, Verbs


def _root(path: str | os.PathLike[str]) -> str:
    raw = values.text(os.fspath(path), "workspace root")
    if not os.path.isabs(os.path.expanduser(raw)):
        raise ValueError(f"workspace root {raw!r} must be an absolute path")
    return str(Path(raw).expanduser().resolve())


def _workspace(row: dict[str, Any]) -> Workspace:
    return Workspace(id=row["id"], root=row["root"], name=row["name"], created=row["created"],
                     settings=values.from_json(row["settings"]))


class WorkspaceVerbs(Verbs):
    def add_workspace(self, root: str | os.PathLike[str], name: str | None = None,
                      settings: dict[str, Any] | None = None) -> Workspace:
        """Register the repository at ``root`` (absolute); returns the existing one if already known."""
        root = _root(root)
        name = values.text(name, "workspace name") if name is not None else (Path(root).name or root)
        settings_json = values.to_json(settings or {}, "workspace settings")
        with self._conn.write():
            row = self._conn.one(
                "INSERT INTO workspaces (root, name, created, settings) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (root) DO NOTHING RETURNING *", [root, name, values.now(), settings_json])
            if row is None:  # already known (perhaps added by another process a moment ago)
                row = self._conn.one("SELECT * FROM workspaces WHERE root = ?", [root])
        assert row is not None
        return _workspace(row)

    def get_workspace(self, workspace_id: int) -> Workspace | None:
        row = self._conn.one("SELECT * FROM workspaces WHERE id = ?", [workspace_id])
        return _workspace(row) if row else None

    def find_workspace_for(self, path: str | os.PathLike[str]) -> Workspace | None:
        """The innermost workspace containing ``path`` (a file or folder, absolute), if any."""
        target = _root(path)
        row = self._conn.one(
            "SELECT * FROM workspaces WHERE root = :p OR substr(:p, 1, length(root) + 1) = root || '/' "
            "OR root = '/' ORDER BY length(root) DESC LIMIT 1", {"p": target})
        return _workspace(row) if row else None

    def list_workspaces(self) -> list[Workspace]:
        return [_workspace(row) for row in self._conn.all("SELECT * FROM workspaces ORDER BY root")]

    def update_workspace(self, workspace_id: int, *, name: str = UNSET,
                         settings: dict[str, Any] = UNSET) -> Workspace:
        changes: dict[str, Any] = {}
        if name is not UNSET:
            changes["name"] = values.text(name, "workspace name")
        if settings is not UNSET:
            changes["settings"] = values.to_json(settings, "workspace settings")
        with self._conn.write():
            if changes:
                assignments = ", ".join(f"{column} = :{column}" for column in changes)
                self._conn.execute(f"UPDATE workspaces SET {assignments} WHERE id = :id",
                                   {**changes, "id": workspace_id})
            workspace = self.get_workspace(workspace_id)
        if workspace is None:
            raise NotFoundError(f"no workspace with id {workspace_id}")
        return workspace

    def remove_workspace(self, workspace_id: int) -> bool:
        """Forget a workspace with its findings and changes; its jobs stay, detached. False if unknown."""
        with self._conn.write():
            cursor = self._conn.execute("DELETE FROM workspaces WHERE id = ?", [workspace_id])
        return cursor.rowcount > 0
