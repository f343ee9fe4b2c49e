"""What runs a job: the :class:`JobExecutor` protocol and the records it exchanges with the queue.

The queue (:mod:`daemon.jobs.manager`) owns states, persistence, events and questions; an
executor only does the work. The default executor wraps the agent engine
(:mod:`daemon.jobs.engine`); tests and benchmarks plug in their own with
``TROUPE_EXECUTOR=package.module:factory``.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

from daemon.events import EventSink
from daemon.job_options import JobOptions, stored_options
from daemon.json_types import Json, JsonDict, JsonObject
from storage.records import FindingDraft

AskHuman = Callable[[str], Awaitable[str]]
"""Ask the person a question; returns their answer (the job waits, without a worker slot)."""
SaveCheckpoint = Callable[[str, JsonDict], Awaitable[None]]
"""Persist ``(last finished phase, checkpoint)`` so a restarted daemon can resume from there."""
Draft = FindingDraft | Mapping[str, Json]
"""A finding as an executor reports it: the store's draft, or a dict of its fields (the store checks it)."""
ReportFindings = Callable[[str, list[Draft]], Awaitable[None]]
"""Store and stream early findings for one file (e.g. the static check) before the job ends."""


@dataclass
class RunningJob:
    """A job as an executor sees it."""

    id: str
    kind: str
    request: JsonObject  # the stored SubmitJob, read back from the store
    workspace_root: Path | None
    workspace_id: int | None
    checkpoint: Json = None  # as the store kept it; the executor checks its shape when it resumes
    last_phase: str | None = None
    resumed: bool = False
    save_checkpoint: SaveCheckpoint | None = None
    report_findings: ReportFindings | None = None
    content: dict[str, tuple[str, float]] = field(default_factory=dict)
    """A review's files as it read them: file -> (content hash, when); its findings carry them."""

    @property
    def prompt(self) -> str:
        return str(self.request.get("prompt") or "")

    @property
    def files(self) -> list[str]:
        return list(self.request.get("files") or [])

    @property
    def options(self) -> JobOptions:
        """The stored request's options as their record (checked when the job was submitted)."""
        return stored_options(self.request)


@dataclass
class ChangeDraft:
    """A proposed change, before the store gives it an id."""

    diff: str
    files: list[str]
    edits: Json = None  # structured edits the store keeps as they are (an LSP WorkspaceEdit as JSON)
    base_hashes: dict[str, str] = field(default_factory=dict)


@dataclass
class JobResult:
    """What an executor hands back; the queue stores it.

    ``findings`` maps a workspace-relative file to its drafts (``storage.records.FindingDraft``
    or dicts of the same fields); they replace that file's open findings.
    """

    status: Literal["succeeded", "failed"]
    result: JsonDict = field(default_factory=dict)
    error: str | None = None
    change: ChangeDraft | None = None
    findings: dict[str, list[Draft]] = field(default_factory=dict)


class JobExecutor(Protocol):
    name: str
    resumable: bool
    """True when ``run`` can continue a job from ``job.checkpoint`` after a restart."""

    async def run(self, job: RunningJob, emit: EventSink, ask_human: AskHuman) -> JobResult: ...

    async def close(self) -> None: ...


def load_executor(spec: str | None = None, **kwargs: object) -> JobExecutor:
    """The executor named by ``spec`` (``module:factory``), ``TROUPE_EXECUTOR``, or the engine."""
    spec = spec or os.environ.get("TROUPE_EXECUTOR") or "daemon.jobs.engine:EngineExecutor"
    module_name, _, attr = spec.partition(":")
    if not attr:
        raise ValueError(f"executor {spec!r} must look like package.module:factory")
    try:
        factory = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"cannot load the job executor {spec!r}: {exc}") from exc
    executor: JobExecutor = factory(**kwargs)  # imported by name: a JobExecutor factory
    return executor
