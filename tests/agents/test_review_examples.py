"""Docstring examples in the reviewer's prompt are a repository's choice, not the default: the shipped
review chain runs them, but as evidence for a repair (tests/agents/test_review_repair.py), not in the
reviewer's prompt (on HumanEvalFix with the bundled model the longer prompt ran into the reviewer's
token cap twice as often and left half the findings), while a
repository's own ``.troupe/chains/review.toml`` with ``{examples}`` in the review prompt shows the
reviewer which fail (what each returned against what it expects); the user's tree is untouched."""

from __future__ import annotations

from daemon.agents.job import JobSpec
from daemon.agents.loader import BUILTIN_DIR, load_chains
from daemon.events import EventKind
from tests.agents.conftest import snapshot_tree, write_tree
from tests.agents.test_change_examples import CALC, FAILING

FINDING = ('```json\n[{"file": "calc.py", "start_line": 18, "severity": "major", "message": "subtracts instead of '
           'adding", "quote": "return a - b", "replacement": "    return a + b"}]\n```')


def _with_examples_step(repo_files: dict[str, str]) -> dict[str, str]:
    """The shipped review chain with {examples} in the reviewer's prompt."""
    shipped = (BUILTIN_DIR / "review.toml").read_text()
    own = shipped.replace("{target}\n", "{target}\n{examples}\n", 1)
    assert own != shipped and "{examples}" in own
    return {**repo_files, ".troupe/chains/review.toml": own}


async def test_the_shipped_review_shows_the_reviewer_no_docstring_examples(fake_llm, make_runner, recorder,
                                                                          tmp_path):
    repo = write_tree(tmp_path / "repo", {"calc.py": CALC})
    fake_llm.add_rule(FINDING, system="You are a code reviewer")
    outcome = await make_runner().run(JobSpec(chain="review", task="review calc.py", workspace=repo,
                                              files=["calc.py"]))
    assert outcome.status == "succeeded", outcome.error
    assert "docstring examples" not in fake_llm.prompts_containing("Find the bugs")[0].last_user
    assert len([e for e in recorder.of(EventKind.TOOL_RUN) if e.data.tool == "doctests"]) == 1


async def test_a_repository_review_chain_shows_the_reviewer_which_examples_fail(fake_llm, make_runner, recorder,
                                                                                tmp_path):
    repo = write_tree(tmp_path / "repo", _with_examples_step({"calc.py": CALC}))
    assert [s.name for s in load_chains(repo).get("review").steps][:2] == ["static_check", "doctests"]
    before = snapshot_tree(repo)
    fake_llm.add_rule(FINDING, system="You are a code reviewer")
    outcome = await make_runner().run(JobSpec(chain="review", task="review calc.py", workspace=repo,
                                              files=["calc.py"]))
    assert outcome.status == "succeeded", outcome.error
    prompt = fake_llm.prompts_containing("Find the bugs")[0].last_user
    assert f"The docstring examples were run, and these fail:\n- {FAILING}\n" in prompt
    assert "double(2)" not in prompt.split("these fail:")[1]  # passing examples are not evidence
    assert [(f.start_line, f.source) for f in outcome.findings] == [(18, "reviewer")]
    runs = [e.data for e in recorder.of(EventKind.TOOL_RUN) if e.data.tool == "doctests"]
    assert len(runs) == 1 and (runs[0].passed, runs[0].failed) == (2, 1)
    assert snapshot_tree(repo) == before
