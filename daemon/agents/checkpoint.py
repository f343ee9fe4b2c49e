"""Checkpoints: what a job has done so far, as JSON, and how to rebuild a job's state from one.

The format is described in :mod:`daemon.agents.job`. A checkpoint carries the team's edits
(not the whole repository), so resuming means: a fresh scratch copy of the user's tree, the
edits written over it, then the chain continues at ``next``.
"""

from __future__ import annotations

from dataclasses import asdict

import msgspec

from daemon.agents.accounting import Tally
from daemon.agents.job import CHECKPOINT_VERSION, Checkpoint, state_to_dict
from daemon.agents.workbench import Workbench
from daemon.json_types import JsonDict
from daemon.lint.check import LintIssue
from daemon.workspace.reports import TestReport
from daemon.workspace.scratch import CodeState


class CheckpointError(ValueError):
    """A checkpoint that cannot be resumed (another chain, an unknown version, a broken shape)."""


def make_checkpoint(*, chain: str, job_id: str | None, next_pos: tuple[int, int, int], last_phase: str,
                    bench: Workbench, states: list[CodeState], usage: Tally, warnings: list[str]) -> JsonDict:
    files: dict[str, str | None] = {}
    if bench.scratch is not None:
        for edit in bench.scratch.proposed_change().edits:
            files[edit.path] = edit.after
    return {
        "version": CHECKPOINT_VERSION, "chain": chain, "job_id": job_id, "next": list(next_pos),
        "last_phase": last_phase, "conclusions": dict(bench.conclusions), "files": files,
        "states": [state_to_dict(s) for s in states], "context": bench.context_text,
        "test_report": msgspec.to_builtins(bench.test_report),
        "lint": [asdict(i) for i in bench.lint],
        "usage": usage.to_dict(), "warnings": list(warnings),
    }


def restore(checkpoint: Checkpoint, chain: str, bench: Workbench) -> tuple[tuple[int, int, int], list[CodeState],
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
        if checkpoint.get("test_report"):  # also the shape an older daemon wrote (daemon.workspace.reports)
            bench.test_report = msgspec.convert(checkpoint["test_report"], TestReport)
        bench.lint = [LintIssue(**i) for i in checkpoint.get("lint", [])]
        states = [CodeState(**s) for s in checkpoint.get("states", [])]
        usage = Tally.from_dict(checkpoint.get("usage", {}))
    except (KeyError, TypeError, ValueError, msgspec.ValidationError) as exc:
        raise CheckpointError(f"cannot resume: the checkpoint is damaged ({type(exc).__name__}: {exc})") from None
    return (step, cycle, inner), states, usage, list(checkpoint.get("warnings", []))
