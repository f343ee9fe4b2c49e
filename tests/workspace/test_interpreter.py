"""Project code runs on Troupe's libraries without Troupe: no start-up hooks from Troupe's
site-packages (its editable finder), so Troupe's own packages are not importable from a project,
and the shim is made once, atomically, and remade when stale."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from daemon.workspace import interpreter
from daemon.workspace.interpreter import _build, _matches, _shim_python, project_python

PROBE = """
import importlib.util, sys
print(importlib.util.find_spec("pytest") is not None, importlib.util.find_spec("daemon") is not None)
"""


def probe(python: str, cwd: Path) -> str:
    return subprocess.run([python, "-c", PROBE], cwd=cwd, capture_output=True, text=True, timeout=60).stdout.strip()


def test_project_code_gets_troupes_libraries_but_not_troupe(tmp_path: Path) -> None:
    if sys.prefix == sys.base_prefix:
        pytest.skip("Troupe is not running from a virtualenv here")
    python = project_python()
    assert probe(sys.executable, tmp_path) == "True True"  # Troupe's own interpreter leaks its packages
    if python == sys.executable:
        pytest.skip("Troupe's site-packages runs no start-up hooks here: nothing to leave out")
    assert probe(python, tmp_path) == "True False"
    assert Path(python).is_relative_to(sys.prefix)  # inside Troupe's prefix, which the sandbox can read
    assert project_python() == python  # made once


def test_the_shim_is_made_atomically_by_racing_makers_and_remade_when_stale(tmp_path: Path) -> None:
    root = tmp_path / "shim"
    content = f"{tmp_path}\n"
    errors: list[BaseException] = []

    def make() -> None:
        try:
            _build(root, content)
        except BaseException as exc:  # collected for the assertion
            errors.append(exc)

    makers = [threading.Thread(target=make) for _ in range(4)]
    for maker in makers:
        maker.start()
    for maker in makers:
        maker.join()
    assert errors == [] and _matches(root, content)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shim"]  # no temporary folder left behind
    assert subprocess.run([str(_shim_python(root)), "-c", f"import sys; assert {str(tmp_path)!r} in sys.path"],
                          timeout=60).returncode == 0

    _build(root, "/elsewhere\n")  # the libraries moved: the old shim is replaced
    assert _matches(root, "/elsewhere\n") and sorted(p.name for p in tmp_path.iterdir()) == ["shim"]


def test_when_the_shim_cannot_be_made_troupes_own_interpreter_runs_the_project(monkeypatch, tmp_path) -> None:
    def refuse(root: Path, content: str) -> None:
        raise PermissionError(13, "Permission denied", str(root))

    monkeypatch.setattr(interpreter, "_build", refuse)
    monkeypatch.setattr(interpreter.sys, "prefix", str(tmp_path))  # a prefix without a shim yet
    monkeypatch.setattr(interpreter, "_pth_lines", lambda dirs: (dirs, True))
    project_python.cache_clear()
    try:
        assert project_python() == sys.executable
    finally:
        project_python.cache_clear()
