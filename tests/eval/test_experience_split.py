"""``troupe eval fix --experience-split`` against a real daemon with experience on and the fake LLM:
the team learns on the even items, then runs the odd (held-out) ones with experience off and on;
only the "on" run's prompts may carry what the learning half left, and never its code (each item
is a change to another file)."""

from __future__ import annotations

import re

from daemon.eval.fix import FixSuite
from daemon.eval.humanevalfix import load_items
from daemon.eval.runner import DaemonContext
from daemon.eval.split import SplitReport, halves, run_split
from tests.daemon.conftest import DaemonProcess
from tests.eval.conftest import MODEL, ArmPrompts, last_user
from tests.fakes.llm_server import FakeLLM

EXPERIENCE = "Experience from similar earlier tasks"
CANONICAL = {item.data["entry_point"]: item.data["canonical"] for item in load_items()[:2]}
LEARNT = "has_close_elements"  # the learning half: item 0 (item 1 is held out)


def model_reply(body: dict) -> str:
    """The reviewer accepts; the programmer sends the item's canonical module (named by the task,
    which comes before any experience block); a shortcut instruction is one sentence."""
    prompt = last_user(body)
    if "most important problem" in prompt:
        return "<INFO> Finished"
    task = re.search(r"The function (\w+) in", prompt)
    if task is None or "Write the one instruction" in prompt:
        return "Rewrite the function's body as its docstring says."
    return f"{task[1]}.py\n```python\n{CANONICAL[task[1]]}```\n"


async def test_the_held_out_half_reads_what_the_learning_half_left_only_with_experience_on(
        llm: FakeLLM, learning_daemon: DaemonProcess) -> None:
    llm.reset()
    llm.default_reply = model_reply
    suite = FixSuite()
    learn, held = halves(suite.items()[:2])
    report = SplitReport("fix", MODEL, "abc", [i.id for i in learn], [i.id for i in held], suite.score_names)
    prompts = ArmPrompts(llm)  # each result with the prompts its jobs sent

    async with learning_daemon.client() as client:
        ctx = DaemonContext(client, model=MODEL, job_timeout=60, poll=0.05)
        try:
            await run_split(suite, ctx, report, limit=2, on_result=prompts)
        finally:
            await ctx.close()

    assert (report.learn, report.held_out) == (["Python/0"], ["Python/1"])
    assert [(a.half, a.experience, a.result.item) for a, _ in prompts] == [
        ("learn", "on", "Python/0"), ("held-out", "off", "Python/1"), ("held-out", "on", "Python/1")]
    assert [i.id for i in halves(suite.items()[:6])[0]] == ["Python/0", "Python/2", "Python/4"], "fixed halves"
    assert all(a.result.solved for a, _ in prompts), [a.result.error for a, _ in prompts]
    assert report.learnt, "the learning half's jobs were mined into the run's store"
    for arm, sent in prompts[1:]:
        reached = [p for p in sent if EXPERIENCE in p]
        if arm.experience == "off":
            assert not reached and arm.experience_used == 0, arm.result.item
            assert not any(LEARNT in p for p in sent), arm.result.item
        else:  # what the learning half left may reach it, but never its code: that was of another file
            assert bool(reached) == bool(arm.experience_used), arm.result.item
            assert not any(f"def {LEARNT}(" in p for p in sent), "the learning half's code of another file"
    assert not any(EXPERIENCE in p for p in prompts[0][1]), "nothing was learnt before the first item"

    table = report.table().splitlines()
    assert "tok/solved" in table[1]
    assert [line.split("  ")[0].strip() for line in table[2:]] == ["learn (on)", "held-out (off)", "held-out (on)"]
    rows = report.to_json()["summary"]
    assert [(r["half"], r["experience"], r["solved"]) for r in rows] == [
        ("learn", "on", 1), ("held-out", "off", 1), ("held-out", "on", 1)]
    off, on = rows[1], rows[2]
    # what the learning half left (code, instruction hints) was about another file: nothing reaches a code phase
    assert (off["experience_reached"], on["experience_reached"]) == ("0/1", "0/1")
    assert off["tokens_per_solved"] == round(sum(a.result.prompt_tokens + a.result.completion_tokens
                                                 for a, _ in prompts[1:2]), 1)
    assert on["prompt_tokens"] > 0 and on["tokens_per_solved"] > 0
