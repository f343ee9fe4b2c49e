"""Who may open the viewer over loopback TCP, and what every page answer carries: the Host check,
the bearer token, one-time links traded for a cookie that opens the viewer and nothing else,
security headers, and assets confined to the package."""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from daemon.viewer.auth import ViewerAuth
from daemon.viewer.routes import STATIC
from tests.daemon.conftest import DaemonProcess, daemon_env
from tests.viewer.conftest import tcp_port, token, viewer_link


async def get(daemon: DaemonProcess, path: str, *, headers: dict[str, str] | None = None,
              cookies: dict[str, str] | None = None) -> tuple[int, dict[str, str], str, dict[str, Any]]:
    """GET over TCP without following redirects: (status, headers, body, cookies set)."""
    port = tcp_port(daemon)
    async with aiohttp.ClientSession(cookies=cookies) as session, session.get(
            f"http://127.0.0.1:{port}{path}", headers=headers, allow_redirects=False) as resp:
        return resp.status, dict(resp.headers), await resp.text(), {k: v for k, v in resp.cookies.items()}


def bearer(daemon: DaemonProcess) -> dict[str, str]:
    return {"Authorization": f"Bearer {token(daemon)}"}


async def test_without_credentials_the_page_says_how_to_get_a_link(viewer_daemon: DaemonProcess) -> None:
    status, _, body, _ = await get(viewer_daemon, "/viewer/")
    assert status == 401 and "troupe jobs --open" in body
    status, _, body, _ = await get(viewer_daemon, "/viewer/api/jobs")
    assert status == 401 and '"unauthorized"' in body


async def test_a_foreign_host_header_is_refused_even_with_the_token(viewer_daemon: DaemonProcess) -> None:
    status, _, body, _ = await get(viewer_daemon, "/viewer/", headers={**bearer(viewer_daemon),
                                                                        "Host": "evil.example:80"})
    assert status == 403 and "bad_host" in body


async def test_the_bearer_token_opens_the_page_with_strict_security_headers(viewer_daemon: DaemonProcess) -> None:
    status, headers, body, _ = await get(viewer_daemon, "/viewer/jobs/anything", headers=bearer(viewer_daemon))
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert '<script type="module" src="../static/app.js">' in body and "<script>" not in body
    csp = headers["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "default-src 'none'" in csp and "unsafe-inline" not in csp
    assert headers["X-Content-Type-Options"] == "nosniff" and headers["Referrer-Policy"] == "no-referrer"
    assert headers["X-Frame-Options"] == "DENY"


async def test_a_one_time_link_becomes_a_cookie_once(viewer_daemon: DaemonProcess) -> None:
    status, link = await viewer_link(viewer_daemon)
    assert status == 200 and link["expires_in"] > 0
    path = link["url"].split(str(tcp_port(viewer_daemon)), 1)[1]
    status, headers, _, cookies = await get(viewer_daemon, path)
    assert status == 303 and headers["Location"] == "./"
    cookie = headers["Set-Cookie"]
    # No Path: the browser scopes it to the viewer's root as it sees it (/viewer, or behind a proxy).
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path" not in cookie
    again, _, body, _ = await get(viewer_daemon, path)
    assert again == 401 and "already used or has expired" in body
    session = {"troupe_viewer": cookies["troupe_viewer"].value}
    status, _, body, _ = await get(viewer_daemon, "/viewer/api/jobs", cookies=session)
    assert status == 200 and '"jobs"' in body
    status, _, body, _ = await get(viewer_daemon, "/v1/jobs", cookies=session)
    assert status == 401, "the viewer's cookie must not open the API"
    status, _, _, _ = await get(viewer_daemon, "/viewer/api/jobs", cookies={"troupe_viewer": "forged"})
    assert status == 401


async def test_a_link_to_a_job_accepts_an_id_prefix_and_refuses_unknown_ids(viewer_daemon: DaemonProcess) -> None:
    async with viewer_daemon.client() as client:
        jobs = await client.jobs(limit=1)
    if jobs:
        status, link = await viewer_link(viewer_daemon, jobs[0].id[:8])
        assert status == 200 and f"/viewer/jobs/{jobs[0].id}?token=" in link["url"]
    status, reply = await viewer_link(viewer_daemon, "no-such-job")
    assert status == 404 and "troupe jobs" in reply["error"]["message"]


@pytest.mark.parametrize("name", ["..%2Ftoken", "%2E%2E%2F..%2Fauth.py", ".hidden.js", "auth.py", "missing.js"])
async def test_assets_are_only_the_packaged_html_js_and_css(viewer_daemon: DaemonProcess, name: str) -> None:
    status, _, body, _ = await get(viewer_daemon, f"/viewer/static/{name}", headers=bearer(viewer_daemon))
    assert status == 404 and token(viewer_daemon) not in body


async def test_a_module_is_served_as_javascript(viewer_daemon: DaemonProcess) -> None:
    status, headers, body, _ = await get(viewer_daemon, "/viewer/static/dom.js", headers=bearer(viewer_daemon))
    assert status == 200 and headers["Content-Type"].startswith("text/javascript")
    assert "textContent" in body


def test_the_page_code_has_no_html_sinks_and_loads_nothing_from_elsewhere() -> None:
    sinks = re.compile(r"\.(innerHTML|outerHTML)\s*=|insertAdjacentHTML|document\.write|\beval\(|new Function\(")
    remote = re.compile(r"(src|href)=\"(https?:)?//|@import|url\(\s*['\"]?(https?:)?//")
    for path in STATIC.iterdir():
        text = path.read_text()
        assert not sinks.search(text), f"{path.name} writes HTML: untrusted text must go in with textContent"
        assert not remote.search(text), f"{path.name} loads something from another origin"


async def test_without_a_tcp_listener_the_link_says_how_to_turn_it_on() -> None:
    home = Path(tempfile.mkdtemp(prefix="trv-", dir="/tmp"))
    daemon = DaemonProcess(home, daemon_env(home, TROUPE_TCP_PORT="off")).start()
    try:
        status, reply = await viewer_link(daemon)
    finally:
        daemon.stop()
        shutil.rmtree(home, ignore_errors=True)
    assert status == 409 and reply["error"]["code"] == "no_tcp_listener"
    assert "TROUPE_TCP_PORT=off" in reply["error"]["message"]


def test_codes_expire_are_spent_once_and_need_a_token() -> None:
    now = [0.0]
    auth = ViewerAuth("secret", link_ttl=10, clock=lambda: now[0])
    first, second = auth.new_code(), auth.new_code()
    assert auth.redeem(first) and not auth.redeem(first)
    now[0] = 11.0
    assert not auth.redeem(second)
    assert auth.cookie_ok(auth.session) and not auth.cookie_ok(None) and not auth.cookie_ok("x")
    assert auth.bearer_ok("Bearer secret") and not auth.bearer_ok("Bearer other")
    off = ViewerAuth("")
    assert not off.enabled and not off.cookie_ok(off.session) and not off.bearer_ok("Bearer ")
    with pytest.raises(RuntimeError):
        off.new_code()
