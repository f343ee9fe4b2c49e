"""Bad input over MCP gets a clear tool error and loses nothing: malformed arguments, paths that leave
the workspace; a cancelled request cancels its daemon job."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from tests.daemon.conftest import DaemonProcess
from tests.fakes.llm_server import FakeLLM
from tests.mcp.conftest import PLANTED, ProgressLog, mcp_client, text_of, until


async def job_ids(daemon: DaemonProcess) -> set[str]:
    async with daemon.client() as client:
        return {job.id for job in await client.jobs(limit=1000)}


async def test_cancelling_the_request_cancels_the_daemon_job(engine_daemon: DaemonProcess, llm: FakeLLM,
                                                             repo: Path) -> None:
    llm.fail_next("hang", seconds=30)  # the team thinks for a long time
    progress = ProgressLog()
    async with mcp_client(engine_daemon, repo) as session:
        async with anyio.create_task_group() as calls:
            calls.start_soon(lambda: session.call_tool("ask", {"question": "explain add()"},
                                                       progress_callback=progress))
            await until(lambda: llm.prompts_containing("explain add()"), what="the model call to start")
            job_id = progress.messages[0].split()[2]
            calls.cancel_scope.cancel()  # the client gives up on the call: notifications/cancelled

        async with engine_daemon.client() as client:

            async def cancelled() -> bool:
                return (await client.job(job_id)).state == "cancelled"

            await until(cancelled, what="the job to be cancelled")
        after = await session.call_tool("job_status", {"job_id": job_id})  # the session goes on
        assert after.structured_content["job"]["state"] == "cancelled"


@pytest.mark.parametrize(("tool", "arguments", "says"), [
    ("ask", {"question": 5}, "question\n  Input should be a valid string"),
    ("ask", {}, "question\n  Field required"),
    ("ask", {"question": ""}, "String should have at least 1 character"),
    ("review", {"files": "calc.py"}, "files\n  Input should be a valid list"),
    ("job_status", {"job_id": "j", "wait": "soon"}, "wait\n  Input should be a valid boolean"),
    ("review", {}, "a review job needs files"),
])
async def test_a_malformed_argument_is_a_clear_tool_error_and_creates_no_job(
        engine_daemon: DaemonProcess, repo: Path, tool: str, arguments: dict[str, Any], says: str) -> None:
    before = await job_ids(engine_daemon)
    async with mcp_client(engine_daemon, repo) as session:
        result = await session.call_tool(tool, arguments)
        assert result.is_error and f"Error executing tool {tool}: " in text_of(result) and says in text_of(result)
        fine = await session.call_tool("findings", {})  # the server and the daemon are still fine
        assert not fine.is_error
    assert await job_ids(engine_daemon) == before


async def test_an_unknown_tool_is_refused(engine_daemon: DaemonProcess, repo: Path) -> None:
    async with mcp_client(engine_daemon, repo) as session:
        result = await session.call_tool("deploy", {})
        assert result.is_error and text_of(result) == "Unknown tool: deploy"


async def test_a_path_outside_the_workspace_is_refused_and_nothing_changes(
        engine_daemon: DaemonProcess, repo: Path) -> None:
    outside = repo.parent / f"{repo.name}-outside.py"
    outside.write_text("SECRET = 1\n")
    (repo / "link.py").symlink_to(outside)
    before = await job_ids(engine_daemon)
    async with mcp_client(engine_daemon, repo) as session:
        for tool, arguments, says in [
                ("review", {"files": [f"../{outside.name}"]}, f"file '../{outside.name}' must be a path inside"),
                ("review", {"files": [str(outside)]}, f"file '{outside}' must be a path inside the workspace"),
                ("review", {"files": ["link.py"]}, "'link.py' is a symlink leading outside the workspace"),
                ("change", {"request": "x", "files": ["/etc/passwd"]}, "file '/etc/passwd' must be a path inside"),
                ("ask", {"question": "x", "files": ["calc.py", "../../etc/passwd"]}, "'../../etc/passwd' must be"),
                ("findings", {"file": f"../{outside.name}"}, "'..' would leave the workspace")]:
            result = await session.call_tool(tool, arguments)
            assert result.is_error and "Troupe refused the request: " in text_of(result) and says in text_of(result)
        with pytest.raises(MCPError, match="Unknown resource"):
            await session.read_resource(f"troupe://findings/..%2F{outside.name}")
    assert await job_ids(engine_daemon) == before
    assert outside.read_text() == "SECRET = 1\n" and (repo / "calc.py").read_text() == PLANTED
