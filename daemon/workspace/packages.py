"""The third-party packages a program imports, installed for its sandboxed runs.

A new program often imports pygame, pandas or requests. Troupe's Python does not carry them and
the sandbox has no network, so without them the program can only fail with
``ModuleNotFoundError`` — and a repair loop then spends its cycles on an import it cannot fix
(ChatDev's test phase installs such a package and runs again). Before a project's tests or
program run, :func:`for_project` finds the top-level imports that are neither the standard
library, the project's own modules nor importable already, and installs each one's
distribution from the package index, **wheels only** (``pip --only-binary=:all:``: no build
script runs, so nothing the model wrote or chose runs outside the sandbox), into a folder of
its own under ``$TROUPE_HOME/packages/<python>/``, kept for later runs. The sandbox gets those
folders on ``PYTHONPATH``, read-only. A name the index does not have (an import of a module the
model invented) is remembered for an hour and not asked for again.

pip reads its own configuration (``pip.conf``, ``PIP_INDEX_URL``, ``PIP_FIND_LINKS``...), so a
private index or a local wheel folder works as it does for ``pip install``.
``TROUPE_PACKAGES=off`` turns installing off.
"""

from __future__ import annotations

import ast
import asyncio
import importlib.util
import logging
import os
import re
import shutil
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from daemon import paths
from daemon.workspace.files import list_repo_files

log = logging.getLogger("troupe.workspace")

INSTALL_SECONDS = 300.0  # one distribution with its dependencies (pandas and numpy: ~70 MB of wheels)
FAILED_RETRY_SECONDS = 3600.0  # a name the index lacked is not asked for again within this
MAX_DISTRIBUTIONS = 8  # a program importing more third-party names than this gets the first ones only
_MAX_FILE_BYTES = 512 * 1024
# Import names whose distribution on PyPI is named otherwise (the common ones in generated programs).
DISTRIBUTIONS = {
    "PIL": "pillow", "cv2": "opencv-python-headless", "sklearn": "scikit-learn", "skimage": "scikit-image",
    "yaml": "pyyaml", "bs4": "beautifulsoup4", "dateutil": "python-dateutil", "dotenv": "python-dotenv",
    "serial": "pyserial", "Crypto": "pycryptodome", "OpenGL": "pyopengl", "attr": "attrs",
    "docx": "python-docx", "pptx": "python-pptx", "magic": "python-magic", "jwt": "pyjwt",
    "usb": "pyusb", "wx": "wxpython", "gi": "pygobject", "Levenshtein": "levenshtein",
    "fitz": "pymupdf", "telegram": "python-telegram-bot", "google": "protobuf",
}
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


@dataclass
class Packages:
    """What a project's runs get: the folders to import from, and what could not be installed."""

    paths: list[Path] = field(default_factory=list)
    installed: list[str] = field(default_factory=list)  # distributions installed by this call
    missing: list[str] = field(default_factory=list)  # distributions the index did not give

    def note(self) -> str:
        parts = []
        if self.installed:
            parts.append(f"installed for the run: {', '.join(self.installed)}")
        if self.missing:
            parts.append(f"not on the package index (wheels): {', '.join(self.missing)}")
        return "; ".join(parts)


def enabled() -> bool:
    return os.environ.get("TROUPE_PACKAGES", "on").strip().lower() not in ("0", "off", "false", "no")


def own_modules(paths: list[str]) -> set[str]:
    """The top-level names the project's own files can be imported by (a folder, or a file's stem)."""
    names = set()
    for path in paths:
        parts = PurePosixPath(path).parts
        for i, part in enumerate(parts):
            names.add(part.removesuffix(".py") if i == len(parts) - 1 else part)
    return names


def outside_imports(files: dict[str, str]) -> tuple[list[str], list[str]]:
    """(the top-level modules the Python files import that are neither the standard library nor the
    project's own, in the order of the sorted paths; the Python files that do not parse)."""
    own = own_modules(list(files))
    found: dict[str, None] = {}
    broken = []
    for path, text in sorted(files.items()):
        if not path.endswith((".py", ".pyi")):
            continue
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            broken.append(path)
            continue
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level
                     else [])
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top not in own and top != "__future__":
                    found[top] = None
    return list(found), broken


def third_party_imports(root: Path, *, skip_importable: bool = True) -> list[str]:
    """The project's :func:`outside_imports` that (``skip_importable``) Troupe's Python cannot
    import already; sorted."""
    files = {}
    for rel in list_repo_files(root):
        path = root / rel
        try:
            if rel.endswith(".py") and path.stat().st_size <= _MAX_FILE_BYTES:
                files[rel] = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
    found, _ = outside_imports(files)
    return sorted(name for name in found if _NAME.match(name) and not (skip_importable and _importable(name)))


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def distribution(module: str) -> str:
    return DISTRIBUTIONS.get(module, module).lower().replace("_", "-")


def store() -> Path:
    """``$TROUPE_HOME/packages/<python version>``: one folder per distribution."""
    folder = paths.troupe_home() / "packages" / f"py{sys.version_info.major}{sys.version_info.minor}"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


_locks: dict[str, asyncio.Lock] = {}


async def for_project(root: Path, *, skip_importable: bool = True) -> Packages:
    """Install (once) what the project at ``root`` imports from outside; see the module docstring.
    ``skip_importable=False``: also what Troupe's own Python has (for an interpreter run without
    its site-packages, ``python -S``)."""
    result = Packages()
    if not enabled():
        return result
    modules = await asyncio.to_thread(third_party_imports, Path(root), skip_importable=skip_importable)
    wanted = list(dict.fromkeys(distribution(m) for m in modules))[:MAX_DISTRIBUTIONS]
    if not wanted:
        return result
    folder = await asyncio.to_thread(store)
    for name in wanted:
        lock = _locks.setdefault(name, asyncio.Lock())
        async with lock:
            target, fresh = await _install(folder, name)
        if target is not None:
            result.paths.append(target)
            if fresh:
                result.installed.append(name)
        else:
            result.missing.append(name)
    if result.installed or result.missing:
        log.info("packages for %s: %s", root, result.note())
    return result


async def _install(folder: Path, name: str) -> tuple[Path | None, bool]:
    """(the distribution's folder or None, whether this call installed it)."""
    target, failed = folder / name, folder / f"{name}.failed"
    if (target / ".complete").is_file():
        return target, False
    try:
        if time.time() - failed.stat().st_mtime < FAILED_RETRY_SECONDS:
            return None, False
    except OSError:
        pass
    staging = folder / f".{name}-{uuid.uuid4().hex[:8]}"
    argv = [sys.executable, "-m", "pip", "install", "--quiet", "--no-input", "--disable-pip-version-check",
            "--no-warn-script-location", "--only-binary=:all:", "--target", str(staging), name]
    process = await asyncio.create_subprocess_exec(*argv, stdin=asyncio.subprocess.DEVNULL,
                                                   stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        _, stderr = await asyncio.wait_for(process.communicate(), INSTALL_SECONDS)
    except TimeoutError:
        process.kill()
        await process.wait()
        stderr = f"no end after {INSTALL_SECONDS:g} s".encode()
    if process.returncode != 0:
        await asyncio.to_thread(shutil.rmtree, staging, True)
        reason = stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["pip failed"]
        failed.write_text(f"{reason[0][:500]}\n", encoding="utf-8")
        log.info("package %s not installed: %s", name, reason[0][:200])
        return None, False
    (staging / ".complete").write_text(time.strftime("%Y-%m-%d %H:%M:%S\n"), encoding="utf-8")
    try:
        staging.rename(target)
    except OSError:  # another daemon installed it meanwhile: keep theirs
        await asyncio.to_thread(shutil.rmtree, staging, True)
        if not (target / ".complete").is_file():
            return None, False
    failed.unlink(missing_ok=True)
    return target, True
