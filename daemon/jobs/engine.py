"""The default executor: the agent engine (``daemon.agents.runner.ChainRunner``) behind the
:class:`~daemon.jobs.executor.JobExecutor` protocol.

Per job it loads the workspace's settings (with its editor overrides on top), gives the engine
a gateway whose usage lands in the store, saves the engine's checkpoints (so a restarted daemon
resumes after the last finished phase), and translates the outcome (answer, proposed change,
findings, test report) into a :class:`JobResult`. A review runs the static check first and
reports those findings at once, before the model has said anything. Experience
(``daemon.experience``) reaches each job's prompts, and every finished job is mined for
experience in the background, one job at a time (``options.experience``: "off" neither reads nor
adds experience, "read" adds none, "learn" mines before the job ends — ``troupe eval --experience-split``).
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from daemon.config import ConfigError, Settings, load_settings, with_overrides
from daemon.events import EventSink
from daemon.jobs.executor import AskHuman, ChangeDraft, Draft, JobResult, RunningJob
from daemon.jobs.newest import changed_since, read_content
from daemon.json_types import JsonDict, JsonObject
from daemon.llm.local import LocalModel

if TYPE_CHECKING:
    from daemon.agents.findings import Finding
    from daemon.experience.mining import MiningReport
    from daemon.experience.session import JobExperience
    from daemon.llm.budget import Usage
    from daemon.llm.gateway import Gateway
    from storage import AsyncStore

log = logging.getLogger("troupe.jobs")


def finding_draft(finding: Finding) -> JsonDict:
    """An engine finding (``daemon.agents.findings.Finding``) as the store's draft fields."""
    return {"message": finding.message, "severity": finding.severity, "start_line": max(1, finding.start_line),
            "end_line": max(finding.start_line, finding.end_line or finding.start_line), "rule": finding.rule,
            "suggested_fix": finding.replacement}


class EngineExecutor:
    name = "engine"
    resumable = True

    def __init__(self, *, store: AsyncStore | None = None, **_: object) -> None:
        self.store = store
        self._gateways: dict[str, Gateway] = {}
        self._mining: set[asyncio.Task[MiningReport | None]] = set()
        self._mining_slot = asyncio.Semaphore(1)  # mining is background work: one job at a time
        self.local = LocalModel()  # the bundled model, started on first need when nothing is configured

    async def preload(self) -> None:
        """Warm what a first job would wait for: litellm's import and, with no model configured, the local
        model — at once: the model's join hashes outside the GIL and its server is another process."""
        from daemon.llm.gateway import import_litellm

        async def local() -> None:
            try:
                await self.local.settings_for(load_settings(None).model)
            except ConfigError as exc:
                log.error("not starting the local model: %s", exc)

        await asyncio.gather(asyncio.to_thread(import_litellm), local())

    def _gateway(self, settings: Settings) -> Gateway:
        from daemon.llm.gateway import Gateway

        key = repr((settings.model.default, settings.model.api_base, sorted(settings.model.roles.items()),
                    settings.model.timeout, settings.model.max_retries, settings.model.concurrency))
        if key not in self._gateways:  # one per model configuration: its concurrency limit is shared
            self._gateways[key] = Gateway(settings.model, on_usage=self._record_usage)
        return self._gateways[key]

    async def _record_usage(self, job_id: str | None, role: str | None, model: str, usage: Usage) -> None:
        if self.store is not None:
            await self.store.record_usage(job_id, model, usage.prompt_tokens, usage.completion_tokens,
                                          usage.cost, role=role, cached_prompt_tokens=usage.cached_prompt_tokens)

    async def run(self, job: RunningJob, emit: EventSink, ask_human: AskHuman) -> JobResult:
        from daemon.agents.context import RunContext
        from daemon.agents.job import JobSpec
        from daemon.llm.budget import Budget
        from daemon.teams.puppeteer import PolicyBook
        from daemon.teams.run import TeamsRunner

        try:
            settings = with_overrides(load_settings(job.workspace_root), await self._overrides(job))
        except ConfigError as exc:
            return JobResult("failed", error=f"configuration: {exc}")
        settings.model = await self.local.settings_for(settings.model)  # a configured model always wins
        if job.kind == "complete":  # the bare model: one call, no chain (troupe eval's bare row)
            from daemon.jobs.complete import run_complete

            budget = Budget(tokens=settings.budget.tokens, dollars=settings.budget.dollars)
            return await run_complete(job, self._gateway(settings), budget, emit)
        if job.kind == "review" and job.workspace_root is not None:
            job.content.update(read_content(job.workspace_root, job.files))  # the text this review reads
        if job.kind == "review" and job.workspace_root is not None and job.report_findings is not None:
            await self._static_first(job)
        spec = JobSpec(
            chain=job.kind, task=job.prompt or _default_task(job), workspace=job.workspace_root, files=job.files,
            diff=job.options.diff, job_id=job.id,
            budget=Budget(tokens=settings.budget.tokens, dollars=settings.budget.dollars),
            resume_from=job.checkpoint if job.resumed and isinstance(job.checkpoint, dict) else None,
            test_command=job.options.test_command,
        )
        try:
            experience = await self._experience(job)
        except ConfigError as exc:
            return JobResult("failed", error=f"experience: {exc}")
        # TeamsRunner is ChainRunner unless the chain or the job's options ask for teams, a network or
        # an orchestrator (daemon.teams); a learned orchestrator's policy lives in the store.
        context = RunContext(self._gateway(settings), emit, settings, ask_human=ask_human,
                             on_checkpoint=job.save_checkpoint, experience=experience)
        runner = TeamsRunner(context, options=job.options.scaling(), policies=PolicyBook(self.store))
        outcome = await runner.run(spec)
        mined = None
        mode = job.options.experience or "on"
        if experience is not None and mode == "learn":  # the next job (an eval's) must find what this one taught
            mined = await self._mine(experience, self._gateway(settings))
        elif experience is not None and mode == "on":
            task = asyncio.create_task(self._mine(experience, self._gateway(settings)), name=f"troupe-mine-{job.id}")
            self._mining.add(task)
            task.add_done_callback(self._mining.discard)
        summary = outcome.summary()
        summary.pop("findings", None)  # stored as findings rows; the result keeps the count
        result = {**summary, "answer": outcome.conclusion}
        if experience is not None:
            result["experience"] = {"mode": mode, "used": len(set(experience.used)),
                                    "mined": vars(mined) if mined is not None else None}
        change = None
        if outcome.change is not None:
            proposed = outcome.change
            change = ChangeDraft(proposed.diff, proposed.files, edits=proposed.to_dict(),
                                 base_hashes={k: v for k, v in proposed.base_hashes.items() if v})
        findings: dict[str, list[Draft]] = {f: [] for f in job.files} if job.kind == "review" else {}
        for finding in outcome.findings:
            findings.setdefault(finding.file, []).append(finding_draft(finding))
        if job.kind == "review" and spec.diff and outcome.status == "succeeded":
            await self._keep_unreviewed(job, spec.diff, findings)
        if job.kind == "review" and job.workspace_root is not None:
            for rel in changed_since(job.workspace_root, job.content):  # saved again meanwhile: unsure what it read
                findings.pop(rel, None)
                job.content.pop(rel, None)
        return JobResult(outcome.status, result, error=outcome.error, change=change, findings=findings)

    async def _overrides(self, job: RunningJob) -> JsonObject | None:
        """The editor overrides the store keeps for the job's workspace (``troupe.model`` …)."""
        if self.store is None or job.workspace_id is None:
            return None
        workspace = await self.store.get_workspace(job.workspace_id)
        return (workspace.settings or {}).get("overrides") if workspace is not None else None

    async def _keep_unreviewed(self, job: RunningJob, diff: str, findings: dict[str, list[Draft]]) -> None:
        """A hunk review only judged the changed lines: the model's older findings elsewhere in the
        file stay open (lint findings are not kept: the static check re-read the whole file)."""
        from daemon.review.gitdiff import diff_ranges

        if self.store is None or job.workspace_id is None:
            return
        for file, spans in diff_ranges(diff).items():
            for old in await self.store.list_findings(job.workspace_id, file):
                touched = any(a <= old.end_line and old.start_line <= b for a, b in spans)
                if old.rule is None and not touched:
                    findings.setdefault(file, []).append({
                        "message": old.message, "severity": str(old.severity), "start_line": old.start_line,
                        "start_col": old.start_col, "end_line": old.end_line, "end_col": old.end_col,
                        "suggested_fix": old.suggested_fix, "fingerprint": old.fingerprint})

    async def _experience(self, job: RunningJob) -> JobExperience | None:
        """The job's experience hook, or None (no store, ``[experience] enabled = false``, or the job's
        ``options.experience`` is "off"). ``options.experience_workspace`` (a registered root) makes the
        job read and add that workspace's experience instead of its own's (an eval's items share one)."""
        from daemon.experience.session import JobExperience
        from daemon.experience.settings import JOB_MODES, load_experience_settings

        mode = job.options.experience or "on"
        if mode not in JOB_MODES:
            raise ConfigError(f"options.experience must be one of {', '.join(JOB_MODES)}, not {mode!r}")
        if self.store is None or mode == "off":
            return None

        try:
            settings = load_experience_settings(job.workspace_root)
        except ConfigError as exc:
            log.warning("experience is off for job %s: %s", job.id, exc)
            return None
        if not settings.enabled:
            return None
        workspace_id = job.workspace_id
        if job.options.experience_workspace:
            shared = await self.store.find_workspace_for(job.options.experience_workspace)
            if shared is None:
                raise ConfigError(f"options.experience_workspace {job.options.experience_workspace} is not "
                                  "a registered workspace")
            workspace_id = shared.id
        return JobExperience(self.store, settings, job_id=job.id, workspace_id=workspace_id)

    async def _mine(self, experience: JobExperience, gateway: Gateway) -> MiningReport | None:
        """Mine the job's experience (one job at a time); the report, or None when mining failed."""
        async with self._mining_slot:
            try:
                report = await experience.mine(gateway)
            except Exception:  # mining is best effort: the job's result is already safe
                log.exception("experience: mining job %s failed", experience.job_id)
                return None
        log.info("experience from job %s: %s", experience.job_id, report)
        return report

    async def _static_first(self, job: RunningJob) -> None:
        """The static check's findings, stored and streamed before the model review starts."""
        from daemon.agents.findings import lint_findings
        from daemon.lint.check import static_check

        assert job.workspace_root is not None and job.report_findings is not None
        issues = await static_check(Path(job.workspace_root), job.files)
        grouped: dict[str, list[Draft]] = {}
        for finding in lint_findings(issues):
            if finding.file.startswith("/"):  # outside the workspace (a symlink): not this review's
                continue
            grouped.setdefault(finding.file, []).append(finding_draft(finding))
        for file, drafts in grouped.items():
            await job.report_findings(file, drafts)

    async def close(self) -> None:
        if self._mining:  # a few seconds to finish mining; what is left is lost, not half-written
            _, pending = await asyncio.wait(set(self._mining), timeout=10)
            for task in pending:
                task.cancel()
        self._gateways.clear()
        await self.local.close()


def _default_task(job: RunningJob) -> str:
    if job.kind == "review":
        return "Review " + (", ".join(job.files) if job.files else "the diff") + " for bugs and risks."
    if job.kind == "test":
        return "Run the tests" + (f" that cover {', '.join(job.files)}" if job.files else "") + "; explain failures."
    return job.prompt
