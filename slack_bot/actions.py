"""The buttons: Apply / Discard (the requester or an admin only), Details, and a repository pick."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from slack_sdk.errors import SlackApiError

from daemon.client import DaemonError
from daemon.redact import redact
from slack_bot import render

if TYPE_CHECKING:
    from slack_bot.bot import TroupeBot

log = logging.getLogger("troupe.slack")

Respond = Any  # bolt's AsyncRespond: await respond(text=..., response_type="ephemeral", replace_original=False)


async def _tell(respond: Respond, text: str) -> None:
    """A private note to the person who pressed (through the payload's response_url)."""
    try:
        await respond(text=redact(text), response_type="ephemeral", replace_original=False)
    except Exception as exc:  # an expired response_url must not turn into an error page
        log.info("could not answer through response_url: %s", exc)


async def on_job_button(bot: TroupeBot, body: dict[str, Any], action: dict[str, Any], respond: Respond) -> None:
    user = (body.get("user") or {}).get("id")
    channel = (body.get("channel") or {}).get("id") or (body.get("container") or {}).get("channel_id")
    job_id = str(action.get("value", ""))
    record = bot.state.job(job_id)
    if record is None:
        await _tell(respond, "I don't know that job any more; `/troupe jobs` lists the recent ones.")
        return
    if not bot.config.user_allowed(user) or not bot.config.channel_allowed(channel):
        await _tell(respond, "Sorry, you are not on the list of people I take requests from.")
        return
    name = action.get("action_id")
    if name == render.DETAILS:
        await _details(bot, record.channel, record.thread_ts, job_id, respond)
        await _viewer_link(bot, record.channel, record.thread_ts, str(user), job_id, respond)
        return
    if not bot.config.may_control(user, record.requester):
        who = f"<@{record.requester}>" if record.requester else "the person who asked"
        await _tell(respond, f"Only {who} (who asked for it) or an admin can "
                             f"{'apply' if name == render.APPLY else 'discard'} this change.")
        log.info("user %s pressed %s on job %s of %s: refused", user, name, job_id, record.requester)
        return
    change_id = record.change_id
    try:
        if change_id is None:
            change_id = (await bot.daemon.job(job_id)).outcome.change_id
        if change_id is None:
            await _tell(respond, "This job proposed no change.")
            return
        if name == render.APPLY:
            change = await bot.daemon.apply_change(change_id)
            note = (f":white_check_mark: Applied by <@{user}> to `{render.workspace_name(change.workspace)}`: "
                    + ", ".join(f"`{f}`" for f in change.files))
        else:
            change = await bot.daemon.discard_change(change_id)
            note = f":wastebasket: Discarded by <@{user}>."
    except DaemonError as exc:
        await _tell(respond, f":warning: {render.escape(str(exc))}")
        return
    message = body.get("message") or {}
    if message.get("ts") and channel:
        try:
            await bot.poster.update(channel, message["ts"], note,
                                    blocks=render.decided_blocks(message.get("blocks") or [], note))
        except SlackApiError as exc:
            log.warning("summary not updated: %s", exc.response.get("error"))
    await bot.poster.post(record.channel, record.thread_ts, note)


async def _details(bot: TroupeBot, channel: str, thread_ts: str, job_id: str, respond: Respond) -> None:
    try:
        job = await bot.daemon.job(job_id)
        events = (await bot.daemon.event_list(job_id)).events
    except DaemonError as exc:
        await _tell(respond, f":warning: {render.escape(str(exc))}")
        return
    await bot.poster.post(channel, thread_ts, render.details_text(job, events))


async def _viewer_link(bot: TroupeBot, channel: str, thread_ts: str, user: str, job_id: str,
                       respond: Respond) -> None:
    """A one-time run viewer link, to the person who pressed Details only (it is a login); it
    opens on the machine where the daemon runs. Nothing when the daemon serves no viewer."""
    try:
        link = await bot.daemon.viewer_link(job_id)
    except DaemonError as exc:
        log.info("no viewer link for job %s: %s", job_id, exc)
        return
    minutes = max(1, link.expires_in // 60)
    text = (f":tv: <{link.url}|Watch it in the viewer> — a one-time link for you only, valid {minutes} minutes, "
            "that opens on the machine where the Troupe daemon runs.")
    try:
        await bot.poster.call("chat_postEphemeral", channel=channel, user=user, text=text, thread_ts=thread_ts,
                              unfurl_links=False)
    except SlackApiError as exc:  # e.g. not in that channel: the private response_url still reaches them
        log.info("ephemeral viewer link not posted (%s); answering through response_url",
                 exc.response.get("error"))
        await _tell(respond, text)


async def on_workspace_button(bot: TroupeBot, body: dict[str, Any], action: dict[str, Any],
                              respond: Respond) -> None:
    user = (body.get("user") or {}).get("id")
    channel = (body.get("channel") or {}).get("id")
    message = body.get("message") or {}
    thread_ts = message.get("thread_ts") or message.get("ts")
    thread = bot.state.thread(str(channel), str(thread_ts)) if channel and thread_ts else None
    if thread is None or not thread.pending_prompt:
        await _tell(respond, "That choice is no longer needed.")
        return
    if not bot.config.may_control(user, thread.requester):
        await _tell(respond, f"<@{thread.requester}> asked; they choose the repository.")
        return
    root = str(action.get("value") or (action.get("selected_option") or {}).get("value") or "")
    async with bot.lock(thread.channel, thread.thread_ts):
        try:
            roots = [w.root for w in await bot.daemon.workspaces()]
        except DaemonError as exc:
            await _tell(respond, f":warning: {render.escape(str(exc))}")
            return
        if root not in roots:
            await _tell(respond, "That repository is no longer registered.")
            return
        await bot.pick_workspace(thread, root, str(thread.requester), thread.thread_ts)
