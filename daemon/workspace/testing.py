"""Real testing: run the project's tests (or the program itself) in the sandbox and report real failures.

The reference ChatDev ran ``python3 main.py`` for 3 seconds and looked for "Traceback".
Troupe runs the configured test command, or pytest when the project has tests, with a
JUnit XML report parsed into structured failures (file, line, assertion message,
traceback) the programmer gets in its next prompt. Only when there are no tests does it
run the entry point briefly and judge it by its exit status and traceback.
Static checks (ruff: :mod:`daemon.lint.check`) run before the reviewer, so the model does not spend
tokens on lint.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import shlex
import sys
import tomllib
import uuid
from pathlib import Path

from daemon.sandbox import SandboxResult, run_sandboxed
from daemon.workspace import packages
from daemon.workspace.display import is_gui, virtual_display
from daemon.workspace.files import list_repo_files
from daemon.workspace.interpreter import project_python
from daemon.workspace.reports import (
    TestFailure,
    TestReport,
    parse_junit,
    parse_pytest_counts,
    traceback_failure,
)
from daemon.workspace.runners import (
    PER_TEST_TIMEOUT,
    RUNNER_MISSING,
    UNITTEST_RUNNER,
    cannot_run,
    parse_unittest,
    pytest_arguments,
    without_warnings,
)

__all__ = ["PER_TEST_TIMEOUT", "TestFailure", "TestReport", "entry_point", "has_tests", "run_tests"]

log = logging.getLogger("troupe.workspace")

ENTRY_POINT_SECONDS = 10.0
"""How long the program itself runs when there are no tests; still running then (no traceback) counts as working."""
_SHELL_SYNTAX = re.compile(r"[|&;<>()$`*?\[\]{}~]|^\s*\w+=")  # pipes, globs, `VAR=x cmd`: needs a shell
_PYTEST_NO_TESTS = 5


async def run_tests(
    root: Path, command: str | None = None, timeout: float = 120, python: str | None = None,
    per_test_timeout: float = PER_TEST_TIMEOUT,
) -> TestReport:
    """Run the tests of the project at ``root`` inside the sandbox.

    ``command``: the configured test command (``settings.test_command``), run as given —
    ``pytest``/``python`` at its start mean this interpreter, and a pytest command gets a
    JUnit report appended. Without one: pytest when tests exist (``tests/``, ``test_*.py``,
    ``*_test.py``), ``python -m unittest`` discovery when pytest collects none of them, else the
    entry point for a few seconds. On Troupe's interpreter pytest loads only the plugins the
    project declares, and every test has its own timeout (:mod:`daemon.workspace.runners`); a
    report whose tests cannot run here at all says why in ``cannot_run``. ``python``: the interpreter for
    the project (default: Troupe's libraries without Troupe, :func:`project_python`; pass the
    user's virtualenv python when it has one).
    Raises ``daemon.sandbox.SandboxError`` when the sandbox itself cannot be set up.
    """
    root = Path(root)
    troupe_python = await asyncio.to_thread(project_python)
    python = python or troupe_python
    libs: list[Path] = []
    if python in (sys.executable, troupe_python):  # it lacks what the project imports from PyPI: wheels,
        libs = (await packages.for_project(root)).paths  # installed once (a project's own venv has its own)
    if command:
        argv = _configured(command, python)
        libs = libs if argv[0] == python else []
        if _is_pytest(argv, python):
            return (await _pytest(root, argv, timeout, libs, per_test_timeout))[0]
        return await _plain(root, argv, timeout, libs)
    if has_tests(root):
        report, returncode = await _pytest(root, [python, "-m", "pytest", "-q"], timeout, libs, per_test_timeout)
        no_pytest = report.cannot_run == RUNNER_MISSING
        if report.timed_out or (returncode != _PYTEST_NO_TESTS and not no_pytest):
            return report
        # test files pytest does not collect (unittest's test*.py), or an interpreter without pytest
        fallback, fallback_code = await _unittest(root, python, timeout, libs, per_test_timeout)
        if fallback.timed_out or fallback_code != _PYTEST_NO_TESTS:
            return fallback
        if no_pytest:
            return report
    entry = entry_point(root, python)
    if entry is None:
        return TestReport(
            ok=False, command=[], passed=0, failed=0, errors=0, skipped=0, failures=[], seconds=0.0, timed_out=False,
            output_tail="Nothing to run: no tests (tests/, test_*.py) and no entry point (main.py, a package "
            "__main__.py, or a console script in pyproject.toml). Write tests or a main.py.",
        )
    return await _entry(root, entry, min(timeout, ENTRY_POINT_SECONDS), libs)


async def run_test_files(root: Path, tests: list[str], timeout: float,
                         per_test_timeout: float = PER_TEST_TIMEOUT, deselect: list[str] | None = None) -> TestReport:
    """Only these test files (or test ids), less the ``deselect`` test ids, with pytest on the project's
    interpreter, as :func:`run_tests` runs them."""
    python = await asyncio.to_thread(project_python)
    libs = (await packages.for_project(root)).paths
    left_out = [arg for test in deselect or [] for arg in ("--deselect", test)]
    argv = [python, "-m", "pytest", "-q", *tests, *left_out]
    return (await _pytest(root, argv, timeout, libs, per_test_timeout))[0]


def has_tests(root: Path) -> bool:
    for rel in list_repo_files(root):
        name = rel.rsplit("/", 1)[-1]
        if name.endswith(".py") and (rel.startswith("tests/") or name.startswith("test_") or name.endswith("_test.py")):
            return True
    return False


def entry_point(root: Path, python: str = sys.executable) -> list[str] | None:
    """How to start the program: ``main.py``, a package's ``__main__.py``, or the first console script."""
    for name in ("main.py", "__main__.py", "app.py"):
        if (root / name).is_file():
            return [python, name]
    for base in (root, root / "src"):
        for main in sorted(base.glob("*/__main__.py")):
            return [python, "-m", main.parent.name]
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        try:
            scripts = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {}).get("scripts", {})
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
            scripts = {}
        for target in scripts.values():
            module, _, func = str(target).partition(":")
            if module and func and re.fullmatch(r"[\w.]+", module + func):
                return [python, "-c", f"import sys; from {module} import {func.split('.')[0]} as f; sys.exit(f())"]
    return None


def _configured(command: str, python: str) -> list[str]:
    if _SHELL_SYNTAX.search(command):
        return ["/bin/sh", "-c", command]
    argv = shlex.split(command)
    if argv and argv[0] == "pytest":
        return [python, "-m", "pytest", *argv[1:]]
    if argv and argv[0] in ("python", "python3"):
        return [python, *argv[1:]]
    return argv


def _is_pytest(argv: list[str], python: str) -> bool:
    return argv[:3] == [python, "-m", "pytest"] or Path(argv[0]).name == "pytest"


async def _pytest(root: Path, argv: list[str], timeout: float, libs: list[Path],
                  per_test_timeout: float = PER_TEST_TIMEOUT) -> tuple[TestReport, int]:
    report_path = root / f".troupe-junit-{uuid.uuid4().hex}.xml"
    junit = [f"--junitxml={report_path.name}", "-o", "junit_family=xunit1"]
    full = [*argv, "-p", "no:cacheprovider", "--color=no", *junit]
    env: dict[str, str] = {}
    if argv[0] in (sys.executable, project_python()):
        # Troupe's own libraries: its test tools' plugins (pytest-lsp, ...) are not the project's;
        # only the project's declared plugins load, and pytest-timeout for a timeout per test.
        run = pytest_arguments(root, per_test_timeout)
        full, env = [*full, *run.args], run.env
    try:
        result = await _sandboxed(root, full, timeout, env, libs)
        xml = report_path.read_text(encoding="utf-8", errors="replace") if report_path.is_file() else ""
    finally:
        report_path.unlink(missing_ok=True)
    output = (result.stdout or "") + (result.stderr or "")
    if xml:
        passed, failed, errors, skipped, failures = parse_junit(xml, root)
    else:
        passed, failed, errors, skipped = parse_pytest_counts(output)
        failures = [] if result.returncode == 0 else [traceback_failure("pytest", without_warnings(output), root)]
    ok = result.returncode == 0 and not result.timed_out
    report = TestReport(
        ok=ok, command=full, passed=passed, failed=failed, errors=errors,
        skipped=skipped, failures=failures, output_tail=_tail(output), seconds=result.duration_s,
        timed_out=result.timed_out, cannot_run="" if ok else cannot_run(output, failures, root),
    )
    return report, result.returncode


async def _unittest(root: Path, python: str, timeout: float, libs: list[Path],
                    per_test_timeout: float = PER_TEST_TIMEOUT) -> tuple[TestReport, int]:
    """``python -m unittest`` discovery (from ``tests/``, else the root), each test with its own timeout."""
    out = root / f".troupe-unittest-{uuid.uuid4().hex}.json"
    argv = [python, "-c", UNITTEST_RUNNER, f"{per_test_timeout:g}", out.name]
    try:
        result = await _sandboxed(root, argv, timeout, libs=libs)
        records = out.read_text(encoding="utf-8", errors="replace") if out.is_file() else "[]"
    finally:
        out.unlink(missing_ok=True)
    output = (result.stdout or "") + (result.stderr or "")
    passed, failed, errors, skipped, failures = parse_unittest(records, root)
    if result.returncode not in (0, _PYTEST_NO_TESTS) and not failures and not result.timed_out:
        failures = [traceback_failure("unittest", output, root)]
    ok = result.returncode == 0 and not result.timed_out
    report = TestReport(ok=ok, command=[python, "-m", "unittest"], passed=passed, failed=failed, errors=errors,
                        skipped=skipped, failures=failures, output_tail=_tail(output), seconds=result.duration_s,
                        timed_out=result.timed_out, cannot_run="" if ok else cannot_run(output, failures, root))
    return report, result.returncode


async def _plain(root: Path, argv: list[str], timeout: float, libs: list[Path]) -> TestReport:
    result = await _sandboxed(root, argv, timeout, libs=libs)
    output = (result.stdout or "") + (result.stderr or "")
    ok = result.returncode == 0 and not result.timed_out
    failures = [] if ok else [traceback_failure(" ".join(argv[-1:]), output, root)]
    passed, failed, errors, skipped = parse_pytest_counts(output)
    return TestReport(ok=ok, command=argv, passed=passed, failed=failed or (0 if ok else 1), errors=errors,
                      skipped=skipped, failures=failures, output_tail=_tail(output), seconds=result.duration_s,
                      timed_out=result.timed_out, cannot_run="" if ok else cannot_run(output, failures, root))


async def _entry(root: Path, argv: list[str], seconds: float, libs: list[Path]) -> TestReport:
    """The program itself, run briefly; a GUI program (Tk, pygame, Qt...) under a virtual display,
    or, where none can start, not run (a report that says why and that ``ran`` is False for)."""
    if not is_gui(root):
        result = await _sandboxed(root, argv, seconds, libs=libs)
    else:
        async with virtual_display() as display:
            if display.name is None:
                return TestReport(ok=False, command=[], passed=0, failed=0, errors=0, skipped=0,
                                  output_tail=f"Nothing to run: a GUI program, and {display.note}.")
            result = await _sandboxed(root, argv, seconds, display.env(), libs)
    stderr, output = result.stderr or "", (result.stdout or "") + (result.stderr or "")
    crashed = "Traceback (most recent call last)" in stderr
    waiting_for_input = crashed and stderr.rstrip().endswith(("EOFError", "EOFError: EOF when reading a line"))
    if waiting_for_input:
        crashed = False  # an interactive program asked for input: it started fine
    ok = not crashed and (result.returncode == 0 or result.timed_out or waiting_for_input)
    tail = _tail(output)
    if result.timed_out and ok:
        tail += f"\n[still running after {seconds:g} s without an error; stopped — treated as a long-running program]"
    if waiting_for_input:
        tail += "\n[the program waited for input on stdin; it started without an error]"
    failures = [] if ok else [traceback_failure(" ".join(argv[1:]), output, root)]
    return TestReport(ok=ok, command=argv, passed=int(ok), failed=int(not ok), errors=0, skipped=0, failures=failures,
                      output_tail=tail, seconds=result.duration_s, timed_out=result.timed_out and not ok)


async def _sandboxed(root: Path, argv: list[str], timeout: float, env: dict[str, str] | None = None,
                     libs: list[Path] | tuple[Path, ...] = ()) -> SandboxResult:
    """Run ``argv`` in the sandbox with the project importable (root, and ``src/`` for src layouts),
    then ``libs`` (the packages it imports, :mod:`daemon.workspace.packages`; read-only)."""
    paths = [str(root)] + ([str(root / "src")] if (root / "src").is_dir() else []) + [str(p) for p in libs]
    env = {**(env or {}), "PYTHONPATH": os.pathsep.join(paths)}
    result = await run_sandboxed(argv, cwd=root, timeout=timeout, env=env, readable=libs)
    log.debug("sandboxed %s: exit %s in %.1f s; %s", argv[:4], result.returncode, result.duration_s, result.notes)
    return result


sandboxed = _sandboxed  # for the other runners of project code (daemon.workspace.doctests)


def _tail(text: str, limit: int = 4000) -> str:
    return text if len(text) <= limit else "[...]\n" + text[-limit:]
