"""The Troupe language server: its state, and the few operations the feature handlers share.

The handlers live in ``lsp/features/`` (one small module per LSP area); this module holds what
they have in common: the open documents and their findings, the registered workspace folders,
the link to the daemon, the jobs this editor follows, and the session's token/cost totals.
It never imports the agent engine or litellm: everything that thinks runs in the daemon.
"""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.exceptions import FeatureRequestError, JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from daemon import __version__
from daemon.api.protocol import (
    ACTIVE_STATES,
    FINAL_STATES,
    FindingInfo,
    JobInfo,
    ProtocolError,
    StreamEvent,
    SubmitJob,
    WorkspaceSettings,
)
from daemon.client import DaemonClient, DaemonError
from daemon.lint import is_lint_rule
from daemon.payloads import FindingData, JobStateData, UsageData
from lsp.clone import origin_of
from lsp.diagnostics import to_diagnostic
from lsp.documents import OpenDocument, containing_root
from lsp.edits import ChangeNotApplicable, workspace_edit
from lsp.jobs import JobFollower
from lsp.link import DaemonLink
from lsp.lint import Linted
from lsp.lint import placed as placed_lint
from lsp.lint import to_diagnostic as lint_diagnostic
from lsp.messages import METHOD_OF, JobEventParams, ServerStatus
from lsp.protocol import AnsweredBadMessage, TroupeProtocol
from lsp.records import Record, wire
from lsp.rpc import daemon_failed, request_failed
from lsp.settings import shown
from lsp.tracking import Placed

log = logging.getLogger("troupe.lsp")


def real_path(uri: str) -> str | None:
    path = to_fs_path(uri) if uri.startswith("file:") else None
    return os.path.realpath(path) if path else None


class TroupeServer(LanguageServer):
    def __init__(self, client: DaemonClient | None = None) -> None:
        super().__init__("troupe-lsp", __version__, protocol_cls=TroupeProtocol,
                         text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.documents: dict[str, OpenDocument] = {}
        self.folders: dict[str, str | None] = {}  # folder (real path) -> registered root (None: not yet)
        self.watching: dict[str, bool] = {}  # registered root -> the daemon's watcher reviews its saves
        self.local_roots: dict[str, str] = {}  # a team workspace's root -> the folder here that is a clone of it
        self.settings: dict[str, Any] = {}  # questions, changes, minimumSeverity (lsp.settings)
        self.overrides: WorkspaceSettings | None = None  # the editor's model/reviewOnSave/testOnSave, if it sent them
        self.usage = {"prompt_tokens": 0, "completion_tokens": 0, "cost": 0.0}
        self.active_jobs: set[str] = set()
        self.own_jobs: set[str] = set()
        self._told_down = False
        self.link = DaemonLink(client or DaemonClient(retries=3), on_connect=self.on_connect,
                               on_event=self.on_event, on_state=self.on_link_state)
        self.jobs = JobFollower(self)

    # ---------------------------------------------------------------- talking to the editor

    def notify(self, params: Record) -> None:
        """Send a ``troupe/…`` notification: the method is the one lsp.messages declares for the record."""
        self.protocol.notify(METHOD_OF[type(params)], wire(params))

    def say(self, kind: types.MessageType, message: str) -> None:
        self.window_show_message(types.ShowMessageParams(type=kind, message=message))

    def log_line(self, message: str, kind: types.MessageType = types.MessageType.Info) -> None:
        log.info("%s", message)
        self.window_log_message(types.LogMessageParams(type=kind, message=f"Troupe: {message}"))

    def report_server_error(self, error: Exception, source: Any) -> None:
        if isinstance(error, AnsweredBadMessage | JsonRpcException) or source is FeatureRequestError:
            return  # already the answer to the request (or answered with InvalidParams)
        self.log_line(f"internal error: {error}", types.MessageType.Error)

    def status(self) -> ServerStatus:
        prompt, completion = int(self.usage["prompt_tokens"]), int(self.usage["completion_tokens"])
        return ServerStatus(daemon=self.link.state, reason=self.link.reason, active_jobs=len(self.active_jobs),
                            workspaces=sorted(r for r in self.folders.values() if r), prompt_tokens=prompt,
                            completion_tokens=completion, tokens=prompt + completion,
                            cost=round(self.usage["cost"], 6))

    def visible(self, doc: OpenDocument) -> list[Placed]:
        """The document's findings at or above the editor's ``minimumSeverity``, in order; once the
        static lane has answered, it shows lint (the store's lint findings read older text)."""
        minimum = self.settings.get("minimumSeverity", "info")
        return sorted((p for p in doc.placed.values() if shown(p.finding.severity, minimum)
                       and not (doc.linted and is_lint_rule(p.finding.rule))),
                      key=lambda p: (p.start, p.finding.id))

    def visible_lint(self, doc: OpenDocument) -> list[Linted]:
        minimum = self.settings.get("minimumSeverity", "info")
        return [item for item in doc.lint if shown(item.lint.severity, minimum)]

    def publish(self, doc: OpenDocument) -> None:
        text_doc = self.workspace.get_text_document(doc.uri)
        diagnostics = [] if doc.skipped else [to_diagnostic(text_doc, item) for item in self.visible(doc)] + [
            lint_diagnostic(text_doc, item) for item in self.visible_lint(doc)]
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=doc.uri, version=text_doc.version, diagnostics=diagnostics))

    def current_lines(self, doc: OpenDocument) -> list[str]:
        return list(self.workspace.get_text_document(doc.uri).lines)

    async def lint(self, doc: OpenDocument, pause: float = 0.0) -> None:
        """The static lane: the daemon lints the buffer text as it is now (after ``pause``)."""
        if pause:
            await asyncio.sleep(pause)
        path = doc.path
        if doc.skipped or path is None or not self.link.connected:
            return
        text_doc = self.workspace.get_text_document(doc.uri)
        version, text = text_doc.version, text_doc.source
        try:
            result = await self.link.call(lambda c: c.lint(path, text))
        except DaemonError as exc:
            log.info("lint of %s unavailable: %s", doc.uri, exc)
            return
        if self.documents.get(doc.uri) is not doc or self.workspace.get_text_document(doc.uri).version != version:
            return  # typed past it: the lint of the newer text is on its way
        if result.error:
            self.log_line(f"lint of {doc.path}: {result.error}", types.MessageType.Warning)
            return
        doc.lint, doc.linted = placed_lint(result.diagnostics, version), True
        self.publish(doc)

    def lint_soon(self, doc: OpenDocument, pause: float = 0.0) -> None:
        """(Re)start the document's lint; a newer request replaces a pending one."""
        if doc.lint_task is not None and not doc.lint_task.done():
            doc.lint_task.cancel()
        doc.lint_task = asyncio.create_task(self.lint(doc, pause), name=f"troupe-lint-{doc.uri}")

    # ---------------------------------------------------------------- the daemon link

    def on_link_state(self, up: bool, reason: str) -> None:
        if up and self._told_down:
            self.say(types.MessageType.Info, "Troupe: reconnected to the daemon.")
        elif not up:
            self.say(types.MessageType.Warning, f"Troupe: cannot reach the daemon ({reason}). Reviews and commands "
                                                "pause; reconnecting in the background.")
        self._told_down = not up
        self.notify(self.status())

    async def on_connect(self) -> None:
        for folder in list(self.folders):
            await self.register_folder(folder)
        for doc in list(self.documents.values()):
            self.attach(doc)
            self.lint_soon(doc)
            await self.refresh(doc)

    async def register_folder(self, folder: str) -> None:
        self.folders.setdefault(folder, None)
        if not Path(folder).is_dir():
            self.log_line(f"workspace folder {folder} does not exist; not registered")
            return
        clone = await origin_of(folder)
        info = await self.link.call(lambda c: c.register_workspace(folder, settings=self.overrides,
                                                                   remote=clone[1] if clone else None))
        self.folders[folder] = info.root
        if clone and containing_root(folder, [info.root]) is None:  # a team server's workspace: folder is a clone
            self.local_roots[info.root] = clone[0]
        self.watching[info.root] = info.watching
        self.log_line(f"registered {info.root} with the daemon ({'watching' if info.watching else 'not watching'})")

    def local(self, root: str) -> str:
        """Where a registered workspace is on this machine (a team workspace: the editor's clone of it)."""
        return self.local_roots.get(root, root)

    def root_of(self, path: str | None) -> str | None:
        """The registered workspace whose folder here holds ``path``."""
        here = {self.local(root): root for root in self.folders.values() if root}
        found = containing_root(path, here)
        return here[found] if found else None

    def attach(self, doc: OpenDocument) -> None:
        doc.root = self.root_of(doc.path)
        doc.here = self.local(doc.root) if doc.root else None

    async def refresh(self, doc: OpenDocument) -> None:
        """Show the store's open findings for a document (on open and after every reconnect)."""
        if doc.skipped or doc.root is None or doc.relative is None:
            return
        findings = await self.link.call(lambda c: c.findings(doc.root, doc.relative))
        if doc.uri in self.documents:
            doc.replace_all(findings, self.current_lines(doc))
            self.publish(doc)

    async def on_event(self, event: StreamEvent) -> None:
        roots = {r for r in self.folders.values() if r}
        if event.workspace not in roots and event.job_id not in self.own_jobs:
            return
        self.notify(JobEventParams(event=event))
        body = event.payload
        if isinstance(body, FindingData) and event.workspace:
            self.show_finding(body, event.workspace)
        elif isinstance(body, UsageData):  # this editor's session: every job's usage
            self.usage["prompt_tokens"] += body.prompt_tokens
            self.usage["completion_tokens"] += body.completion_tokens
            self.usage["cost"] += body.cost
            self.notify(self.status())
        elif isinstance(body, JobStateData) and event.job_id:
            state = body.state
            if state in ACTIVE_STATES:
                self.active_jobs.add(event.job_id)
            elif state in FINAL_STATES:
                self.active_jobs.discard(event.job_id)
            self.notify(self.status())

    def show_finding(self, data: FindingData, workspace: str) -> None:
        try:
            finding = FindingInfo.from_event(data, workspace)
        except ProtocolError as exc:
            log.warning("ignoring a finding event the protocol does not accept: %s", exc.message)
            return
        path = os.path.join(self.local(workspace), finding.file)
        for doc in self.documents.values():
            if doc.path == path and not doc.skipped:
                doc.show(finding, self.current_lines(doc))
                self.publish(doc)

    def forget_finding(self, finding_id: int) -> None:
        for doc in self.documents.values():
            if doc.forget(finding_id):
                self.publish(doc)

    # ---------------------------------------------------------------- jobs and changes

    async def submit(self, request: SubmitJob, title: str) -> JobInfo:
        try:
            job = await self.link.call(lambda c: c.submit(request))
        except DaemonError as exc:
            raise daemon_failed(exc) from None
        self.own_jobs.add(job.id)
        self.jobs.follow(job, title)
        return job

    def current_text(self, uri: str) -> tuple[str | None, int | None]:
        doc = self.workspace.text_documents.get(uri)
        if doc is not None:
            return doc.source, doc.version
        path = to_fs_path(uri)
        try:
            return (Path(path).read_text(encoding="utf-8") if path else None), None
        except (FileNotFoundError, NotADirectoryError, UnicodeDecodeError):
            return None, None

    async def apply_change(self, change_id: str) -> bool:
        """Offer a proposed change to the editor through ``workspace/applyEdit``."""
        try:
            change = await self.link.call(lambda c: c.change(change_id))
        except DaemonError as exc:
            raise daemon_failed(exc) from None
        if change.state != "proposed":
            raise request_failed(f"Troupe: change {change_id} was already {change.state}")
        if not change.workspace:
            raise request_failed(f"Troupe: change {change_id} has no workspace")
        caps = self.client_capabilities.workspace
        edit_caps = caps.workspace_edit if caps else None
        operations = {str(getattr(op, "value", op)) for op in (edit_caps.resource_operations or [])} \
            if edit_caps else set()
        codec = self.workspace.position_codec
        try:
            edit = workspace_edit(self.local(change.workspace), change.edits, self.current_text,
                                  document_changes=bool(edit_caps and edit_caps.document_changes),
                                  file_operations={"create", "delete"} <= operations,
                                  units=codec.client_num_units)
        except ChangeNotApplicable as exc:
            raise request_failed(f"Troupe: change {change_id}: {exc}") from None
        result = await self.workspace_apply_edit_async(types.ApplyWorkspaceEditParams(
            edit=edit, label=f"Troupe: change {change_id}"))
        if not result.applied:
            raise request_failed(f"Troupe: the editor did not apply change {change_id}: "
                                 f"{result.failure_reason or 'no reason given'}")
        try:  # the daemon records it (the team learns from applied changes) without writing again
            await self.link.call(lambda c: c.apply_change(change_id, write=False))
        except DaemonError as exc:
            log.warning("change %s applied in the editor, but the daemon could not record it: %s", change_id, exc)
        return True
