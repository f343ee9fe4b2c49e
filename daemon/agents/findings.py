"""Review findings: parsed forgivingly from a reviewer's reply, validated against the real file.

A reviewer is asked for a JSON list of objects with ``file``, ``start_line``, ``end_line``,
``severity``, ``message``, ``quote`` (the exact code the finding is about) and optionally
``replacement``. Models wrap JSON in fences, leave trailing commas, return one object instead
of a list or a ``{"findings": [...]}`` wrapper: all of that is accepted. What is not accepted
is a finding shown at the wrong place: its lines must exist, and when it quotes code that is
not on those lines, it is moved to where the quote is (re-anchored) or dropped.
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

FINDINGS_FORMAT = """Reply with a JSON list, one object per real problem, and nothing else:
[{"file": "path/to/file.py", "start_line": 12, "end_line": 12, "severity": "major",
  "message": "what is wrong and why", "quote": "the exact code on that line",
  "replacement": "optional: the corrected code for those lines"}]
severity is one of critical, major, minor, info. Reply [] when nothing is wrong."""


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


def parse_findings(reply: str) -> list[dict[str, Any]]:
    """The raw finding objects in a reply; raises :class:`FindingsError` with a precise reason."""
    stripped = reply.strip()
    if stripped in ("", "[]") or re.fullmatch(r"(?is)(no (problems|issues|findings)[^\n]*|none\.?)", stripped):
        return []
    candidates = _json_candidates(reply)
    if not candidates:
        raise FindingsError("your reply contains no JSON: reply with a JSON list of findings "
                            "(or [] when nothing is wrong), without any other text")
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
                start, end = anchored, anchored + length
        elif not in_range:
            rejected.append(Rejected(item, f"line {start} does not exist in {path} ({len(lines)} lines)"))
            continue
        assert start is not None
        end = min(max(end or start, start), len(lines))
        replacement = item.get("replacement")
        kept.append(Finding(path, start, end, _severity(item.get("severity")), message,
                            replacement if isinstance(replacement, str) else None))
    return kept, rejected


def lint_findings(issues: list[Any]) -> list[Finding]:
    """Static-check issues (``LintIssue(file, line, col, code, message)``) as minor findings."""
    return [Finding(file=i.file, start_line=i.line, end_line=i.line, severity="minor",
                    message=f"{i.code} {i.message}".strip(), rule=i.code, source="ruff") for i in issues]


def render_lint(issues: list[Any]) -> str:
    if not issues:
        return "(nothing)"
    return "\n".join(f"{i.file}:{i.line}: {i.code} {i.message}" for i in issues)
