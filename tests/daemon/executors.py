"""A scripted job executor for daemon tests and benchmarks (``TROUPE_EXECUTOR=tests.daemon.executors:scripted``).

A job's ``options`` say what it does: ``phases`` (n phases, each ``sleep`` seconds, each
checkpointed), ``hold`` (seconds to wait after the first phase's checkpoint, saying so in a log
event, unless the job is resumed: a test kills the process meanwhile), ``ask`` (a question for the
human), ``fail`` (an error message), and for a ``change`` job ``path``/``after`` (the proposed new
text of one file), ``tests_fail`` (the summary of a failed test run of it). A review job reports one
finding per file. ``TROUPE_TEST_RESUMABLE=1`` makes the executor resumable. A job submitted through an
adapter (the CLI, the language server, Slack), which sends no such options, says them in its prompt:
``scripted(phases=3,hold=120)`` anywhere in it (numbers; the job's options.script wins).
"""

from __future__ import annotations

import asyncio
import os
import re
from typing import Any

from daemon.events import Event
from daemon.jobs.executor import AskHuman, ChangeDraft, JobResult, RunningJob
from daemon.payloads import LogData, PhaseFinishedData, PhaseStartedData, UsageData

IN_PROMPT = re.compile(r"scripted\(([^)]*)\)")


def prompt_options(prompt: str) -> dict[str, float]:
    """The options a prompt carries as ``scripted(name=number,...)``."""
    found = IN_PROMPT.search(prompt)
    pairs = [item.split("=", 1) for item in found.group(1).split(",") if "=" in item] if found else []
    return {name.strip(): float(value) for name, value in pairs}


class ScriptedExecutor:
    name = "scripted"

    def __init__(self, **_: Any) -> None:
        self.resumable = os.environ.get("TROUPE_TEST_RESUMABLE") == "1"

    async def run(self, job: RunningJob, emit: Any, ask_human: AskHuman) -> JobResult:
        opts = {**prompt_options(job.prompt), **(job.options.script or {})}
        done = int((job.checkpoint or {}).get("done", 0)) if job.resumed else 0
        for index in range(done, int(opts.get("phases", 1))):
            phase = f"phase{index + 1}"
            await emit(Event(PhaseStartedData(phase=phase), phase=phase, role="programmer"))
            await asyncio.sleep(float(opts.get("sleep", 0)))
            await emit(Event(UsageData(model="scripted", prompt_tokens=10, completion_tokens=5, cost=0.0), phase=phase,
                             role="programmer"))
            await emit(Event(PhaseFinishedData(phase=phase, conclusion="ok"), phase=phase))
            if job.save_checkpoint is not None:
                await job.save_checkpoint(phase, {"done": index + 1})
            if index == 0 and opts.get("hold") and not job.resumed:  # its process is killed meanwhile
                await emit(Event(LogData(level="info", text=f"holding for {opts['hold']} s")))
                await asyncio.sleep(float(opts["hold"]))
        result: dict[str, Any] = {"resumed_from": done}
        if opts.get("ask"):
            result["human_said"] = await ask_human(str(opts["ask"]))
        if opts.get("fail"):
            return JobResult("failed", result, error=str(opts["fail"]))
        if job.kind == "ask":
            result["answer"] = f"echo: {job.prompt}"
        findings = {}
        if job.kind == "review":
            findings = {f: [{"message": f"scripted review of {f}", "severity": "minor", "start_line": 1,
                             "rule": "scripted"}] for f in job.files}
        change = None
        if job.kind == "change" and job_root_ok(job):
            change = _change(job, str(opts["path"]), str(opts["after"]))
        if opts.get("tests_fail"):  # the shape of the engine's result: its own test run of the change
            result["test_report"] = {"ok": False, "passed": 1, "failed": 1, "failures": [],
                                     "summary": str(opts["tests_fail"])}
        return JobResult("succeeded", result, findings=findings, change=change)

    async def close(self) -> None:
        return None


def job_root_ok(job: RunningJob) -> bool:
    script = job.options.script or {}
    return job.workspace_root is not None and "path" in script and "after" in script


def _change(job: RunningJob, path: str, after: str) -> ChangeDraft:
    from daemon.workspace.change import FileEdit, ProposedDiff, file_sha256, render_diff

    assert job.workspace_root is not None
    target = job.workspace_root / path
    before = target.read_text() if target.exists() else None
    edit = FileEdit(path, before, after)
    proposed = ProposedDiff(render_diff([edit]), [edit], {path: file_sha256(target)})
    return ChangeDraft(proposed.diff, proposed.files, edits=proposed.to_dict(),
                       base_hashes={k: v for k, v in proposed.base_hashes.items() if v})


def scripted(**kwargs: Any) -> ScriptedExecutor:
    return ScriptedExecutor(**kwargs)
