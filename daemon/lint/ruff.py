"""Ruff on a text (the editor's buffer), as the file it will be: ``ruff check --stdin-filename``.

Ruff reads code, it does not run it, so it runs outside the sandbox, as its own binary (no
interpreter start). A missing or failing ruff is an answer with ``error`` set, never an
exception. Severity is decided here, once: what is certainly broken at run time (syntax errors,
undefined names) is ``major`` (an editor Error); every other rule is ``minor`` (a Warning).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from pathlib import Path
from typing import Literal

from daemon.json_types import Json, JsonObject
from daemon.lint import text_hash
from daemon.lint.check import ruff_command
from daemon.lint.config import config_args
from daemon.messages import LintDiagnostic, LintEdit, LintFix, LintResult

log = logging.getLogger("troupe.lint")

TIMEOUT_S = 10.0
ERROR_RULES = ("invalid-syntax", "E9", "F821", "F822", "F823", "F63", "F7")
PYTHON_SUFFIXES = (".py", ".pyi")


def severity(rule: str) -> Literal["major", "minor"]:
    return "major" if rule.startswith(ERROR_RULES) else "minor"


def _position(raw: Json, fallback: tuple[int, int]) -> tuple[int, int]:  # ruff's JSON, checked here
    if not isinstance(raw, dict):
        return fallback
    return max(1, int(raw.get("row") or fallback[0])), max(1, int(raw.get("column") or fallback[1]))


def _fix(raw: Json) -> LintFix | None:  # ruff's JSON, checked here
    if not isinstance(raw, dict) or not raw.get("edits"):
        return None
    edits = []
    for edit in raw["edits"]:
        start = _position(edit.get("location"), (1, 1))
        end = _position(edit.get("end_location"), start)
        edits.append(LintEdit(start[0], start[1], end[0], end[1], str(edit.get("content") or "")))
    given: object = raw.get("applicability")
    match given:
        case "safe" | "unsafe" | "display-only" as applicability:
            pass
        case _:
            applicability = "display-only"
    return LintFix(message=str(raw.get("message") or "Fix"), applicability=applicability, edits=edits)


def diagnostics(raw: list[JsonObject]) -> list[LintDiagnostic]:
    """Ruff's JSON output as diagnostics, in reading order."""
    out = []
    for item in raw:
        rule = str(item.get("code") or "invalid-syntax")
        start = _position(item.get("location"), (1, 1))
        end = _position(item.get("end_location"), start)
        message = str(item.get("message") or "").removeprefix(f"{rule} ").strip() or rule
        out.append(LintDiagnostic(rule=rule, message=message, severity=severity(rule),
                                  start_line=start[0], start_col=start[1], end_line=end[0], end_col=end[1],
                                  fix=_fix(item.get("fix"))))
    return sorted(out, key=lambda d: (d.start_line, d.start_col, d.rule))


async def lint_text(path: str, text: str, root: str | None) -> LintResult:
    """Lint ``text`` as the file ``path`` (absolute) of the workspace ``root`` (its folder when None)."""
    digest = text_hash(text)
    if not path.endswith(PYTHON_SUFFIXES):
        return LintResult(path=path, content_hash=digest)
    base = Path(root) if root else Path(path).parent
    rel = os.path.relpath(path, base)
    extra = config_args(base, [rel])
    argv = [*ruff_command(), "check", "--output-format", "json", "--no-cache", "--exit-zero", "--force-exclude",
            *extra, "--stdin-filename", path, "-"]
    try:
        process = await asyncio.create_subprocess_exec(*argv, cwd=base if base.is_dir() else None,
                                                       stdin=asyncio.subprocess.PIPE,
                                                       stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    except OSError as exc:
        return LintResult(path=path, content_hash=digest, error=f"could not start ruff ({exc})")
    try:
        stdout, stderr = await asyncio.wait_for(process.communicate(text.encode("utf-8", "surrogatepass")),
                                                TIMEOUT_S)
    except TimeoutError:
        process.kill()
        await process.wait()
        return LintResult(path=path, content_hash=digest, error=f"ruff took more than {TIMEOUT_S:.0f} s")
    try:
        raw = json.loads(stdout or b"[]")
    except json.JSONDecodeError:
        why = stderr.decode("utf-8", "replace").strip()[-500:]
        log.warning("ruff failed on %s (exit %s): %s", path, process.returncode, why)
        return LintResult(path=path, content_hash=digest, error=f"ruff failed: {why}")
    return LintResult(path=path, content_hash=digest, diagnostics=diagnostics(raw), configured=not extra)
