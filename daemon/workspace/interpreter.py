"""The Python that runs a project's code and tests: Troupe's libraries, without Troupe.

Troupe's virtualenv has what a project's tests commonly need (pytest, pytest-asyncio), but its
site-packages also runs start-up hooks (``.pth`` files with ``import`` lines): the editable
install's import finder, which makes Troupe's own ``daemon``, ``storage``, ``lsp``... importable
from the user's code, and setuptools' distutils shim. Together they cost ~20 ms of CPU at every
interpreter start (a third of a sandboxed ``python check.py``) and leak Troupe into the project.

:func:`project_python` returns a small virtualenv inside Troupe's own (``sys.prefix``, which
the sandbox can already read) whose site-packages names Troupe's site-packages as plain paths:
the same libraries, none of the hooks. It is made once, atomically (several daemons and test
runs may race to make it), and remade when it no longer matches. Outside a virtualenv, without
hooks to skip, or when it cannot be made, the answer is ``sys.executable``.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import sys
import sysconfig
import uuid
from pathlib import Path

log = logging.getLogger("troupe.workspace")

SHIM = ".troupe-project-python"
PTH = "troupe-libraries.pth"


def _site_dirs() -> list[str]:
    paths = sysconfig.get_paths()
    return list(dict.fromkeys([paths["purelib"], paths["platlib"]]))


def _pth_lines(site_dirs: list[str]) -> tuple[list[str], bool]:
    """(the plain paths the site dirs' .pth files add, whether any .pth runs code)."""
    paths, hooks = list(site_dirs), False
    for site in site_dirs:
        for pth in sorted(Path(site).glob("*.pth")):
            try:
                lines = pth.read_text(encoding="utf-8").splitlines()
            except (OSError, UnicodeDecodeError):
                continue
            for line in lines:
                line = line.strip()
                if not line or line.startswith("#"):
                    continue
                if line.startswith(("import ", "import\t")):
                    hooks = True
                elif os.path.isdir(line if os.path.isabs(line) else os.path.join(site, line)):
                    paths.append(line if os.path.isabs(line) else os.path.join(site, line))
    return list(dict.fromkeys(paths)), hooks


def _shim_python(root: Path) -> Path:
    return root / "bin" / "python"


def _shim_pth(root: Path) -> Path:
    return root / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages" / PTH


def _matches(root: Path, content: str) -> bool:
    try:
        return _shim_python(root).exists() and _shim_pth(root).read_text(encoding="utf-8") == content
    except OSError:
        return False


def _readable_by_all(root: Path) -> None:
    for folder, _dirs, files in os.walk(root):
        os.chmod(folder, os.stat(folder).st_mode | 0o555)
        for name in files:
            path = os.path.join(folder, name)
            if not os.path.islink(path):
                mode = os.stat(path).st_mode
                os.chmod(path, mode | 0o444 | (0o111 if mode & 0o100 else 0))


def _build(root: Path, content: str) -> None:
    """Make the shim in a temporary folder beside ``root`` and move it into place in one rename."""
    import venv  # once per install: not worth importing at start-up

    tmp = root.with_name(f"{root.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        venv.EnvBuilder(symlinks=True, with_pip=False).create(tmp)
        _shim_pth(tmp).write_text(content, encoding="utf-8")
        _readable_by_all(tmp)  # the sandbox runs it as a uid of its own, whatever the umask was
        if root.exists() and not _matches(root, content):  # stale (Troupe moved, libraries changed)
            trash = root.with_name(f"{root.name}.old-{uuid.uuid4().hex[:8]}")
            os.rename(root, trash)
            shutil.rmtree(trash, ignore_errors=True)
        try:
            os.rename(tmp, root)
        except OSError:
            if not _matches(root, content):  # not someone else's identical shim that won the race
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@functools.cache
def project_python() -> str:
    """The interpreter for project code and tests (see the module docstring)."""
    if sys.prefix == sys.base_prefix:
        return sys.executable
    paths, hooks = _pth_lines(_site_dirs())
    if not hooks:
        return sys.executable
    root = Path(sys.prefix) / SHIM
    content = "".join(f"{path}\n" for path in paths)
    if not _matches(root, content):
        try:
            _build(root, content)
        except (OSError, ValueError, RuntimeError) as exc:
            log.info("project code runs on Troupe's own interpreter (%s): could not make %s: %s",
                     sys.executable, root, exc)
            return sys.executable
    return str(_shim_python(root))
