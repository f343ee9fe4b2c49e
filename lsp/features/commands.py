"""``workspace/executeCommand``: each command takes one JSON object (see lsp/README.md).

Commands that start a job answer at once with ``{"jobId": ...}``; the job is then followed
(progress, questions, proposed change, outcome) by :class:`lsp.jobs.JobFollower`.
"""

from __future__ import annotations

from typing import Any

from lsprotocol import types

from daemon.api.protocol import JobKind, SubmitJob
from daemon.client import DaemonError
from lsp.arguments import AnswerArgs, AskArgs, ChangeArgs, FileArgs, FindingArgs, JobArgs, ViewerArgs
from lsp.rpc import command_argument, daemon_failed, invalid_params, request_failed
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


def register(server: TroupeServer) -> None:
    @server.command("troupe.ask")
    async def ask(ls: TroupeServer, *args: Any) -> dict[str, Any]:
        a = command_argument(AskArgs, args, "troupe.ask")
        root, rel = _file(ls, a.file, "troupe.ask")
        prompt = a.prompt
        if a.selection is not None and a.file:
            line = a.selection.start.line + 1
            code = _selection_text(ls, a.file, a.selection)
            prompt += f"\n\nAbout {rel} from line {line}:\n```\n{code}\n```" if code else f"\n\n(at {rel}:{line})"
        kind: JobKind = "change" if a.mode == "change" else "ask"  # AskArgs.check() allows only these two
        job = await ls.submit(SubmitJob(kind=kind, workspace=root, prompt=prompt, files=[rel] if rel else []),
                              f"Troupe: {'ask the team' if a.mode == 'ask' else 'change'}")
        return {"jobId": job.id}

    @server.command("troupe.review")
    async def review(ls: TroupeServer, *args: Any) -> dict[str, Any]:
        a = command_argument(FileArgs, args, "troupe.review")
        if a.file is None:
            raise invalid_params("troupe.review: say which file to review (file)")
        root, rel = _file(ls, a.file, "troupe.review")
        job = await ls.submit(SubmitJob(kind="review", workspace=root, files=[rel or ""]), f"Troupe: review {rel}")
        return {"jobId": job.id}

    @server.command("troupe.test")
    async def test(ls: TroupeServer, *args: Any) -> dict[str, Any]:
        a = command_argument(FileArgs, args or ({},), "troupe.test")
        root, rel = _file(ls, a.file, "troupe.test")
        job = await ls.submit(SubmitJob(kind="test", workspace=root, files=[rel] if rel else []), "Troupe: tests")
        return {"jobId": job.id}

    @server.command("troupe.openViewer")
    async def open_viewer(ls: TroupeServer, *args: Any) -> dict[str, Any]:
        a = command_argument(ViewerArgs, args or ({},), "troupe.openViewer")
        url = (await _daemon(ls, lambda c: c.viewer_link(a.job_id))).url
        window = ls.client_capabilities.window
        if not a.open or not (window and window.show_document and window.show_document.support):
            return {"url": url, "opened": False}  # the client opens it (or shows it)
        shown = await ls.window_show_document_async(types.ShowDocumentParams(uri=url, external=True))
        return {"url": url, "opened": bool(shown and shown.success)}

    @server.command("troupe.cancel")
    async def cancel(ls: TroupeServer, *args: Any) -> dict[str, Any]:
        a = command_argument(JobArgs, args, "troupe.cancel")
        job = await _daemon(ls, lambda c: c.cancel(a.job_id))
        return {"jobId": job.id, "state": job.state}

    @server.command("troupe.answer")
    async def answer(ls: TroupeServer, *args: Any) -> dict[str, Any]:
        a = command_argument(AnswerArgs, args, "troupe.answer")
        job = await _daemon(ls, lambda c: c.answer(a.job_id, a.text, a.question_id))
        return {"jobId": job.id, "state": job.state}

    @server.command("troupe.applyChange")
    async def apply_change(ls: TroupeServer, *args: Any) -> dict[str, Any]:
        a = command_argument(ChangeArgs, args, "troupe.applyChange")
        return {"changeId": a.change_id, "applied": await ls.apply_change(a.change_id)}

    @server.command("troupe.discardChange")
    async def discard_change(ls: TroupeServer, *args: Any) -> dict[str, Any]:
        a = command_argument(ChangeArgs, args, "troupe.discardChange")
        change = await _daemon(ls, lambda c: c.discard_change(a.change_id))
        return {"changeId": change.id, "state": change.state}

    @server.command("troupe.dismiss")
    async def dismiss(ls: TroupeServer, *args: Any) -> dict[str, Any]:
        a = command_argument(FindingArgs, args, "troupe.dismiss")
        finding = await _daemon(ls, lambda c: c.set_finding_state(a.finding_id, "dismissed",
                                                                  a.reason or "dismissed in the editor"))
        ls.forget_finding(finding.id)
        return {"findingId": finding.id, "state": finding.state}

    @server.command("troupe.fixApplied")
    async def fix_applied(ls: TroupeServer, *args: Any) -> dict[str, Any]:
        a = command_argument(FindingArgs, args, "troupe.fixApplied")
        finding = await _daemon(ls, lambda c: c.set_finding_state(a.finding_id, "applied"))
        ls.forget_finding(finding.id)
        return {"findingId": finding.id, "state": finding.state}

    @server.command("troupe.explain")
    async def explain(ls: TroupeServer, *args: Any) -> dict[str, Any]:
        a = command_argument(FindingArgs, args, "troupe.explain")
        found = next(((doc, p) for doc in ls.documents.values() for p in doc.placed.values()
                      if p.finding.id == a.finding_id), None)
        if found is None:
            raise invalid_params(f"troupe.explain: finding {a.finding_id} is not shown in an open document")
        doc, placed = found
        prompt = (f"Explain this review finding on {doc.relative}:{placed.start + 1} and how to fix it: "
                  f"{placed.finding.message}")
        job = await ls.submit(SubmitJob(kind="ask", workspace=doc.root, prompt=prompt,
                                        files=[doc.relative] if doc.relative else []), "Troupe: explain")
        return {"jobId": job.id}
