"""Scoring solutions without a model, as Croto ranks them: tests passing, placeholders,
unimplemented functions, lint.

- :func:`static_score` reads the solution in memory: placeholders and unimplemented functions
  from the syntax tree; executability from the team's own test run when it is still fresh
  (no code changed since), else 1 when every Python file parses. Cheap enough for a thousand
  agents.
- :class:`WorkspaceScorer` writes the solution into a scratch copy and runs the project's real
  tests (in the sandbox) and the static checks (ruff). What Croto uses between teams.
"""

from __future__ import annotations

import ast
import asyncio
import os
from collections.abc import Awaitable, Callable
from pathlib import Path

from daemon.agents.placeholders import find_unfinished
from daemon.lint.check import static_check
from daemon.teams.solution import Score, Solution
from daemon.workspace import testing
from daemon.workspace.reports import TestReport
from daemon.workspace.scratch import Scratch

Scorer = Callable[[Solution], Awaitable[Score]]
TEST_TIMEOUT = 300.0


def _shape(solution: Solution) -> tuple[int, int]:
    found = find_unfinished(solution.code_files())
    unimplemented = sum(1 for u in found if "no implementation" in u.what)
    return len(found), unimplemented


def _report_share(report: TestReport | None) -> float | None:
    if report is None:
        return None
    if report.passed + report.failed:
        return report.passed / (report.passed + report.failed)
    return 1.0 if report.ok else 0.0


async def static_score(solution: Solution) -> Score:
    placeholders, unimplemented = _shape(solution)
    share = _report_share(solution.test_report)
    if share is not None:
        return Score(share, placeholders, unimplemented, tests="the team's last test run")
    parses = True
    for path, text in solution.code_files():
        if path.endswith(".py"):
            try:
                ast.parse(text)
            except SyntaxError:
                parses = False
                break
    return Score(1.0 if parses else 0.0, placeholders, unimplemented, tests="not run (syntax only)", tested=False)


async def materialize(solution: Solution, workspace: Path | None, scratch_dir: Path | None = None) -> Scratch:
    """A scratch copy of ``workspace`` (empty for new software) with the solution's files written in."""
    def build() -> Scratch:
        scratch = Scratch.from_repo(workspace, scratch_dir) if workspace is not None else Scratch.empty(scratch_dir)
        try:
            for path, text in sorted(solution.files.items()):
                if text is None:
                    if scratch.exists(path):
                        scratch.delete(path)
                else:
                    scratch.write(path, text)
            scratch.snapshot(f"{solution.label}")
        except BaseException:
            scratch.cleanup()
            raise
        return scratch

    return await asyncio.to_thread(build)


class WorkspaceScorer:
    """Score solutions by running them: real tests (unless the team's run is fresh) and ruff.

    :meth:`batch` scores several at once: their tests run side by side (``concurrency`` at a
    time) and one ruff process reads them all (each copy keeps the repository's ruff settings).
    """

    def __init__(self, workspace: Path | None, *, test_command: str | None = None,
                 scratch_dir: Path | None = None, concurrency: int = 4) -> None:
        self.workspace, self.test_command, self.scratch_dir = workspace, test_command, scratch_dir
        self._slots = asyncio.Semaphore(concurrency)

    async def __call__(self, solution: Solution) -> Score:
        return (await self.batch([solution]))[0]

    async def batch(self, solutions: list[Solution]) -> list[Score]:
        scratches: list[Scratch] = []
        try:
            for solution in solutions:
                scratches.append(await materialize(solution, self.workspace, self.scratch_dir))
            tests = await asyncio.gather(*(self._tests(s, c) for s, c in zip(solutions, scratches, strict=True)))
            lint = await self._lint(solutions, scratches)
        finally:
            for scratch in scratches:
                await asyncio.to_thread(scratch.cleanup)
        return [Score(share, *_shape(solution), lint[i], what)
                for i, (solution, (share, what)) in enumerate(zip(solutions, tests, strict=True))]

    async def _tests(self, solution: Solution, scratch: Scratch) -> tuple[float, str]:
        share = _report_share(solution.test_report)
        if share is not None:
            return share, "the team's last test run"
        async with self._slots:
            report = await testing.run_tests(scratch.root, self.test_command, timeout=TEST_TIMEOUT)
        solution.test_report = report  # its test run now: whoever proposes it need not run it again
        return _report_share(report) or 0.0, report.summary()[:200]

    async def _lint(self, solutions: list[Solution], scratches: list[Scratch]) -> list[int]:
        """Lint issues per solution, from one ruff run over every copy's changed Python files."""
        common = Path(os.path.commonpath([str(s.root) for s in scratches]))
        prefixes = [s.root.relative_to(common).as_posix() for s in scratches]
        prefixes = ["" if prefix == "." else prefix for prefix in prefixes]  # one copy is the common root
        files = [f"{prefix}/{path}".lstrip("/") for prefix, solution in zip(prefixes, solutions, strict=True)
                 for path in solution.changed() if path.endswith(".py")]
        issues = await static_check(common, files) if files else []
        counts = [0] * len(solutions)
        for issue in issues:
            for i, prefix in enumerate(prefixes):
                if not prefix or issue.file.startswith(prefix + "/"):
                    counts[i] += 1
                    break
        return counts
