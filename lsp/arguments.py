"""The argument of every ``troupe.*`` command and ``troupe/…`` request, typed once.

Each command takes ONE JSON object (camelCase keys, as LSP does); ``check()`` returns what is
wrong with values the types alone cannot catch. See lsp/README.md for the list.
"""

from __future__ import annotations

import attrs
from lsprotocol import types

JOB_STATES = ("queued", "running", "waiting_for_answer", "succeeded", "failed", "cancelled", "active", "all")


@attrs.define
class AskArgs:
    """``troupe.ask``: a question (``mode: "ask"``) or a change to propose (``mode: "change"``)."""

    prompt: str
    file: str | None = None  # a document URI (or absolute path) to focus on
    selection: types.Range | None = None
    mode: str = "ask"

    def check(self) -> str | None:
        if not self.prompt.strip():
            return "prompt is empty: say what to ask the team"
        if self.mode not in ("ask", "change"):
            return f"mode must be 'ask' or 'change', got {self.mode!r}"
        if self.selection is not None and self.file is None:
            return "a selection needs the file it is in"
        return None


@attrs.define
class FileArgs:
    """``troupe.review`` (file required) and ``troupe.test`` (file optional)."""

    file: str | None = None


@attrs.define
class JobArgs:
    """``troupe.cancel``."""

    job_id: str


@attrs.define
class ViewerArgs:
    """``troupe.openViewer``: the run viewer on one job (an id or a unique prefix), else the job list.
    ``open`` false: only answer the link (a client behind a port-forwarding proxy, such as VS Code in
    code-server, maps it with ``asExternalUri`` and opens it itself)."""

    job_id: str | None = None
    open: bool = True

    def check(self) -> str | None:
        return "jobId is empty" if self.job_id is not None and not self.job_id.strip() else None


@attrs.define
class AnswerArgs:
    """``troupe.answer``: answer the question a waiting job asked."""

    job_id: str
    text: str
    question_id: str | None = None

    def check(self) -> str | None:
        return None if self.text.strip() else "text is empty: the team needs an answer"


@attrs.define
class ChangeArgs:
    """``troupe.applyChange`` / ``troupe.discardChange``."""

    change_id: str


@attrs.define
class FindingArgs:
    """``troupe.dismiss`` / ``troupe.explain`` / ``troupe.fixApplied``."""

    finding_id: int
    reason: str | None = None


@attrs.define
class JobsQuery:
    """``troupe/jobs``."""

    state: str | None = None
    workspace: str | None = None
    limit: int = 50

    def check(self) -> str | None:
        if self.state is not None and self.state not in JOB_STATES:
            return f"state must be one of {', '.join(JOB_STATES)}; got {self.state!r}"
        if not 1 <= self.limit <= 1000:
            return f"limit must be from 1 to 1000, got {self.limit}"
        return None


@attrs.define
class ExperienceQuery:
    """``troupe/experience``: search what the team has learnt."""

    query: str
    limit: int = 20

    def check(self) -> str | None:
        if not self.query.strip():
            return "query is empty: say what to look for"
        if not 1 <= self.limit <= 200:
            return f"limit must be from 1 to 200, got {self.limit}"
        return None
