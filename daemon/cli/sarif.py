"""A diff review as SARIF 2.1.0, the format code scanning reads (GitHub, GitLab, SonarQube import).

Plain dicts, checked against the published OASIS schema in tests
(tests/fixtures/sarif/sarif-schema-2.1.0.json). One run, one tool driver ("Troupe") with a rule
per rule id seen (lint codes such as ``F821``, ``troupe/review`` for the reviewer); a result's
level comes from the finding's severity (critical/major: error, minor: warning, info: note); its
region is the finding's lines (and columns when known); a fix becomes SARIF ``fixes``; the
fingerprint goes to ``partialFingerprints``. Files the review skipped are tool notifications.
"""

from __future__ import annotations

from urllib.parse import quote

from daemon.json_types import JsonDict
from daemon.review.gitdiff import DiffScope
from daemon.review.scoped import DiffFinding, Replacement, level_of

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
FINGERPRINT_KEY = "troupeLineHash/v1"
SRCROOT = "%SRCROOT%"


def _region(start_line: int, end_line: int, start_col: int | None, end_col: int | None) -> dict[str, int]:
    region = {"startLine": start_line, "endLine": max(start_line, end_line)}
    if start_col is not None:
        region["startColumn"] = start_col
    if end_col is not None and start_col is not None:
        region["endColumn"] = end_col if end_line > start_line else max(end_col, start_col)
    return region


def _location(path: str) -> dict[str, str]:
    return {"uri": quote(path), "uriBaseId": SRCROOT}  # a URI reference: "my file.py" is "my%20file.py"


def _replacement(r: Replacement) -> JsonDict:
    return {"deletedRegion": _region(r.start_line, r.end_line, r.start_col, r.end_col),
            "insertedContent": {"text": r.text}}


def _rule(rule_id: str, first: DiffFinding) -> JsonDict:
    if first.lane == "static":
        text = f"ruff rule {rule_id}" if rule_id != "invalid-syntax" else "the file does not parse"
    else:
        text = "a finding of Troupe's reviewer" if rule_id == "troupe/review" else f"Troupe: {rule_id[7:]}"
    return {"id": rule_id, "shortDescription": {"text": text},
            "defaultConfiguration": {"level": level_of(first.severity)}}


def _result(finding: DiffFinding, rule_index: int) -> JsonDict:
    result: JsonDict = {
        "ruleId": finding.rule, "ruleIndex": rule_index, "level": finding.level,
        "message": {"text": finding.message},
        "locations": [{"physicalLocation": {
            "artifactLocation": _location(finding.file),
            "region": _region(finding.start_line, finding.end_line, finding.start_col, finding.end_col)}}],
        "partialFingerprints": {FINGERPRINT_KEY: finding.fingerprint},
        "properties": {"severity": finding.severity, "lane": finding.lane},
    }
    if finding.fix is not None:
        result["fixes"] = [{"description": {"text": finding.fix.description}, "artifactChanges": [{
            "artifactLocation": _location(finding.file),
            "replacements": [_replacement(r) for r in finding.fix.replacements]}]}]
    return result


def sarif_log(scope: DiffScope, findings: list[DiffFinding], *, version: str, errors: list[str] | None = None,
              notes: list[str] | None = None) -> JsonDict:
    """The SARIF log of one diff review (``errors``: what made the review incomplete)."""
    rules: dict[str, int] = {}
    driver_rules: list[JsonDict] = []
    results = []
    for finding in findings:
        if finding.rule not in rules:
            rules[finding.rule] = len(driver_rules)
            driver_rules.append(_rule(finding.rule, finding))
        results.append(_result(finding, rules[finding.rule]))
    notifications: list[JsonDict] = [
        {"level": "note", "message": {"text": f"{s.path}: {s.reason}"},
         "locations": [{"physicalLocation": {"artifactLocation": _location(s.path)}}]} for s in scope.skipped]
    notifications += [{"level": "note", "message": {"text": text}} for text in notes or []]
    notifications += [{"level": "error", "message": {"text": text}} for text in errors or []]
    invocation: JsonDict = {"executionSuccessful": not errors}
    if notifications:
        invocation["toolExecutionNotifications"] = notifications
    run: JsonDict = {
        "tool": {"driver": {"name": "Troupe", "version": version, "rules": driver_rules}},
        "invocations": [invocation],
        "columnKind": "unicodeCodePoints",
        "results": results,
        "properties": {"base": scope.base, **({"baseCommit": scope.base_commit} if scope.base_commit else {})},
    }
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}
