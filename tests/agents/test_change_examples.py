"""A file's docstring examples are tests: a change sees which fail before it starts, the test loops
run on them in a repository without tests, a function whose repair still fails is written anew
from its docstring, the result says whether they pass — and a change that changes nothing fails."""

from __future__ import annotations

from daemon.agents.job import JobSpec
from daemon.events import EventKind
from tests.agents.conftest import write_tree

CALC = '''def double(x):
    """Twice x.

    >>> double(2)
    4
    """
    return x * 2


def add(a, b):
    """The sum of a and b.

    >>> add(1, 2)
    3
    >>> add(0, 0)
    0
    """
    return a - b
'''
FIXED = CALC.replace("return a - b", "return a + b")
TASK = "The function add in calc.py does not do what its docstring says; fix it."
FAILING = "add(1, 2) returned -1, but the docstring expects 3"


def whole(text: str) -> str:
    return f"```python\n{text}```"


def script(fake_llm, code_reply: str) -> None:
    fake_llm.add_rule(code_reply, user="Make the change.")
    fake_llm.add_rule("<INFO> Finished", user="Give the ONE most important problem")


async def test_the_change_sees_the_failing_example_and_its_passing_examples_are_the_tests(
        fake_llm, make_runner, recorder, tmp_path):
    repo = write_tree(tmp_path / "repo", {"calc.py": CALC})
    script(fake_llm, whole(FIXED))
    outcome = await make_runner().run(JobSpec(chain="change", task=TASK, workspace=repo, files=["calc.py"]))
    assert outcome.status == "succeeded", outcome.error
    code_prompt = fake_llm.prompts_containing("Make the change.")[0].last_user
    assert f"The docstring examples were run, and these fail:\n- {FAILING}" in code_prompt
    assert "calc.py:\n```python\ndef double(x):" in code_prompt and "Repository map" not in code_prompt
    assert "List the files" not in code_prompt and "skipped" not in code_prompt  # nothing to plan: no plan
    assert recorder.phases_finished() == ["plan", "code"]  # the plan concluded as skipped; no review:
    [skip] = [e.data.reason for e in recorder.of(EventKind.LOG) if e.data.skipped == "review"]
    assert skip == "the checks that failed before the change pass now (before: 1 failed; now: 3 passed), and ruff " \
                   "finds nothing in calc.py"
    assert outcome.tests == "passed" and outcome.test_report.passed == 3
    assert outcome.change is not None and "+    return a + b" in outcome.change.diff


async def test_a_repair_that_still_fails_is_written_anew_from_the_docstring(fake_llm, make_runner, tmp_path):
    repo = write_tree(tmp_path / "repo", {"calc.py": CALC})
    script(fake_llm, whole(CALC.replace("return a - b", "return b - a")))  # a change, still wrong
    fake_llm.add_rule(whole(FIXED), user="Write each missing body anew")
    outcome = await make_runner().run(JobSpec(chain="change", task=TASK, workspace=repo, files=["calc.py"]))
    assert outcome.status == "succeeded", outcome.error
    rewrite = fake_llm.prompts_containing("Write each missing body anew")[0].last_user
    assert "add(1, 2) returned 1, but the docstring expects 3" in rewrite
    assert "calc.py, without the body of add:" in rewrite
    assert "return b - a" not in rewrite and "return x * 2" in rewrite  # only the failing function loses its body
    assert not fake_llm.prompts_containing("After the change the tests fail")  # the rewrite passed
    assert outcome.tests == "passed" and "+    return a + b" in outcome.change.diff


async def test_the_fix_loop_sees_the_code_and_the_result_says_the_examples_still_fail(
        fake_llm, make_runner, tmp_path):
    repo = write_tree(tmp_path / "repo", {"calc.py": CALC})
    wrong = CALC.replace("return a - b", "return a * b")
    script(fake_llm, whole(wrong))
    fake_llm.default_reply = whole(wrong.replace("a * b", "a * b  # checked"))
    outcome = await make_runner().run(JobSpec(chain="change", task=TASK, workspace=repo, files=["calc.py"]))
    assert outcome.status == "succeeded", outcome.error  # offered, with the truth about it
    fix_prompt = fake_llm.prompts_containing("After the change the tests fail")[0].last_user
    assert "add(1, 2) returned 2, but the docstring expects 3" in fix_prompt
    assert "def double(x):" in fix_prompt  # {code} is the code, not the conclusion of the phase named "code"
    assert outcome.tests == "failed" and outcome.conclusion.startswith("The tests still fail after the change.")


async def test_a_test_fix_that_keeps_the_code_ends_the_test_loop_and_says_why(fake_llm, make_runner, recorder,
                                                                              tmp_path):
    repo = write_tree(tmp_path / "repo", {"calc.py": CALC})
    wrong = CALC.replace("return a - b", "return a * b")
    script(fake_llm, whole(wrong))
    fake_llm.default_reply = whole(wrong)  # every later attempt sends the code back as it is
    outcome = await make_runner().run(JobSpec(chain="change", task=TASK, workspace=repo, files=["calc.py"]))
    assert outcome.status == "succeeded", outcome.error
    assert len(fake_llm.prompts_containing("After the change the tests fail")) == 1  # max_cycles is 2
    reasons = [e.data.reason for e in recorder.of(EventKind.LOG) if e.data.skipped == "test"]
    assert reasons == ["the last fix kept the code as it was, so the tests fail as before and the next cycle "
                       "would ask the same again"]
    assert outcome.tests == "failed"


async def test_a_change_that_changes_nothing_fails_and_says_so(fake_llm, make_runner, recorder, tmp_path):
    repo = write_tree(tmp_path / "repo", {"calc.py": "def add(a, b):\n    return a - b\n"})
    fake_llm.default_reply = whole("def add(a, b):\n    return a - b\n")  # always the file as it was
    fake_llm.add_rule("<INFO> Finished", user="Give the ONE most important problem")
    outcome = await make_runner().run(JobSpec(chain="change", task="add() subtracts; fix it", workspace=repo,
                                              files=["calc.py"]))
    assert outcome.status == "failed" and outcome.change is None
    assert outcome.error.startswith("no change: the team's edits left every file as it was")
    errors = [e.data.text for e in recorder.of(EventKind.LOG) if e.data.level == "error"]
    assert errors == [outcome.error]


async def test_a_whole_file_that_is_not_python_is_sent_back(fake_llm, make_runner, tmp_path):
    repo = write_tree(tmp_path / "repo", {"calc.py": CALC})
    fake_llm.enqueue(whole("calc.py and ends with\n" + FIXED), whole(FIXED))
    fake_llm.add_rule("<INFO> Finished", user="Give the ONE most important problem")
    outcome = await make_runner().run(JobSpec(chain="change", task=TASK, workspace=repo, files=["calc.py"]))
    assert outcome.status == "succeeded", outcome.error
    assert fake_llm.requests[1].last_user.startswith("Your edits were not applied. your calc.py is not valid Python "
                                                     "(line 1: invalid syntax)")
    assert outcome.tests == "passed"


async def test_a_rewrite_that_leaves_the_function_without_code_is_sent_back(fake_llm, make_runner, tmp_path):
    repo = write_tree(tmp_path / "repo", {"calc.py": CALC})
    script(fake_llm, whole(CALC.replace("return a - b", "return b - a")))
    fake_llm.add_rule(whole(CALC.replace("    return a - b\n", "")), user="Write each missing body anew", times=1)
    fake_llm.default_reply = whole(FIXED)  # the answer to the correction
    outcome = await make_runner().run(JobSpec(chain="change", task=TASK, workspace=repo, files=["calc.py"]))
    assert outcome.status == "succeeded", outcome.error
    corrections = [r.last_user for r in fake_llm.requests if r.last_user.startswith("Your edits were not applied")]
    assert corrections == ["Your edits were not applied. your calc.py leaves add without code: only a docstring (or "
                           "pass, ...). Write the code of its body, so it does what its docstring says, and send the "
                           "whole calc.py again."]
    assert outcome.tests == "passed"


async def test_a_fix_attempt_that_cannot_be_used_ends_its_loop_not_the_job(fake_llm, make_runner, tmp_path):
    repo = write_tree(tmp_path / "repo", {"calc.py": CALC})
    script(fake_llm, whole(CALC.replace("return a - b", "return b - a")))  # a change, still wrong
    fake_llm.add_rule("src/app.py\n```python\nprint('hi')\n```", user="Write each missing body anew")  # never usable
    fake_llm.default_reply = "src/app.py\n```python\nprint('hi')\n```"
    outcome = await make_runner().run(JobSpec(chain="change", task=TASK, workspace=repo, files=["calc.py"]))
    assert outcome.status == "succeeded", outcome.error  # the change so far is offered, with the truth about it
    assert any(w.startswith("loop 'rewrite' stopped: phase 'rewrite': the programmer's edits could not be used")
               for w in outcome.warnings), outcome.warnings
    assert outcome.tests == "failed" and "+    return b - a" in outcome.change.diff
