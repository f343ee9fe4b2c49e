"""The daemon API's experience messages (routes in :mod:`daemon.api.protocol`'s table); the same
``Message`` rules apply: strict ``from_json``, plain ``to_json``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from daemon.api.protocol import Message
from daemon.json_types import JsonObject


@dataclass
class ExperienceInfo(Message):
    """One experience. ``pool``: instructor, assistant, agent, workflow or learning; ``key`` is what
    retrieval matches, ``value`` what reaches a prompt; ``score`` a value gain or reward."""

    id: int
    pool: str
    key: str
    value: str
    task: str = ""
    score: float = 0.0
    uses: int = 0
    pinned: bool = False
    batch: int = 0
    workspace: str | None = None
    job_id: str | None = None
    chain: str | None = None
    phase: str | None = None
    role: str | None = None
    data: JsonObject = field(default_factory=dict)  # the experience's own, as the store keeps it
    created_at: float | None = None
    last_used_at: float | None = None


@dataclass
class ExperienceList(Message):
    items: list[ExperienceInfo]


@dataclass
class ExperienceUpdate(Message):
    pinned: bool


@dataclass
class ExperienceDump(Message):
    """Experiences as plain objects (one JSONL line each in ``troupe experience export``)."""

    items: list[JsonObject]  # rows of storage's export_experience, checked by import_experience
    _max_lengths: ClassVar[dict[str, int]] = {"items": 200_000}


@dataclass
class ImportResult(Message):
    added: int
    skipped: int  # already there


@dataclass
class ExperienceStats(Message):
    total: int
    pools: JsonObject = field(default_factory=dict)  # pool -> {count, uses, pinned}
    retrievals: int = 0
    eliminations: int = 0  # refinement runs
    eliminated: int = 0    # experiences they removed
    counters: dict[str, int] = field(default_factory=dict)


@dataclass
class RetrievalInfo(Message):
    """One retrieval: an experience that reached a job's prompt (or screened one of its findings), and
    why it matched. ``why``: what it was used as (hint, solution, example, workflow, learning,
    screening; "" in a log from before reasons were kept); ``matched``: the query's words it shares;
    ``relevance``: its similarity to the query (None where nothing ranked it). ``pool`` and ``value``
    (clipped) are the experience's, None once it is deleted."""

    experience_id: int
    at: float
    job_id: str | None = None
    phase: str | None = None
    why: str = ""
    matched: list[str] = field(default_factory=list)
    relevance: float | None = None
    pool: str | None = None
    value: str | None = None


@dataclass
class RetrievalList(Message):
    items: list[RetrievalInfo]
