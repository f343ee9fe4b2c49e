"""Checkpoints: what a job has done so far, as JSON, and how to rebuild a job's state from one.

The format is described in :mod:`daemon.agents.job`. A checkpoint carries the team's edits
(not the whole repository), so resuming means: a fresh scratch copy of the user's tree, the
edits written over it, then the chain continues at ``next``.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from daemon.agents.accounting import Tally
from daemon.agents.job import CHECKPOINT_VERSION, state_to_dict
from daemon.agents.tools import report_to_dict
from daemon.agents.workbench import Workbench
from daemon.workspace.scratch import CodeState


class CheckpointError(ValueError):
    """A checkpoint that cannot be resumed (another chain, an unknown version, a broken shape)."""


class StoredReport:
    """A test report read back from a checkpoint: the same reading surface as a live one."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.ok, self.passed, self.failed = bool(data.get("ok")), data.get("passed", 0), data.get("failed", 0)
        self.ran = bool(data.get("ran", True))  # False: there was nothing to run
        self._summary = str(data.get("summary", ""))
        self.failures = [SimpleNamespace(**f) for f in data.get("failures", []) if isinstance(f, dict)]

    def summary(self) -> str:
        return self._summary


def make_checkpoint(*, chain: str, job_id: str | None, next_pos: tuple[int, int, int], last_phase: str,
                    bench: Workbench, states: list[CodeState], usage: Tally, warnings: list[str]) -> dict[str, Any]:
    files: dict[str, str | None] = {}
    if bench.scratch is not None:
        for edit in bench.scratch.proposed_change().edits:
            files[edit.path] = edit.after
    return {
        "version": CHECKPOINT_VERSION, "chain": chain, "job_id": job_id, "next": list(next_pos),
        "last_phase": last_phase, "conclusions": dict(bench.conclusions), "files": files,
        "states": [state_to_dict(s) for s in states], "context": bench.context_text,
        "test_report": report_to_dict(bench.test_report),
        "lint": [vars(i) if hasattr(i, "__dict__") else dict(i) for i in bench.lint],
        "usage": usage.to_dict(), "warnings": list(warnings),
    }


def restore(checkpoint: dict[str, Any], chain: str, bench: Workbench) -> tuple[tuple[int, int, int], list[CodeState],
                                                                                   Tally, list[str]]:
    """Rebuild the workbench from ``checkpoint``; returns (next position, prior code states, usage, warnings)."""
    version = checkpoint.get("version") if isinstance(checkpoint, dict) else None
    if version != CHECKPOINT_VERSION:
        raise CheckpointError(f"cannot resume: checkpoint version {version!r} is not {CHECKPOINT_VERSION}")
    if checkpoint.get("chain") != chain:
        raise CheckpointError(f"cannot resume: the checkpoint is for chain {checkpoint.get('chain')!r}, not {chain!r}")
    try:
        step, cycle, inner = (int(x) for x in checkpoint["next"])
        bench.conclusions.update({str(k): str(v) for k, v in checkpoint.get("conclusions", {}).items()})
        if bench.scratch is not None:
            for path, text in checkpoint.get("files", {}).items():
                if text is None:
                    if bench.scratch.exists(path):
                        bench.scratch.delete(path)
                else:
                    bench.scratch.write(path, text)
            if checkpoint.get("files"):
                bench.scratch.snapshot("resumed from a checkpoint")
        bench.context_text = checkpoint.get("context")
        if checkpoint.get("test_report"):
            bench.test_report = StoredReport(checkpoint["test_report"])
        bench.lint = [SimpleNamespace(**i) for i in checkpoint.get("lint", [])]
        states = [CodeState(**s) for s in checkpoint.get("states", [])]
        usage = Tally.from_dict(checkpoint.get("usage", {}))
    except (KeyError, TypeError, ValueError) as exc:
        raise CheckpointError(f"cannot resume: the checkpoint is damaged ({type(exc).__name__}: {exc})") from None
    return (step, cycle, inner), states, usage, list(checkpoint.get("warnings", []))
