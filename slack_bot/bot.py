"""The bot's core: a mention becomes a job, a thread follows it, a reply answers its question.

Thin by design: every decision about the work is the daemon's; this module only translates
Slack events into :class:`daemon.client.DaemonClient` calls and job events into messages. On a
team server whose token for the bot is a bot's (``add-person slack-bot --bot``), each call is made
for the Slack user it serves (:meth:`TroupeBot.acting_for`): the server decides who that is and
what they may see, and the bot shows its refusals as they are.
One Slack thread is one session (:mod:`slack_bot.state`): a follow-up mention in the thread
continues it, and a delivery Slack retries is handled once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from daemon.api.protocol import ACTIVE_STATES, JobInfo, JobKind, JobOptions, SubmitJob
from daemon.client import DaemonClient, DaemonError, acting_for
from slack_bot import render
from slack_bot.config import SlackConfig
from slack_bot.follow import JobFollower
from slack_bot.intent import Intent, mentions, parse, plain
from slack_bot.poster import Poster
from slack_bot.state import BotState, JobRecord, Thread

log = logging.getLogger("troupe.slack")

REFUSE_USER = "Sorry <@{user}>, I can only take requests from the people my admins have allowed."
REFUSE_CHANNEL = "Sorry <@{user}>, I'm not set up to work in this channel. Ask an admin to allow it."


class TroupeBot:
    def __init__(self, config: SlackConfig, daemon: DaemonClient, web: AsyncWebClient) -> None:
        self.config, self.daemon = config, daemon
        self.poster = Poster(web)
        assert config.state_path is not None
        self.state = BotState(config.state_path)
        self.bot_user_id: str | None = None
        self.tasks: set[asyncio.Task[Any]] = set()
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}
        self._acts_for_users: bool | None = None  # learnt from the server (GET /v1/me) on first use

    # ---------------------------------------------------------------- life cycle

    def spawn(self, coro: Any) -> asyncio.Task[Any]:
        task = asyncio.create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        self.tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("a Slack task failed: %r", task.exception())

    async def resume(self) -> int:
        """After a restart: follow again every job a thread was still waiting on."""
        resumed = 0
        for thread in self.state.threads_with_jobs():
            async with self.acting_for(thread.requester):  # the follower's task inherits it
                try:
                    job = await self.daemon.job(str(thread.job_id))
                except DaemonError:
                    continue
                if job.state in ACTIVE_STATES and thread.status_ts:
                    self.spawn(JobFollower(self, thread, job, thread.thread_ts).run())
                    resumed += 1
        return resumed

    async def close(self) -> None:
        for task in list(self.tasks):
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        self.state.close()

    @contextlib.asynccontextmanager
    async def acting_for(self, user: str | None) -> AsyncIterator[None]:
        """Calls made inside (and by tasks started inside) are made for Slack ``user`` when the
        server says the bot's token is a bot's; otherwise with the bot's own token, as on the laptop."""
        if user and await self._acts() is not False:
            with acting_for(user):
                yield
        else:
            yield

    async def _acts(self) -> bool | None:
        """Whether the bot acts for its users; None when the server could not say (then it does:
        a refusal is safer than the bot's own access)."""
        if self._acts_for_users is None:
            try:
                me = await self.daemon.me()
            except DaemonError as exc:
                if exc.status == 404:  # the laptop daemon: no people, one user
                    self._acts_for_users = False
                return self._acts_for_users
            self._acts_for_users = me.bot
            log.info("on the team server the bot is %s%s", me.name,
                     "; it acts for each Slack user" if me.bot else
                     " (not marked as a bot: every Slack user acts as it)")
        return self._acts_for_users

    def lock(self, channel: str, thread_ts: str) -> asyncio.Lock:
        return self._locks.setdefault((channel, thread_ts), asyncio.Lock())

    # ---------------------------------------------------------------- Slack events

    def refusal(self, user: str | None, channel: str | None) -> str | None:
        if not self.config.channel_allowed(channel):
            return REFUSE_CHANNEL.format(user=user)
        if not self.config.user_allowed(user):
            return REFUSE_USER.format(user=user)
        return None

    async def on_mention(self, event: dict[str, Any], event_id: str | None) -> None:
        channel, ts, user = event.get("channel"), event.get("ts"), event.get("user")
        if not channel or not ts or not user or event.get("bot_id") or user == self.bot_user_id:
            return
        if not self.state.first_time(f"event:{event_id}" if event_id else "", f"msg:{channel}:{ts}"):
            log.info("event %s delivered again; already handled", event_id)
            return
        thread_ts = event.get("thread_ts") or ts
        refusal = self.refusal(user, channel)
        if refusal:
            await self.poster.post(channel, thread_ts, refusal)
            return
        await self.poster.react(channel, ts, "eyes")
        text = plain(event.get("text", ""), self.bot_user_id)
        async with self.lock(channel, thread_ts):
            thread = self.state.thread(channel, thread_ts) or Thread(channel, thread_ts, requester=user)
            if thread.job_id:
                await self._continue(thread, text, user, ts)
            elif thread.pending_prompt and user == thread.requester and await self._pick_by_name(thread, text, ts):
                return
            else:
                thread.requester = user
                await self.start(thread, text, user, ts)

    async def on_message(self, event: dict[str, Any], event_id: str | None) -> None:
        """A reply in one of our threads: the answer to the team's question, or a repository's name."""
        channel, ts, user, thread_ts = (event.get(k) for k in ("channel", "ts", "user", "thread_ts"))
        if (not thread_ts or thread_ts == ts or event.get("subtype") or event.get("bot_id") or not user
                or user == self.bot_user_id or mentions(event.get("text", ""), self.bot_user_id)):
            return  # not a thread reply by a person, or a mention (on_mention has it)
        thread = self.state.thread(str(channel), str(thread_ts))
        if thread is None or not (thread.question_id or thread.pending_prompt):
            return
        if not self.config.may_control(user, thread.requester) or self.refusal(user, channel):
            return  # others may talk in the thread; only the requester (or an admin) answers for them
        if not self.state.first_time(f"event:{event_id}" if event_id else "", f"msg:{channel}:{ts}"):
            return
        text = plain(event.get("text", ""), self.bot_user_id)
        async with self.lock(thread.channel, thread.thread_ts):
            thread = self.state.thread(thread.channel, thread.thread_ts) or thread
            if thread.question_id and thread.job_id:
                await self.answer(thread, text, str(ts))
            elif thread.pending_prompt:
                await self._pick_by_name(thread, text, str(ts))

    # ---------------------------------------------------------------- sessions

    async def _continue(self, thread: Thread, text: str, user: str, ts: str) -> None:
        """A mention in a thread that already has a job: answer it, wait for it, or follow up on it."""
        try:
            job = await self.daemon.job(str(thread.job_id))
        except DaemonError as exc:
            await self.poster.post(thread.channel, thread.thread_ts, f":x: {render.escape(str(exc))}")
            return
        if job.state == "waiting_for_answer" and thread.question_id:
            if self.config.may_control(user, thread.requester):
                await self.answer(thread, text, ts)
            else:
                await self.poster.post(thread.channel, thread.thread_ts,
                                       f"The team is waiting for <@{thread.requester}>'s answer.")
            return
        if job.state in ACTIVE_STATES:
            await self.poster.post(thread.channel, thread.thread_ts,
                                   f"<@{user}> the team is still on the previous request (job `{job.id}`); "
                                   "mention me again when it has finished, or `/troupe cancel " + job.id + "`.")
            return
        await self.start(thread, text, user, ts, previous=job)

    async def answer(self, thread: Thread, text: str, ts: str) -> None:
        try:
            await self.daemon.answer(str(thread.job_id), text, thread.question_id)
        except DaemonError as exc:
            await self.poster.post(thread.channel, thread.thread_ts,
                                   f":warning: I could not pass that on: {render.escape(str(exc))}")
            return
        thread.question_id = None
        self.state.save_thread(thread)
        await self.poster.react(thread.channel, ts, "speech_balloon")

    async def start(self, thread: Thread, text: str, user: str, trigger_ts: str,
                    previous: JobInfo | None = None, kind: JobKind | None = None) -> None:
        """Submit the job a message asks for and follow it in the thread."""
        default: JobKind = "ask"
        if previous is not None and previous.kind in ("ask", "change", "build"):
            default = previous.kind
        intent = parse(text, default)
        if kind is not None:
            intent.kind = kind
        if not intent.prompt:
            await self.poster.post(thread.channel, thread.thread_ts, f"<@{user}> what should the team do? "
                                   "For example: `review app.py`, `change greet() to add a !`, or a question.")
            return
        try:
            root = thread.workspace or await self._workspace_for(thread.channel)
        except DaemonError as exc:  # the team server refused this Slack user: its words, as they are
            await self.poster.post(thread.channel, thread.thread_ts, f":no_entry: <@{user}> {render.escape(str(exc))}")
            await self.poster.react(thread.channel, trigger_ts, "x")
            return
        if root is None:
            await self._ask_for_workspace(thread, intent)
            return
        thread.workspace, thread.pending_prompt = root, None
        files = [f for f in intent.files if (Path(root) / f).is_file()]
        if intent.kind == "review" and not files:
            await self.poster.post(thread.channel, thread.thread_ts, f"<@{user}> which files should the team "
                                   f"review in `{render.workspace_name(root)}`? For example `review app.py`.")
            self.state.save_thread(thread)
            return
        status_ts = await self.poster.post(thread.channel, thread.thread_ts,
                                           f":eyes: On it, <@{user}>: *{intent.kind}* in "
                                           f"`{render.escape(render.workspace_name(root))}`…")
        options = JobOptions(source="slack", slack_thread=f"{thread.channel}/{thread.thread_ts}")
        history: list[str] = []  # a follow-up: the daemon puts the thread's earlier jobs into the prompt
        if previous is not None:
            options.previous_job = previous.id
            history = [r.job_id for r in self.state.thread_jobs(thread.channel, thread.thread_ts)]
        try:
            job = await self.daemon.submit(SubmitJob(kind=intent.kind, workspace=root, prompt=intent.prompt,
                                                     files=files, options=options, history=history))
        except DaemonError as exc:
            text = f":x: The team could not start: {render.escape(str(exc))}"
            await (self.poster.update(thread.channel, status_ts, text) if status_ts else
                   self.poster.post(thread.channel, thread.thread_ts, text))
            await self.poster.react(thread.channel, trigger_ts, "x")
            return
        thread.job_id, thread.status_ts, thread.question_id = job.id, status_ts, None
        self.state.save_thread(thread)
        self.state.add_job(JobRecord(job.id, thread.channel, thread.thread_ts, user, job.kind))
        if status_ts:
            with contextlib.suppress(SlackApiError):
                await self.poster.update(thread.channel, status_ts, render.status_text(job.kind, root, job.progress,
                                                                                          job.id))
        self.spawn(JobFollower(self, thread, job, trigger_ts).run())

    # ---------------------------------------------------------------- workspaces

    async def _workspace_for(self, channel: str) -> str | None:
        if channel in self.config.channels:
            return self.config.channels[channel]
        try:  # a team server answers with the workspace its config maps this channel to
            roots = [w.root for w in await self.daemon.workspaces(channel=channel)]
        except DaemonError as exc:
            if exc.status in (401, 403):  # this user may not work here: the caller says why
                raise
            return None
        return roots[0] if len(roots) == 1 else None

    async def _ask_for_workspace(self, thread: Thread, intent: Intent) -> None:
        try:
            roots = [w.root for w in await self.daemon.workspaces()]
        except DaemonError as exc:
            await self.poster.post(thread.channel, thread.thread_ts, f":x: {render.escape(str(exc))}")
            return
        if not roots:
            await self.poster.post(thread.channel, thread.thread_ts,
                                   "No repository is registered with the team yet. Run `troupe watch` in one, "
                                   "or map this channel in `[slack] channels` of the Troupe config.")
            return
        thread.pending_prompt = intent.prompt
        self.state.save_thread(thread)
        await self.poster.post(thread.channel, thread.thread_ts, "Which repository?",
                               blocks=render.workspace_choice_blocks(intent.prompt, roots))

    async def _pick_by_name(self, thread: Thread, text: str, ts: str) -> bool:
        try:
            roots = [w.root for w in await self.daemon.workspaces()]
        except DaemonError:
            return False
        words = text.strip().strip("`").rstrip("/")
        chosen = [r for r in roots if words in (r, render.workspace_name(r))]
        if len(chosen) != 1:
            return False
        await self.pick_workspace(thread, chosen[0], str(thread.requester), ts)
        return True

    async def pick_workspace(self, thread: Thread, root: str, user: str, trigger_ts: str) -> None:
        prompt, thread.workspace, thread.pending_prompt = thread.pending_prompt, root, None
        self.state.save_thread(thread)
        if prompt:
            await self.start(thread, prompt, user, trigger_ts)
