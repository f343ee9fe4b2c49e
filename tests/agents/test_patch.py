"""troupe test's patch phase: the lines changed since the last commit, rewritten until the tests that broke pass."""

from __future__ import annotations

from daemon.agents.job import JobSpec
from daemon.agents.patch import Target, candidate
from daemon.events import EventKind
from tests.agents.test_test_chain import GOOD_CART, REPO, committed

BROKEN_CART = REPO["shop/cart.py"]


def cart_repo(tmp_path):
    return committed(tmp_path / "repo", {**REPO, "shop/cart.py": GOOD_CART}, {"shop/cart.py": BROKEN_CART})


async def test_the_changed_line_rewritten_until_the_broken_test_passes_is_the_change(
        fake_llm, make_runner, recorder, tmp_path):
    repo = cart_repo(tmp_path)
    before = (repo / "shop/cart.py").read_text()
    fake_llm.add_rule("```python\n    return sum(prices) * discount * 2\n```", user="Rewrite line 2 so", times=1)
    fake_llm.add_rule("```python\nreturn sum(prices) * (1 - discount)\n```", user="With that, the tests still fail")

    outcome = await make_runner().run(JobSpec(chain="test", task="run the tests", workspace=repo))

    assert outcome.status == "succeeded", outcome.error
    assert outcome.change is not None and outcome.change.files == ["shop/cart.py"]
    assert "+    return sum(prices) * (1 - discount)" in outcome.change.diff  # put back at the line's indentation
    first = fake_llm.prompts_containing("Rewrite line 2 so")[0].last_user
    assert "   1| def total(prices, discount=0.0):\n   2|     return sum(prices) * discount" in first
    assert "(1 - discount)" not in first  # where it changed, never what it was
    second = fake_llm.prompts_containing("With that, the tests still fail")[0].last_user
    assert "test_total_without_discount" in second and "assert 0.0 == 5" in second  # what the first try did
    assert not fake_llm.prompts_containing("For each failure, say")  # the tests pass: nothing left to explain
    logs = [e.data.text for e in recorder.of(EventKind.LOG)]
    assert "phase 'patch': shop/cart.py line 2 rewritten: the 1 failing test(s) pass with it (try 2 of 4)" in logs
    assert (repo / "shop/cart.py").read_text() == before  # a proposal; the user's tree is untouched


async def test_rewrites_that_never_pass_are_taken_back_and_the_fix_phase_goes_on(fake_llm, make_runner, recorder,
                                                                                 tmp_path):
    repo = cart_repo(tmp_path)
    fake_llm.add_rule("```python\n    return sum(prices) * discount\n```", user="Rewrite line 2 so")  # as it is
    fake_llm.add_rule("```python\n    return sum(prices) * discount +\n```", user="That is line 2 as it is now")
    fake_llm.add_rule("```python\n    return 0\n```", user="does not parse")
    fake_llm.add_rule("```python\n    return 1\n```", user="With that, the tests still fail")
    fake_llm.add_rule("It multiplies by the discount.", user="For each failure, say")
    fake_llm.add_rule("I cannot see what to change.", user="Fix the code so the tests pass.")

    outcome = await make_runner().run(JobSpec(chain="test", task="run the tests", workspace=repo))

    assert outcome.status == "failed" and outcome.change is None
    logs = [e.data.text for e in recorder.of(EventKind.LOG)]
    assert "phase 'patch': no rewrite of shop/cart.py line(s) 2 made the failing tests pass in 4 tries" in logs
    assert fake_llm.prompts_containing("For each failure, say")  # the explain and fix phases still had their turn
    assert "return sum(prices) * discount\n" in fake_llm.prompts_containing("For each failure, say")[0].last_user


async def test_no_patch_without_a_change_since_the_last_commit_that_the_tests_point_at(fake_llm, make_runner,
                                                                                     tmp_path):
    repo = committed(tmp_path / "repo", REPO, {"shop/cart.py": BROKEN_CART + "\n\nTAX = 0.2\n"})  # fails there too
    fake_llm.add_rule("It multiplies by the discount.", user="For each failure, say")
    fake_llm.add_rule("I cannot see what to change.", user="Fix the code so the tests pass.")
    await make_runner().run(JobSpec(chain="test", task="run the tests", workspace=repo))
    assert not fake_llm.prompts_containing("Rewrite line")


SOURCE = ("import math\n\n\n@cached\ndef area(r):\n    if r < 0:\n        raise ValueError(r)\n"
          "    return math.pi * r * r\n\n\nLIMIT = 3\n")
TARGET = Target("geo.py", 8, 8, 4, 8)


def test_a_reply_is_put_in_place_of_the_changed_lines_or_of_the_shown_ones_it_starts_and_ends_with():
    one, why = candidate(TARGET, SOURCE, "```python\n 8|     return math.pi * r ** 2\n```")
    assert why == "" and one == SOURCE.replace("r * r", "r ** 2")  # its line number dropped
    whole, _ = candidate(TARGET, SOURCE, "```python\ndef area(r):\n    if r < 0:\n        raise ValueError(r)\n"
                                         "    return math.pi * r ** 2\n```")
    assert whole == one  # the definition sent back changed: it replaces lines 5-8, indented as they are
    nested = Target("geo.py", 7, 7, 4, 8)
    deeper, _ = candidate(nested, SOURCE, "raise TypeError(r)")  # no fence, no indentation
    assert deeper == SOURCE.replace("        raise ValueError(r)", "        raise TypeError(r)")


def test_a_reply_that_cannot_be_tried_says_why():
    assert candidate(TARGET, SOURCE, "```python\n    return math.pi * r * r\n```") == (
        None, "That is line 8 as it is now, and with it these tests fail. Change line 8.")
    text, why = candidate(TARGET, SOURCE, "```python\n    return math.pi * (r\n```")
    assert text is None and why.startswith("With that, geo.py does not parse: ")
    assert candidate(TARGET, SOURCE, "```python\n```")[1] == (
        "Your reply holds no code. Send the new line 8 in one ```python block.")
