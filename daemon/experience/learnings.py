"""Learnings from people: what a user said about a finding (applied it, dismissed it, and why),
kept per repository, shown to later reviews, and used to keep a dismissed kind of finding on the
same code from coming back.

The daemon records one when a finding's state is set through the API (the editor's "dismiss",
Slack's buttons and thread replies); reopening the finding withdraws it. It is kept with the
repository of the finding, or where the job that made the finding was told to keep its experience
(``options.experience_workspace``: an eval's run, whose items share one store): never globally.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from daemon.experience.text import clip, scrub
from storage.experience import STOP_WORDS

if TYPE_CHECKING:
    from storage import AsyncStore, Experience, Finding

VERDICTS = {"dismissed": "dismissed", "applied": "applied the fix for"}
SAME_KIND = 0.5    # shared terms that, on the same code, make two findings one kind
SAME_WORDS = 0.8   # shared terms that make them one kind wherever they are in the file


def terms(message: str) -> set[str]:
    """A finding message's terms: identifiers split, short names and numbers kept (``b == 0`` matters)."""
    split = re.sub(r"([a-z])([A-Z])", r"\1 \2", message).replace("_", " ").lower()
    return {t for t in re.findall(r"[a-z0-9]+", split) if t not in STOP_WORDS}


def overlap(a: str, b: str) -> float:
    """Shared terms over the smaller message's terms (0..1): how alike two findings are worded."""
    first, second = terms(a), terms(b)
    return len(first & second) / min(len(first), len(second)) if first and second else 0.0


def code_at(text: str | None, start: int, end: int) -> str:
    """The lines a finding is about, whitespace-normalised (how "the same code" is compared)."""
    if not text:
        return ""
    lines = text.splitlines()[max(0, start - 1):max(start, end)]
    return "\n".join(" ".join(line.split()) for line in lines).strip()


def _read(root: str | None, file: str) -> str | None:
    if root is None:
        return None
    try:
        return (Path(root) / file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


async def learning_home(store: AsyncStore, finding: Finding) -> int:
    """The workspace whose experience a person's word on ``finding`` joins: the one the job that made it
    read and added experience in (``options.experience_workspace``), else the finding's own."""
    import msgspec

    from daemon.messages import SubmitJob

    job = await store.get_job(finding.job_id) if finding.job_id else None
    if job is None:
        return finding.workspace_id
    try:
        shared = msgspec.convert(job.request or {"kind": "ask"}, SubmitJob).options.experience_workspace
    except msgspec.ValidationError:  # a request stored by an older daemon: the finding's own repository
        return finding.workspace_id
    home = await store.find_workspace_for(shared) if shared else None
    return home.id if home is not None else finding.workspace_id


async def record_learning(store: AsyncStore, finding: Finding, state: str, reason: str | None,
                          root: str | None) -> Experience | None:
    """Store what the person did with ``finding`` (a stored finding) in its repository's experience
    (:func:`learning_home`); returns the learning, or None when the state teaches nothing. Reopening a
    finding withdraws what was learnt from it."""
    home = await learning_home(store, finding)
    if state == "open":
        for old in await store.list_experience(pool="learning", workspace_id=home, limit=None):
            if old.data.get("fingerprint") == finding.fingerprint and old.workspace_id == home:
                await store.delete_experience(old.id)
        return None
    if state not in VERDICTS:
        return None
    code = code_at(_read(root, finding.file), finding.start_line, finding.end_line)
    message, said = scrub(finding.message), scrub(reason or "")
    value = f"The user {VERDICTS[state]} this finding on {finding.file}:{finding.start_line}: {message!r}"
    if said:
        value += f" and said: {said!r}"
    data = {"verdict": state, "fingerprint": finding.fingerprint, "file": finding.file, "rule": finding.rule,
            "message": message, "reason": said, "code": clip(scrub(code), 2000), "finding_id": finding.id}
    key = f"{finding.file} {finding.rule or ''} {message}\n{data['code']}"
    return await store.add_experience("learning", key, value, workspace_id=home,
                                      job_id=finding.job_id, role="reviewer", task=said, score=1.0, data=data)


def dismissed_match(file: str, message: str, code: str, learnings: list[Experience]) -> Experience | None:
    """The learning that says this finding was dismissed before, on the same code, or None."""
    for learning in learnings:
        data = learning.data
        if data.get("verdict") != "dismissed" or data.get("file") != file:
            continue
        alike = overlap(message, data.get("message", ""))
        if alike >= SAME_WORDS or (alike >= SAME_KIND and code and code == data.get("code")):
            return learning
    return None


def render_learning(learning: Experience) -> str:
    return learning.value
