"""From a Slack message to a job request: which kind, which files, which words.

Slack wraps things in its own markup: ``<@U123>`` is a mention, ``<http://app.py|app.py>`` is a
file name Slack mistook for a domain, ``&lt;`` is ``<``. :func:`plain` turns it back into what the
person typed; :func:`parse` picks the job kind from a keyword near the start (``review``,
``test``, ``build``, ``change``; otherwise the team is asked a question).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from daemon.api.protocol import JobKind

KEYWORDS: dict[str, JobKind] = {"review": "review", "reviews": "review", "test": "test", "tests": "test",
                                "build": "build", "change": "change", "changes": "change"}
KEYWORD_WINDOW = 3  # "review app.py", "please review app.py", "can you review app.py"
_MENTION = re.compile(r"<@([A-Z0-9]+)(?:\|[^>]*)?>")
_LINK = re.compile(r"<((?:https?|mailto):[^>|]+)(?:\|([^>]+))?>")
_FILE = re.compile(r"^[\w./-]*\w\.[A-Za-z0-9]{1,10}$")
_WORD = re.compile(r"[a-z]+")


@dataclass
class Intent:
    kind: JobKind
    prompt: str
    files: list[str] = field(default_factory=list)
    explicit: bool = False  # the kind came from a keyword (not the default)


def plain(text: str, bot_user_id: str | None = None) -> str:
    """The message as typed: the bot's mention removed, links unwrapped, entities decoded."""
    if bot_user_id:
        text = re.sub(rf"<@{re.escape(bot_user_id)}(?:\|[^>]*)?>", " ", text)
    text = _LINK.sub(lambda m: m.group(2) or m.group(1), text)
    text = _MENTION.sub(lambda m: f"@{m.group(1)}", text)
    text = text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return " ".join(text.split())


def mentions(text: str, user_id: str | None) -> bool:
    return bool(user_id) and any(m == user_id for m in _MENTION.findall(text or ""))


def files_in(text: str) -> list[str]:
    found: list[str] = []
    for token in text.split():
        token = token.strip("`'\"()[],;:!?")
        token = token.removeprefix("http://").removeprefix("https://")
        safe = _FILE.match(token) and not token.startswith(("/", "..")) and ".." not in token.split("/")
        if safe and token not in found:
            found.append(token)
    return found


def parse(text: str, default_kind: JobKind = "ask") -> Intent:
    words = [w.group(0) for w in (_WORD.match(t.lower()) for t in text.split()) if w]
    kind, explicit = default_kind, False
    for word in words[:KEYWORD_WINDOW]:
        if word in KEYWORDS:
            kind, explicit = KEYWORDS[word], True
            break
    files = files_in(text) if kind in ("review", "test", "change", "ask") else []
    return Intent(kind, text.strip(), files, explicit)
