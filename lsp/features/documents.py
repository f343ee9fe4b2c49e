"""Documents: findings follow the buffer from open to close.

* open: the static lane lints the buffer at once and the store's open findings for the file are
  shown; huge and binary documents are skipped with a log line.
* change: findings and lint move with the edits; those on lines whose text changed disappear;
  the buffer is linted again once typing pauses (:data:`lsp.lint.CHANGE_PAUSE_S`).
* save: the buffer is linted at once, and the saved text becomes the review baseline. The
  daemon's watcher sees saves in registered workspaces, so the server submits nothing (that
  would double every job); only when the daemon says it is not watching a workspace does the
  server tell it of the save (``POST /v1/saves``), and the daemon decides, as for a watched
  save, what it starts (``reviewOnSave``, ``testOnSave``). The findings arrive on the event stream.
* close: the document's diagnostics are cleared.
"""

from __future__ import annotations

from lsprotocol import types

from daemon.client import DaemonError
from daemon.lint import text_hash
from lsp.documents import OpenDocument, skip_reason
from lsp.lint import CHANGE_PAUSE_S
from lsp.server import TroupeServer, real_path


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
        doc.lines = item.text.split("\n")
        ls.attach(doc)
        ls.lint_soon(doc)
        if ls.link.connected:
            try:
                await ls.refresh(doc)
            except DaemonError as exc:
                ls.log_line(f"findings for {item.uri} unavailable: {exc}", types.MessageType.Warning)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: TroupeServer, params: types.DidChangeTextDocumentParams) -> None:
        doc = ls.documents.get(params.text_document.uri)
        if doc is None or doc.skipped:
            return
        codec = ls.workspace.position_codec
        for change in params.content_changes:
            if isinstance(change, types.TextDocumentContentChangePartial):
                lines = [line + "\n" for line in doc.lines]  # the codec counts characters on these
                rng = codec.range_from_client_units(lines, change.range)
                doc.edit((rng.start.line, rng.start.character), (rng.end.line, rng.end.character), change.text)
            else:
                doc.replaced(change.text.split("\n"))
        now = ls.workspace.get_text_document(doc.uri).source.split("\n")
        if now != doc.lines:  # never expected; if it happens, trust the editor's text
            doc.replaced(now)
        ls.publish(doc)
        ls.lint_soon(doc, CHANGE_PAUSE_S)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    async def did_save(ls: TroupeServer, params: types.DidSaveTextDocumentParams) -> None:
        doc = ls.documents.get(params.text_document.uri)
        if doc is None or doc.skipped:
            return
        text = ls.workspace.get_text_document(doc.uri).source
        doc.saved(ls.current_lines(doc), text_hash(text))
        ls.lint_soon(doc)
        root, relative = doc.root, doc.relative
        if root is None or relative is None or ls.watching.get(root, True) or root in ls.local_roots:
            return  # the daemon's watcher saw this save (a team server never reads this machine's files)
        try:  # the daemon decides what it starts (reviewOnSave, testOnSave), as for a watched save
            await ls.link.call(lambda c: c.saved(root, [relative]))
        except DaemonError as exc:
            ls.log_line(f"the save of {relative} was not reported to the daemon: {exc}", types.MessageType.Warning)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: TroupeServer, params: types.DidCloseTextDocumentParams) -> None:
        doc = ls.documents.pop(params.text_document.uri, None)
        if doc is not None and doc.lint_task is not None:
            doc.lint_task.cancel()
        if doc is not None:
            ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=doc.uri, diagnostics=[]))

