"""The open documents the server shows findings for, and which workspace each belongs to.

An :class:`OpenDocument` remembers the text as last saved (what the daemon's review read), the
findings placed in the buffer now, and the findings dropped because the user edited their
lines (kept out until a later review reports them again). Huge and binary documents are
skipped: tracked by URI only, never reviewed or decorated.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field

from daemon.api.protocol import FindingInfo
from lsp.tracking import Placed, place

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
    reviewed: list[str] = field(default_factory=list)  # lines as last saved
    placed: dict[int, Placed] = field(default_factory=dict)
    dropped: dict[int, str | None] = field(default_factory=dict)  # finding id -> job that reported it
    skipped: str | None = None

    @property
    def relative(self) -> str | None:
        if self.path is None or self.root is None:
            return None
        return os.path.relpath(self.path, self.root)

    def show(self, finding: FindingInfo, current: list[str]) -> None:
        """Add or move a finding reported for this file (or remove it when it is no longer open)."""
        self.placed.pop(finding.id, None)
        if finding.state != "open":
            self.dropped.pop(finding.id, None)
            return
        if finding.id in self.dropped and self.dropped[finding.id] == finding.job_id:
            return  # the same report whose lines the user has edited since
        self.dropped.pop(finding.id, None)
        placed = place(finding, self.reviewed, current)
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

    def edited(self, kept: list[Placed], dropped: list[Placed]) -> None:
        self.placed = {p.finding.id: p for p in kept}
        for item in dropped:
            self.dropped[item.finding.id] = item.finding.job_id


def containing_root(path: str | None, roots: Iterable[str]) -> str | None:
    """The deepest root that ``path`` is inside (multi-root workspaces may nest)."""
    if path is None:
        return None
    best = None
    for root in roots:
        if (path == root or path.startswith(root.rstrip(os.sep) + os.sep)) and (best is None or len(root) > len(best)):
            best = root
    return best
