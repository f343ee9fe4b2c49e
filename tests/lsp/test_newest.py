"""Review on save that never makes you wait and is never wrong about which code it saw: the
newest save's review wins (older ones cancelled, their model calls dropped), an older review
finishing late never replaces what a newer one found, an ask runs while five reviews are in
flight, and findings follow the edits Neovim, VS Code and Helix really send."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from daemon.api.protocol import ACTIVE_STATES, JobOptions, SubmitJob
from daemon.client import DaemonError
from tests.daemon.conftest import DaemonProcess
from tests.fakes.llm_server import FakeLLM
from tests.lsp.conftest import BUG_MESSAGE, PLANTED, Editor, new_repo, until, uri_of

FIXED = "import os\n\n\ndef add(a, b):\n    return a * b\n"
WRONG_OP = "add() multiplies: a newer bug"
NEWER_REVIEW = ('[{"start_line": 5, "severity": "major", "message": "' + WRONG_OP + '", '
                '"quote": "return a * b", "replacement": "    return a + b"}]')


async def quiet(daemon: DaemonProcess) -> None:
    """No job of an earlier test is still queued or running (faults then reach the calls meant)."""
    async with daemon.client() as client:
        deadline = time.monotonic() + 60
        while await client.jobs(state=",".join(ACTIVE_STATES)):
            assert time.monotonic() < deadline, "earlier jobs never finished"
            await asyncio.sleep(0.05)


async def editing(engine_daemon: DaemonProcess, open_editor: Any, name: str,
                  files: dict[str, str] | None = None) -> tuple[Editor, Path]:
    root = new_repo(engine_daemon.home, name, {"calc.py": PLANTED, **(files or {})})
    editor = await open_editor(engine_daemon.home, [root])
    await editor.registered(root)
    calc = root / "calc.py"
    editor.open(calc, PLANTED)
    await quiet(engine_daemon)
    return editor, calc


def hung(llm: FakeLLM, text: str, since: int) -> list[Any]:
    """The requests after the first ``since`` whose prompt holds ``text`` and that got the hang fault."""
    return [r for r in llm.requests[since:] if r.fault == "hang" and text in r.prompt]


async def test_a_newer_save_cancels_the_running_review_and_stops_its_model_call(
        engine_daemon: DaemonProcess, llm: FakeLLM, open_editor: Any) -> None:
    editor, calc = await editing(engine_daemon, open_editor, "supersede")
    since = len(llm.requests)
    llm.fail_next("hang", seconds=30)  # the first save's model call would take 30 s
    llm.add_rule(NEWER_REVIEW, user="return a * b", times=1)
    editor.save(calc, PLANTED + "\n")
    (old_call,) = await until(lambda: hung(llm, "return a - b", since), what="the first review's model call")
    editor.save(calc, FIXED)
    await until(lambda: editor.troupe_diagnostics(calc, WRONG_OP), what="the newer review's finding")
    assert not editor.troupe_diagnostics(calc, BUG_MESSAGE)
    await until(lambda: old_call.aborted, timeout=5, what="the old model request to be dropped")
    async with engine_daemon.client() as client:
        reviews = await client.jobs(workspace=str(calc.parent))
    states = sorted((j.state, j.error) for j in reviews)
    assert len(states) == 2 and states[0][0] == "cancelled" and "superseded by job" in str(states[0][1])
    assert states[1][0] == "succeeded"


async def test_an_older_review_finishing_late_never_replaces_the_newer_findings(
        engine_daemon: DaemonProcess, llm: FakeLLM, open_editor: Any) -> None:
    editor, calc = await editing(engine_daemon, open_editor, "inversion")
    since = len(llm.requests)
    llm.fail_next("hang", seconds=3)  # the review the user asked for, of the old text, is slow
    llm.add_rule(NEWER_REVIEW, user="return a * b", times=1)
    manual = await editor.command("troupe.review", {"file": uri_of(calc)})
    await until(lambda: hung(llm, "return a - b", since), what="the older review's model call")
    editor.save(calc, FIXED)  # a save review of the new text, quick
    await until(lambda: editor.troupe_diagnostics(calc, WRONG_OP), what="the newer review's finding")
    def older_finished() -> bool:  # its final state reached the editor, after all its other events
        assert editor.troupe_diagnostics(calc, WRONG_OP), "the newer finding vanished"
        assert not editor.troupe_diagnostics(calc, BUG_MESSAGE), "the old text's finding came back"
        return any(n.event.kind == "job_state" and n.event.job_id == manual["jobId"]
                   and n.event.data.state not in ACTIVE_STATES for n in editor.notifications("troupe/jobEvent"))

    await until(older_finished, what="the older review to finish late")
    async with engine_daemon.client() as client:
        assert (await client.job(manual["jobId"])).state not in ACTIVE_STATES
        stored = await client.findings(str(calc.parent), "calc.py")
    assert editor.troupe_diagnostics(calc, WRONG_OP) and not editor.troupe_diagnostics(calc, BUG_MESSAGE)
    assert [f.message for f in stored if f.rule is None] == [WRONG_OP]


async def test_an_ask_runs_at_once_while_five_reviews_are_in_flight(
        engine_daemon: DaemonProcess, llm: FakeLLM, open_editor: Any) -> None:
    files = {f"mod{i}.py": f"def f{i}(x):\n    return x + {i}\n" for i in range(5)}
    editor, calc = await editing(engine_daemon, open_editor, "reserved", files)
    since = len(llm.requests)
    llm.fail_next("hang", seconds=30, times=2)  # the two reviews that run hang; three more queue
    async with engine_daemon.client() as client:
        reviews = [await client.submit(SubmitJob(kind="review", workspace=str(calc.parent), files=[name],
                                                 priority="background", options=JobOptions(trigger="save")))
                   for name in files]
        try:
            await until(lambda: len(hung(llm, "", since)) == 2, what="two hung reviews")
            began = time.monotonic()
            job_id = (await editor.command("troupe.ask", {"prompt": "what does add do?",
                                                          "file": uri_of(calc)}))["jobId"]
            token = await until(lambda: next((t for t in editor.client.progress_reports if job_id in str(t)), None),
                                what="the ask's progress")
            await until(lambda: len(editor.client.progress_reports[token]) >= 2, what="a progress report")
            first_report = time.monotonic() - began
            answered = await until(lambda: [n for n in editor.notifications("troupe/jobFinished")
                                            if n.job.id == job_id], timeout=30, what="the answer")
            states = [(await client.job(r.id)).state for r in reviews]
        finally:  # the queued ones first (a freed slot would start one); one may have finished meanwhile
            for review in reversed(reviews):
                try:
                    await client.cancel(review.id)
                except DaemonError as error:
                    if error.status != 409:
                        raise
    assert first_report < 2.0, f"the ask's first progress report took {first_report:.2f} s"
    assert answered[0].job.state == "succeeded"
    assert sorted(states) == ["queued", "queued", "queued", "running", "running"]  # still in flight


async def test_findings_and_lint_follow_the_edits_editors_really_send(
        engine_daemon: DaemonProcess, open_editor: Any) -> None:
    editor, calc = await editing(engine_daemon, open_editor, "shapes")
    editor.save(calc, PLANTED)
    await until(lambda: editor.troupe_diagnostics(calc, BUG_MESSAGE), what="the reviewer's diagnostic")

    def bug_at(line: int) -> Any:
        return lambda: [d for d in editor.troupe_diagnostics(calc, BUG_MESSAGE) if d.range.start.line == line]

    steps = [  # (what, range start, range end, text, the bug's line after it)
        ("Neovim o below the bug", (4, 16), (5, 0), "\n    pass\n", 4),
        ("VS Code Enter at the end of the line above", (3, 14), (3, 14), "\n    ", 5),
        ("Helix open below the bug", (5, 16), (5, 16), "\n    ", 5),
        ("a paste of two lines at the top", (0, 0), (0, 0), "x = 1\ny = 2\n", 7),
        ("Neovim J joining a blank line into the def", (5, 14), (6, 4), "", 6),
        ("undo of the join", (5, 14), (5, 14), "\n    ", 7),
    ]
    for what, start, end, text, line in steps:
        editor.edit(calc, start, end, text)
        await until(bug_at(line), timeout=5, what=f"the bug on line {line} after {what}")
    await until(lambda: [d for d in editor.diagnostics(calc) if d.code == "F401" and d.range.start.line == 2],
                what="the lint of the unused import, moved down by the paste")
    editor.edit(calc, (7, 15), (7, 16), "c")  # its own line edited: the finding goes until the next review
    await until(lambda: not editor.troupe_diagnostics(calc, BUG_MESSAGE), what="the edited finding to go")
