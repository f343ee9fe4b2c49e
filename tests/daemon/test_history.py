"""A follow-up's prompt is composed by the daemon from the earlier jobs a surface names
(``SubmitJob.history``); the surface passes ids, never a prompt it wrote itself."""

from pathlib import Path

from daemon.jobs.history import with_history
from storage import AsyncStore


async def test_a_follow_up_prompt_tells_the_earlier_requests_and_answers_then_the_new_words(tmp_path: Path) -> None:
    store = await AsyncStore.open(tmp_path / "troupe.db")
    try:
        first = await store.record_job("ask", {"kind": "ask", "workspace": "/r", "prompt": "what does add return?"})
        await store.set_job_state(first.id, "succeeded", result={"answer": "It returns a - b.", "files": ["app.py"]})
        failed = await store.record_job("change", {"kind": "change", "workspace": "/r", "prompt": "fix it"})
        await store.set_job_state(failed.id, "failed", error="the model was unreachable")
        later = {"kind": "ask", "workspace": "/r", "prompt": "and now?", "history": [first.id, "forgotten", failed.id]}
        composed = await with_history(store, later)
        assert composed["prompt"] == (
            "This continues an earlier conversation (one Slack thread).\n\n"
            "Earlier request (ask): what does add return?\nThe team's answer: It returns a - b.\n"
            "Files the team changed: app.py\n\n"
            "Earlier request (change): fix it\nThe team's answer: the model was unreachable\n\n"
            "Now: and now?")
        assert {k: v for k, v in composed.items() if k != "prompt"} == {k: v for k, v in later.items() if k != "prompt"}
        alone = {"kind": "ask", "workspace": "/r", "prompt": "a first question"}
        assert await with_history(store, alone) == alone
        assert await with_history(store, {**alone, "history": ["forgotten"]}) == {**alone, "history": ["forgotten"]}
    finally:
        await store.close()
