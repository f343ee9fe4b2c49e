"""Turn a finished dialogue into what its phase produces: code edits, a document, findings, an answer.

Every kind has a reply-shape check (``shapes`` for documents and answers, the edit and findings
parsers for the rest). Replies that cannot be used are sent back to the model with the precise
reason, a bounded number of times (``max_retries``); then code and findings phases fail with a
clear error, and a document or answer is kept with a warning the job carries. A reply cut at the
token cap is never taken as complete: its code is not applied, a cut document or answer is asked
again, and of cut findings only the complete ones count. Every code change becomes a code state
(CODE_STATE event).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from daemon.agents.dialogue import Dialogue, DialogueResult
from daemon.agents.findings import (
    Finding,
    FindingsError,
    Rejected,
    about_the_save,
    as_suggestions,
    broken_by_save,
    drop_lint_repeats,
    parse_findings,
    validate_findings,
)
from daemon.agents.job import PhaseFailed
from daemon.agents.markers import find_conclusion, prose_lines
from daemon.agents.model import Phase, Produces
from daemon.agents.patch import patch_lines
from daemon.agents.repair import repair_findings
from daemon.agents.reproduce import reproduce_findings
from daemon.agents.shapes import (
    answer_problem,
    citation_problems,
    copied_placeholder,
    cut_at_cap,
    document_problem,
    python_problem,
    says_nothing_needed,
    without_stdlib,
)
from daemon.agents.workbench import Workbench
from daemon.events import Say
from daemon.llm.gateway import TIME_LIMIT
from daemon.payloads import CodeStateData, LogData
from daemon.workspace.doctests import example_failures
from daemon.workspace.edits import (
    EDIT_FORMAT_HELP,
    NEW_PROGRAM_PATH,
    EditApplyError,
    EditParseError,
    ParsedEdit,
    apply_edits,
    parse_edits,
)
from daemon.workspace.paths import PathOutsideWorkspace, confine
from daemon.workspace.repomap import is_test_file
from daemon.workspace.reports import TestReport
from daemon.workspace.scratch import NotEditable

_PROSE_SUFFIXES = (".md", ".markdown", ".rst", ".adoc")
_FENCED = re.compile(r"^\s*(`{3,}|~{3,})[^\n]*\n(.*?)^\s*\1\s*$", re.DOTALL | re.MULTILINE)


@dataclass
class Product:
    conclusion: str
    changed: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    concluded: bool | None = None  # a corrected reply's own marker (None: as the dialogue ended)


def instruction_of(prompt: str) -> str:
    """The instruction a code state records: the prompt's first paragraph, briefly."""
    head = prompt.strip().split("\n\n", 1)[0]
    return head[:1000]


class Producer:
    def __init__(self, bench: Workbench, say: Say) -> None:
        self.bench, self._say = bench, say

    async def __call__(self, phase: Phase, dialogue: Dialogue, result: DialogueResult) -> Product:
        if phase.produces is Produces.CODE:
            return await self.code(phase, dialogue, result)
        if phase.produces is Produces.DOCUMENT:
            return await self.document(phase, dialogue, result)
        if phase.produces is Produces.FINDINGS:
            return await self.findings(phase, dialogue, result)
        if phase.produces is Produces.REPAIR:  # tried on a copy; never the job's change (daemon.agents.repair)
            found, text = await repair_findings(self.bench, phase, result.last_reply)
            await self._say(LogData(level="info", text=f"phase {phase.name!r}: {text}"), phase.assistant)
            return Product(text, findings=found)
        if phase.produces is Produces.REPRODUCE:  # run on copies; upgrades the job's own findings in place
            upgraded, text = await reproduce_findings(self.bench, phase, result.last_reply, self.bench.suggestions)
            await self._say(LogData(level="info", text=f"phase {phase.name!r}: {text}"), phase.assistant)
            return Product(text, findings=[f for f in upgraded if f in self.bench.withheld])  # the others are shown
        if phase.produces is Produces.PATCH:  # each try run on the job's copy; kept when the tests pass
            changed, text = await patch_lines(self.bench, phase, dialogue, result.last_reply)
            await self.record_state(phase, dialogue.prompt, changed)
            await self._say(LogData(level="info", text=f"phase {phase.name!r}: {text}"), phase.assistant)
            return Product(text, changed=changed)
        return await self.conclusion(phase, dialogue, result)

    # -- code ---------------------------------------------------------------------------
    async def code(self, phase: Phase, dialogue: Dialogue, result: DialogueResult) -> Product:
        scratch = self.bench.scratch
        if scratch is None:
            raise PhaseFailed(f"phase {phase.name!r} writes code but the job has no workspace copy")
        focus = self.bench.code_focus()
        default = focus[0] if len(focus) == 1 else (NEW_PROGRAM_PATH if not self.bench.all_files() else None)
        reply, warnings = result.last_reply, []
        # what is wrong, when the examples show it and the prompt did not already: else a resend says nothing
        # new, and costs the whole reply (greedy on HumanEvalFix, 30 of 30 such resends came back unchanged)
        failing = example_failures(self.bench.examples)
        shown = bool(failing) and _all_shown(self.bench.examples, dialogue.prompt)
        resend = phase.resend_unchanged and bool(failing) and not shown
        for attempt in range(phase.max_retries + 1):
            try:
                if getattr(reply, "cut_at_cap", False):
                    raise EditParseError(cut_at_cap(phase.token_cap, "Send only the lines that change, as "
                                                    "SEARCH/REPLACE blocks, not whole files."))
                edits = parse_edits(reply, default_path=default)
                if not edits:
                    raise EditParseError("your reply contains no file edit.\n\n" + EDIT_FORMAT_HELP)
                last_try = attempt == phase.max_retries and self.bench.chain.start == "empty"
                copied = [(e, c) for e in edits if (c := copied_placeholder(e.content + "\n" + e.replace))]
                if copied and last_try and len(copied) < len(edits):  # a new program: keep the files it wrote
                    edits = [e for e in edits if all(e is not bad for bad, _ in copied)]
                    warnings.append(f"phase {phase.name!r}: left out {', '.join(e.path for e, _ in copied)}, "
                                    f"which held only the format's {copied[0][1]}; running the rest shows what is "
                                    "missing to the next phase")
                    await self._say(LogData(level="warning", text=warnings[-1]), phase.assistant)
                elif copied:
                    raise EditParseError(f"your edit of {copied[0][0].path} holds the words {copied[0][1]} from the "
                                         f"format instead of real code. Write the real lines of {copied[0][0].path}.")
                edits = self.bench.unexcerpted(edits)  # the parts of a file shown in part, put back in it
                broken = next((p for e in edits if e.kind == "whole"
                               and (p := python_problem(e.path, e.content, self.bench.read(e.path)))), None)
                if broken and not last_try:
                    raise EditParseError(broken)
                if broken:  # a new program's last try: better to run it and send the error back than to fail
                    warnings.append(f"phase {phase.name!r}: kept the {phase.assistant}'s files after "
                                    f"{attempt + 1} tries though {broken.split('. ')[0].removeprefix('your ')}; "
                                    "running it shows the error to the next phase")
                    await self._say(LogData(level="warning", text=warnings[-1]), phase.assistant)
                self.confine_to_user_tree([e.path for e in edits])
                if not phase.new_files:
                    self.refuse_new_files([e.path for e in edits if e.kind != "delete"])
                if not phase.edit_tests and (tests := [e.path for e in edits if is_test_file(e.path)]):
                    raise EditApplyError(f"{', '.join(dict.fromkeys(tests))} is a test file, and this step fixes the "
                                         "code so that the tests pass, not the tests. Change the code.")
                changed = apply_edits(scratch, edits)
                if changed or attempt == phase.max_retries or not resend:
                    break
                same = ", ".join(dict.fromkeys(e.path for e in edits))
                reply = await dialogue.correct(f"Your reply leaves {same} exactly as it was: nothing changed. "
                                               "Change the lines that are wrong, and send the file again."
                                               f"\n\n{failing}")
                continue
            except (EditParseError, EditApplyError, PathOutsideWorkspace, NotEditable) as exc:
                if attempt == phase.max_retries:
                    raise PhaseFailed(f"phase {phase.name!r}: the {phase.assistant}'s edits could not be used after "
                                      f"{attempt + 1} tries; last problem: {exc}") from None
                reply = await dialogue.correct(f"Your edits were not applied. {exc}")
        await self.record_state(phase, dialogue.prompt, changed)
        if not changed and not resend:
            why = ("" if not phase.resend_unchanged else " (its prompt already showed the failing docstring examples, "
                   "so sending it back would say nothing new)" if shown
                   else " (no failing docstring example to send back with it)")
            await self._say(LogData(level="info", text=f"phase {phase.name!r}: the {phase.assistant} "
                                    f"kept the code as it was{why}"), phase.assistant)
        elif not changed:
            warnings.append(f"phase {phase.name!r}: the {phase.assistant}'s edits changed no file after "
                            f"{phase.max_retries + 1} tries")
            await self._say(LogData(level="warning", text=warnings[-1]), phase.assistant)
        summary = f"changed {', '.join(changed)}" if changed else "no file changed"
        return Product(summary, changed=changed, warnings=warnings)

    def refuse_new_files(self, paths: list[str]) -> None:
        """A phase that may only fix what exists (``new_files = false``) gets no invented files."""
        scratch = self.bench.scratch
        assert scratch is not None
        new = [p for p in dict.fromkeys(paths) if not scratch.exists(p)]
        if new:
            known = ", ".join(self.bench.focus_files()[:8]) or ", ".join(scratch.list_files()[:8])
            raise EditApplyError(f"{', '.join(new)} does not exist, and this step may only change existing files "
                                 f"({known}). Fix the problem in those files.")

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
        await self._say(CodeStateData(index=state.index, hash=state.hash, files=state.files,
                                      instruction=state.instruction), phase.assistant)

    # -- documents ----------------------------------------------------------------------
    async def document(self, phase: Phase, dialogue: Dialogue, result: DialogueResult) -> Product:
        scratch = self.bench.scratch
        assert phase.file is not None
        if scratch is None:
            raise PhaseFailed(f"phase {phase.name!r} writes {phase.file} but the job has no workspace copy")
        reply, text, warnings = result.last_reply, "", []
        for attempt in range(phase.max_retries + 1):
            text, empty_block = _document_text(reply, phase.marker, phase.file)
            nothing = empty_block or (not text.strip() and _is_requirements(phase.file) and says_nothing_needed(reply))
            problem = None if nothing else document_problem(text, phase.file)
            if getattr(reply, "cut_at_cap", False):
                problem = cut_at_cap(phase.token_cap, f"Write a shorter {phase.file}, whole, in one code block.")
            if problem is None:
                break
            if attempt == phase.max_retries:
                warnings.append(f"{phase.file}: the {phase.assistant}'s reply was still not the document after "
                                f"{attempt + 1} tries ({problem.split('. ')[0]}); it was not written")
                text = ""
                break
            reply = await dialogue.correct(problem)
        if _is_requirements(phase.file):
            text = without_stdlib(text)
        changed: list[str] = []
        if text.strip():
            try:
                changed = apply_edits(scratch, [ParsedEdit(phase.file, "whole", content=text.rstrip() + "\n")])
            except (EditApplyError, PathOutsideWorkspace, NotEditable) as exc:
                warnings.append(f"{phase.file} could not be written: {exc}")
        await self.record_state(phase, dialogue.prompt, changed)
        for warning in warnings:
            await self._say(LogData(level="warning", text=warning), phase.assistant)
        return Product(f"wrote {phase.file}" if changed else f"{phase.file}: nothing to write", changed=changed,
                       warnings=warnings)

    # -- findings -----------------------------------------------------------------------
    async def findings(self, phase: Phase, dialogue: Dialogue, result: DialogueResult) -> Product:
        reply = result.last_reply
        files = self.bench.review_files()
        warnings: list[str] = []
        for attempt in range(phase.max_retries + 1):
            try:
                raw = parse_findings(reply)
                if getattr(reply, "cut_at_cap", False) and raw:  # the last one was being written when it stopped
                    cap = ("the job's time limit" if getattr(reply, "finish_reason", None) == TIME_LIMIT
                           else f"its cap of {phase.token_cap} tokens")
                    warnings.append(f"the {phase.assistant}'s reply stopped at {cap}; "
                                    "its last, unfinished finding was left out")
                    raw = raw[:-1]
                break
            except FindingsError as exc:
                if attempt == phase.max_retries:
                    raise PhaseFailed(f"phase {phase.name!r}: the {phase.assistant} did not return usable findings "
                                      f"after {attempt + 1} tries; last problem: {exc}") from None
                message = str(exc)
                if getattr(reply, "cut_at_cap", False):
                    message = cut_at_cap(phase.token_cap, "Report only the most important problems. " + message)
                reply = await dialogue.correct(message)
        trusted = self.bench.saved_lines() if self.bench.regression() else None  # the run says where the bug is
        kept, rejected = validate_findings(raw, self.bench.read, set(files) if files else None, trusted)
        kept, repeats = drop_lint_repeats(kept, self.bench.lint)
        major: list[Finding] = []
        if phase.severities == "evidence":
            if changed := self.bench.saved_lines():  # a save's (a diff's) review: about its lines, tests as evidence
                broken = broken_by_save(self.bench.broken)
                major, kept, off = about_the_save(kept, changed, broken)
                repeats += off
            kept, unheard = as_suggestions(kept)  # an opinion, not evidence: a suggestion, and few of them
            repeats += unheard
        rejected += repeats
        self.bench.suggestions = [*self.bench.suggestions, *kept]
        if phase.severities == "evidence" and (why := self.bench.tests_vouch()):
            self.bench.withheld += kept  # shown only if a reproducing test backs one (daemon.agents.reproduce)
            for finding in kept:
                await self._say(LogData(level="info", text=f"suggestion withheld: {why}", finding=finding.to_dict()),
                                phase.assistant)
            kept = []
        for item in rejected:
            await self._say(LogData(level="warning", text=f"finding dropped: {item.reason}", finding=item.raw),
                            phase.assistant)
        kept = major + kept
        return Product(f"{len(kept)} finding(s)", findings=kept, rejected=rejected, warnings=warnings)

    # -- decisions, answers, test reports -------------------------------------------------
    async def conclusion(self, phase: Phase, dialogue: Dialogue, result: DialogueResult) -> Product:
        """A decision, answer or test report: complete (not cut at the cap); an answer more than citations,
        citing lines that exist. Asked again with the reason; what still fails is kept with a warning."""
        reply, text, concluded = result.last_reply, result.conclusion, None
        problems: list[str] = []
        for attempt in range(phase.max_retries + 1):
            problems = []
            if getattr(reply, "cut_at_cap", False):
                problems.append(cut_at_cap(phase.token_cap, "Reply again, briefly."
                                           + (f" End with one line: {phase.marker} <the conclusion>"
                                              if phase.produces is Produces.DECISION else "")))
            if phase.produces is Produces.ANSWER:
                shape = answer_problem(text)
                problems += ([shape] if shape else []) + citation_problems(text, self.bench.read)
            if not problems or attempt == phase.max_retries:
                break
            correction = " ".join(p if p.endswith(".") else p[0].upper() + p[1:] + "." for p in problems)
            if len(problems) > 1 or problems[0].startswith("the answer cites"):
                correction += " Answer again, citing only files and lines that exist."
            reply = await dialogue.correct(correction)
            found = find_conclusion(reply, phase.marker)
            text, concluded = (found if found is not None else reply).strip(), found is not None
        warnings = list(problems)
        for warning in warnings:
            await self._say(LogData(level="warning", text=warning), phase.assistant)
        return Product(text, warnings=warnings, concluded=concluded)


def _all_shown(examples: TestReport | None, prompt: str) -> bool:
    """Whether the prompt already holds every failing example's message (whitespace aside)."""
    text = " ".join(prompt.split())
    return examples is not None and all(" ".join(f.message.split())[:300] in text for f in examples.failures)


def _is_requirements(path: str) -> bool:
    return PurePosixPath(path).name.startswith("requirements")


def _document_text(reply: str, marker: str, path: str) -> tuple[str, bool]:
    """A document from a reply: the first fenced block's body; for prose files (README.md), else the
    reply without its marker line. A requirements file is never filled with a sentence. Also whether
    the reply was an empty code block (nothing to write, as asked)."""
    try:
        edits = [e for e in parse_edits(reply, default_path=path) if e.path == path and e.kind == "whole"]
    except EditParseError:
        edits = []
    if edits:
        return edits[0].content, not edits[0].content.strip()
    match = _FENCED.search(reply)
    if match:
        return match.group(2), not match.group(2).strip()
    if not path.lower().endswith(_PROSE_SUFFIXES):
        return "", False
    lines = reply.splitlines()
    keep = {i for i, _ in prose_lines(reply)}
    return "\n".join(line for i, line in enumerate(lines) if i in keep and not line.strip().startswith(marker)), False
