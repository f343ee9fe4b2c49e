"""The team's dehallucination questions over MCP: an elicitation where the client supports it, else a
tool result that says how to answer (the `answer` tool, or `troupe answer`)."""

from __future__ import annotations

from pathlib import Path

from mcp_types import ElicitRequestParams, ElicitResult

from tests.daemon.conftest import DaemonProcess
from tests.fakes.llm_server import FakeLLM
from tests.mcp.conftest import mcp_client, text_of


async def test_the_teams_question_reaches_the_client_as_an_elicitation_and_its_answer_reaches_the_team(
        engine_daemon: DaemonProcess, llm: FakeLLM, repo: Path) -> None:
    llm.add_rule("ASK_HUMAN: Should add() accept floats too?", user="Question: may add() change", times=1)
    llm.add_rule("<INFO> Yes: add() in calc.py:4 works for floats as well.", user="The user answers: Yes.", times=1)
    asked: list[ElicitRequestParams] = []

    async def user(params: ElicitRequestParams) -> ElicitResult:
        asked.append(params)
        return ElicitResult(action="accept", content={"answer": "Yes."})

    async with mcp_client(engine_daemon, repo, elicit=user) as session:
        result = await session.call_tool("ask", {"question": "may add() change for floats?"})

    assert not result.is_error
    assert text_of(result).startswith("Yes: add() in calc.py:4 works for floats as well.")
    (question,) = asked
    assert question.message == "Troupe asks: Should add() accept floats too?"
    assert question.requested_schema["properties"]["answer"]["type"] == "string"
    assert llm.prompts_containing("The user answers: Yes.")


async def test_without_elicitation_the_result_says_how_to_answer_and_the_answer_tool_finishes_the_job(
        engine_daemon: DaemonProcess, llm: FakeLLM, repo: Path) -> None:
    llm.add_rule("ASK_HUMAN: Should sub() round to ints?", user="Question: may sub() change", times=1)
    llm.add_rule("<INFO> No: sub() keeps its floats.", user="The user answers: No.", times=1)
    async with mcp_client(engine_daemon, repo) as session:  # declares no elicitation
        waiting = await session.call_tool("ask", {"question": "may sub() change for ints?"})
        job = waiting.structured_content["job"]
        text = text_of(waiting)
        assert not waiting.is_error and job["state"] == "waiting_for_answer"
        assert text.startswith("The team asks: Should sub() round to ints?")
        assert "the `answer` tool" in text and f"troupe answer {job['id']}" in text
        assert waiting.structured_content["question"]["text"] == "Should sub() round to ints?"

        still = await session.call_tool("job_status", {"job_id": job["id"]})
        assert still.structured_content["job"]["state"] == "waiting_for_answer"

        done = await session.call_tool("answer", {"job_id": job["id"], "text": "No."})
        assert done.structured_content["job"]["state"] == "succeeded"
        assert text_of(done).startswith("No: sub() keeps its floats.")


async def test_the_cancel_tool_cancels_a_waiting_job(engine_daemon: DaemonProcess, llm: FakeLLM, repo: Path) -> None:
    llm.add_rule("ASK_HUMAN: Which mul() do you mean?", user="Question: is mul() right", times=1)
    async with mcp_client(engine_daemon, repo) as session:
        waiting = await session.call_tool("ask", {"question": "is mul() right?"})
        job_id = waiting.structured_content["job"]["id"]
        cancelled = await session.call_tool("cancel", {"job_id": job_id})
        assert text_of(cancelled) == f"ask job {job_id} cancelled."
        again = await session.call_tool("cancel", {"job_id": job_id})
        assert again.is_error and "already cancelled" in text_of(again)
    async with engine_daemon.client() as client:
        assert (await client.job(job_id)).state == "cancelled"


async def test_a_declined_question_lets_the_team_decide(engine_daemon: DaemonProcess, llm: FakeLLM,
                                                        repo: Path) -> None:
    llm.add_rule("ASK_HUMAN: Should div() round?", user="Question: may div() change", times=1)
    llm.add_rule("<INFO> div() keeps exact division.", user="The user answers: No preference", times=1)

    async def user(params: ElicitRequestParams) -> ElicitResult:
        return ElicitResult(action="decline")

    async with mcp_client(engine_daemon, repo, elicit=user) as session:
        result = await session.call_tool("ask", {"question": "may div() change?"})
    assert text_of(result).startswith("div() keeps exact division.")
    assert llm.prompts_containing("The user answers: No preference: use your best judgement.")


async def test_a_question_closed_without_an_answer_leaves_the_job_waiting(engine_daemon: DaemonProcess, llm: FakeLLM,
                                                                          repo: Path) -> None:
    llm.add_rule("ASK_HUMAN: Should pow() accept negatives?", user="Question: may pow() change", times=1)

    async def user(params: ElicitRequestParams) -> ElicitResult:
        return ElicitResult(action="cancel")

    async with mcp_client(engine_daemon, repo, elicit=user) as session:
        result = await session.call_tool("ask", {"question": "may pow() change?"})
        job_id = result.structured_content["job"]["id"]
        assert text_of(result).startswith("The team asks: Should pow() accept negatives?")
        await session.call_tool("cancel", {"job_id": job_id})
