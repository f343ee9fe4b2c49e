"""The session: initialize, the editor's settings, the workspace folders (multi-root), shutdown.

Every workspace folder is registered with the daemon (which then watches it), together with
the editor's ``model``/``reviewOnSave``/``testOnSave`` overrides when it sent them; folders added
later are registered as they come, and all of them again when those settings change. A removed
folder is only forgotten here: other editors or the CLI may still rely on the daemon watching it
(``troupe watch --stop`` ends that). The settings' shape is in :mod:`lsp.settings`.
"""

from __future__ import annotations

from typing import Any

from lsprotocol import types

from daemon.client import DaemonError
from lsp.server import TroupeServer, real_path
from lsp.settings import read_choices, read_overrides, section


def apply_settings(ls: TroupeServer, options: dict[str, Any]) -> None:
    """Take the editor's settings; a bad value is ignored with a log line."""
    problems: list[str] = []
    ls.settings = read_choices(options, ls.settings, problems)
    overrides = read_overrides(options, problems)
    if overrides is not None:
        ls.overrides = overrides
    for problem in problems:
        ls.log_line(f"setting {problem}", types.MessageType.Warning)


async def register_all(ls: TroupeServer) -> None:
    for folder in list(ls.folders):
        try:
            await ls.register_folder(folder)
        except DaemonError as exc:
            ls.log_line(f"could not register {folder}: {exc}", types.MessageType.Warning)


def register(server: TroupeServer) -> None:
    @server.feature(types.INITIALIZE)
    def initialize(ls: TroupeServer, params: types.InitializeParams) -> None:
        apply_settings(ls, params.initialization_options if isinstance(params.initialization_options, dict) else {})
        folders = [f.uri for f in params.workspace_folders or []] or ([params.root_uri] if params.root_uri else [])
        for uri in folders:
            path = real_path(uri)
            if path:
                ls.folders.setdefault(path, None)

    @server.feature(types.INITIALIZED)
    def initialized(ls: TroupeServer, params: types.InitializedParams) -> None:
        ls.link.start()

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def configuration_changed(ls: TroupeServer, params: types.DidChangeConfigurationParams) -> None:
        before = ls.overrides
        apply_settings(ls, section(params.settings))
        for doc in ls.documents.values():  # minimumSeverity may have changed
            ls.publish(doc)
        if ls.overrides != before and ls.link.connected:
            await register_all(ls)

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    async def folders_changed(ls: TroupeServer, params: types.DidChangeWorkspaceFoldersParams) -> None:
        for folder in params.event.removed:
            path = real_path(folder.uri)
            if path:
                ls.folders.pop(path, None)
        for folder in params.event.added:
            path = real_path(folder.uri)
            if path is None:
                continue
            ls.folders.setdefault(path, None)
            if ls.link.connected:
                try:
                    await ls.register_folder(path)
                except DaemonError as exc:
                    ls.log_line(f"could not register {path}: {exc}", types.MessageType.Warning)
        for doc in ls.documents.values():
            ls.attach(doc)
            if doc.root is None and doc.placed:
                doc.placed.clear()
                ls.publish(doc)
            elif doc.root is not None and ls.link.connected:
                try:
                    await ls.refresh(doc)
                except DaemonError as exc:
                    ls.log_line(f"findings for {doc.uri} unavailable: {exc}", types.MessageType.Warning)

    @server.feature(types.SHUTDOWN)
    async def shutdown(ls: TroupeServer, params: None) -> None:
        await ls.jobs.close()
        await ls.link.close()
