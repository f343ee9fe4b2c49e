"""Where an editor's folder came from: its git top level and ``origin`` remote. A team server
answers the workspace cloned from that remote (the laptop daemon ignores it), and the folder is
then that workspace's copy on this machine (:attr:`lsp.server.TroupeServer.local_roots`)."""

from __future__ import annotations

import asyncio
import os


async def _git(folder: str, *args: str) -> str | None:
    try:
        proc = await asyncio.create_subprocess_exec("git", "-C", folder, *args, stdout=asyncio.subprocess.PIPE,
                                                    stderr=asyncio.subprocess.DEVNULL)
    except OSError:  # no git here
        return None
    out, _ = await proc.communicate()
    return (out.decode(errors="replace").strip() or None) if proc.returncode == 0 else None


async def origin_of(folder: str) -> tuple[str, str] | None:
    """(the real path of the folder's git top level, its origin's URL), or None without either."""
    top = await _git(folder, "rev-parse", "--show-toplevel")
    url = await _git(folder, "remote", "get-url", "origin") if top else None
    return (os.path.realpath(top), url) if top and url else None
