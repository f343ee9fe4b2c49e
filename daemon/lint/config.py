"""Which ruff rules a project gets: its own configuration, else ruff's conservative defaults.

A project configures ruff with ``ruff.toml``, ``.ruff.toml`` or a ``[tool.ruff]`` table in
``pyproject.toml`` (in the file's folder or any folder up to the workspace root). Without one,
ruff runs ``--isolated`` (no user-level or outer-folder configuration leaks in) on the rule set
ruff itself documents as its default: E4, E7, E9 and F.
"""

from __future__ import annotations

from pathlib import Path

DEFAULT_RULES = "E4,E7,E9,F"
RUFF_FILES = ("ruff.toml", ".ruff.toml")


def _configures_ruff(folder: Path) -> bool:
    if any((folder / name).is_file() for name in RUFF_FILES):
        return True
    pyproject = folder / "pyproject.toml"
    try:
        return pyproject.is_file() and "[tool.ruff" in pyproject.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def project_configured(root: Path, rel: str | None = None) -> bool:
    """True when ruff configuration exists between ``rel``'s folder and ``root`` (inclusive)."""
    root = Path(root)
    folder = (root / rel).parent if rel else root
    while True:
        if _configures_ruff(folder):
            return True
        if folder == root or root not in folder.parents:
            return False
        folder = folder.parent


def config_args(root: Path, files: list[str] | None = None) -> list[str]:
    """Ruff arguments for these files: none when the project configures ruff, else the defaults."""
    if any(project_configured(root, f) for f in files) if files else project_configured(root):
        return []
    return ["--isolated", "--select", DEFAULT_RULES]
