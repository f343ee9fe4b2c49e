"""What a review prompt is told about lint: a short summary, never the whole list.

The linter's findings reach the user as diagnostics; the reviewer only needs to know which
rules fired where, so it does not repeat them. A few hundred characters at most, whatever the
linter found.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from daemon.lint.check import LintIssue

MAX_RULES = 6
MAX_LINES = 4
MAX_MESSAGE = 60


def lint_summary(issues: list[LintIssue]) -> str:
    """``LintIssue(file, line, col, code, message)`` items as a few lines: per rule, its count, the
    first message and the first lines."""
    if not issues:
        return "(nothing)"
    by_rule: dict[tuple[str, str], list[LintIssue]] = defaultdict(list)
    for issue in issues:
        by_rule[(issue.code, issue.file)].append(issue)
    ranked = sorted(by_rule.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    rows = []
    for (code, file), found in ranked[:MAX_RULES]:
        message = " ".join(str(found[0].message).split())
        message = message if len(message) <= MAX_MESSAGE else message[:MAX_MESSAGE - 1] + "…"
        lines = ", ".join(str(i.line) for i in found[:MAX_LINES]) + (", …" if len(found) > MAX_LINES else "")
        rows.append(f"- {code} ×{len(found)} in {file} (line {lines}): {message}")
    rest = sum(len(found) for _, found in ranked[MAX_RULES:])
    if rest:
        rows.append(f"- and {rest} more of {len(ranked) - MAX_RULES} other rule(s)")
    return f"{len(issues)} lint issue(s), shown to the user already:\n" + "\n".join(rows)
