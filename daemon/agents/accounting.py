"""Tokens, cost and time per phase and per job, and the one place the engine calls the model.

The engine's own time is the wall time minus the time spent inside gateway calls (waiting for
the model, retries included): that is what ``bench/engine.py`` reports per agent turn.

Every engine call streams with a completion-token cap and stops a reply that loops
(``daemon.llm.gateway``); the :class:`Reply` says how it ended. An empty reply (no text, or a
null ``content``) is a model failure: asked again, then the job fails with a clear error.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

from daemon.agents.model import Role
from daemon.events import Say
from daemon.json_types import JsonObject
from daemon.llm.budget import Budget
from daemon.llm.errors import LLMBadResponse
from daemon.llm.gateway import REPETITION, TIME_LIMIT, Completion, ModelGateway
from daemon.payloads import LogData, UsageData

EMPTY_RETRIES = 2  # an empty reply is asked again this many times before the job fails


class Reply(str):
    """A model's reply text, and why it ended: ``"stop"``, ``"length"`` (it hit ``max_tokens``),
    ``"repetition"`` (it looped; the text keeps what came before the loop and one copy) or
    ``"time_limit"`` (the job's time limit stopped it mid-reply)."""

    finish_reason: str | None
    max_tokens: int | None

    def __new__(cls, text: str, finish_reason: str | None = None, max_tokens: int | None = None) -> Reply:
        reply = super().__new__(cls, text)
        reply.finish_reason, reply.max_tokens = finish_reason, max_tokens
        return reply

    @property
    def cut_at_cap(self) -> bool:
        """Stopped at a cap (tokens or time), so its last part may be unfinished."""
        return self.finish_reason in ("length", TIME_LIMIT)


@dataclass
class Tally:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    model_seconds: float = 0.0  # inside gateway calls
    seconds: float = 0.0        # wall time
    cached_prompt_tokens: int = 0  # of prompt_tokens, read from the provider's prompt cache

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def engine_seconds(self) -> float:
        return max(0.0, self.seconds - self.model_seconds)

    def add(self, completion: Completion, seconds: float) -> None:
        self.calls += 1
        self.prompt_tokens += completion.usage.prompt_tokens
        self.completion_tokens += completion.usage.completion_tokens
        self.cached_prompt_tokens += completion.usage.cached_prompt_tokens
        self.cost += completion.usage.cost
        self.model_seconds += seconds

    def merge(self, other: Tally) -> None:
        for name in ("calls", "prompt_tokens", "completion_tokens", "cost", "model_seconds", "seconds",
                     "cached_prompt_tokens"):
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def to_dict(self) -> dict[str, float]:  # every field a count or seconds
        out = asdict(self)
        out["tokens"] = self.tokens
        out["engine_seconds"] = round(self.engine_seconds, 6)
        return out

    @classmethod
    def from_dict(cls, data: JsonObject) -> Tally:  # to_dict's, read back from a checkpoint
        return cls(**{k: data[k] for k in ("calls", "prompt_tokens", "completion_tokens", "cost",
                                           "model_seconds", "seconds", "cached_prompt_tokens") if k in data})


@dataclass
class PhaseStats:
    phase: str
    cycle: int | None
    tally: Tally = field(default_factory=Tally)
    started: float = field(default_factory=time.monotonic)

    def finish(self) -> None:
        self.tally.seconds = time.monotonic() - self.started


class Meter:
    """Calls the model for the engine, charging the job's budget and counting usage."""

    def __init__(self, gateway: ModelGateway, emit: Say, *, job_id: str | None, budget: Budget | None) -> None:
        self.gateway, self._emit = gateway, emit
        self.job_id, self.budget = job_id, budget
        self.job = Tally()
        self.phase: PhaseStats | None = None
        self.phases: list[PhaseStats] = []
        self.deadline: float | None = None  # time.monotonic() when the chain's time limit passes

    def start_phase(self, name: str, cycle: int | None) -> PhaseStats:
        self.phase = PhaseStats(name, cycle)
        self.phases.append(self.phase)
        return self.phase

    def end_phase(self) -> PhaseStats:
        assert self.phase is not None
        self.phase.finish()
        done, self.phase = self.phase, None
        return done

    async def speak(self, role: Role, messages: list[dict[str, str]], max_tokens: int | None = None) -> Reply:
        for attempt in range(EMPTY_RETRIES + 1):
            completion = await self._call(role, messages, max_tokens)
            if completion.text.strip():
                break
            if attempt == EMPTY_RETRIES:
                raise LLMBadResponse(f"model {completion.model} returned an empty reply (no text) {attempt + 1} "
                                     f"times in a row for the {role.name}; check that the model and its server "
                                     "work (troupe doctor)")
            await self._emit(LogData(level="warning", text=f"the model returned an empty reply; "
                                     f"asking again ({attempt + 1}/{EMPTY_RETRIES})"), role.name)
        if completion.finish_reason in ("length", REPETITION, TIME_LIMIT):
            why = {"length": f"hit its cap of {max_tokens} tokens", TIME_LIMIT: "was stopped at the job's time limit",
                   REPETITION: "repeated itself; it was cut after the first copy"}[completion.finish_reason]
            await self._emit(LogData(level="warning", text=f"the {role.name}'s reply {why}",
                                     finish_reason=completion.finish_reason, max_tokens=max_tokens), role.name)
        return Reply(completion.text, completion.finish_reason, max_tokens)

    async def _call(self, role: Role, messages: list[dict[str, str]], max_tokens: int | None) -> Completion:
        started = time.monotonic()
        completion = await self.gateway.complete(messages, role=role.name, model=role.model, job_id=self.job_id,
                                                 budget=self.budget, max_tokens=max_tokens, stream=True,
                                                 deadline=self.deadline, temperature=role.temperature)
        seconds = time.monotonic() - started
        self.job.add(completion, seconds)
        if self.phase is not None:
            self.phase.tally.add(completion, seconds)
        await self._emit(UsageData(model=completion.model, prompt_tokens=completion.usage.prompt_tokens,
                                   completion_tokens=completion.usage.completion_tokens, cost=completion.usage.cost,
                                   cached_prompt_tokens=completion.usage.cached_prompt_tokens,
                                   total_tokens=self.job.tokens, total_cost=self.job.cost,
                                   finish_reason=completion.finish_reason, max_tokens=max_tokens), role.name)
        return completion
