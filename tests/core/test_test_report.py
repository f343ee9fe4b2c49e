"""One test report record, end to end: the runners make it, the engine reads it, a checkpoint and a
job's stored result keep it as JSON and read it back, a tool_run event sums it up; the rows older
daemons stored (``{"ok", "ran", "passed", "failed", "summary", "failures", "cannot_run"}``) still read."""

from __future__ import annotations

import msgspec

from daemon.agents.job import JobOutcome
from daemon.jobs import describe
from daemon.payloads import JobResult, ToolRunData, job_result
from daemon.workspace.reports import TestFailure, TestReport

FAILED = TestReport(ok=False, command=["python", "-m", "pytest", "-q"], passed=3, failed=1, seconds=0.4,
                    failures=[TestFailure("tests/test_a.py::test_x", "a.py", 3, "assert 1 == 2", "E assert")])
OLD_ROW = {"ok": False, "ran": True, "passed": 1, "failed": 1,
           "summary": "Tests FAILED: 1 failed, 1 passed (pytest, 0.1 s)",
           "failures": [{"test_id": "t::x", "file": "a.py", "line": 2, "message": "boom", "output": ""}],
           "cannot_run": ""}


def test_the_report_keeps_its_summary_and_reads_back_as_itself() -> None:
    assert FAILED.summary().startswith("Tests FAILED: 1 failed, 3 passed (pytest, 0.4 s)")
    stored = msgspec.json.decode(msgspec.json.encode(FAILED))
    assert stored["ran"] is True and stored["summary"] == FAILED.summary()
    assert msgspec.convert(stored, TestReport) == FAILED


def test_a_job_result_holds_the_record_and_an_event_sums_it_up() -> None:
    outcome = JobOutcome("succeeded", "change", test_report=FAILED)
    stored = {"test_report": msgspec.json.decode(msgspec.json.encode(outcome.summary()["test_report"]))}
    result = job_result(stored)
    assert isinstance(result, JobResult) and result.test_report == FAILED
    assert describe.tests_failed(stored) == FAILED.summary()
    event = ToolRunData.of_report("tests", FAILED, 0.41)
    assert (event.ok, event.passed, event.failed, event.summary) == (False, 3, 1, FAILED.summary())


def test_a_row_an_older_daemon_stored_still_reads() -> None:
    report = job_result({"test_report": OLD_ROW}).test_report
    assert report is not None and report.ran and not report.ok and report.passed == 1
    assert report.summary() == OLD_ROW["summary"] and report.failed_run == OLD_ROW["summary"]
    assert report.failures[0].file == "a.py"
    no_ran = {k: v for k, v in OLD_ROW.items() if k != "ran"}  # rows that left out "ran" had run
    assert msgspec.convert(no_ran, TestReport).failed_run == OLD_ROW["summary"]
    nothing = msgspec.convert({"ok": False, "ran": False, "summary": "Nothing to run: no tests"}, TestReport)
    assert not nothing.ran and nothing.failed_run is None


def test_a_run_with_nothing_to_run_is_no_failure() -> None:
    nothing = TestReport(ok=False, output_tail="Nothing to run: no tests")
    assert not nothing.ran and nothing.summary() == "Nothing to run: no tests" and nothing.failed_run is None
