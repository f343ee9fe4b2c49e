"""The tool steps of a chain: run the tests, run the static checks, build the repository context.

They run real programs (pytest, ruff) in the job's workspace copy — through the sandbox, which
``daemon.workspace.testing`` uses — without blocking the event loop, and report what happened as TOOL_RUN
events. Their results feed the templates: ``{test_report}``, ``{test_failures}``, ``{lint}``,
``{context}``.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from daemon.agents.model import Tool, ToolName
from daemon.agents.workbench import EXAMPLE_IDS, SinceCommit, Workbench
from daemon.events import Say
from daemon.lint.check import LintIssue, static_check
from daemon.payloads import ToolRunData
from daemon.review.gitdiff import changed_lines
from daemon.workspace import doctests, related, repomap, testing
from daemon.workspace.repomap import is_test_file
from daemon.workspace.reports import TestReport
from daemon.workspace.scratch import Scratch

TEST_TIMEOUT = 300.0


class Tools:
    def __init__(self, bench: Workbench, say: Say, *, test_command: str | None, context_tokens: int,
                 window: int, per_test_timeout: float = testing.PER_TEST_TIMEOUT) -> None:
        self.bench, self._say = bench, say
        self.test_command, self.context_tokens, self.window = test_command, context_tokens, window
        self.per_test_timeout = per_test_timeout
        self._tested: list[tuple[str, str]] | None = None  # the code the last test run saw

    async def run(self, step: Tool) -> None:
        if step.tool is ToolName.CONTEXT:
            await self.context(step)
            return
        await {"tests": self.tests, "doctests": self.doctests, "related_tests": self.related_tests,
               "static_check": self.static_check}[step.name]()

    async def tests(self) -> TestReport:
        """Run the tests; the code as at the last run keeps that run's report (a skip rule ran them)."""
        state = sorted(self.bench.snapshot().items()) if self.bench.scratch is not None else None
        if state is not None and state == self._tested and self.bench.test_report is not None:
            return self.bench.test_report
        report = await self._run_tests()
        assert report is not None  # only a run of the examples alone can find nothing to run
        self._tested = state
        return report

    async def doctests(self) -> TestReport | None:
        """Only the docstring examples of the files in focus: a review's evidence, a change's first look. On a save,
        failing examples that pass on the last commit are evidence that it broke them (``bench.broken``)."""
        report = await self._run_tests(examples_only=True)
        bench = self.bench
        bench.broken = [f for f in bench.broken if not f.test_id.startswith(EXAMPLE_IDS)]
        if report and report.failures and not report.timed_out and bench.spec.diff and bench.spec.workspace:
            stale = await related.examples_failing_before(Path(bench.spec.workspace), bench.review_files(), report)
            bench.broken += [f for f in report.failures if f not in stale] if stale is not None else []
        return report

    async def related_tests(self) -> TestReport | None:
        """Only the tests related to the files under review (``daemon.workspace.related``), within the
        chain's time limit, on a copy: a review's evidence from the repository's own tests."""
        started = time.monotonic()
        bench = self.bench
        root, files = bench.root, bench.review_files()
        bench.related, bench.related_files, bench.related_stale = None, [], []
        bench.broken = [f for f in bench.broken if f.test_id.startswith(EXAMPLE_IDS)]
        if root is None or not files or bench.spec.workspace is None:
            return None
        tests = await asyncio.to_thread(related.related_test_files, root, files)
        if not tests:
            return None
        bench.related_files = tests
        workspace = Path(bench.spec.workspace)
        scratch, temporary = bench.scratch, None
        if scratch is None:  # a review reads the user's tree: the tests still run on a copy
            scratch = temporary = await asyncio.to_thread(Scratch.from_repo, workspace)

        def seconds() -> tuple[float, float]:  # a run's timeout and each test's, within the chain's time limit
            left = bench.seconds_left(related.RELATED_SECONDS)  # one slow test (a loop the save made endless) fails
            return left, min(self.per_test_timeout, left / related.TESTS_PER_RUN)  # as a timeout; the rest still run

        try:
            report = await related.run_related(scratch.root, tests, *seconds())
            if report and report.failures and not (report.timed_out or report.cannot_run) and bench.spec.diff:
                # a save: what failed before it too is no evidence about it (a server not here, a red test)
                before = await related.failing_before(workspace, files, report, *seconds())
                bench.related_stale = before or []
                if bench.related_stale:
                    report = await related.run_related(scratch.root, tests, *seconds(), deselect=bench.related_stale)
                if before is not None and report is not None and not (report.timed_out or report.cannot_run):
                    bench.broken += [f for f in report.failures  # they passed on the last commit
                                     if "::" in f.test_id and f.test_id not in bench.related_stale]
        finally:
            if temporary is not None:
                await asyncio.to_thread(temporary.cleanup)
        bench.related = report
        if report is not None:
            await self._say(ToolRunData.of_report("related_tests", report, time.monotonic() - started), "tester")
        return report

    async def _run_tests(self, examples_only: bool = False) -> TestReport | None:
        """The project's tests and the docstring examples of the files in focus and changed
        (``daemon.workspace.doctests``), as one report."""
        started = time.monotonic()
        scratch, temporary = self.bench.scratch, None
        files = [*self.bench.review_files(), *self.bench.changed_files()]
        if examples_only and (self.bench.root is None or not doctests.doctest_files(self.bench.root, files)):
            self.bench.examples = None  # nothing to run, nothing to say: no copy of the repository either
            return None
        if scratch is None:  # a read-only chain: the tests still never run in the user's own tree
            if self.bench.spec.workspace is None:
                raise RuntimeError("the tests need a workspace; none was given")
            scratch = temporary = await asyncio.to_thread(Scratch.from_repo, Path(self.bench.spec.workspace))
        try:
            examples = await doctests.run_doctests(scratch.root, files)
            report = examples if examples_only else doctests.merged(
                await testing.run_tests(scratch.root, self.test_command, timeout=TEST_TIMEOUT,
                                        per_test_timeout=self.per_test_timeout), examples)
        finally:
            if temporary is not None:
                await asyncio.to_thread(temporary.cleanup)
        self.bench.examples = examples
        first = self.bench.checked_before is None and report is not None and not self.bench.changed_files()
        if first:
            self.bench.checked_before = report  # what the checks said of the code as the user gave it
        if not examples_only:
            self.bench.test_report = report
        if report is None:  # the files lost their examples meanwhile
            return None
        tool = "doctests" if examples_only else "tests"
        await self._say(ToolRunData.of_report(tool, report, time.monotonic() - started), "tester")
        if first and not examples_only:
            await self._since_commit(report)  # after the run it explains
        return report

    async def _since_commit(self, report: TestReport) -> None:
        """Tests that fail on the user's code and pass on the last commit (run once more on a copy with the
        changed files as ``HEAD`` has them): the lines changed since are where to look (``bench.since_commit``)."""
        workspace = self.bench.spec.workspace
        if workspace is None or report.ok or not report.ran or report.cannot_run or report.timed_out:
            return
        diff = await asyncio.to_thread(related.uncommitted_diff, Path(workspace))
        changed = {path: spans for path, spans in changed_lines(diff).items() if not is_test_file(path)}
        if not changed:
            return
        started = time.monotonic()
        stale = await related.failing_before(Path(workspace), list(changed), report, related.RELATED_SECONDS * 3,
                                             self.per_test_timeout)
        if stale is None:
            return
        regressed = [f.test_id for f in report.failures if "::" in f.test_id and f.test_id not in stale]
        since = self.bench.since_commit = SinceCommit(regressed, changed) if regressed else None
        await self._say(ToolRunData(tool="since_commit", ok=since is None, seconds=round(time.monotonic() - started, 3),
                                    summary=since.describe() if since else "the failing tests fail on the last commit "
                                    "too"), "tester")

    async def static_check(self) -> list[LintIssue]:
        root = self.bench.root
        files = self.bench.review_files() or self.bench.changed_files()
        if root is None or not files:
            self.bench.lint = []
            return []
        issues = await static_check(root, files)
        self.bench.lint = list(issues)
        await self._say(ToolRunData(tool="static_check", ok=not issues,
                                    summary=f"{len(issues)} issue(s) in {len(files)} file(s)"),
                        "reviewer")
        return self.bench.lint

    async def context(self, step: Tool) -> str:
        root = self.bench.root
        if root is None:
            self.bench.context_text = "(no repository)"
            return self.bench.context_text
        budget = self.context_tokens if step.window_share is None else int(self.window * step.window_share)
        ctx = await asyncio.to_thread(repomap.build_context, root, self.bench.spec.task, budget,
                                      self.bench.focus_files(), whole_if_fits=step.whole)
        self.bench.context_text = ctx.text
        await self._say(ToolRunData(tool="context", ok=True, included=ctx.included, left_out=ctx.left_out,
                                    tokens=ctx.tokens,
                                    summary=f"{len(ctx.included)} file(s) shown, {len(ctx.left_out)} left out"), None)
        return ctx.text
