"""A review runs the file's docstring examples in the sandbox first: the reviewer reads the ones
that fail (what each returned against what it expects) as evidence; the user's tree is untouched."""

from __future__ import annotations

from daemon.agents.job import JobSpec
from daemon.events import EventKind
from tests.agents.conftest import snapshot_tree, write_tree
from tests.agents.test_change_examples import CALC, FAILING

FINDING = ('```json\n[{"file": "calc.py", "start_line": 18, "severity": "major", "message": "subtracts instead of '
           'adding", "quote": "return a - b", "replacement": "    return a + b"}]\n```')


async def test_the_reviewer_sees_which_docstring_examples_fail(fake_llm, make_runner, recorder, tmp_path):
    repo = write_tree(tmp_path / "repo", {"calc.py": CALC})
    before = snapshot_tree(repo)
    fake_llm.add_rule(FINDING, system="You are a code reviewer")
    outcome = await make_runner().run(JobSpec(chain="review", task="review calc.py", workspace=repo,
                                              files=["calc.py"]))
    assert outcome.status == "succeeded", outcome.error
    prompt = fake_llm.prompts_containing("Find the bugs")[0].last_user
    assert f"The docstring examples were run, and these fail:\n- {FAILING}\n" in prompt
    assert "double(2)" not in prompt.split("these fail:")[1]  # passing examples are not evidence
    assert [(f.start_line, f.source) for f in outcome.findings] == [(18, "reviewer")]
    runs = [e.data for e in recorder.of(EventKind.TOOL_RUN) if e.data["tool"] == "doctests"]
    assert len(runs) == 1 and (runs[0]["passed"], runs[0]["failed"]) == (2, 1)
    assert snapshot_tree(repo) == before


async def test_a_file_without_failing_examples_adds_nothing_to_the_review(fake_llm, make_runner, tmp_path):
    repo = write_tree(tmp_path / "repo", {"calc.py": CALC.replace("return a - b", "return a + b")})
    fake_llm.add_rule("```json\n[]\n```", system="You are a code reviewer")
    outcome = await make_runner().run(JobSpec(chain="review", task="review calc.py", workspace=repo,
                                              files=["calc.py"]))
    assert outcome.status == "succeeded", outcome.error
    assert "docstring examples" not in fake_llm.prompts_containing("Find the bugs")[0].last_user
