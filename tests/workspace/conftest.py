"""Fixtures: a multi-folder repository like a user's, and a way to see every file under a folder."""

from __future__ import annotations

from pathlib import Path

import pytest


def write(root: Path, rel: str, text: str | bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def tree(root: Path) -> dict[str, bytes]:
    """Every regular file under ``root`` with its bytes: compare before/after to prove nothing was written."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """Two packages, a nested .gitignore, ignored and generated files, a binary, a huge file."""
    root = tmp_path / "repo"
    write(root, ".gitignore", "*.log\nsecrets/\n")
    write(root, "README.md", "# Shop\n\nPrices and carts.\n")
    write(root, "shop/__init__.py", "")
    write(root, "shop/cart.py", (
        "from shop.pricing import price_of\n"
        "\n"
        "\n"
        "class Cart:\n"
        "    def __init__(self):\n"
        "        self.items = []\n"
        "\n"
        "    def add(self, name):\n"
        "        self.items.append(name)\n"
        "\n"
        "    def total(self):\n"
        "        return sum(price_of(n) for n in self.items)\n"
    ))
    write(root, "shop/pricing.py", "PRICES = {'apple': 3}\n\n\ndef price_of(name):\n    return PRICES[name]\n")
    write(root, "tools/__init__.py", "")
    write(root, "tools/report.py", "def report(cart):\n    return f'{len(cart.items)} items'\n")
    write(root, "tools/notes.txt", "no trailing newline")
    write(root, "tools/.gitignore", "*.tmp\n")
    write(root, "tools/scratch.tmp", "ignored by the nested .gitignore\n")
    write(root, "debug.log", "ignored\n")
    write(root, "secrets/token.txt", "ignored folder\n")
    write(root, "node_modules/left/index.js", "module.exports = 1\n")
    write(root, ".venv/pyvenv.cfg", "home = /usr\n")
    write(root, "env2/pyvenv.cfg", "home = /usr\n")
    write(root, "env2/lib/site.py", "a virtualenv under another name\n")
    write(root, "dist/shop-1.0.tar.gz", b"\x1f\x8b\x08\x00")
    write(root, ".git/HEAD", "ref: refs/heads/main\n")
    write(root, "assets/logo.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    write(root, "data/latin1.csv", "caf\xe9\n".encode("latin-1"))
    write(root, "data/huge.txt", "x" * 1_100_000)
    return root
