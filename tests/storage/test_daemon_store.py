"""The daemon opens the store its configuration names: with ``TROUPE_STORE_URL`` a PostgreSQL database
holds its jobs, events and findings, and nothing lands in TROUPE_HOME's SQLite file."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from daemon.messages import SubmitJob
from storage import Store
from tests.daemon.conftest import DaemonProcess, daemon_env, wait_for
from tests.fixtures.postgres import PostgresServer


async def test_a_daemon_given_a_store_url_keeps_its_work_in_postgresql(
        postgres: PostgresServer, postgres_url: str) -> None:
    home = Path(tempfile.mkdtemp(prefix="trd-", dir="/tmp"))  # short: the socket path must stay short
    root = home / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "app.py").write_text("def add(a, b):\n    return a + b\n")
    daemon = DaemonProcess(home, daemon_env(home, TROUPE_STORE_URL=postgres_url))
    try:
        async with daemon.start().client() as client:
            review = await client.submit(SubmitJob(kind="review", workspace=str(root), files=["app.py"]))
            done = await wait_for(client, review.id)
            shown = await client.findings(str(root))
        assert daemon.stop() == 0
        assert done.state == "succeeded" and [f.message for f in shown] == ["scripted review of app.py"]
        assert not (home / "troupe.db").exists()
        with Store.open(postgres_url) as store:
            assert store.get_job(review.id).state == "succeeded"
            assert [e.kind for e in store.events_after(review.id)][-1] == "job_state"
            workspace = store.find_workspace_for(root)
            assert [f.message for f in store.list_findings(workspace.id)] == ["scripted review of app.py"]
        assert postgres.password not in daemon.stderr()
    finally:
        if daemon.proc is not None and daemon.proc.poll() is None:
            daemon.proc.kill()
            daemon.proc.wait(5)
        shutil.rmtree(home, ignore_errors=True)
