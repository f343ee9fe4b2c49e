"""Turn a finished dialogue into what its phase produces: code edits, a document, findings, an answer.

Replies that cannot be used are sent back to the model with the precise reason (the edit
parser's and applier's messages are written for it), a bounded number of times; then the
phase fails with a clear error. Every code change becomes a code state (CODE_STATE event).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from daemon.agents.dialogue import Dialogue, DialogueResult
from daemon.agents.findings import (
    Finding,
    FindingsError,
    Rejected,
    drop_lint_repeats,
    parse_findings,
    validate_findings,
)
from daemon.agents.job import PhaseFailed
from daemon.agents.markers import prose_lines
from daemon.agents.model import Phase, Produces
from daemon.agents.workbench import Workbench
from daemon.events import EventKind
from daemon.workspace.edits import EDIT_FORMAT_HELP, EditApplyError, EditParseError, apply_edits, parse_edits
from daemon.workspace.paths import PathOutsideWorkspace, confine
from daemon.workspace.scratch import NotEditable

_CITATION = re.compile(r"([\w./-]+\.[A-Za-z0-9]+):(\d+)")
_PROSE_SUFFIXES = (".md", ".markdown", ".rst", ".adoc")
_FENCED = re.compile(r"^\s*(`{3,}|~{3,})[^\n]*\n(.*?)^\s*\1\s*$", re.DOTALL | re.MULTILINE)


@dataclass
class Product:
    conclusion: str
    changed: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def instruction_of(prompt: str) -> str:
    """The instruction a code state records: the prompt's first paragraph, briefly."""
    head = prompt.strip().split("\n\n", 1)[0]
    return head[:1000]


class Producer:
    def __init__(self, bench: Workbench, say: Any) -> None:
        self.bench, self._say = bench, say

    async def __call__(self, phase: Phase, dialogue: Dialogue, result: DialogueResult) -> Product:
        if phase.produces is Produces.CODE:
            return await self.code(phase, dialogue, result)
        if phase.produces is Produces.DOCUMENT:
            return await self.document(phase, dialogue, result)
        if phase.produces is Produces.FINDINGS:
            return await self.findings(phase, dialogue, result)
        if phase.produces is Produces.ANSWER:
            return Product(result.conclusion, warnings=self.check_citations(result.conclusion))
        return Product(result.conclusion)

    # -- code ---------------------------------------------------------------------------
    async def code(self, phase: Phase, dialogue: Dialogue, result: DialogueResult) -> Product:
        scratch = self.bench.scratch
        if scratch is None:
            raise PhaseFailed(f"phase {phase.name!r} writes code but the job has no workspace copy")
        focus = self.bench.focus_files()
        default = focus[0] if len(focus) == 1 else None
        reply = result.last_reply
        for attempt in range(phase.max_retries + 1):
            try:
                edits = parse_edits(reply, default_path=default)
                if not edits:
                    raise EditParseError("your reply contains no file edit.\n\n" + EDIT_FORMAT_HELP)
                self.confine_to_user_tree([e.path for e in edits])
                changed = apply_edits(scratch, edits)
                break
            except (EditParseError, EditApplyError, PathOutsideWorkspace, NotEditable) as exc:
                if attempt == phase.max_retries:
                    raise PhaseFailed(f"phase {phase.name!r}: the {phase.assistant}'s edits could not be used after "
                                      f"{attempt + 1} tries; last problem: {exc}") from None
                reply = await dialogue.correct(f"Your edits were not applied. {exc}")
        await self.record_state(phase, dialogue.prompt, changed)
        summary = f"changed {', '.join(changed)}" if changed else "no file changed"
        return Product(summary, changed=changed)

    def confine_to_user_tree(self, paths: list[str]) -> None:
        """Refuse paths that would leave the user's tree when applied there (a symlink in the repo
        that leads outside is not copied into the scratch, so the scratch alone cannot tell)."""
        workspace = self.bench.spec.workspace
        if workspace is not None and self.bench.chain.start == "repository":
            for path in paths:
                confine(workspace, path)

    async def record_state(self, phase: Phase, prompt: str, changed: list[str]) -> None:
        scratch = self.bench.scratch
        assert scratch is not None
        if not changed:
            return
        state = scratch.snapshot(f"{phase.name}: {instruction_of(prompt)}")
        await self._say(EventKind.CODE_STATE, {"index": state.index, "hash": state.hash, "files": state.files,
                                               "instruction": state.instruction}, phase.assistant)

    # -- documents ----------------------------------------------------------------------
    async def document(self, phase: Phase, dialogue: Dialogue, result: DialogueResult) -> Product:
        scratch = self.bench.scratch
        assert phase.file is not None
        if scratch is None:
            raise PhaseFailed(f"phase {phase.name!r} writes {phase.file} but the job has no workspace copy")
        reply = result.last_reply
        try:
            edits = [e for e in parse_edits(reply, default_path=phase.file) if e.path == phase.file]
        except EditParseError:
            edits = []
        changed: list[str] = []
        if edits:
            try:
                changed = apply_edits(scratch, edits)
            except (EditApplyError, PathOutsideWorkspace, NotEditable):
                edits = []  # fall back to the reply's text below
        if not edits:
            text = _document_text(reply, phase.marker, phase.file)
            if text.strip():
                scratch.write(phase.file, text.rstrip() + "\n")
                changed = [phase.file]
        await self.record_state(phase, dialogue.prompt, changed)
        return Product(f"wrote {phase.file}" if changed else f"{phase.file}: nothing to write", changed=changed)

    # -- findings -----------------------------------------------------------------------
    async def findings(self, phase: Phase, dialogue: Dialogue, result: DialogueResult) -> Product:
        reply = result.last_reply
        files = self.bench.review_files()
        for attempt in range(phase.max_retries + 1):
            try:
                raw = parse_findings(reply)
                break
            except FindingsError as exc:
                if attempt == phase.max_retries:
                    raise PhaseFailed(f"phase {phase.name!r}: the {phase.assistant} did not return usable findings "
                                      f"after {attempt + 1} tries; last problem: {exc}") from None
                reply = await dialogue.correct(str(exc))
        kept, rejected = validate_findings(raw, self.bench.read, set(files) if files else None)
        kept, repeats = drop_lint_repeats(kept, self.bench.lint)
        rejected += repeats
        for item in rejected:
            await self._say(EventKind.LOG, {"level": "warning", "text": f"finding dropped: {item.reason}",
                                            "finding": item.raw}, phase.assistant)
        return Product(f"{len(kept)} finding(s)", findings=kept, rejected=rejected)

    # -- answers ------------------------------------------------------------------------
    def check_citations(self, answer: str) -> list[str]:
        """Warnings for ``path:line`` citations that do not exist."""
        warnings = []
        for path, line in dict.fromkeys(_CITATION.findall(answer)):
            text = self.bench.read(path)
            if text is None:
                warnings.append(f"the answer cites {path}:{line}, but there is no such file")
            elif not 1 <= int(line) <= len(text.splitlines()):
                warnings.append(f"the answer cites {path}:{line}, but {path} has {len(text.splitlines())} lines")
        return warnings


def _document_text(reply: str, marker: str, path: str) -> str:
    """A document from a reply: the first fenced block's body; for prose files (README.md), else the
    reply without its marker line. A requirements file is never filled with a sentence."""
    match = _FENCED.search(reply)
    if match:
        return match.group(2)
    if not path.lower().endswith(_PROSE_SUFFIXES):
        return ""
    lines = reply.splitlines()
    keep = {i for i, _ in prose_lines(reply)}
    return "\n".join(line for i, line in enumerate(lines) if i in keep and not line.strip().startswith(marker))
