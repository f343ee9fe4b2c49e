"""What the tests say after a change reaches the result: a repository without tests skips the
test loop (and says why), a change that leaves tests failing says so, and a fix mends the files
that exist instead of inventing new ones."""

from __future__ import annotations

import itertools

from daemon.agents.job import JobSpec
from daemon.events import EventKind
from tests.agents.conftest import write_tree

BUGGY = "def gcd(a, b):\n    while b:\n        a, b = b, a % b\n    return -a\n"
FIXED = "def gcd(a, b):\n    while b:\n        a, b = b, a % b\n    return abs(a)\n"
TEST = "from gcd import gcd\n\n\ndef test_gcd():\n    assert gcd(12, 18) == 6\n"
TASK = "gcd(a, b) returns wrong results; fix it"
FIX_PROMPT = "After the change the tests fail"


def whole(path: str, text: str) -> str:
    return f"{path}\n```python\n{text}```"


def script(fake_llm, code_reply: str) -> None:
    fake_llm.add_rule("<INFO> gcd.py: return abs(a) instead of -a", user="List the files to change")
    fake_llm.add_rule(code_reply, user="Make the change.")
    fake_llm.add_rule("<INFO> Finished", user="Give the ONE most important problem")


async def test_without_tests_the_test_loop_is_skipped_with_the_reason(fake_llm, make_runner, recorder, tmp_path):
    repo = write_tree(tmp_path / "repo", {"gcd.py": BUGGY})
    script(fake_llm, whole("gcd.py", FIXED))
    outcome = await make_runner().run(JobSpec(chain="change", task=TASK, workspace=repo))
    assert outcome.status == "succeeded", outcome.error
    assert recorder.phases_finished() == ["plan", "code", "review_comment"]
    assert not fake_llm.prompts_containing(FIX_PROMPT)
    skipped = [e.data for e in recorder.of(EventKind.LOG) if e.data.skipped]
    assert [s.skipped for s in skipped] == ["rewrite", "test"]  # the docstring rewrite, then the fix loop
    assert skipped[1].text == "loop 'test' skipped: nothing to run"
    assert outcome.tests == "not run" and outcome.summary()["tests"] == "not run"
    assert outcome.conclusion.startswith("No tests ran to check the change. Nothing to run: no tests")
    assert outcome.change is not None and outcome.change.files == ["gcd.py"]


async def test_a_change_that_leaves_the_tests_failing_says_so(fake_llm, make_runner, recorder, tmp_path):
    repo = write_tree(tmp_path / "repo", {"gcd.py": BUGGY, "test_gcd.py": TEST})
    script(fake_llm, whole("gcd.py", BUGGY.replace("-a", "-a  # fixed")))
    tries = itertools.count(1)  # each fix changes the file, but none fixes it
    fake_llm.add_rule(lambda body: whole("gcd.py", BUGGY.replace("-a", f"-a  # try {next(tries)}")), user=FIX_PROMPT)
    outcome = await make_runner().run(JobSpec(chain="change", task=TASK, workspace=repo))
    assert outcome.status == "succeeded", outcome.error  # the change is still offered, with the truth about it
    assert outcome.tests == "failed" and outcome.summary()["tests"] == "failed"
    assert outcome.conclusion.startswith("The tests still fail after the change. Tests FAILED: 1 failed")
    assert outcome.test_report.ok is False and outcome.test_report.ran is True
    assert "loop 'test': the tests still fail after 2 cycle(s)" in outcome.warnings
    warned = [e.data.text for e in recorder.of(EventKind.LOG) if e.data.level == "warning"]
    assert "loop 'test': the tests still fail after 2 cycle(s)" in warned


async def test_a_fix_may_not_invent_files(fake_llm, make_runner, tmp_path):
    repo = write_tree(tmp_path / "repo", {"gcd.py": BUGGY, "test_gcd.py": TEST})
    script(fake_llm, whole("gcd.py", BUGGY.replace("-a", "-a  # looked at")))
    # the first fix: gcd written anew, as the failing test names it (then the test loop, were it still failing)
    fake_llm.add_rule(whole("src/app/main.py", "from app.gcd import gcd\n"), user="Write each missing body anew",
                      times=1)
    fake_llm.enqueue(whole("gcd.py", FIXED))  # the answer to the correction
    outcome = await make_runner().run(JobSpec(chain="change", task=TASK, workspace=repo))
    assert outcome.status == "succeeded", outcome.error
    correction = [r.last_user for r in fake_llm.requests if r.last_user.startswith("Your edits were not applied")]
    assert correction == ["Your edits were not applied. src/app/main.py does not exist, and this step may only "
                          "change existing files (gcd.py, test_gcd.py). Fix the problem in those files."]
    assert outcome.tests == "passed" and outcome.change.files == ["gcd.py"]
