"""The build suite's run scores of a generated project, every run in the sandbox: ChatDev 1.0's
executability, Troupe's stronger executability, and the team's own tests; GUI programs get a
virtual display (Xvfb).

Programs run with a stdin that stays open and empty, as in a terminal nobody types into: a
program waiting at ``input()`` is still running at the deadline (ChatDev ran it from a shell,
where it would wait), instead of crashing on ``EOFError`` as it would on ``/dev/null``.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import shlex
from dataclasses import dataclass
from pathlib import Path

from daemon.sandbox import SandboxResult, run_sandboxed
from daemon.workspace import packages
from daemon.workspace.display import Display, is_gui
from daemon.workspace.testing import entry_point, has_tests, run_tests

log = logging.getLogger("troupe.eval")

CHATDEV_SECONDS = 3.0
"""ChatDev's fixed wait before it kills the program."""
RUN_SECONDS = 5.0
"""Troupe's executability deadline: still running then (a GUI or a loop) is not a failure."""
TESTS_SECONDS = 60.0
# Runs the command after ``-c ...`` with a stdin pipe whose write end stays open (never written).
_HOLD_STDIN = "import os, subprocess, sys; r, w = os.pipe(); sys.exit(subprocess.call(sys.argv[1:], stdin=r))"
def chatdev_run_folder(root: Path) -> Path | None:
    """Where ChatDev runs ``python3 main.py``: the folder of the last file (in ``os.walk`` order)
    whose name contains ".py" — a ``tests/`` folder as often as not; None without one."""
    found = None
    for folder, _, names in os.walk(root):
        for name in names:
            if ".py" in name:
                found = Path(folder)
    return found


@dataclass
class RunScore:
    score: int | None  # None: not run (a GUI program and no display)
    detail: str        # what ran and what came of it, briefly


async def chatdev_executability(root: Path, python: str, display: Display) -> RunScore:
    """ChatDev's executability: ``cd <folder>; ls -l; python3 main.py`` (``python3``: the project
    interpreter), killed after 3 s; 0 when stderr contains "traceback" (any case) or there is no
    ``.py`` file, else 1. An early exit, a non-zero code or "can't open file" all score 1."""
    folder = chatdev_run_folder(root)
    if folder is None:
        return RunScore(0, "no .py file: nothing to run")
    if display.name is None and is_gui(root):
        return RunScore(None, f"not run: a GUI program and no display ({display.note})")
    rel = folder.relative_to(root).as_posix()
    script = 'cd "$1"; ls -l; "$0" main.py'
    result = await _run(root, [python, "-S", "-c", _HOLD_STDIN, "/bin/sh", "-c", script, python, rel],
                        CHATDEV_SECONDS, display)
    crashed = "traceback" in result.stderr.lower()
    return RunScore(int(not crashed), f"in {rel}/: {_outcome(result, CHATDEV_SECONDS)}")


async def executability(root: Path, python: str, display: Display) -> RunScore:
    """Troupe's executability: the entry point (``main.py``, ``app.py``, a package's ``__main__``, a
    console script) runs up to 5 s; 1 when it exits 0 or is still running then (a GUI, a loop, a
    prompt) and wrote no traceback, else 0 (also when there is no entry point)."""
    argv = entry_point(root, python)
    if argv is None:
        return RunScore(0, "no entry point (main.py, app.py, a package __main__.py or a console script)")
    if display.name is None and is_gui(root):
        return RunScore(None, f"not run: a GUI program and no display ({display.note})")
    result = await _run(root, [python, "-S", "-c", _HOLD_STDIN, *argv], RUN_SECONDS, display)
    crashed = "Traceback (most recent call last)" in result.stderr
    ok = not crashed and (result.returncode == 0 or result.timed_out)
    return RunScore(int(ok), f"{shlex.join(argv[1:])}: {_outcome(result, RUN_SECONDS)}")


async def team_tests(root: Path, python: str, display: Display) -> tuple[str, str]:
    """The project's own tests with pytest in the sandbox: ("passed" | "failed" | "none", summary)."""
    if not has_tests(root):
        return "none", "no tests"
    variables = {**display.env(), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}  # Troupe's test plugins are not the project's
    plugins = " -p pytest_asyncio.plugin" if importlib.util.find_spec("pytest_asyncio") else ""
    command = (" ".join(f"{name}={shlex.quote(value)}" for name, value in variables.items())
               + f" {shlex.quote(python)} -m pytest -q -p no:cacheprovider --color=no{plugins}")
    report = await run_tests(root, command=command, timeout=TESTS_SECONDS, python=python)
    counts = f"{report.passed} passed, {report.failed} failed, {report.errors} errors"
    if report.timed_out:
        return "failed", f"timed out after {TESTS_SECONDS:g} s ({counts})"
    if report.ok:
        return "passed", counts
    if report.passed + report.failed + report.errors == 0:
        return "none", "pytest collected no tests"
    return "failed", counts


async def _run(root: Path, argv: list[str], seconds: float, display: Display) -> SandboxResult:
    """``argv`` in the sandbox with the project and the packages it imports (all of them: the
    interpreter runs with ``-S``, without Troupe's site-packages) importable."""
    libs = (await packages.for_project(root, skip_importable=False)).paths
    paths = [str(root)] + ([str(root / "src")] if (root / "src").is_dir() else []) + [str(p) for p in libs]
    env = {**display.env(), "PYTHONPATH": os.pathsep.join(paths)}
    return await run_sandboxed(argv, cwd=root, timeout=seconds, env=env, readable=libs)


def _outcome(result: SandboxResult, seconds: float) -> str:
    if result.timed_out:
        what = f"still running after {seconds:g} s"
    else:
        what = f"exit {result.returncode} after {result.duration_s:.1f} s"
    last = result.stderr.strip().splitlines()[-1:] if result.stderr.strip() else []
    return what + (f"; stderr ends: {last[0][:200]}" if last else "")
