"""Docstring examples as tests, in the sandbox: each example counts, a failure says what it returned
against what the docstring expects, a runaway example is stopped, and a file without examples has
nothing to run."""

from __future__ import annotations

from pathlib import Path

from daemon.workspace import doctests
from daemon.workspace.doctests import example_failures, merged, run_doctests
from daemon.workspace.reports import TestReport

ADD = '''def add(a, b):
    """The sum.

    >>> add(1, 2)
    3
    >>> add(2, 2)
    4
    >>> add(1, 0)
    1
    """
    return a - b
'''


async def test_each_example_is_a_test_and_a_failure_says_what_it_returned(tmp_path: Path) -> None:
    (tmp_path / "calc.py").write_text(ADD)
    report = await run_doctests(tmp_path, ["calc.py"])
    assert report is not None and not report.ok and report.ran
    assert (report.passed, report.failed) == (1, 2)
    messages = [f.message for f in report.failures]
    assert messages == ["add(1, 2) returned -1, but the docstring expects 3",
                        "add(2, 2) returned 0, but the docstring expects 4"]
    assert [(f.file, f.line) for f in report.failures] == [("calc.py", 4), ("calc.py", 6)]
    assert example_failures(report).splitlines() == ["The docstring examples were run, and these fail:",
                                                     f"- {messages[0]}", f"- {messages[1]}"]


async def test_passing_examples_pass_and_say_nothing_to_a_prompt(tmp_path: Path) -> None:
    (tmp_path / "calc.py").write_text(ADD.replace("a - b", "a + b"))
    report = await run_doctests(tmp_path, ["calc.py"])
    assert report is not None and report.ok and (report.passed, report.failed) == (3, 0)
    assert example_failures(report) == ""


async def test_an_endless_example_is_stopped_and_the_others_still_run(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(doctests, "EXAMPLE_SECONDS", 1)
    (tmp_path / "spin.py").write_text('def spin(n):\n    """Spin.\n\n    >>> spin(0)\n    0\n    >>> spin(1)\n    1\n'
                                      '    """\n    while n:\n        pass\n    return n\n')
    report = await run_doctests(tmp_path, ["spin.py"])
    assert report is not None and (report.passed, report.failed) == (1, 1)
    assert report.failures[0].message.startswith("spin(1) raised TimeoutError: the example ran longer than 1 s")


async def test_a_file_that_cannot_be_imported_is_one_failure(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text('def f():\n    """One.\n\n    >>> f()\n    1\n    """\n    return (\n')
    report = await run_doctests(tmp_path, ["broken.py"])
    assert report is not None and not report.ok and report.failed == 1
    assert report.failures[0].message.startswith("broken.py cannot be imported to run its examples: SyntaxError")


async def test_files_without_examples_have_nothing_to_run(tmp_path: Path) -> None:
    (tmp_path / "plain.py").write_text("def f():\n    return 1\n")
    (tmp_path / "notes.md").write_text(">>> f()\n1\n")
    assert await run_doctests(tmp_path, ["plain.py", "notes.md", "missing.py", "../outside.py"]) is None


def test_the_examples_join_the_project_tests_in_one_report() -> None:
    tests = TestReport(ok=True, command=["pytest"], passed=4, failed=0, errors=0, skipped=0)
    examples = TestReport(ok=False, command=["doctest", "calc.py"], passed=1, failed=2, errors=0, skipped=0)
    both = merged(tests, examples)
    assert not both.ok and (both.passed, both.failed) == (5, 2)
    nothing = TestReport(ok=False, command=[], passed=0, failed=0, errors=0, skipped=0, output_tail="Nothing to run")
    assert merged(nothing, examples) is examples and merged(tests, None) is tests


async def test_a_module_its_package_imports_back_runs_its_examples_as_the_package_imports_it(tmp_path: Path) -> None:
    # more-itertools' shape: __init__ star-imports the module, whose examples import from the package
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("from .more import *  # noqa\nfrom .recipes import *  # noqa\n")
    (tmp_path / "pkg" / "recipes.py").write_text("def first(xs):\n    return xs[0]\n")
    (tmp_path / "pkg" / "more.py").write_text(
        'from .recipes import first\n\n\ndef double(x):\n    """\n    >>> from pkg import later\n'
        '    >>> later(double(2))\n    5\n    """\n    return 2 * x\n\n\ndef later(x):\n    return x + 1\n')
    report = await run_doctests(tmp_path, ["pkg/more.py"])
    assert report is not None and report.ok and (report.passed, report.failed) == (2, 0), report.failures
