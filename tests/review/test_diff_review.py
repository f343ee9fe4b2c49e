"""``troupe review --diff BASE`` / ``--staged`` with the static lane (no daemon, no model): only the
changed lines' findings, the files it skips and why, bad input, and the exit status CI reads."""

from __future__ import annotations

from pathlib import Path

from tests.review.conftest import FIRST, GitRepo, new_repo, review_json, troupe


def test_only_the_changed_hunks_findings_are_reported(two_commits: GitRepo) -> None:
    code, report = review_json(two_commits.root, "--diff", "HEAD~1")
    found = [(f["rule"], f["file"], f["start_line"], f["level"]) for f in report["findings"]]
    # F401 `os` (line 1) and F821 `missing_before` (line 6) are old: outside the changed lines
    assert found == [("F401", "calc.py", 2, "warning"), ("F821", "calc.py", 10, "error")]
    assert report["files"] == [{"path": "calc.py", "status": "modified", "old_path": None, "lines": [[2, 2], [10, 10]]}]
    assert report["lane"] == "static" and report["job_id"] is None
    assert code == 1  # an error-level finding: --fail-on error (the default) fails


def test_text_output_names_file_line_level_and_rule(two_commits: GitRepo) -> None:
    proc = troupe(two_commits.root, "review", "--diff", "HEAD~1")
    lines = proc.stdout.splitlines()
    assert len(lines) == 2 and "calc.py:10:" in lines[1] and "error" in lines[1] and "[F821]" in lines[1]
    assert "`offset`" in lines[1] and "missing_before" not in proc.stdout
    assert "1 changed file(s) reviewed against HEAD~1 (static lane): 2 finding(s)" in proc.stderr


def test_fail_on_sets_the_exit_status(two_commits: GitRepo) -> None:
    codes = {level: troupe(two_commits.root, "review", "--diff", "HEAD~1", "--fail-on", level).returncode
             for level in ("error", "warning", "note", "never")}
    assert codes == {"error": 1, "warning": 1, "note": 1, "never": 0}
    two_commits.commit("fix the undefined name", **{"calc.py": FIRST.replace("missing_before", "0") + "import sys\n"})
    only_warning = {level: troupe(two_commits.root, "review", "--diff", "HEAD~1", "--fail-on", level).returncode
                    for level in ("error", "warning")}
    assert only_warning == {"error": 0, "warning": 1}  # F401 alone is a warning


def test_a_clean_change_exits_zero_and_says_so(two_commits: GitRepo) -> None:
    two_commits.commit("third", **{"calc.py": FIRST + "\n\ndef mean(xs):\n    return sum(xs) / len(xs)\n"})
    proc = troupe(two_commits.root, "review", "--diff", "HEAD~1")
    assert proc.returncode == 0 and proc.stdout == "no findings on the changed lines\n"


def test_a_base_that_does_not_exist_is_named_exits_2_and_changes_nothing(two_commits: GitRepo) -> None:
    before = two_commits.state()
    for base in ("no-such-branch", "origin/main", "--output=/tmp/x"):
        proc = troupe(two_commits.root, "review", f"--diff={base}", "--format", "sarif")
        assert proc.returncode == 2 and proc.stdout == ""
        assert f"the base {base!r} is not a commit" in proc.stderr
    assert "fetch it first" in troupe(two_commits.root, "review", "--diff", "origin/main").stderr
    assert two_commits.state() == before


def test_outside_a_git_repository_the_error_says_so(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    proc = troupe(tmp_path / "plain", "review", "--diff", "HEAD")
    assert proc.returncode == 2 and proc.stdout == ""
    assert "is not inside a git repository" in proc.stderr


def test_binary_deleted_renamed_and_symlinked_files_are_skipped_with_a_note(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "proj")
    repo.commit("first", **{"calc.py": FIRST, "logo.png": b"\x89PNG\0\x01", "gone.py": "x = 1\n",
                            "old_name.py": "a = 1\nb = 2\n"})
    repo.write("logo.png", b"\x89PNG\0\x02\x03")
    (repo.root / "gone.py").unlink()
    repo.git("mv", "old_name.py", "new_name.py")
    (repo.root / "link.py").symlink_to("calc.py")
    repo.write("calc.py", FIRST + "print(undefined_thing)\n")
    repo.git("add", "-A")
    before = repo.state()
    code, report = review_json(repo.root, "--diff", "HEAD")
    skipped = {s["path"]: s["reason"] for s in report["skipped"]}
    assert skipped == {"logo.png": "binary: not reviewed", "gone.py": "deleted",
                       "new_name.py": "renamed from old_name.py, no line added or changed",
                       "link.py": "a symbolic link: not reviewed"}
    assert [(f["rule"], f["start_line"]) for f in report["findings"]] == [("F821", 10)]
    assert code == 1 and repo.state() == before
    proc = troupe(repo.root, "review", "--diff", "HEAD")
    assert "· skipped logo.png: binary: not reviewed" in proc.stderr


def test_a_renamed_file_is_reviewed_under_its_new_name(two_commits: GitRepo) -> None:
    two_commits.git("mv", "calc.py", "maths.py")
    two_commits.write("maths.py", (two_commits.root / "maths.py").read_text() + "\n\ndef f():\n    return nope\n")
    _, report = review_json(two_commits.root, "--diff", "HEAD")
    assert report["files"][0]["path"] == "maths.py" and report["files"][0]["old_path"] == "calc.py"
    assert [(f["file"], f["start_line"]) for f in report["findings"]] == [("maths.py", 14)]


def test_staged_reviews_the_index_not_the_working_tree(two_commits: GitRepo) -> None:
    two_commits.write("calc.py", (two_commits.root / "calc.py").read_text() + "\n\ndef g():\n    return staged_bug\n")
    two_commits.git("add", "calc.py")
    two_commits.write("calc.py", (two_commits.root / "calc.py").read_text().replace("staged_bug", "1")
                      + "\n\ndef h():\n    return unstaged_bug\n")
    code, report = review_json(two_commits.root, "--staged")
    assert [f["message"] for f in report["findings"]] == ["Undefined name `staged_bug`"]
    assert report["base"] == "the index" and code == 1


def test_files_given_narrow_the_diff_and_a_file_outside_is_refused(two_commits: GitRepo, tmp_path: Path) -> None:
    two_commits.write("other.py", "print(elsewhere)\n")
    two_commits.git("add", "other.py")
    (two_commits.root / "pkg").mkdir()
    _, narrowed = review_json(two_commits.root, "--diff", "HEAD~1", "other.py")
    assert [f["file"] for f in narrowed["findings"]] == ["other.py"]
    _, everything = review_json(two_commits.root, "--diff", "HEAD~1")
    assert sorted({f["file"] for f in everything["findings"]}) == ["calc.py", "other.py"]
    _, from_below = review_json(two_commits.root / "pkg", "--diff", "HEAD~1", "../other.py")
    assert [f["file"] for f in from_below["findings"]] == ["other.py"]
    (tmp_path / "stray.py").write_text("x = 1\n")
    outside = troupe(two_commits.root, "review", "--diff", "HEAD~1", str(tmp_path / "stray.py"))
    assert outside.returncode == 2 and "is outside the repository" in outside.stderr


def test_diff_options_without_a_diff_are_a_usage_error(two_commits: GitRepo) -> None:
    proc = troupe(two_commits.root, "review", "calc.py", "--format", "sarif")
    assert proc.returncode == 2 and "go with --diff BASE or --staged" in proc.stderr
    proc = troupe(two_commits.root, "review")
    assert proc.returncode == 2 and "review needs FILE" in proc.stderr
    proc = troupe(two_commits.root, "review", "--diff", "HEAD~1", "--staged")
    assert proc.returncode == 2 and "not both" in proc.stderr
