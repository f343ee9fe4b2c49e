"""Review findings: parsed forgivingly from a reviewer's reply, validated against the real file.

Reviewers write findings as plain blocks (what small local models manage reliably)::

    BUG: what is wrong and why
    SEVERITY: major
    CODE: the wrong line, copied from the file
    FIX: the corrected line (optional)

or, as stronger models often prefer, a JSON list of objects with ``file``, ``start_line``,
``end_line``, ``severity``, ``message``, ``quote`` and ``replacement``. JSON in fences, trailing
commas, one object instead of a list or a ``{"findings": [...]}`` wrapper are all accepted. What
is not accepted is a finding shown at the wrong place: its lines must exist, and when it quotes
code that is not on those lines, it is moved to where the quote is (re-anchored) or dropped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

SEVERITIES = ("critical", "major", "minor", "info")
_SEVERITY_ALIASES = {"error": "major", "high": "major", "blocker": "critical", "warning": "minor",
                     "medium": "minor", "low": "info", "note": "info", "style": "info", "nit": "info"}

FINDINGS_FORMAT = """For each real problem (a crash, a wrong result, a security hole) write one block:
BUG: <what is wrong and why, one sentence>
SEVERITY: <critical, major, minor or info>
CODE: <the wrong line of code, copied exactly from the file>
FIX: <the corrected line, optional>
Start a block with FILE: <path> when several files are under review. Write NONE when nothing is wrong."""
_BLOCK_KEYS = {"bug": "message", "problem": "message", "issue": "message", "severity": "severity",
               "code": "quote", "quote": "quote", "fix": "replacement", "file": "file", "line": "start_line"}
_BLOCK_LINE = re.compile(r"^\s*[-*]?\s*\**(bug|problem|issue|severity|code|quote|fix|file|line)\**\s*[:=]\s?(.*)$",
                         re.IGNORECASE)
_NUMBERED = re.compile(r"^\s*\d+\s*\|\s?")  # "  12| code" as shown to the reviewer


class FindingsError(ValueError):
    """The reply holds no usable findings JSON; the message says what was wrong, for the model."""


@dataclass
class Finding:
    file: str
    start_line: int
    end_line: int
    severity: str
    message: str
    replacement: str | None = None
    rule: str | None = None  # e.g. a ruff code for lint findings
    source: str = "reviewer"  # "reviewer" or the static checker's name

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Rejected:
    raw: Any
    reason: str


def _json_candidates(reply: str) -> list[str]:
    fenced = re.findall(r"```[a-zA-Z]*\s*\n(.*?)```", reply, re.DOTALL)
    candidates = [block for block in fenced if block.strip()[:1] in "[{"]
    text = reply.strip()
    for opener, closer in (("[", "]"), ("{", "}")):
        start, end = text.find(opener), text.rfind(closer)
        if start != -1 and end > start:
            candidates.append(text[start:end + 1])
    return candidates


def _loads_forgiving(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    cleaned = re.sub(r",\s*([\]}])", r"\1", text)  # trailing commas
    cleaned = re.sub(r"^\s*//.*$", "", cleaned, flags=re.MULTILINE)  # line comments
    return json.loads(cleaned)


def _block_value(lines: list[str]) -> str:
    kept = [line for line in lines if not line.strip().startswith(("```", "~~~"))]
    value = "\n".join(_NUMBERED.sub("", line) for line in kept).strip()
    if len(value) > 1 and value[0] == value[-1] == "`" and "`" not in value[1:-1]:
        value = value[1:-1].strip()  # `inline code`
    return value


def parse_blocks(reply: str) -> list[dict[str, Any]]:
    """Findings written as ``BUG:`` / ``SEVERITY:`` / ``CODE:`` / ``FIX:`` blocks; a ``FILE:`` line
    applies to the blocks after it."""
    findings: list[dict[str, Any]] = []
    current: dict[str, list[str]] = {}
    key: str | None = None
    file = ""

    def flush() -> None:
        if "message" in current:
            item = {name: _block_value(lines) for name, lines in current.items()}
            findings.append({k: v for k, v in {"file": file, **item}.items() if v})
        current.clear()

    for line in reply.splitlines():
        match = _BLOCK_LINE.match(line)
        if match:
            key = _BLOCK_KEYS[match.group(1).lower()]
            if key in ("message", "file") and "message" in current:
                flush()  # a new block starts
            if key == "file":  # "**FILE: a.py**", "FILE: `a.py`"
                file, key = _block_value([match.group(2)]).strip("*_ ").strip("`"), None
                continue
            current[key] = [match.group(2)]
        elif key is not None and key in current and (line.strip() or key in ("quote", "replacement")):
            current[key].append(line)
    flush()
    return findings


def parse_findings(reply: str) -> list[dict[str, Any]]:
    """The raw finding objects in a reply; raises :class:`FindingsError` with a precise reason."""
    stripped = reply.strip()
    if stripped in ("", "[]") or re.fullmatch(r"(?is)(no (problems|issues|findings|bugs)[^\n]*|none\.?)", stripped):
        return []
    blocks = parse_blocks(reply)
    if blocks:
        return blocks
    candidates = _json_candidates(reply)
    if not candidates:
        raise FindingsError("your reply has no findings in the asked format: write one block per problem, "
                            "starting with a line 'BUG: <what is wrong>', or the single word NONE")
    last_error: json.JSONDecodeError | None = None
    for candidate in candidates:
        try:
            data = _loads_forgiving(candidate)
        except json.JSONDecodeError as exc:
            last_error = exc
            continue
        if isinstance(data, dict):
            for key in ("findings", "issues", "comments", "results"):
                if isinstance(data.get(key), list):
                    data = data[key]
                    break
            else:
                data = [data]
        if isinstance(data, list):
            return [item for item in data if isinstance(item, dict)]
    assert last_error is not None
    line = last_error.doc.splitlines()[last_error.lineno - 1] if last_error.doc else ""
    raise FindingsError(f"your JSON is not valid: {last_error.msg} at line {last_error.lineno}, column "
                        f"{last_error.colno} ({line.strip()[:80]!r}). Reply again with only the corrected JSON list.")


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _severity(value: Any) -> str:
    text = str(value or "").strip().lower()
    return text if text in SEVERITIES else _SEVERITY_ALIASES.get(text, "minor")


def _find_quote(lines: list[str], quote: str, near: int) -> int | None:
    """1-based line where ``quote``'s first line appears, nearest to ``near``."""
    first = next((q.strip() for q in quote.splitlines() if q.strip()), "")
    if not first:
        return None
    hits = [i + 1 for i, line in enumerate(lines) if first in line]
    if not hits:
        return None
    return min(hits, key=lambda n: abs(n - near))


def _quote_end(lines: list[str], quote: str, start: int) -> int:
    """The last line of the file that a multi-line quote starting at ``start`` still matches."""
    wanted = [q.strip() for q in quote.splitlines() if q.strip()][1:]
    end, n = start, start  # 1-based
    for text in wanted:
        while n < len(lines) and not lines[n].strip():
            n += 1
        if n >= len(lines) or text not in lines[n]:
            break
        end = n = n + 1
    return end


def _indented_like(replacement: str, line: str) -> str:
    """A fix written without indentation gets the indentation of the line it replaces."""
    indent = line[: len(line) - len(line.lstrip())]
    body = replacement.strip("\n")
    if not indent or body[:1] in (" ", "\t") or not body:
        return body
    return "\n".join(indent + part if part.strip() else part for part in body.splitlines())


def validate_findings(raw: list[dict[str, Any]], read: Callable[[str], str | None],
                      allowed_files: set[str] | None = None) -> tuple[list[Finding], list[Rejected]]:
    """Keep the findings whose place is real; re-anchor quoted ones that name the wrong lines.

    ``read(path)`` returns a file's text, or None when the path is not readable (outside the
    workspace, missing). ``allowed_files``, when given, limits findings to the reviewed files.
    """
    kept: list[Finding] = []
    rejected: list[Rejected] = []
    for item in raw:
        path = str(item.get("file") or item.get("path") or "").strip().removeprefix("./")
        if not path and allowed_files and len(allowed_files) == 1:
            path = next(iter(allowed_files))
        message = str(item.get("message") or item.get("comment") or "").strip()
        if not message:
            rejected.append(Rejected(item, "no message"))
            continue
        if allowed_files is not None and path not in allowed_files:
            rejected.append(Rejected(item, f"file {path!r} was not under review"))
            continue
        text = read(path) if path else None
        if text is None:
            rejected.append(Rejected(item, f"file {path!r} does not exist in the workspace"))
            continue
        lines = text.splitlines()
        start = _int(item.get("start_line", item.get("line")))
        end = _int(item.get("end_line")) or start
        quote = str(item.get("quote") or item.get("code") or "")
        in_range = start is not None and 1 <= start <= len(lines)
        if quote.strip():
            first = next(q.strip() for q in quote.splitlines() if q.strip())
            span = lines[start - 1:(end or start)] if in_range else []
            if not any(first in line for line in span):
                anchored = _find_quote(lines, quote, start or 1)
                if anchored is None:
                    rejected.append(Rejected(item, f"the quoted code {first[:60]!r} is not in {path}"))
                    continue
                length = max(0, (end or start or anchored) - (start or anchored))
                start, end = anchored, max(anchored + length, _quote_end(lines, quote, anchored))
        elif not in_range:
            rejected.append(Rejected(item, f"line {start} does not exist in {path} ({len(lines)} lines)"))
            continue
        assert start is not None
        end = min(max(end or start, start), len(lines))
        replacement = item.get("replacement")
        replacement = _indented_like(replacement, lines[start - 1]) if isinstance(replacement, str) else None
        kept.append(Finding(path, start, end, _severity(item.get("severity")), message, replacement))
    return kept, rejected


_WORD = re.compile(r"[a-z_][a-z0-9_]{1,}")
_COMMON = {"the", "is", "in", "of", "to", "a", "an", "and", "not", "but", "this", "that", "it", "be", "are",
           "was", "which", "module", "function", "variable", "code", "line"}


def _terms(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _COMMON}


def drop_lint_repeats(findings: list[Finding], issues: list[Any]) -> tuple[list[Finding], list[Rejected]]:
    """Reviewer findings that only restate a static-check issue of the same file (weak models do,
    even when told not to): every term of the lint message, bar its code, appears in the finding."""
    kept: list[Finding] = []
    repeats: list[Rejected] = []
    for finding in findings:
        words = _terms(finding.message)
        same = [i for i in issues if i.file == finding.file and (lint := _terms(i.message)) and lint <= words]
        if same:
            repeats.append(Rejected(finding.to_dict(), f"repeats the static check {same[0].code}: {same[0].message}"))
        else:
            kept.append(finding)
    return kept, repeats


def lint_findings(issues: list[Any]) -> list[Finding]:
    """Static-check issues (``LintIssue(file, line, col, code, message)``) as findings (severity:
    :func:`daemon.lint.ruff.severity`; the message does not repeat the code)."""
    from daemon.lint.ruff import severity

    return [Finding(file=i.file, start_line=i.line, end_line=i.line, severity=severity(i.code),
                    message=i.message.strip() or i.code, rule=i.code, source="ruff") for i in issues]


def render_lint(issues: list[Any]) -> str:
    """The ``{lint}`` of a prompt: a short summary (``daemon.lint.summary``), never the whole list."""
    from daemon.lint.summary import lint_summary

    return lint_summary(issues)
