"""Real tests, run in the sandbox: structured failures the programmer can act on; ruff before the reviewer."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from daemon.lint.check import static_check
from daemon.workspace.testing import TestReport, entry_point, run_tests
from tests.workspace.conftest import write


def calculator(root: Path) -> Path:
    write(root, "calc/__init__.py", "")
    write(root, "calc/ops.py", "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a + b\n")
    write(root, "tests/test_ops.py", (
        "from calc.ops import add, sub\n"
        "\n"
        "\n"
        "def test_add():\n"
        "    assert add(1, 2) == 3\n"
        "\n"
        "\n"
        "def test_sub():\n"
        "    result = sub(5, 3)\n"
        "    assert result == 2, 'five minus three'\n"
    ))
    return root


async def test_a_failing_pytest_test_is_reported_with_file_line_and_message(tmp_path: Path) -> None:
    report = await run_tests(calculator(tmp_path))
    assert (report.ok, report.passed, report.failed, report.errors, report.timed_out) == (False, 1, 1, 0, False)
    [failure] = report.failures
    assert failure.test_id == "tests/test_ops.py::test_sub"
    assert (failure.file, failure.line) == ("tests/test_ops.py", 10)
    assert "five minus three" in failure.message and "assert 8 == 2" in failure.message
    summary = report.summary()
    assert summary.startswith("Tests FAILED: 1 failed, 1 passed (pytest,")
    assert "FAILED tests/test_ops.py::test_sub at tests/test_ops.py:10" in summary
    assert "assert 8 == 2" in summary
    assert not list(tmp_path.glob(".troupe-junit-*.xml"))  # the report file is cleaned up


async def test_passing_tests_are_ok_and_a_configured_command_is_run_as_given(tmp_path: Path) -> None:
    calculator(tmp_path)
    write(tmp_path, "calc/ops.py", "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n")
    report = await run_tests(tmp_path, command="pytest -q tests/test_ops.py -k add")
    assert report.ok and (report.passed, report.failed) == (1, 0)
    assert report.command[1:4] == ["-m", "pytest", "-q"] and "--junitxml" in " ".join(report.command)
    shell = await run_tests(tmp_path, command="echo checking && exit 3")
    assert not shell.ok and shell.command[:2] == ["/bin/sh", "-c"] and "checking" in shell.output_tail


async def test_a_collection_error_is_reported_as_an_error(tmp_path: Path) -> None:
    write(tmp_path, "tests/test_broken.py", "import missing_module_xyz\n\n\ndef test_x():\n    pass\n")
    report = await run_tests(tmp_path)
    assert not report.ok and report.errors == 1
    assert "missing_module_xyz" in report.summary()


async def test_without_tests_the_entry_point_runs_and_its_traceback_is_reported(tmp_path: Path) -> None:
    write(tmp_path, "main.py", "import helper\n\nhelper.start()\n")
    write(tmp_path, "helper.py", "def start():\n    config = {}\n    return config['port']\n")
    report = await run_tests(tmp_path)
    assert not report.ok and report.command[-1] == "main.py"
    [failure] = report.failures
    assert failure.message == "KeyError: 'port'"
    assert (failure.file, failure.line) == ("helper.py", 3)
    summary = report.summary()
    assert "Traceback (most recent call last)" in summary and "KeyError: 'port'" in summary
    assert "helper.py:3" in summary


async def test_an_entry_point_that_keeps_running_or_waits_for_input_counts_as_started(tmp_path: Path) -> None:
    write(tmp_path, "main.py", "name = input('Your name? ')\nprint('hello', name)\n")
    interactive = await run_tests(tmp_path)
    assert interactive.ok and "waited for input" in interactive.output_tail
    write(tmp_path, "main.py", "import time\nprint('serving', flush=True)\nwhile True:\n    time.sleep(0.1)\n")
    report = await run_tests(tmp_path, timeout=1.5)
    assert report.ok and "still running after 1.5 s" in report.output_tail


TK = "import tkinter as tk\n\nroot = tk.Tk()\ntk.Label(root, text='0 words').pack()\nroot.mainloop()\n"


@pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed (apt-get install xvfb)")
async def test_a_window_program_starts_under_a_virtual_display(tmp_path: Path) -> None:
    write(tmp_path, "main.py", TK)
    report = await run_tests(tmp_path, timeout=1.5)
    assert report.ok and report.ran and "still running after 1.5 s" in report.output_tail
    assert "no display" not in report.output_tail


async def test_a_window_program_is_not_run_where_no_display_can_start(tmp_path: Path, monkeypatch) -> None:
    write(tmp_path, "main.py", TK)
    monkeypatch.setenv("PATH", str(tmp_path / "no-such-bin"))  # no Xvfb to be found (the sandbox's tools are absolute)
    report = await run_tests(tmp_path, timeout=1.5)
    assert not report.ran and report.summary().startswith("Nothing to run: a GUI program, and Xvfb is not installed")


async def test_an_endless_test_is_stopped_at_the_timeout(tmp_path: Path) -> None:
    write(tmp_path, "tests/test_loop.py", "def test_forever():\n    while True:\n        pass\n")
    report = await run_tests(tmp_path, timeout=2)
    assert report.timed_out and not report.ok
    assert "Timed out" in report.summary()


async def test_nothing_to_run_says_so(tmp_path: Path) -> None:
    write(tmp_path, "README.md", "# nothing here\n")
    report = await run_tests(tmp_path)
    assert isinstance(report, TestReport) and not report.ok and not report.ran
    assert "Nothing to run" in report.summary()


def test_the_entry_point_is_found_in_a_package_or_a_console_script(tmp_path: Path) -> None:
    write(tmp_path, "src/shop/__main__.py", "print('shop')\n")
    assert entry_point(tmp_path, "python") == ["python", "-m", "shop"]
    other = tmp_path / "other"
    write(other, "pyproject.toml", '[project]\nname = "x"\n[project.scripts]\nx = "x.cli:main"\n')
    assert entry_point(other, "python") == ["python", "-c", "import sys; from x.cli import main as f; sys.exit(f())"]


async def test_ruff_finds_an_unused_import_and_a_syntax_error(tmp_path: Path) -> None:
    write(tmp_path, "pkg/mod.py", "import os\n\n\ndef f():\n    return 1\n")
    write(tmp_path, "pkg/broken.py", "def g(:\n")
    write(tmp_path, "notes.md", "not python\n")
    issues = await static_check(tmp_path)
    unused = [i for i in issues if i.code == "F401"]
    assert [(i.file, i.line, i.col) for i in unused] == [("pkg/mod.py", 1, 8)]
    assert "`os` imported but unused" in unused[0].message and unused[0].fixable
    assert any(i.file == "pkg/broken.py" and i.code == "invalid-syntax" for i in issues)
    assert await static_check(tmp_path, files=["notes.md", "pkg/deleted.py", "../outside.py"]) == []


async def test_the_projects_tests_run_without_troupes_own_pytest_plugins_but_async_tests_work(tmp_path: Path) -> None:
    write(tmp_path, "test_plugins.py", (
        "import sys\n"
        "import pytest\n\n\n"
        "def test_troupes_test_tools_are_not_loaded():\n"
        "    assert 'pytest_lsp' not in sys.modules\n\n\n"
        "@pytest.mark.asyncio\n"
        "async def test_async_tests_still_run():\n"
        "    assert True\n"
    ))
    report = await run_tests(tmp_path)
    assert report.ok, report.summary()
    assert report.passed == 2  # pytest-asyncio is loaded again: the tests are marked for it


async def test_only_the_plugins_a_project_declares_are_loaded_and_a_warning_is_never_the_failure(
        tmp_path: Path) -> None:
    write(tmp_path, "pyproject.toml", '[project]\nname = "p"\n[project.optional-dependencies]\n'
                                      'test = ["pytest", "hypothesis>=6"]\n')
    write(tmp_path, "tests/test_plugins.py", (
        "import sys\n\n\n"
        "def test_declared_plugins_only():\n"
        "    assert '_hypothesis_pytestplugin' in sys.modules\n"
        "    assert 'pytest_lsp' not in sys.modules and 'pytest_' + 'asyncio' not in sys.modules\n"
    ))
    report = await run_tests(tmp_path)
    assert report.ok, report.summary()

    broken = tmp_path / "broken"
    write(broken, "conftest.py", "import warnings\nwarnings.warn('old API', DeprecationWarning)\n"
                                 "raise RuntimeError('the fixture database is missing')\n")
    write(broken, "tests/test_x.py", "def test_x():\n    assert True\n")
    report = await run_tests(broken)
    assert not report.ok and report.failures
    assert "the fixture database is missing" in report.failures[0].message
    assert "Warning" not in report.failures[0].message


async def test_a_hanging_test_is_named_with_its_line_and_the_others_still_run(tmp_path: Path) -> None:
    write(tmp_path, "tests/test_wait.py", (
        "import time\n\n\n"
        "def test_before():\n    assert True\n\n\n"
        "def test_waits_forever():\n    while True:\n        time.sleep(0.05)\n\n\n"
        "def test_after():\n    assert 1 + 1 == 3\n"
    ))
    report = await run_tests(tmp_path, timeout=60, per_test_timeout=2)
    assert not report.timed_out and (report.passed, report.failed) == (1, 2)
    [hanging] = report.hanging
    assert hanging.test_id == "tests/test_wait.py::test_waits_forever" and hanging.line == 10
    assert "HANGING tests/test_wait.py::test_waits_forever: stopped by its own timeout at tests/test_wait.py:10" \
        in report.summary()
    assert any("assert (1 + 1) == 3" in f.message for f in report.failures)


async def test_unittest_files_pytest_does_not_collect_run_with_unittest_and_a_timeout_per_test(tmp_path: Path) -> None:
    write(tmp_path, "tests/testops.py", (  # unittest's test*.py, not pytest's test_*.py
        "import time\nimport unittest\n\n\n"
        "class Ops(unittest.TestCase):\n"
        "    def test_sum(self):\n        self.assertEqual(sum([1, 2]), 4)\n\n"
        "    def test_hangs(self):\n        while True:\n            time.sleep(0.05)\n\n"
        "    def test_fine(self):\n        pass\n"
    ))
    report = await run_tests(tmp_path, timeout=60, per_test_timeout=2)
    assert report.command[1:] == ["-m", "unittest"]
    assert (report.passed, report.failed, report.errors) == (1, 1, 1)
    assert [f.line for f in report.hanging] == [11]
    assert any(f.message == "3 != 4" and f.line == 7 for f in report.failures)


async def test_a_missing_package_means_the_tests_cannot_run_but_a_missing_project_module_is_a_failure(
        tmp_path: Path) -> None:
    write(tmp_path, "tests/test_a.py", "import numpy_that_is_not_installed\n\n\ndef test_a():\n    pass\n")
    report = await run_tests(tmp_path)
    assert report.cannot_run.startswith("the tests import numpy_that_is_not_installed, which is not installed")
    assert "The tests cannot run here" in report.summary()

    own = tmp_path / "own"
    write(own, "shop/__init__.py", "")
    write(own, "tests/test_b.py", "from shop.pricing import price\n\n\ndef test_b():\n    assert price() == 1\n")
    report = await run_tests(own)
    assert not report.ok and report.cannot_run == ""  # shop is the project's own: a module it lost is to fix
