"""Experience through the daemon, as the CLI and the editors see it: a finding dismissed with a
reason becomes a learning; search, list, show, pin, stats, export/import (JSONL, round trip) and
delete work through the API and the ``troupe experience`` commands; imported secrets are scrubbed."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from daemon.api.protocol import SubmitJob
from tests.daemon.conftest import REPO, DaemonProcess, daemon_env, wait_for


@pytest.fixture
def home() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="trx-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
async def daemon(home: Path) -> AsyncIterator[DaemonProcess]:
    process = DaemonProcess(home, daemon_env(home)).start()
    yield process
    process.stop()
    print(process.stderr()[-3000:])  # shown when the test fails


def troupe(home: Path, *args: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "daemon.cli.main", "experience", *args], cwd=REPO, text=True,
                          capture_output=True, env=daemon_env(home), timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


async def test_a_dismissal_becomes_a_learning_and_experience_is_curated(daemon, home):
    repo = home / "repo"
    repo.mkdir()
    (repo / "app.py").write_text("def add(a, b):\n    return a + b\n")
    async with daemon.client() as client:
        job = await client.submit(SubmitJob(kind="review", workspace=str(repo), files=["app.py"]))
        await wait_for(client, job.id)
        (finding,) = await client.findings(str(repo))
        await client.set_finding_state(finding.id, "dismissed", "we keep this on purpose")
        (learning,) = await client.experience(pool="learning")
        assert learning.workspace == str(repo) and "we keep this on purpose" in learning.value
        assert learning.data["verdict"] == "dismissed" and learning.data["code"] == "def add(a, b):"

        hits = (await client.search("purpose")).hits
        assert hits[0].kind == "experience:learning" and hits[0].id == learning.id
        assert (await client.pin_experience(learning.id)).pinned
        shown = await client.experience_item(learning.id)
        assert shown.pinned and shown.key.startswith("app.py")
        stats = await client.experience_stats()
        assert stats.total == 1 and stats.pools["learning"]["pinned"] == 1

    exported = home / "exp.jsonl"
    troupe(home, "export", "-o", str(exported))
    rows = [json.loads(line) for line in exported.read_text().splitlines()]
    assert len(rows) == 1 and rows[0]["pool"] == "learning"
    assert "1 already there" in troupe(home, "import", str(exported))
    planted = {"pool": "agent", "key": "deploy", "value": "use key sk-abcdefghijklmnop1234", "phase": "code"}
    exported.write_text(json.dumps(planted) + "\n")
    assert "imported 1" in troupe(home, "import", str(exported))
    listing = troupe(home, "list")
    assert "use key ***" in listing and "sk-abcdefghijklmnop" not in listing
    assert "2 experiences" in troupe(home, "stats")

    async with daemon.client() as client:
        deleted = await client.delete_experience(learning.id)
        assert deleted.id == learning.id
        assert [e.pool for e in await client.experience()] == ["agent"]
        with pytest.raises(Exception, match="no experience with id"):
            await client.experience_item(learning.id)
