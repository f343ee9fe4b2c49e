"""An editor's per-workspace overrides (``troupe.model``, ``troupe.reviewOnSave``,
``troupe.testOnSave``) end to end: a real daemon (the agent engine, the fake LLM) keeps them in
the store, its watcher obeys them on save, and the gateway calls the overriding model."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from daemon.api.protocol import SubmitJob, WorkspaceSettings
from tests.daemon.conftest import DaemonProcess, daemon_env, wait_for
from tests.daemon.test_watch_e2e import Follower, new_repo
from tests.fakes.llm_server import FakeLLM


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLM]:
    fake = FakeLLM().start_in_thread()
    fake.default_reply = "The answer."
    yield fake
    fake.stop_thread()


@pytest.fixture(scope="module")
def engine_daemon(llm: FakeLLM) -> Iterator[DaemonProcess]:
    """No TROUPE_MODEL: it would win over the editor's model (the environment wins over everything)."""
    home = Path(tempfile.mkdtemp(prefix="trs-", dir="/tmp"))
    endpoint = {k: v for k, v in llm.env().items() if k != "TROUPE_MODEL"}
    env = daemon_env(home, **endpoint, TROUPE_EXECUTOR="daemon.jobs.engine:EngineExecutor",
                     TROUPE_EXPERIENCE="off")
    daemon = DaemonProcess(home, env).start()
    yield daemon
    daemon.kill9()
    shutil.rmtree(home, ignore_errors=True)


async def test_review_on_save_false_starts_no_review_and_test_on_save_queues_a_test_job(
        engine_daemon: DaemonProcess) -> None:
    root = new_repo(engine_daemon, "quiet")
    async with engine_daemon.client() as client:
        info = await client.register_workspace(str(root), settings=WorkspaceSettings(
            review_on_save=False, test_on_save=True))
        follower = Follower(client, root)
        (root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
        queued = await follower.until(lambda e: e.kind == "watch" and e.data.get("action") == "queued")
        test_job = await client.job(queued.data["job_id"])
        await client.cancel(test_job.id)
        jobs = await client.jobs(state="all", workspace=str(root))
        follower.close()
    assert info.settings == WorkspaceSettings(review_on_save=False, test_on_save=True)
    assert test_job.kind == "test" and test_job.request["options"]["trigger"] == "save"
    assert test_job.request["files"] == ["calc.py"]
    assert [job.kind for job in jobs] == ["test"], "a save started a review although review_on_save is false"


async def test_the_editors_model_reaches_the_gateway_and_the_overrides_persist(
        engine_daemon: DaemonProcess, llm: FakeLLM) -> None:
    root = new_repo(engine_daemon, "modelled")
    (root / "app.py").write_text("def add(a, b):\n    return a + b\n")
    async with engine_daemon.client() as client:
        await client.register_workspace(str(root), settings=WorkspaceSettings(model="openai/editor-model"))
        again = await client.register_workspace(str(root))  # no settings: the stored ones stay
        job = await client.submit(SubmitJob(kind="ask", workspace=str(root), prompt="What does add() do?"))
        done = await wait_for(client, job.id, timeout=60)
        listed = {ws.root: ws for ws in await client.workspaces()}
    assert done.state == "succeeded", done.error
    assert again.settings.model == "openai/editor-model"
    assert listed[str(root)].settings == WorkspaceSettings(model="openai/editor-model")
    calls = [r for r in llm.requests if "What does add() do?" in r.prompt]
    assert calls and {r.body["model"] for r in calls} == {"editor-model"}
