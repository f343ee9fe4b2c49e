"""``troupe review --diff BASE --format sarif``: valid SARIF 2.1.0 (checked against the OASIS schema),
with rules, levels from severity, regions, ruff's fixes as SARIF fixes, and fingerprints that
survive lines moving."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.review.conftest import GitRepo, troupe

SCHEMA = json.loads((Path(__file__).parents[1] / "fixtures" / "sarif" / "sarif-schema-2.1.0.json").read_text())


def sarif(repo: GitRepo, *args: str) -> dict[str, Any]:
    proc = troupe(repo.root, "review", "--diff", "HEAD~1", "--format", "sarif", *args)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def assert_valid(log: dict[str, Any]) -> None:
    errors = sorted(jsonschema.Draft4Validator(SCHEMA).iter_errors(log), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors)


def test_the_schema_rejects_what_is_not_sarif() -> None:  # the check below can fail
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"version": "2.1.0", "runs": [{"results": []}]}, SCHEMA)  # a run without its tool


def test_the_sarif_log_validates_against_the_sarif_2_1_0_schema(two_commits: GitRepo) -> None:
    two_commits.write("logo.png", b"\x89PNG\0\x01")
    two_commits.write("my module.py", "print(spaced_out)\n")
    two_commits.git("add", "-A")
    log = sarif(two_commits)
    assert_valid(log)
    assert log["version"] == "2.1.0"
    (run,) = log["runs"]
    assert run["tool"]["driver"]["name"] == "Troupe"
    notes = [n["message"]["text"] for n in run["invocations"][0]["toolExecutionNotifications"]]
    assert notes == ["logo.png: binary: not reviewed"] and run["invocations"][0]["executionSuccessful"]
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in run["results"]}
    assert uris == {"calc.py", "my%20module.py"}


def test_results_carry_rule_level_region_and_ruffs_fix(two_commits: GitRepo) -> None:
    (run,) = sarif(two_commits)["runs"]
    rules = [r["id"] for r in run["tool"]["driver"]["rules"]]
    by_rule = {r["ruleId"]: r for r in run["results"]}
    assert sorted(rules) == ["F401", "F821"] and set(by_rule) == {"F401", "F821"}
    undefined, unused = by_rule["F821"], by_rule["F401"]
    assert rules[undefined["ruleIndex"]] == "F821"
    assert undefined["level"] == "error" and unused["level"] == "warning"
    assert undefined["message"]["text"] == "Undefined name `offset`"
    region = undefined["locations"][0]["physicalLocation"]["region"]
    assert region == {"startLine": 10, "endLine": 10, "startColumn": 22, "endColumn": 28}
    assert "fixes" not in undefined
    (fix,) = unused["fixes"]
    (change,) = fix["artifactChanges"]
    assert change["artifactLocation"]["uri"] == "calc.py"
    assert change["replacements"] == [{"deletedRegion": {"startLine": 2, "endLine": 3, "startColumn": 1,
                                                         "endColumn": 1}, "insertedContent": {"text": ""}}]
    assert "safe fix" in fix["description"]["text"]


def fingerprints(log: dict[str, Any]) -> dict[tuple[str, int], str]:
    return {(r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"]):
            r["partialFingerprints"]["troupeLineHash/v1"] for r in log["runs"][0]["results"]}


def test_fingerprints_are_identical_across_runs_and_survive_lines_moving(two_commits: GitRepo) -> None:
    first, second = fingerprints(sarif(two_commits)), fingerprints(sarif(two_commits))
    assert first == second and len(set(first.values())) == 2
    text = (two_commits.root / "calc.py").read_text()
    two_commits.write("calc.py", '"""Sums."""\n\n' + text)  # two lines above: the findings move down
    moved = fingerprints(sarif(two_commits))
    assert moved[("F821", 12)] == first[("F821", 10)] and moved[("F401", 4)] == first[("F401", 2)]
    two_commits.write("calc.py", text.replace("sum(xs) + offset", "max(xs) + offset"))  # the line itself changed
    assert fingerprints(sarif(two_commits))[("F821", 10)] != first[("F821", 10)]


def test_two_identical_findings_on_identical_lines_get_distinct_fingerprints(two_commits: GitRepo) -> None:
    two_commits.write("calc.py", (two_commits.root / "calc.py").read_text() + "print(nope)\nprint(nope)\n")
    prints = [fp for (rule, line), fp in fingerprints(sarif(two_commits)).items() if rule == "F821" and line > 10]
    assert len(prints) == 2 and len(set(prints)) == 2
