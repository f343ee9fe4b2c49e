"""Review loops send what changed and stop when cheap signals decide (``skip_cycle_when``): a later
review sees the diff since its last comment, a fix sees the files its comment names and a map of
the rest, and a cycle whose comment was addressed (lint clean, tests passing) or whose fix kept the
code costs no model turn; the transcript says why."""

from __future__ import annotations

from pathlib import Path

import pytest

from daemon.agents.job import JobSpec
from daemon.agents.loader import ChainError, load_chain_file
from daemon.agents.model import ChainSet
from daemon.agents.scope import third_party_imports
from daemon.events import EventKind

CHAIN = '''
name = "cycles"
description = "coding, then a review loop"
start = "empty"

[[steps]]
phase = "coding"
instructor = "cto"
assistant = "programmer"
produces = "code"
max_questions = 0
template = """Task: {task}

{edit_format}"""

[[steps]]
loop = "review"
until = "finished"
max_cycles = 2
%s

[[steps.phases]]
phase = "review_comment"
instructor = "programmer"
assistant = "reviewer"
reflect = false
max_questions = 0
template = """{code}

Give the ONE most important problem. If nothing is wrong, reply only: <INFO> Finished"""

[[steps.phases]]
phase = "review_modify"
instructor = "reviewer"
assistant = "programmer"
produces = "code"
max_questions = 0
template = """{code}

Review comment: {review_comment}

Fix the code as the comment asks.

{edit_format}"""
'''
UTIL = 'def double(x):\n    """Twice x."""\n    return 2 * x  # UTIL BODY\n'
APP = "import util\n\n\ndef f(x):\n    return util.double(x)\n"
CHECK = "import app\n\nassert app.f(2) == 4\n"
CODING = "\n\n".join(f"```python {name}\n{text}```" for name, text in
                     [("app.py", APP), ("util.py", UTIL), ("check.py", CHECK)])
COMMENT = "app.py: name what f does."
COMMENT_ASK = "Give the ONE most important problem"


def runner_for(make_runner, tmp_path: Path, options: str = ""):
    path = tmp_path / "cycles.toml"
    path.write_text(CHAIN % options)
    chain = load_chain_file(path)
    return make_runner(chains=ChainSet({chain.name: chain}, chain.roles))


def fixed(app: str) -> str:
    return f"```python app.py\n{app}```"


async def run(runner) -> object:
    outcome = await runner.run(JobSpec(chain="cycles", task="double a number", test_command="python check.py"))
    assert outcome.status == "succeeded", outcome.error
    return outcome


def skips(recorder) -> list[str]:
    return [e.data.reason for e in recorder.of(EventKind.LOG) if e.data.skipped is not None]


async def test_a_later_review_sees_the_diff_since_its_comment_and_a_fix_sees_what_the_comment_names(
        fake_llm, make_runner, recorder, tmp_path):
    fake_llm.add_rule(CODING, user="Task:")
    fake_llm.add_rule(COMMENT, user=COMMENT_ASK, times=1)
    fake_llm.add_rule("<INFO> Finished", user=COMMENT_ASK)
    # the fix leaves an unused import: ruff is not clean, so the reviewer looks again
    fake_llm.add_rule(fixed("import os\n\nimport util\n\n\ndef f(x):\n    return util.double(x)  # twice x\n"),
                      user="Fix the code")
    await run(runner_for(make_runner, tmp_path))

    fix = fake_llm.prompts_containing("Fix the code")[0].last_user
    assert "def f(x):" in fix and "UTIL BODY" not in fix  # the file the comment names, whole
    assert "util.py (3 lines)" in fix and "def double(x):" in fix  # the rest as a map
    second = fake_llm.prompts_containing(COMMENT_ASK)[1].last_user
    assert "Changed since your last comment" in second and "+import os" in second
    assert "UTIL BODY" not in second and "Unchanged since you last saw them: " in second
    assert len(fake_llm.prompts_containing(COMMENT_ASK)) == 2 and not skips(recorder)


async def test_a_cycle_whose_comment_was_addressed_with_lint_clean_and_tests_passing_costs_no_review(
        fake_llm, make_runner, recorder, tmp_path):
    fake_llm.add_rule(CODING, user="Task:")
    fake_llm.add_rule(COMMENT, user=COMMENT_ASK)
    fake_llm.add_rule(fixed('import util\n\n\ndef f(x):\n    """Twice x."""\n    return util.double(x)\n'),
                      user="Fix the code")
    await run(runner_for(make_runner, tmp_path))

    assert len(fake_llm.prompts_containing(COMMENT_ASK)) == 1
    [reason] = skips(recorder)
    assert "comment on app.py was addressed" in reason and "the tests pass" in reason


async def test_a_fix_that_keeps_the_code_is_not_sent_back_and_ends_the_review(
        fake_llm, make_runner, recorder, tmp_path):
    fake_llm.add_rule(CODING, user="Task:")
    fake_llm.add_rule(COMMENT, user=COMMENT_ASK)
    fake_llm.add_rule(fixed(APP), user="Fix the code")
    outcome = await run(runner_for(make_runner, tmp_path))

    assert len(fake_llm.prompts_containing("Fix the code")) == 1  # no "nothing changed" round trip
    assert len(fake_llm.prompts_containing(COMMENT_ASK)) == 1
    assert "as the reviewer last saw it" in skips(recorder)[0]
    assert any("kept the code" in e.data.text for e in recorder.of(EventKind.LOG))
    assert not outcome.warnings


async def test_a_chain_can_turn_the_skip_rules_off(fake_llm, make_runner, recorder, tmp_path):
    fake_llm.add_rule(CODING, user="Task:")
    fake_llm.add_rule(COMMENT, user=COMMENT_ASK)
    fake_llm.add_rule(fixed(APP), user="Fix the code")
    await run(runner_for(make_runner, tmp_path, "skip_cycle_when = []"))

    assert len(fake_llm.prompts_containing(COMMENT_ASK)) == 2 and not skips(recorder)


def test_skip_rules_belong_to_their_kind_of_loop(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(CHAIN % 'skip_cycle_when = ["unchanged", "someday"]')
    with pytest.raises(ChainError, match="someday"):
        load_chain_file(path)
    test_loop = CHAIN.replace('until = "finished"', 'until = "tests_pass"')
    path.write_text(test_loop % 'skip_cycle_when = ["unchanged", "addressed"]')
    with pytest.raises(ChainError, match=r"skip_cycle_when of an until = 'tests_pass' loop takes 'unchanged' "
                                         r"\(got 'addressed'\)"):
        load_chain_file(path)
    path.write_text(test_loop % 'skip_cycle_when = ["unchanged"]')
    assert load_chain_file(path).steps[1].skip_cycle_when == ("unchanged",)
    path.write_text(test_loop % "")
    assert load_chain_file(path).steps[1].skip_cycle_when == ()  # a test loop's cycles all run unless it says


async def test_a_new_program_whose_checks_pass_gets_no_first_review_and_the_transcript_says_why(
        fake_llm, make_runner, recorder, tmp_path):
    """``checks_pass`` on a new program (a chain that starts empty): it runs its check clean and
    ruff finds nothing, so the reviewer is not asked; with an unused import it is."""
    fake_llm.add_rule(CODING, user="Task:")
    fake_llm.add_rule("<INFO> Finished", user=COMMENT_ASK)
    await run(runner_for(make_runner, tmp_path, 'skip_cycle_when = ["checks_pass", "unchanged"]'))
    assert not fake_llm.prompts_containing(COMMENT_ASK)
    (reason,) = skips(recorder)
    assert reason.startswith("the new program's checks pass (") and "ruff finds nothing in app.py, check.py, util.py" \
        in reason

    fake_llm.reset()
    fake_llm.add_rule(CODING.replace("import util\n", "import os\nimport util\n", 1), user="Task:")
    fake_llm.add_rule("<INFO> Finished", user=COMMENT_ASK)
    await run(runner_for(make_runner, tmp_path, 'skip_cycle_when = ["checks_pass", "unchanged"]'))
    assert len(fake_llm.prompts_containing(COMMENT_ASK)) == 1


async def test_no_first_review_is_skipped_in_a_repository_when_nothing_failed_before(fake_llm, make_runner,
                                                                                     recorder, tmp_path):
    """``checks_pass`` in an existing repository needs evidence of a problem that the change
    removed: a change whose check passes, where nothing failed before, is still reviewed."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "README.md").write_text("# doubling\n")
    path = tmp_path / "cycles.toml"
    path.write_text((CHAIN % 'skip_cycle_when = ["checks_pass", "unchanged"]').replace('start = "empty"',
                                                                                       'start = "repository"'))
    chain = load_chain_file(path)
    fake_llm.add_rule(CODING, user="Task:")
    fake_llm.add_rule("<INFO> Finished", user=COMMENT_ASK)
    outcome = await make_runner(chains=ChainSet({chain.name: chain}, chain.roles)).run(
        JobSpec(chain="cycles", task="double a number", test_command="python check.py", workspace=repo))
    assert outcome.status == "succeeded", outcome.error
    assert len(fake_llm.prompts_containing(COMMENT_ASK)) == 1 and not skips(recorder)


def test_requirements_see_only_imports_from_outside_the_standard_library_and_the_project():
    files = {"app.py": "import os\nimport requests\nfrom yaml import safe_load\nimport util\nfrom . import x\n",
             "util.py": "import json\n"}
    assert third_party_imports(files) == "requests\nyaml"
    assert third_party_imports({"util.py": "import json\n"}) == ""
