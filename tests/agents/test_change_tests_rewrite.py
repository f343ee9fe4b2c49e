"""Failing tests drive a rewrite as failing docstring examples do: the functions the failures name
(no docstring needed) are written anew from the task; and a test loop's attempt that passes fewer
tests than the code it started from is undone, so the job offers the better code."""

from __future__ import annotations

from daemon.agents.job import JobSpec
from daemon.events import EventKind
from tests.agents.conftest import write_tree

STUB = "def encode(text):\n    pass\n\n\ndef decode(text):\n    pass\n"
TESTS = '''from cipher import decode, encode


def test_encode_shifts_each_letter():
    assert encode("abc") == "bcd"


def test_decode_shifts_back():
    assert decode("bcd") == "abc"
'''
RIGHT_ENCODE = 'def encode(text):\n    return "".join(chr(ord(c) + 1) for c in text)\n'
RIGHT_DECODE = 'def decode(text):\n    return "".join(chr(ord(c) - 1) for c in text)\n'
HALF = f"{RIGHT_ENCODE}\n\ndef decode(text):\n    return text\n"  # encode right, decode wrong
FIXED = f"{RIGHT_ENCODE}\n\n{RIGHT_DECODE}"
TASK = "Write encode and decode in cipher.py: a shift of one letter."


def whole(text: str) -> str:
    return f"```python\n{text}```"


def repo_with_tests(tmp_path):
    return write_tree(tmp_path / "repo", {"cipher.py": STUB, "test_cipher.py": TESTS})


def script(fake_llm, code_reply: str) -> None:
    fake_llm.add_rule(code_reply, user="Make the change.")
    fake_llm.add_rule("<INFO> Finished", user="Give the ONE most important problem")


async def test_a_function_the_failing_tests_name_is_written_anew(fake_llm, make_runner, tmp_path):
    script(fake_llm, whole(HALF))
    fake_llm.add_rule(whole(FIXED), user="Write each missing body anew")
    outcome = await make_runner().run(JobSpec(chain="change", task=TASK, workspace=repo_with_tests(tmp_path),
                                              files=["cipher.py"], test_command="python -m pytest -q"))
    assert outcome.status == "succeeded", outcome.error
    rewrite = fake_llm.prompts_containing("Write each missing body anew")[0].last_user
    assert "The tests fail:\n" in rewrite and "test_decode_shifts_back" in rewrite
    assert "cipher.py, without the body of decode:" in rewrite  # named by the failing test, no docstring needed
    assert "return text" not in rewrite and 'chr(ord(c) + 1)' in rewrite  # the passing encode is kept whole
    assert "so that the tests pass and each function does what the user asks" in rewrite
    assert outcome.tests == "passed"
    assert "chr(ord(c) - 1)" in outcome.change.diff


async def test_an_attempt_that_passes_fewer_tests_is_undone(fake_llm, make_runner, recorder, tmp_path):
    script(fake_llm, whole(HALF))
    worse = 'def encode(text):\n    return text\n\n\ndef decode(text):\n    return text.upper()\n'
    fake_llm.add_rule(whole(worse), user="Write each missing body anew")  # breaks encode too
    fake_llm.default_reply = whole(HALF)  # the test fix sends the code back as it was
    outcome = await make_runner().run(JobSpec(chain="change", task=TASK, workspace=repo_with_tests(tmp_path),
                                              files=["cipher.py"], test_command="python -m pytest -q"))
    assert outcome.status == "succeeded", outcome.error
    undone = [e.data.text for e in recorder.of(EventKind.LOG) if "so it is undone" in e.data.text]
    assert undone == ["loop 'rewrite': its attempt passed 0 test(s) against 1 before it, so it is undone"]
    assert len(fake_llm.prompts_containing("Write each missing body anew")) == 1  # the loop ends: same prompt next
    fix_prompt = fake_llm.prompts_containing("After the change the tests fail")[0].last_user
    assert "chr(ord(c) + 1)" in fix_prompt and "text.upper()" not in fix_prompt  # the better code
    assert outcome.tests == "failed" and outcome.test_report.passed == 1
    assert "chr(ord(c) + 1)" in outcome.change.diff and "text.upper()" not in outcome.change.diff


async def test_a_long_file_is_not_rewritten_from_the_failures(fake_llm, make_runner, recorder, tmp_path):
    padding = "".join(f"\n\ndef helper_{i}():\n    return {i}\n" for i in range(40))  # past ONE_FILE_LINES
    repo = write_tree(tmp_path / "repo", {"cipher.py": STUB + padding, "test_cipher.py": TESTS})
    script(fake_llm, whole(HALF + padding))
    fake_llm.default_reply = whole(HALF + padding)
    outcome = await make_runner().run(JobSpec(chain="change", task=TASK, workspace=repo, files=["cipher.py"],
                                              test_command="python -m pytest -q"))
    assert not fake_llm.prompts_containing("Write each missing body anew")
    [skip] = [e.data for e in recorder.of(EventKind.PHASE_FINISHED) if e.data.phase == "rewrite"]
    assert skip.skipped == "no docstring example fails, and no failing test names a function of a short file"
    assert outcome.tests == "failed"
