"""The test chain: run the real tests, explain the failures, propose a fix that makes them pass."""

from __future__ import annotations

from daemon.agents.job import JobSpec
from daemon.events import EventKind
from tests.agents.conftest import snapshot_tree, write_tree

REPO = {
    "shop/__init__.py": "",
    "shop/cart.py": "def total(prices, discount=0.0):\n    return sum(prices) * discount\n",
    "tests/test_cart.py": ("from shop.cart import total\n\n\ndef test_total_without_discount():\n"
                           "    assert total([2, 3]) == 5\n"),
}

FIX = '''shop/cart.py
```python
<<<<<<< SEARCH
    return sum(prices) * discount
=======
    return sum(prices) * (1 - discount)
>>>>>>> REPLACE
```'''


async def test_test_chain_explains_the_real_failure_and_proposes_a_fix(fake_llm, make_runner, recorder, tmp_path):
    repo = write_tree(tmp_path / "repo", REPO)
    before = snapshot_tree(repo)
    fake_llm.add_rule("shop/cart.py:2 multiplies by the discount instead of by (1 - discount), so the total is 0.",
                      user="For each failure, say")
    fake_llm.add_rule(FIX, user="Fix the code so the tests pass.")

    outcome = await make_runner().run(JobSpec(chain="test", task="run the tests", workspace=repo))

    assert outcome.status == "succeeded", outcome.error
    explain = fake_llm.prompts_containing("For each failure, say")[0].last_user
    assert "test_total_without_discount" in explain and "assert 0.0 == 5" in explain
    fix = fake_llm.prompts_containing("Fix the code")[0].last_user
    assert "multiplies by the discount" in fix
    assert "return sum(prices) * discount" in fix  # the failing test's code under test, not only the test
    assert "return sum(prices) * discount" in explain
    assert outcome.conclusion.startswith("shop/cart.py:2 multiplies")
    assert [e.data.ok for e in recorder.of(EventKind.TOOL_RUN)] == [False, True]
    assert outcome.change is not None and outcome.change.files == ["shop/cart.py"]
    assert snapshot_tree(repo) == before


async def test_test_chain_with_passing_tests_asks_no_model(fake_llm, make_runner, tmp_path):
    repo = write_tree(tmp_path / "repo", {**REPO, "shop/cart.py": "def total(prices, discount=0.0):\n"
                                                                  "    return sum(prices) * (1 - discount)\n"})
    outcome = await make_runner().run(JobSpec(chain="test", task="run the tests", workspace=repo))
    assert outcome.status == "succeeded" and outcome.change is None
    assert outcome.conclusion.startswith("Tests PASSED: 1 passed")
    assert fake_llm.requests == []


async def test_tests_that_still_fail_with_no_change_proposed_end_the_job_failed(fake_llm, make_runner, tmp_path):
    repo = write_tree(tmp_path / "repo", REPO)
    fake_llm.add_rule("The discount is applied wrongly.", user="For each failure, say")
    fake_llm.add_rule("I cannot see what to change.", user="Fix the code so the tests pass.")  # no edit at all

    outcome = await make_runner().run(JobSpec(chain="test", task="run the tests", workspace=repo))

    assert outcome.status == "failed" and outcome.change is None
    assert outcome.error.startswith("the tests still fail and the team proposed no change (Tests FAILED: 1 failed")
    assert outcome.tests == "failed"


async def test_tests_that_cannot_run_here_are_said_plainly_and_nothing_is_attempted(fake_llm, make_runner, tmp_path):
    repo = write_tree(tmp_path / "repo", {**REPO, "tests/test_cart.py": (
        "import numpy_that_is_not_installed\nfrom shop.cart import total\n\n\ndef test_total():\n"
        "    assert total([2, 3]) == 5\n")})

    outcome = await make_runner().run(JobSpec(chain="test", task="run the tests", workspace=repo))

    assert outcome.status == "failed" and outcome.change is None
    assert outcome.error.startswith("the tests cannot run here: the tests import numpy_that_is_not_installed, which "
                                    "is not installed")
    assert fake_llm.requests == []  # no explanation, no fix attempt: no change to the code would help


async def test_a_file_too_large_for_the_context_is_shown_as_the_function_the_failure_reaches(
        fake_llm, make_runner, recorder, tmp_path):
    fillers = "".join(f"def filler_{i}(x):\n    return x + {i} * 7919\n\n\n" for i in range(1200))
    more = "".join(f"def more_{i}(x):\n    return x - {i} * 104729\n\n\n" for i in range(1200))
    big = fillers + "def total(prices, discount=0.0):\n    return sum(prices) * discount\n\n\n" + more
    repo = write_tree(tmp_path / "repo", {**REPO, "shop/cart.py": big})
    fake_llm.add_rule("shop/cart.py: total multiplies by the discount.", user="For each failure, say")
    fake_llm.add_rule(FIX, user="Fix the code so the tests pass.")

    outcome = await make_runner().run(JobSpec(chain="test", task="run the tests", workspace=repo))

    assert outcome.status == "succeeded", outcome.error
    fix = fake_llm.prompts_containing("Fix the code")[0].last_user
    line = big.splitlines().index("def total(prices, discount=0.0):") + 1
    assert (f"shop/cart.py is {len(big.splitlines())} lines, too large to show whole: only lines {line}-{line + 1}"
            in fix)
    assert "return sum(prices) * discount" in fix  # the function the traceback names, whole
    assert "7919" not in fix and "104729" not in fix  # and none of the others' code
    assert len(fix) < len(big) // 10
    assert [e.data.ok for e in recorder.of(EventKind.TOOL_RUN)] == [False, True]  # the fix from the excerpt works
    assert outcome.change is not None and outcome.change.files == ["shop/cart.py"]


async def test_a_file_shown_only_in_part_is_never_rewritten_whole(fake_llm, make_runner, tmp_path):
    """The function sent back as if it were the file goes back in its place; code that has no place
    in the file is refused, and the model asked for SEARCH/REPLACE blocks."""
    big = "".join(f"def filler_{i}(x):\n    return x + {i} * 7919\n\n\n" for i in range(2400))
    big += "def total(prices, discount=0.0):\n    return sum(prices) * discount\n"
    repo = write_tree(tmp_path / "repo", {**REPO, "shop/cart.py": big})
    fake_llm.add_rule("total multiplies by the discount.", user="For each failure, say")
    whole = "```python shop/cart.py\ndef total(prices, discount=0.0):\n    return sum(prices) * (1 - discount)\n```"
    fake_llm.add_rule(whole, user="Fix the code so the tests pass.")

    outcome = await make_runner().run(JobSpec(chain="test", task="run the tests", workspace=repo))

    assert outcome.status == "succeeded", outcome.error
    assert outcome.change is not None and "filler_2399" not in outcome.change.diff  # the 9,600 lines kept
    assert "+    return sum(prices) * (1 - discount)" in outcome.change.diff
    assert not fake_llm.prompts_containing("cannot be rewritten whole")

    fake_llm.reset()
    fake_llm.add_rule("total multiplies by the discount.", user="For each failure, say")
    fake_llm.add_rule("```python shop/cart.py\nprint(total([2, 3]))\n```", user="Fix the code so the tests pass.")
    fake_llm.add_rule(FIX, user="cannot be rewritten whole")
    outcome = await make_runner().run(JobSpec(chain="test", task="run the tests", workspace=repo))
    assert outcome.status == "succeeded", outcome.error
    assert fake_llm.prompts_containing("you were shown only part of shop/cart.py, so it cannot be rewritten whole")
    assert outcome.change is not None and "filler_2399" not in outcome.change.diff


def committed(root, files: dict[str, str], saved: dict[str, str]):
    """A git repository whose last commit holds ``files``, with ``saved`` written over it since."""
    import subprocess

    repo = write_tree(root, files)
    who = ["-c", "user.name=t", "-c", "user.email=t@t.invalid"]
    for argv in (["init", "-q"], ["add", "."], [*who, "commit", "-qm", "c"]):
        subprocess.run(["git", *argv], cwd=repo, check=True, capture_output=True)
    return write_tree(repo, saved)


GOOD_CART = "def total(prices, discount=0.0):\n    return sum(prices) * (1 - discount)\n"


async def test_tests_that_pass_on_the_last_commit_point_the_fix_at_the_lines_changed_since(
        fake_llm, make_runner, recorder, tmp_path):
    repo = committed(tmp_path / "repo", {**REPO, "shop/cart.py": GOOD_CART}, {"shop/cart.py": REPO["shop/cart.py"]})
    fake_llm.add_rule("shop/cart.py:2 multiplies by the discount.", user="For each failure, say")
    fake_llm.add_rule(FIX, user="Fix the code so the tests pass.")

    outcome = await make_runner().run(JobSpec(chain="test", task="run the tests", workspace=repo))

    assert outcome.status == "succeeded", outcome.error
    note = ("tests/test_cart.py::test_total_without_discount passes on the last commit; since it, the code changed at "
            "shop/cart.py line(s) 2: the fix belongs there.")
    for prompt in ("For each failure, say", "Fix the code so the tests pass."):
        text = fake_llm.prompts_containing(prompt)[0].last_user
        assert note in text and "(1 - discount)" not in text  # where it changed, never what it was
    runs = [e.data for e in recorder.of(EventKind.TOOL_RUN)]
    assert [r.tool for r in runs][:2] == ["tests", "since_commit"]  # the run first, then what it says of the commit
    assert not runs[1].ok and runs[1].summary == note.removesuffix(": the fix belongs there.")


async def test_tests_that_fail_on_the_last_commit_too_point_nowhere(fake_llm, make_runner, recorder, tmp_path):
    repo = committed(tmp_path / "repo", REPO, {"shop/cart.py": REPO["shop/cart.py"] + "\n\nTAX = 0.2\n"})
    fake_llm.add_rule("The discount is applied wrongly.", user="For each failure, say")
    fake_llm.add_rule(FIX, user="Fix the code so the tests pass.")

    outcome = await make_runner().run(JobSpec(chain="test", task="run the tests", workspace=repo))

    assert outcome.status == "succeeded", outcome.error
    assert "on the last commit" not in fake_llm.prompts_containing("For each failure, say")[0].last_user
    [since] = [e.data for e in recorder.of(EventKind.TOOL_RUN) if e.data.tool == "since_commit"]
    assert since.ok and since.summary == "the failing tests fail on the last commit too"


async def test_the_fix_may_not_change_the_tests_to_make_them_pass(fake_llm, make_runner, tmp_path):
    repo = write_tree(tmp_path / "repo", REPO)
    fake_llm.add_rule("The discount is applied wrongly.", user="For each failure, say")
    fake_llm.add_rule("tests/test_cart.py\n```python\n<<<<<<< SEARCH\n    assert total([2, 3]) == 5\n=======\n"
                      "    assert total([2, 3]) == 0\n>>>>>>> REPLACE\n```", user="Fix the code so the tests pass.")
    fake_llm.add_rule(FIX, user="is a test file, and this step fixes the code")

    outcome = await make_runner().run(JobSpec(chain="test", task="run the tests", workspace=repo))

    assert outcome.status == "succeeded", outcome.error
    assert outcome.change is not None and outcome.change.files == ["shop/cart.py"]  # the code, never the test
    assert fake_llm.prompts_containing("tests/test_cart.py is a test file, and this step fixes the code so that the "
                                       "tests pass, not the tests. Change the code.")
