"""A team server of one API node and one worker (shared by the module; the two-node cluster with a
killed worker is test_team_server.py): people and ``troupe server add-person`` (tokens, Slack user
ids, the bot mark); a bot's token acting for the Slack user it serves (X-Troupe-On-Behalf-Of: only
from a bot's token, only for a Slack user mapped to a person, with that person's access) and the
real Slack bot (bolt, signed requests, the fake Slack Web API); ``troupe doctor``'s queue line; the
node's event channel coming back after PostgreSQL cut it."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from daemon.api.protocol import SubmitJob
from daemon.client import DaemonError, acting_for
from slack_bot.app import EVENTS_PATH, build_app, start_http, web_client
from slack_bot.bot import TroupeBot
from tests.fakes.slack_api import FakeSlack
from tests.slack.conftest import BOT_TOKEN, Harness, slack_config
from tests.team_server.conftest import REPO, TeamCluster, running_cluster

SHOP, CHANNEL = "/team/shop", "CSHOP"  # the cluster's config maps channel CSHOP to shop, shared with ada
ADA, EVE, NOBODY = "UADA", "UEVE", "UNOBODY"


@pytest.fixture(scope="module")
def small_team(postgres: Any, postgres_template: str) -> Iterator[TeamCluster]:
    """One API node and one worker; ada (Slack UADA) sees shop, eve (UEVE) only vault, slack-bot is a bot."""
    people: dict[str, dict[str, Any]] = {"ada": {"slack_user": ADA}, "eve": {"slack_user": EVE},
                                         "slack-bot": {"bot": True}}
    with running_cluster(postgres, postgres_template, people, workers=1, servers=1) as cluster:
        yield cluster


@pytest.fixture
async def slack(small_team: TeamCluster, tmp_path: Path) -> AsyncIterator[Harness]:
    """The bot with the bot's token and no channel map of its own (it asks the team server)."""
    fake = await FakeSlack(token=BOT_TOKEN).start()
    config = slack_config(tmp_path, None, api_url=fake.api_url)
    daemon = small_team.client(small_team.urls[0], small_team.tokens["slack-bot"])
    bot = TroupeBot(config, daemon, web_client(config))
    runner = await start_http(build_app(bot), "127.0.0.1", 0)
    host, port = runner.addresses[0][:2]
    harness = Harness(fake, bot, f"http://{host}:{port}{EVENTS_PATH}", aiohttp.ClientSession(), runner)
    yield harness
    await harness.close()
    await fake.stop()


def test_add_person_prints_a_token_once_and_people_lists_slack_users_and_bots(small_team: TeamCluster) -> None:
    token = small_team.troupe("server", "add-person", "carol", "--slack", "UCAROL")
    assert token.startswith("trp_") and len(token) > 40
    listed = small_team.troupe("server", "people").splitlines()
    assert "carol\tUCAROL\tperson" in listed and "slack-bot\t-\tbot" in listed
    assert token not in "\n".join(listed)


async def test_only_a_bots_token_acts_for_a_slack_user_and_only_for_one_mapped_to_a_person(
        small_team: TeamCluster) -> None:
    url = small_team.urls[0]
    bot, ada = small_team.client(url, small_team.tokens["slack-bot"]), small_team.client(url, small_team.tokens["ada"])
    try:
        assert (await bot.me()).bot and not (await ada.me()).bot
        with acting_for(ADA):
            assert (await bot.me()).name == "ada"
            assert [w.root for w in await bot.workspaces(channel=CHANNEL)] == [SHOP]
            with pytest.raises(DaemonError, match="only a bot's token may act") as caught:
                await ada.me()  # a person's token sending the header
            assert caught.value.status == 403
        with acting_for(EVE), pytest.raises(DaemonError, match="eve has no access to workspace '/team/shop'") as caught:
            await bot.submit(SubmitJob(kind="ask", workspace=SHOP, prompt="let me in"))
        assert caught.value.status == 403
        with acting_for(NOBODY), pytest.raises(DaemonError, match="Slack user UNOBODY is not a person") as caught:
            await bot.jobs(workspace=SHOP)
        assert caught.value.status == 403
        assert await ada.jobs(workspace=SHOP) == []  # nothing was submitted
    finally:
        await bot.close()
        await ada.close()


async def test_slack_users_act_as_their_people_and_the_others_are_told_why_not(
        small_team: TeamCluster, slack: Harness) -> None:
    def thread(ts: str) -> list[dict[str, Any]]:
        return [m for m in slack.slack.posted(CHANNEL) if m.get("thread_ts") == ts]

    asked, _ = await slack.mention("what does add do?", user=ADA, channel=CHANNEL)
    refused_eve, _ = await slack.mention("what does add do?", user=EVE, channel=CHANNEL)
    refused_stranger, _ = await slack.mention("what does add do?", user=NOBODY, channel=CHANNEL)

    assert await slack.finished(asked) == ["eyes", "white_check_mark"]  # the bot's own token sees no workspace
    summary = "\n".join(str(m.get("text")) for m in thread(asked))
    assert "echo: what does add do?" in summary
    for ts, why in ((refused_eve, "eve has no access to the workspace this channel works on"),
                    (refused_stranger, "Slack user UNOBODY is not a person of this team server")):
        [told] = await slack.slack.wait_for(lambda ts=ts: thread(ts), what="the refusal")
        assert told["text"].startswith(":no_entry: <@") and why in told["text"], told["text"]
        assert "x" in slack.reactions(ts)
    ada = small_team.client(small_team.urls[0], small_team.tokens["ada"])
    try:
        assert [job.request["prompt"] for job in await ada.jobs(workspace=SHOP)] == ["what does add do?"]
    finally:
        await ada.close()


async def test_doctor_says_the_queue_is_migrated_how_many_workers_are_alive_and_how_many_jobs_wait(
        small_team: TeamCluster, postgres: Any) -> None:
    from procrastinate import App, PsycopgConnector

    from daemon.team_server.queue import queue_health

    deadline = time.monotonic() + 30  # the worker registers once it has started
    while not queue_health(small_team.store_url, stalled_after=5).alive:
        assert time.monotonic() < deadline, small_team.logs()
        await asyncio.sleep(0.1)
    later = App(connector=PsycopgConnector(conninfo=small_team.store_url))
    async with later.open_async():  # a job nobody may take for an hour: it waits
        await later.configure_task("troupe.doctor_probe", schedule_in={"hours": 1}).defer_async()
    done = subprocess.run([sys.executable, "-m", "daemon.cli.main", "doctor", "--no-model"], env=small_team.env,
                          cwd=REPO, capture_output=True, text=True, timeout=60)
    [line] = [line for line in done.stdout.splitlines() if line.split()[1:2] == ["queue"]]
    assert line.startswith("ok ") and "schema migrated; 1 worker alive (a heartbeat within 5 s)" in line, line
    assert "1 job waiting, 0 running" in line and f"database {small_team.store_url.rsplit('/', 1)[1]}" in line
    database = [line for line in done.stdout.splitlines() if line.split()[1:2] == ["database"]]
    assert "PostgreSQL" in database[0], database  # the team config's store, not the laptop's file
    assert postgres.password not in done.stdout + done.stderr


def test_doctor_says_in_one_line_when_the_queues_postgresql_cannot_be_reached_and_never_its_password(
        small_team: TeamCluster, postgres: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from daemon.doctor import _queue
    from tests.fixtures.postgres import _free_port

    wrong = small_team.store_url.replace(postgres.password, "not-the-password-42")
    for url, why in ((wrong, "password authentication failed"),
                     (f"postgresql://troupe:secret-77@127.0.0.1:{_free_port()}/troupe", "Connection refused")):
        config = tmp_path / "team.toml"
        config.write_text(f'[store]\nurl = "{url}"\n')
        monkeypatch.setenv("TROUPE_TEAM_CONFIG", str(config))
        check = _queue()
        assert check is not None and not check.ok
        assert check.detail.startswith("cannot reach PostgreSQL (") and why in check.detail, check.detail
        assert "\n" not in check.detail and "not-the-password-42" not in check.detail
        assert "secret-77" not in check.detail and postgres.password not in check.detail


async def test_a_node_whose_event_channel_postgresql_cut_listens_again_and_streams_the_next_job(
        small_team: TeamCluster, postgres: Any) -> None:
    database = small_team.store_url.rsplit("/", 1)[1]

    def listeners() -> list[int]:
        return [pid for (pid,) in postgres.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND query = 'LISTEN troupe_events'", [database])]

    [cut] = listeners()  # the API node's relay
    postgres.execute("SELECT pg_terminate_backend(%s)", [cut])
    deadline = time.monotonic() + 30
    while listeners() in ([], [cut]):
        assert time.monotonic() < deadline, small_team.logs()
        await asyncio.sleep(0.05)
    ada = small_team.client(small_team.urls[0], small_team.tokens["ada"])
    try:
        job = await ada.submit(SubmitJob(kind="ask", workspace=SHOP, prompt="after the cut"))
        events = await asyncio.wait_for(_follow(ada, job.id), 30)
        assert events[-1].kind == "job_state" and events[-1].data["state"] == "succeeded"
        assert [e.seq for e in events] == list(range(1, len(events) + 1))
    finally:
        await ada.close()


async def _follow(client: Any, job_id: str) -> list[Any]:
    return [event async for event in client.events(job_id)]


def test_doctor_on_a_postgresql_store_no_team_server_used_says_it_has_no_queue_yet(
        postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from daemon.doctor import _queue

    monkeypatch.delenv("TROUPE_TEAM_CONFIG", raising=False)
    monkeypatch.setenv("TROUPE_STORE_URL", postgres_url)
    check = _queue()
    assert check is not None and check.ok
    assert "procrastinate's schema is not in PostgreSQL database" in check.detail, check.detail
    assert "no team server has used it" in check.detail
    monkeypatch.setenv("TROUPE_STORE_URL", "/tmp/a-laptop-store.db")
    assert _queue() is None  # a SQLite store: the laptop daemon has no queue, and doctor says nothing of one
