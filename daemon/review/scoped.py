"""Findings of a diff review: only those on the changed lines, each with a fingerprint and its fix.

Two lanes feed it. The static lane runs ruff in-process on the text under review
(:func:`static_review`: no daemon, no model; the pre-commit hook's default). The model lane is a
review job in the daemon (``options.diff`` names the hunks); its findings come back through the
client and :func:`model_findings` keeps the reviewer's, since the static lane already computed the
lint on the exact text under review. Either way a finding is kept only when its lines touch an
added or changed line (:meth:`ChangedFile.touches`).

The fingerprint hashes the rule, the file and the finding's first line with its whitespace
collapsed, plus how many identical (rule, file, line) findings come before it: it survives lines
moving up or down and changes when the line itself changes (SARIF ``partialFingerprints``).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Literal

from daemon.json_types import JsonDict
from daemon.review.gitdiff import ChangedFile, DiffScope

if TYPE_CHECKING:
    from daemon.messages import FindingInfo, LintFix, LintResult

Level = Literal["error", "warning", "note"]
LEVELS: tuple[Level, ...] = ("note", "warning", "error")  # weakest first
SEVERITY_LEVEL: dict[str, Level] = {"critical": "error", "major": "error", "minor": "warning", "info": "note"}
MODEL_RULE = "troupe/review"  # a model finding with no rule of its own (the language server's code "review")
LINT_CONCURRENCY = 4


def level_of(severity: str) -> Level:
    return SEVERITY_LEVEL.get(severity, "warning")


def at_or_above(level: Level, threshold: str) -> bool:
    """True when ``level`` is as severe as ``threshold`` or more (``never`` is above everything)."""
    return threshold in LEVELS and LEVELS.index(level) >= LEVELS.index(threshold)


@dataclass(frozen=True)
class Replacement:
    """Replace lines/columns ``start..end`` (1-based; end column exclusive; ``None`` columns mean
    whole lines) with ``text``."""

    start_line: int
    end_line: int
    text: str
    start_col: int | None = None
    end_col: int | None = None


@dataclass(frozen=True)
class Fix:
    description: str
    replacements: tuple[Replacement, ...]


@dataclass(frozen=True)
class DiffFinding:
    file: str
    rule: str  # a lint code (F821) or troupe/<kind>
    severity: str  # critical, major, minor, info (the daemon's evidence-based severity)
    message: str
    start_line: int
    end_line: int
    lane: Literal["static", "model"]
    start_col: int | None = None
    end_col: int | None = None
    fix: Fix | None = None
    fingerprint: str = ""

    @property
    def level(self) -> Level:
        return level_of(self.severity)

    def to_json(self) -> JsonDict:
        return {**asdict(self), "level": self.level}


@dataclass(frozen=True)
class StaticReview:
    findings: list[DiffFinding] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # ruff could not run on a file: the review is incomplete


def normalized_line(text: str, line: int) -> str:
    lines = text.splitlines()
    return " ".join(lines[line - 1].split()) if 1 <= line <= len(lines) else ""


def fingerprinted(scope: DiffScope, findings: Iterable[DiffFinding]) -> list[DiffFinding]:
    """The findings on changed lines only, in reading order, each with its fingerprint."""
    kept = []
    for finding in findings:
        changed = scope.file(finding.file)
        if changed is not None and changed.touches(finding.start_line, finding.end_line):
            kept.append((changed, finding))
    kept.sort(key=lambda p: (p[1].file, p[1].start_line, p[1].start_col or 0, p[1].rule, p[1].message))
    seen: Counter[tuple[str, str, str]] = Counter()
    out = []
    for changed, finding in kept:
        key = (finding.rule, finding.file, normalized_line(changed.text, finding.start_line))
        seen[key] += 1
        digest = hashlib.sha256("\0".join(key).encode("utf-8", "surrogatepass")).hexdigest()[:32]
        out.append(replace(finding, fingerprint=f"{digest}:{seen[key]}"))
    return out


def _lint_fix(fix: LintFix | None) -> Fix | None:
    if fix is None or not fix.edits:
        return None
    return Fix(f"{fix.message} ({fix.applicability} fix)", tuple(
        Replacement(e.start_line, e.end_line, e.text, e.start_col, e.end_col) for e in fix.edits))


async def static_review(scope: DiffScope) -> StaticReview:
    """Ruff on each changed file's text under review (the project's ruff configuration honoured)."""
    from daemon.lint.ruff import lint_text

    slots = asyncio.Semaphore(LINT_CONCURRENCY)

    async def lint(changed: ChangedFile) -> LintResult:
        async with slots:
            return await lint_text(str(scope.root / changed.path), changed.text, str(scope.root))

    results = await asyncio.gather(*(lint(f) for f in scope.files))
    findings, errors = [], []
    for changed, result in zip(scope.files, results, strict=True):
        if result.error:
            errors.append(f"{changed.path}: {result.error}")
        findings += [DiffFinding(changed.path, d.rule, d.severity, d.message, d.start_line, d.end_line, "static",
                                 d.start_col, d.end_col, _lint_fix(d.fix)) for d in result.diagnostics]
    return StaticReview(fingerprinted(scope, findings), errors)


def model_rule(rule: str | None) -> str:
    if not rule:
        return MODEL_RULE
    return rule if rule.startswith("troupe/") else f"troupe/{rule}"


def model_findings(scope: DiffScope, found: Sequence[FindingInfo]) -> list[DiffFinding]:
    """A review job's findings (``FindingInfo``) that the model made, on the changed lines. Lint
    findings are left to the static lane, which read the exact text under review."""
    from daemon.lint import is_lint_rule

    drafts = []
    for f in found:
        if is_lint_rule(f.rule):
            continue
        end = max(f.start_line, f.end_line or f.start_line)
        fix = None
        if f.suggested_fix is not None:  # the finding's whole lines, rewritten (as the editor's code action)
            fix = Fix("Troupe's suggested fix", (Replacement(f.start_line, end, f.suggested_fix.removesuffix("\n")),))
        drafts.append(DiffFinding(f.file, model_rule(f.rule), str(f.severity), f.message, f.start_line, end, "model",
                                  fix=fix))
    return fingerprinted(scope, drafts)
