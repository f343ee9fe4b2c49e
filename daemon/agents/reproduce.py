"""A review's evidence for an opinion: a short test the team writes that reproduces a suspected bug
(``produces = "reproduce"``).

The reviewer's findings are suggestions (``daemon.agents.findings.as_suggestions``). For those that
carry a fix, one phase asks for a pytest test per suspected bug. The tests are run in the sandbox
on a copy of the repository twice: on the code as it is, and with the finding's fix applied. A test
that fails on the code and passes with the fix — while the repository's own related tests that
passed still pass with it — is evidence: the finding becomes "major" and keeps the test in its
message. Nothing else changes; the user's tree is never touched.

    found, what_happened = await reproduce_findings(bench, phase, reply, suggestions)
"""

from __future__ import annotations

import ast
import asyncio
import re
import uuid
from pathlib import Path

from daemon.agents.findings import Finding
from daemon.agents.model import Phase
from daemon.agents.workbench import Workbench
from daemon.llm.gateway import REPETITION, TIME_LIMIT
from daemon.workspace.reports import TestReport
from daemon.workspace.scratch import Scratch
from daemon.workspace.testing import run_test_files

MAX_REPRODUCED = 2  # suggestions given a reproducing test per review
REPRODUCE_SECONDS = 15.0
EVIDENCE_CHARS = 600  # of the test's source kept in the finding
_PYTHON_BLOCK = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL)


def reproducible(findings: list[Finding]) -> list[Finding]:
    """The reviewer's findings a test can check: with a fix, in a Python file."""
    return [f for f in findings if f.source == "reviewer" and f.replacement is not None
            and f.file.endswith(".py")][:MAX_REPRODUCED]


def render_suspects(findings: list[Finding]) -> str:
    """The ``{suspects}`` of a prompt: each suspected bug's file and line. What is wrong there and its fix are
    in the reviewer's reply, which the prompt continues: new tokens are the ones a prompt cache cannot serve."""
    return "\n".join(f"{number}. {finding.file} line {finding.start_line}"
                      for number, finding in enumerate(reproducible(findings), 1))


def _test_source(reply: str) -> str | None:
    """The test module in ``reply``: its longest Python block (the reply itself when it has none) that
    parses and defines a test function. A reply cut at its token cap (or where it began to loop) keeps
    its whole lines: a small model that loops on ``assert`` lines has written its test by then, and the
    unfinished line is dropped."""
    text = str(getattr(reply, "text", reply) or "")
    blocks = _PYTHON_BLOCK.findall(text)
    cut = getattr(reply, "finish_reason", None) in ("length", REPETITION)
    if cut:
        opened = re.split(r"```(?:python|py)?[ \t]*\n", text)
        if len(opened) > 1 and "```" not in opened[-1]:
            blocks.append(opened[-1])  # the block the cap left open
    for source in sorted(blocks, key=len, reverse=True) or [text]:
        lines = source.splitlines()
        while lines:
            tree = _parsed("\n".join(lines))
            if tree is not None:
                if any(isinstance(n, ast.FunctionDef) and n.name.startswith("test") for n in tree.body):
                    return "\n".join(lines) + "\n"
                break
            if not cut:
                break
            lines.pop()  # the unfinished last line of a reply cut at its cap
    return None


def _parsed(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def _with_fix(text: str, finding: Finding) -> str:
    lines = text.splitlines(keepends=True)
    replacement = (finding.replacement or "").rstrip("\n") + "\n"
    return "".join([*lines[: finding.start_line - 1], replacement, *lines[finding.end_line:]])


async def _run(workspace: Path, name: str, source: str, fixed: tuple[str, str] | None, seconds: float,
               also: list[str] | None = None, deselect: list[str] | None = None) -> TestReport:
    """The written tests (and ``also``, the repository's related tests less ``deselect``) on a copy, with
    the fix if given."""
    scratch = await asyncio.to_thread(Scratch.from_repo, workspace)
    try:
        (scratch.root / name).write_text(source, encoding="utf-8")
        if fixed is not None:
            (scratch.root / fixed[0]).write_text(fixed[1], encoding="utf-8")
        return await run_test_files(scratch.root, [name, *(also or [])], timeout=seconds,
                                    per_test_timeout=min(5.0, seconds), deselect=deselect)
    finally:
        await asyncio.to_thread(scratch.cleanup)


async def reproduce_findings(bench: Workbench, phase: Phase, reply: str,
                             suggestions: list[Finding]) -> tuple[list[Finding], str]:
    """The suggestions a written test reproduced, and what happened, in words. Those findings are
    changed in place (they are already the job's): "major", source "reproduced", the test in the message."""
    suspects = reproducible(suggestions)
    workspace = bench.spec.workspace
    if not suspects or workspace is None:
        return [], "no suggestion with a fix to reproduce"
    if getattr(reply, "finish_reason", None) == TIME_LIMIT:
        return [], "the tests stopped at the time limit; not run"
    source = _test_source(reply)
    if source is None:
        return [], "the reply held no test function that parses"
    name = f"test_troupe_reproduce_{uuid.uuid4().hex[:8]}.py"
    seconds = bench.seconds_left(REPRODUCE_SECONDS)
    before = await _run(Path(workspace), name, source, None, seconds)
    if before.ok or not before.ran or before.cannot_run or before.errors:
        return [], ("the tests pass on the code as it is: nothing reproduced" if before.ok else
                    "the tests could not run (an error, not a failure): nothing reproduced")
    failing = {f.test_id.rsplit("::", 1)[-1] for f in before.failures}
    own = bench.related_files if bench.related is not None and bench.related.ok else []  # they must stay green
    upgraded = []
    for finding in suspects:
        text = bench.read(finding.file)
        if text is None:
            continue
        after = await _run(Path(workspace), name, source, (finding.file, _with_fix(text, finding)),
                           bench.seconds_left(REPRODUCE_SECONDS), own, bench.related_stale)
        if any(not f.test_id.startswith(name) for f in after.failures):
            continue  # the fix breaks the repository's own tests: the suspicion is refuted, not reproduced
        still = {f.test_id.rsplit("::", 1)[-1] for f in after.failures}
        fixed = sorted(failing - still) if after.ran and not after.errors and not after.cannot_run else []
        if not fixed:
            continue
        finding.severity = "major"
        finding.source = "reproduced"
        finding.message = (f"{finding.message} Reproduced: {', '.join(fixed)} fails on this code and passes with "
                           f"the fix (a test Troupe wrote and ran in the sandbox):\n{_evidence(source, fixed)}")
        upgraded.append(finding)
    if not upgraded:
        return [], "the tests fail on the code but none passes with a proposed fix: the suggestions stay suggestions"
    return upgraded, f"{len(upgraded)} suggestion(s) reproduced by a failing test: now major"


def _evidence(source: str, names: list[str]) -> str:
    """The reproducing test functions' source (imports kept), clipped."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return source[:EVIDENCE_CHARS]
    keep = [ast.get_source_segment(source, n) or "" for n in tree.body
            if isinstance(n, ast.Import | ast.ImportFrom) or (isinstance(n, ast.FunctionDef) and n.name in names)]
    text = "\n".join(keep)
    return text if len(text) <= EVIDENCE_CHARS else text[: EVIDENCE_CHARS - 5] + "\n..."
