"""What the fake LLM server answers, and the record of what it was asked.

Pure data and no I/O: `Script` holds the rules, the reply queue, the pending faults and the
recorded requests behind one lock, so a test thread can script a server whose event loop
runs in another thread (or another process, through the server's control endpoints).
See `tests.fakes.llm_server` for how tests use it.
"""

from __future__ import annotations

import math
import re
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

Reply = str | Callable[[dict[str, Any]], str]
"""A scripted reply: fixed text, or a function of the request's JSON body that returns the text."""
Pattern = str | re.Pattern[str]
"""A plain string matches as a substring; a compiled pattern matches with `re.search`."""

FaultKind = Literal[
    "rate_limit", "server_error", "unavailable", "hang", "malformed_json", "truncated_stream", "wrong_shape",
    "null_content",
]
FAULT_KINDS: tuple[str, ...] = FaultKind.__args__  # type: ignore[attr-defined]


def estimate_tokens(text: str) -> int:
    """The fake's deterministic tokenizer: one token per started 4 characters (0 for "")."""
    return math.ceil(len(text) / 4)


def message_text(message: dict[str, Any]) -> str:
    """The text of one chat message, whether `content` is a string or a list of parts."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


@dataclass
class RecordedRequest:
    """One chat-completion request as the server received it, and what it answered."""

    body: dict[str, Any]
    headers: dict[str, str]
    reply: str | None = None
    fault: str | None = None
    number: int = 0  # 1 for the first request the server received
    aborted: bool = False  # the client hung up before the answer (e.g. its task was cancelled)
    finish_reason: str = "stop"  # "length" when the reply was cut at the request's max_tokens
    cached_tokens: int = 0  # with the prompt cache on: the prompt tokens of the prefix seen before

    def cap(self) -> None:
        """Cut the reply at the request's ``max_tokens`` (in the fake's tokens), as a real server does."""
        limit = self.body.get("max_tokens") or self.body.get("max_completion_tokens")
        if isinstance(limit, int) and self.reply is not None and estimate_tokens(self.reply) > limit:
            self.reply, self.finish_reason = self.reply[: limit * 4], "length"

    @property
    def model(self) -> str:
        return str(self.body.get("model", ""))

    @property
    def messages(self) -> list[dict[str, Any]]:
        messages = self.body.get("messages")
        return [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream"))

    @property
    def system(self) -> str:
        """All system messages, joined by blank lines."""
        return "\n\n".join(message_text(m) for m in self.messages if m.get("role") == "system")

    @property
    def last_user(self) -> str:
        users = [message_text(m) for m in self.messages if m.get("role") == "user"]
        return users[-1] if users else ""

    @property
    def prompt(self) -> str:
        """Every message's text, in order, joined by blank lines: what "reached the prompt"."""
        return "\n\n".join(message_text(m) for m in self.messages)

    @property
    def prompt_tokens(self) -> int:
        return sum(estimate_tokens(message_text(m)) for m in self.messages)

    def as_json(self) -> dict[str, Any]:
        return {"body": self.body, "headers": self.headers, "reply": self.reply, "fault": self.fault,
                "aborted": self.aborted}


def _matches(pattern: Pattern | None, text: str) -> bool:
    if pattern is None:
        return True
    if isinstance(pattern, re.Pattern):
        return pattern.search(text) is not None
    return pattern in text


def _same_model(wanted: str | None, received: str) -> bool:
    # Callers may name the model as litellm sees it ("openai/x"); the server receives "x".
    return wanted is None or wanted in (received, f"openai/{received}")


def _shared_prefix_tokens(request: RecordedRequest, earlier: RecordedRequest) -> int:
    """Tokens of the leading messages ``request`` shares, whole and in order, with ``earlier``: what a
    provider's prompt cache would serve (the fake caches whole messages, not partial ones)."""
    tokens = 0
    for mine, theirs in zip(request.messages, earlier.messages, strict=False):
        if mine.get("role") != theirs.get("role") or message_text(mine) != message_text(theirs):
            break
        tokens += estimate_tokens(message_text(mine))
    return tokens


@dataclass
class Rule:
    """Answer `reply` to requests whose system prompt / last user message / model match."""

    reply: Reply
    system: Pattern | None = None
    user: Pattern | None = None
    model: str | None = None
    times: int | None = None  # None: unlimited
    used: int = 0

    def matches(self, request: RecordedRequest) -> bool:
        return (
            (self.times is None or self.used < self.times)
            and _same_model(self.model, request.model)
            and _matches(self.system, request.system)
            and _matches(self.user, request.last_user)
        )


@dataclass
class Fault:
    """A failure served instead of a reply, `times` times, to requests for `model` (any if None)."""

    kind: FaultKind
    times: int = 1
    model: str | None = None
    retry_after: float = 1  # rate_limit: the Retry-After header, in seconds
    seconds: float = 30.0  # hang: how long to stall before answering

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r}; expected one of {', '.join(FAULT_KINDS)}")
        if self.times < 1:
            raise ValueError(f"a fault must apply at least once, got times={self.times}")


@dataclass
class Script:
    """Decides each reply: the next pending fault, else the first matching rule, else the queue,
    else `default_reply`."""

    default_reply: Reply = "OK"
    prompt_cache: bool = False  # report the tokens of the leading messages a request shares with an earlier one
    rules: list[Rule] = field(default_factory=list)
    queue: deque[Reply] = field(default_factory=deque)
    faults: list[Fault] = field(default_factory=list)
    requests: list[RecordedRequest] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add_rule(self, rule: Rule) -> Rule:
        with self._lock:
            self.rules.append(rule)
        return rule

    def enqueue(self, *replies: Reply) -> None:
        with self._lock:
            self.queue.extend(replies)

    def add_fault(self, fault: Fault) -> None:
        with self._lock:
            self.faults.append(fault)

    def record(self, request: RecordedRequest) -> None:
        with self._lock:
            if self.prompt_cache:
                request.cached_tokens = max((_shared_prefix_tokens(request, earlier) for earlier in self.requests
                                             if earlier.model == request.model), default=0)
            self.requests.append(request)
            request.number = len(self.requests)

    def take_fault(self, request: RecordedRequest) -> Fault | None:
        with self._lock:
            for fault in self.faults:
                if _same_model(fault.model, request.model):
                    fault.times -= 1
                    if fault.times == 0:
                        self.faults.remove(fault)
                    return fault
        return None

    def choose_reply(self, request: RecordedRequest) -> str:
        with self._lock:
            reply = self.default_reply
            for rule in self.rules:
                if rule.matches(request):
                    rule.used += 1
                    reply = rule.reply
                    break
            else:
                if self.queue:
                    reply = self.queue.popleft()
        return reply(request.body) if callable(reply) else reply

    def reset(self) -> None:
        """Forget rules, queue, faults and recorded requests (the default reply stays)."""
        with self._lock:
            self.rules.clear()
            self.queue.clear()
            self.faults.clear()
            self.requests.clear()

    def load(self, data: dict[str, Any]) -> None:
        """Add what a JSON script describes (see the `llm_server` module docstring)."""
        unknown = set(data) - {"default_reply", "rules", "queue", "faults"}
        if unknown:
            raise ValueError(f"unknown keys in fake LLM script: {', '.join(sorted(unknown))}")
        if "default_reply" in data:
            self.default_reply = str(data["default_reply"])
        for spec in data.get("rules", []):
            spec = dict(spec)
            regex = spec.pop("regex", False)
            for key in ("system", "user"):
                if regex and spec.get(key) is not None:
                    spec[key] = re.compile(spec[key])
            self.add_rule(Rule(**spec))
        self.enqueue(*[str(reply) for reply in data.get("queue", [])])
        for spec in data.get("faults", []):
            self.add_fault(Fault(**spec))
