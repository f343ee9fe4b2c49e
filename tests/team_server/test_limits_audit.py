"""Per-person limits and the audit log on a real team server (PostgreSQL, one API node, no worker,
so submitted jobs stay queued): over ``[limits] jobs`` a submit gets 429 with Retry-After, over
``requests_per_second`` any request does, and the client waits the Retry-After out; every submit,
cancel, discard, added and removed person and limit hit is in ``troupe server audit``, which never
shows a token or the database's password."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from daemon.api.protocol import PREFIX, SubmitJob
from daemon.client import DaemonError
from tests.team_server.conftest import SCRIPTED, TeamCluster

SHOP, VAULT = "/team/shop", "/team/vault"


@pytest.fixture(scope="module")
def limited(postgres: Any, postgres_template: str) -> Iterator[TeamCluster]:
    url = postgres.create_database(template=postgres_template)
    folder = Path(tempfile.mkdtemp(prefix="trlim-", dir="/tmp"))
    cluster = TeamCluster(folder, url, executor=SCRIPTED, limits="jobs = 2\nrequests_per_second = 4\nburst = 4")
    try:
        cluster.add_people("ada", "eve")
        cluster.start_servers(1)
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(folder, ignore_errors=True)
        postgres.drop_database(url)


async def test_a_person_over_the_jobs_limit_gets_429_with_retry_after_and_the_client_waits_it_out(
        limited: TeamCluster) -> None:
    url = limited.urls[0]
    ada, eve = limited.client(url, limited.tokens["ada"]), limited.client(url, limited.tokens["eve"])
    impatient = limited.client(url, limited.tokens["ada"])
    impatient.retries = 0
    try:
        first = await ada.submit(SubmitJob(kind="ask", workspace=SHOP, prompt="one"))
        await ada.submit(SubmitJob(kind="ask", workspace=SHOP, prompt="two"))
        with pytest.raises(DaemonError) as caught:
            await impatient.submit(SubmitJob(kind="ask", workspace=SHOP, prompt="three"))
        assert (caught.value.status, caught.value.code, caught.value.retry_after) == (429, "too_many_jobs", 5.0)
        assert "ada has 2 jobs queued or running" in str(caught.value)
        assert (await eve.submit(SubmitJob(kind="ask", workspace=VAULT, prompt="mine"))).state == "queued"

        async def cancel_later() -> None:  # one of ada's ends while her client waits
            await asyncio.sleep(1)
            await eve.close()
            await limited.client(url, limited.tokens["ada"]).cancel(first.id)

        started = time.monotonic()
        _, third = await asyncio.gather(cancel_later(), ada.submit(SubmitJob(kind="ask", workspace=SHOP,
                                                                                    prompt="three")))
        assert third.state == "queued" and time.monotonic() - started >= 4.5  # after the Retry-After
    finally:
        for client in (ada, eve, impatient):
            await client.close()


async def test_a_token_over_its_requests_per_second_gets_429_and_the_client_retries_after_it(
        limited: TeamCluster) -> None:
    url, token = limited.urls[0], limited.tokens["eve"]
    async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {token}"}) as http:
        answers = []
        for _ in range(8):
            async with http.get(f"{url}{PREFIX}/me") as resp:
                answers.append((resp.status, resp.headers.get("Retry-After")))
    assert answers[:4] == [(200, None)] * 4, answers  # the burst
    assert (429, "1") in answers, answers
    await asyncio.sleep(1.1)
    eve = limited.client(url, token)
    try:
        names = [(await eve.me()).name for _ in range(10)]  # 4 at once, then 4 a second: 429s waited out
        assert names == ["eve"] * 10
    finally:
        await eve.close()


async def test_the_audit_log_says_who_did_what_and_never_holds_a_token_or_the_password(
        limited: TeamCluster, postgres: Any) -> None:
    from storage import AsyncStore

    token = limited.troupe("server", "add-person", "carol", "--slack", "UCAROL")
    carol = limited.client(limited.urls[0], limited.tokens["eve"])  # carol sees no workspace: eve acts
    store = await AsyncStore.open(limited.store_url)
    try:
        await asyncio.sleep(1.1)  # the previous test spent eve's burst
        job = await carol.submit(SubmitJob(kind="ask", workspace=VAULT, prompt="secret-looking sk-abc123 prompt"))
        change = await store.propose_change(job.id, "--- a/app.py\n+++ b/app.py\n")
        await carol.discard_change(change.id)
        await carol.cancel(job.id)
    finally:
        await carol.close()
        await store.close()
    assert limited.troupe("server", "remove-person", "carol") == ""
    listed = limited.troupe("server", "audit", "--limit", "100").splitlines()
    rows = [line.split("\t")[1:] for line in listed]
    assert [row[0:3] for row in rows if row[2] in (job.id, change.id)] == [
        ["eve", "submit", job.id], ["eve", "discard", change.id], ["eve", "cancel", job.id]]
    admin = [row for row in rows if row[0].startswith("admin ")]
    assert [(row[1], row[2], row[3]) for row in admin if row[2] == "carol"] == [
        ("add-person", "carol", "Slack user UCAROL"), ("remove-person", "carol", "-")]
    assert ["ada", "limited", "jobs queued or running", "-"] in rows, rows  # the first test's refusal
    assert ["eve", "limited", "requests per second", "-"] in rows, rows
    assert ["eve", "submit", job.id, "ask in /team/vault"] in rows
    everything = "\n".join(listed) + repr(postgres.execute("SELECT * FROM audit",
                                                           dbname=limited.store_url.rsplit("/", 1)[1]))
    for secret in (token, limited.tokens["ada"], limited.tokens["eve"], postgres.password, "sk-abc123"):
        assert secret not in everything


def test_doctor_names_limits_hit_a_dead_worker_and_an_unreachable_api_node(limited: TeamCluster,
                                                                            postgres: Any) -> None:
    import subprocess
    import sys

    from tests.fixtures.postgres import _free_port
    from tests.team_server.conftest import REPO

    database = limited.store_url.rsplit("/", 1)[1]
    # a worker that died an hour ago (its row stays until another worker's sweep prunes it)
    postgres.execute("INSERT INTO procrastinate_workers (last_heartbeat) VALUES (now() - interval '1 hour')",
                     dbname=database)
    gone = f"http://127.0.0.1:{_free_port()}"
    env = {**limited.env, "TROUPE_SERVER_URL": f"{limited.urls[0]},{gone}", "TROUPE_TOKEN": limited.tokens["eve"]}
    done = subprocess.run([sys.executable, "-m", "daemon.cli.main", "doctor", "--no-model"], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    lines = {line.split()[1]: line for line in done.stdout.splitlines() if len(line.split()) > 1}
    assert done.returncode == 1
    assert lines["queue"].startswith("FAIL") and "0 workers alive" in lines["queue"], lines["queue"]
    assert "1 worker stopped sending heartbeats" in lines["queue"], lines["queue"]
    assert lines["limits"].startswith("FAIL"), lines["limits"]
    assert "ada (jobs queued or running, 1x)" in lines["limits"] and "eve (requests per second" in lines["limits"]
    assert lines["nodes"].startswith("FAIL") and f"unreachable: {gone}" in lines["nodes"], lines["nodes"]
    assert "1 of 2 API nodes answer" in lines["nodes"]
    assert limited.tokens["eve"] not in done.stdout and postgres.password not in done.stdout
