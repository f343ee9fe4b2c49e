"""The fix suite on two HumanEvalFix items, through the daemon and the fake LLM: a change that
puts the canonical body back passes the hidden tests, a wrong one does not — and the bare row's
whole-file reply is tested the same way."""

from __future__ import annotations

from daemon.eval.fix import FixSuite, score_fix
from daemon.eval.humanevalfix import buggy_module, load_items
from daemon.eval.runner import run_suite
from daemon.eval.suite import JobRun
from tests.eval.conftest import last_user

ITEMS = load_items()
# what the fake programmer writes for each item: the canonical module, and a wrong "fix"
FIXED = {"has_close_elements": ITEMS[0].data["canonical"],
         "separate_paren_groups": buggy_module(ITEMS[1]).replace("current_depth < 0", "current_depth > 0")}


def model_reply(body: dict) -> str:
    """The plan and the reviewer say little; every other phase (and the bare call) gets the file."""
    prompt = last_user(body)
    if "most important problem" in prompt:
        return "<INFO> Finished"
    if "List the files" in prompt:
        return "<INFO> Rewrite the function's body as its docstring says."
    entry = next(name for name in FIXED if f"def {name}" in prompt or f"{name}.py" in prompt)
    return f"{entry}.py\n```python\n{FIXED[entry]}```\n"


async def test_a_change_passes_only_when_the_hidden_tests_pass_and_both_rows_are_scored_alike(llm, ctx) -> None:
    llm.add_rule(model_reply, user="has_close_elements")
    llm.add_rule(model_reply, user="separate_paren_groups")
    results = await run_suite(FixSuite(), ctx, rows=("team", "bare"), limit=2)

    by = {(r.item, r.row): r for r in results}
    for row in ("team", "bare"):
        assert by["Python/0", row].solved, (row, by["Python/0", row])
        assert not by["Python/1", row].solved and by["Python/1", row].scores["changed"] == 1, by["Python/1", row]
    assert by["Python/0", "bare"].calls == 1


async def test_the_canonical_module_passes_and_the_buggy_one_does_not() -> None:
    item = ITEMS[0]
    run = JobRun("j", "complete", "succeeded")
    assert (await score_fix("fix", item, "bare", run, item.data["canonical"])).solved
    unchanged = await score_fix("fix", item, "bare", run, buggy_module(item))
    assert not unchanged.solved and unchanged.scores["changed"] == 0
    assert not (await score_fix("fix", item, "bare", run, None)).solved
