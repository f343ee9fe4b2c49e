"""Documents: findings follow the buffer from open to close.

* open: the store's open findings for the file are shown; huge and binary documents are
  skipped with a log line.
* change: findings move with incremental edits above them; edited findings disappear.
* save: the saved text becomes the review baseline. The daemon's watcher reviews saved files
  of registered workspaces, so the server does NOT submit a review too (that would double
  every job); only when the daemon says it is not watching a workspace does the server submit
  the review itself (and the tests, with ``testOnSave``; no review with ``reviewOnSave`` false).
  Either way the findings arrive on the event stream.
* close: the document's diagnostics are cleared.
"""

from __future__ import annotations

from lsprotocol import types

from daemon.api.protocol import SubmitJob, WorkspaceSettings
from daemon.client import DaemonError
from lsp.documents import OpenDocument, skip_reason
from lsp.server import TroupeServer, real_path
from lsp.tracking import shift


def register(server: TroupeServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(ls: TroupeServer, params: types.DidOpenTextDocumentParams) -> None:
        item = params.text_document
        doc = OpenDocument(item.uri, real_path(item.uri), skipped=skip_reason(item.text))
        ls.documents[item.uri] = doc
        if doc.skipped:
            ls.log_line(f"skipped {item.uri}: {doc.skipped}; it gets no review and no diagnostics")
            return
        doc.reviewed = ls.current_lines(doc)
        ls.attach(doc)
        if ls.link.connected:
            try:
                await ls.refresh(doc)
            except DaemonError as exc:
                ls.log_line(f"findings for {item.uri} unavailable: {exc}", types.MessageType.Warning)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: TroupeServer, params: types.DidChangeTextDocumentParams) -> None:
        doc = ls.documents.get(params.text_document.uri)
        if doc is None or doc.skipped or not doc.placed:
            return
        for change in params.content_changes:
            if isinstance(change, types.TextDocumentContentChangePartial):
                doc.edited(*shift(list(doc.placed.values()), change.range, change.text))
            else:  # the whole text: place the findings again against the review baseline
                doc.replace_all([p.finding for p in doc.placed.values()], ls.current_lines(doc))
        ls.publish(doc)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    async def did_save(ls: TroupeServer, params: types.DidSaveTextDocumentParams) -> None:
        doc = ls.documents.get(params.text_document.uri)
        if doc is None or doc.skipped:
            return
        doc.reviewed = ls.current_lines(doc)
        if doc.root is None or doc.relative is None or ls.watching.get(doc.root, True):
            return  # the daemon's watcher reviews this save (and obeys reviewOnSave / testOnSave)
        wanted = ls.overrides or WorkspaceSettings()
        kinds = (["review"] if wanted.review_on_save is not False else []) + (["test"] if wanted.test_on_save else [])
        for kind in kinds:
            request = SubmitJob(kind=kind, workspace=doc.root, files=[doc.relative], options={"trigger": "save"})
            try:
                await ls.link.call(lambda c, request=request: c.submit(request))
            except DaemonError as exc:
                ls.log_line(f"{kind} of {doc.relative} not started: {exc}", types.MessageType.Warning)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: TroupeServer, params: types.DidCloseTextDocumentParams) -> None:
        doc = ls.documents.pop(params.text_document.uri, None)
        if doc is not None:
            ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=doc.uri, diagnostics=[]))
