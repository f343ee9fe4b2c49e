"""What the MCP client reads: a job's outcome, findings, a proposed change and a transcript, as text
for the agent's model (the structured result beside it carries the daemon's own records)."""

from __future__ import annotations

from collections.abc import Iterable

from daemon.api.protocol import ChangeInfo, FindingInfo, JobInfo, StreamEvent
from daemon.payloads import (
    AnswerData,
    ChangeProposedData,
    FindingData,
    JobProgress,
    JobStateData,
    LogData,
    MessageData,
    PhaseFinishedData,
    PhaseStartedData,
    QuestionData,
    ToolRunData,
)


def finding_line(f: FindingInfo | FindingData) -> str:
    rule = f" [{f.rule}]" if f.rule else ""
    fix = f"\n    suggested fix: {f.suggested_fix.strip()}" if f.suggested_fix and f.suggested_fix.strip() else ""
    return f"{f.file}:{f.start_line}: {f.severity}: {f.message}{rule} (finding {f.id}){fix}"


def findings_text(found: Iterable[FindingInfo], *, empty: str = "no open findings") -> str:
    return "\n".join(finding_line(f) for f in found) or empty


def status_line(progress: JobProgress) -> str:
    """Where a job stands, as a progress message: ``running · code · programmer``."""
    parts = [progress.state, progress.phase or "", progress.role or ""]
    return " · ".join(p for p in parts if p)


def usage_line(job: JobInfo) -> str:
    usage = job.usage
    tail = f"{usage.total_tokens:,} tokens{usage.cached_note}" if usage.total_tokens else "no model calls"
    line = f"{job.kind} job {job.id} {job.state} ({tail})"
    return f"{line}: {job.error}" if job.error else line


def change_text(change: ChangeInfo) -> str:
    files = ", ".join(change.files) or "no files"
    lines = [f"Proposed change {change.id} ({change.state}) to {files}:", "```diff", change.diff.rstrip("\n"), "```"]
    if change.tests_failed:
        lines.append(f"Warning: its own tests failed: {change.tests_failed}")
    if change.state == "proposed":
        lines.append(f"Nothing is written yet. Apply it with the `apply_change` tool (change_id {change.id!r}), "
                     "or drop it with `discard_change`.")
    return "\n".join(lines)


def outcome_text(job: JobInfo, change: ChangeInfo | None, findings: list[FindingInfo]) -> str:
    result = job.outcome
    parts: list[str] = []
    if result.reply:
        parts.append(result.reply.strip())
    report = result.test_report
    if report is not None and report.summary():
        parts.append(f"Tests: {report.summary()}")
        parts += [f"  {failure.test_id or failure.file or '?'}: {failure.message}".rstrip()
                  for failure in report.failures[:20]]
    if job.kind == "review" or findings:
        parts.append("Findings:\n" + findings_text(findings, empty="(none)"))
    if change is not None:
        parts.append(change_text(change))
    parts.append(usage_line(job))
    return "\n\n".join(parts)


def waiting_text(job: JobInfo, question_id: str, text: str) -> str:
    which = f", question_id {question_id!r}" if question_id else ""
    return (f"The team asks: {text}\n\n"
            f"Job {job.id} waits for the answer. Answer with the `answer` tool (job_id {job.id!r}{which}, "
            f"text: the answer), or in a terminal: troupe answer {job.id} \"…\". "
            "`job_status` with wait=true follows the job afterwards.")


def transcript(job: JobInfo, events: list[StreamEvent]) -> str:
    """The job's story, one line per event worth reading (who said what to whom, tools, findings)."""
    lines = [f"# {job.title or job.kind} — job {job.id} ({job.state})"]
    for event in events:
        line = event_line(event)
        if line:
            lines.append(line)
    return "\n".join(lines) + "\n"


def event_line(event: StreamEvent) -> str | None:
    body, role = event.payload, event.role or "team"
    if isinstance(body, JobStateData):
        return f"[{body.state}]" + (f" {body.error}" if body.error else "") + (" (resumed)" if body.resumed else "")
    if isinstance(body, PhaseStartedData):
        return f"\n## {body.phase or event.phase}"
    if isinstance(body, PhaseFinishedData):
        if body.skipped:
            return f"({body.phase or event.phase} skipped: {body.skipped})"
        done = f"done: {body.conclusion.strip()}" if body.conclusion.strip() else "done"
        return f"({body.phase or event.phase} {done})"
    if isinstance(body, MessageData):
        return f"{role}{' → ' + body.to if body.to else ''}: {body.text.strip()}"
    if isinstance(body, QuestionData):
        return f"{role} asks {body.to}: {body.text.strip()}"
    if isinstance(body, AnswerData):
        return f"{body.by} answers: {body.text.strip()}"
    if isinstance(body, ToolRunData):
        return f"{body.tool} {'ok' if body.ok else 'failed'}: {body.summary.strip()}"
    if isinstance(body, ChangeProposedData):
        return f"proposed change {body.change_id}: {', '.join(body.files) or 'no files'}"
    if isinstance(body, FindingData):
        return "finding " + finding_line(body)
    if isinstance(body, LogData) and (body.notable or body.action):
        return f"{body.level}: {body.text.strip()}"
    return None
