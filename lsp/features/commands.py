"""``workspace/executeCommand``: each command takes one JSON object, its record in
:data:`lsp.messages.COMMANDS` (see lsp/README.md), and answers its declared record.

Commands that start a job answer at once with ``JobStarted`` (``{"jobId": ...}``); the job is then followed
(progress, questions, proposed change, outcome) by :class:`lsp.jobs.JobFollower`.
"""

from __future__ import annotations

from typing import Any

from lsprotocol import types

from daemon.api.protocol import JobKind, SubmitJob
from daemon.client import DaemonError
from lsp.messages import (
    AnswerArgs,
    AskArgs,
    ChangeApplied,
    ChangeArgs,
    ChangeDiscarded,
    DismissArgs,
    FindingArgs,
    FindingStateChanged,
    JobArgs,
    JobStarted,
    JobStateChanged,
    Range,
    ReviewArgs,
    RunTestsArgs,
    ViewerAnswer,
    ViewerArgs,
)
from lsp.rpc import command, daemon_failed, invalid_params, request_failed
from lsp.server import TroupeServer, real_path


def _file(ls: TroupeServer, file: str | None, command: str) -> tuple[str, str | None]:
    """(workspace root, workspace-relative path) for a document URI or absolute path."""
    roots = [r for r in ls.folders.values() if r]
    path = real_path(file) if file and file.startswith("file:") else file
    if file is not None and (path is None or not path.startswith("/")):
        raise invalid_params(f"{command}: file must be a file:// URI or an absolute path, got {file!r}")
    root = ls.root_of(path) if path else (roots[0] if len(roots) == 1 else None)
    if root is None and file:
        raise request_failed(f"Troupe: {file} is not inside a workspace folder registered with the daemon")
    if root is None:
        raise request_failed(f"Troupe: {command} needs a file to say which workspace; "
                             f"{len(roots)} folders are registered with the daemon")
    return root, (None if path is None else path[len(ls.local(root)):].lstrip("/"))


async def _daemon(ls: TroupeServer, call: Any) -> Any:
    try:
        return await ls.link.call(call)
    except DaemonError as exc:
        raise daemon_failed(exc) from None


def _selection_text(ls: TroupeServer, uri: str, selection: types.Range) -> str:
    doc = ls.workspace.text_documents.get(uri)
    return doc.text_in_client_range(selection) if doc is not None else ""


def _lsp_range(selection: Range) -> types.Range:
    return types.Range(start=types.Position(line=selection.start.line, character=selection.start.character),
                       end=types.Position(line=selection.end.line, character=selection.end.character))


def register(server: TroupeServer) -> None:
    @command(server, "troupe.ask")
    async def ask(ls: TroupeServer, a: AskArgs) -> JobStarted:
        root, rel = _file(ls, a.file, "troupe.ask")
        prompt = a.prompt
        if a.selection is not None and a.file:
            line = a.selection.start.line + 1
            code = _selection_text(ls, a.file, _lsp_range(a.selection))
            prompt += f"\n\nAbout {rel} from line {line}:\n```\n{code}\n```" if code else f"\n\n(at {rel}:{line})"
        kind: JobKind = "change" if a.mode == "change" else "ask"
        job = await ls.submit(SubmitJob(kind=kind, workspace=root, prompt=prompt, files=[rel] if rel else []),
                              f"Troupe: {'ask the team' if a.mode == 'ask' else 'change'}")
        return JobStarted(job_id=job.id)

    @command(server, "troupe.review")
    async def review(ls: TroupeServer, a: ReviewArgs) -> JobStarted:
        root, rel = _file(ls, a.file, "troupe.review")
        job = await ls.submit(SubmitJob(kind="review", workspace=root, files=[rel or ""]), f"Troupe: review {rel}")
        return JobStarted(job_id=job.id)

    @command(server, "troupe.test")
    async def test(ls: TroupeServer, a: RunTestsArgs) -> JobStarted:
        root, rel = _file(ls, a.file, "troupe.test")
        job = await ls.submit(SubmitJob(kind="test", workspace=root, files=[rel] if rel else []), "Troupe: tests")
        return JobStarted(job_id=job.id)

    @command(server, "troupe.openViewer")
    async def open_viewer(ls: TroupeServer, a: ViewerArgs) -> ViewerAnswer:
        url = (await _daemon(ls, lambda c: c.viewer_link(a.job_id))).url
        window = ls.client_capabilities.window
        if not a.open or not (window and window.show_document and window.show_document.support):
            return ViewerAnswer(url=url, opened=False)  # the client opens it (or shows it)
        shown = await ls.window_show_document_async(types.ShowDocumentParams(uri=url, external=True))
        return ViewerAnswer(url=url, opened=bool(shown and shown.success))

    @command(server, "troupe.cancel")
    async def cancel(ls: TroupeServer, a: JobArgs) -> JobStateChanged:
        job = await _daemon(ls, lambda c: c.cancel(a.job_id))
        return JobStateChanged(job_id=job.id, state=job.state)

    @command(server, "troupe.answer")
    async def answer(ls: TroupeServer, a: AnswerArgs) -> JobStateChanged:
        job = await _daemon(ls, lambda c: c.answer(a.job_id, a.text, a.question_id))
        return JobStateChanged(job_id=job.id, state=job.state)

    @command(server, "troupe.applyChange")
    async def apply_change(ls: TroupeServer, a: ChangeArgs) -> ChangeApplied:
        return ChangeApplied(change_id=a.change_id, applied=await ls.apply_change(a.change_id))

    @command(server, "troupe.discardChange")
    async def discard_change(ls: TroupeServer, a: ChangeArgs) -> ChangeDiscarded:
        change = await _daemon(ls, lambda c: c.discard_change(a.change_id))
        return ChangeDiscarded(change_id=change.id, state=change.state)

    @command(server, "troupe.dismiss")
    async def dismiss(ls: TroupeServer, a: DismissArgs) -> FindingStateChanged:
        finding = await _daemon(ls, lambda c: c.set_finding_state(a.finding_id, "dismissed",
                                                                  a.reason or "dismissed in the editor"))
        ls.forget_finding(finding.id)
        return FindingStateChanged(finding_id=finding.id, state=finding.state)

    @command(server, "troupe.fixApplied")
    async def fix_applied(ls: TroupeServer, a: FindingArgs) -> FindingStateChanged:
        finding = await _daemon(ls, lambda c: c.set_finding_state(a.finding_id, "applied"))
        ls.forget_finding(finding.id)
        return FindingStateChanged(finding_id=finding.id, state=finding.state)

    @command(server, "troupe.explain")
    async def explain(ls: TroupeServer, a: FindingArgs) -> JobStarted:
        found = next(((doc, p) for doc in ls.documents.values() for p in doc.placed.values()
                      if p.finding.id == a.finding_id), None)
        if found is None:
            raise invalid_params(f"troupe.explain: finding {a.finding_id} is not shown in an open document")
        doc, placed = found
        prompt = (f"Explain this review finding on {doc.relative}:{placed.start + 1} and how to fix it: "
                  f"{placed.finding.message}")
        job = await ls.submit(SubmitJob(kind="ask", workspace=doc.root, prompt=prompt,
                                        files=[doc.relative] if doc.relative else []), "Troupe: explain")
        return JobStarted(job_id=job.id)
