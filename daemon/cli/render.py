"""How the CLI shows things: a live progress line (spinner, phase, role, tokens, cost) on a
terminal, one line per step otherwise; findings, jobs and diffs that read well."""

from __future__ import annotations

import asyncio
import itertools
import sys
import time
from typing import Any, TextIO

from daemon.api.protocol import FindingInfo, JobInfo, StreamEvent

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
SEVERITY_MARK = {"critical": "✖✖", "major": "✖", "minor": "▲", "info": "·"}


def use_colour(stream: TextIO) -> bool:
    return stream.isatty()


def money(cost: float) -> str:
    return f"${cost:.4f}" if cost else "$0"


def finding_line(f: FindingInfo | dict[str, Any]) -> str:
    d = f.to_json() if isinstance(f, FindingInfo) else f
    where = f"{d.get('file')}:{d.get('start_line')}"
    rule = f" [{d['rule']}]" if d.get("rule") else ""
    mark = SEVERITY_MARK.get(str(d.get("severity")), "?")
    return f"{mark} {where:<28} {d.get('severity'):<8} {d.get('message')}{rule}"


def job_line(job: JobInfo) -> str:
    what = job.request.get("prompt") or " ".join(job.request.get("files") or []) or ""
    what = what.replace("\n", " ")
    if len(what) > 50:
        what = what[:47] + "..."
    when = time.strftime("%H:%M:%S", time.localtime(job.created_at or 0))
    tokens = job.usage.total_tokens
    usage = f"{tokens:>7,} tok {money(job.usage.cost):>8}" if tokens else " " * 20
    return f"{job.id[:8]}  {when}  {job.kind:<6} {job.state:<18} {usage}  {what}"


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

    async def __aexit__(self, *exc: Any) -> None:
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
        data = event.data
        if event.phase:
            self.phase = event.phase
        if event.role:
            self.role = event.role
        if event.kind == "job_state":
            self.state = str(data.get("state", self.state))
            if data.get("resumed"):
                self.say("  resumed after a daemon restart")
        elif event.kind == "usage":
            self.tokens += int(data.get("prompt_tokens", 0)) + int(data.get("completion_tokens", 0))
            self.cost += float(data.get("cost", 0.0))
        elif event.kind == "phase_started" and not self.live:
            self.say(f"  … {data.get('phase', event.phase)}" + (f" ({event.role})" if event.role else ""))
        elif event.kind == "phase_finished":
            phase = data.get("phase", event.phase)
            self.say(f"  ✓ {phase}" + (f": {str(data.get('conclusion', ''))[:100]}" if data.get("conclusion") else ""))
        elif event.kind == "tool_run":
            mark = "✓" if data.get("ok") else "✗"
            self.say(f"  {mark} {data.get('tool')}: {str(data.get('summary', ''))[:120]}")
        elif event.kind == "finding":
            self.say("  " + finding_line(data))
        elif event.kind == "log" and data.get("skipped"):
            self.say(f"  – {data.get('text')}")
        elif event.kind == "log" and data.get("level") in ("warning", "error"):
            self.say(f"  ! {data.get('text')}")
