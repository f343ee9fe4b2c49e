"""How a project's tests are run the way the project runs them: its pytest plugins (never Troupe's),
a timeout per test, ``python -m unittest`` where pytest finds nothing, and a plain word when the
tests cannot run here at all.

Troupe's interpreter carries pytest and pytest-timeout for the user's tests, but also Troupe's own
test tools (pytest-asyncio, pytest-lsp, hypothesis...). Their plugins are not the project's: loaded
into its run they warn (pytest-asyncio's loop-scope deprecation was once quoted as "the failure"),
change behaviour and cost start-up time. So plugin autoloading is off and only the plugins the
project declares (in pyproject.toml, setup.cfg, tox.ini, requirements files) are loaded again.
"""

from __future__ import annotations

import functools
import importlib.metadata
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from daemon.workspace.files import list_repo_files
from daemon.workspace.reports import TestFailure, last_location

PER_TEST_TIMEOUT = 30.0
"""Seconds one test may take before it is stopped and reported as hanging (pytest-timeout's signal
method: the test fails with the line it was stuck on, and the rest still run)."""

RUNNER_MISSING = "the test runner is not installed in the interpreter that runs the tests (No module named pytest)"
_DECLARATIONS = ("pyproject.toml", "setup.cfg", "setup.py", "tox.ini", "pytest.ini", "noxfile.py", "Pipfile",
                 "environment.yml")
_PYTEST_CONFIGS = ("pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")
_TIMEOUT_SET = re.compile(r"^\s*timeout\s*=", re.MULTILINE)
_MISSING_MODULE = re.compile(r"No module named '([\w.]+)'")
_WARNINGS_SECTION = re.compile(r"^=+ warnings summary =+$.*?(?=^=+ )", re.MULTILINE | re.DOTALL)
_WARNING_LINE = re.compile(r"^\s*\S*(Warning|warnings\.warn)\b.*$|^\s*-- Docs: .*$", re.MULTILINE)
_NORMALIZE = re.compile(r"[-_.]+")


def _normal(name: str) -> str:
    return _NORMALIZE.sub("-", name).lower()


def declared_text(root: Path) -> str:
    """What the project says it depends on and how it is tested: its packaging and test config files,
    its requirements files and its conftest files (``pytest_plugins = [...]``), as one lower-case text."""
    parts: list[str] = []
    candidates = [root / name for name in _DECLARATIONS]
    candidates += sorted(root.glob("requirements*.txt")) + sorted(root.glob("requirements/*.txt"))
    candidates += [*sorted(root.glob("*/requirements*.txt")), root / "conftest.py", root / "tests" / "conftest.py"]
    for path in candidates:
        try:
            if path.is_file() and path.stat().st_size < 1_000_000:
                parts.append(path.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            continue
    return "\n".join(parts).lower()


@functools.cache
def _installed_plugins() -> tuple[tuple[str, str], ...]:
    """(distribution, plugin module) of every pytest plugin in Troupe's own environment."""
    found = []
    for dist in importlib.metadata.distributions():
        for entry in dist.entry_points:
            if entry.group == "pytest11":
                found.append((_normal(dist.metadata["Name"] or ""), entry.value.split(":")[0]))
    return tuple(sorted(set(found)))


_USED_BY_TESTS = {"pytest-asyncio": re.compile(r"mark\.asyncio|pytest_asyncio")}
"""Plugins whose use shows in the tests themselves: a test marked ``@pytest.mark.asyncio`` needs
pytest-asyncio whether or not the project wrote it down (the team's own new programs often don't)."""


def _tests_use(root: Path, pattern: re.Pattern[str], limit: int = 200) -> bool:
    seen = 0
    for rel in list_repo_files(root):
        name = rel.rsplit("/", 1)[-1]
        if not name.endswith(".py") or not (rel.startswith("tests/") or name.startswith(("test_", "conftest"))):
            continue
        seen += 1
        try:
            if pattern.search((root / rel).read_text(encoding="utf-8", errors="replace")[:200_000]):
                return True
        except OSError:
            continue
        if seen >= limit:
            break
    return False


def declared_plugins(root: Path, text: str | None = None) -> list[str]:
    """The plugin modules of Troupe's environment that the project declares (pytest-asyncio when its
    pyproject names it, or its tests are marked for it...), to load with ``-p`` while autoloading is
    off. pytest-timeout is not among them: :func:`pytest_arguments` loads it for every run."""
    text = _normal(declared_text(root) if text is None else text)
    plugins = []
    for dist, module in _installed_plugins():
        if not dist or dist == "pytest-timeout":
            continue
        used = dist in _USED_BY_TESTS and _tests_use(root, _USED_BY_TESTS[dist])
        if used or re.search(rf"(?<![\w-]){re.escape(dist)}(?![\w-])", text):
            plugins.append(module)
    return plugins


@dataclass(frozen=True)
class PytestRun:
    """The extra arguments and environment for a pytest run on Troupe's interpreter."""

    args: list[str]
    env: dict[str, str]


def pytest_arguments(root: Path, per_test_timeout: float = PER_TEST_TIMEOUT) -> PytestRun:
    """Autoloading off, the project's declared plugins and pytest-timeout loaded, and a timeout per test
    unless the project's own pytest configuration sets one."""
    text = declared_text(root)
    args: list[str] = []
    for module in declared_plugins(root, text):
        args += ["-p", module]
    args += ["-p", "pytest_timeout"]
    if not _sets_timeout(root):
        args.append(f"--timeout={per_test_timeout:g}")
    return PytestRun(args=args, env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})


def _sets_timeout(root: Path) -> bool:
    for name in _PYTEST_CONFIGS:
        try:
            text = (root / name).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if _TIMEOUT_SET.search(text) and ("pytest" in text or name == "pytest.ini"):
            return True
    return False


def without_warnings(output: str) -> str:
    """pytest's output less its warnings summary and warning lines: a warning is never the failure."""
    return _WARNING_LINE.sub("", _WARNINGS_SECTION.sub("", output))


def cannot_run(output: str, failures: list[TestFailure], root: Path) -> str:
    """Why the tests cannot run here at all (no fix of the code would help), or ''.

    That is a test runner that is missing, or tests that import a module which is neither the project's
    own nor installed. A missing module that the project itself should provide (a typo, a file the
    change lost) is a failure to fix, not this."""
    if re.search(r"No module named '?pytest'?$", output, re.MULTILINE) and not failures:
        return RUNNER_MISSING
    texts = [f.output + "\n" + f.message for f in failures] or [output]
    missing = sorted({m for t in texts for m in _MISSING_MODULE.findall(t)})
    if not missing or (failures and not all(_MISSING_MODULE.search(f.output + f.message) for f in failures)):
        return ""
    foreign = [m for m in missing if not _provided_by_project(root, m.split(".")[0])]
    if not foreign or len(foreign) < len(missing):
        return ""
    names = ", ".join(foreign)
    return (f"the tests import {names}, which is not installed where they run and could not be installed "
            f"(only wheels from the package index are): install it, or set [test] command to the command "
            f"that runs them in your environment")


def _provided_by_project(root: Path, top: str) -> bool:
    if top in sys.stdlib_module_names:
        return True
    return any((base / f"{top}.py").is_file() or (base / top).is_dir() for base in (root, root / "src"))


UNITTEST_RUNNER = r'''
import json, signal, sys, unittest
timeout, out_path = float(sys.argv[1]), sys.argv[2]

class Hang(Exception):
    pass

def on_alarm(signum, frame):
    raise Hang(f"Timeout: the test took more than {timeout:g} s (stopped here)")

class Result(unittest.TextTestResult):
    records = []
    def startTest(self, test):
        signal.setitimer(signal.ITIMER_REAL, timeout)
        super().startTest(test)
    def stopTest(self, test):
        signal.setitimer(signal.ITIMER_REAL, 0)
        super().stopTest(test)
    def _record(self, test, kind, err):
        text = self._exc_info_to_string(err, test) if err else ""  # unittest's own frames left out
        line = str(err[1]).strip().splitlines()[0] if err and str(err[1]).strip() else (err[0].__name__ if err else "")
        self.records.append({"id": test.id(), "kind": kind, "message": line, "output": text})
    def addFailure(self, test, err):
        super().addFailure(test, err); self._record(test, "failed", err)
    def addError(self, test, err):
        super().addError(test, err); self._record(test, "error", err)
    def addSuccess(self, test):
        super().addSuccess(test); self.records.append({"id": test.id(), "kind": "passed"})
    def addSkip(self, test, reason):
        super().addSkip(test, reason); self.records.append({"id": test.id(), "kind": "skipped"})
    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err); self.records.append({"id": test.id(), "kind": "passed"})
    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test); self._record(test, "failed", None)

signal.signal(signal.SIGALRM, on_alarm)
import os
start = "tests" if os.path.isdir("tests") else "."
top = "." if start == "." or os.path.isfile(os.path.join(start, "__init__.py")) else start
suite = unittest.defaultTestLoader.discover(start, top_level_dir=top)
if start != "." and suite.countTestCases() == 0:
    suite = unittest.defaultTestLoader.discover(".", top_level_dir=".")
result = unittest.TextTestRunner(resultclass=Result, verbosity=1).run(suite)
with open(out_path, "w", encoding="utf-8") as f:
    json.dump(Result.records, f)
sys.exit(0 if result.wasSuccessful() and result.testsRun else (5 if not result.testsRun else 1))
'''
"""``python -c UNITTEST_RUNNER TIMEOUT OUT``: unittest's discovery and runner, with each test stopped
after TIMEOUT seconds (SIGALRM raises in the test, so its traceback names the line it hung on) and
every result written as JSON to OUT."""


def parse_unittest(text: str, root: Path) -> tuple[int, int, int, int, list[TestFailure]]:
    """(passed, failed, errors, skipped, failures) from :data:`UNITTEST_RUNNER`'s JSON."""
    try:
        records = json.loads(text)
    except json.JSONDecodeError:
        return 0, 0, 0, 0, []
    counts = {"passed": 0, "failed": 0, "error": 0, "skipped": 0}
    failures = []
    for record in records if isinstance(records, list) else []:
        kind = str(record.get("kind"))
        counts[kind] = counts.get(kind, 0) + 1
        if kind in ("failed", "error"):
            output = str(record.get("output") or "")
            file, line = last_location(output, root)
            failures.append(TestFailure(test_id=str(record.get("id")), file=file, line=line,
                                        message=str(record.get("message") or kind), output=output))
    return counts["passed"], counts["failed"], counts["error"], counts["skipped"], failures
