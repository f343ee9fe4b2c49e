"""``review`` over MCP (files, or the hunks of a unified diff), ``findings``, the findings resources,
and ``test``."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.daemon.conftest import DaemonProcess
from tests.fakes.llm_server import FakeLLM
from tests.mcp.conftest import BUG_MESSAGE, CODE, PLANTED, ProgressLog, mcp_client, text_of


async def test_review_returns_the_findings_and_the_findings_tool_and_resources_hold_them(
        engine_daemon: DaemonProcess, repo: Path) -> None:
    progress = ProgressLog()
    async with mcp_client(engine_daemon, repo) as session:
        result = await session.call_tool("review", {"files": [str(repo / "calc.py")]}, progress_callback=progress)
        assert "static_check: 1 issue(s) in 1 file(s)" in progress.messages
        assert "running · review · reviewer" in progress.messages
        assert not result.is_error
        (finding,) = [f for f in result.structured_content["findings"] if f["message"] == BUG_MESSAGE]
        assert finding["file"] == "calc.py" and finding["start_line"] == 5
        assert f"calc.py:5: {finding['severity']}: {BUG_MESSAGE}" in text_of(result)

        listed = await session.call_tool("findings", {"file": "calc.py"})
        assert f"calc.py:5: {finding['severity']}: {BUG_MESSAGE}" in text_of(listed)
        held = listed.structured_content["findings"]
        assert [f["id"] for f in held if f["message"] == BUG_MESSAGE] == [finding["id"]]

        one = (await session.read_resource("troupe://findings/calc.py")).contents[0].text
        every = (await session.read_resource("troupe://findings")).contents[0].text
        assert BUG_MESSAGE in one
        assert every.startswith("## calc.py\n") and BUG_MESSAGE in every
        none = (await session.read_resource("troupe://findings/test_calc.py")).contents[0].text
        assert none == "no open findings\n"


async def test_a_workspace_the_team_has_not_worked_in_has_no_findings(engine_daemon: DaemonProcess,
                                                                      repo: Path) -> None:
    async with mcp_client(engine_daemon, repo) as session:
        result = await session.call_tool("findings", {})
        assert not result.is_error and text_of(result) == "no open findings"
        every = (await session.read_resource("troupe://findings")).contents[0].text
        assert every == "no open findings\n"


async def test_review_of_a_diff_reviews_its_hunks(engine_daemon: DaemonProcess, llm: FakeLLM, repo: Path) -> None:
    subprocess.run(["git", "-C", str(repo), "add", "."], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one"],
                   check=True)
    (repo / "calc.py").write_text(PLANTED + "\n\ndef mul(a, b):\n    return a + b\n")
    diff = subprocess.run(["git", "-C", str(repo), "diff"], check=True, capture_output=True, text=True).stdout
    llm.add_rule('[{"start_line": 9, "severity": "major", "message": "mul() adds", "quote": "return a + b"}]',
                 user="def mul(a, b)", times=1)
    async with mcp_client(engine_daemon, repo) as session:
        result = await session.call_tool("review", {"diff": diff})
        assert not result.is_error
        (finding,) = [f for f in result.structured_content["findings"] if f["message"] == "mul() adds"]
        assert (finding["file"], finding["start_line"]) == ("calc.py", 9)
        assert f"calc.py:9: {finding['severity']}: mul() adds" in text_of(result)
    (asked,) = llm.prompts_containing("def mul(a, b)")
    assert "return a + b" in asked.prompt


async def test_the_test_tool_runs_the_tests_explains_the_failure_and_proposes_a_fix(
        engine_daemon: DaemonProcess, llm: FakeLLM, repo: Path) -> None:
    llm.add_rule(CODE, user="Fix the code so the tests pass.", times=1)  # before the explain rule: both start alike
    llm.add_rule("<INFO> add() in calc.py:5 subtracts instead of adding.", user="The tests fail:", times=1)
    progress = ProgressLog()
    async with mcp_client(engine_daemon, repo) as session:
        result = await session.call_tool("test", {"files": ["calc.py"]}, progress_callback=progress)
        text = text_of(result)
        assert not result.is_error and result.structured_content["job"]["state"] == "succeeded"
        assert text.startswith("add() in calc.py:5 subtracts instead of adding.")
        assert "Tests: Tests PASSED: 1 passed" in text  # the fix, run on the scratch copy
        change = result.structured_content["change"]
        assert "+    return a + b" in change["diff"] and f"Proposed change {change['id']}" in text
        assert any(m.startswith("tests: Tests FAILED: 1 failed") for m in progress.messages)
        assert "running · explain · tester" in progress.messages and "running · fix · programmer" in progress.messages
    assert (repo / "calc.py").read_text() == PLANTED


def commit_all(repo: Path, message: str) -> None:
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", message],
                   check=True)


async def test_review_since_a_base_keeps_only_findings_on_the_changed_lines(
        engine_daemon: DaemonProcess, llm: FakeLLM, repo: Path) -> None:
    (repo / "test_calc.py").unlink()  # no failing test: the reviewer alone speaks for the model lane
    commit_all(repo, "one")  # calc.py: an unused import (line 1) and the planted bug (line 5)
    (repo / "calc.py").write_text(PLANTED + "\n\ndef mul(a, b):\n    return a + b + undefined_c\n")
    (repo / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00binary")
    commit_all(repo, "two")
    llm.add_rule('[{"start_line": 9, "severity": "major", "message": "mul() adds", "quote": "return a + b"}, '
                 '{"start_line": 5, "severity": "major", "message": "old news", "quote": "return a - b"}]',
                 user="def mul(a, b)")
    progress = ProgressLog()
    async with mcp_client(engine_daemon, repo) as session:
        result = await session.call_tool("review", {"base": "HEAD~1"}, progress_callback=progress)
        text = text_of(result)
        assert not result.is_error, text
        found = {(f["file"], f["start_line"], f["rule"], f["lane"]) for f in result.structured_content["findings"]}
        assert ("calc.py", 9, "F821", "static") in found  # undefined_c, on an added line
        assert any(f[1] == 9 and f[3] == "model" for f in found)  # the reviewer's "mul() adds"
        assert all(f[1] == 9 for f in found)  # line 1's unused import and line 5's bug were not changed
        assert "skipped logo.png: binary: not reviewed" in text
        assert text.splitlines()[-1] == ("1 changed file(s) reviewed against HEAD~1 (static and model lanes): "
                                         f"{len(found)} finding(s) on the changed lines")
        assert progress.messages and progress.messages[0].startswith("review job ")
        assert all("undefined_c" in asked.prompt for asked in llm.prompts_containing("def mul(a, b)"))

        before = len(llm.requests)
        fast = await session.call_tool("review", {"base": "HEAD~1", "static_only": True})
        assert [f["rule"] for f in fast.structured_content["findings"]] == ["F821"]
        assert fast.structured_content["job"] is None and len(llm.requests) == before  # no model, no job


async def test_review_of_a_base_that_does_not_exist_is_a_clear_error_and_starts_nothing(
        engine_daemon: DaemonProcess, llm: FakeLLM, repo: Path) -> None:
    commit_all(repo, "one")
    async with engine_daemon.client() as client:
        before = {job.id for job in await client.jobs(limit=1000)}
    async with mcp_client(engine_daemon, repo) as session:
        result = await session.call_tool("review", {"base": "no-such-branch"})
        assert result.is_error
        assert f"the base 'no-such-branch' is not a commit, branch or tag in {repo}" in text_of(result)
        both = await session.call_tool("review", {"base": "HEAD", "diff": "--- a/x\n+++ b/x\n"})
        assert both.is_error and "give one of base, staged or diff" in text_of(both)
    async with engine_daemon.client() as client:
        assert {job.id for job in await client.jobs(limit=1000)} == before
    assert not llm.requests
