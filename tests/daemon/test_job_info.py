"""What the daemon says about a job, computed once for every surface: a readable title instead of a
raw id, and a change whose own tests failed flagged as such (surfaces offer it with a warning)."""

from __future__ import annotations

from pathlib import Path

from daemon.api.protocol import JobOptions, SubmitJob
from tests.daemon.conftest import DaemonProcess, wait_for


async def test_every_job_carries_a_title_a_person_can_read(daemon: DaemonProcess, repo: Path) -> None:
    (repo / "b.py").write_text("x = 1\n")
    async with daemon.client() as client:
        on_save = await client.submit(SubmitJob(kind="review", workspace=str(repo), files=["app.py", "b.py"],
                                                priority="background", options=JobOptions(trigger="save")))
        by_hand = await client.submit(SubmitJob(kind="review", workspace=str(repo), files=["app.py"]))
        asked = await client.submit(SubmitJob(kind="ask", workspace=str(repo), prompt="where  is\nadd() " + "x" * 80))
        tests = await client.submit(SubmitJob(kind="test", workspace=str(repo), options=JobOptions(trigger="save")))
        listed = {j.id: j.title for j in await client.jobs(state="all")}
    assert on_save.title == "review on save: app.py, b.py"
    assert by_hand.title == "review: app.py"
    assert asked.title == "ask: where is add() " + "x" * 55 + "…"
    assert tests.title == "tests on save: all"
    assert listed[on_save.id] == on_save.title and listed[asked.id] == asked.title


async def test_a_change_whose_tests_failed_says_so_in_the_job_the_change_and_the_event(
        daemon: DaemonProcess, repo: Path) -> None:
    async with daemon.client() as client:
        failing = await client.submit(SubmitJob(kind="change", workspace=str(repo), prompt="three numbers",
                                                options=JobOptions(script={
                                                    "path": "app.py", "after": "def add(a, b, c):\n    return a + b\n",
                                                    "tests_fail": "Tests FAILED: 1 failed, 1 passed (pytest, 0.1 s)"})))
        passing = await client.submit(SubmitJob(kind="change", workspace=str(repo), prompt="docs",
                                                options=JobOptions(script={
                                                    "path": "app.py",
                                                    "after": "def add(a, b):\n    '''Add.'''\n    return a + b\n"})))
        failed_job, passed_job = await wait_for(client, failing.id), await wait_for(client, passing.id)
        failed_change = await client.change(failed_job.result["change_id"])
        passed_change = await client.change(passed_job.result["change_id"])
        proposed = [e for e in [e async for e in client.events(failing.id)] if e.kind == "change_proposed"]
    assert failed_job.tests_failed == "Tests FAILED: 1 failed, 1 passed (pytest, 0.1 s)"
    assert failed_change.tests_failed == failed_job.tests_failed
    assert proposed[0].data["tests_failed"] == failed_job.tests_failed
    assert passed_job.tests_failed is None and passed_change.tests_failed is None


def test_a_test_run_with_nothing_to_run_is_not_reported_as_failed_tests() -> None:
    from daemon.jobs.describe import tests_failed

    assert tests_failed({"test_report": {"ok": False, "ran": False, "summary": "Nothing to run: no tests"}}) is None
    assert tests_failed({"test_report": {"ok": False, "ran": True, "summary": "Tests FAILED: 1 failed"}}) == (
        "Tests FAILED: 1 failed")
