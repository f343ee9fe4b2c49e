"""When the daemon goes away the server says so once, keeps answering, and recovers by itself
when the daemon is back. These tests run their own daemon (the scripted executor, which starts
in a fraction of the engine's time) so that killing it disturbs no other test."""

from __future__ import annotations

import asyncio
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.client import LanguageClient as PlainClient

from lsp.rpc import DAEMON_UNREACHABLE
from tests.daemon.conftest import REPO, DaemonProcess, daemon_env
from tests.lsp.conftest import lsp_env, new_repo, until, uri_of

UNREACHABLE = "cannot reach the daemon"


@pytest.fixture
def home() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="tro-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


async def test_a_killed_daemon_is_reported_once_and_the_server_recovers_when_it_restarts(
        home: Path, open_editor: Any) -> None:
    daemon = DaemonProcess(home, daemon_env(home)).start()
    try:
        root = new_repo(home, "outage", {"calc.py": "x = 1\n"})
        editor = await open_editor(home, [root])
        await editor.registered(root)
        calc = root / "calc.py"
        editor.open(calc, "x = 1\n")
        editor.save(calc, "x = 1\n")
        await until(lambda: editor.troupe_diagnostics(calc, "scripted review of calc.py"), what="a diagnostic")

        daemon.kill9()
        await until(lambda: editor.shown(UNREACHABLE), what="the outage message")
        with pytest.raises(JsonRpcException) as caught:
            await editor.command("troupe.review", {"file": uri_of(calc)})
        assert caught.value.code == DAEMON_UNREACHABLE and "cannot reach the Troupe daemon" in caught.value.message
        status = await editor.status()  # still serving
        assert status.daemon == "unreachable"
        assert editor.troupe_diagnostics(calc, "scripted review of calc.py")  # the last known findings stay
        await asyncio.sleep(1.5)  # several reconnection attempts fail meanwhile
        assert len(editor.shown(UNREACHABLE)) == 1
        assert [n.daemon for n in editor.notifications("troupe/status")].count("unreachable") == 1

        daemon.start()
        await until(lambda: editor.shown("reconnected to the daemon"), timeout=20, what="the reconnection")
        assert (await editor.status()).daemon == "connected"
        other = root / "other.py"
        editor.open(other, "y = 1\n")
        editor.save(other, "y = 1\n")  # the watcher and the event stream work again
        await until(lambda: editor.troupe_diagnostics(other, "scripted review of other.py"), what="a new review")
    finally:
        daemon.stop()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def connect(port: int, timeout: float = 20.0) -> PlainClient:
    client = PlainClient("tcp-test", "1")
    for _ in range(int(timeout / 0.05)):
        try:
            await client.start_tcp("127.0.0.1", port)
            return client
        except OSError:
            await asyncio.sleep(0.05)
    raise AssertionError(f"the server never listened on port {port}")


async def test_over_tcp_without_a_daemon_the_server_initializes_says_so_and_answers(home: Path) -> None:
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "lsp", "--tcp", "--port", str(port)], env=lsp_env(home),
                              cwd=REPO, stderr=subprocess.DEVNULL)
    try:
        client = await connect(port)
        shown: list[str] = []
        client.feature(types.WINDOW_SHOW_MESSAGE)(lambda params: shown.append(params.message))
        result = await client.initialize_async(types.InitializeParams(
            capabilities=types.ClientCapabilities(), workspace_folders=[
                types.WorkspaceFolder(uri=uri_of(home), name="home")]))
        assert "troupe.ask" in result.capabilities.execute_command_provider.commands
        client.initialized(types.InitializedParams())
        await until(lambda: [m for m in shown if UNREACHABLE in m], what="the unreachable message")
        status = await client.protocol.send_request_async("troupe/getStatus", {})
        assert status.daemon == "unreachable"
        await client.shutdown_async(None)
        client.exit(None)
        assert await asyncio.to_thread(server.wait, 10) == 0
        await client.stop()
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(5)
