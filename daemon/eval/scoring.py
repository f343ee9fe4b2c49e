"""Scoring helpers shared by the suites: run a program in the sandbox, parse the bare model's
replies into the shapes the team's jobs produce (findings with a line and a fix; a whole file)."""

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


_LINE = re.compile(r"^\W*line\W*(\d+)\W*(.*)$", re.IGNORECASE)
_FIX = re.compile(r"^\W*fix\W*?:\s?(.*)$", re.IGNORECASE)
_NONE = re.compile(r"^\W*none\W*$", re.IGNORECASE)


def parse_line_findings(reply: str, file: str) -> list[dict[str, object]]:
    """``LINE: <n>`` … ``FIX: <the corrected line>`` pairs from a bare reply, as raw findings
    (``daemon.agents.findings.validate_findings`` input). A ``NONE`` reply gives none."""
    found: list[dict[str, object]] = []
    for raw in reply.splitlines():
        line = raw.strip().strip("`*")
        if _NONE.match(line) and not found:
            return []
        match = _LINE.match(line)
        if match:
            rest = match.group(2).strip()
            found.append({"file": file, "start_line": int(match.group(1)), "message": rest or "bug on this line"})
            continue
        fix = _FIX.match(raw.strip().strip("*"))
        if fix and found and "replacement" not in found[-1]:
            found[-1]["replacement"] = fix.group(1).strip().strip("`")
    return found


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
