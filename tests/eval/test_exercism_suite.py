"""The exercism suite (Aider's benchmark on Aider's protocol) through the daemon and the fake LLM:
the model sees the instructions and the stub, the harness runs the exercise's tests in the sandbox,
one retry gets their output — and no prompt of either row ever holds the test file's source."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from daemon.eval.exercism import DATA, ExercismSuite, published_for, run_exercise_tests
from daemon.eval.runner import run_suite
from daemon.eval.suite import ItemResult, SuiteError, load_suite
from tests.eval.conftest import last_user

LEAP = DATA / "exercises" / "leap"
RIGHT = (LEAP / ".meta" / "example.py").read_text()
WRONG = "def leap_year(year):\n    return year % 4 == 0\n"  # forgets the centuries
HANGS = "def leap_year(year):\n    while True:\n        pass\n"
TEST_SOURCE = (LEAP / "leap_test.py").read_text()
# lines of the test file that no test output shows (its header, imports, class line, a passing test's body)
SOURCE_ONLY = ("These tests are auto-generated", "from leap import (", "class LeapTest(unittest.TestCase)",
               "self.assertIs(leap_year(2015), False)")


def reply(text: str) -> str:
    return f"leap.py\n```python\n{text}```\n"


def every_prompt(llm) -> list[str]:  # type: ignore[no-untyped-def]
    return ["\n".join(str(m.get("content", "")) for m in r.messages) for r in llm.requests]


def assert_no_test_source(llm) -> None:  # type: ignore[no-untyped-def]
    prompts = every_prompt(llm)
    assert prompts, "the model was asked nothing"
    for prompt in prompts:
        assert TEST_SOURCE not in prompt
        for line in SOURCE_ONLY:
            assert line not in prompt, f"a prompt holds the test file's {line!r}"


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """A two-exercise copy of the set (leap, then reverse-string), with the README's published table."""
    root = tmp_path / "exercism"
    for name in ("leap", "reverse-string"):
        shutil.copytree(DATA / "exercises" / name, root / "exercises" / name)
    shutil.copy(DATA / "README.md", root / "README.md")
    return root


def test_the_shipped_set_is_the_89_exercises_in_name_order_with_instructions_and_a_stub() -> None:
    items = load_suite("exercism").items()
    assert len(items) == 89 and [i.id for i in items] == sorted(i.id for i in items)
    leap = next(i for i in items if i.id == "leap")
    assert list(leap.files) == ["leap.py"] and "def leap_year(year):" in leap.files["leap.py"]
    assert leap.data["instructions"].startswith("# Introduction") and "# Instructions" in leap.data["instructions"]
    assert "leap_test.py" in leap.data["tests"] and "leap_test.py" not in leap.files
    handling = next(i for i in items if i.id == "error-handling")
    assert set(handling.data["tests"]) == {"error_handling_test.py", "test_utils.py"}  # its tests' helper too


def test_a_path_that_is_not_an_exercism_set_is_refused_with_what_it_needs(tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match=r"no Exercism exercises at .*expected .*exercises"):
        load_suite("exercism", tmp_path / "nowhere")
    done = subprocess.run([sys.executable, "-m", "daemon.cli.main", "eval", "exercism", "--data", str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "no Exercism exercises at" in done.stderr and not done.stdout


async def test_a_right_solution_passes_a_wrong_one_fails_with_the_tests_output_and_a_hanging_one_times_out() -> None:
    item = next(i for i in ExercismSuite().items() if i.id == "leap")
    assert (await run_exercise_tests(item, RIGHT)).passed
    wrong = await run_exercise_tests(item, WRONG)
    assert not wrong.passed and not wrong.timed_out
    assert "test_year_divisible_by_100_not_divisible_by_400_in_common_year" in wrong.output
    assert "AssertionError: True is not False" in wrong.output
    assert len(wrong.output.splitlines()) <= 50 and "/tmp" not in wrong.output  # trimmed, the scratch path named
    hangs = await run_exercise_tests(item, HANGS, timeout=3)
    assert not hangs.passed and hangs.timed_out and hangs.output == "Tests timed out!"


async def test_the_bare_row_retries_once_with_the_test_output_and_counts_pass_at_1_and_2(llm, ctx, data) -> None:
    llm.add_rule(reply(RIGHT), user="See the testing errors above")
    llm.add_rule(reply(WRONG), user="leap_year")
    llm.add_rule("reverse_string.py\n```python\ndef reverse(text):\n    return text[::-1]\n```\n",
                 user="reverse_string.py")
    results = await run_suite(ExercismSuite(data), ctx, rows=("bare",))

    leap, reverse = results
    assert (leap.item, leap.solved, leap.scores) == ("leap", True, {"pass1": 0.0, "pass2": 1.0})
    assert (reverse.item, reverse.solved, reverse.scores) == ("reverse-string", True, {"pass1": 1.0, "pass2": 1.0})
    assert leap.calls == 2 and reverse.calls == 1, "one retry after a failure, none after a pass"
    first, retry = [p for p in every_prompt(llm) if "leap_year" in p]
    assert "Use the above instructions to modify the supplied files: leap.py" in first
    assert "A leap year (in the Gregorian calendar)" in first and "def leap_year(year):\n    pass" in first
    assert "test_year_divisible_by_100_not_divisible_by_400_in_common_year" in retry, "the failing test's name"
    assert "True is not False" in retry and "The tests are correct, don't try and change them." in retry
    assert WRONG in retry, "the retry shows the file as the first try left it"
    assert [t["passed"] for t in leap.detail["tries"]] == [False, True]
    assert_no_test_source(llm)


def team_reply(body: dict) -> str:
    """The reviewer finds nothing; every code phase writes leap.py: wrong, until the task holds the
    harness's test output (the second try), then right."""
    prompt = last_user(body)
    if "most important problem" in prompt:
        return "<INFO> Finished"
    return reply(RIGHT if "See the testing errors above" in prompt else WRONG)


async def test_the_team_row_runs_the_hidden_tests_in_its_own_loops_and_never_sees_their_source(llm, ctx, data) -> None:
    llm.add_rule(team_reply)
    results = await run_suite(ExercismSuite(data), ctx, rows=("team",), limit=1)

    [leap] = results
    assert leap.item == "leap" and leap.scores == {"pass1": 0.0, "pass2": 1.0} and leap.solved
    assert len(leap.jobs) == 2, "a change job per try"
    prompts = every_prompt(llm)
    fixes = [p for p in prompts if "After the change the tests fail" in p]
    assert fixes, "the first job's test loop ran the exercise's tests"
    assert "FAILED leap_test.py::LeapTest::test_year_divisible_by_100_not_divisible_by_400_in_common_year" in fixes[0]
    assert any("See the testing errors above" in p and "True is not False" in p for p in prompts)
    assert_no_test_source(llm)


def test_pass_rates_are_printed_beside_aiders_published_row_for_the_same_model() -> None:
    suite = ExercismSuite()
    results = [ItemResult("exercism", "a", "team", True, {"pass1": 1.0, "pass2": 1.0}),
               ItemResult("exercism", "b", "team", True, {"pass1": 0.0, "pass2": 1.0}),
               ItemResult("exercism", "a", "bare", False, {"pass1": 0.0, "pass2": 0.0}),
               ItemResult("exercism", "b", "bare", True, {"pass1": 0.0, "pass2": 1.0})]
    text, data = suite.reference("local/qwen2.5-coder-1.5b", results, ["team", "bare"])
    _, head, team, bare, aider = text.splitlines()
    assert head.split() == ["row", "pass@1", "pass@2", "items"]
    assert team.split() == ["team", "50.0", "%", "100.0", "%", "2"] and bare.split()[:5] == ["bare", "0.0", "%",
                                                                                           "50.0", "%"]
    assert aider.startswith("Aider, published (Qwen2.5-Coder 1.5B Instruct") and aider.split()[-5:] == [
        "28.6", "%", "31.6", "%", "133"]
    assert data["published"] == {"model": "Qwen2.5-Coder 1.5B Instruct", "pass1": 28.6, "pass2": 31.6, "items": 133}
    assert published_for("openai/Qwen2.5-Coder-0.5B-Instruct", suite.published).pass2 == 14.3  # type: ignore[union-attr]
    other, _ = suite.reference("openai/gpt-4o", results, ["team"])
    assert "no published row for openai/gpt-4o" in other.splitlines()[0]


def test_troupe_eval_exercism_prints_the_table_and_aiders_row_and_limit_takes_the_first(
        llm, ctx, eval_daemon, data, tmp_path) -> None:
    llm.add_rule(reply(RIGHT), user="leap_year")
    out = tmp_path / "exercism.json"
    model = "openai/qwen2.5-coder-0.5b-instruct"
    done = subprocess.run([sys.executable, "-m", "daemon.cli.main", "eval", "exercism", "--bare", "--limit", "1",
                           "--data", str(data), "--model", model, "--out", str(out)],
                          env={**eval_daemon.env, "TROUPE_AUTOSTART": "0"}, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[0].startswith(f"troupe eval exercism — {model} @ ") and "1 items" in lines[0]
    assert lines[1].split()[:4] == ["row", "solved", "pass1", "pass2"] and lines[2].split()[:4] == ["bare", "1/1", "1",
                                                                                                  "1"]
    assert lines[-2].split()[:5] == ["bare", "100.0", "%", "100.0", "%"]
    assert lines[-1].startswith("Aider, published (Qwen2.5-Coder 0.5B Instruct") and "14.3 %" in lines[-1]
    saved = json.loads(out.read_text())
    assert saved["items"] == ["leap"] and saved["reference"]["published"]["pass1"] == 14.3
    assert saved["reference"]["rows"]["bare"] == {"pass1": 100.0, "pass2": 100.0, "items": 1}
