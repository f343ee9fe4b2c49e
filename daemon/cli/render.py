"""How the CLI shows things: a live progress line (spinner, phase, role, tokens, cost) on a
terminal, one line per step otherwise; findings, jobs and diffs that read well."""

from __future__ import annotations

import asyncio
import itertools
import sys
import time
from typing import TextIO

from daemon.api.protocol import FindingInfo, JobInfo, StreamEvent
from daemon.payloads import (
    FindingData,
    JobStateData,
    LogData,
    PhaseFinishedData,
    PhaseStartedData,
    ToolRunData,
)

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
SEVERITY_MARK = {"critical": "✖✖", "major": "✖", "minor": "▲", "info": "·"}


def use_colour(stream: TextIO) -> bool:
    return stream.isatty()


def money(cost: float) -> str:
    return f"${cost:.4f}" if cost else "$0"


def finding_line(f: FindingInfo | FindingData) -> str:
    where = f"{f.file}:{f.start_line}"
    rule = f" [{f.rule}]" if f.rule else ""
    mark = SEVERITY_MARK.get(f.severity, "?")
    return f"{mark} {where:<28} {f.severity:<8} {f.message}{rule}"


def job_line(job: JobInfo) -> str:
    what = job.title.split(": ", 1)[-1] if ": " in job.title else ""
    if len(what) > 50:
        what = what[:47] + "..."
    when = time.strftime("%H:%M:%S", time.localtime(job.created_at or 0))
    tokens = job.usage.total_tokens
    usage = f"{tokens:>7,} tok {money(job.usage.cost):>8}" if tokens else " " * 20
    return f"{job.id[:8]}  {when}  {job.kind:<6} {job.state:<18} {usage}  {what}{job.usage.cached_note}"


class Progress:
    """Follows a job's events: a redrawn status line on a TTY, plain lines elsewhere."""

    def __init__(self, out: TextIO = sys.stderr, *, live: bool | None = None) -> None:
        self.out = out
        self.live = out.isatty() if live is None else live
        self.phase = self.role = ""
        self.state = "queued"
        self.tokens = 0
        self.cost = 0.0
        self.started = time.monotonic()
        self._task: asyncio.Task[None] | None = None
        self.paused = False  # while the person types an answer
        self._frames = itertools.cycle(SPINNER)

    def status(self) -> str:
        parts = [self.state]
        if self.phase:
            parts.append(f"phase {self.phase}")
        if self.role:
            parts.append(self.role)
        parts.append(f"{self.tokens:,} tokens")
        parts.append(money(self.cost))
        parts.append(f"{time.monotonic() - self.started:.0f}s")
        return " · ".join(parts)

    async def __aenter__(self) -> Progress:
        if self.live:
            self._task = asyncio.create_task(self._spin())
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
            self._clear()

    async def _spin(self) -> None:
        while True:
            if not self.paused:
                self.out.write(f"\r\x1b[2K{next(self._frames)} {self.status()}")
                self.out.flush()
            await asyncio.sleep(0.1)

    def _clear(self) -> None:
        if self.live:
            self.out.write("\r\x1b[2K")
            self.out.flush()

    def say(self, text: str) -> None:
        """A line that stays (above the spinner on a TTY)."""
        self._clear()
        self.out.write(text + "\n")
        self.out.flush()

    def update(self, event: StreamEvent) -> None:
        """Show one event: the status line reads the daemon's progress; some kinds add a line."""
        if event.progress is not None:
            p = event.progress
            self.state, self.phase, self.role, self.tokens, self.cost = (p.state, p.phase or "", p.role or "",
                                                                         p.tokens, p.cost)
        body = event.payload
        if isinstance(body, JobStateData) and body.resumed:
            self.say("  resumed after a daemon restart")
        elif isinstance(body, PhaseStartedData) and not self.live:
            self.say(f"  … {body.phase or event.phase}" + (f" ({event.role})" if event.role else ""))
        elif isinstance(body, PhaseFinishedData):
            self.say(f"  ✓ {body.phase or event.phase}" + (f": {body.conclusion[:100]}" if body.conclusion else ""))
        elif isinstance(body, ToolRunData):
            self.say(f"  {'✓' if body.ok else '✗'} {body.tool}: {body.summary[:120]}")
        elif isinstance(body, FindingData):
            self.say("  " + finding_line(body))
        elif isinstance(body, LogData) and body.skipped is not None:
            self.say(f"  – {body.text}")
        elif isinstance(body, LogData) and body.notable:
            self.say(f"  ! {body.text}")
