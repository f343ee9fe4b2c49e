"""Communicative dehallucination through the whole engine: the assistant asks, the instructor
answers; when only the user can know, the job pauses on ask_human and resumes with the answer."""

from __future__ import annotations

import asyncio

from daemon.agents.job import JobSpec
from daemon.events import EventKind
from tests.agents.conftest import write_tree
from tests.agents.test_change_chain import CODE, REPO, TASK

PROGRAMMER = "You are a careful programmer"
GUIDE = "You know this repository well"  # the ask chain's answering role
CTO = "You are the CTO"


async def test_a_question_answered_by_the_instructor(fake_llm, make_runner, recorder, tmp_path):
    repo = write_tree(tmp_path / "repo", REPO)
    fake_llm.add_rule("QUESTION: Should shout() with times=0 return an empty string?",
                      system=PROGRAMMER, user="List the files to change", times=1)
    fake_llm.add_rule("Yes: times=0 returns an empty string.", system="asks you a question")
    fake_llm.add_rule("<INFO> greet.py: add '!'; shout.py: times=1, times=0 gives ''", system=PROGRAMMER,
                      user="times=0 returns an empty string")
    fake_llm.add_rule(CODE, user="Make the change.")
    fake_llm.add_rule("<INFO> Finished", user="Give the ONE most important problem")

    outcome = await make_runner().run(JobSpec(chain="change", task=TASK, workspace=repo))

    assert outcome.status == "succeeded", outcome.error
    question = recorder.of(EventKind.QUESTION)[0]
    answer = recorder.of(EventKind.ANSWER)[0]
    assert (question.phase, question.role, question.data.to) == ("plan", "programmer", "instructor")
    assert question.data.text == "Should shout() with times=0 return an empty string?"
    assert (answer.role, answer.data.by, answer.data.question_id) == ("cto", "cto", question.data.question_id)
    # the instructor saw the question; the programmer saw the answer, then concluded
    asked = fake_llm.prompts_containing("asks you a question")[0]
    assert CTO in asked.system and asked.last_user == "QUESTION: Should shout() with times=0 return an empty string?"
    assert outcome.conclusions["plan"] == "greet.py: add '!'; shout.py: times=1, times=0 gives ''"
    assert "times=0 gives ''" in fake_llm.prompts_containing("Make the change.")[0].last_user


async def test_a_question_only_the_human_can_answer_pauses_the_job_until_the_answer(fake_llm, make_runner,
                                                                                   recorder, tmp_path):
    repo = write_tree(tmp_path / "repo", REPO)
    fake_llm.add_rule("QUESTION: Does the user mean greet() or shout()?", system=GUIDE,
                      user="Question: what does the greeting", times=1)
    fake_llm.add_rule("ASK_HUMAN: Which function do you mean, greet() or shout()?", system="asks you a question")
    fake_llm.add_rule("shout() upper-cases greet()'s result: see pkg_b/shout.py:5 and pkg_a/greet.py:2.",
                      system=GUIDE, user="The user answers: shout")

    waiting = asyncio.Event()
    answer: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    asked: list[str] = []

    async def ask_human(question: str) -> str:  # what the daemon does: pause, wait for an adapter
        asked.append(question)
        waiting.set()
        return await answer

    job = asyncio.create_task(make_runner(ask_human).run(
        JobSpec(chain="ask", task="what does the greeting look like when shouted?", workspace=repo)))
    await asyncio.wait_for(waiting.wait(), 30)
    calls_while_waiting = len(fake_llm.requests)
    await asyncio.sleep(0.2)
    assert not job.done() and len(fake_llm.requests) == calls_while_waiting  # paused, not spending
    assert asked == ["Which function do you mean, greet() or shout()?"]
    answer.set_result("shout, please")
    outcome = await asyncio.wait_for(job, 30)

    assert outcome.status == "succeeded", outcome.error
    assert outcome.conclusion.startswith("shout() upper-cases")
    assert outcome.warnings == []  # both citations exist
    assert fake_llm.requests[-1].last_user == "The user answers: shout, please"
    human = [m for m in recorder.of(EventKind.MESSAGE) if m.role == "human"]
    assert [m.data.text for m in human] == ["shout, please"]
    escalated = recorder.of(EventKind.ANSWER)[0]
    assert escalated.data.escalated and escalated.role == "cto"


async def test_an_answer_citing_lines_that_do_not_exist_is_sent_back_then_flagged(fake_llm, make_runner, tmp_path):
    repo = write_tree(tmp_path / "repo", REPO)
    fake_llm.add_rule("greet is defined in pkg_a/greet.py:40 and used in pkg_c/nothing.py:1.", system=GUIDE)
    outcome = await make_runner().run(JobSpec(chain="ask", task="where is greet?", workspace=repo))
    assert outcome.status == "succeeded"
    correction = fake_llm.requests[1].last_user
    assert "pkg_a/greet.py has 2 lines" in correction and "citing only files and lines that exist" in correction
    assert len(fake_llm.requests) == 3  # the answer and its two corrections (the phase's max_retries)
    assert outcome.warnings == ["the answer cites pkg_a/greet.py:40, but pkg_a/greet.py has 2 lines",
                                "the answer cites pkg_c/nothing.py:1, but there is no such file"]


async def test_a_corrected_answer_replaces_the_wrong_one(fake_llm, make_runner, tmp_path):
    repo = write_tree(tmp_path / "repo", REPO)
    fake_llm.enqueue("`pkg_a/greet.py:13`", "greet() returns the greeting 'Hello, <name>' (pkg_a/greet.py:2).")
    outcome = await make_runner().run(JobSpec(chain="ask", task="what does greet return?", workspace=repo))
    assert outcome.status == "succeeded" and outcome.warnings == []
    assert outcome.conclusion == "greet() returns the greeting 'Hello, <name>' (pkg_a/greet.py:2)."
    assert "only cites a place and does not answer the question" in fake_llm.requests[1].last_user


async def test_a_reply_that_echoes_the_users_question_is_not_a_question_to_anyone(fake_llm, make_runner, recorder,
                                                                                tmp_path):
    # the bundled model began its answer by copying the prompt's "Question: ..." line; the job then
    # waited for a human to answer the user's own question
    repo = write_tree(tmp_path / "repo", REPO)
    fake_llm.add_rule("Question: where is greet defined?\n\ngreet is defined in pkg_a/greet.py:1.", system=GUIDE)
    asked: list[str] = []

    async def ask_human(question: str) -> str:
        asked.append(question)
        return "no idea"

    outcome = await make_runner(ask_human).run(JobSpec(chain="ask", task="where is greet defined?", workspace=repo))

    assert outcome.status == "succeeded", outcome.error
    assert asked == [] and recorder.of(EventKind.QUESTION) == []
    assert "pkg_a/greet.py:1" in outcome.conclusion
