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
