"""One thread = one session: the team's question is answered by the requester's reply in the
thread and the job resumes; a follow-up mention continues the thread's context."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from slack_bot.state import BotState
from tests.fakes.llm_server import FakeLLM
from tests.slack.conftest import BOB, Harness, block_text, buttons


async def test_the_team_asks_and_the_requesters_thread_reply_resumes_the_job(harness: Harness, repo: Path,
                                                                           llm: FakeLLM) -> None:
    llm.add_rule("ASK_HUMAN: Do you mean add() in app.py or the kiwi module?", user="Question: which kiwi",
                 times=1)
    llm.add_rule("add() is in app.py:1 and subtracts.", user="The user answers: add() in app.py")
    ts, _ = await harness.mention("which kiwi function is wrong?")

    asked = await harness.slack.wait_for(
        lambda: [b for b in harness.in_thread(ts) if "The team asks" in (b.get("text") or "")], what="the question")
    assert "<@UANN>" in asked[0]["text"] and "Do you mean add() in app.py or the kiwi module?" in asked[0]["text"]
    job_id = harness.bot.state.thread("C1", ts).job_id
    assert (await harness.bot.daemon.job(job_id)).state == "waiting_for_answer"

    # someone else chatting in the thread does not answer for Ann
    await harness.reply("no idea, sorry", ts, user=BOB)
    await asyncio.sleep(0.3)
    assert (await harness.bot.daemon.job(job_id)).state == "waiting_for_answer"

    reply_ts = await harness.reply("add() in app.py", ts)
    assert await harness.finished(ts) == ["eyes", "white_check_mark"]
    job = await harness.bot.daemon.job(job_id)
    assert job.state == "succeeded" and job.result["answer"] == "add() is in app.py:1 and subtracts."
    assert "speech_balloon" in harness.reactions(reply_ts)  # the answer was taken
    assert llm.requests[-1].last_user == "The user answers: add() in app.py"
    summary = harness.summary(ts)
    assert summary is not None and "add() is in app.py:1 and subtracts." in block_text(summary)
    assert len(await harness.jobs(repo)) == 1


async def test_a_follow_up_mention_continues_the_threads_session(harness: Harness, repo: Path, tmp_path: Path,
                                                                llm: FakeLLM) -> None:
    llm.add_rule("It returns a - b: see app.py:2.", user="Question: what does add return, walrus")
    llm.add_rule("Then rename it to subtract(), in app.py:1.", user="Now: and what should I do about it, walrus")
    ts, _ = await harness.mention("what does add return, walrus?")
    await harness.finished(ts)
    first = harness.bot.state.thread("C1", ts).job_id

    follow_ts, _ = await harness.mention("and what should I do about it, walrus?", thread_ts=ts)
    await harness.finished(follow_ts)

    jobs = await harness.jobs(repo)
    assert len(jobs) == 2
    second = next(j for j in jobs if j.id != first)
    assert second.kind == "ask" and second.request["options"]["previous_job"] == first
    # the bot passes the thread's jobs; the daemon composes the prompt, and the job keeps the person's words
    assert second.request["history"] == [first] and second.title == "ask: and what should I do about it, walrus?"
    asked = llm.prompts_containing("Now: and what should I do about it, walrus?")
    assert asked and "Earlier request (ask): what does add return, walrus?" in asked[0].prompt
    assert "The team's answer: It returns a - b: see app.py:2." in asked[0].prompt  # the context reached the model

    # everything stayed in the one thread; it now follows the second job, and remembers it on disk
    assert all(b["thread_ts"] == ts for b in harness.slack.posted())
    summaries = [b for b in harness.in_thread(ts) if "rename it to subtract()" in block_text(b)]
    assert len(summaries) == 1
    reopened = BotState(tmp_path / "slack.db")
    assert reopened.thread("C1", ts).job_id == second.id
    assert [r.job_id for r in reopened.thread_jobs("C1", ts)] == [first, second.id]
    reopened.close()


async def test_with_several_repositories_and_no_channel_map_the_requester_is_asked(make_harness: Any, repo: Path,
                                                                                  llm: FakeLLM) -> None:
    harness: Harness = await make_harness(None)  # no channel map; the daemon knows several repositories
    await harness.bot.daemon.register_workspace(str(repo), watch=False)
    llm.add_rule("It is app.py:1.", user="Question: where is the narwhal")
    ts, _ = await harness.mention("where is the narwhal?")
    choice = await harness.slack.wait_for(lambda: harness.summary(ts), what="the repository choice")
    assert choice["text"] == "Which repository?"
    elements = list(buttons(choice).values())  # a button per repository, or a menu when there are many
    pick = next(e for e in elements if e.get("value") == str(repo) or
                str(repo) in [o["value"] for o in e.get("options", [])])
    assert await harness.jobs(repo) == []

    message = harness.slack.messages["C1", harness.summary_ts(ts)]
    await harness.choose(pick, str(repo), message, user=BOB)  # not Bob's question: refused
    await harness.slack.wait_for(lambda: harness.slack.responses, what="the refusal")
    await harness.choose(pick, str(repo), message)
    assert await harness.finished(ts) == ["eyes", "white_check_mark"]
    jobs = await harness.jobs(repo)
    assert [j.request["prompt"] for j in jobs] == ["where is the narwhal?"]
    assert harness.bot.state.thread("C1", ts).workspace == str(repo)  # the thread keeps its repository


async def test_a_thread_outlives_a_restart_of_the_bot(make_harness: Any, repo: Path, llm: FakeLLM) -> None:
    first: Harness = await make_harness(repo)
    llm.add_rule("ASK_HUMAN: The tabby or the ginger one?", user="Question: which cat", times=1)
    llm.add_rule("The ginger one: app.py:1.", user="The user answers: ginger")
    ts, _ = await first.mention("which cat is it?")
    await first.slack.wait_for(lambda: [b for b in first.in_thread(ts) if "tabby" in (b.get("text") or "")],
                               what="the question")
    status_ts = first.slack.of("chat.postMessage")[0].ts
    await first.close()  # the bot stops while the team waits for Ann

    second: Harness = await make_harness(repo, slack=first.slack)  # same state file, same Slack
    assert await second.bot.resume() == 1
    await second.reply("ginger", ts)
    assert await second.finished(ts) == ["eyes", "white_check_mark"]
    assert "The ginger one: app.py:1." in block_text(second.summary(ts) or {})
    assert "done" in second.slack.messages["C1", str(status_ts)]["text"]  # the same status message, finished
    assert len([b for b in second.in_thread(ts) if "tabby" in (b.get("text") or "")]) == 1  # not asked twice
    assert len(await second.jobs(repo)) == 1


async def test_the_requester_cancels_a_waiting_job_and_the_thread_shows_it(harness: Harness, repo: Path,
                                                                          llm: FakeLLM) -> None:
    llm.add_rule("ASK_HUMAN: Which lemur?", user="Question: which lemur", times=1)
    ts, _ = await harness.mention("which lemur is it?")
    await harness.slack.wait_for(lambda: [b for b in harness.in_thread(ts) if "Which lemur?" in b["text"]],
                                 what="the question")
    job_id = harness.bot.state.thread("C1", ts).job_id
    await harness.slash(f"cancel {job_id}")
    assert await harness.finished(ts) == ["eyes", "x"]
    assert f"Job `{job_id}` is cancelled." in harness.slack.responses[-1]["text"]
    assert "could not finish" in block_text(harness.summary(ts) or {})
    assert harness.bot.state.thread("C1", ts).question_id is None  # a late reply answers nothing
