"""A review's evidence: a repair that makes the failing docstring examples, or the failing related
tests, pass (``produces = "repair"``).

When the file under review has docstring examples that fail (the ``doctests`` tool), or related
tests that fail (the ``related_tests`` tool), one phase asks for the corrected file. The repair is
written into a temporary copy of the repository —
never the user's tree, never the job's proposed change — and the examples run again there. Only
when every example then passes (the failing ones now pass, none that passed broke or was dropped)
does each changed hunk (``difflib``, at most :data:`MAX_HUNK_LINES` lines on either side) become
a finding: its message says which example failed and what it returned, its ``replacement`` holds
the repaired lines, so applying it applies the repair. A repair that does not parse, does not
pass, or changes nothing adds no finding; the job goes on either way.

    findings, what_happened = await repair_findings(bench, phase, reply)
"""

from __future__ import annotations

import asyncio
import difflib
from pathlib import Path

from daemon.agents.findings import Finding
from daemon.agents.model import Phase
from daemon.agents.workbench import Workbench
from daemon.llm.gateway import TIME_LIMIT
from daemon.workspace.doctests import DOCTEST_SECONDS, run_doctests
from daemon.workspace.edits import EditApplyError, EditParseError, apply_edits, parse_edits
from daemon.workspace.paths import PathOutsideWorkspace
from daemon.workspace.related import RELATED_SECONDS, run_related
from daemon.workspace.reports import TestReport
from daemon.workspace.scratch import NotEditable, Scratch

MAX_HUNK_LINES = 3  # a larger change is a rewrite, not a line finding
EVIDENCE_EXAMPLES = 2  # failing examples quoted in each finding's message


def hunks(before: str, after: str) -> list[tuple[int, int, str]]:
    """The line findings that turn ``before`` into ``after``: ``(start, end, replacement)`` with
    1-based inclusive original lines; an insertion is anchored on the line before it (the first
    line at the top), which its replacement keeps. Hunks over :data:`MAX_HUNK_LINES` lines, and
    those that only add blank lines or indent, are left out."""
    old, new = before.splitlines(), after.splitlines()
    found = []
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal" or i2 - i1 > MAX_HUNK_LINES or j2 - j1 > MAX_HUNK_LINES:
            continue
        if "".join(x.strip() for x in old[i1:i2]) == "".join(x.strip() for x in new[j1:j2]):
            continue  # blank lines or indentation only: no bug there
        lines = new[j1:j2]
        if i1 == i2 and old:  # an insertion: anchored on a neighbouring line, kept in the replacement
            if i1 > 0:
                i1, lines = i1 - 1, [old[i1 - 1], *lines]
            else:
                i2, lines = 1, [*lines, old[0]]
        if i2 > i1:
            found.append((i1 + 1, i2, "\n".join(lines)))
    return found


async def _recheck(bench: Workbench, root: Path, files: list[str], tests: bool) -> TestReport | None:
    """The same evidence run again on the repaired copy at ``root``."""
    if tests:
        return await run_related(root, bench.related_files, timeout=bench.seconds_left(RELATED_SECONDS),
                                 deselect=bench.related_stale)
    return await run_doctests(root, files, timeout=bench.seconds_left(DOCTEST_SECONDS))


async def repair_findings(bench: Workbench, phase: Phase, reply: str) -> tuple[list[Finding], str]:
    """The verified repair's findings and what became of the repair, in words (for the transcript).

    The evidence is the phase's ``skip_if_empty`` field: the failing docstring examples (``examples``)
    or the failing related tests (``failing_tests``, ``daemon.workspace.related``)."""
    tests = phase.skip_if_empty == "failing_tests"
    before = bench.related if tests else bench.examples
    what = "related tests" if tests else "docstring examples"
    files = [p for p in bench.review_files() if bench.read(p) is not None]
    workspace = bench.spec.workspace
    if before is None or before.ok or not files or workspace is None:
        return [], f"no failing {what[:-1]} to repair"
    if getattr(reply, "cut_at_cap", False):
        cap = ("the job's time limit" if getattr(reply, "finish_reason", None) == TIME_LIMIT
               else f"its cap of {phase.token_cap} tokens")
        return [], f"the repair stopped at {cap}; not tried"
    try:
        edits = [e for e in parse_edits(reply, default_path=files[0] if len(files) == 1 else None)
                 if e.path in files]
    except EditParseError as exc:
        return [], f"the reply held no usable repair ({str(exc).splitlines()[0]})"
    if not edits:
        return [], "the reply repaired none of the reviewed files"
    try:
        edits = bench.unexcerpted(edits)
    except EditParseError:
        return [], "the reply rewrote a file whole of which it was shown only part, and its parts could not be placed"
    scratch = await asyncio.to_thread(Scratch.from_repo, Path(workspace))
    try:
        try:
            changed = apply_edits(scratch, edits)
        except (EditApplyError, PathOutsideWorkspace, NotEditable) as exc:
            return [], f"the repair could not be applied ({str(exc).splitlines()[0]})"
        if not changed:
            return [], "the repair changed nothing"
        after = await _recheck(bench, scratch.root, files, tests)
        repaired = {p: scratch.read(p) for p in changed}
    finally:
        await asyncio.to_thread(scratch.cleanup)
    if after is None or not after.ok or after.passed < before.passed + before.failed:  # none dropped, none broken
        left = f"{after.failed} still fail" if after is not None and not after.ok else "they no longer run"
        return [], f"the repair was tried on a copy and its {what} do not pass ({left}); nothing reported"
    findings = []
    for path, text in repaired.items():
        original = bench.read(path) or ""
        if tests:
            failing = [f"{f.test_id}: {f.message.strip().splitlines()[0][:160]}" for f in before.failures
                       if f.message.strip()]
            evidence = "; ".join(failing[:EVIDENCE_EXAMPLES])
            message = (f"The related tests fail ({evidence or before.summary().splitlines()[0]}); with this change, "
                       f"tried on a copy, all {after.passed} pass.")
        else:
            evidence = "; ".join([f.message for f in before.failures if f.file == path][:EVIDENCE_EXAMPLES])
            message = (f"The docstring examples fail ({evidence or 'see the file'}); with this change, tried on a "
                       f"copy, all {after.passed} pass.")
        for start, end, replacement in hunks(original, text):
            findings.append(Finding(file=path, start_line=start, end_line=end, severity="major", message=message,
                                    replacement=replacement, source="repair"))
    if not findings:
        return [], f"the repair passes the {what} but changes more than {MAX_HUNK_LINES} lines at once"
    return findings, f"{len(findings)} finding(s) from a repair that makes the {what} pass"
