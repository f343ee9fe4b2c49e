"""When a review loop's next cycle is not worth a model turn: cheap signals decide (``skip_cycle_when``).

Checked before the reviewer speaks again, in the order the chain file lists them:

- ``unchanged``: the code is as the reviewer last saw it (the fix kept it): the same code would
  get the same comment.
- ``addressed``: the fix changed what the comment named (any file, when it named none), ruff finds
  nothing in the changed Python files, and the tests run and pass.

Each returns the reason a person reads in the transcript, or None (the cycle runs). ``view_for``
says what the next phase's ``{code}`` shows (``daemon.agents.scope``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from daemon.agents.model import Loop, Until
from daemon.agents.scope import View, changed_since, named_paths, with_imports
from daemon.agents.workbench import Workbench
from daemon.workspace import testing


@dataclass
class LastReview:
    """What the reviewer saw and said last (set when its phase ends)."""

    seen: dict[str, str]
    comment: str
    named: list[str] = field(default_factory=list)


async def skip_reason(rules: tuple[str, ...], review: LastReview, bench: Workbench, tools: Any) -> str | None:
    now = bench.snapshot()
    changed = changed_since(review.seen, now)
    for rule in rules:
        if rule == "unchanged" and not changed:
            return "the code is as the reviewer last saw it (the fix kept it), so it would get the same comment"
        if rule == "addressed" and changed:
            reason = await _addressed(review, changed, bench, tools)
            if reason:
                return reason
    return None


async def _addressed(review: LastReview, changed: list[str], bench: Workbench, tools: Any) -> str | None:
    missed = [p for p in review.named if p not in changed and bench.read(p) is not None]
    if missed:
        return None
    python = [p for p in changed if p.endswith((".py", ".pyi")) and bench.read(p) is not None]
    if bench.root is not None and python and await testing.static_check(bench.root, python):
        return None
    report = await tools.tests()
    if not (report.ran and report.ok):
        return None
    what = f"the comment on {', '.join(review.named)} was addressed" if review.named else "the fix changed the code"
    return (f"{what} ({', '.join(changed)} changed), ruff finds nothing in the changed files and the tests pass "
            f"({report.passed} passed)")


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
