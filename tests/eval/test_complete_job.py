"""The ``complete`` job, the bare model's one call: through the daemon's gateway with the
workspace's model, capped, accounted; bad caps and empty replies are clear errors."""

from __future__ import annotations

import pytest

from daemon.api.protocol import ProtocolError, SubmitJob
from tests.eval.conftest import MODEL


async def test_a_complete_job_is_one_capped_call_with_the_workspaces_model(llm, ctx) -> None:
    llm.add_rule("LINE: 3 off by one", user="Which line is wrong?")
    root = await ctx.workspace({"a.py": "x = 1\n"}, "bare")
    run = await ctx.complete(root, "Which line is wrong?", max_tokens=64)
    assert run.ok and run.answer == "LINE: 3 off by one"
    assert (run.calls, run.capped) == (1, False) and run.prompt_tokens > 0 and run.completion_tokens > 0
    request = llm.prompts_containing("Which line is wrong?")[0]
    assert request.body["max_tokens"] == 64 and request.body["model"] == MODEL.removeprefix("openai/")
    assert [m["role"] for m in request.messages] == ["user"], "the bare model gets the prompt alone"


async def test_an_empty_reply_fails_the_complete_job(llm, ctx) -> None:
    llm.add_rule("", user="Say nothing")
    root = await ctx.workspace({"a.py": "x = 1\n"}, "empty")
    run = await ctx.complete(root, "Say nothing")
    assert run.state == "failed" and "empty reply" in (run.error or "")


@pytest.mark.parametrize("cap", [0, "many", True, 10**6])
def test_a_complete_job_with_a_bad_cap_is_refused(cap: object) -> None:
    with pytest.raises(ProtocolError, match="max_tokens"):
        SubmitJob.from_json({"kind": "complete", "workspace": "/repo", "prompt": "hi", "options": {"max_tokens": cap}})


async def test_a_reply_cut_at_its_cap_marks_the_job_capped(llm, ctx) -> None:
    llm.add_rule("word " * 200, user="Ramble")
    root = await ctx.workspace({"a.py": "x = 1\n"}, "ramble")
    run = await ctx.complete(root, "Ramble", max_tokens=16)
    assert run.ok and run.capped and run.completion_tokens <= 16
    assert run.result["finish_reason"] == "length"
