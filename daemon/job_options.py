"""What a job may be told besides its prompt and files: :class:`JobOptions`, one record, and
:data:`OPTIONS_FOR`, the fields each job kind takes.

``SubmitJob.options`` is this record (no bag of string keys): an unknown field, a field of the
wrong type or one the job's kind does not take is a :class:`~daemon.schema.ProtocolError` that
names it and says what the kind takes (the server answers 400). The TypeScript side gets the
record and the table (``python -m daemon.api.typescript``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from daemon.json_types import JsonObject
from daemon.schema import Message, ProtocolError
from daemon.teams.config import TeamsConfigError, parse_options

COMPLETE_MAX_TOKENS = 1024
COMPLETE_MAX_TOKENS_LIMIT = 32_768

ExperienceMode = Literal["on", "off", "read", "learn"]


@dataclass
class JobOptions(Message):
    """Every field is optional; :data:`OPTIONS_FOR` says which a kind takes."""

    diff: str | None = None  # review: a unified diff to review (its hunks), with or without files
    trigger: Literal["save"] | None = None  # review, test: started by a save (the newest review wins)
    hashes: dict[str, str] | None = None  # review on save: each file's content hash as saved
    max_tokens: int | None = None  # complete: the reply's cap (default COMPLETE_MAX_TOKENS)
    test_command: str | None = None  # the command that runs the project's tests (default: the configured one)
    experience: ExperienceMode | None = None  # "off" neither reads nor adds experience; "read" adds none
    experience_workspace: str | None = None  # read (and add) the experience of this workspace instead
    commit: str | None = None  # team server: the commit the job runs on (set when a worker checks it out)
    previous_job: str | None = None  # the job this one follows up (a Slack thread's earlier job)
    source: str | None = None  # the surface that asked ("slack"), for a person reading the job later
    slack_thread: str | None = None  # the Slack thread it was asked in ("channel/ts")
    teams: int | None = None  # Croto: teams working in parallel on the task
    topology: str | None = None  # MacNet: the network of agents that writes the code
    agents: int | None = None  # MacNet: agents in the network
    orchestrator: str | None = None  # the puppeteer: who picks the next loop
    merge: str | None = None  # Croto: when the teams' solutions are merged
    script: JsonObject | None = None  # a scripted executor's script (tests); the engine ignores it
    _max_lengths: ClassVar[dict[str, int]] = {"diff": 2_000_000, "test_command": 4_096}

    def validate(self) -> None:
        if self.max_tokens is not None and not 1 <= self.max_tokens <= COMPLETE_MAX_TOKENS_LIMIT:
            raise ProtocolError(f"options.max_tokens must be an integer from 1 to {COMPLETE_MAX_TOKENS_LIMIT}, "
                                f"got {self.max_tokens!r}")
        try:  # teams / topology / agents / orchestrator / merge: checked as a chain's [scale] is
            parse_options(self.scaling())
        except TeamsConfigError as exc:
            raise ProtocolError(f"options.{exc}") from None

    def given(self) -> list[str]:
        """The fields that are set."""
        return [name for name, value in self.to_json().items() if value is not None]

    def for_kind(self, kind: str) -> None:
        """ProtocolError when a set field is not one ``kind`` takes."""
        allowed = OPTIONS_FOR.get(kind, ())
        wrong = [name for name in self.given() if name not in allowed and name != "script"]
        if wrong:
            takes, a = ", ".join(allowed) or "none", "an" if kind[0] in "aeiou" else "a"
            raise ProtocolError(f"options.{wrong[0]} is not an option of {a} {kind} job; {a} {kind} job takes: {takes}")

    def scaling(self) -> dict[str, object]:
        """The team-scaling fields that are set, for ``daemon.teams.config`` (``Scale.with_options``)."""
        return {name: getattr(self, name) for name in TEAM_OPTIONS if getattr(self, name) is not None}


def stored_options(request: JsonObject) -> JobOptions:
    """The options of a stored request (a job's ``request``): what SubmitJob.from_json checked."""
    given = request.get("options")
    return JobOptions.from_json(given if isinstance(given, dict) else {}, where="the job's options")


def stored_options_or_none(request: JsonObject) -> JobOptions | None:
    """:func:`stored_options`, or None for a request that is not this daemon's (nothing to read in it)."""
    try:
        return stored_options(request)
    except ProtocolError:
        return None


TEAM_OPTIONS = ("teams", "topology", "agents", "orchestrator", "merge")
_ANY_JOB = ("commit", "previous_job", "source", "slack_thread")
_TEAM_JOB = ("test_command", "experience", "experience_workspace", *_ANY_JOB, *TEAM_OPTIONS)
OPTIONS_FOR: dict[str, tuple[str, ...]] = {
    "ask": _TEAM_JOB,
    "build": _TEAM_JOB,
    "change": _TEAM_JOB,
    "review": ("diff", "trigger", "hashes", *_TEAM_JOB),
    "test": ("trigger", *_TEAM_JOB),
    "complete": ("max_tokens", *_ANY_JOB),
}
"""The options each job kind takes (``script`` is every kind's: the scripted executors of the tests)."""
