"""The team works in a scratch copy; the user's tree changes only through apply_change, and only if unchanged."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from daemon.workspace.paths import PathOutsideWorkspace
from daemon.workspace.scratch import ChangeConflict, NotEditable, ProposedDiff, Scratch, apply_change
from tests.workspace.conftest import tree, write


@pytest.fixture
def scratch(repo: Path, tmp_path: Path) -> Iterator[Scratch]:
    work = Scratch.from_repo(repo, base_dir=tmp_path / "scratches")
    yield work
    work.cleanup()


def test_the_copy_holds_the_text_files_and_skips_ignored_generated_binary_and_huge_ones(scratch: Scratch) -> None:
    assert scratch.list_files() == [
        ".gitignore", "README.md", "shop/__init__.py", "shop/cart.py", "shop/pricing.py",
        "tools/.gitignore", "tools/__init__.py", "tools/notes.txt", "tools/report.py",
    ]
    copied = tree(scratch.root)
    for ignored in ("debug.log", "secrets/token.txt", "tools/scratch.tmp", "node_modules/left/index.js",
                    ".venv/pyvenv.cfg", "env2/lib/site.py", "dist/shop-1.0.tar.gz", ".git/HEAD", "data/huge.txt"):
        assert ignored not in copied
    assert "too large" in scratch.skipped["data/huge.txt"]
    # Binary and non-UTF-8 files are there for the program's tests, but the team cannot see or edit them.
    assert copied["assets/logo.png"].startswith(b"\x89PNG")
    with pytest.raises(NotEditable, match=r"assets/logo\.png is a binary"):
        scratch.read("assets/logo.png")
    with pytest.raises(NotEditable):
        scratch.write("data/latin1.csv", "cafe\n")


def test_uncommitted_work_is_copied_and_the_users_tree_is_never_written(repo: Path, tmp_path: Path) -> None:
    write(repo, "shop/draft.py", "# not committed yet\n")
    before = tree(repo)
    with Scratch.from_repo(repo, base_dir=tmp_path / "s") as scratch:
        assert scratch.read("shop/draft.py") == "# not committed yet\n"
        scratch.write("shop/draft.py", "# edited by the team\n")
        scratch.write("shop/new/module.py", "X = 1\n")
        scratch.delete("tools/report.py")
        assert tree(repo) == before
    assert tree(repo) == before


def test_code_states_record_hash_changed_files_and_instruction(scratch: Scratch) -> None:
    initial = scratch.states[0]
    assert (initial.index, initial.files) == (0, [])
    scratch.write("shop/pricing.py", "PRICES = {'apple': 4}\n")
    scratch.write("tools/extra.py", "Y = 2\n")
    first = scratch.snapshot("raise the price of apples and add extra")
    assert (first.index, first.files, first.instruction) == (1, ["shop/pricing.py", "tools/extra.py"],
                                                             "raise the price of apples and add extra")
    assert first.hash != initial.hash and len(first.hash) == 64
    scratch.delete("tools/extra.py")
    scratch.write("shop/pricing.py", scratch.text_at(0, "shop/pricing.py") or "")
    back = scratch.snapshot("undo")
    assert back.files == ["shop/pricing.py", "tools/extra.py"]
    assert back.hash == initial.hash  # same content, same hash
    assert scratch.text_at(1, "tools/extra.py") == "Y = 2\n" and scratch.text_at(2, "tools/extra.py") is None
    assert [state.index for state in scratch.states] == [0, 1, 2]


def test_paths_that_leave_the_scratch_are_refused_and_nothing_is_written_outside(scratch: Scratch,
                                                                                 tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, scratch.root / "link")
    before = tree(tmp_path / "repo")
    for bad in ("../../x", "/etc/passwd", "link/evil.py"):
        with pytest.raises(PathOutsideWorkspace):
            scratch.write(bad, "pwned\n")
    assert list(outside.iterdir()) == []
    assert not (tmp_path / "x").exists() and not (scratch.root.parent.parent / "x").exists()
    assert tree(tmp_path / "repo") == before


def test_a_symlink_in_the_repository_never_points_back_into_the_users_tree(repo: Path, tmp_path: Path) -> None:
    os.symlink(repo / "shop" / "pricing.py", repo / "prices.py")  # absolute link, inside the repository
    os.symlink("/etc/hostname", repo / "host.txt")                  # leads outside: not copied
    with Scratch.from_repo(repo, base_dir=tmp_path / "s") as scratch:
        link = scratch.root / "prices.py"
        assert link.is_symlink() and not os.readlink(link).startswith("/")
        assert link.resolve() == (scratch.root / "shop" / "pricing.py").resolve()
        assert "host.txt" in scratch.skipped and not (scratch.root / "host.txt").exists()


def test_a_folder_link_left_out_of_the_copy_cannot_be_written_through(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, repo / "escape")  # leads outside the repository: left out of the copy
    with (Scratch.from_repo(repo, base_dir=tmp_path / "s") as scratch,
          pytest.raises(NotEditable, match="escape was left out of the copy")):
        scratch.write("escape/pwned.py", "print('hi')\n")
    assert list(outside.iterdir()) == []


def test_the_proposed_change_applies_with_git_to_a_copy_of_the_original(scratch: Scratch, repo: Path,
                                                                         tmp_path: Path) -> None:
    """Two packages edited, a file created, one deleted, one without a final newline."""
    pricing = "PRICES = {'apple': 3, 'pear': 5}\n\n\ndef price_of(name):\n    return PRICES[name]\n"
    scratch.write("shop/pricing.py", pricing)
    scratch.write("tools/report.py", "def report(cart):\n    return f'{len(cart.items)} items, {cart.total()}'\n")
    scratch.write("tools/csv_export.py", "import csv\n")
    scratch.write("tools/notes.txt", "no trailing newline, still")
    scratch.delete("shop/__init__.py")
    change = scratch.proposed_change()
    assert change.files == ["shop/__init__.py", "shop/pricing.py", "tools/csv_export.py", "tools/notes.txt",
                            "tools/report.py"]
    assert "--- a/shop/pricing.py\n+++ b/shop/pricing.py\n" in change.diff
    assert "--- /dev/null\n+++ b/tools/csv_export.py\n" in change.diff
    assert "\\ No newline at end of file" in change.diff
    assert change.base_hashes["tools/csv_export.py"] is None
    copy = tmp_path / "copy"
    shutil.copytree(repo, copy, symlinks=True)
    (tmp_path / "change.diff").write_text(change.diff)
    check = subprocess.run(["git", "apply", "--check", str(tmp_path / "change.diff")], cwd=copy,
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    subprocess.run(["git", "apply", str(tmp_path / "change.diff")], cwd=copy, check=True)
    for rel in scratch.list_files():
        assert (copy / rel).read_text() == scratch.read(rel)
    assert not (copy / "shop/__init__.py").exists()


def test_apply_change_writes_the_users_files(scratch: Scratch, repo: Path) -> None:
    scratch.write("shop/pricing.py", "PRICES = {}\n")
    scratch.write("tools/new.py", "Z = 3\n")
    change = ProposedDiff.from_dict(scratch.proposed_change().to_dict())  # as stored and read back
    assert apply_change(repo, change) == ["shop/pricing.py", "tools/new.py"]
    assert (repo / "shop/pricing.py").read_text() == "PRICES = {}\n"
    assert (repo / "tools/new.py").read_text() == "Z = 3\n"
    assert not list(repo.rglob("*.troupe-tmp"))


def test_apply_change_refuses_when_the_user_changed_a_file_since_and_writes_nothing(scratch: Scratch,
                                                                                     repo: Path) -> None:
    scratch.write("shop/pricing.py", "PRICES = {}\n")
    scratch.write("tools/report.py", "def report(cart):\n    return ''\n")
    scratch.write("tools/added.py", "A = 1\n")
    change = scratch.proposed_change()
    write(repo, "tools/report.py", "def report(cart):\n    return 'edited by the user meanwhile'\n")
    write(repo, "tools/added.py", "the user created it too\n")
    before = tree(repo)
    with pytest.raises(ChangeConflict) as caught:
        apply_change(repo, change)
    assert caught.value.files == ["tools/added.py", "tools/report.py"]
    assert "tools/report.py: was modified" in str(caught.value) and "nothing written" in str(caught.value)
    assert tree(repo) == before  # shop/pricing.py was not written either


def test_apply_change_refuses_paths_outside_the_target(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.mkdir()
    evil = ProposedDiff.from_dict({"diff": "", "edits": [{"path": "../evil.py", "before": None, "after": "x"}],
                                   "base_hashes": {"../evil.py": None}})
    with pytest.raises(PathOutsideWorkspace):
        apply_change(target, evil)
    assert not (tmp_path / "evil.py").exists()


def test_an_empty_scratch_builds_new_software(tmp_path: Path) -> None:
    scratch = Scratch.empty(base_dir=tmp_path)
    scratch.write("main.py", "print('hi')\n")
    change = scratch.proposed_change()
    assert change.edits[0].before is None and change.base_hashes == {"main.py": None}
    target = tmp_path / "new-project"
    assert apply_change(target, change) == ["main.py"]
    assert (target / "main.py").read_text() == "print('hi')\n"
    scratch.cleanup()
    assert not scratch.root.exists()
    scratch.cleanup()  # twice is fine
