"""One phase as a dialogue between an instructor and an assistant, with dehallucination.

The instructor's first message is the phase's rendered template. The assistant answers; a
line starting with the phase's marker (``<INFO>``) ends the dialogue and what follows the
marker is the conclusion. Before answering, the assistant may ask ``QUESTION: ...`` (a bounded
number of times per phase); the instructor answers, or replies ``ASK_HUMAN: ...`` when only
the user can know (intent, preferences) — then the question goes to the human through the
``ask_human`` callback and the job waits. When the turns run out without a conclusion, a
short reflection call extracts one from the transcript (for phases that ask for it), or the
assistant's last reply stands. Every turn is a MESSAGE event; questions and answers are
QUESTION/ANSWER events. Agents are fresh in every phase: only the rendered prompt (which
carries earlier conclusions and the code) links phases.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from daemon.agents.markers import find_conclusion, find_human_question, find_question
from daemon.agents.model import REFLECT_MAX_TOKENS, SIDE_MAX_TOKENS, Phase, Role
from daemon.events import Say
from daemon.payloads import AnswerData, MessageData, QuestionData

AskHuman = Callable[[str], Awaitable[str]]
"""Ask the person a question and return the answer. The daemon implements it: it emits the
QUESTION (``to: "human"``) and ANSWER (``by: "human"``) events itself, since it owns the question
id, pauses the job in ``waiting_for_answer`` and resumes it when the answer arrives."""

Speak = Callable[[Role, list[dict[str, str]], int], Awaitable[str]]
"""One model call as a role, with its completion-token cap (the runner adds budgets and accounting).
The reply may be an ``accounting.Reply``, which says whether it was cut at the cap."""


@dataclass
class Turn:
    speaker: str  # a role name, or "human"
    text: str
    side: str  # "instructor" or "assistant": whose side of the dialogue it is on


@dataclass
class DialogueResult:
    conclusion: str
    last_reply: str  # the assistant's last reply (code and findings are parsed from it)
    concluded: bool  # a marker ended the dialogue
    reflected: bool
    transcript: list[Turn] = field(default_factory=list)

    @property
    def cut_at_cap(self) -> bool:
        """The assistant's last reply stopped at the phase's token cap (it is incomplete)."""
        return bool(getattr(self.last_reply, "cut_at_cap", False))


_ASK_RULE = ("If you lack a specific you need (an exact name, a version, a behaviour), you may first reply "
             "with one line: QUESTION: <your question>. You will get an answer.")
_ANSWER_RULE = "The {assistant} asks you a question. Answer it with the exact specifics, briefly."
_HUMAN_RULE = (" If only the user who made the request can answer it (what they want, their preferences), "
               "reply with one line: ASK_HUMAN: <the question for the user>.")
def _normal(text: str) -> str:
    return " ".join(text.lower().split())


_CUT_REPLY = "(my reply was cut off at its length limit; it is left out here)"
_GUESS = "Nobody can answer that now. Make a reasonable assumption, say which, and continue."
_NO_MORE = "No more questions: make a reasonable assumption for anything missing, say which, and answer now."
_DISCUSS_RULE = ("You are talking with the {assistant}. If you agree with its reply, answer with one line: "
                 "{marker} <the conclusion>. Otherwise say what to change.")


class Dialogue:
    def __init__(self, phase: Phase, instructor: Role, assistant: Role, prompt: str, *, speak: Speak,
                 say: Say, ask_human: AskHuman | None = None, job_id: str | None = None,
                 history: Sequence[Turn] = ()) -> None:
        self.phase, self.instructor, self.assistant = phase, instructor, assistant
        self.prompt = prompt
        self._speak, self._say, self._ask_human, self.job_id = speak, say, ask_human, job_id
        # an earlier phase's conversation this one goes on with (``Phase.continues``): sent before its own
        # turns, unchanged, so a prompt cache serves it again; it is not part of this phase's transcript
        self.history = tuple(history)
        self.transcript: list[Turn] = []
        self.questions_asked = 0

    @property
    def _side_cap(self) -> int:
        return min(SIDE_MAX_TOKENS, self.phase.token_cap)

    # -- views of the transcript -------------------------------------------------------------

    def _view(self, side: str, system: str) -> list[dict[str, str]]:
        """The transcript as one side sees it: its own turns are "assistant", the other's "user"."""
        messages = [{"role": "system", "content": system}]
        for turn in (*self.history, *self.transcript):
            messages.append({"role": "assistant" if turn.side == side else "user", "content": turn.text})
        return messages

    def _assistant_system(self) -> str:
        rules = [self.assistant.prompt]
        if self.questions_asked < self.phase.max_questions:
            rules.append(_ASK_RULE)
        return "\n\n".join(rules)

    async def _add(self, side: str, text: str) -> None:
        speaker, to = ((self.instructor.name, self.assistant.name) if side == "instructor"
                       else (self.assistant.name, self.instructor.name))
        self.transcript.append(Turn(speaker, text, side))
        await self._say(MessageData(text=text, to=to or None), speaker)

    async def _assistant_turn(self) -> str:
        reply = await self._speak(self.assistant, self._view("assistant", self._assistant_system()),
                                  self.phase.token_cap)
        await self._add("assistant", reply)
        return reply

    # -- the dialogue ------------------------------------------------------------------------

    async def run(self) -> DialogueResult:
        await self._add("instructor", self.prompt)
        turns = 0
        reply = ""
        nudged = False  # told once that no questions are left; after that a question is just a reply
        while turns < self.phase.max_turns:
            reply = await self._assistant_turn()
            human_q = self._new_question(find_human_question(reply))
            question = human_q or self._new_question(find_question(reply))
            if question is not None and not nudged and find_conclusion(reply, self.phase.marker) is None:
                if self.questions_asked < self.phase.max_questions:
                    self.questions_asked += 1
                    await self._answer(question, direct_to_human=human_q is not None)
                    continue
                await self._add("instructor", _NO_MORE)
                nudged = True
                continue
            turns += 1
            conclusion = find_conclusion(reply, self.phase.marker)
            if conclusion is not None:
                return DialogueResult(conclusion, reply, True, False, self.transcript)
            if turns >= self.phase.max_turns:
                break
            # Several turns allowed: the instructor reacts and may conclude itself.
            system = "\n\n".join([self.instructor.prompt, _DISCUSS_RULE.format(
                assistant=self.assistant.name, marker=self.phase.marker)])
            answer = await self._speak(self.instructor, self._view("instructor", system), self._side_cap)
            await self._add("instructor", answer)
            conclusion = find_conclusion(answer, self.phase.marker)
            if conclusion is not None:
                return DialogueResult(conclusion, reply, True, False, self.transcript)
        if self.phase.reflect:
            return DialogueResult(await self._reflect(), reply, False, True, self.transcript)
        return DialogueResult(reply.strip(), reply, False, False, self.transcript)

    def _new_question(self, question: str | None) -> str | None:
        """``question`` unless it only repeats the prompt: a small model echoes the task's own question
        (``Question: …``), and nobody should be asked what the user just asked."""
        if question is None or _normal(question) in _normal(self.prompt):
            return None
        return question

    async def correct(self, message: str) -> str:
        """Send the assistant a correction (its reply could not be used) and return its new reply. A
        reply cut at its cap is not sent back with it: the cut text filled the room the new reply
        needs (a 4,096-token window: prompt, cut reply and correction no longer fit)."""
        last = self.transcript[-1] if self.transcript else None
        if last is not None and last.side == "assistant" and getattr(last.text, "cut_at_cap", False):
            self.transcript[-1] = Turn(last.speaker, _CUT_REPLY, last.side)
        await self._add("instructor", message)
        return await self._assistant_turn()

    async def _answer(self, question: str, *, direct_to_human: bool) -> None:
        """Get an answer to the assistant's question: from the instructor, else from the human."""
        human_ok = self.phase.ask_human and self._ask_human is not None
        asker = self.assistant.name
        if not direct_to_human:
            question_id = f"q-{uuid.uuid4().hex[:10]}"
            await self._say(QuestionData(question_id=question_id, text=question, to="instructor"),
                            self.assistant.name)
            system = self.instructor.prompt + "\n\n" + _ANSWER_RULE.format(assistant=self.assistant.name)
            if human_ok:
                system += _HUMAN_RULE
            answer = await self._speak(self.instructor, self._view("instructor", system), self._side_cap)
            asked = find_human_question(answer)
            escalated = self._new_question(asked)
            if escalated is None or not human_ok:
                text = answer if asked is None else _GUESS
                await self._say(AnswerData(question_id=question_id, text=text, by=self.instructor.name),
                                self.instructor.name)
                await self._add("instructor", text)
                return
            await self._say(AnswerData(question_id=question_id, text=answer, by=self.instructor.name, escalated=True),
                            self.instructor.name)
            await self._add("instructor", answer)
            question, asker = escalated, self.instructor.name
        elif not human_ok:
            await self._add("instructor", _GUESS)
            return
        assert self._ask_human is not None
        answer = (await self._ask_human(question) or "").strip()
        if not answer:
            await self._add("instructor", _GUESS)
            return
        self.transcript.append(Turn("human", f"The user answers: {answer}", "instructor"))
        await self._say(MessageData(text=answer, to=asker), "human")

    async def _reflect(self) -> str:
        """Ask for the conclusion the dialogue never stated (one short call)."""
        lines = [f"{turn.speaker}: {turn.text}" for turn in self.transcript]
        prompt = (f"A discussion between the {self.instructor.name} and the {self.assistant.name}:\n\n"
                  + "\n\n".join(lines)
                  + f"\n\nWhat did they conclude? Reply with one line: {self.phase.marker} <the conclusion>")
        system = "You extract the conclusion of a discussion, in a few words, without adding anything."
        reply = await self._speak(self.instructor, [{"role": "system", "content": system},
                                                    {"role": "user", "content": prompt}],
                                  min(REFLECT_MAX_TOKENS, self.phase.token_cap))
        await self._say(MessageData(text=reply, reflection=True), self.instructor.name)
        conclusion = find_conclusion(reply, self.phase.marker)
        return (conclusion if conclusion is not None else reply).strip()
