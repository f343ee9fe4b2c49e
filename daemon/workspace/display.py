"""A virtual X display (``Xvfb``) for running GUI programs where there is no screen: the build
chain's run check and ``troupe eval build`` start Tk, pygame or Qt programs under it."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from daemon.workspace.files import list_repo_files

_GUI_IMPORT = re.compile(
    r"^\s*(?:import|from)\s+(?:tkinter|Tkinter|turtle|pygame|PyQt[456]|PySide[26]?|kivy|wx|pyglet|arcade|"
    r"customtkinter|ttkbootstrap)\b", re.MULTILINE)


@dataclass
class Display:
    """A virtual X display for the runs, or why there is none (``name`` None)."""

    name: str | None
    note: str = ""

    def env(self) -> dict[str, str]:
        return {"DISPLAY": self.name} if self.name else {}


@contextlib.asynccontextmanager
async def virtual_display(seconds: float = 10.0) -> AsyncIterator[Display]:
    """An ``Xvfb`` server on a free display number (``-displayfd``) for the length of the block.

    Where Xvfb is not installed or does not start, yields a :class:`Display` without a name whose
    note says so (a sentence without its full stop); GUI programs are then not run (see :func:`is_gui`)."""
    xvfb = shutil.which("Xvfb")
    if xvfb is None:
        yield Display(None, "Xvfb is not installed (Debian: apt-get install xvfb): GUI programs were not run")
        return
    read_end, write_end = os.pipe()
    try:
        process = await asyncio.create_subprocess_exec(
            xvfb, "-displayfd", str(write_end), "-nolisten", "tcp", "-screen", "0", "1024x768x24",
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL, pass_fds=(write_end,), start_new_session=True)
    except OSError as exc:
        os.close(read_end)
        yield Display(None, f"Xvfb did not start ({exc}): GUI programs were not run")
        return
    finally:
        os.close(write_end)
    try:
        try:  # Xvfb writes the display number once it accepts clients; EOF (b"") if it exits first
            number = (await asyncio.wait_for(asyncio.to_thread(os.read, read_end, 32), seconds)).decode().strip()
        except TimeoutError:
            number = ""
        if number.isdigit():
            yield Display(f":{number}")
        else:
            yield Display(None, f"Xvfb did not come up within {seconds:g} s: GUI programs were not run")
    finally:
        with contextlib.suppress(ProcessLookupError):
            process.terminate()
        try:
            await asyncio.wait_for(process.wait(), 5)
        except TimeoutError:
            process.kill()
            await process.wait()
        os.close(read_end)  # after Xvfb is gone: the reading thread, if any, has seen EOF


def is_gui(root: Path) -> bool:
    """Whether any Python file of the project imports a GUI toolkit (tkinter, pygame, Qt, ...); the
    project's own files (``.gitignore`` honoured: a virtualenv's Tk modules do not count)."""
    for rel in list_repo_files(root):
        if rel.endswith(".py"):
            with contextlib.suppress(OSError):
                if _GUI_IMPORT.search((root / rel).read_text(encoding="utf-8", errors="replace")):
                    return True
    return False


__all__ = ["Display", "is_gui", "virtual_display"]
