"""``ask`` over MCP: the team's answer comes back as the tool result, with progress from the daemon's
JobProgress on the way, and the job's transcript is a resource."""

from __future__ import annotations

from pathlib import Path

from tests.daemon.conftest import DaemonProcess
from tests.fakes.llm_server import FakeLLM
from tests.mcp.conftest import ProgressLog, mcp_client, text_of

TOOLS = {"ask", "review", "change", "apply_change", "discard_change", "findings", "test", "job_status", "cancel",
         "answer"}


async def test_the_server_offers_every_tool_with_a_typed_input_schema(engine_daemon: DaemonProcess,
                                                                      repo: Path) -> None:
    async with mcp_client(engine_daemon, repo) as session:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert set(tools) == TOOLS
        ask = tools["ask"].input_schema
        assert ask["required"] == ["question"] and ask["properties"]["question"]["type"] == "string"
        assert tools["review"].input_schema["properties"]["diff"]["anyOf"][0] == {"type": "string"}
        assert tools["apply_change"].annotations.destructive_hint is True
        assert tools["findings"].annotations.read_only_hint is True


async def test_ask_answers_and_reports_the_jobs_progress(engine_daemon: DaemonProcess, llm: FakeLLM,
                                                         repo: Path) -> None:
    llm.add_rule("<INFO> add() is defined in calc.py at line 4.", user="Question: where is add() defined", times=1)
    progress = ProgressLog()
    async with mcp_client(engine_daemon, repo) as session:
        result = await session.call_tool("ask", {"question": "where is add() defined?", "files": ["calc.py"]},
                                          progress_callback=progress)
        job = result.structured_content["job"]
        assert not result.is_error
        assert text_of(result).startswith("add() is defined in calc.py at line 4.")
        assert job["state"] == "succeeded" and job["kind"] == "ask"

        counts = [p for p, _, _ in progress.reports]
        assert counts == sorted(set(counts)) and len(counts) >= 3  # each notification moves the bar on
        assert progress.messages[0] == f"ask job {job['id']} queued"
        assert "running · answer · guide" in progress.messages
        assert progress.messages[-1].startswith("succeeded")

        status = await session.call_tool("job_status", {"job_id": job["id"]})
        assert status.structured_content["job"]["state"] == "succeeded"
        assert "add() is defined in calc.py at line 4." in text_of(status)

        transcript = (await session.read_resource(f"troupe://jobs/{job['id']}/transcript")).contents[0].text
        assert transcript.startswith("# ") and f"job {job['id']} (succeeded)" in transcript
        assert "## answer" in transcript and "context ok: 2 file(s) shown" in transcript
        assert "Question: where is add() defined?" in transcript.split("cto → guide:", 1)[1]  # who asked whom
        assert "guide → cto: <INFO> add() is defined in calc.py at line 4." in transcript
        assert transcript.rstrip().endswith("[succeeded]")
