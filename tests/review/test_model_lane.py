"""``troupe review --diff BASE --model``: the static checks plus a review job in a real daemon (the
agent engine, the fake OpenAI-compatible model); the model's findings off the changed lines are
not reported, its fix becomes a SARIF fix, and a daemon that cannot be reached is exit status 2."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest

from tests.daemon.conftest import DaemonProcess, daemon_env
from tests.fakes.llm_server import FakeLLM
from tests.review.conftest import GitRepo, new_repo, troupe
from tests.review.test_sarif import SCHEMA

BASE = "def add(a, b):\n    return a + b\n\n\ndef scale(x):\n    return x * 3\n"
CHANGED = "import os\n\n\ndef add(a, b):\n    return a - b\n\n\ndef scale(x):\n    return x * 3\n"
REVIEW = json.dumps([
    {"start_line": 5, "severity": "major", "message": "add() subtracts", "quote": "return a - b",
     "replacement": "    return a + b"},
    {"start_line": 9, "severity": "minor", "message": "scale() triples, unchanged code", "quote": "return x * 3"},
])


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLM]:
    fake = FakeLLM().start_in_thread()
    fake.default_reply = REVIEW
    yield fake
    fake.stop_thread()


@pytest.fixture(scope="module")
def engine_daemon(llm: FakeLLM) -> Iterator[DaemonProcess]:
    home = Path(tempfile.mkdtemp(prefix="trr-", dir="/tmp"))
    env = daemon_env(home, **llm.env(), TROUPE_EXECUTOR="daemon.jobs.engine:EngineExecutor", TROUPE_EXPERIENCE="off")
    daemon = DaemonProcess(home, env).start()
    yield daemon
    daemon.stop()
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def changed(tmp_path: Path) -> GitRepo:
    repo = new_repo(tmp_path / "proj")
    repo.commit("base", **{"calc.py": BASE})
    repo.commit("change", **{"calc.py": CHANGED})
    return repo


def test_the_model_lane_reports_the_reviewers_findings_on_the_changed_lines_only(
        engine_daemon: DaemonProcess, llm: FakeLLM, changed: GitRepo) -> None:
    proc = troupe(changed.root, "review", "--diff", "HEAD~1", "--model", "--format", "json", home=engine_daemon.home)
    report = json.loads(proc.stdout)
    found = [(f["rule"], f["start_line"], f["lane"]) for f in report["findings"]]
    assert found == [("F401", 1, "static"), ("troupe/review", 5, "model")], proc.stderr
    model = report["findings"][1]
    assert model["message"] == "add() subtracts"
    assert model["fix"]["replacements"] == [{"start_line": 5, "end_line": 5, "text": "    return a + b",
                                             "start_col": None, "end_col": None}]
    assert report["lane"] == "model" and report["job_id"]
    prompts = [r.prompt for r in llm.prompts_containing("return a - b")]
    assert any("changed hunks" in p for p in prompts), "the hunks reached the model"

    async def stored() -> list[tuple[int, str]]:
        async with engine_daemon.client() as client:
            return [(f.start_line, f.message) for f in await client.findings(str(changed.root))
                    if f.job_id == report["job_id"] and f.rule is None]

    # the reviewer also spoke of an unchanged line: the daemon's job itself drops that (a review of a change
    # speaks about the change), so neither the store nor the report holds it
    assert asyncio.run(stored()) == [(5, "add() subtracts")]
    assert proc.returncode == (1 if model["level"] == "error" else 0)


def test_a_model_finding_is_a_troupe_rule_with_a_sarif_fix(engine_daemon: DaemonProcess, changed: GitRepo) -> None:
    proc = troupe(changed.root, "review", "--diff", "HEAD~1", "--model", "--format", "sarif", "--fail-on", "never",
                  home=engine_daemon.home)
    assert proc.returncode == 0, proc.stderr
    log = json.loads(proc.stdout)
    jsonschema.validate(log, SCHEMA)
    (run,) = log["runs"]
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == ["F401", "troupe/review"]
    (result,) = [r for r in run["results"] if r["ruleId"] == "troupe/review"]
    assert result["locations"][0]["physicalLocation"]["region"] == {"startLine": 5, "endLine": 5}
    (replacement,) = result["fixes"][0]["artifactChanges"][0]["replacements"]
    assert replacement == {"deletedRegion": {"startLine": 5, "endLine": 5},
                           "insertedContent": {"text": "    return a + b"}}


def test_without_a_daemon_the_model_lane_fails_with_exit_2_and_says_why(changed: GitRepo, tmp_path: Path) -> None:
    proc = troupe(changed.root, "review", "--diff", "HEAD~1", "--model", home=tmp_path / "nobody-home",
                  TROUPE_AUTOSTART="0")
    assert proc.returncode == 2
    assert "the model lane could not run" in proc.stderr
    assert "[F401]" in proc.stdout  # the static lane's findings are still shown


def test_the_ci_recipes_review_step_writes_sarif_and_reports_the_exit_status(
        engine_daemon: DaemonProcess, changed: GitRepo, tmp_path: Path) -> None:
    from tests.review.test_ci_recipe import BIN, step

    changed.git("update-ref", "refs/remotes/origin/main", "HEAD~1")  # what actions/checkout's fetch-depth 0 gives
    outputs = tmp_path / "github-output"
    env = daemon_env(engine_daemon.home, BASE="origin/main", GITHUB_OUTPUT=str(outputs))
    env["PATH"] = f"{BIN}:{env['PATH']}"
    script = step("Review the changed lines")["run"]
    proc = subprocess.run(["bash", "-e", "-c", script], cwd=changed.root, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    log = json.loads((changed.root / "troupe.sarif").read_text())
    jsonschema.validate(log, SCHEMA)
    levels = {r["ruleId"]: r["level"] for r in log["runs"][0]["results"]}
    assert set(levels) == {"F401", "troupe/review"}, proc.stderr
    expected = 1 if "error" in levels.values() else 0
    assert outputs.read_text() == f"status={expected}\n"

    changed.git("update-ref", "-d", "refs/remotes/origin/main")  # a base the clone lacks: nothing to upload
    outputs.write_text("")
    proc = subprocess.run(["bash", "-e", "-c", script], cwd=changed.root, env=env, capture_output=True, text=True,
                          timeout=120)
    assert not (changed.root / "troupe.sarif").exists() and outputs.read_text() == "status=2\n"
    assert "the base 'origin/main' is not a commit" in proc.stderr


def test_staged_with_the_model_says_when_the_working_tree_differs_from_the_index(
        engine_daemon: DaemonProcess, changed: GitRepo) -> None:
    changed.write("calc.py", CHANGED + "\n\ndef half(x):\n    return x / 2\n")
    changed.git("add", "calc.py")
    changed.write("calc.py", CHANGED + "\n\ndef half(x):\n    return x // 2\n")  # not staged
    proc = troupe(changed.root, "review", "--staged", "--model", "--format", "json", "--fail-on", "never",
                  home=engine_daemon.home)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["notes"] == ["unstaged changes in calc.py: the model reviewed the working tree's version, "
                               "the static checks the staged one"]
    assert "· unstaged changes in calc.py" in proc.stderr
    assert report["files"][0]["lines"] == [[10, 13]]  # the staged lines, not the working tree's
