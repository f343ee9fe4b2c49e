"""Links to the run viewer: ``troupe jobs --open ID`` opens one; ``troupe ask`` prints one."""

from __future__ import annotations

import sys
import webbrowser

from daemon.client import DaemonClient, DaemonError


async def viewer_link(client: DaemonClient, job_id: str | None) -> str:
    """A one-time link to the viewer on ``job_id`` (a unique prefix will do), or on the job list."""
    return (await client.viewer_link(job_id)).url


async def open_viewer(client: DaemonClient, job_id: str | None) -> int:
    url = await viewer_link(client, job_id)
    print(url)
    if not webbrowser.open(url):
        print("troupe: no browser could be started here; open the link above yourself", file=sys.stderr)
    return 0


async def print_viewer_link(client: DaemonClient, job_id: str) -> None:
    """One line on stderr to watch a job in the browser; nothing when the viewer is off (no TCP listener)."""
    try:
        url = await viewer_link(client, job_id)
    except DaemonError:
        return
    print(f"watch it in a browser: {url}", file=sys.stderr)
