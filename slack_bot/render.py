"""How jobs look in Slack: the status line, the final summary with its buttons, the details.

Pure functions of protocol objects; no I/O. Model and user text is escaped for mrkdwn and cut
to Slack's limits (3,000 characters a section); secrets are redacted later, by the poster.
"""

from __future__ import annotations

import os
from typing import Any

from daemon.api.protocol import ChangeInfo, FindingInfo, JobInfo, StreamEvent
from daemon.payloads import AnswerData, JobProgress, PhaseFinishedData, QuestionData, ToolRunData

SECTION_MAX = 2900
APPLY, DISCARD, DETAILS, PICK_WORKSPACE = "troupe_apply", "troupe_discard", "troupe_details", "troupe_workspace"
STATE_ICONS = {"queued": ":hourglass_flowing_sand:", "running": ":gear:", "waiting_for_answer": ":question:",
               "succeeded": ":white_check_mark:", "failed": ":x:", "cancelled": ":no_entry_sign:"}
STATE_WORDS = {"queued": "queued", "running": "working", "waiting_for_answer": "waiting for your answer",
               "succeeded": "done", "failed": "failed", "cancelled": "cancelled"}


def escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def cut(text: str, limit: int = SECTION_MAX) -> str:
    return text if len(text) <= limit else text[: limit - 20].rstrip() + "\n… (cut)"


def workspace_name(root: str | None) -> str:
    return os.path.basename(root.rstrip("/")) if root else "no repository"


def status_line(kind: str, workspace: str | None, progress: JobProgress) -> str:
    """The status message's words: the job's state, phase, role, tokens and cost, as the daemon computed them."""
    head = (f"{STATE_ICONS.get(progress.state, ':gear:')} *{kind}* in `{escape(workspace_name(workspace))}`"
            f" — {STATE_WORDS.get(progress.state, progress.state)}")
    facts = []
    if progress.phase:
        facts.append(f"phase `{escape(progress.phase)}`")
    if progress.role:
        facts.append(escape(progress.role))
    facts.append(f"{progress.tokens:,} tokens")
    facts.append(f"${progress.cost:.4f}")
    return head + "\n" + " · ".join(facts)


def status_text(kind: str, workspace: str | None, progress: JobProgress, job_id: str) -> str:
    return f"{status_line(kind, workspace, progress)}\n_job `{job_id}`_"


def final_status_text(job: JobInfo, progress: JobProgress) -> str:
    """The status message once the job is over (``progress``: the last the stream brought, which counts phases)."""
    icon = STATE_ICONS.get(job.state, ":grey_question:")
    seconds = (job.finished_at or 0) - (job.started_at or job.created_at or 0)
    tokens = job.usage.total_tokens or progress.tokens
    cost = job.usage.cost or progress.cost
    timing = f" · {seconds:.1f} s" if seconds > 0 else ""
    phases = max(progress.phases_done, job.progress.phases_done)
    return (f"{icon} *{job.kind}* in `{escape(workspace_name(job.workspace))}` — {STATE_WORDS.get(job.state)}\n"
            f"{phases} phase(s) · {tokens:,} tokens{job.usage.cached_note} · ${cost:.4f}{timing}\n_job `{job.id}`_")


def summary_text(job: JobInfo, findings: list[FindingInfo] | None = None) -> str:
    """The words of the final message: the answer, the plan and test outcome, or the findings."""
    result = job.outcome
    if job.state != "succeeded":
        return f"*The team could not finish:* {escape(job.error or job.state)}"
    lines: list[str] = []
    if job.kind == "ask":
        lines.append(escape(result.reply or "(no answer)"))
    elif job.kind in ("change", "build"):
        if result.plan:
            lines.append(f"*Plan:* {escape(result.plan)}")
        if result.files:
            lines.append("*Files:* " + ", ".join(f"`{escape(f)}`" for f in result.files))
    if job.kind == "review":
        found = findings or []
        lines.append(f"*{len(found)} finding(s)*" if found else "*No findings.* :sparkles:")
        for f in found[:15]:
            lines.append(f"• `{escape(f.file)}:{f.start_line}` _{f.severity}_ {escape(f.message)}")
    report = result.test_report
    if report is not None and report.summary():
        lines.append(f"*Tests:* {escape(report.summary())}")
        for failure in report.failures[:5]:
            lines.append(f"• `{escape(failure.test_id or failure.file or '?')}` {escape(failure.message)[:300]}")
    for warning in result.warnings:
        lines.append(f":warning: {escape(warning)}")
    return cut("\n".join(lines) or "Done.")


def diff_block(diff: str) -> str:
    return cut(f"```{escape(diff.rstrip())}```")


def summary_blocks(job: JobInfo, text: str, change: ChangeInfo | None, *, inline_diff: bool,
                   requester: str | None) -> list[dict[str, Any]]:
    head = f"<@{requester}> " if requester else ""
    blocks: list[dict[str, Any]] = [{"type": "section", "text": {"type": "mrkdwn", "text": cut(head + text)}}]
    if change is not None and inline_diff:
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": diff_block(change.diff)}})
    failed = change.tests_failed if change is not None and change.state == "proposed" else None
    if failed:
        blocks.append({"type": "section", "text": {"type": "mrkdwn",
                                                   "text": cut(f":warning: *Its own tests failed:* {escape(failed)}")}})
    buttons: list[dict[str, Any]] = []
    if change is not None and change.state == "proposed":
        buttons.append(_button("Apply anyway", APPLY, job.id) if failed else _button("Apply", APPLY, job.id,
                                                                                     style="primary"))
        buttons.append(_button("Discard", DISCARD, job.id, style="danger"))
    buttons.append(_button("Details", DETAILS, job.id))
    blocks.append({"type": "actions", "block_id": f"troupe_job_{job.id}", "elements": buttons})
    return blocks


def decided_blocks(blocks: list[dict[str, Any]], note: str) -> list[dict[str, Any]]:
    """The summary after Apply/Discard: the same sections, the buttons replaced by what happened."""
    kept = [b for b in blocks if b.get("type") != "actions"]
    return [*kept, {"type": "context", "elements": [{"type": "mrkdwn", "text": cut(note)}]}]


def workspace_choice_blocks(prompt: str, roots: list[str]) -> list[dict[str, Any]]:
    text = ("Which repository should the team work in? Press one, or reply in this thread with its name.\n>"
            + escape(cut(prompt, 300)))
    if len(roots) <= 5:
        elements = [_button(workspace_name(r), f"{PICK_WORKSPACE}_{i}", r) for i, r in enumerate(roots)]
    else:  # a menu holds up to 100
        elements = [{"type": "static_select", "action_id": f"{PICK_WORKSPACE}_select",
                     "placeholder": {"type": "plain_text", "text": "Choose a repository"},
                     "options": [{"text": {"type": "plain_text", "text": cut(f"{workspace_name(r)} ({r})", 75)},
                                  "value": r[:150]} for r in roots[:100]]}]
    return [{"type": "section", "text": {"type": "mrkdwn", "text": text}},
            {"type": "actions", "elements": elements}]


def details_text(job: JobInfo, events: list[StreamEvent]) -> str:
    lines = [f"*Job `{job.id}`* ({job.kind}, {job.state}) · {job.usage.total_tokens:,} tokens{job.usage.cached_note} "
             f"· ${job.usage.cost:.4f}"]
    for e in events:
        body = e.payload
        if isinstance(body, PhaseFinishedData):
            lines.append(f"• phase `{escape(body.phase)}`: {escape(body.conclusion[:200])} ({body.tokens} tokens)")
        elif isinstance(body, ToolRunData):
            lines.append(f"• tool `{escape(body.tool)}`: {escape(body.summary[:200])}")
        elif isinstance(body, QuestionData | AnswerData):
            who = (body.by if isinstance(body, AnswerData) else None) or e.role or "?"
            lines.append(f"• {e.kind} ({escape(who)}): {escape(body.text[:200])}")
    return cut("\n".join(lines))


def _button(text: str, action_id: str, value: str, style: str | None = None) -> dict[str, Any]:
    button: dict[str, Any] = {"type": "button", "text": {"type": "plain_text", "text": text[:75]},
                              "action_id": action_id, "value": value[:2000]}
    if style:
        button["style"] = style
    return button
