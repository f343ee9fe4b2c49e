"""The files a surface names are checked where the daemon receives them: a 400 at submission that
names the file and why, never "succeeded, 0 findings" after the model saw "(no files yet)"; files
over the size policy are skipped with a notice; the CLI sends names as typed (a symlink to
/etc/passwd neither registers /etc nor reaches a model)."""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

from daemon.api.protocol import SubmitJob
from daemon.client import DaemonError
from tests.daemon.conftest import DaemonProcess, wait_for
from tests.daemon.test_cli import troupe

BIG = 2_000_000


@pytest.fixture
def outside(home: Path) -> Path:
    folder = home / "elsewhere"
    folder.mkdir()
    (folder / "secret.py").write_text("TOKEN = 'from outside the repository'\n")
    return folder


@pytest.mark.parametrize(("name", "why"), [
    ("missing.py", "does not exist"),
    ("a\0b.py", "NUL"),
    ("~/.ssh/id_rsa", "absolute paths are not allowed"),
    ("C:\\Windows\\win.ini", "absolute paths are not allowed"),
    ("linkpasswd", "symlink leading outside the workspace"),
    ("linkdir/secret.py", "symlink leading outside the workspace"),
])
async def test_a_bad_file_is_a_400_at_submission_naming_it_and_why(daemon: DaemonProcess, repo: Path, outside: Path,
                                                                   name: str, why: str) -> None:
    (repo / "linkpasswd").symlink_to("/etc/passwd")
    (repo / "linkdir").symlink_to(outside)
    async with daemon.client() as client:
        for kind in ("review", "test", "ask"):
            with pytest.raises(DaemonError) as refused:
                await client.submit(SubmitJob(kind=kind, workspace=str(repo), files=[name],  # type: ignore[arg-type]
                                              prompt="look" if kind == "ask" else None))
            assert refused.value.status == 400 and why in str(refused.value) and repr(name) in str(refused.value)
        assert await client.jobs(state="all") == []


async def test_a_file_over_the_size_policy_is_skipped_with_a_notice(daemon: DaemonProcess, repo: Path) -> None:
    (repo / "big.py").write_text("x = 1\n" * (BIG // 6))
    async with daemon.client() as client:
        with pytest.raises(DaemonError) as refused:
            await client.submit(SubmitJob(kind="review", workspace=str(repo), files=["big.py"]))
        assert refused.value.status == 413 and "big.py: skipped: too large" in str(refused.value)
        job = await client.submit(SubmitJob(kind="review", workspace=str(repo), files=["big.py", "./app.py"]))
        done = await wait_for(client, job.id)
        events = [e async for e in client.events(job.id)]
        findings = await client.findings(str(repo))
    assert done.state == "succeeded" and done.request["files"] == ["app.py"]
    notices = [e.data["text"] for e in events if e.kind == "log" and e.data.get("action") == "skipped"]
    assert len(notices) == 1 and notices[0].startswith("skipped big.py: too large: 1,999,998 bytes")
    assert [f.file for f in findings] == ["app.py"]


def test_the_cli_never_follows_a_symlink_out_of_the_repository(make_daemon: Any, home: Path, repo: Path,
                                                               outside: Path) -> None:
    daemon = make_daemon().start()
    (repo / "linkpasswd").symlink_to("/etc/passwd")
    (repo / "linkdir").symlink_to(outside)
    for name in ("linkpasswd", "linkdir/secret.py"):
        proc = troupe(home, "review", name, cwd=repo, check=False)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert f"refused path {name!r}" in proc.stderr and "symlink leading outside the workspace" in proc.stderr
    assert troupe(home, "jobs").stdout.strip() == "no jobs yet"  # nothing submitted: nothing reached a model
    assert "scripted review of app.py" in troupe(home, "review", "app.py", cwd=repo).stderr
    roots = [ws.root for ws in asyncio.run(workspaces(daemon))]
    assert roots == [str(repo)]  # neither /etc nor the folder the link leads to was registered


async def workspaces(daemon: DaemonProcess) -> list[Any]:
    async with daemon.client() as client:
        return await client.workspaces()


def test_a_killed_daemons_scratch_folders_are_swept_at_its_next_start(make_daemon: Any, home: Path) -> None:
    from daemon.paths import scratch_tag  # here: the tag is what this fix adds

    tag = scratch_tag(home)
    temp = Path(tempfile.gettempdir())
    left = [Path(tempfile.mkdtemp(prefix=f"troupe-{kind}-{tag}-")) for kind in ("scratch", "sandbox")]
    (left[0] / "work").mkdir()
    (left[0] / "work" / "app.py").write_text("x = 1\n")
    other = Path(tempfile.mkdtemp(prefix="troupe-scratch-someoneelse-"))
    try:
        daemon = make_daemon().start()
        daemon.stop()
        assert not any(p.exists() for p in left)
        assert other.exists()  # another daemon's (or a test's) folder is not ours to remove
        assert "removed 2 scratch folder(s)" in daemon.stderr()
        assert not [p for p in os.listdir(temp) if f"-{tag}-" in p]
    finally:
        other.rmdir()
