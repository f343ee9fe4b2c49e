"""The loopback TCP listener (the run viewer's): on by default on a free port, off with
TROUPE_TCP_PORT=off, a fixed port when asked; always loopback, token (0600) and Host checked."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import stat
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from daemon.config import ConfigError
from daemon.service.options import DaemonOptions
from tests.daemon.conftest import DaemonProcess


async def pid_info(daemon: DaemonProcess) -> dict[str, Any]:
    pid_file = daemon.home / "daemon.pid"
    while not pid_file.exists():  # written once both listeners are up
        await asyncio.sleep(0.02)
    return json.loads(pid_file.read_text())


async def get(port: int, path: str, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    async with aiohttp.ClientSession() as session, session.get(f"http://127.0.0.1:{port}{path}",
                                                               headers=headers) as resp:
        return resp.status, await resp.json(content_type=None)


async def test_by_default_the_daemon_listens_on_a_free_loopback_port(make_daemon: Any) -> None:
    daemon = make_daemon().start()
    port = (await pid_info(daemon))["tcp_port"]
    assert isinstance(port, int) and port > 0
    token_file = daemon.home / "token"
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    token = token_file.read_text().strip()
    assert (await get(port, "/v1/health"))[0] == 401  # still needs the token
    status, _ = await get(port, "/v1/health", {"Authorization": f"Bearer {token}", "Host": "evil.example"})
    assert status == 403  # and a loopback Host
    status, health = await get(port, "/v1/health", {"Authorization": f"Bearer {token}"})
    assert status == 200 and health["tcp_port"] == port
    async with daemon.client() as client:
        assert (await client.health()).viewer == f"http://127.0.0.1:{port}/viewer/"
        link = await client.viewer_link()
    assert link.url.startswith(f"http://127.0.0.1:{port}/viewer/?token=") and token not in link.url


async def test_off_means_no_tcp_listener_and_no_token(make_daemon: Any) -> None:
    daemon = make_daemon(TROUPE_TCP_PORT="off").start()
    assert (await pid_info(daemon))["tcp_port"] is None
    assert not (daemon.home / "token").exists()
    async with daemon.client() as client:
        health = await client.health()
    assert health.tcp_port is None and health.viewer is None


async def test_a_fixed_port_is_used_and_a_taken_one_stops_the_daemon(make_daemon: Any, home: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        taken = holder.getsockname()[1]
        with pytest.raises(RuntimeError, match="TROUPE_TCP_PORT"):
            make_daemon(TROUPE_TCP_PORT=str(taken)).start()
    daemon = make_daemon(TROUPE_TCP_PORT=str(taken)).start()  # free again
    assert (await pid_info(daemon))["tcp_port"] == taken


async def test_a_weak_token_file_is_narrowed_or_replaced(make_daemon: Any, home: Path) -> None:
    token_file = home / "token"
    token_file.write_text("\n")  # empty: "Authorization: Bearer " must not pass
    os.chmod(token_file, 0o644)
    daemon = make_daemon().start()
    port = (await pid_info(daemon))["tcp_port"]
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    token = token_file.read_text().strip()
    assert len(token) >= 32
    assert (await get(port, "/v1/health", {"Authorization": "Bearer "}))[0] == 401
    assert (await get(port, "/v1/health", {"Authorization": f"Bearer {token}"}))[0] == 200


@pytest.mark.parametrize(("value", "port", "required"), [
    ("", 0, False), ("off", None, False), ("None", None, False), ("0", 0, True), ("8765", 8765, True)])
def test_tcp_port_option(monkeypatch: pytest.MonkeyPatch, value: str, port: int | None, required: bool) -> None:
    monkeypatch.setenv("TROUPE_TCP_PORT", value)
    options = DaemonOptions.from_env()
    assert (options.tcp_port, options.tcp_required) == (port, required)


@pytest.mark.parametrize("value", ["70000", "-1", "eighty"])
def test_a_bad_tcp_port_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("TROUPE_TCP_PORT", value)
    with pytest.raises(ConfigError, match="TROUPE_TCP_PORT"):
        DaemonOptions.from_env()
