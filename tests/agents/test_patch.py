"""troupe test's patch phase: the lines changed since the last commit, rewritten until the tests that broke pass."""

from __future__ import annotations

from daemon.agents.job import JobSpec
from daemon.agents.patch import Target, candidates
from daemon.events import EventKind
from tests.agents.test_test_chain import GOOD_CART, REPO, committed

BROKEN_CART = REPO["shop/cart.py"]


def cart_repo(tmp_path):
    return committed(tmp_path / "repo", {**REPO, "shop/cart.py": GOOD_CART}, {"shop/cart.py": BROKEN_CART})


async def test_the_changed_line_rewritten_until_the_broken_test_passes_is_the_change(
        fake_llm, make_runner, recorder, tmp_path):
    repo = cart_repo(tmp_path)
    before = (repo / "shop/cart.py").read_text()
    fake_llm.add_rule("```python\n    return sum(prices) * discount * 2\n```\n"
                      "```python\n    return sum(prices) * discount\n```", user="Rewrite line 2 so",
                      times=1)  # one wrong, one as it is
    fake_llm.add_rule("```python\n    return sum(prices) * discount * 2\n```\nor\n```python\n"
                      "return sum(prices) * (1 - discount)\n```", user="None of those makes the tests pass.")

    outcome = await make_runner().run(JobSpec(chain="test", task="run the tests", workspace=repo))

    assert outcome.status == "succeeded", outcome.error
    assert outcome.change is not None and outcome.change.files == ["shop/cart.py"]
    assert "+    return sum(prices) * (1 - discount)" in outcome.change.diff  # put back at the line's indentation
    asked = fake_llm.prompts_containing("Rewrite line 2 so")[0]
    assert asked.body["temperature"] == 0.7  # sampled: the phase's own temperature reaches the model server
    first = asked.last_user
    assert "   1| def total(prices, discount=0.0):\n   2|     return sum(prices) * discount" in first
    assert "(1 - discount)" not in first  # where it changed, never what it was
    second = fake_llm.prompts_containing("None of those makes the tests pass.")[0].last_user
    assert "test_total_without_discount" in second and "assert 0.0 == 5" in second  # what the first version did
    assert "One version is line 2 as it is now, and with it these tests fail." in second
    assert not fake_llm.prompts_containing("For each failure, say")  # the tests pass: nothing left to explain
    logs = [e.data.text for e in recorder.of(EventKind.LOG)]
    assert "phase 'patch': shop/cart.py line 2 rewritten: the 1 failing test(s) pass with version 2 (reply 2 of 3)" \
        in logs  # the repeated wrong version was not run again
    assert (repo / "shop/cart.py").read_text() == before  # a proposal; the user's tree is untouched


async def test_versions_that_never_pass_are_taken_back_and_the_fix_phase_goes_on(fake_llm, make_runner, recorder,
                                                                                 tmp_path):
    repo = cart_repo(tmp_path)
    fake_llm.add_rule("```python\n    return 0\n```", user="Rewrite line 2 so")
    fake_llm.add_rule("```python\n    return 0\n```", user="None of those makes the tests pass.")
    fake_llm.add_rule("```python\n    return sum(prices) * discount +\n```", user="You sent those already")
    fake_llm.add_rule("It multiplies by the discount.", user="For each failure, say")
    fake_llm.add_rule("I cannot see what to change.", user="Fix the code so the tests pass.")

    outcome = await make_runner().run(JobSpec(chain="test", task="run the tests", workspace=repo))

    assert outcome.status == "failed" and outcome.change is None
    assert fake_llm.prompts_containing("You sent those already, and the tests fail with them.")
    logs = [e.data.text for e in recorder.of(EventKind.LOG)]
    assert "phase 'patch': none of 1 version(s) of shop/cart.py line 2 made the failing tests pass" in logs
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


def test_each_version_is_put_in_place_of_the_changed_lines_or_of_the_shown_ones_it_starts_and_ends_with():
    texts, why = candidates(TARGET, SOURCE, "```python\n# Version 1: squared\n 8|     return math.pi * r ** 2\n```\n"
                                            "```python\ndef area(r):\n    if r < 0:\n        raise ValueError(r)\n"
                                            "    return math.pi * r ** 2\n```")
    one = SOURCE.replace("r * r", "r ** 2")
    assert (texts, why) == ([one], "")  # its comment and line number dropped; the definition sent back is the same
    nested = Target("geo.py", 7, 7, 4, 8)
    assert candidates(nested, SOURCE, "raise TypeError(r)") == (  # no fence, no indentation
        [SOURCE.replace("        raise ValueError(r)", "        raise TypeError(r)")], "")


def test_a_definition_sent_back_with_a_change_is_put_over_the_lines_it_runs_over_even_when_cut():
    from daemon.agents.accounting import Reply

    echo = ("```python\n   6|     if r < 0:\n   7|         raise ValueError(r)\n   8|     return math.pi * r ** 2\n"
            "\n\nLIMIT = 3\n```")  # numbered, from line 6, on past the definition
    assert candidates(TARGET, SOURCE, echo)[0] == [SOURCE.replace("r * r", "r ** 2")]
    cut = Reply("```python\ndef area(r):\n    if r <= 0:\n        raise Value", "length", 20)
    assert candidates(TARGET, SOURCE, cut)[0] == [SOURCE.replace("r < 0", "r <= 0")]  # its cut last line left out


def test_versions_sent_in_one_block_between_comments_are_each_tried():
    texts, _ = candidates(TARGET, SOURCE, "```python\n# Version 1\n    return math.pi * r ** 2\n\n"
                                          "# Version 2\n    return math.pi * r * 2\n```")
    assert texts[1:] == [SOURCE.replace("r * r", "r ** 2"), SOURCE.replace("r * r", "r * 2")]  # after the whole block


def test_versions_that_cannot_be_tried_say_why_and_the_others_are_kept():
    texts, why = candidates(TARGET, SOURCE, "```python\n    return math.pi * r * r\n```\n"
                                            "```python\n    return (r\n```\n```python\n    return r\n```")
    assert texts == [SOURCE.replace("math.pi * r * r", "r")]
    assert why.startswith("One version is line 8 as it is now, and with it these tests fail. With one version, geo.py "
                          "does not parse: ")
    assert candidates(TARGET, SOURCE, "I am not sure what ```this``` is.") == (
        [], "Your reply holds no ```python block.")
