"""One job's experience: the hook the agent engine calls (``RunContext(..., experience=...)``).

During the run it puts retrieved experience into phase prompts (as quoted data, within
``prompt_tokens``), counts every retrieval with why it matched (the retrieval log, and a note in the
job's events that the viewer and ``troupe experience used JOB`` show), decides workflow shortcuts (Co-Saving), keeps a
dismissed kind of finding from coming back, and records what each phase did. When the run ends,
``capture`` keeps what mining needs from the scratch copy before it is removed (bounded), and
``mine`` turns it into experience (see :mod:`daemon.experience.mining`)::

    experience = JobExperience(store, settings, job_id=job.id, workspace_id=ws.id)
    outcome = await ChainRunner(RunContext.of(gateway, emit, experience=experience)).run(spec)
    report = await experience.mine(gateway)      # in the background, after the job finished
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from daemon.agents.model import Chain, Loop, Phase, Produces, Until
from daemon.events import Event, EventSink
from daemon.experience import learnings as people
from daemon.experience import retrieve
from daemon.experience.ecl import StateSnapshot
from daemon.experience.refine import MINED, batch_of, min_batch
from daemon.experience.settings import ExperienceSettings
from daemon.experience.text import clip
from daemon.experience.workflow import SimilarRun, StepPlan, plan_step, trajectory_steps
from daemon.json_types import JsonDict
from daemon.payloads import CodeStateData, LogData, ToolRunData
from storage.verbs.retrievals import Retrieval

if TYPE_CHECKING:
    from daemon.agents.dialogue import Dialogue
    from daemon.agents.findings import Finding
    from daemon.agents.job import JobOutcome, JobSpec
    from daemon.agents.produce import Product
    from daemon.experience.mining import MiningReport
    from daemon.llm.gateway import ModelGateway
    from daemon.workspace.scratch import Scratch
    from storage import AsyncStore, Experience

log = logging.getLogger("troupe.experience")

MAX_STATES = 40            # code states kept for mining (the last ones)
MAX_FILE_CHARS = 20_000    # of one file in one state
MAX_STATE_CHARS = 200_000  # of one state


@dataclass
class Guidance:
    """What experience adds to one phase: ``note`` goes after its prompt; ``skip`` says why it is skipped."""

    note: str = ""
    skip: str | None = None


@dataclass
class PhaseRecord:
    phase: str
    cycle: int | None
    role: str
    produces: str
    prompt: str
    reply: str
    conclusion: str
    concluded: bool
    changed: list[str]
    turns: int
    state: int                   # the code state the phase left
    used: list[int] = field(default_factory=list)
    tokens: int = 0
    calls: int = 0
    passed_review: bool | None = None  # code phases: the next review said "Finished" at once


@dataclass
class JobRecord:
    job_id: str | None
    workspace_id: int | None
    chain: str
    task: str
    ok: bool
    tests_ok: bool | None
    tokens: int
    phases: list[PhaseRecord]
    states: list[StateSnapshot]
    steps: dict[str, JsonDict]


class JobExperience:
    def __init__(self, store: AsyncStore, settings: ExperienceSettings | None = None, *, job_id: str | None = None,
                 workspace_id: int | None = None) -> None:
        self.store, self.settings = store, settings or ExperienceSettings()
        self.job_id, self.workspace_id = job_id, workspace_id
        self.active = self.settings.enabled
        self.records: list[PhaseRecord] = []
        self.plans: list[StepPlan] = []
        self.suppressed: list[JsonDict] = []
        self.used: list[int] = []
        self.record: JobRecord | None = None
        self._learnings: list[Experience] = []
        self._state = 0                         # the latest code state's index
        self._tests: dict[int, bool] = {}       # code state index -> did the tests pass on it
        self._last_tests: bool | None = None
        self._emit: EventSink | None = None
        self._floor: int | None = None
        self._floor_read = False
        self._history: list[SimilarRun] | None = None
        self._history_why: dict[int, Retrieval] = {}  # each similar run's experience: why it matched
        self._pending: list[int] = []

    # -- events ------------------------------------------------------------------------------
    def observe(self, emit: EventSink) -> EventSink:
        """Wrap the job's event sink to see which code state each test run judged."""
        self._emit = emit

        async def watching(event: Event) -> None:
            data = event.data
            if isinstance(data, CodeStateData):
                self._state = data.index
            elif isinstance(data, ToolRunData) and data.tool == "tests":
                self._tests[self._state] = self._last_tests = data.ok
            await emit(event)

        return watching

    async def _log(self, text: str, phase: str | None, *, step: str | None = None, cycles: int | None = None,
                   learning: int | None = None) -> None:
        log.info("job %s: %s", self.job_id, text)
        if self._emit is not None:
            note = LogData(text=text, experience=True, step=step, cycles=cycles, learning=learning)
            await self._emit(Event(note, phase=phase, job_id=self.job_id))

    async def _count(self, reasons: list[Retrieval], phase: str | None) -> None:
        """Log these retrievals with why each matched (the store's log, and one note in the job's events)."""
        if reasons:
            await self.store.count_retrievals(reasons, job_id=self.job_id, phase=phase)
            self.used.extend(r.experience_id for r in reasons)
            await self._log("experience retrieved: " + "; ".join(describe(r) for r in reasons), phase)

    async def _batch_floor(self) -> int | None:
        if not self._floor_read:
            mined = await self.store.bump_experience_counter(MINED, 0)
            self._floor, self._floor_read = min_batch(self.settings, batch_of(mined, self.settings)), True
        return self._floor

    # -- workflow shortcuts --------------------------------------------------------------------
    async def _similar_runs(self, chain: Chain, task: str) -> list[SimilarRun]:
        if self._history is None:
            found = await retrieve.ranked(self.store, task, pools=["workflow"], chain=chain.name,
                                          workspace_id=self.workspace_id, floor=await self._batch_floor())
            self._history = [(sim, e.id, e.data) for e, sim in found if sim >= self.settings.task_similarity
                             and e.data.get("ok") and e.data.get("tests_ok") is not False]
            self._history_why = {e.id: Retrieval(e.id, "workflow", retrieve.why_matched(task, e), sim)
                                 for e, sim in found}
        return self._history

    def _runs(self, ids: list[int]) -> list[Retrieval]:
        """Why the similar runs a workflow shortcut rests on matched."""
        return [self._history_why.get(i) or Retrieval(i, "workflow") for i in ids]

    async def plan_loop(self, spec: JobSpec, chain: Chain, loop: Loop) -> StepPlan | None:
        """How many cycles ``loop`` may run (0: skip it), or None to run it as configured.
        Loops until the tests pass are never shortened."""
        if not (self.active and self.settings.workflow) or loop.until is Until.TESTS_PASS:
            return None
        plan = plan_step(loop, await self._similar_runs(chain, spec.task), budget=spec.budget,
                         min_support=self.settings.min_support, urgency=self.settings.urgency)
        if plan is not None:
            self.plans.append(plan)
            await self._count(self._runs(plan.used), loop.name)
            await self._log(f"workflow shortcut: {plan.reason}", None, step=plan.step, cycles=plan.cycles)
        return plan

    # -- phases --------------------------------------------------------------------------------
    async def before_phase(self, spec: JobSpec, chain: Chain, phase: Phase, cycle: int | None, prompt: str,
                           files: list[str] | None = None) -> Guidance:
        """What experience adds to (or whether it skips) ``phase``; ``files``: those the job works on
        (in a change to an existing repository, what was learnt about other files is not shown)."""
        if not self.active:
            return Guidance()
        if self.settings.workflow and phase.produces is Produces.DOCUMENT:
            plan = plan_step(phase, await self._similar_runs(chain, spec.task), budget=spec.budget,
                             min_support=self.settings.min_support, urgency=self.settings.urgency)
            if plan is not None and plan.skip:
                self.plans.append(plan)
                await self._count(self._runs(plan.used), phase.name)
                await self._log(f"workflow shortcut: {plan.reason}", phase.name, step=plan.step)
                return Guidance(skip=plan.reason)
        budget, blocks = self.settings.prompt_tokens, []
        used: list[Retrieval] = []
        if phase.produces is Produces.FINDINGS and self.workspace_id is not None:
            stored = await self.store.list_experience(pool="learning", workspace_id=self.workspace_id, limit=200)
            self._learnings = [e for e in stored if e.workspace_id == self.workspace_id]
            block, ids = retrieve.learnings_block(self._learnings, list(spec.files), budget // 2)
            if block:
                blocks.append(block)
                by_id = {e.id: e for e in self._learnings}
                used += [retrieve.learning_reason(by_id[i], list(spec.files)) for i in ids]
                budget -= len(block) // 4
        if phase.produces is not Produces.FINDINGS:  # another file's findings are no example for this one
            found = await retrieve.for_phase(self.store, self.settings, chain=chain.name, phase=phase,
                                             role=chain.roles[phase.assistant].name, task=spec.task, prompt=prompt,
                                             workspace_id=self.workspace_id, floor=await self._batch_floor(),
                                             files=list(files or ()) if chain.start == "repository" else None)
            block, ids = retrieve.fit(found, budget)
            if block:
                blocks.append(block)
                reasons = {r.experience.id: r.reason() for r in reversed(found)}  # the first of an id wins
                used += [reasons[i] for i in ids]
        await self._count(used, phase.name)
        self._pending = [r.experience_id for r in used]
        return Guidance(note="".join(f"\n\n{block}" for block in blocks))

    async def after_phase(self, phase: Phase, cycle: int | None, dialogue: Dialogue, product: Product,
                          read: Callable[[str], str | None]) -> list[Finding]:
        """Record what the phase did; returns its findings without those people dismissed before."""
        kept = list(product.findings)
        if self._learnings and kept:
            kept = []
            for finding in product.findings:
                code = people.code_at(read(finding.file), finding.start_line, finding.end_line)
                match = people.dismissed_match(finding.file, finding.message, code, self._learnings)
                if match is None:
                    kept.append(finding)
                    continue
                self.suppressed.append({"finding": finding.to_dict(), "learning": match.id})
                shared = tuple(sorted(people.terms(finding.message) & people.terms(match.data.get("message", ""))))
                await self._count([Retrieval(match.id, "screening", shared,
                                                      people.overlap(finding.message, match.data.get("message", "")))],
                                  phase.name)
                await self._log(f"finding not reported again: {finding.file}:{finding.start_line} "
                                f"{finding.message!r} (the user dismissed it before: learning #{match.id})",
                                phase.name, learning=match.id)
        replies = [t.text for t in dialogue.transcript if t.side == "assistant"]
        self.records.append(PhaseRecord(
            phase=phase.name, cycle=cycle, role=dialogue.assistant.name, produces=str(phase.produces),
            prompt=clip(dialogue.prompt, 3000), reply=clip(replies[-1] if replies else "", 6000),
            conclusion=clip(product.conclusion, 500), concluded=bool(product.conclusion), changed=list(product.changed),
            turns=len(dialogue.transcript), state=self._state, used=self._pending))
        self._pending = []
        return kept

    # -- the end of the run --------------------------------------------------------------------
    def capture(self, spec: JobSpec, chain: Chain, outcome: JobOutcome, scratch: Scratch | None) -> None:
        """Keep what mining needs (bounded) before the scratch copy is removed."""
        stats = list(outcome.phases)
        for record in self.records:  # tokens per phase, matched in order
            for i, stat in enumerate(stats):
                if (stat.phase, stat.cycle) == (record.phase, record.cycle):
                    record.tokens, record.calls = stat.tally.tokens, stat.tally.calls
                    del stats[i]
                    break
        firsts = {s.phases[0].name: s for s in chain.steps if isinstance(s, Loop) and s.until is Until.FINISHED}
        for i, record in enumerate(self.records):
            if record.produces in ("code", "document"):
                review = next((r for r in self.records[i + 1:] if r.phase in firsts), None)
                if review is not None:
                    loop = firsts[review.phase]
                    record.passed_review = not any(r.cycle == review.cycle and r.phase in
                                                   [p.name for p in loop.phases[1:]] for r in self.records)
        report = outcome.test_report
        self.record = JobRecord(
            job_id=self.job_id, workspace_id=self.workspace_id, chain=chain.name, task=spec.task,
            ok=outcome.ok, tests_ok=report.ok if report is not None else self._last_tests, tokens=outcome.usage.tokens,
            phases=self.records, states=self._snapshots(scratch), steps=trajectory_steps(chain, self.records))

    def _snapshots(self, scratch: Scratch | None) -> list[StateSnapshot]:
        if scratch is None:
            return []
        touched = sorted({name for state in scratch.states for name in state.files})
        snapshots = []
        for state in scratch.states[-MAX_STATES:]:
            files, size = {}, 0
            for name in touched:
                text = scratch.text_at(state.index, name)
                if text is None or size > MAX_STATE_CHARS:
                    continue
                files[name] = text[:MAX_FILE_CHARS]
                size += len(files[name])
            snapshots.append(StateSnapshot(state.index, state.hash, state.instruction, files,
                                           self._tests.get(state.index)))
        return snapshots

    async def mine(self, gateway: ModelGateway | None = None) -> MiningReport:
        """Turn this job's record into experience (see :func:`daemon.experience.mining.mine`)."""
        from daemon.experience.mining import mine

        return await mine(self.store, self.settings, self.record, gateway)


def describe(reason: Retrieval) -> str:
    """One retrieval as a person reads it: ``#12 example (relevance 0.42; matched: clamp, high)``."""
    said = [f"relevance {reason.relevance:.2f}"] if reason.relevance is not None else []
    if reason.matched:
        said.append("matched: " + ", ".join(reason.matched[:8]) + (" …" if len(reason.matched) > 8 else ""))
    return f"#{reason.experience_id} {reason.why or 'used'}" + (f" ({'; '.join(said)})" if said else "")
