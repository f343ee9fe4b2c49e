"""The session: initialize, the workspace folders (multi-root), shutdown.

Every workspace folder is registered with the daemon (which then watches it); folders added
later are registered as they come. A removed folder is only forgotten here: other editors or
the CLI may still rely on the daemon watching it (``troupe watch --stop`` ends that).

``initializationOptions`` (all optional)::

    {"questions": "both" | "notification",   # also ask with window/showMessageRequest (default both)
     "changes":   "both" | "notification"}   # also offer Apply/Discard with showMessageRequest
"""

from __future__ import annotations

from lsprotocol import types

from daemon.client import DaemonError
from lsp.server import TroupeServer, real_path

SETTINGS = {"questions": ("both", "notification"), "changes": ("both", "notification")}


def register(server: TroupeServer) -> None:
    @server.feature(types.INITIALIZE)
    def initialize(ls: TroupeServer, params: types.InitializeParams) -> None:
        options = params.initialization_options if isinstance(params.initialization_options, dict) else {}
        for name, allowed in SETTINGS.items():
            value = options.get(name, allowed[0])
            ls.settings[name] = value if value in allowed else allowed[0]
        folders = [f.uri for f in params.workspace_folders or []] or ([params.root_uri] if params.root_uri else [])
        for uri in folders:
            path = real_path(uri)
            if path:
                ls.folders.setdefault(path, None)

    @server.feature(types.INITIALIZED)
    def initialized(ls: TroupeServer, params: types.InitializedParams) -> None:
        ls.link.start()

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
