"""Watch one repository and hand debounced batches of saved files to one callback.

Shaped after aider's ``watch.py``: the watcher only decides *which files changed*; what to do
about them (reviews, tests, caps) lives in :mod:`daemon.watch.trigger`.

Traps handled (see notes/libraries.md §5): editors save atomically (write ``x.tmp``, rename to
``x.py``), which arrives as one moved event whose *destination* is the file; bursts (five writes,
a ``git checkout``) are collapsed by a trailing-edge debounce; ``.git``, gitignored paths,
virtualenvs, ``node_modules`` and build output never trigger anything; when inotify runs out of
watches or instances the watcher falls back to polling and says so in ``mode``/``note``.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path

import pathspec
from watchdog.events import (
    FileClosedEvent,
    FileCreatedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver
from watchdog.observers.polling import PollingObserver

log = logging.getLogger("troupe.watch")

ALWAYS_IGNORED = [
    ".git/", ".hg/", ".svn/", ".troupe/", "__pycache__/", ".venv/", "venv/", ".tox/", ".nox/",
    "node_modules/", "build/", "dist/", "*.egg-info/", ".mypy_cache/", ".pytest_cache/", ".ruff_cache/",
    # editor temporaries: an atomic save's temp file never counts, only its rename target
    "*.troupe-tmp", "*.swp", "*.swx", "*~", ".#*", "#*#", "*.tmp", "4913", "*.pyc",
]
_SAVE_EVENTS = (FileModifiedEvent, FileCreatedEvent, FileMovedEvent, FileClosedEvent)
_INOTIFY_EXHAUSTED = (errno.ENOSPC, errno.EMFILE)

ChangeCallback = Callable[[list[Path]], Awaitable[None]]


class RepoWatcher(FileSystemEventHandler):
    """Calls ``on_change(sorted files)`` once per burst of saves under ``root``."""

    def __init__(self, root: Path, on_change: ChangeCallback, *, debounce: float = 0.3,
                 force_polling: bool = False, poll_interval: float = 1.0,
                 loop: asyncio.AbstractEventLoop | None = None) -> None:
        super().__init__()
        self.root = Path(root).resolve()
        self.on_change = on_change
        self.debounce = debounce
        self.loop = loop or asyncio.get_running_loop()
        self.mode = "stopped"
        self.note = ""
        self._force_polling = force_polling
        self._poll_interval = poll_interval
        self._pending: set[Path] = set()
        self._timer: asyncio.TimerHandle | None = None
        self._observer: BaseObserver | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._git = (self.root / ".git").exists()
        self.spec = self._load_spec()

    # ---------------------------------------------------------------- filtering

    def _load_spec(self) -> pathspec.GitIgnoreSpec:
        lines = list(ALWAYS_IGNORED)
        gitignore = self.root / ".gitignore"
        try:
            lines += gitignore.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            pass
        return pathspec.GitIgnoreSpec.from_lines(lines)

    def relative(self, path: str | Path) -> str | None:
        """The '/'-separated path inside the workspace, or None when it is outside."""
        try:
            return Path(os.path.abspath(path)).relative_to(self.root).as_posix()
        except ValueError:
            return None

    def ignored(self, path: str | Path) -> bool:
        rel = self.relative(path)
        return rel is None or rel in ("", ".") or self.spec.match_file(rel)

    def _git_ignored(self, files: list[Path]) -> set[Path]:
        """Nested .gitignore files, .git/info/exclude and global excludes: ask git itself."""
        if not self._git or not files:
            return set()
        try:
            proc = subprocess.run(
                ["git", "-C", str(self.root), "check-ignore", "--stdin", "-z"],
                input=b"\0".join(os.fsencode(f) for f in files), capture_output=True, timeout=10, check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            log.warning("git check-ignore failed in %s (%s); using the root .gitignore only", self.root, exc)
            return set()
        return {Path(os.fsdecode(p)) for p in proc.stdout.split(b"\0") if p}

    # ---------------------------------------------------------------- events (watchdog thread)

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.is_directory or not isinstance(event, _SAVE_EVENTS):
            return
        target = event.dest_path if isinstance(event, FileMovedEvent) else event.src_path
        path = os.fsdecode(target)
        if not path:
            return
        if path == str(self.root / ".gitignore"):
            self.spec = self._load_spec()
        if self.ignored(path):
            return
        try:
            self.loop.call_soon_threadsafe(self._schedule, Path(path))
        except RuntimeError:  # the loop closed while the observer was stopping
            pass

    # ---------------------------------------------------------------- debounce (loop thread)

    def _schedule(self, path: Path) -> None:
        self._pending.add(path)
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self.loop.call_later(self.debounce, self._flush)

    def _flush(self) -> None:
        paths, self._pending, self._timer = self._pending, set(), None
        task = self.loop.create_task(self._deliver(paths))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _deliver(self, paths: set[Path]) -> None:
        files = sorted(p for p in paths if p.is_file())
        ignored = await asyncio.to_thread(self._git_ignored, files)
        files = [f for f in files if f not in ignored]
        if files:
            try:
                await self.on_change(files)
            except Exception:
                log.exception("watch callback failed for %d file(s) in %s", len(files), self.root)

    # ---------------------------------------------------------------- life cycle

    def start(self) -> None:
        """Start watching; inotify when it can, polling when the kernel's limits are spent."""
        if not self._force_polling:
            try:
                self._start_observer(Observer())
                self.mode, self.note = "inotify", ""
                return
            except OSError as exc:
                if exc.errno not in _INOTIFY_EXHAUSTED:
                    raise
                self.note = (f"inotify limit reached ({exc.strerror}); polling every {self._poll_interval:g}s "
                             "instead. Raise it with: sudo sysctl fs.inotify.max_user_watches=524288")
                log.warning("watching %s: %s", self.root, self.note)
        else:
            self.note = "polling (forced by configuration)"
        self._start_observer(PollingObserver(timeout=self._poll_interval))
        self.mode = "polling"

    def _start_observer(self, observer: BaseObserver) -> None:
        # One recursive watch per workspace: one inotify instance (128 per user is the scarcer limit).
        try:
            observer.schedule(self, str(self.root), recursive=True)
            observer.start()
        except BaseException:
            observer.stop()
            raise
        self._observer = observer

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=5)
            self._observer = None
        for task in list(self._tasks):
            task.cancel()
        self.mode = "stopped"
