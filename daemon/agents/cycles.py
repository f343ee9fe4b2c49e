"""When a loop's next cycle is not worth a model turn: cheap signals decide (``skip_cycle_when``).

Checked before each cycle, in the order the chain file lists them. A review loop
(``until = "finished"``):

- ``checks_pass`` (before the first review only): the checks that failed before the team changed
  anything (the docstring examples, the tests) pass now, with every other test, and ruff finds
  nothing in the changed Python files: what showed the problem no longer shows it. For a new
  program (a chain that starts empty): it runs, or its tests pass, and ruff finds nothing in it.
- ``unchanged``: the code is as the reviewer last saw it (the fix kept it): the same code would
  get the same comment.
- ``addressed``: the fix changed what the comment named (any file, when it named none), ruff finds
  nothing in the changed Python files, and the tests run and pass.

A test loop (``until = "tests_pass"``):

- ``unchanged``: the last cycle's fix kept the code as it was, so the tests fail as before and the
  next cycle would send the prompt just answered again.

After a test loop's cycle, an attempt that passes fewer tests than the code it started from is undone
(``undo_if_worse``), and the loop ends: its next cycle would send the same prompt again.

Each returns the reason a person reads in the transcript, or None (the cycle runs). ``view_for``
says what the next phase's ``{code}`` shows (``daemon.agents.scope``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from daemon.agents.model import Loop, Until
from daemon.agents.scope import View, changed_since, named_paths, with_imports
from daemon.agents.workbench import Workbench
from daemon.lint.check import static_check
from daemon.payloads import LogData

if TYPE_CHECKING:
    from daemon.agents.tools import Tools
    from daemon.workspace.reports import TestReport


@dataclass
class LastReview:
    """What the loop's last cycle started from: the code its first phase saw (and, in a review loop,
    what the reviewer said about it; set when its phase ends)."""

    seen: dict[str, str]
    comment: str = ""
    named: list[str] = field(default_factory=list)


async def skip_reason(loop: Loop, cycle: int, review: LastReview | None, bench: Workbench,
                      tools: Tools) -> str | None:
    """Why cycle ``cycle`` (0-based) of ``loop`` need not run, or None; ``review``: see :class:`LastReview`
    (None before the loop's first cycle)."""
    if review is None:
        if cycle == 0 and "checks_pass" in loop.skip_cycle_when and loop.until is Until.FINISHED:
            return await _checks_pass(bench, tools)
        return None
    changed = changed_since(review.seen, bench.snapshot())
    for rule in loop.skip_cycle_when:
        if rule == "unchanged" and not changed:
            if loop.until is Until.TESTS_PASS:
                return ("the last fix kept the code as it was, so the tests fail as before and the next cycle "
                        "would ask the same again")
            return "the code is as the reviewer last saw it (the fix kept it), so it would get the same comment"
        if rule == "addressed" and changed and loop.until is Until.FINISHED:
            reason = await _addressed(review, changed, bench, tools)
            if reason:
                return reason
    return None


async def _checked(changed: list[str], bench: Workbench, tools: Tools) -> TestReport | None:
    """The test report when ruff finds nothing in the changed Python files and the tests run and
    pass; else None."""
    python = [p for p in changed if p.endswith((".py", ".pyi")) and bench.read(p) is not None]
    if bench.root is not None and python and await static_check(bench.root, python):
        return None
    report = await tools.tests()
    return report if report is not None and report.ran and report.ok else None


async def _checks_pass(bench: Workbench, tools: Tools) -> str | None:
    before, changed = bench.checked_before, bench.changed_files()
    if not changed:
        return None
    if before is None and bench.chain.start == "empty":  # a new program: it runs (or its tests pass), lint-clean
        report = await _checked(changed, bench, tools)
        return None if report is None else (
            f"the new program's checks pass ({report.summary().splitlines()[0]}) and ruff finds nothing in "
            f"{', '.join(changed)}")
    if before is None or before.ok:
        return None  # nothing failed before the change (or nothing was checked): the review is the only check
    report = await _checked(changed, bench, tools)
    if report is None:
        return None
    return (f"the checks that failed before the change pass now (before: {before.failed} failed; now: "
            f"{report.passed} passed), and ruff finds nothing in {', '.join(changed)}")


async def _addressed(review: LastReview, changed: list[str], bench: Workbench, tools: Tools) -> str | None:
    missed = [p for p in review.named if p not in changed and bench.read(p) is not None]
    if missed:
        return None
    report = await _checked(changed, bench, tools)
    if report is None:
        return None
    what = f"the comment on {', '.join(review.named)} was addressed" if review.named else "the fix changed the code"
    return (f"{what} ({', '.join(changed)} changed), ruff finds nothing in the changed files and the tests pass "
            f"({report.passed} passed)")


async def undo_if_worse(loop: Loop, before: TestReport, seen: dict[str, str], bench: Workbench, tools: Tools,
                        say: Callable[[LogData], Awaitable[None]]) -> bool:
    """A test loop's attempt that leaves fewer tests passing than it found (or none running) is undone:
    the files go back to ``seen`` (what the cycle started from), so the best code so far is what the
    next phase, or the job's change, gets. True when it was undone."""
    scratch = bench.scratch
    now = bench.snapshot()
    if scratch is None or now == seen:
        return False
    after = await tools.tests()
    if after.ok or after.passed >= before.passed:
        return False
    for path in sorted(now.keys() | seen.keys()):
        text = seen.get(path, scratch.text_at(0, path))
        if text is None:
            scratch.delete(path)
        else:
            scratch.write(path, text)
    reason = (f"loop {loop.name!r}: its attempt passed {after.passed} test(s) against {before.passed} before it, "
              "so it is undone")
    scratch.snapshot(reason)
    bench.test_report = before  # the run of the code as it is again
    await say(LogData(level="info", text=reason, reason=reason))
    return True


def view_for(loop: Loop, position: int, cycle: int, bench: Workbench, review: LastReview | None) -> View | None:
    """What ``{code}`` shows the phase at ``position`` of cycle ``cycle`` (0-based) of ``loop``."""
    files = bench.all_files()
    if loop.until is Until.FINISHED and review is not None:
        if position == 0 and cycle > 0:
            return View(since=review.seen)
        if position > 0 and review.named:
            return View(focus=review.named, why="not named in the comment")
        return None
    if loop.until is Until.TESTS_PASS and bench.test_report is not None and not bench.test_report.ok:
        report = bench.test_report
        reached = [str(f.file) for f in report.failures if f.file] + [str(report.summary())]
        named = named_paths("\n".join(reached), files)
        texts = {p: "" for p in files} | {p: t for p in named if (t := bench.read(p)) is not None}
        focus = with_imports(named, texts)
        return View(focus=focus, why="not reached by the failing tests") if focus else None
    if loop.until is Until.NO_PLACEHOLDERS:
        focus = named_paths(bench.unfinished(), files)
        return View(focus=focus, why="nothing unfinished in them") if focus else None
    return None


def seen_review(bench: Workbench, comment: str) -> LastReview:
    return LastReview(seen=bench.snapshot(), comment=comment, named=named_paths(comment, bench.all_files()))
