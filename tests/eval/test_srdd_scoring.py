"""The build suite's scores on small hand-made projects: ChatDev's completeness and executability
(crude rules included), Troupe's stronger checks, the team's tests, and the consistency proxy.
Every program runs in the real sandbox; GUI programs under a real Xvfb where it is installed."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from daemon.eval.srdd import score_project
from daemon.eval.srdd_run import executability
from daemon.eval.srdd_score import chatdev_completeness, chatdev_strip_comments, consistency
from daemon.workspace.display import Display
from daemon.workspace.interpreter import project_python

COUNTER = "A command-line word counter: it reads a text file and prints how many words and lines it has."
WORKING = '''import sys


def count(text):
    """Words and lines of a text."""
    return len(text.split()), len(text.splitlines())


def main():
    words, lines = count("one two\\nthree")
    print(f"{words} words, {lines} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''


def project(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


async def test_a_complete_working_program_scores_one_everywhere(tmp_path):
    scores, detail = await score_project(project(tmp_path, {"main.py": WORKING}), COUNTER)

    assert {k: scores[k] for k in ("complete_chatdev", "runs_chatdev", "complete", "runs", "tests_pass")} == {
        "complete_chatdev": 1, "runs_chatdev": 1, "complete": 1, "runs": 1, "tests_pass": 0}
    assert detail["tests"] == "none" and "exit 0" in detail["runs"]
    assert 0 < scores["consistency"] <= 1


async def test_a_pass_placeholder_makes_both_completeness_scores_zero(tmp_path):
    stub = WORKING.replace('    """Words and lines of a text."""\n    return len(text.split()), len(text.splitlines())',
                           "    pass")
    scores, detail = await score_project(project(tmp_path, {"main.py": stub}), COUNTER)

    assert scores["complete_chatdev"] == 0 and scores["complete"] == 0
    assert detail["unfinished"] == ["main.py:4: function count() has no implementation"]


def test_chatdevs_detector_fires_on_any_pass_or_todo_substring_and_ours_does_not(tmp_path):
    compass = project(tmp_path / "a", {"main.py": "compass = 'north'\nprint(compass)\n"})
    todo_app = project(tmp_path / "b", {"todo.py": "items = []\n", "main.py": "import todo\nprint(todo.items)\n"})
    password = project(tmp_path / "c", {"main.py": "password = input('password: ')\n"})
    empty = project(tmp_path / "d", {"README.md": "nothing here\n"})

    assert [chatdev_completeness(p) for p in (compass, todo_app, password, empty)] == [0, 0, 1, 1]


async def test_a_program_that_raises_scores_executability_zero(tmp_path):
    crash = WORKING.replace("    return 0", "    raise RuntimeError('the counter broke')")
    scores, detail = await score_project(project(tmp_path, {"main.py": crash}), COUNTER)

    assert scores["runs_chatdev"] == 0 and scores["runs"] == 0
    assert "RuntimeError: the counter broke" in detail["runs"]
    assert scores["complete"] == 1


async def test_an_exit_without_traceback_passes_chatdev_but_not_ours(tmp_path):
    usage = WORKING.replace("    return 0", "    sys.exit('usage: main.py FILE')")
    scores, detail = await score_project(project(tmp_path, {"main.py": usage}), COUNTER)

    assert scores["runs_chatdev"] == 1 and scores["runs"] == 0
    assert "exit 1" in detail["runs"]


async def test_chatdev_runs_main_py_in_the_last_python_files_folder(tmp_path):
    root = project(tmp_path, {"main.py": "raise SystemExit(3)\n", "lib/helpers.py": "X = 1\n"})
    scores, detail = await score_project(root, COUNTER)

    assert detail["runs_chatdev"].startswith("in lib/: ") and "can't open file" in detail["runs_chatdev"]
    assert scores["runs_chatdev"] == 1 and scores["runs"] == 0


async def test_a_program_waiting_for_input_is_still_running_and_passes(tmp_path):
    root = project(tmp_path, {"main.py": "name = input('Your name: ')\nprint('hello', name)\n"})
    scores, detail = await score_project(root, COUNTER)

    assert scores["runs_chatdev"] == 1 and scores["runs"] == 1
    assert "still running after 5 s" in detail["runs"]


async def test_the_teams_tests_are_run_passed_or_failed(tmp_path):
    good = "from main import count\n\n\ndef test_count():\n    assert count('a b\\nc') == (3, 2)\n"
    bad = "from main import count\n\n\ndef test_count():\n    assert count('a b') == (3, 1)\n"
    passed, detail = await score_project(project(tmp_path / "a", {"main.py": WORKING, "tests/test_main.py": good}),
                                         COUNTER)
    failed, failed_detail = await score_project(
        project(tmp_path / "b", {"main.py": WORKING, "tests/test_main.py": bad}), COUNTER)

    assert passed["tests_pass"] == 1 and detail["tests"] == "passed" and detail["tests_summary"].startswith("1 passed")
    assert failed["tests_pass"] == 0 and failed_detail["tests"] == "failed"


TK = '''import tkinter as tk

root = tk.Tk()
root.title("Counter")
tk.Label(root, text="0 words").pack()
root.mainloop()
'''


@pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed (apt-get install xvfb)")
async def test_a_tk_program_runs_under_xvfb_until_the_deadline(tmp_path):
    scores, detail = await score_project(project(tmp_path, {"main.py": TK}), COUNTER)

    assert detail["display"].startswith(":")
    assert scores["runs_chatdev"] == 1 and scores["runs"] == 1
    assert "still running after 5 s" in detail["runs"]


async def test_without_a_display_a_gui_program_is_not_run_and_says_why(tmp_path):
    python = project_python()
    no_display = Display(None, "Xvfb is not installed (Debian: apt-get install xvfb): GUI programs were not run")

    run = await executability(project(tmp_path, {"main.py": TK}), python, no_display)

    assert run.score is None and "apt-get install xvfb" in run.detail


def test_consistency_ranks_the_matching_requirement_above_an_unrelated_one(tmp_path):
    root = project(tmp_path, {"main.py": WORKING})
    unrelated = "A music player that shuffles a playlist of songs and shows album covers."

    assert consistency(COUNTER, root) > consistency(unrelated, root) >= 0


def test_comments_and_docstrings_are_stripped_as_chatdev_does():
    code = 'main.py\n```Python\n# a comment\ndef f():\n    """Count the words."""\n    return 1\n```'

    stripped = chatdev_strip_comments(code)

    assert "# a comment" not in stripped and "Count the words" not in stripped
    assert 'def f():\n    """"""\n    return 1' in stripped
