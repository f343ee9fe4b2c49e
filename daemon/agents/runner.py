"""Run a chat chain for one job: phases, loops and tools in order, in a scratch copy of the repo.

    runner = ChainRunner(RunContext(gateway, emit, settings, ask_human=ask_human, on_checkpoint=save))
    outcome = await runner.run(JobSpec(chain="change", task="add --verbose", workspace=repo, job_id=job.id,
                                       budget=Budget(tokens=200_000)))
    outcome.status, outcome.change.diff, outcome.findings, outcome.usage.tokens

Events (all with ``phase``/``role`` where they belong): PHASE_STARTED, MESSAGE for every turn,
QUESTION/ANSWER for questions to the instructor, USAGE per model call, TOOL_RUN, CODE_STATE,
LOG (dropped findings, warnings), PHASE_FINISHED with tokens, cost and time. Questions to the
human go through ``ask_human`` (which emits its own QUESTION/ANSWER). Proposed changes and
findings come back in the :class:`JobOutcome` for the daemon to store and announce.

After every finished phase a checkpoint goes to ``on_checkpoint(last_phase, checkpoint)`` and
into the outcome; ``JobSpec.resume_from`` continues from one. A spent budget or a phase that
cannot produce what it must ends the job as ``failed`` with a readable error; cancellation
(``asyncio.CancelledError``) propagates after the scratch copy is removed.
"""

from __future__ import annotations

import asyncio
import itertools
import re
import time
from dataclasses import replace
from pathlib import Path

from daemon.agents.accounting import Meter
from daemon.agents.checkpoint import CheckpointError, make_checkpoint, restore
from daemon.agents.context import RunContext
from daemon.agents.cycles import LastReview, seen_review, skip_reason, undo_if_worse, view_for
from daemon.agents.dialogue import Dialogue, Turn
from daemon.agents.findings import Finding, failing_test_findings, lint_findings, regression_findings
from daemon.agents.hooks import NO_HOOKS, DelegatedPhase, LoopControl, PhaseDelegate, RunHooks
from daemon.agents.job import JobOutcome, JobSpec, PhaseFailed
from daemon.agents.loader import ChainError
from daemon.agents.model import EMPTY_FIELD_MEANS, Chain, Loop, Phase, Produces, Tool, Until
from daemon.agents.produce import Producer
from daemon.agents.timing import speed_limit, too_late
from daemon.agents.tools import Tools
from daemon.agents.workbench import Workbench
from daemon.events import Event
from daemon.json_types import JsonDict
from daemon.llm.errors import BudgetExceeded, LLMError, TimeLimitReached
from daemon.llm.gateway import Completion
from daemon.payloads import LogData, Payload, PhaseFinishedData, PhaseStartedData
from daemon.workspace.repomap import estimate_tokens
from daemon.workspace.scratch import CodeState, Scratch

CONTEXT_SHARE = 0.5  # of the model's context window, for code and repository context in one prompt


class ChainRunner:
    def __init__(self, context: RunContext, hooks: RunHooks = NO_HOOKS) -> None:
        self.context = context
        self.gateway, self.ask_human, self.settings = context.gateway, context.ask_human, context.settings
        self.on_checkpoint, self.scratch_dir = context.on_checkpoint, context.scratch_dir
        self.delegate, self.orchestrator = hooks.delegate, hooks.orchestrator  # see daemon.agents.hooks
        # Experience (daemon.experience) reaches the prompts, may skip or shorten redundant steps (never
        # the tests), screens findings people dismissed, and watches events to learn from the run.
        self.experience = context.experience
        self.emit = context.emit if self.experience is None else self.experience.observe(context.emit)

    async def run(self, spec: JobSpec) -> JobOutcome:
        try:
            chain = (await self.context.chains_for(spec)).get(spec.chain)
        except (ChainError, KeyError) as exc:
            message = exc.args[0] if isinstance(exc, KeyError) else str(exc)
            return JobOutcome("failed", spec.chain, error=message)
        return await _Run(self, spec, chain).execute()


class _Run:
    """One job's run of one chain."""

    def __init__(self, runner: ChainRunner, spec: JobSpec, chain: Chain) -> None:
        self.runner, self.spec, self.chain = runner, spec, chain
        window = runner.settings.model.context_window
        self.context_tokens = int(window * CONTEXT_SHARE)
        self.phase_name: str | None = None
        self.last_phase: str | None = None
        self.meter = Meter(runner.gateway, self.say, job_id=spec.job_id, budget=spec.budget)
        self.time_limit = chain.time_limit  # seconds; from the model's measured speed when the chain says so
        self.outcome = JobOutcome("failed", chain.name)
        self.prior_states: list[CodeState] = []
        self.resume_mark = 0
        self.bench: Workbench | None = None
        self.last_review: LastReview | None = None  # what the current review loop's reviewer saw and said
        self.conversations: dict[str, tuple[Turn, ...]] = {}  # each phase's last dialogue, for ``continues``

    async def say(self, data: Payload, role: str | None = None) -> None:
        await self.runner.emit(Event(data, phase=self.phase_name, role=role, job_id=self.spec.job_id))

    async def execute(self) -> JobOutcome:
        started = time.monotonic()
        if self.chain.time_limit is not None:
            self.meter.deadline = started + self.chain.time_limit
        scratch: Scratch | None = None
        try:
            scratch = await self._scratch()
            self.bench = Workbench(self.spec, self.chain, scratch, budget_chars=self.context_tokens * 4)
            await self._time_limit_from_speed(started)
            self.bench.deadline = self.meter.deadline
            test_command = self.spec.test_command or self.runner.settings.test_command
            self.tools = Tools(self.bench, self.say, test_command=test_command, context_tokens=self.context_tokens,
                               window=self.runner.settings.model.context_window,
                               per_test_timeout=self.runner.settings.per_test_timeout)
            self.produce = Producer(self.bench, self.say)
            start = (0, 0, 0)
            if self.spec.resume_from:
                start, self.prior_states, usage, self.outcome.warnings = restore(
                    self.spec.resume_from, self.chain.name, self.bench)
                self.meter.job.merge(usage)
                self.resume_mark = len(scratch.states) if scratch else 0
                await self.say(LogData(level="info", text=f"resumed after phase "
                                       f"{self.spec.resume_from.get('last_phase')}"))
            await self._steps(start)
            self.outcome.status = "succeeded"
        except BudgetExceeded as exc:
            self.outcome.error = f"stopped: {exc}"
        except (PhaseFailed, CheckpointError, LLMError, ValueError, OSError) as exc:
            where = f"phase {self.phase_name!r}: " if self.phase_name and self.phase_name not in str(exc) else ""
            self.outcome.error = f"{where}{exc}"
        finally:
            self.meter.job.seconds += time.monotonic() - started
            try:
                task = asyncio.current_task()
                if task is None or not task.cancelling():
                    self._finish(scratch)
                    self._capture(scratch)
            finally:
                if scratch is not None:
                    await asyncio.to_thread(scratch.cleanup)
        if self.outcome.error:
            await self.say(LogData(level="error", text=self.outcome.error))
        return self.outcome

    async def _time_limit_from_speed(self, started: float) -> None:
        """The chain's time limit from the model's measured speed, when the chain names the phases it
        covers (daemon.agents.timing); its fixed ``time_limit`` stays where the speed is not known."""
        assert self.bench is not None
        code = sum(estimate_tokens(text) for path in self.spec.files if (text := self.bench.read(path)) is not None)
        derived = speed_limit(self.chain, self.runner.settings.model, min(code, self.context_tokens))
        if derived is not None:
            self.time_limit, why = derived
            self.meter.deadline = started + self.time_limit
            await self.say(LogData(level="info", text=f"time limit {why}"))

    async def _scratch(self) -> Scratch | None:
        workspace = self.spec.workspace
        if self.chain.start != "empty" and workspace is None:
            raise ValueError(f"the {self.chain.name!r} chain works on a repository, but the job names none")
        if workspace is not None and not Path(workspace).is_dir():
            raise ValueError(f"workspace {workspace} is not a folder")
        if not self.chain.writes_code:
            return None  # read-only chains read the user's tree directly, through confine()
        if workspace is None:  # an "empty" chain: new software
            return await asyncio.to_thread(Scratch.empty, self.runner.scratch_dir)
        return await asyncio.to_thread(Scratch.from_repo, Path(workspace), self.runner.scratch_dir)

    def _states(self, scratch: Scratch | None) -> list[CodeState]:
        if scratch is None:
            return list(self.prior_states)
        if not self.spec.resume_from:
            return list(scratch.states)
        new = scratch.states[self.resume_mark:]
        return self.prior_states + [replace(s, index=len(self.prior_states) + i) for i, s in enumerate(new)]

    def _finish(self, scratch: Scratch | None) -> None:
        out, bench = self.outcome, self.bench
        if self.meter.phase is not None:  # the phase that failed
            self.meter.end_phase()
        out.usage, out.phases = self.meter.job, self.meter.phases
        out.code_states = self._states(scratch)
        if bench is None:
            return
        out.conclusions = dict(bench.conclusions)
        out.test_report = bench.test_report
        found = out.findings + failing_test_findings(bench.related, bench.review_files(), out.findings)
        out.findings = lint_findings(bench.lint) + found + regression_findings(bench.broken, bench.saved_lines(), found)
        if scratch is not None and out.status == "succeeded":  # a failed job's edits stay in its checkpoint
            change = scratch.proposed_change()
            out.change = None if change.empty else change
            asked = any(isinstance(s, Phase) and s.produces is Produces.CODE for s in self.chain.steps)
            if out.change is None and asked:
                # the job was asked for a change (a code phase of its own, not a fix loop): none is no success
                out.status = "failed"
                out.error = ("no change: the team's edits left every file as it was; ask again with more detail "
                             "(what is wrong, where)")
        last = [p for p in self.chain.phases() if p.name in bench.conclusions]
        answers = [p for p in last if p.produces in (Produces.ANSWER, Produces.TEST_REPORT)]
        tested = any(isinstance(s, Loop) and s.until is Until.TESTS_PASS for s in self.chain.steps)
        report = out.test_report
        if report and tested:
            out.tests = "passed" if report.ok else "failed" if report.ran else "not run"
            if out.status == "succeeded" and out.tests == "failed" and out.change is None:
                # the job is there to make the tests pass: failing tests and nothing proposed is no success
                out.status = "failed"
                first = report.summary().split("\n", 1)[0]
                out.error = (f"the tests cannot run here: {report.cannot_run}" if report.cannot_run else
                             f"the tests still fail and the team proposed no change ({first})")
        if answers:
            out.conclusion = bench.conclusions[answers[-1].name]
        elif report is not None and out.tests == "failed":
            out.conclusion = f"The tests still fail after the change. {report.summary()}"
        elif report is not None and out.tests == "not run":
            out.conclusion = f"No tests ran to check the change. {report.summary()}"
        elif report is not None and out.tests == "passed":
            out.conclusion = report.summary()
        elif last:
            out.conclusion = bench.conclusions[last[-1].name]

    def _capture(self, scratch: Scratch | None) -> None:
        """Let experience keep what it mines from this run before the scratch copy goes."""
        if self.runner.experience is None:
            return
        try:
            self.runner.experience.capture(self.spec, self.chain, self.outcome, scratch)
        except Exception as exc:  # learning must never cost the user the job's result
            self.outcome.warnings.append(f"experience: this run could not be recorded ({type(exc).__name__}: {exc})")

    # -- steps ---------------------------------------------------------------------------
    async def _steps(self, start: tuple[int, int, int]) -> None:
        driven_until = -1
        for index, step in enumerate(self.chain.steps):
            if index < start[0] or index < driven_until:
                continue
            if isinstance(step, Tool):
                await self.tools.run(step)
            elif isinstance(step, Phase):
                await self._phase(step, None)
                await self._checkpoint((index + 1, 0, 0), step.name)
            elif self.runner.orchestrator is not None:  # it picks the cycles of these consecutive loops
                loops = [s for s in itertools.takewhile(lambda s: isinstance(s, Loop), self.chain.steps[index:])
                         if isinstance(s, Loop)]  # (isinstance again, for the type checker)
                await self.runner.orchestrator.drive(loops, LoopControl(self))
                driven_until = index + len(loops)
                await self._checkpoint((driven_until, 0, 0), self.last_phase or step.name)
            else:
                resume = start[1:] if index == start[0] else (0, 0)
                await self._loop(step, index, *resume)
                await self._checkpoint((index + 1, 0, 0), self.last_phase or step.name)

    async def _loop(self, loop: Loop, index: int, first_cycle: int, first_phase: int) -> None:
        assert self.bench is not None
        experience = self.runner.experience
        if experience is not None and (first_cycle, first_phase) == (0, 0) and loop.until is not Until.TESTS_PASS:
            plan = await experience.plan_loop(self.spec, self.chain, loop)  # workflow shortcuts; never the tests
            if plan is not None and plan.cycles is not None:
                if plan.cycles == 0:
                    return
                loop = replace(loop, max_cycles=plan.cycles)
        self.last_review = None
        for cycle in range(first_cycle, loop.max_cycles + 1):
            if first_phase == 0 and (await self._loop_done(loop) or await self._nothing_to_test(loop)
                                     or await self._cycle_skipped(loop, cycle)):
                return
            if cycle == loop.max_cycles:
                if loop.until is not Until.FINISHED:
                    self.outcome.warnings.append(f"loop {loop.name!r}: {self._unmet(loop)} after "
                                                 f"{loop.max_cycles} cycle(s)")
                    await self.say(LogData(level="warning", text=self.outcome.warnings[-1]))
                return
            idle = True  # every phase of the cycle was skipped: the next cycle would be the same
            before = None  # the tests as this cycle's fix found them (a cycle resumed mid-way: unknown)
            if loop.until is Until.TESTS_PASS and first_phase == 0:
                self.last_review = LastReview(seen=self.bench.snapshot())  # what this cycle's fix starts from
                before = self.bench.test_report
            for position in range(first_phase, len(loop.phases)):
                phase = loop.phases[position]
                self.bench.view = view_for(loop, position, cycle, self.bench, self.last_review)
                try:
                    concluded = await self._phase(phase, cycle + 1)
                except PhaseFailed as exc:
                    if loop.until is not Until.TESTS_PASS:
                        raise
                    await self._attempt_failed(loop, exc)  # a fix attempt: the change so far still stands
                    return
                finally:
                    self.bench.view = None
                idle = idle and self.bench.conclusions.get(phase.name, "").startswith("(skipped: ")
                if loop.until is Until.FINISHED and position == 0:
                    self.last_review = seen_review(self.bench, self.bench.conclusions.get(phase.name, ""))
                if loop.until is Until.FINISHED and position == 0 and self._says_done(loop, phase, concluded):
                    return
                following = (index, cycle, position + 1) if position + 1 < len(loop.phases) else (index, cycle + 1, 0)
                await self._checkpoint(following, phase.name)
            if idle:
                return
            if before is not None and self.last_review is not None and await undo_if_worse(
                    loop, before, self.last_review.seen, self.bench, self.tools, self.say):
                return  # the next cycle would start from the same code, with the same prompt
            first_phase = 0

    async def _attempt_failed(self, loop: Loop, exc: PhaseFailed) -> None:
        """A phase of a test loop whose reply could not be used ends the loop, not the job."""
        if self.meter.phase is not None:
            self.meter.end_phase()
        self.phase_name = None
        self.outcome.warnings.append(f"loop {loop.name!r} stopped: {exc}")
        await self.say(LogData(level="warning", text=self.outcome.warnings[-1]))

    async def _loop_done(self, loop: Loop) -> bool:
        assert self.bench is not None
        if loop.until is Until.TESTS_PASS:
            return bool((await self.tools.tests()).ok)
        if loop.until is Until.NO_PLACEHOLDERS:
            return not self.bench.refresh_unfinished()
        return False

    async def _nothing_to_test(self, loop: Loop) -> bool:
        """A test loop with no tests to run has nothing to fix: it is skipped, and says so (unless the
        chain asks the team to write the tests, ``without_tests = "run"``)."""
        report = self.bench.test_report if self.bench is not None else None
        cannot = report.cannot_run if report is not None else ""
        if loop.until is Until.TESTS_PASS and cannot:
            reason = f"the tests cannot run here: {cannot}"  # no change to the code would help
            await self.say(LogData(level="warning", text=f"loop {loop.name!r} skipped: {reason}", skipped=loop.name,
                                   reason=reason))
            return True
        if loop.until is not Until.TESTS_PASS or loop.without_tests != "skip" or report is None or report.ran:
            return False
        reason = report.summary().split(":")[0].strip() or "nothing to run"
        await self.say(LogData(level="info", text=f"loop {loop.name!r} skipped: {reason.lower()}", skipped=loop.name,
                               reason=report.summary()))
        return True

    async def _cycle_skipped(self, loop: Loop, cycle: int) -> bool:
        """A cycle that cheap signals decide (``skip_cycle_when``): the loop ends, and says why."""
        if not loop.skip_cycle_when or self.bench is None or cycle >= loop.max_cycles:
            return False
        reason = await skip_reason(loop, cycle, self.last_review, self.bench, self.tools)
        if reason is None:
            return False
        await self.say(LogData(level="info", text=f"loop {loop.name!r} cycle {cycle + 1} skipped: {reason}",
                               skipped=loop.name, reason=reason))
        return True

    def _unmet(self, loop: Loop) -> str:
        return "the tests still fail" if loop.until is Until.TESTS_PASS else "placeholders remain"

    def _says_done(self, loop: Loop, phase: Phase, concluded: bool) -> bool:
        """The stop word after the marker ("<INFO> Finished"), or a reply that is only the stop word.
        A comment such as "Not finished: ..." without the marker is a comment, not a stop."""
        assert self.bench is not None
        conclusion = self.bench.conclusions.get(phase.name, "")
        if not concluded:
            return conclusion.strip(" .!*_`").lower() == loop.stop_word.lower()
        return re.search(rf"\b{re.escape(loop.stop_word)}\b", conclusion[:80], re.IGNORECASE) is not None

    async def _phase(self, phase: Phase, cycle: int | None) -> bool:
        """Run one phase; True when its dialogue ended with the marker."""
        assert self.bench is not None
        self.phase_name = phase.name
        self.meter.start_phase(phase.name, cycle)
        await self.say(PhaseStartedData(phase=phase.name, cycle=cycle or None))
        if late := self._out_of_time():
            return await self._skipped(phase, cycle, late)
        if phase.skip_if_empty and not self.bench.field(phase.skip_if_empty).strip():
            return await self._skipped(phase, cycle, EMPTY_FIELD_MEANS.get(
                phase.skip_if_empty, f"{{{phase.skip_if_empty}}} is empty: nothing to do"))
        if phase.skip_if_findings and self.outcome.findings:
            return await self._skipped(phase, cycle, f"earlier steps made {len(self.outcome.findings)} finding(s)")
        history = self.conversations.get(phase.continues, ()) if phase.continues else ()
        if phase.continues and not history:
            return await self._skipped(phase, cycle, f"phase {phase.continues!r} did not talk: nothing to continue")
        prompt = self.bench.render(phase.template)
        if phase.skip_if_excerpted and (parts := sorted(self.bench.excerpted & set(self.bench.review_files()))):
            return await self._skipped(phase, cycle, f"{', '.join(parts)} too large to show whole: a repair would send "
                                       "back code it was shown only in part, and the review gets the time")
        if self.runner.experience is not None:
            guide = await self.runner.experience.before_phase(self.spec, self.chain, phase, cycle, prompt,
                                                              files=self.bench.focus_files())
            if guide.skip:
                return await self._skipped(phase, cycle, guide.skip)
            prompt += guide.note
        delegate = self.runner.delegate
        if delegate is not None and delegate.handles(phase):
            return await self._delegated(delegate, phase, cycle, prompt)
        if self.meter.deadline is not None and (late := too_late(prompt, self.runner.settings.model,
                                                                 self.meter.deadline - time.monotonic())):
            return await self._skipped(phase, cycle, late)
        if len(prompt) // 4 > self.runner.settings.model.context_window * 0.9:
            await self.say(LogData(level="warning", text=(
                f"the prompt of phase {phase.name!r} is about {len(prompt) // 4} tokens, near or over the model's "
                f"context window ({self.runner.settings.model.context_window}); set [model] context_window")))
        assistant = self.chain.roles[phase.assistant]
        if phase.temperature is not None:
            assistant = replace(assistant, temperature=phase.temperature)
        dialogue = Dialogue(phase, self.chain.roles[phase.instructor], assistant, prompt,
                            speak=self.meter.speak, say=self.say, ask_human=self.runner.ask_human,
                            job_id=self.spec.job_id, history=history)
        try:
            result = await dialogue.run()
            product = await self.produce(phase, dialogue, result)
            self.conversations[phase.name] = (*dialogue.history, *dialogue.transcript)
        except TimeLimitReached:  # a retry or a second turn would start past the limit: what came is dropped
            late = self._out_of_time() or "the chain's time limit was reached"
            self.outcome.warnings.append(f"phase {phase.name!r} stopped: {late}")
            await self.say(LogData(level="warning", text=self.outcome.warnings[-1]))
            return await self._skipped(phase, cycle, late)
        if self.runner.experience is not None:
            product.findings = await self.runner.experience.after_phase(phase, cycle, dialogue, product,
                                                                         self.bench.read)
        self.bench.conclusions[phase.name] = product.conclusion
        self.outcome.findings.extend(product.findings)
        self.outcome.rejected_findings.extend({"finding": r.raw, "reason": r.reason} for r in product.rejected)
        self.outcome.warnings.extend(product.warnings)
        stats = self.meter.end_phase()
        tally = stats.tally
        await self.say(PhaseFinishedData(
            phase=phase.name, cycle=cycle or None, conclusion=product.conclusion,
            tokens=tally.tokens, prompt_tokens=tally.prompt_tokens,
            completion_tokens=tally.completion_tokens, cached_prompt_tokens=tally.cached_prompt_tokens,
            cost=tally.cost, seconds=round(tally.seconds, 4),
            model_seconds=round(tally.model_seconds, 4), engine_seconds=round(tally.engine_seconds, 4),
            calls=tally.calls, turns=len(dialogue.transcript), files=product.changed,
        ))
        self.phase_name, self.last_phase = None, phase.name
        return result.concluded if product.concluded is None else product.concluded

    def _out_of_time(self) -> str:
        """Why no more model calls may start (the chain's ``time_limit`` has passed), or ""."""
        deadline = self.meter.deadline
        if deadline is None or time.monotonic() < deadline:
            return ""
        return f"the chain's time limit of {self.time_limit:g} s was reached"

    async def _delegated(self, delegate: PhaseDelegate, phase: Phase, cycle: int | None, prompt: str) -> bool:
        """A phase done by the delegate (a network of agents): its files land in the scratch copy."""
        assert self.bench is not None
        scratch = self.bench.scratch
        if scratch is None:
            raise PhaseFailed(f"phase {phase.name!r} is delegated but the job has no workspace copy")

        def account(completion: Completion, seconds: float) -> None:
            self.meter.job.add(completion, seconds)
            if self.meter.phase is not None:
                self.meter.phase.tally.add(completion, seconds)

        files, conclusion = await delegate.produce(DelegatedPhase(
            phase, prompt, self.chain, self.bench.read, self.say, account, self.spec.budget, self.spec.job_id))
        self.produce.confine_to_user_tree(list(files))
        for path, text in sorted(files.items()):
            if text is not None:
                scratch.write(path, text)
            elif scratch.exists(path):
                scratch.delete(path)
        changed = sorted(files)
        await self.produce.record_state(phase, prompt, changed)
        self.bench.conclusions[phase.name] = conclusion
        tally = self.meter.end_phase().tally
        await self.say(PhaseFinishedData(
            phase=phase.name, cycle=cycle or None, conclusion=conclusion, delegated=True,
            tokens=tally.tokens, cost=tally.cost, calls=tally.calls, seconds=round(tally.seconds, 4),
            files=changed))
        self.phase_name, self.last_phase = None, phase.name
        return True

    async def _skipped(self, phase: Phase, cycle: int | None, reason: str) -> bool:
        """A phase experience judged redundant: it concludes without a model call."""
        assert self.bench is not None
        self.bench.conclusions[phase.name] = f"(skipped: {reason})"
        self.meter.end_phase()
        await self.say(PhaseFinishedData(phase=phase.name, cycle=cycle or None,
                                         conclusion=self.bench.conclusions[phase.name], skipped=reason,
                                         tokens=0, calls=0, turns=0, files=[]))
        self.phase_name, self.last_phase = None, phase.name
        return False

    async def _checkpoint(self, next_pos: tuple[int, int, int], last_phase: str) -> None:
        assert self.bench is not None
        checkpoint = make_checkpoint(chain=self.chain.name, job_id=self.spec.job_id, next_pos=next_pos,
                                     last_phase=last_phase, bench=self.bench, usage=self.meter.job,
                                     states=self._states(self.bench.scratch), warnings=self.outcome.warnings)
        self.outcome.checkpoint = checkpoint
        if self.runner.on_checkpoint is not None:
            await self.runner.on_checkpoint(last_phase, checkpoint)


def findings_by_file(findings: list[Finding]) -> dict[str, list[JsonDict]]:
    """Findings grouped per file, as the daemon stores them."""
    grouped: dict[str, list[JsonDict]] = {}
    for finding in findings:
        grouped.setdefault(finding.file, []).append(finding.to_dict())
    return grouped
