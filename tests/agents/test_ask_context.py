"""The ask chain shows a repository that fits whole, in path order, before the question: two
questions about one repository send the same prompt prefix (a prompt cache reads it once), and a
repository too large for the window falls back to the ranked context."""

from __future__ import annotations

import pytest

from daemon.agents.job import JobSpec
from daemon.agents.loader import ChainError, load_chains
from daemon.agents.model import Tool
from daemon.workspace.repomap import build_context
from tests.agents.conftest import write_tree

REPO = {
    "shop/cart.py": "class Cart:\n    def total(self):\n        return 0\n",
    "shop/pricing.py": "TAX = 0.2\n\ndef price_of(name):\n    return 1.0\n",
    "README.md": "A shop.\n",
}


def test_a_repository_that_fits_is_shown_whole_in_path_order_whatever_the_task(tmp_path):
    repo = write_tree(tmp_path / "repo", REPO)
    first = build_context(repo, "Where is TAX defined?", 2000, whole_if_fits=True)
    second = build_context(repo, "What does Cart.total return?", 2000, whole_if_fits=True)
    assert first.included == second.included == ["README.md", "shop/cart.py", "shop/pricing.py"]
    assert first.text == second.text and first.left_out == []
    ranked = build_context(repo, "Where is TAX defined?", 2000)
    assert ranked.included == ["shop/pricing.py"]  # without it: only the files the task's words reach


def test_a_repository_too_large_for_the_budget_gets_the_ranked_context(tmp_path):
    repo = write_tree(tmp_path / "repo", {**REPO, "shop/catalog.py": "".join(
        f"def item_{n}():\n    return {n}\n" for n in range(300))})
    context = build_context(repo, "Where is TAX defined?", 600, whole_if_fits=True)
    assert context.included[0] == "shop/pricing.py" and "shop/catalog.py" not in context.included
    assert context.tokens <= 600


async def test_two_questions_about_one_repository_share_the_prompt_up_to_the_question(
        fake_llm, make_runner, tmp_path):
    repo = write_tree(tmp_path / "repo", REPO)
    fake_llm.enqueue("TAX is 0.2, set in shop/pricing.py:1.", "Cart.total returns 0 (shop/cart.py:3).")
    for task in ("Where is TAX defined?", "What does Cart.total return?"):
        outcome = await make_runner().run(JobSpec(chain="ask", task=task, workspace=repo))
        assert outcome.status == "succeeded", outcome.error
    first, second = (r.last_user for r in fake_llm.requests)
    prefix = first.split("Question:")[0]
    assert second.startswith(prefix) and "shop/cart.py" in prefix and "TAX = 0.2" in prefix
    assert [r.body["max_tokens"] for r in fake_llm.requests] == [256, 256]


async def test_a_short_value_is_an_answer_and_is_not_sent_back(fake_llm, make_runner, tmp_path):
    repo = write_tree(tmp_path / "repo", REPO)
    fake_llm.enqueue("0.2")
    outcome = await make_runner().run(JobSpec(chain="ask", task="What is the value of TAX? Answer with the value.",
                                              workspace=repo))
    assert (outcome.status, outcome.conclusion, len(fake_llm.requests)) == ("succeeded", "0.2", 1)


def test_only_the_context_tool_takes_a_window_share_and_it_is_bounded(tmp_path):
    chains = load_chains(None)
    [context] = [s for s in chains.get("ask").steps if isinstance(s, Tool)]
    assert (context.window_share, context.whole) == (0.85, True)
    folder = tmp_path / "repo" / ".troupe" / "chains"
    folder.mkdir(parents=True)
    for body, error in (('tool = "tests"\nwhole = true', "only the context tool takes"),
                        ('tool = "context"\nwindow_share = 0.95', "window_share must be between 0.1 and 0.9")):
        (folder / "odd.toml").write_text(f'name = "odd"\ndescription = "x"\n[[steps]]\n{body}\n'
                                         '[[steps]]\nphase = "a"\nproduces = "answer"\ntemplate = "{task}"\n')
        with pytest.raises(ChainError, match=error):
            load_chains(tmp_path / "repo")
