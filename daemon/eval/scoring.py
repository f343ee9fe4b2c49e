"""Scoring helpers shared by the suites: run a program in the sandbox, ask the bare model for a
review as the team's reviewer is asked, and parse bare replies into the shapes the team's jobs
produce (findings with a line and a fix; a whole file)."""

from __future__ import annotations

import ast
import asyncio
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from daemon.sandbox import SandboxError, run_sandboxed
from daemon.workspace.interpreter import project_python

TEST_SECONDS = 10.0
"""HumanEvalFix's limit per program (three buggy items loop forever)."""


@dataclass
class ProgramRun:
    passed: bool
    timed_out: bool
    tail: str  # the last lines of its output: why it failed


async def run_python(program: str, *, timeout: float = TEST_SECONDS) -> ProgramRun:
    """Run ``program`` (one Python file) in the sandbox, in a scratch folder; exit 0 passes."""
    python = await asyncio.to_thread(project_python)
    with tempfile.TemporaryDirectory(prefix="troupe-eval-") as tmp:
        (Path(tmp) / "program.py").write_text(program, encoding="utf-8")
        try:
            result = await run_sandboxed([python, "-I", "program.py"], cwd=tmp, timeout=timeout)
        except SandboxError as exc:
            return ProgramRun(False, False, f"the sandbox could not start: {exc}")
    tail = "\n".join(((result.stdout or "") + (result.stderr or "")).strip().splitlines()[-5:])
    return ProgramRun(result.succeeded, result.timed_out, tail)


BARE_REVIEW_MAX_TOKENS = 512
BARE_REVIEW_PROMPT = """Please review {file} from my repository for bugs. This is the whole file, its lines numbered.

{target}

{findings_format}"""


@dataclass
class Spot:
    """A model finding as a suite scores it, whichever row produced it."""

    start: int
    end: int
    message: str
    fix: str | None = None  # the corrected line(s), when the finding gives them
    severity: str | None = None  # the team's ("major": executed evidence; "info": a suggestion); a bare call's: None


def bare_review_prompt(file: str, text: str) -> str:
    """What a careful user asks a model: the whole file numbered as the team's reviewer sees it, and
    the findings format the team's reviewer is given."""
    from daemon.agents.findings import FINDINGS_FORMAT
    from daemon.agents.workbench import numbered as workbench_numbered

    lines = text.splitlines()
    target = f"{file} (with line numbers):\n" + workbench_numbered(lines, 1, len(lines))
    return BARE_REVIEW_PROMPT.format(file=file, target=target, findings_format=FINDINGS_FORMAT)


def bare_spots(reply: str, file: str, text: str) -> list[Spot]:
    """A bare reply's findings on ``file``, parsed and placed by the code that handles the team
    reviewer's reply (a reply in no findings format gives none)."""
    from daemon.agents.findings import FindingsError, parse_findings, validate_findings

    try:
        raw = parse_findings(reply)
    except FindingsError:
        return []
    kept, _ = validate_findings(raw, lambda path: text if path == file else None, {file})
    return [Spot(f.start_line, f.end_line, f.message, f.replacement) for f in kept]


_FENCE = re.compile(r"```[ \t]*([\w+-]*)[^\n]*\n(.*?)```", re.DOTALL)


def parse_file_reply(reply: str) -> str | None:
    """The whole file a bare reply holds: its longest fenced block that parses as Python, else the
    reply itself when it parses; None when there is no Python file in it."""
    blocks = sorted((m.group(2) for m in _FENCE.finditer(reply)), key=len, reverse=True)
    for text in [*blocks, reply]:
        if text.strip() and _parses(text):
            return text if text.endswith("\n") else text + "\n"
    return None


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return True


def numbered(text: str) -> str:
    """``text`` with its line numbers, as the bare prompts show a file."""
    return "\n".join(f"{n:>3}| {line}" for n, line in enumerate(text.splitlines(), 1))


def apply_line_fix(text: str, start: int, end: int, replacement: str) -> str:
    """``text`` with lines ``start..end`` (1-based, inclusive) replaced, as an editor applies a fix."""
    lines = text.splitlines()
    lines[start - 1:end] = replacement.removesuffix("\n").splitlines()
    return "\n".join(lines) + "\n"
