"""Dialogue: the marker ends a phase, reflection recovers a missing conclusion, and the
assistant's questions go to the instructor, or to the human when only the human can know."""

from __future__ import annotations

from collections.abc import Callable

from daemon.agents.dialogue import Dialogue
from daemon.agents.markers import find_conclusion, find_question
from daemon.agents.model import Phase, Role
from daemon.events import EventKind
from daemon.payloads import Payload, wire

CEO = Role("ceo", "You are the CEO.")
CPO = Role("cpo", "You are the CPO.")


class Script:
    """Stands in for the model: replies by role, records every call's messages."""

    def __init__(self, **replies: list[str | Callable[[list[dict[str, str]]], str]]) -> None:
        self.replies = {role: list(items) for role, items in replies.items()}
        self.calls: list[tuple[str, list[dict[str, str]]]] = []
        self.caps: list[int] = []
        self.events: list[tuple[EventKind, dict, str | None]] = []

    async def speak(self, role: Role, messages: list[dict[str, str]], max_tokens: int) -> str:
        self.calls.append((role.name, messages))
        self.caps.append(max_tokens)
        reply = self.replies[role.name].pop(0)
        return reply(messages) if callable(reply) else reply

    async def say(self, data: Payload, role: str | None) -> None:  # kept as the daemon stores it
        self.events.append((EventKind(data.kind), wire(data), role))

    def kinds(self, kind: EventKind) -> list[tuple[dict, str | None]]:
        return [(d, r) for k, d, r in self.events if k is kind]


def _phase(**kw) -> Phase:
    base = {"name": "demand", "instructor": "ceo", "assistant": "cpo", "template": "Decide the form of: {task}"}
    return Phase(**{**base, **kw})


async def test_a_marker_on_the_last_line_ends_the_dialogue_with_its_conclusion():
    script = Script(cpo=["A small tool is best.\n<INFO> Command-line program"])
    result = await Dialogue(_phase(), CEO, CPO, "Decide the form of: a todo app", speak=script.speak,
                            say=script.say).run()
    assert result.concluded and result.conclusion == "Command-line program"
    messages = script.kinds(EventKind.MESSAGE)
    assert [(d["text"][:10], r, d["to"]) for d, r in messages] == [
        ("Decide the", "ceo", "cpo"), ("A small to", "cpo", "ceo")]
    system, first = script.calls[0][1][0], script.calls[0][1][1]
    assert system["role"] == "system" and system["content"].startswith("You are the CPO.")
    assert first == {"role": "user", "content": "Decide the form of: a todo app"}


async def test_instructor_can_conclude_and_reflection_recovers_a_missing_conclusion():
    script = Script(cpo=["Maybe a web app?"], ceo=["Agreed.\n**<INFO>** Web app"])
    result = await Dialogue(_phase(max_turns=3), CEO, CPO, "p", speak=script.speak, say=script.say).run()
    assert result.conclusion == "Web app" and result.concluded
    # the instructor saw its own first message as "assistant", the cpo's as "user"
    assert [m["role"] for m in script.calls[1][1]] == ["system", "assistant", "user"]

    script = Script(cpo=["Maybe a web app?", "Or a CLI."], ceo=["Hmm, think again.", "<INFO> CLI"])
    result = await Dialogue(_phase(max_turns=2, reflect=True), CEO, CPO, "p", speak=script.speak,
                            say=script.say).run()
    assert result.reflected and not result.concluded and result.conclusion == "CLI"
    assert "What did they conclude?" in script.calls[-1][1][-1]["content"]
    assert "cpo: Or a CLI." in script.calls[-1][1][-1]["content"]


async def test_without_reflection_the_last_reply_is_the_conclusion():
    script = Script(cpo=["The main problem: no input validation in cli.py."])
    result = await Dialogue(_phase(reflect=False), CEO, CPO, "p", speak=script.speak, say=script.say).run()
    assert result.conclusion == "The main problem: no input validation in cli.py." and not result.reflected


async def test_a_question_is_answered_by_the_instructor_then_the_assistant_concludes():
    script = Script(cpo=["QUESTION: Should tasks have due dates?",
                         "Then a CLI with due dates.\n<INFO> CLI with due dates"],
                    ceo=["Yes, every task has an optional due date."])
    result = await Dialogue(_phase(), CEO, CPO, "p", speak=script.speak, say=script.say).run()
    assert result.conclusion == "CLI with due dates"
    question, asker = script.kinds(EventKind.QUESTION)[0]
    answer, by = script.kinds(EventKind.ANSWER)[0]
    assert (question["text"], question["to"], asker) == ("Should tasks have due dates?", "instructor", "cpo")
    assert answer["question_id"] == question["question_id"] and by == "ceo"
    assert "asks you a question" in script.calls[1][1][0]["content"]
    assert script.calls[2][1][-1] == {"role": "user", "content": "Yes, every task has an optional due date."}


async def test_questions_are_bounded():
    script = Script(cpo=["QUESTION: a?", "QUESTION: b?", "fine, my answer"], ceo=["A."])
    result = await Dialogue(_phase(max_questions=1, reflect=False), CEO, CPO, "p",
                            speak=script.speak, say=script.say).run()
    assert len(script.kinds(EventKind.QUESTION)) == 1
    assert "No more questions" in script.calls[3][1][-1]["content"]
    assert result.conclusion == "fine, my answer"
    assert "QUESTION:" not in script.calls[3][1][0]["content"]  # no longer offered

    script = Script(cpo=["QUESTION: a?", "QUESTION: b?", "QUESTION: c?"])
    result = await Dialogue(_phase(max_questions=0, reflect=False), CEO, CPO, "p",
                            speak=script.speak, say=script.say).run()
    assert len(script.calls) == 2 and result.conclusion == "QUESTION: b?"  # one nudge, then it stands


async def test_the_instructor_escalates_to_the_human_and_the_answer_reaches_the_assistant():
    asked: list[str] = []

    async def ask_human(question: str) -> str:
        asked.append(question)
        return "Dark mode, please."

    script = Script(cpo=["QUESTION: Which colour scheme does the user want?", "<INFO> CLI, dark theme"],
                    ceo=["ASK_HUMAN: Which colour scheme do you want?"])
    result = await Dialogue(_phase(ask_human=True), CEO, CPO, "p", speak=script.speak, say=script.say,
                            ask_human=ask_human).run()
    assert asked == ["Which colour scheme do you want?"]
    assert "ASK_HUMAN" in script.calls[1][1][0]["content"]  # the instructor was told it may escalate
    assert script.calls[2][1][-1]["content"] == "The user answers: Dark mode, please."
    assert result.conclusion == "CLI, dark theme"
    assert ("Dark mode, please.", "human") in [(d["text"], r) for d, r in script.kinds(EventKind.MESSAGE)]


async def test_without_permission_to_ask_the_human_the_assistant_is_told_to_assume():
    async def ask_human(question: str) -> str:
        raise AssertionError("must not be called")

    script = Script(cpo=["ASK_HUMAN: what colour?", "<INFO> blue"])
    result = await Dialogue(_phase(ask_human=False), CEO, CPO, "p", speak=script.speak, say=script.say,
                            ask_human=ask_human).run()
    assert result.conclusion == "blue"
    assert "Make a reasonable assumption" in script.calls[1][1][-1]["content"]


async def test_correct_sends_the_error_back_and_returns_the_new_reply():
    script = Script(cpo=["no code here", "```python a.py\nx = 1\n```"])
    dialogue = Dialogue(_phase(produces="code"), CEO, CPO, "p", speak=script.speak, say=script.say)
    first = await dialogue.run()
    assert first.last_reply == "no code here"
    again = await dialogue.correct("No file edit found.")
    assert again.startswith("```python a.py")
    assert script.calls[1][1][-1] == {"role": "user", "content": "No file edit found."}


def test_markers_inside_code_fences_do_not_count():
    assert find_conclusion("```\n<INFO> not me\n```\ntext", "<INFO>") is None
    assert find_question("```python\n# QUESTION: x\n```") is None
    assert find_question("**Question:** Which Python version?") == "Which Python version?"
    assert find_conclusion("Looks good to me. <INFO> Finished", "<INFO>") == "Finished"


def test_the_marker_without_its_brackets_still_concludes():
    # the bundled 0.5B model, verbatim: "INFO: Change all occurrences ..."
    assert find_conclusion("INFO: Change has_close_elements.py", "<INFO>") == "Change has_close_elements.py"
    assert find_conclusion("Some info: not a marker", "<INFO>") is None
    assert find_conclusion("```\nINFO: in code\n```", "<INFO>") is None


async def test_a_correction_after_a_reply_cut_at_its_cap_does_not_send_the_cut_reply_back():
    from daemon.agents.accounting import Reply

    cut = Reply("x = 1\n" * 500, finish_reason="length", max_tokens=3072)
    script = Script(cpo=[cut, "short and whole"])
    dialogue = Dialogue(_phase(), CEO, CPO, "Decide the form of: a todo app", speak=script.speak, say=script.say)
    await dialogue.run()
    assert await dialogue.correct("Your reply was cut off: send only the lines that change.") == "short and whole"
    resent = script.calls[-1][1]
    assert [m["role"] for m in resent] == ["system", "user", "assistant", "user"]
    assert "x = 1" not in resent[2]["content"] and "cut off at its length limit" in resent[2]["content"]
    assert resent[3]["content"] == "Your reply was cut off: send only the lines that change."
