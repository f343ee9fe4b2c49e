"""The README's MCP snippets are each client's shape, and the command they name starts a working server."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters, stdio_client

from tests.daemon.conftest import REPO, DaemonProcess
from tests.mcp.conftest import server_env


def mcp_snippets() -> dict[str, Any]:
    readme = (REPO / "README.md").read_text()
    section = readme.split("\n## MCP\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"\*\*(Claude Code|Cursor|VS Code)\*\*.*?```json\n(.*?)```", section, re.S)
    return {client: json.loads(text) for client, text in blocks}


def test_each_clients_snippet_has_that_clients_shape() -> None:
    snippets = mcp_snippets()
    assert set(snippets) == {"Claude Code", "Cursor", "VS Code"}
    claude = snippets["Claude Code"]["mcpServers"]["troupe"]
    assert claude == {"type": "stdio", "command": "troupe", "args": ["mcp"]}  # started in the project folder
    cursor = snippets["Cursor"]["mcpServers"]["troupe"]
    assert cursor["command"] == "troupe" and cursor["args"] == ["mcp", "--workspace", "${workspaceFolder}"]
    vscode = snippets["VS Code"]["servers"]["troupe"]  # VS Code's key is "servers", with a type
    assert vscode["type"] == "stdio" and vscode["args"] == cursor["args"]
    assert "claude mcp add troupe -- troupe mcp" in (REPO / "README.md").read_text()


async def test_the_snippets_command_serves_the_workspace_it_names(engine_daemon: DaemonProcess,
                                                                   repo: Path) -> None:
    server = mcp_snippets()["VS Code"]["servers"]["troupe"]
    args = [a.replace("${workspaceFolder}", str(repo)) for a in server["args"]]
    params = StdioServerParameters(command=sys.executable, args=["-m", "daemon.cli.main", *args],
                                   env=server_env(engine_daemon.home), cwd="/")  # not started in the project
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        info = await session.initialize()
        assert info.server_info.name == "troupe"
        result = await session.call_tool("findings", {"file": str(repo / "calc.py")})  # absolute, inside
        assert not result.is_error and result.structured_content["findings"] == []
        outside = await session.call_tool("findings", {"file": str(repo.parent / "calc.py")})  # outside ROOT
        assert outside.is_error and "absolute paths are not allowed" in outside.content[0].text
