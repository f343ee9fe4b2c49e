"""A file's docstring examples (``>>>``) as tests, run in the sandbox like the project's tests.

A change or a review of a Python file whose docstrings hold examples runs them (what
``pytest --doctest-modules`` does, with the standard ``doctest`` module): each example is one
test, passed or failed, and a failure says what the example returned against what the
docstring expects — in words a model can act on, without line numbers it could mistake for
the bug's. Bounded: one example may take :data:`EXAMPLE_SECONDS`, the whole run
:data:`DOCTEST_SECONDS`; what an example printed or returned is clipped.

    report = await run_doctests(root, ["calc.py"])   # None: no file there has examples
    merged(project_report, report)                    # one report: the tests and the examples
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Collection
from pathlib import Path

from daemon.workspace.interpreter import project_python
from daemon.workspace.paths import PathOutsideWorkspace, confine
from daemon.workspace.reports import TestFailure, TestReport
from daemon.workspace.testing import sandboxed  # the project importable, as its tests see it

DOCTEST_SECONDS = 30.0
EXAMPLE_SECONDS = 5
CLIP = 300  # characters of an example's output kept in a failure
_MARK = "@@troupe-doctest@@ "

# Run inside the sandbox: import each file, run its docstring examples one by one, print one JSON
# line per example (and per file that cannot be imported). An example that runs too long is
# stopped by an alarm and reported as such.
_RUNNER = r"""
import doctest, importlib, importlib.util, json, os, signal, sys, traceback
MARK, LIMIT, CLIP = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def say(**data):
    sys.__stdout__.write(MARK + json.dumps(data) + "\n"); sys.__stdout__.flush()
def slow(*_):
    raise TimeoutError(f"the example ran longer than {LIMIT} s (an endless loop?)")
signal.signal(signal.SIGALRM, slow)
class Collect(doctest.DocTestRunner):
    def where(self, test, example):
        return dict(file=self.path, name=test.name, line=(test.lineno or 0) + example.lineno + 1,
                    source=example.source.strip()[:CLIP], want=example.want.strip()[:CLIP])
    def report_start(self, out, test, example):
        signal.alarm(LIMIT)
    def report_success(self, out, test, example, got):
        signal.alarm(0); say(ok=True, **self.where(test, example))
    def report_failure(self, out, test, example, got):
        signal.alarm(0); say(ok=False, got=got.strip()[:CLIP], **self.where(test, example))
    def report_unexpected_exception(self, out, test, example, exc_info):
        signal.alarm(0)
        raised = traceback.format_exception_only(*exc_info[:2])[-1].strip()
        say(ok=False, raised=raised[:CLIP], **self.where(test, example))
sys.path.insert(0, ".")
for path in sys.argv[4:]:
    name = path[:-3].replace("/", ".")
    parts = name.split(".")
    packaged = len(parts) > 1 and all(os.path.exists(os.path.join(*parts[:i], "__init__.py"))
                                      for i in range(1, len(parts)))
    try:
        signal.alarm(LIMIT)
        if packaged:  # imported as its package imports it: a package importing it back sees it whole
            module = importlib.import_module(name)
        else:
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
        signal.alarm(0)
    except BaseException as exc:
        signal.alarm(0)
        say(ok=False, file=path, error=traceback.format_exception_only(type(exc), exc)[-1].strip()[:CLIP])
        continue
    runner = Collect(verbose=False, optionflags=doctest.ELLIPSIS)
    runner.path = path
    for test in doctest.DocTestFinder().find(module, name):
        if test.examples and (test.filename or "").endswith(path):
            runner.run(test, out=lambda text: None, clear_globs=True)
"""


def doctest_files(root: Path, files: list[str]) -> list[str]:
    """The Python files of ``files`` (inside ``root``) whose text holds a docstring example."""
    found = []
    for rel in dict.fromkeys(files):
        if not rel.endswith(".py"):
            continue
        try:
            text = confine(root, rel).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError, PathOutsideWorkspace):
            continue
        if any(line.lstrip().startswith(">>> ") for line in text.splitlines()):
            found.append(rel)
    return found


async def run_doctests(root: Path, files: list[str], *, timeout: float = DOCTEST_SECONDS,
                       python: str | None = None) -> TestReport | None:
    """Run the docstring examples of ``files`` in the sandbox; None when none of them has any."""
    root = Path(root)
    targets = doctest_files(root, files)
    if not targets:
        return None
    if not python:
        python = await asyncio.to_thread(project_python)
    argv = [python, "-c", _RUNNER, _MARK, str(EXAMPLE_SECONDS), str(CLIP), *targets]
    result = await sandboxed(root, argv, timeout)
    passed, failures = 0, []
    for line in (result.stdout or "").split("\n"):
        if not line.startswith(_MARK):
            continue
        try:
            data = json.loads(line[len(_MARK):])
        except json.JSONDecodeError:
            continue
        if data.get("ok"):
            passed += 1
        else:
            failures.append(_failure(data))
    if result.timed_out:
        failures.append(TestFailure(test_id=f"docstring examples of {', '.join(targets)}", file=None, line=None,
                                    message=f"the examples did not finish within {timeout:g} s", output=""))
    elif result.returncode != 0 and not failures:
        tail = ((result.stderr or "") + (result.stdout or "")).strip()[-CLIP:]
        failures.append(TestFailure(test_id=f"docstring examples of {', '.join(targets)}", file=None, line=None,
                                    message=f"the examples could not run (exit {result.returncode}): {tail}",
                                    output=""))
    return TestReport(ok=not failures, command=["doctest", *targets], passed=passed, failed=len(failures),
                      errors=0, skipped=0, failures=failures, output_tail="", seconds=result.duration_s,
                      timed_out=result.timed_out)


def _failure(data: dict[str, object]) -> TestFailure:
    file = str(data.get("file") or "")
    if "error" in data:
        return TestFailure(test_id=f"import of {file}", file=file, line=None,
                           message=f"{file} cannot be imported to run its examples: {data['error']}", output="")
    source, want = str(data.get("source", "")), str(data.get("want", "")) or "no output"
    got = f"raised {data['raised']}" if "raised" in data else f"returned {data.get('got') or 'nothing'}"
    line = data.get("line")
    return TestFailure(test_id=f"docstring example of {data.get('name', file)}", file=file,
                       line=line if isinstance(line, int) else None,
                       message=f"{source} {got}, but the docstring expects {want}", output="")


def example_failures(report: TestReport | None, limit: int = 8) -> str:
    """The failing examples of a doctest report, for a prompt: a heading, then one a line ("" when
    none fail, so a template line holding only the field disappears)."""
    if report is None or report.ok:
        return ""
    lines = ["The docstring examples were run, and these fail:"] + [f"- {f.message}" for f in report.failures[:limit]]
    if len(report.failures) > limit:
        lines.append(f"- ... and {len(report.failures) - limit} more")
    return "\n".join(lines)


def merged(tests: TestReport, doctests: TestReport | None) -> TestReport:
    """One report of the project's tests and the docstring examples (the examples alone when
    there were no tests to run)."""
    if doctests is None:
        return tests
    if not tests.ran:
        return doctests
    return TestReport(ok=tests.ok and doctests.ok, command=tests.command, passed=tests.passed + doctests.passed,
                      failed=tests.failed + doctests.failed, errors=tests.errors, skipped=tests.skipped,
                      failures=[*tests.failures, *doctests.failures], output_tail=tests.output_tail,
                      seconds=tests.seconds + doctests.seconds, timed_out=tests.timed_out or doctests.timed_out,
                      cannot_run=tests.cannot_run)  # made anew: its summary is the merged run's


def without_bodies(text: str, lines: Collection[int] = (), names: Collection[str] = ()) -> tuple[str, list[str]]:
    """``text`` with the bodies of some functions left out — signature and docstring kept — so they
    can be written anew: those whose docstrings hold ``lines`` (failing examples), and those called
    ``names`` (what failing tests name), docstring or not; and those functions' names. Unchanged (and
    no names) when the text does not parse."""
    import ast

    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return text, []
    cut: dict[str, tuple[int, int]] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or node.end_lineno is None:
            continue
        doc = node.body[0] if node.body and isinstance(node.body[0], ast.Expr) else None
        if doc is not None and not isinstance(getattr(doc, "value", None), ast.Constant):
            doc = None
        failing = doc is not None and any(doc.lineno <= line <= (doc.end_lineno or doc.lineno) for line in lines)
        if not failing and node.name not in names:
            continue
        body = node.body[1:] if doc is not None else node.body
        # a function that is only its docstring (a stub) has nothing to cut, but is to be written too
        cut[node.name] = (body[0].lineno, node.end_lineno) if body else (0, 0)
    kept = text.splitlines(keepends=True)
    for start, end in sorted(cut.values(), reverse=True):
        if start:
            del kept[start - 1:end]
    return "".join(kept), list(cut)
