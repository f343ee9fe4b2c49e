"""Review findings: parsed forgivingly from a reviewer's reply, validated against the real file.

Reviewers write findings as plain blocks (what small local models manage reliably)::

    LINE: 8
    BUG: what is wrong and why
    FIX: line 8, corrected

(the older ``BUG:`` / ``SEVERITY:`` / ``CODE: <the wrong line>`` / ``FIX:`` blocks still parse;
``LINE: 8 what is wrong`` on one line too)
or, as stronger models often prefer, a JSON list of objects with ``file``, ``start_line``,
``end_line``, ``severity``, ``message``, ``quote`` and ``replacement``. JSON in fences, trailing
commas, one object instead of a list or a ``{"findings": [...]}`` wrapper are all accepted. What
is not accepted is a finding shown at the wrong place: its lines must exist, and when it quotes
code that is not on those lines, it is moved to where the quote is (re-anchored) or dropped; a
bare line number must fit its fix or its message (``anchoring``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING

from daemon.agents.anchoring import (
    anchor_line,
    clean_code,
    find_code,
    first_code_line,
    indented_like,
    is_code,
    line_has,
    quote_end,
)
from daemon.json_types import Json, JsonDict, JsonObject

if TYPE_CHECKING:
    from daemon.lint.check import LintIssue
    from daemon.workspace.reports import TestFailure, TestReport

SEVERITIES = ("critical", "major", "minor", "info")
_SEVERITY_ALIASES = {"error": "major", "high": "major", "blocker": "critical", "warning": "minor",
                     "medium": "minor", "low": "info", "note": "info", "style": "info", "nit": "info"}

FINDINGS_FORMAT = """For each bug (a crash or a wrong result), write three lines:
LINE: <the number of the wrong line>
BUG: <what is wrong, in one sentence>
FIX: <that line, corrected>
If several files are under review, put FILE: <path> before the bug's lines. If there is no bug, write only NONE."""
BROKEN_FORMAT = FINDINGS_FORMAT.replace(
    "If there is no bug, write only NONE.",
    "The failing tests show that a line this change made is wrong: name it (NONE is no answer here).")
"""The format when a save broke related tests that passed on the last commit: "no bug" is refuted by a run."""
_BLOCK_KEYS = {"bug": "message", "problem": "message", "issue": "message", "severity": "severity",
               "code": "quote", "quote": "quote", "fix": "replacement", "file": "file", "line": "start_line"}
_BLOCK_LINE = re.compile(r"^\s*[-*]?\s*\**(bug|problem|issue|severity|code|quote|fix|file|line)\**\s*[:=]\**\s?(.*)$",
                         re.IGNORECASE)
_INLINE_KEY = re.compile(r"[,;]?\s+(?=(?:BUG|FIX|CODE|SEVERITY|LINE)\s*:)")  # "LINE: 8, FIX: ..." on one line
_LINE_VALUE = re.compile(r"^\W*(\d+)(?:\s*[-–]\s*(\d+))?\W*(.*)$", re.DOTALL)  # "8", "8-9", "8: what is wrong"
_NO_BUG = re.compile(r"^\W*(no (bugs?|issues?|problems?|errors?)( found)?|none|nothing( is)? wrong|n/a)\W*$",
                     re.IGNORECASE)  # "LINE: 1 no bug": a small model's way of saying NONE
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
    source: str = "reviewer"  # "reviewer", "repair" (daemon.agents.repair) or the static checker's name

    def to_dict(self) -> JsonDict:
        return asdict(self)


@dataclass
class Rejected:
    raw: JsonObject  # the finding as the model wrote it (or as parsed), refused for ``reason``
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


def _loads_forgiving(text: str) -> Json:  # a model's JSON: parse_findings checks its shape
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


def parse_blocks(reply: str) -> list[JsonObject]:
    """Findings written as ``LINE:`` / ``BUG:`` / ``FIX:`` (or ``BUG:`` / ``SEVERITY:`` / ``CODE:`` /
    ``FIX:``) blocks, in any order: a key seen again, or a line number after a fix, starts the
    next block. A ``FILE:`` line applies to the blocks after it."""
    findings: list[JsonObject] = []
    current: dict[str, list[str]] = {}
    key: str | None = None
    file = ""

    def flush() -> None:
        item = {name: _block_value(lines) for name, lines in current.items()}
        _split_line_value(item)
        if item.get("message") or item.get("start_line") or item.get("quote"):
            item.setdefault("severity", "major")  # the asked format has none: a bug, as asked for
            findings.append({k: v for k, v in {"file": file, **item}.items() if v})
        current.clear()

    blank = False  # the line before was blank: a LINE or BUG after it starts a block
    for line in (part for raw in reply.splitlines() for part in _INLINE_KEY.split(raw)):
        match = _BLOCK_LINE.match(line)
        if match:
            key = _BLOCK_KEYS[match.group(1).lower()]
            opens = key in ("start_line", "message") and (blank or "replacement" in current) and (
                "message" in current or "start_line" in current)
            if key == "file" or key in current or opens:
                flush()  # a new block starts
            if key == "file":  # "**FILE: a.py**", "FILE: `a.py`"
                file, key = _block_value([match.group(2)]).strip("*_ ").strip("`"), None
                continue
            current[key] = [match.group(2)]
        elif key is not None and key in current and (line.strip() or key in ("quote", "replacement")):
            current[key].append(line)
        blank = not line.strip()
    flush()
    return findings


def _split_line_value(item: JsonObject) -> None:
    """``LINE: 8-9: what is wrong`` -> start and end lines, and the message when there is none."""
    value = str(item.get("start_line") or "").strip("*_` ")
    if not value:
        return
    match = _LINE_VALUE.match(value)
    if match is None:
        item.pop("start_line")
        return
    item["start_line"] = int(match.group(1))
    if match.group(2):
        item["end_line"] = int(match.group(2))
    rest = match.group(3).strip()
    if rest and not item.get("message"):
        item["message"] = rest


def parse_findings(reply: str) -> list[JsonObject]:
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


def _int(value: Json) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _severity(value: Json) -> str:
    text = str(value or "").strip().lower()
    return text if text in SEVERITIES else _SEVERITY_ALIASES.get(text, "minor")


def validate_findings(raw: list[JsonObject], read: Callable[[str], str | None],
                      allowed_files: set[str] | None = None,
                      trusted: dict[str, list[tuple[int, int]]] | None = None) -> tuple[list[Finding], list[Rejected]]:
    """Keep the findings whose place is real; re-anchor quoted ones that name the wrong lines.

    ``read(path)`` returns a file's text, or None when the path is not readable (outside the
    workspace, missing). ``allowed_files``, when given, limits findings to the reviewed files.
    A bare line number within ``trusted`` (per file: a save's changed lines when a run showed they
    broke its tests) stands as given: the run, not the wording, says the bug is there.
    """
    kept: list[Finding] = []
    rejected: list[Rejected] = []
    for item in raw:
        path = str(item.get("file") or item.get("path") or "").strip().removeprefix("./")
        if not path and allowed_files and len(allowed_files) == 1:
            path = next(iter(allowed_files))
        message = str(item.get("message") or item.get("comment") or "").strip()
        if not message and isinstance(item.get("replacement"), str) and item["replacement"].strip():
            message = f"should be: {clean_code(item['replacement'])[0]}"  # a block with a line and a fix only
        if not message:
            rejected.append(Rejected(item, "no message"))
            continue
        if _NO_BUG.match(message):
            rejected.append(Rejected(item, f"it says there is nothing wrong ({message[:40]!r})"))
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
        quote, quoted_at = clean_code(str(item.get("quote") or item.get("code") or ""))
        replacement = item.get("replacement")
        if isinstance(replacement, str) and "\n" not in replacement.strip():
            replacement, fixed_at = clean_code(replacement)
            quoted_at = quoted_at or fixed_at
        start = quoted_at if start is None else start
        end = end or start
        in_range = start is not None and 1 <= start <= len(lines)
        if first_code_line(quote):
            first = first_code_line(quote)
            span = lines[start - 1:(end or start)] if in_range and start is not None else []
            if not any(line_has(line, first) for line in span):
                anchored = find_code(lines, quote, start or 1)
                if anchored is None:
                    rejected.append(Rejected(item, f"the quoted code {first[:60]!r} is not in {path}"))
                    continue
                length = max(0, (end or start or anchored) - (start or anchored))
                start, end = anchored, max(anchored + length, quote_end(lines, quote, anchored))
        elif start is None:
            rejected.append(Rejected(item, f"the finding names no line of {path} and quotes no code"))
            continue
        elif not in_range:
            rejected.append(Rejected(item, f"line {start} does not exist in {path} ({len(lines)} lines)"))
            continue
        elif not near((trusted or {}).get(path, []), start, start, margin=0):  # a trusted line stands as given
            anchored, reason = anchor_line(lines, start, replacement if isinstance(replacement, str) else None,
                                           message)
            if anchored is None:
                rejected.append(Rejected(item, f"{reason} in {path}"))
                continue
            end, start = anchored + max(0, (end or start) - start), anchored
        assert start is not None
        end = min(max(end or start, start), len(lines))
        if isinstance(replacement, str) and "\n" not in replacement.strip() and not is_code(replacement):
            replacement = None  # a sentence about the fix, not the fixed line: nothing to apply
        replacement = indented_like(replacement, lines[start - 1]) if isinstance(replacement, str) else None
        kept.append(Finding(path, start, end, _severity(item.get("severity")),
                            message, replacement))
    return kept, rejected


_WORD = re.compile(r"[a-z_][a-z0-9_]{1,}")
_COMMON = {"the", "is", "in", "of", "to", "a", "an", "and", "not", "but", "this", "that", "it", "be", "are",
           "was", "which", "module", "function", "variable", "code", "line"}


def _terms(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _COMMON}


def drop_lint_repeats(findings: list[Finding], issues: list[LintIssue]) -> tuple[list[Finding], list[Rejected]]:
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


MAX_SUGGESTIONS = 2
"""Opinions kept per file and review: a small model that is unsure must say little, and say it quietly."""
SUGGESTION = "info"


def as_suggestions(findings: list[Finding]) -> tuple[list[Finding], list[Rejected]]:
    """The reviewer's findings as what they are without executed evidence: suggestions (severity
    ``info``; only a failing test, a failing docstring example or a reproducing test makes a finding
    "major"), the first :data:`MAX_SUGGESTIONS` of each file in the reply's order."""
    kept: list[Finding] = []
    dropped: list[Rejected] = []
    per_file: dict[str, int] = {}
    for finding in findings:
        if per_file.get(finding.file, 0) >= MAX_SUGGESTIONS:
            dropped.append(Rejected(finding.to_dict(), f"more than {MAX_SUGGESTIONS} suggestions for "
                                    f"{finding.file} without evidence; only the first {MAX_SUGGESTIONS} are kept"))
            continue
        per_file[finding.file] = per_file.get(finding.file, 0) + 1
        kept.append(replace(finding, severity=SUGGESTION))
    return kept, dropped


def near(spans: list[tuple[int, int]], start: int, end: int, margin: int = 1) -> bool:
    """Whether lines ``start..end`` come within ``margin`` lines of one of ``spans`` (inclusive ranges)."""
    return any(a - margin <= end and start <= b + margin for a, b in spans)


def broken_by_save(broken: list[TestFailure]) -> str:
    """What a save broke, for a finding's message: the related tests or docstring examples that fail since it and
    pass on the last commit (``broken``), the first with its assertion ("" when none)."""
    if not broken:
        return ""
    first = broken[0]
    said = (first.message or "").strip().splitlines()[0][:160] if (first.message or "").strip() else ""
    more = f" and {len(broken) - 1} more" if len(broken) > 1 else ""
    return (f"Since this change, {first.test_id}{f' ({said})' if said else ''}{more} fail(s), and pass(es) on the "
            "last commit (run in the sandbox).")


def about_the_save(findings: list[Finding], changed: dict[str, list[tuple[int, int]]],
                   broken: str) -> tuple[list[Finding], list[Finding], list[Rejected]]:
    """A save's review speaks about the save: the reviewer's findings on no line it changed (±1) are dropped
    (a clean line's opinion is noise on every save). Those on its lines are "major" when the save broke a
    related test or docstring example (``broken``: :func:`broken_by_save`, "" when none), with that as their
    evidence: it passed before the change and fails since. Returns (major, the rest, dropped)."""
    major: list[Finding] = []
    rest: list[Finding] = []
    dropped: list[Rejected] = []
    for finding in findings:
        if not near(changed.get(finding.file, []), finding.start_line, finding.end_line):
            dropped.append(Rejected(finding.to_dict(), "not on a line this change adds or changes (±1): a review "
                                    "of a change speaks about the change"))
        elif broken:
            major.append(replace(finding, severity="major", source="tests", message=f"{finding.message} {broken}"))
        else:
            rest.append(finding)
    return major, rest, dropped


def regression_findings(broken: list[TestFailure], changed: dict[str, list[tuple[int, int]]],
                        covered: list[Finding]) -> list[Finding]:
    """A save that broke related tests or examples, where no finding is on the lines it changed: the change as a
    finding ("major": executed evidence), on each file's first changed lines (which of several changed places
    broke them is not known; the message says how many there are)."""
    said = broken_by_save(broken)
    found: list[Finding] = []
    for path, spans in changed.items() if said else ():
        if any(f.file == path and near(spans, f.start_line, f.end_line) for f in covered):
            continue
        where = "" if len(spans) == 1 else f" (one of the {len(spans)} places this change touches in {path})"
        found.append(Finding(file=path, start_line=spans[0][0], end_line=spans[0][1], severity="major",
                             message=f"This change breaks the repository's tests{where}. {said}",
                             rule="troupe/regression", source="tests"))
    return found


def failing_test_findings(report: TestReport | None, files: list[str], covered: list[Finding]) -> list[Finding]:
    """A related test that fails where a reviewed file's line is the deepest frame of its traceback
    (an exception raised in the code under review) as a finding on that line: executed evidence, so
    "major", the test and its message as the finding's message. Lines a repair's finding already
    covers are left to that finding (it carries the fix)."""
    if report is None or report.ok or report.cannot_run:
        return []
    found: list[Finding] = []
    for failure in report.failures:
        if failure.file not in files or not failure.line:
            continue
        if any(f.file == failure.file and f.start_line - 1 <= failure.line <= f.end_line + 1 for f in covered + found):
            continue
        message = (failure.message or "").strip().splitlines()[0][:200] if failure.message else "it fails"
        found.append(Finding(file=failure.file, start_line=failure.line, end_line=failure.line, severity="major",
                             message=f"The test {failure.test_id} fails here: {message}", rule="troupe/failing-test",
                             source="tests"))
    return found


def lint_findings(issues: list[LintIssue]) -> list[Finding]:
    """Static-check issues (``LintIssue(file, line, col, code, message)``) as findings (severity:
    :func:`daemon.lint.ruff.severity`; the message does not repeat the code)."""
    from daemon.lint.ruff import severity

    return [Finding(file=i.file, start_line=i.line, end_line=i.line, severity=severity(i.code),
                    message=i.message.strip() or i.code, rule=i.code, source="ruff") for i in issues]


def render_lint(issues: list[LintIssue]) -> str:
    """The ``{lint}`` of a prompt: a short summary (``daemon.lint.summary``), never the whole list."""
    from daemon.lint.summary import lint_summary

    return lint_summary(issues)
