"""Every model call has a completion-token cap; a reply cut there, a reply that loops, an empty
reply or a reply of the wrong shape is never taken as a success — it is sent back with the
precise reason, trimmed, or fails the job clearly."""

from __future__ import annotations

import re
import time

import pytest

from daemon.agents.job import JobSpec
from daemon.agents.loader import load_chains
from daemon.agents.model import DEFAULT_MAX_TOKENS, Produces
from daemon.agents.timing import MAX_SECONDS, MIN_SECONDS, TOOL_SECONDS, speed_limit
from daemon.config import ModelSettings, Settings
from daemon.events import EventKind
from tests.agents.conftest import write_tree
from tests.agents.test_bad_output import script_change
from tests.agents.test_change_chain import CODE, REPO, TASK
from tests.agents.test_review_chain import CALC

REVIEWER = "You are a code reviewer"
CALC_ONLY = {"calc.py": "def add(a, b):\n    return a + b\n"}


async def test_every_phase_call_carries_its_cap(fake_llm, make_runner, tmp_path):
    repo = write_tree(tmp_path / "repo", REPO)
    script_change(fake_llm, CODE)
    outcome = await make_runner().run(JobSpec(chain="change", task=TASK, workspace=repo))
    assert outcome.status == "succeeded", outcome.error
    caps = [r.body.get("max_tokens") for r in fake_llm.requests]
    assert caps == [DEFAULT_MAX_TOKENS[Produces.DECISION], DEFAULT_MAX_TOKENS[Produces.CODE],
                    DEFAULT_MAX_TOKENS[Produces.DECISION]]  # plan, code, review_comment
    write_tree(repo, {"calc.py": CALC})
    fake_llm.reset()
    fake_llm.add_rule("NONE", system=REVIEWER)
    await make_runner().run(JobSpec(chain="review", task="review", workspace=repo, files=["calc.py"]))
    assert [r.body.get("max_tokens") for r in fake_llm.requests] == [320]  # review.toml's own max_tokens


async def test_code_cut_at_the_cap_is_not_applied_but_asked_again_shorter(fake_llm, make_runner, recorder, tmp_path):
    repo = write_tree(tmp_path / "repo", REPO)
    huge = "pkg_a/greet.py\n```python\n" + "\n".join(f"value_{i} = {i * 7}" for i in range(3000)) + "\n```"
    script_change(fake_llm, huge, CODE)
    outcome = await make_runner().run(JobSpec(chain="change", task=TASK, workspace=repo))
    assert outcome.status == "succeeded", outcome.error
    correction = fake_llm.requests[2].last_user
    assert correction.startswith("Your edits were not applied. Your reply was cut off at the limit of 3072 tokens")
    assert "value_" not in outcome.change.diff
    cut = [e for e in recorder.of(EventKind.USAGE) if e.data.finish_reason == "length"]
    assert len(cut) == 1 and cut[0].data.max_tokens == 3072
    assert any("hit its cap of 3072 tokens" in e.data.text for e in recorder.of(EventKind.LOG))


async def test_a_reply_that_loops_is_stopped_and_keeps_what_came_before(fake_llm, make_runner, recorder, tmp_path):
    repo = write_tree(tmp_path / "repo", {"calc.py": CALC})
    block = "LINE: 5\nBUG: divide() fails when b is 0\nFIX: return a / b if b else 0.0\n\n"
    fake_llm.add_rule(block * 60, system=REVIEWER)  # 60 copies: 3,600 characters, cut after the first
    outcome = await make_runner().run(JobSpec(chain="review", task="review", workspace=repo, files=["calc.py"]))
    assert outcome.status == "succeeded", outcome.error
    found = [(f.start_line, f.message) for f in outcome.findings if f.source == "reviewer"]
    assert found == [(5, "divide() fails when b is 0")]
    usage = recorder.of(EventKind.USAGE)[0].data
    assert usage.finish_reason == "repetition"
    assert usage.completion_tokens < len(block * 60) // 4  # the stream was left before its end
    assert any("repeated itself" in e.data.text for e in recorder.of(EventKind.LOG))


async def test_findings_cut_at_the_cap_keep_only_the_complete_ones(fake_llm, make_runner, tmp_path):
    repo = write_tree(tmp_path / "repo", {"calc.py": CALC})
    first = "LINE: 5\nBUG: divide() fails when b is 0\nFIX: return a / b if b else 0.0\n\n"
    rest = "".join(f"LINE: 9\nBUG: average() of an empty list, case {i}, raises ZeroDivisionError\n\n"
                   for i in range(200))
    fake_llm.add_rule(first + rest, system=REVIEWER)
    outcome = await make_runner().run(JobSpec(chain="review", task="review", workspace=repo, files=["calc.py"]))
    assert outcome.status == "succeeded", outcome.error
    assert any("its last, unfinished finding was left out" in w for w in outcome.warnings)
    lines = [f.start_line for f in outcome.findings if f.source == "reviewer"]
    assert lines[0] == 5 and 1 < len(lines) < 200


async def test_a_null_reply_is_asked_again(fake_llm, make_runner, recorder, tmp_path):
    repo = write_tree(tmp_path / "repo", CALC_ONLY)
    fake_llm.fail_next("null_content")
    fake_llm.enqueue("add returns the sum of a and b, a + b (calc.py:2).")
    outcome = await make_runner().run(JobSpec(chain="ask", task="What does add return?", workspace=repo))
    assert outcome.status == "succeeded", outcome.error
    assert outcome.conclusion == "add returns the sum of a and b, a + b (calc.py:2)."
    assert any("empty reply; asking again (1/2)" in e.data.text for e in recorder.of(EventKind.LOG))


async def test_a_model_that_only_returns_nothing_fails_the_job_clearly(fake_llm, make_runner, tmp_path):
    repo = write_tree(tmp_path / "repo", CALC_ONLY)
    fake_llm.fail_next("null_content", times=3)
    outcome = await make_runner().run(JobSpec(chain="ask", task="What does add return?", workspace=repo))
    assert outcome.status == "failed" and outcome.conclusion == ""
    assert "returned an empty reply (no text) 3 times in a row" in outcome.error


async def test_an_answer_that_is_only_a_copied_citation_is_sent_back(fake_llm, make_runner, tmp_path):
    repo = write_tree(tmp_path / "repo", CALC_ONLY)
    fake_llm.enqueue("`calc.py:13`", "add returns a + b, the sum of its two arguments (calc.py:2).")
    outcome = await make_runner().run(JobSpec(chain="ask", task="What does the function add in calc.py return? "
                                              "Answer in one sentence.", workspace=repo))
    assert outcome.status == "succeeded" and outcome.warnings == []
    assert outcome.conclusion.startswith("add returns a + b")
    correction = fake_llm.requests[1].last_user
    assert "only cites a place and does not answer the question" in correction and "calc.py has 2 lines" in correction
    assert "for example" not in fake_llm.requests[0].last_user  # no example answer to copy


MANUAL_CHAIN = '''name = "manual"
description = "Write the manual."

[[steps]]
phase = "manual"
instructor = "ceo"
assistant = "cpo"
produces = "document"
file = "README.md"
template = """The code:
{code}

Write README.md."""
'''
README = "```markdown README.md\n# calc\n\nAdds two numbers: `add(1, 2)` is 3.\n```"


async def test_a_document_reply_that_is_not_the_document_is_sent_back(fake_llm, make_runner, tmp_path):
    repo = write_tree(tmp_path / "repo", {**CALC_ONLY, ".troupe/chains/manual.toml": MANUAL_CHAIN})
    fake_llm.enqueue("Understood. I agree with the plan and will write it.", README)
    outcome = await make_runner().run(JobSpec(chain="manual", task="document calc", workspace=repo))
    assert outcome.status == "succeeded", outcome.error
    assert "it is not README.md" in fake_llm.requests[1].last_user
    assert outcome.change is not None and outcome.change.files == ["README.md"]
    assert "+# calc" in outcome.change.diff and "Understood" not in outcome.change.diff


async def test_a_document_that_never_comes_is_not_written_and_the_job_says_so(fake_llm, make_runner, tmp_path):
    repo = write_tree(tmp_path / "repo", {**CALC_ONLY, ".troupe/chains/manual.toml": MANUAL_CHAIN})
    fake_llm.default_reply = "Sure, sounds good."
    outcome = await make_runner().run(JobSpec(chain="manual", task="document calc", workspace=repo))
    assert outcome.change is None and len(fake_llm.requests) == 3
    assert outcome.warnings == ["README.md: the cpo's reply was still not the document after 3 tries (Your reply "
                                "answers the discussion, but it is not README.md); it was not written"]


async def test_a_one_file_fix_is_asked_for_the_whole_file_without_examples_to_copy(fake_llm, make_runner, tmp_path):
    repo = write_tree(tmp_path / "repo", {"calc.py": "def add(a, b):\n    return a - b\n"})
    fake_llm.add_rule("<INFO> Finished", user="Give the ONE most important problem")
    fake_llm.enqueue("```python\n<the complete content of the file>\n```",  # the format's words, copied
                     "```python\ndef add(a, b):\n    return a + b\n```")
    outcome = await make_runner().run(JobSpec(chain="change", task="add() subtracts; fix it", workspace=repo,
                                              files=["calc.py"]))
    assert outcome.status == "succeeded", outcome.error
    code_prompt = fake_llm.prompts_containing("Make the change.")[0].last_user
    assert "Reply with the whole corrected calc.py in one ```python block." in code_prompt
    assert "src/app" not in code_prompt and "DELETE" not in code_prompt
    assert not fake_llm.prompts_containing("List the files")  # the user named the only file: no plan
    correction = fake_llm.requests[1].last_user
    assert "holds the words <the complete content of the file> from the format instead of real code" in correction
    assert "+    return a + b" in outcome.change.diff


BUGGY_ADD = 'def add(a, b):\n    """The sum.\n\n    >>> add(2, 3)\n    5\n    """\n    return a - b\n'
FIXED_ADD = BUGGY_ADD.replace("a - b", "a + b")
FIX_ONLY_CHAIN = '''name = "fixonly"
[[steps]]
tool = "doctests"
[[steps]]
phase = "code"
instructor = "cto"
assistant = "programmer"
produces = "code"
template = """Fix this: {task}

{code}

{edit_format}"""
'''


async def test_code_that_changes_nothing_is_kept_when_its_prompt_showed_the_failing_examples(
        fake_llm, make_runner, recorder, tmp_path):
    repo = write_tree(tmp_path / "repo", {"calc.py": BUGGY_ADD})
    fake_llm.add_rule("<INFO> Finished", user="Give the ONE most important problem")
    fake_llm.enqueue(f"```python calc.py\n{BUGGY_ADD}```", f"```python calc.py\n{FIXED_ADD}```")
    outcome = await make_runner().run(JobSpec(chain="change", task="add() subtracts; fix it", workspace=repo,
                                              files=["calc.py"]))
    assert outcome.status == "succeeded", outcome.error
    assert "add(2, 3) returned -1" in fake_llm.prompts_containing("Make the change.")[0].last_user
    assert not fake_llm.prompts_containing("nothing changed"), "the prompt already said what fails"
    assert any("its prompt already showed the failing docstring examples" in e.data.text
               for e in recorder.of(EventKind.LOG))
    assert fake_llm.prompts_containing("Write each missing body anew")  # the rewrite loop took it from there
    assert "+    return a + b" in outcome.change.diff


async def test_code_that_changes_nothing_is_sent_back_with_the_examples_its_prompt_did_not_show(
        fake_llm, make_runner, tmp_path):
    repo = write_tree(tmp_path / "repo", {"calc.py": BUGGY_ADD, ".troupe/chains/fixonly.toml": FIX_ONLY_CHAIN})
    fake_llm.enqueue(f"```python calc.py\n{BUGGY_ADD}```", f"```python calc.py\n{FIXED_ADD}```")
    outcome = await make_runner().run(JobSpec(chain="fixonly", task="add() subtracts", workspace=repo,
                                              files=["calc.py"]))
    assert outcome.status == "succeeded", outcome.error
    correction = fake_llm.requests[1].last_user
    assert correction.startswith("Your reply leaves calc.py exactly as it was: nothing changed.")
    assert "The docstring examples were run, and these fail:" in correction and "add(2, 3) returned -1" in correction
    assert "+    return a + b" in outcome.change.diff and outcome.warnings == []


async def test_code_that_changes_nothing_is_kept_without_a_resend_when_no_example_fails(fake_llm, make_runner,
                                                                                      recorder, tmp_path):
    code = "def add(a, b):\n    return a + b\n"
    repo = write_tree(tmp_path / "repo", {"calc.py": code})
    fake_llm.add_rule("<INFO> Finished", user="Give the ONE most important problem")
    fake_llm.default_reply = f"```python calc.py\n{code}```"
    await make_runner().run(JobSpec(chain="change", task="make add() faster", workspace=repo, files=["calc.py"]))
    assert len(fake_llm.prompts_containing("Make the change.")) == 1
    assert not fake_llm.prompts_containing("nothing changed"), "a resend would say nothing new"
    assert any("kept the code as it was (no failing docstring example" in e.data.text
               for e in recorder.of(EventKind.LOG))


TIMED_CHAIN = '''name = "review"
time_limit = 5

[[steps]]
phase = "review"
instructor = "cto"
assistant = "reviewer"
produces = "findings"
max_questions = 0
max_tokens = 8000
template = """Find the bugs.
{target}
{findings_format}"""

[[steps]]
phase = "second_look"
instructor = "cto"
assistant = "reviewer"
produces = "findings"
max_questions = 0
template = """Look again.
{target}
{findings_format}"""
'''


async def test_a_chain_past_its_time_limit_keeps_what_came_and_skips_the_rest(fake_llm, make_runner, recorder,
                                                                            tmp_path):
    repo = write_tree(tmp_path / "repo", {"calc.py": CALC, ".troupe/chains/review.toml": TIMED_CHAIN})
    first = "LINE: 5\nBUG: divide() fails when b is 0\nFIX: return a / b if b else 0.0\n\n"
    rest = "".join(f"LINE: 9\nBUG: average() of an empty list raises ZeroDivisionError, case {i}\n\n"
                   for i in range(400))
    fake_llm.add_rule(first + rest, user="Find the bugs.")
    fake_llm.word_delay = 0.01  # ~50 s of writing at the fake's pace
    started = time.monotonic()
    outcome = await make_runner().run(JobSpec(chain="review", task="review", workspace=repo, files=["calc.py"]))
    assert outcome.status == "succeeded", outcome.error
    assert time.monotonic() - started < 20
    usage = recorder.of(EventKind.USAGE)
    assert [u.data.finish_reason for u in usage] == ["time_limit"]  # one call, stopped; none after it
    assert any("reply stopped at the job's time limit; its last, unfinished finding" in w for w in outcome.warnings)
    lines = [f.start_line for f in outcome.findings if f.source == "reviewer"]
    assert lines[0] == 5 and len(lines) < 400
    skipped = [e.data for e in recorder.of(EventKind.PHASE_FINISHED) if e.data.skipped]
    assert [(s.phase, s.skipped) for s in skipped] == [("second_look", "the chain's time limit of 5 s was reached")]


async def test_a_chain_that_covers_its_phases_gets_its_time_limit_from_the_models_measured_speed(
        fake_llm, make_runner, recorder, tmp_path):
    covered = TIMED_CHAIN.replace("time_limit = 5\n", 'time_limit = 1\ntime_limit_covers = ["review"]\n')
    repo = write_tree(tmp_path / "repo", {"calc.py": CALC, ".troupe/chains/review.toml": covered})
    fake_llm.add_rule("".join(f"LINE: 5\nBUG: divide() fails when b is 0, case {i}\n\n" for i in range(40)),
                      user="Find the bugs.")
    fake_llm.add_rule("NONE", user="Look again.")
    fake_llm.word_delay = 0.01  # ~3 s of writing: past the fixed 1 s, well inside what the speed gives
    settings = Settings()
    settings.model.tokens_per_s, settings.model.prompt_per_s = 1000.0, 1000.0
    outcome = await make_runner(settings=settings).run(
        JobSpec(chain="review", task="review", workspace=repo, files=["calc.py"]))
    assert outcome.status == "succeeded", outcome.error
    assert [u.data.finish_reason for u in recorder.of(EventKind.USAGE)] == ["stop", "stop"]
    logs = [e.data.text for e in recorder.of(EventKind.LOG)]
    assert any(t.startswith("time limit 20 s from the model's measured speed (1000 tokens/s written") for t in logs)


def test_the_time_limit_from_speed_covers_each_phases_prompt_and_cap() -> None:
    review = load_chains().get("review")
    assert review.time_limit_covers == ("review", "reproduce")
    slow, fast = ModelSettings(tokens_per_s=10, prompt_per_s=20), ModelSettings(tokens_per_s=20, prompt_per_s=40)
    slow_limit, why = speed_limit(review, slow, file_tokens=1000) or (0.0, "")
    fast_limit, _ = speed_limit(review, fast, file_tokens=1000) or (0.0, "")
    # writing 320 + 256 tokens and reading the numbered file: twice the speed, half the model's time
    assert slow_limit - TOOL_SECONDS == pytest.approx(2 * (fast_limit - TOOL_SECONDS))
    assert slow_limit > 576 / 10 + 1000 / 20 and "review: " in why and "reproduce: " in why
    assert speed_limit(review, ModelSettings(), file_tokens=1000) is None  # not measured: time_limit holds
    assert (speed_limit(review, ModelSettings(tokens_per_s=1e4, prompt_per_s=1e5), 10) or (0.0,))[0] == MIN_SECONDS
    assert (speed_limit(review, ModelSettings(tokens_per_s=0.5, prompt_per_s=1), 10) or (0.0,))[0] == MAX_SECONDS


async def test_a_call_whose_prompt_cannot_be_processed_in_the_time_left_is_not_started(
        fake_llm, make_runner, recorder, tmp_path):
    """At 60 prompt tokens/s the second phase's prompt (~1,000 tokens) needs ~17 s, more than the chain's
    5: it is skipped, saying so, rather than started to hold the model past the limit; the first runs."""
    long_look = TIMED_CHAIN.replace('template = """Look again.', 'template = """Look again. '
                                    + "Consider each line and each name once more, slowly. " * 50)
    repo = write_tree(tmp_path / "repo", {"calc.py": CALC, ".troupe/chains/review.toml": long_look})
    fake_llm.add_rule("NONE", user="Find the bugs.")
    settings = Settings()
    settings.model.prompt_per_s = 60.0
    outcome = await make_runner(settings=settings).run(
        JobSpec(chain="review", task="review", workspace=repo, files=["calc.py"]))
    assert outcome.status == "succeeded", outcome.error
    assert not fake_llm.prompts_containing("Look again.") and len(recorder.of(EventKind.USAGE)) == 1
    [skipped] = [e.data for e in recorder.of(EventKind.PHASE_FINISHED) if e.data.skipped]
    assert skipped.phase == "second_look"
    assert re.fullmatch(r"the [45] s left before the chain's time limit do not cover processing its prompt "
                        r"\(about \d+ tokens at 60 tokens/s: \d+ s\)", skipped.skipped), skipped.skipped
