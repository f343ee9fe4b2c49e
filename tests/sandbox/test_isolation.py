"""Sandbox isolation: no network, no secrets, no writes outside the scratch copy."""

from __future__ import annotations

import asyncio
import json
import os
import socket
from pathlib import Path

import pytest

from daemon.sandbox import Isolation, SandboxError, run_sandboxed
from tests.sandbox.conftest import python

CONNECT = """
import socket, sys
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2).close()
except OSError as exc:
    print(f"refused: {exc}")
    sys.exit(3)
print("connected")
"""

SHOW_ENVIRONMENT = "import json, os; print(json.dumps(dict(os.environ)))"


async def test_a_connection_to_a_loopback_server_fails_inside_the_sandbox(scratch: Path, isolation: Isolation) -> None:
    if not isolation.network_isolated:
        pytest.skip(f"this machine cannot isolate the sandbox's network: {isolation.limitation}")
    accepted: list[asyncio.StreamWriter] = []

    def on_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(writer)
        writer.close()

    server = await asyncio.start_server(on_connection, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            pass  # the server does accept connections from outside the sandbox
        await asyncio.sleep(0.05)
        accepted.clear()

        result = await run_sandboxed(python(CONNECT, str(port)), cwd=scratch, timeout=10)

    assert result.returncode == 3, result.stdout + result.stderr
    assert result.stdout.startswith("refused:")
    assert accepted == []
    assert result.network_isolated
    assert "network: none (own empty network namespace)" in result.notes


async def test_secrets_in_the_daemon_environment_never_reach_the_program(
    scratch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    planted = {
        "OPENAI_API_KEY": "sk-planted-1",
        "GITHUB_TOKEN": "ghp-planted-2",
        "DB_PASSWORD": "planted-3",
        "SLACK_SIGNING_SECRET": "planted-4",
        "TROUPE_HOME": "/root/.local/share/troupe",
    }
    for name, value in planted.items():
        monkeypatch.setenv(name, value)

    result = await run_sandboxed(python(SHOW_ENVIRONMENT), cwd=scratch, timeout=10)

    seen = json.loads(result.stdout)
    assert not set(planted) & set(seen)
    assert not any(value in result.stdout for value in planted.values())
    assert seen["HOME"] != os.environ.get("HOME") and seen["TMPDIR"].startswith(str(Path(seen["HOME"]).parent))


async def test_secret_looking_variables_given_to_the_run_are_withheld_unless_allowed(scratch: Path) -> None:
    given = {"GITHUB_TOKEN": "ghp-x", "MY_API_KEY": "allowed-y", "PYTEST_ADDOPTS": "-q"}

    result = await run_sandboxed(python(SHOW_ENVIRONMENT), cwd=scratch, timeout=10, env=given, allow_env=["MY_API_KEY"])

    seen = json.loads(result.stdout)
    assert "GITHUB_TOKEN" not in seen
    assert seen["MY_API_KEY"] == "allowed-y" and seen["PYTEST_ADDOPTS"] == "-q"
    assert any("GITHUB_TOKEN" in note and "ghp-x" not in note for note in result.notes)


async def test_the_program_writes_its_scratch_dir_home_and_tmp_but_nothing_else(
    scratch: Path, tmp_path: Path, isolation: Isolation
) -> None:
    if not isolation.confine_writes:
        pytest.skip(f"this machine cannot keep the sandbox from writing elsewhere: {isolation.limitation}")
    outside = tmp_path / "outside"
    outside.mkdir()
    writer = """
import os, sys
for path in ["result.txt", os.environ["HOME"] + "/h", os.environ["TMPDIR"] + "/t", sys.argv[1], sys.argv[2]]:
    try:
        open(path, "w").write("written")
        print("wrote", path)
    except OSError as exc:
        print("refused", path, exc.strerror)
print("home", os.environ["HOME"])
"""
    on_root_fs = Path("/") / f"troupe-sandbox-test-{os.getpid()}"

    result = await run_sandboxed(python(writer, str(outside / "x"), str(on_root_fs)), cwd=scratch, timeout=10)

    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines[:5]] == ["wrote", "wrote", "wrote", "refused", "refused"]
    assert not (outside / "x").exists() and not on_root_fs.exists()
    assert (scratch / "result.txt").read_text() == "written"
    assert (scratch / "result.txt").stat().st_uid == scratch.stat().st_uid == os.getuid()  # handed back
    assert not Path(lines[-1].removeprefix("home ")).exists()  # HOME and TMPDIR are removed afterwards


async def test_files_the_daemon_keeps_private_are_unreadable(
    scratch: Path, tmp_path: Path, isolation: Isolation
) -> None:
    if not isolation.own_uid:
        pytest.skip("the sandbox runs as the daemon's own user here, so it can read what that user can")
    secret = tmp_path / "credentials.toml"
    secret.write_text("api_key = 'sk-private'")
    secret.chmod(0o600)

    result = await run_sandboxed(
        python("import sys; print(open(sys.argv[1]).read())", str(secret)), cwd=scratch, timeout=10
    )

    assert result.returncode == 1
    assert "sk-private" not in result.stdout
    assert "Error" in result.stderr


async def test_stdin_reaches_the_program(scratch: Path) -> None:
    result = await run_sandboxed(
        python("import sys; print(sys.stdin.read().upper())"), cwd=scratch, timeout=10, stdin="hello sandbox"
    )

    assert result.stdout == "HELLO SANDBOX\n"
    assert result.succeeded


async def test_a_program_that_does_not_exist_is_a_failed_run_with_a_clear_message(scratch: Path) -> None:
    result = await run_sandboxed(["no-such-program-troupe"], cwd=scratch, timeout=10)

    assert result.returncode == 127
    assert "cannot run 'no-such-program-troupe'" in result.stderr


async def test_a_missing_working_directory_is_a_sandbox_error(tmp_path: Path) -> None:
    with pytest.raises(SandboxError, match="does not exist"):
        await run_sandboxed(["true"], cwd=tmp_path / "not-there", timeout=10)
