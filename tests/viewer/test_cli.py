"""`troupe jobs --open ID` prints a one-time link and hands it to the browser; `troupe ask` prints one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import aiohttp
from yarl import URL

from tests.daemon.conftest import REPO, DaemonProcess
from tests.viewer.conftest import make_repo, tcp_port


def troupe(daemon: DaemonProcess, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "daemon.cli.main", *args], env={**daemon.env, **env}, cwd=REPO,
                          capture_output=True, text=True, timeout=60)


async def test_jobs_open_prints_the_link_and_opens_it_in_the_browser(viewer_daemon: DaemonProcess,
                                                                      tmp_path: Path) -> None:
    async with viewer_daemon.client() as client:
        jobs = await client.jobs(limit=1)
    opened = tmp_path / "opened.txt"
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\necho "$1" >> {opened}\n')
    browser.chmod(0o755)
    target = jobs[0].id[:8] if jobs else ""
    result = troupe(viewer_daemon, "jobs", "--open", *([target] if target else []), BROWSER=str(browser))
    assert result.returncode == 0, result.stderr
    url = result.stdout.strip()
    port = tcp_port(viewer_daemon)
    expected = f"http://127.0.0.1:{port}/viewer/jobs/{jobs[0].id}?token=" if jobs else f"http://127.0.0.1:{port}/viewer/?token="
    assert url.startswith(expected)
    assert opened.read_text().split() == [url]
    async with aiohttp.ClientSession() as session:
        async with session.get(url, allow_redirects=False) as resp:  # a job's link goes to the root, unspent
            assert resp.status == 303
            if jobs:
                assert "troupe_viewer" not in resp.cookies and "next=jobs" in resp.headers["Location"]
                url = str(resp.url.join(URL(resp.headers["Location"])))
        if jobs:
            async with session.get(url, allow_redirects=False) as resp:
                assert resp.status == 303
        assert "troupe_viewer" in resp.cookies  # the one-time code became the viewer's cookie


def test_jobs_open_names_an_unknown_job(viewer_daemon: DaemonProcess) -> None:
    result = troupe(viewer_daemon, "jobs", "--open", "zzzz-no-such-job", BROWSER="/bin/false")
    assert result.returncode == 1 and "no job with an id starting 'zzzz-no-such-job'" in result.stderr


def test_ask_prints_a_link_to_watch_the_job(viewer_daemon: DaemonProcess, tmp_path: Path) -> None:
    repo = make_repo(tmp_path, "repo")
    opened = tmp_path / "browser-opened"
    browser = tmp_path / "browser.sh"
    browser.write_text(f"#!/bin/sh\necho \"$1\" > {opened}\n")
    browser.chmod(0o755)
    result = troupe(viewer_daemon, "ask", "where is add()?", "--workspace", str(repo), BROWSER=str(browser))
    assert result.returncode == 0, result.stderr
    port = tcp_port(viewer_daemon)
    assert f"watch it in a browser: http://127.0.0.1:{port}/viewer/jobs/" in result.stderr
    assert not opened.exists(), "`troupe ask` opened a browser by itself"
