"""How jobs look in Slack: the status line, the final summary with its buttons, the details.

Pure functions of protocol objects; no I/O. Model and user text is escaped for mrkdwn and cut
to Slack's limits (3,000 characters a section); secrets are redacted later, by the poster.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from daemon.api.protocol import ChangeInfo, FindingInfo, JobInfo

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


@dataclass
class Progress:
    """What the status message shows, folded from the job's events."""

    kind: str
    workspace: str | None
    state: str = "queued"
    phase: str | None = None
    role: str | None = None
    phases_done: int = 0
    tokens: int = 0
    cost: float = 0.0
    change_id: str | None = None
    change_files: list[str] = field(default_factory=list)

    def fold(self, kind: str, data: dict[str, Any], phase: str | None, role: str | None) -> bool:
        """Take one event in; True when the status message would show something new."""
        if kind == "job_state":
            self.state = str(data.get("state", self.state))
        elif kind == "phase_started":
            self.phase, self.role = data.get("phase") or phase, role
        elif kind == "phase_finished":
            self.phases_done += 1
        elif kind == "usage":
            self.tokens += int(data.get("prompt_tokens", 0)) + int(data.get("completion_tokens", 0))
            self.cost += float(data.get("cost", 0.0) or 0.0)
            self.role = role or self.role
        elif kind == "message" and role and role != "human":
            self.role = role
        elif kind == "change_proposed":
            self.change_id, self.change_files = data.get("change_id"), list(data.get("files", []))
        else:
            return False
        return True

    def line(self) -> str:
        parts = [f"{STATE_ICONS.get(self.state, ':gear:')} *{self.kind}* in `{escape(workspace_name(self.workspace))}`"
                 f" — {STATE_WORDS.get(self.state, self.state)}"]
        facts = []
        if self.phase:
            facts.append(f"phase `{escape(self.phase)}`")
        if self.role:
            facts.append(escape(self.role))
        facts.append(f"{self.tokens:,} tokens")
        facts.append(f"${self.cost:.4f}")
        return parts[0] + "\n" + " · ".join(facts)


def status_text(progress: Progress, job_id: str) -> str:
    return f"{progress.line()}\n_job `{job_id}`_"


def final_status_text(job: JobInfo, progress: Progress) -> str:
    icon = STATE_ICONS.get(job.state, ":grey_question:")
    seconds = (job.finished_at or 0) - (job.started_at or job.created_at or 0)
    tokens = job.usage.total_tokens or progress.tokens
    cost = job.usage.cost or progress.cost
    timing = f" · {seconds:.1f} s" if seconds > 0 else ""
    return (f"{icon} *{job.kind}* in `{escape(workspace_name(job.workspace))}` — {STATE_WORDS.get(job.state)}\n"
            f"{progress.phases_done} phase(s) · {tokens:,} tokens · ${cost:.4f}{timing}\n_job `{job.id}`_")


def summary_text(job: JobInfo, findings: list[FindingInfo] | None = None) -> str:
    """The words of the final message: the answer, the plan and test outcome, or the findings."""
    result = job.result or {}
    if job.state != "succeeded":
        return f"*The team could not finish:* {escape(job.error or job.state)}"
    lines: list[str] = []
    if job.kind == "ask":
        lines.append(escape(str(result.get("answer") or result.get("conclusion") or "(no answer)")))
    elif job.kind in ("change", "build"):
        plan = (result.get("conclusions") or {}).get("plan")
        if plan:
            lines.append(f"*Plan:* {escape(str(plan))}")
        if result.get("files"):
            lines.append("*Files:* " + ", ".join(f"`{escape(f)}`" for f in result["files"]))
    if job.kind == "review":
        found = findings or []
        lines.append(f"*{len(found)} finding(s)*" if found else "*No findings.* :sparkles:")
        for f in found[:15]:
            lines.append(f"• `{escape(f.file)}:{f.start_line}` _{f.severity}_ {escape(f.message)}")
    report = result.get("test_report")
    if isinstance(report, dict) and report.get("summary"):
        lines.append(f"*Tests:* {escape(str(report['summary']))}")
        for failure in (report.get("failures") or [])[:5]:
            if isinstance(failure, dict):
                lines.append(f"• `{escape(str(failure.get('test') or failure.get('file') or '?'))}` "
                             f"{escape(str(failure.get('message', '')))[:300]}")
    for warning in result.get("warnings") or []:
        lines.append(f":warning: {escape(str(warning))}")
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


def details_text(job: JobInfo, events: list[Any]) -> str:
    lines = [f"*Job `{job.id}`* ({job.kind}, {job.state}) · {job.usage.total_tokens:,} tokens · ${job.usage.cost:.4f}"]
    for e in events:
        if e.kind == "phase_finished":
            lines.append(f"• phase `{escape(str(e.data.get('phase')))}`: "
                         f"{escape(str(e.data.get('conclusion', ''))[:200])} ({e.data.get('tokens', 0)} tokens)")
        elif e.kind == "tool_run":
            lines.append(f"• tool `{escape(str(e.data.get('tool')))}`: {escape(str(e.data.get('summary', ''))[:200])}")
        elif e.kind in ("question", "answer"):
            who = e.data.get("by") or e.role or "?"
            lines.append(f"• {e.kind} ({escape(str(who))}): {escape(str(e.data.get('text', ''))[:200])}")
    return cut("\n".join(lines))


def _button(text: str, action_id: str, value: str, style: str | None = None) -> dict[str, Any]:
    button: dict[str, Any] = {"type": "button", "text": {"type": "plain_text", "text": text[:75]},
                              "action_id": action_id, "value": value[:2000]}
    if style:
        button["style"] = style
    return button
