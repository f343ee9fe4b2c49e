"""The tests related to a file, run as evidence for a review of it.

A repository's own tests are the best evidence there is of what its code must do. For a saved
``pkg/ops.py`` the related tests are ``test_ops.py`` / ``ops_test.py`` anywhere in the repository
(``tests/**`` included) and the test files that import the module (``import pkg.ops``,
``from pkg.ops import ...``, ``from pkg import ops``). Only those files run — pytest on them alone,
each test with its own timeout — so the review stays within its time limit.

    files = related_test_files(root, ["pkg/ops.py"])    # ["tests/test_ops.py", ...]
    report = await run_related(root, files, timeout=20)  # a TestReport, or None with nothing related

A test that fails after a save is evidence about the save only when it passed before it: a test
that needs a server this machine does not have, or one that was already red, fails on the last
commit too (:func:`failing_before`), and is left out of the job's runs of the related tests. One
that passed there is the save's doing: executed evidence that the change broke it.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path

from daemon.workspace.files import list_repo_files
from daemon.workspace.reports import TestFailure, TestReport
from daemon.workspace.testing import PER_TEST_TIMEOUT, run_test_files

MAX_RELATED = 6  # test files run for one review: more is a test run, not evidence for a save
RELATED_SECONDS = 20.0
TESTS_PER_RUN = 4  # a related test may take a quarter of its run's time: on more-itertools saves, mutants that made one
# test slow let it take all 20 s, and the run said "timed out" instead of which tests broke (4 of 30 saves)
_SCAN_BYTES = 200_000


def _is_test_module(rel: str) -> bool:  # what pytest collects (daemon.workspace.repomap.is_test_file: any test file)
    name = rel.rsplit("/", 1)[-1]
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def _module_names(rel: str) -> list[str]:
    """The dotted names a test may import ``rel`` by: ``src/pkg/ops.py`` -> pkg.ops (and src.pkg.ops)."""
    parts = rel[:-3].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    names = [".".join(parts)] if parts else []
    if len(parts) > 1 and parts[0] in ("src", "lib"):
        names.append(".".join(parts[1:]))
    return [n for n in names if n]


def _imports(module: str) -> re.Pattern[str]:
    parent, _, leaf = module.rpartition(".")
    alternatives = [rf"import\s+{re.escape(module)}\b", rf"from\s+{re.escape(module)}\s+import\b"]
    if parent:
        alternatives.append(rf"from\s+{re.escape(parent)}\s+import\s+(?:\(\s*)?(?:[\w\s,]*,\s*)?{re.escape(leaf)}\b")
    return re.compile(rf"^\s*(?:{'|'.join(alternatives)})", re.MULTILINE)


def related_test_files(root: Path, files: list[str], limit: int = MAX_RELATED) -> list[str]:
    """The test files related to ``files`` (their own tests first, by name, then by import)."""
    sources = [f for f in files if f.endswith(".py") and not _is_test_module(f)]
    if not sources:
        return []
    tests = [rel for rel in list_repo_files(root) if _is_test_module(rel)]
    stems = {Path(f).stem for f in sources if Path(f).stem != "__init__"}
    by_name = [t for t in tests if Path(t).stem.removeprefix("test_").removesuffix("_test") in stems]
    patterns = [_imports(name) for f in sources for name in _module_names(f)]
    by_import = []
    for rel in tests:
        if rel in by_name:
            continue
        try:
            text = (root / rel).read_text(encoding="utf-8", errors="replace")[:_SCAN_BYTES]
        except OSError:
            continue
        if any(p.search(text) for p in patterns):
            by_import.append(rel)
    return [*by_name, *by_import][:limit]


async def run_related(root: Path, tests: list[str], timeout: float = RELATED_SECONDS,
                      per_test_timeout: float | None = None, deselect: list[str] | None = None) -> TestReport | None:
    """Run only ``tests`` (pytest in the sandbox, as :func:`daemon.workspace.testing.run_tests` runs a
    project's tests), less the ``deselect`` test ids; None when there are none."""
    if not tests:
        return None
    per_test = per_test_timeout if per_test_timeout is not None else min(PER_TEST_TIMEOUT, timeout)
    return await run_test_files(root, tests, timeout, per_test, deselect=deselect)


async def failing_before(workspace: Path, saved: list[str], report: TestReport, timeout: float,
                         per_test_timeout: float | None = None) -> list[str] | None:
    """The ids of ``report``'s failing tests that fail on the last commit too: run on a copy of
    ``workspace`` with the ``saved`` files as ``HEAD`` has them (the others passed there). None when
    that cannot be known (no test id, no git, a saved file new since the last commit, the run stopped
    by its timeout)."""
    failing = list(dict.fromkeys(f.test_id for f in report.failures if "::" in f.test_id))
    if not failing:
        return None
    before = await _at_last_commit(workspace, saved, lambda root: run_related(root, failing, timeout, per_test_timeout))
    if before is None or before.timed_out or before.cannot_run:
        return None
    still = [test for test in failing if test in {f.test_id for f in before.failures}]
    if before.passed < len(failing) - len(still):  # one did not pass there either (a module that did not import)
        return None
    return still


async def examples_failing_before(workspace: Path, saved: list[str], report: TestReport) -> list[TestFailure] | None:
    """``report``'s failing docstring examples that fail on the last commit too (as :func:`failing_before`
    tells of tests); None when that cannot be known."""
    from daemon.workspace.doctests import run_doctests

    if not report.failures:
        return None
    before = await _at_last_commit(workspace, saved, lambda root: run_doctests(root, saved))
    if before is None or before.timed_out or any(not f.test_id.startswith("docstring example ")
                                                 for f in before.failures):
        return None  # the examples did not run there (a module that did not import): nothing is known of them
    keys = {_example(f) for f in before.failures}
    return [f for f in report.failures if _example(f) in keys]


def _example(failure: TestFailure) -> tuple[str, str]:
    """A failing example, wherever its line now is: its function and its source (the message's start)."""
    return failure.test_id, re.split(r" (?:returned|raised) ", failure.message or "", maxsplit=1)[0]


async def _at_last_commit(workspace: Path, saved: list[str],
                          run: Callable[[Path], Awaitable[TestReport | None]]) -> TestReport | None:
    """``run`` on a copy of ``workspace`` holding the ``saved`` source files as ``HEAD`` has them; None when
    one is not there (a new file, no git) or nothing ran."""
    from daemon.workspace.scratch import Scratch

    sources = [f for f in saved if not _is_test_module(f)]
    committed = await asyncio.to_thread(_committed, workspace, sources) if sources else None
    if committed is None:
        return None
    scratch = await asyncio.to_thread(Scratch.from_repo, workspace)
    try:
        for rel, text in committed.items():
            (scratch.root / rel).write_text(text, encoding="utf-8")
        return await run(scratch.root)
    finally:
        await asyncio.to_thread(scratch.cleanup)


def uncommitted_diff(workspace: Path) -> str:
    """``git diff HEAD`` of the workspace's Python files (no context lines): what changed since the last
    commit; "" when nothing did, or there is no git or no commit."""
    try:
        shown = subprocess.run(["git", "-C", str(workspace), "diff", "--no-color", "--no-ext-diff", "-U0", "HEAD",
                                "--", "*.py"], capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return ""
    return shown.stdout.decode("utf-8", errors="replace") if shown.returncode == 0 else ""


def _committed(workspace: Path, files: list[str]) -> dict[str, str] | None:
    """``files`` as the last commit of ``workspace`` has them; None when one is not there (or no git)."""
    texts = {}
    for rel in files:
        try:
            shown = subprocess.run(["git", "-C", str(workspace), "show", f"HEAD:{rel}"], capture_output=True,
                                   timeout=30)
        except (OSError, subprocess.SubprocessError):
            return None
        if shown.returncode != 0:
            return None
        texts[rel] = shown.stdout.decode("utf-8", errors="replace")
    return texts
