"""A program's third-party imports are installed (wheels only, once) and importable in its sandboxed
run; the standard library, the project's own modules and names the index lacks are not asked for twice."""

from __future__ import annotations

import base64
import hashlib
import sys
import zipfile
from pathlib import Path

import pytest

from daemon.workspace import packages
from daemon.workspace.testing import run_tests
from tests.agents.conftest import write_tree


def make_wheel(folder: Path, name: str, version: str, source: str) -> Path:
    """A pure-Python wheel for ``name`` with ``source`` as its ``__init__.py``: a local package index."""
    folder.mkdir(parents=True, exist_ok=True)
    info = f"{name}-{version}.dist-info"
    files = {f"{name}/__init__.py": source,
             f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    record.append(f"{info}/RECORD,,")
    wheel = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in {**files, f"{info}/RECORD": "\n".join(record) + "\n"}.items():
            archive.writestr(path, text)
    return wheel


@pytest.fixture
def index(tmp_path, monkeypatch) -> Path:
    """Packages on: a wheel folder as the only index, a TROUPE_HOME of the test's own."""
    wheels = tmp_path / "wheels"
    make_wheel(wheels, "starmath", "1.0", "def brightest(stars):\n    return max(stars)\n")
    monkeypatch.setenv("TROUPE_PACKAGES", "on")
    monkeypatch.setenv("TROUPE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    return wheels


PROGRAM = {
    "main.py": "import os\nimport json\nfrom collections import Counter\nimport starmath\nfrom sky import STARS\n\n"
               "print('brightest', starmath.brightest(STARS))\n",
    "sky.py": "STARS = [3, 9, 4]\n",
}


def test_only_imports_from_outside_the_project_and_the_standard_library_count(tmp_path):
    root = write_tree(tmp_path / "p", {
        **PROGRAM, "game/board.py": "from game import rules\nimport PIL.Image\nfrom . import pieces\nimport aiohttp\n",
        "game/rules.py": "", "broken.py": "import (",
    })
    assert packages.third_party_imports(root) == ["PIL", "starmath"]  # aiohttp: Troupe's Python has it
    assert packages.third_party_imports(root, skip_importable=False) == ["PIL", "aiohttp", "starmath"]
    assert [packages.distribution(m) for m in ("PIL", "sklearn", "my_lib")] == ["pillow", "scikit-learn", "my-lib"]


async def test_a_program_importing_a_package_runs_with_it_installed_once(index, tmp_path):
    root = write_tree(tmp_path / "p", PROGRAM)
    report = await run_tests(root)
    assert report.ok, report.output_tail
    assert "brightest 9" in report.output_tail
    installed = packages.store() / "starmath"
    assert (installed / ".complete").is_file() and (installed / "starmath" / "__init__.py").is_file()
    again = await packages.for_project(root)
    assert again.paths == [installed] and again.installed == []  # kept: no second install


async def test_a_name_the_index_lacks_fails_the_run_clearly_and_is_not_asked_again(index, tmp_path):
    root = write_tree(tmp_path / "p", {"main.py": "import starmath\nimport nebula_engine\n"})
    first = await packages.for_project(root)
    assert first.missing == ["nebula-engine"] and first.installed == ["starmath"]
    marker = packages.store() / "nebula-engine.failed"
    assert marker.is_file()
    stamp = marker.stat().st_mtime_ns
    report = await run_tests(root)
    assert not report.ok and "No module named 'nebula_engine'" in report.output_tail
    assert marker.stat().st_mtime_ns == stamp  # remembered: pip was not run for it again


async def test_installing_is_off_when_troupe_packages_is_off(index, tmp_path, monkeypatch):
    monkeypatch.setenv("TROUPE_PACKAGES", "off")
    root = write_tree(tmp_path / "p", PROGRAM)
    report = await run_tests(root)
    assert not report.ok and "No module named 'starmath'" in report.output_tail
    assert not (tmp_path / "home" / "packages").exists()


async def test_a_projects_own_interpreter_gets_nothing_installed_or_shadowed(index, tmp_path):
    root = write_tree(tmp_path / "p", PROGRAM)
    own = root / ".venv" / "bin" / "python"
    own.parent.mkdir(parents=True)
    own.symlink_to(sys.executable)  # another interpreter than Troupe's: the project's virtualenv
    report = await run_tests(root, python=str(own))
    assert not report.ok and "No module named 'starmath'" in report.output_tail
    assert not (packages.store() / "starmath").exists()
