"""What a job asks of the engine (:class:`JobSpec`), what it gets back (:class:`JobOutcome`), and
the checkpoint that lets a restarted daemon resume a job after its last finished phase.

Checkpoint format (a JSON-serialisable dict, version 1)::

    {"version": 1, "chain": "build", "job_id": "...",
     "next": [step_index, cycle, phase_index_in_loop],   # where to resume
     "last_phase": "review_modify",
     "conclusions": {"review_comment": "...", ...},
     "files": {"app.py": "<text>", "old.py": null},     # the team's edits so far (null: deleted)
     "states": [{"index": 0, "hash": "...", "files": [], "instruction": "..."}, ...],
     "test_report": {...} | null, "lint": [...], "findings": [...],
     "usage": {"calls": n, "prompt_tokens": n, ...}, "warnings": [...]}
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import msgspec

from daemon.agents.accounting import PhaseStats, Tally
from daemon.agents.findings import Finding
from daemon.json_types import JsonDict, JsonObject
from daemon.llm.budget import Budget
from daemon.workspace.change import ProposedDiff
from daemon.workspace.reports import TestReport
from daemon.workspace.scratch import CodeState

CHECKPOINT_VERSION = 1

Checkpoint = JsonObject
"""A checkpoint (the format above) as JSON: :func:`daemon.agents.checkpoint.make_checkpoint` writes it
(as a checked :data:`~daemon.json_types.JsonDict`); it is read back from the store, or by ``CrossTeams``
from a team's outcome, and :func:`~daemon.agents.checkpoint.restore` checks its shape."""


@dataclass
class Selection:
    """Part of a file the user selected (1-based, inclusive lines)."""

    path: str
    start_line: int
    end_line: int


@dataclass
class JobSpec:
    chain: str                      # "build", "change", "review", "test", "ask", or a repo chain
    task: str                       # the request, the question, or what to look for
    workspace: Path | None = None   # the user's repository (read only; the team works on a copy)
    files: list[str] = field(default_factory=list)  # files the user pointed at (review targets, focus)
    selection: Selection | None = None
    diff: str | None = None         # review this diff (its files are read from the workspace)
    job_id: str | None = None
    budget: Budget | None = None
    resume_from: Checkpoint | None = None  # a checkpoint from an earlier run of this job
    test_command: str | None = None  # overrides the configured test command


@dataclass
class JobOutcome:
    status: Literal["succeeded", "failed"]
    chain: str
    conclusion: str = ""               # the answer, or the last phase's conclusion
    conclusions: dict[str, str] = field(default_factory=dict)  # every phase's latest conclusion
    change: ProposedDiff | None = None  # None when nothing changed
    findings: list[Finding] = field(default_factory=list)
    rejected_findings: list[JsonDict] = field(default_factory=list)  # {"finding": ..., "reason": ...}
    test_report: TestReport | None = None  # the last test run of the job's code
    tests: str | None = None  # chains with a test loop: "passed", "failed" or "not run" (nothing to run)
    usage: Tally = field(default_factory=Tally)
    phases: list[PhaseStats] = field(default_factory=list)
    code_states: list[CodeState] = field(default_factory=list)
    checkpoint: Checkpoint | None = None
    error: str | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status == "succeeded"

    def summary(self) -> JsonDict:
        """A JSON-serialisable digest for the job's stored result."""
        return {
            "status": self.status, "chain": self.chain, "conclusion": self.conclusion,
            "conclusions": self.conclusions, "error": self.error, "warnings": self.warnings,
            "findings": [f.to_dict() for f in self.findings], "rejected_findings": self.rejected_findings,
            "test_report": msgspec.to_builtins(self.test_report), "tests": self.tests, "usage": self.usage.to_dict(),
            "phases": [{"phase": p.phase, "cycle": p.cycle, **p.tally.to_dict()} for p in self.phases],
            "files": self.change.files if self.change else [],
        }


class PhaseFailed(RuntimeError):
    """A phase could not produce what it must (after bounded retries); the job fails with this message."""


def state_to_dict(state: CodeState) -> JsonDict:
    return {"index": state.index, "hash": state.hash, "files": list(state.files),
            "instruction": state.instruction, "at": state.at}
