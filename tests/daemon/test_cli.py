"""The ``troupe`` command as a user types it: help everywhere, up/status/down, ask/review/jobs/apply."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.conftest import REPO, daemon_env

SUBCOMMANDS = ["daemon", "up", "down", "status", "ask", "review", "test", "jobs", "findings", "watch", "apply",
               "discard", "answer", "cancel", "experience", "slack", "doctor"]


def troupe(home: Path, *args: str, cwd: Path | None = None, check: bool = True,
           **env: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, "-m", "daemon.cli.main", *args], cwd=cwd or REPO, text=True,
                          capture_output=True, env=daemon_env(home, **env), timeout=60)
    if check and proc.returncode != 0:
        raise AssertionError(f"troupe {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc


def test_every_command_has_help_and_help_imports_nothing_heavy() -> None:
    probe = (
        "import sys\nfrom daemon.cli.main import main\n"
        f"for command in {SUBCOMMANDS!r} + [['experience', 'search']]:\n"
        "    argv = (command if isinstance(command, list) else [command]) + ['--help']\n"
        "    try:\n        main(argv)\n    except SystemExit as exit:\n        assert exit.code == 0, argv\n"
        "heavy = [m for m in ('aiohttp', 'litellm', 'daemon.agents.runner', 'storage', 'watchdog') "
        "if m in sys.modules]\nprint('HEAVY', heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True).stdout
    assert "HEAVY []" in out
    for command in SUBCOMMANDS:
        assert f"{command}" in out
    top = subprocess.run([sys.executable, "-m", "daemon.cli.main", "--help"], cwd=REPO, capture_output=True,
                         text=True, check=True).stdout
    assert all(name in top for name in ("lsp", "slack", "daemon", "experience"))


def test_up_twice_reports_the_running_daemon_and_down_stops_it(home: Path) -> None:
    assert troupe(home, "status", check=False).returncode == 3
    first = troupe(home, "up").stdout
    second = troupe(home, "up").stdout
    pid = first.split("pid ")[1].rstrip(")\n")
    assert first.startswith("daemon started") and second == f"daemon already running (pid {pid})\n"
    status = json.loads(troupe(home, "status", "--json").stdout)
    assert status["pid"] == int(pid) and status["executor"] == "scripted"
    assert troupe(home, "down").stdout == f"daemon stopped (pid {pid})\n"
    assert "not running" in troupe(home, "status", check=False).stdout
    log = (home / "logs" / "daemon.log").read_text()
    assert "listening on" in log and "stopped" in log


def test_a_command_starts_the_daemon_when_none_is_running(home: Path) -> None:
    jobs = troupe(home, "jobs", TROUPE_AUTOSTART="1")
    assert jobs.stdout == "no jobs yet\n"
    assert "running: pid" in troupe(home, "status").stdout
    troupe(home, "down")


@pytest.fixture
def up(home: Path, repo: Path) -> Any:
    troupe(home, "up", TROUPE_API_KEY="sk-planted-secret-123456")
    yield home
    troupe(home, "down", check=False)


def test_ask_review_jobs_findings_and_a_refused_apply(up: Path, repo: Path) -> None:
    home = up
    answer = troupe(home, "ask", "what does add do?", cwd=repo)
    assert answer.stdout.startswith("echo: what does add do?")
    review = json.loads(troupe(home, "review", "app.py", "--json", cwd=repo).stdout)
    assert review["job"]["state"] == "succeeded"
    assert [f["message"] for f in review["findings"]] == ["scripted review of app.py"]
    assert "scripted review of app.py" in troupe(home, "findings", cwd=repo).stdout
    jobs = troupe(home, "jobs").stdout.splitlines()
    assert len(jobs) == 2 and "review succeeded" in jobs[0] and "ask    succeeded" in jobs[1]
    hits = json.loads(troupe(home, "experience", "search", "scripted", "--json").stdout)["hits"]
    assert any(h["kind"] == "finding" for h in hits)
    assert troupe(home, "watch", str(repo), "--no-follow").stdout == f"watching {repo.resolve()} (inotify)\n"
    assert f"watching {repo.resolve()} (inotify)" in troupe(home, "status").stdout
    assert troupe(home, "watch", "--stop", str(repo)).stdout == f"stopped watching {repo.resolve()}\n"


def test_a_change_that_conflicts_is_not_applied(up: Path, repo: Path) -> None:
    from daemon.api.protocol import JobOptions, SubmitJob
    from daemon.client import SyncClient

    client = SyncClient(socket_path=up / "troupe.sock", autostart=False)
    job = client.submit(SubmitJob(kind="change", workspace=str(repo), prompt="x",
                                  options=JobOptions(script={"path": "app.py", "after": "changed\n"})))
    while client.job(job.id).state != "succeeded":
        time.sleep(0.05)
    change_id = client.job(job.id).result["change_id"]
    (repo / "app.py").write_text("the user's edit\n")
    refused = troupe(up, "apply", change_id, check=False)
    assert refused.returncode == 1 and "app.py: was modified" in refused.stderr
    assert (repo / "app.py").read_text() == "the user's edit\n"
    assert troupe(up, "discard", change_id).stdout == f"discarded {change_id}\n"


def test_secrets_are_redacted_from_answers_the_store_and_the_log(up: Path, repo: Path) -> None:
    secret = "sk-planted-secret-123456"  # the daemon's own TROUPE_API_KEY, pasted into a prompt
    answer = troupe(up, "ask", f"please use {secret}", cwd=repo).stdout
    jobs = troupe(up, "jobs", "--json").stdout
    troupe(up, "down")
    log = (up / "logs" / "daemon.log").read_text()
    assert answer.startswith("echo: please use ***")
    assert secret not in jobs and secret not in log and "queued" in log
    assert secret.encode() not in b"".join(p.read_bytes() for p in up.glob("troupe.db*"))
