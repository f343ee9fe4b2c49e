"""``/troupe ask|status|jobs|cancel|experience``: acknowledged at once, answered via response_url.

``ask`` opens a thread in the channel (a message the bot posts) and runs like a mention there,
so the question, the answer and any follow-up live in one place.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from daemon.client import DaemonError
from daemon.redact import redact
from slack_bot import render
from slack_bot.state import Thread

if TYPE_CHECKING:
    from slack_bot.bot import TroupeBot

log = logging.getLogger("troupe.slack")

USAGE = ("*/troupe* — talk to the team:\n"
         "• `/troupe ask <question>` — ask the team (answered in a thread)\n"
         "• `/troupe status [job]` — the daemon, or one job\n"
         "• `/troupe jobs` — recent jobs\n"
         "• `/troupe cancel <job>` — cancel a job you started\n"
         "• `/troupe experience <words>` — search what the team has learnt\n"
         "Or mention me: `@troupe review app.py`, `@troupe change …`, `@troupe test`, `@troupe build …`.")


async def on_command(bot: TroupeBot, command: dict[str, Any], respond: Any) -> None:
    user, channel = command.get("user_id"), command.get("channel_id")
    words = (command.get("text") or "").strip().split(maxsplit=1)
    name, rest = (words[0].lower() if words else "help"), (words[1] if len(words) > 1 else "")
    refusal = bot.refusal(user, channel)
    if refusal:
        await _say(respond, refusal)
        return
    try:
        handler = {"ask": _ask, "status": _status, "jobs": _jobs, "cancel": _cancel,
                   "experience": _experience}.get(name)
        text = await handler(bot, str(user), str(channel), rest) if handler else USAGE
    except DaemonError as exc:
        text = f":warning: {render.escape(str(exc))}"
    await _say(respond, text)


async def _say(respond: Any, text: str) -> None:
    try:
        await respond(text=redact(render.cut(text)), response_type="ephemeral")
    except Exception as exc:
        log.warning("could not answer the slash command: %s", exc)


async def _ask(bot: TroupeBot, user: str, channel: str, question: str) -> str:
    if not question.strip():
        return "Ask what? For example `/troupe ask where is the login handled?`"
    ts = await bot.poster.post(channel, None, f"<@{user}> asked the team: {render.escape(question)}")
    if ts is None:
        return "I could not post in this channel; invite me first (`/invite @troupe`)."
    thread = Thread(channel, ts, requester=user)
    async with bot.lock(channel, ts):
        await bot.start(thread, question, user, ts, kind="ask")
    return "Asked the team; the answer will come in the thread."


async def _status(bot: TroupeBot, user: str, channel: str, rest: str) -> str:
    if rest.strip():
        job = await bot.daemon.job(rest.strip())
        line = f"*Job `{job.id}`*: {job.kind} in `{render.workspace_name(job.workspace)}` — {job.state}"
        line += f" · {job.usage.total_tokens:,} tokens{job.usage.cached_note} · ${job.usage.cost:.4f}"
        if job.question:
            line += f"\n:question: waiting on: {render.escape(job.question.text)}"
        if job.error:
            line += f"\n:x: {render.escape(job.error)}"
        return line
    health = await bot.daemon.health()
    jobs = ", ".join(f"{n} {state}" for state, n in sorted(health.jobs.items()) if n) or "no jobs"
    return f":large_green_circle: Troupe {health.version} is up ({health.uptime_s:.0f} s): {jobs}."


async def _jobs(bot: TroupeBot, user: str, channel: str, rest: str) -> str:
    jobs = await bot.daemon.jobs(limit=10)
    if not jobs:
        return "No jobs yet."
    return "*Recent jobs*\n" + "\n".join(
        f"• `{j.id}` {j.kind} in `{render.workspace_name(j.workspace)}` — {j.state}" for j in jobs)


async def _cancel(bot: TroupeBot, user: str, channel: str, rest: str) -> str:
    job_id = rest.strip()
    if not job_id:
        return "Cancel which job? `/troupe jobs` lists them."
    record = bot.state.job(job_id)
    if not bot.config.may_control(user, record.requester if record else None):
        return "Only the person who started that job, or an admin, can cancel it."
    job = await bot.daemon.cancel(job_id)
    return f"Job `{job.id}` is {job.state}."


async def _experience(bot: TroupeBot, user: str, channel: str, rest: str) -> str:
    if not rest.strip():
        return "Search for what? For example `/troupe experience flaky test`"
    results = await bot.daemon.search(rest.strip(), limit=5)
    if not results.hits:
        return f"Nothing learnt yet about _{render.escape(rest)}_."
    return f"*What the team knows about* _{render.escape(rest)}_\n" + "\n".join(
        f"• ({hit.kind}) {render.escape(hit.text[:300])}" for hit in results.hits)
