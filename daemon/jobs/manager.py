"""The job queue: priorities, a concurrency limit, cancellation, questions, and restarts.

The store *is* the queue: a submitted job is a ``queued`` row, and a worker slot claims the
most urgent one (highest priority, then oldest) atomically, so nothing is lost when the daemon
dies. Besides the ``concurrency`` slots any job may take, ``reserved`` slots run only
interactive jobs (:mod:`daemon.jobs.slots`). On start-up, jobs a crash left ``running`` are
resumed from their checkpoint when the executor can resume, or failed with the reason;
``waiting_for_answer`` jobs keep waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING

from daemon.errors import Conflict, Invalid, NotFound, TooLarge, Unavailable
from daemon.events import Event, EventKind
from daemon.jobs.describe import job_title, tests_failed
from daemon.jobs.executor import Draft, JobExecutor, JobResult, RunningJob
from daemon.jobs.history import with_history
from daemon.jobs.hub import EventHub
from daemon.jobs.newest import superseding
from daemon.jobs.progress import advance, fold
from daemon.jobs.questions import QuestionBook
from daemon.jobs.slots import WorkerSlots
from daemon.json_types import Json, JsonDict
from daemon.messages import ACTIVE_STATES, StreamEvent, SubmitJob
from daemon.payloads import (
    AnswerData,
    ChangeProposedData,
    FindingData,
    JobProgress,
    JobStateData,
    LogData,
    QuestionData,
    payload,
    wire,
)
from daemon.redact import redact
from storage.errors import StaleReview

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from storage import AsyncStore, Finding, Job, JobEvent, Store

log = logging.getLogger("troupe.jobs")

Announced = tuple[int, int, int, str]
"""A finding this job streamed: (id, start line, end line, message); streamed again only when one changes."""

MAX_RESUMES = 3  # a job that keeps killing the daemon is failed instead of resumed forever
KEPT_PROGRESS = 2_000  # jobs whose progress stays in memory (a few hundred bytes each)


def times_resumed(events: Iterable[JobEvent]) -> int:
    """How often a job was resumed: its ``running`` states marked ``resumed`` (:class:`JobStateData`)."""
    return sum(1 for e in events if isinstance(state := payload(e.kind, e.data), JobStateData) and state.resumed)


class JobManager:
    def __init__(self, store: AsyncStore, hub: EventHub, executor: JobExecutor, *, concurrency: int = 2,
                 reserved: int = 2) -> None:
        self.store, self.hub, self.executor = store, hub, executor
        self.slots = WorkerSlots(concurrency, reserved)
        self._wakeup = asyncio.Event()
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._cancel_reasons: dict[str, str] = {}
        self._content: dict[str, dict[str, tuple[str, float]]] = {}  # job -> what its review read
        self._books: dict[str, QuestionBook] = {}
        self._progress: dict[str, JobProgress] = {}
        self._roots: dict[int, str] = {}
        self._dispatcher: asyncio.Task[None] | None = None
        self.stopping = False
        self.submitted = 0

    # ---------------------------------------------------------------- life cycle

    async def start(self) -> None:
        await self._recover()
        self._dispatcher = asyncio.create_task(self._dispatch(), name="troupe-dispatch")

    async def _recover(self) -> None:
        for job in await self.store.list_jobs(state="running", limit=100_000):
            events = await self.store.events_after(job.id, 0)
            resumes = times_resumed(events)
            where = f"last finished phase: {job.last_phase}" if job.last_phase else "no phase had finished"
            if self.executor.resumable and resumes < MAX_RESUMES:
                await self.store.set_job_state(job.id, "queued")
                await self.record_event(job.id, job.workspace_id, Event(LogData(
                    level="warning", text=f"the daemon stopped while this job was running; resuming ({where})")))
            else:
                why = ("the job was resumed too often" if self.executor.resumable
                       else f"the {self.executor.name} executor cannot resume jobs")
                await self._finish(job.id, job.workspace_id, "failed", error=(
                    f"daemon stopped while the job was running ({where}; {why}); submit it again"))
        log.info("recovered jobs; %d queued", len(await self.store.list_jobs(state="queued", limit=100_000)))

    async def stop(self) -> None:
        """Stop taking work; interrupted jobs are left to resume (or failed with the reason)."""
        self.stopping = True
        if self._dispatcher is not None:
            self._dispatcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._dispatcher
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    # ---------------------------------------------------------------- requests

    async def workspace_root(self, workspace_id: int | None) -> str | None:
        if workspace_id is None:
            return None
        if workspace_id not in self._roots:
            ws = await self.store.get_workspace(workspace_id)
            if ws is None:
                return None
            self._roots[workspace_id] = ws.root
        return self._roots[workspace_id]

    async def submit(self, request: SubmitJob, *, priority: int | None = None) -> Job:
        if self.stopping:
            raise Unavailable("the daemon is stopping; submit the job again once it is back", code="stopping")
        workspace_id: int | None = None
        skipped: dict[str, str] = {}
        if request.workspace is not None:
            root = Path(request.workspace)
            if not root.is_dir():
                raise Invalid(f"workspace {request.workspace} is not a folder on this machine")
            ws = await self.store.find_workspace_for(str(root)) or await self.store.add_workspace(str(root))
            workspace_id, self._roots[ws.id] = ws.id, ws.root
            request, skipped = _checked_files(request, Path(ws.root))
        older: list[Job] = []
        if workspace_id is not None and request.kind == "review":  # newest wins: see daemon.jobs.newest
            active = await self.store.list_jobs(state=list(ACTIVE_STATES), workspace_id=workspace_id, kind="review")
            request, older = superseding(request, active)
        body = _redacted(request.to_json())  # a key pasted into a prompt never reaches the store or a model
        job = await self.store.record_job(request.kind, body, workspace_id=workspace_id,
                                          priority=request.priority_value if priority is None else priority)
        self.submitted += 1
        log.info("job %s (%s) queued, priority %d", job.id, job.kind.value, job.priority)
        await self.record_event(job.id, workspace_id, Event(JobStateData(
            state="queued", title=job_title(request.kind, body))))  # for surfaces that see only events
        for name, why in skipped.items():
            await self.record_event(job.id, workspace_id, Event(LogData(
                level="warning", text=f"skipped {name}: {why}", file=name, action="skipped")))
        for old in older:
            with contextlib.suppress(Conflict, NotFound):  # it may have finished meanwhile
                await self.cancel(old.id, reason=f"superseded by job {job.id}, a review of newer content")
        self._wakeup.set()
        return job

    async def cancel(self, job_id: str, *, reason: str = "cancelled by the user") -> Job:
        job = await self.require(job_id)
        if job.state.is_terminal:
            raise Conflict(f"job {job_id} already {job.state.value}; nothing to cancel")
        self._cancel_reasons[job_id] = reason
        task = self._tasks.get(job_id)
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(task)
            self._release(job_id)  # a task cancelled before it began never reached its own clean-up
            self._tasks.pop(job_id, None)
        job = await self.require(job_id)
        if not job.state.is_terminal:
            await self._finish(job_id, job.workspace_id, "cancelled", error=self._cancel_reasons.pop(job_id, reason))
            return await self.require(job_id)
        self._cancel_reasons.pop(job_id, None)
        if job.state.value != "cancelled":  # it ended on its own while the cancel reached it
            raise Conflict(f"job {job_id} already {job.state.value}; nothing to cancel")
        return job

    async def answer(self, job_id: str, text: str, question_id: str | None) -> Job:
        job = await self.require(job_id)
        book = self._books.get(job_id)
        if book is None and job.state.value == "waiting_for_answer":  # asked before a restart
            book = QuestionBook.from_events(await self.store.events_after(job_id, 0))
        pending = book.pending if book else None
        if pending is None:
            raise Conflict(f"job {job_id} is {job.state.value}, not waiting for an answer")
        if question_id is not None and question_id != pending.question_id:
            raise Conflict(f"job {job_id} is waiting on question {pending.question_id}, not {question_id}")
        await self.record_event(job_id, job.workspace_id, Event(AnswerData(
            question_id=pending.question_id, text=text, by="human")))
        if pending.future is not None and not pending.future.done():
            pending.future.set_result(text)
        else:  # nobody is waiting in memory: run the job again; it gets this answer when it re-asks
            await self.store.set_job_state(job_id, "queued")
            self._wakeup.set()
        return await self.require(job_id)

    def progress(self, job_id: str) -> JobProgress | None:
        """A job's progress as its events left it (None: no event since the daemon started, or long ago)."""
        return self._progress.get(job_id)

    def pending_question(self, job_id: str) -> tuple[str, str] | None:
        book = self._books.get(job_id)
        if book is None or book.pending is None:
            return None
        return book.pending.question_id, book.pending.text

    async def require(self, job_id: str) -> Job:
        job = await self.store.get_job(job_id)
        if job is None:
            raise NotFound(f"no job with id {job_id!r}; `troupe jobs` lists them")
        return job

    # ---------------------------------------------------------------- events

    async def record_event(self, job_id: str, workspace_id: int | None, event: Event,
                           *, with_it: Callable[[Store], object] | None = None) -> int:
        """Store and publish one event with the job's progress after it; data that does not fit its
        kind's record (daemon.payloads) is a bug of the code that emitted it: PayloadError.
        ``with_it`` is a change to the store made in the event's transaction (a job's final state)."""
        data = clipped(_redacted(wire(event.data)))
        before = self._progress.get(job_id) or fold(await self.store.events_after(job_id, 0))
        progress = advance(before, str(event.kind), data, phase=event.phase, role=event.role)

        def append(store: Store) -> int:
            if with_it is not None:
                with_it(store)
            return store.append_event(job_id, str(event.kind), data, phase=event.phase, role=event.role)
        seq = await self.store.run(append)
        self._progress.pop(job_id, None)
        self._progress[job_id] = progress  # the newest last; the oldest go (JobInfo then reads the job's row)
        while len(self._progress) > KEPT_PROGRESS:
            self._progress.pop(next(iter(self._progress)))
        self.hub.publish(StreamEvent(kind=str(event.kind), data=data, job_id=job_id, seq=seq, phase=event.phase,
                                     role=event.role, at=time.time(),
                                     workspace=await self.workspace_root(workspace_id), progress=progress))
        if event.kind == EventKind.PHASE_FINISHED and event.phase:
            await self.store.update_job(job_id, last_phase=event.phase)
        return seq

    async def _finish(self, job_id: str, workspace_id: int | None, state: str, *, error: str | None = None,
                      result: JsonDict | None = None) -> None:
        """The job's final state and its ``job_state`` event, in one transaction: whoever reads the job
        as ended finds the event too (a stream that sees the job ended sends what is stored and stops)."""
        shown = redact(error) if error else None
        kept = None if result is None else clipped(_redacted(result))

        def end(store: Store) -> object:
            if kept is None:
                return store.set_job_state(job_id, state, error=shown)
            return store.set_job_state(job_id, state, error=shown, result=kept)
        await self.record_event(job_id, workspace_id, Event(JobStateData(state=state, error=shown)), with_it=end)

    # ---------------------------------------------------------------- running

    async def _dispatch(self) -> None:
        while True:
            self._wakeup.clear()
            lane = self.slots.free_lane()
            if lane is None:
                await self._wakeup.wait()
                continue
            self.slots.take("claiming", lane)  # held while the store is asked, so nobody else takes it
            try:
                job = await self.store.claim_next_job(min_priority=self.slots.min_priority(lane))
            finally:
                self.slots.release("claiming")
            if job is None:
                await self._wakeup.wait()
                continue
            self.slots.take(job.id, lane)
            self._tasks[job.id] = asyncio.create_task(self._run(job), name=f"troupe-job-{job.id}")

    async def _run(self, job: Job) -> None:
        try:
            current = await self.store.get_job(job.id)
            if current is not None and not current.state.is_terminal:  # not cancelled while being claimed
                await self._execute(job)
        finally:
            self._release(job.id)
            self._tasks.pop(job.id, None)
            self._books.pop(job.id, None)
            self._content.pop(job.id, None)

    async def _execute(self, job: Job) -> None:
        wid = job.workspace_id
        root = await self.workspace_root(wid)
        book = QuestionBook.from_events(await self.store.events_after(job.id, 0)) if job.last_seq else QuestionBook()
        book.pending = None
        self._books[job.id] = book
        resumed = job.last_seq > 1

        async def emit(event: Event) -> None:
            await self.record_event(job.id, wid, event)

        async def save_checkpoint(phase: str, checkpoint: JsonDict) -> None:
            await self.store.update_job(job.id, last_phase=phase, checkpoint=checkpoint)

        announced: set[Announced] = set()

        async def report_findings(file: str, drafts: list[Draft]) -> None:
            if wid is not None:
                await self._announce(job.id, wid, file, drafts, announced, replace_open=False)

        async def ask_human(question: str) -> str:
            replayed = book.take_replayed(question)
            if replayed is not None:
                return replayed
            pending = book.ask(question)
            await self.store.set_job_state(job.id, "waiting_for_answer")
            await emit(Event(QuestionData(question_id=pending.question_id, text=question, to="human")))
            await emit(Event(JobStateData(state="waiting_for_answer")))
            self._release(job.id)
            assert pending.future is not None
            answer = await pending.future
            book.pending = None
            await self.slots.wait_for(job.id, job.priority)
            await self.store.set_job_state(job.id, "running")
            await emit(Event(JobStateData(state="running")))
            return answer

        self._content[job.id] = {}
        request = await with_history(self.store, job.request)  # a follow-up: what was asked and answered before
        running = RunningJob(job.id, job.kind.value, request, Path(root) if root else None, wid,
                             content=self._content[job.id],
                             checkpoint=job.checkpoint, last_phase=job.last_phase, resumed=resumed,
                             save_checkpoint=save_checkpoint, report_findings=report_findings)
        try:
            await emit(Event(JobStateData(state="running", resumed=resumed)))
            outcome = await self.executor.run(running, emit, ask_human)
            await self._store_outcome(job, outcome, announced)
        except asyncio.CancelledError:
            await self._interrupted(job, book)
        except Exception as exc:  # the executor's failure is the job's failure, with its message
            log.exception("job %s (%s) failed", job.id, job.kind.value)
            await self._finish(job.id, wid, "failed", error=f"{type(exc).__name__}: {exc}")

    def _release(self, job_id: str) -> None:
        if self.slots.release(job_id):
            self._wakeup.set()

    async def _interrupted(self, job: Job, book: QuestionBook) -> None:
        """Cancelled by the user, or stopped by a daemon shutdown (then left to resume)."""
        if not self.stopping:
            current = await self.store.get_job(job.id)
            if current is not None and current.state.is_terminal:
                return  # its own end was stored before the cancel reached it
            await self._finish(job.id, job.workspace_id, "cancelled",
                               error=self._cancel_reasons.pop(job.id, "cancelled by the user"))
            return
        if book.pending is not None:
            return  # still waiting_for_answer; the answer may come after the restart
        current = await self.store.get_job(job.id)
        if self.executor.resumable:
            await self.store.set_job_state(job.id, "queued")
            await self.record_event(job.id, job.workspace_id, Event(LogData(
                level="info", text="the daemon is stopping; the job resumes when it starts again")))
        else:
            last = current.last_phase if current is not None else None
            where = f"last finished phase: {last}" if last else "no phase had finished"
            await self._finish(job.id, job.workspace_id, "failed", error=(
                f"daemon stopped while the job was running ({where}; the {self.executor.name} executor "
                "cannot resume jobs); submit it again"))

    async def _announce(self, job_id: str, workspace_id: int, file: str, drafts: list[Draft],
                        announced: set[Announced], *, replace_open: bool) -> int:
        """Store one file's findings and stream the ones not already streamed by this job; with
        ``replace_open``, the file's older findings this review no longer reports stream as resolved."""
        before = await self.store.list_findings(workspace_id, file) if replace_open else []
        content_hash, read_at = self._content.get(job_id, {}).get(file, (None, None))
        try:
            stored = await self.store.add_findings(workspace_id, job_id, file, drafts, replace_open=replace_open,
                                                   content_hash=content_hash, read_at=read_at)
        except StaleReview as exc:  # newest content wins: the findings of newer text stay
            await self.record_event(job_id, workspace_id, Event(LogData(
                level="info", text=f"findings not stored: {exc}", file=file, action="stale")))
            return 0
        kept = {finding.id for finding in stored}
        for old in before:
            if old.id not in kept:
                gone = await self.store.get_finding(old.id)
                assert gone is not None  # only a forgotten workspace deletes findings, and it is this job's
                await self.record_event(job_id, workspace_id, Event(finding_data(gone)))
        for finding in stored:
            key = (finding.id, finding.start_line, finding.end_line, finding.message)
            if key not in announced:
                announced.add(key)
                await self.record_event(job_id, workspace_id, Event(finding_data(finding)))
        return len(stored)

    async def _store_outcome(self, job: Job, outcome: JobResult, announced: set[Announced]) -> None:
        result = dict(outcome.result)
        if outcome.change is not None:
            change = await self.store.propose_change(
                job.id, outcome.change.diff, edits=outcome.change.edits,
                base_hashes={k: v for k, v in outcome.change.base_hashes.items() if isinstance(v, str)})
            result["change_id"] = change.id
            failed = tests_failed(result)  # shown beside Apply, by every surface
            await self.record_event(job.id, job.workspace_id, Event(ChangeProposedData(
                change_id=change.id, files=outcome.change.files, diff=outcome.change.diff,
                tests_failed=failed or None)))
        if outcome.findings and job.workspace_id is not None:
            count = 0
            for file, drafts in outcome.findings.items():
                count += await self._announce(job.id, job.workspace_id, file, drafts, announced, replace_open=True)
            result["findings"] = count
        totals = await self.store.job_usage(job.id)
        if totals.calls:
            result["usage"] = {"calls": totals.calls, "prompt_tokens": totals.prompt_tokens,
                               "completion_tokens": totals.completion_tokens, "cost": totals.cost,
                               "cached_prompt_tokens": totals.cached_prompt_tokens}
        await self._finish(job.id, job.workspace_id, outcome.status, error=outcome.error, result=result)


def finding_data(finding: Finding) -> FindingData:
    """A stored finding as event data (the fields of ``protocol.FindingInfo``)."""
    return FindingData(id=finding.id, file=finding.file, severity=str(finding.severity), message=finding.message,
                       start_line=finding.start_line, start_col=finding.start_col, end_line=finding.end_line,
                       end_col=finding.end_col, state=str(finding.state), rule=finding.rule,
                       suggested_fix=finding.suggested_fix, fingerprint=finding.fingerprint, job_id=finding.job_id,
                       content_hash=finding.content_hash)


def _checked_files(request: SubmitJob, root: Path) -> tuple[SubmitJob, dict[str, str]]:
    """The request with its files checked and canonical (:class:`Invalid` names a bad one), and the
    files left out as too large; when that leaves nothing to review, :class:`TooLarge` says so."""
    from dataclasses import replace

    from daemon.workspace.files import named_files
    from daemon.workspace.paths import PathOutsideWorkspace

    try:
        kept, skipped = named_files(root, request.files)
    except (PathOutsideWorkspace, FileNotFoundError) as exc:
        raise Invalid(str(exc)) from None
    if skipped and not kept and not request.options.diff:
        name, why = next(iter(skipped.items()))
        raise TooLarge(f"{name}: skipped: {why}; nothing else was named to work on")
    return replace(request, files=kept), skipped


MAX_EVENT_TEXT = 200_000
"""The longest text an event keeps (stored and streamed); the rest is cut with a note. A whole file
still fits (the size policy is MAX_FILE_BYTES); a 50 MB prompt echoed back does not."""


def clipped(data: Json, limit: int = MAX_EVENT_TEXT) -> Json:  # any JSON in, the same shape out
    """``data`` with every string over ``limit`` characters cut, saying how much was left out."""
    if isinstance(data, str) and len(data) > limit:
        return data[:limit] + f"\n… [{len(data) - limit:,} more characters left out: too large to keep]"
    if isinstance(data, dict):
        return {k: clipped(v, limit) for k, v in data.items()}
    if isinstance(data, list):
        return [clipped(v, limit) for v in data]
    return data


def _redacted(data: Json) -> Json:  # any JSON in, the same shape out
    if isinstance(data, str):
        return redact(data)
    if isinstance(data, dict):
        return {k: _redacted(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [_redacted(v) for v in data]
    return data
