"""The open documents the server shows findings for, and which workspace each belongs to.

An :class:`OpenDocument` remembers the text as last saved (what the daemon's review read), the
findings placed in the buffer now, and the findings dropped because the user edited their
lines (kept out until a later review reports them again). Huge and binary documents are
skipped: tracked by URI only, never reviewed or decorated.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable
from dataclasses import dataclass, field

from daemon.api.protocol import FindingInfo
from lsp.lint import Linted
from lsp.tracking import Placed, edit_lines, follow, line_map, place

BASELINES = 8  # saved texts remembered, so a finding is placed against the text its review read

MAX_DOCUMENT_BYTES = 1_000_000


def skip_reason(text: str) -> str | None:
    """Why a document is not worth reviewing, or None."""
    if "\x00" in text:
        return "binary content (NUL bytes)"
    size = len(text.encode("utf-8", errors="surrogatepass"))
    if size > MAX_DOCUMENT_BYTES:
        return f"too big ({size:,} bytes; the limit is {MAX_DOCUMENT_BYTES:,})"
    return None


@dataclass
class OpenDocument:
    uri: str
    path: str | None  # real path on disk; None for untitled or non-file documents
    root: str | None = None  # the registered workspace it is in
    here: str | None = None  # where that workspace is on this machine (a team workspace's clone), if not root
    reviewed: list[str] = field(default_factory=list)  # lines as last saved
    placed: dict[int, Placed] = field(default_factory=dict)
    dropped: dict[int, str | None] = field(default_factory=dict)  # finding id -> job that reported it
    skipped: str | None = None
    lines: list[str] = field(default_factory=list)  # the buffer as this server last saw it, without line feeds
    lint: list[Linted] = field(default_factory=list)  # the static lane's diagnostics, moved with the edits
    linted: bool = False  # the static lane answered: it, not the store's lint findings, shows lint
    baselines: dict[str, list[str]] = field(default_factory=dict)  # content hash -> lines, for recent saves
    lint_task: asyncio.Task[None] | None = None

    @property
    def relative(self) -> str | None:
        if self.path is None or self.root is None:
            return None
        return os.path.relpath(self.path, self.here or self.root)

    def show(self, finding: FindingInfo, current: list[str]) -> None:
        """Add or move a finding reported for this file (or remove it when it is no longer open)."""
        self.placed.pop(finding.id, None)
        if finding.state != "open":
            self.dropped.pop(finding.id, None)
            return
        if finding.id in self.dropped and self.dropped[finding.id] == finding.job_id:
            return  # the same report whose lines the user has edited since
        self.dropped.pop(finding.id, None)
        reviewed = self.baselines.get(finding.content_hash or "", self.reviewed)
        placed = place(finding, reviewed, current)
        if placed is None:
            self.dropped[finding.id] = finding.job_id
        else:
            self.placed[finding.id] = placed

    def replace_all(self, findings: Iterable[FindingInfo], current: list[str]) -> None:
        """The store's open findings for this file replace what is shown."""
        self.placed.clear()
        for finding in findings:
            self.show(finding, current)

    def forget(self, finding_id: int) -> bool:
        return self.placed.pop(finding_id, None) is not None

    def saved(self, lines: list[str], content_hash: str) -> None:
        """This text was saved: the baseline the next review reads."""
        self.reviewed = lines
        self.baselines.pop(content_hash, None)
        self.baselines[content_hash] = lines
        while len(self.baselines) > BASELINES:
            self.baselines.pop(next(iter(self.baselines)))

    def edit(self, start: tuple[int, int], end: tuple[int, int], text: str) -> None:
        """One incremental edit (character positions): findings and lint on changed lines go."""
        self.lines, mapping = edit_lines(self.lines, start, end, text)
        self._moved(mapping)

    def replaced(self, lines: list[str]) -> None:
        """The whole text was sent: what is kept is what a line diff finds unchanged."""
        mapping = line_map(self.lines, lines)
        self.lines = lines
        self._moved(mapping)

    def _moved(self, mapping: dict[int, int]) -> None:
        kept, dropped = follow(list(self.placed.values()), mapping)
        self.placed = {p.finding.id: p for p in kept}
        for item in dropped:
            self.dropped[item.finding.id] = item.finding.job_id
        self.lint = follow(self.lint, mapping)[0]


def containing_root(path: str | None, roots: Iterable[str]) -> str | None:
    """The deepest root that ``path`` is inside (multi-root workspaces may nest)."""
    if path is None:
        return None
    best = None
    for root in roots:
        if (path == root or path.startswith(root.rstrip(os.sep) + os.sep)) and (best is None or len(root) > len(best)):
            best = root
    return best
