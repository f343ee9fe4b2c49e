"""The one door to language models: every agent call goes through :meth:`Gateway.complete`.

It wraps litellm's ``acompletion`` with what a daily tool needs: a model per role, retries with
exponential backoff and jitter (honouring ``Retry-After``), a per-call timeout, a global
concurrency limit, usage and cost per job (unknown or local models cost 0), per-job budgets,
and secrets kept out of every message. litellm is imported on first use, never at start-up.

    gateway = Gateway(load_settings(root).model, on_usage=store_usage)
    reply = await gateway.complete([{"role": "user", "content": "hi"}], role="reviewer",
                                   job_id=job.id, budget=Budget(tokens=50_000))
    print(reply.text, reply.usage.total_tokens, reply.usage.cost)

Every call has a completion-token cap (``max_tokens``, :data:`DEFAULT_MAX_TOKENS` when the caller
gives none), and a reply that falls into a loop (the same line or block again and again) is cut
after its first copy: a stream stops there, a whole reply is trimmed. ``finish_reason`` is then
``"repetition"``; a reply that hit the cap keeps the provider's ``"length"``. A call may also have a
``deadline`` (``time.monotonic()``): a stream still being written then stops there, keeping what
came (``"time_limit"``); a call that cannot start or finish before it raises :class:`TimeLimitReached`.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Protocol, TypedDict

from daemon.config import ModelSettings
from daemon.llm.budget import Budget, Usage
from daemon.llm.errors import LLMBadResponse, LLMError, LLMNotConfigured, LLMUnavailable, TimeLimitReached
from daemon.llm.repetition import loop_cut, trim_loop
from daemon.redact import redact, register_secret
from daemon.retry import Backoff, retry_after

log = logging.getLogger("troupe.llm")

UsageSink = Callable[[str | None, str | None, str, Usage], Awaitable[None] | None]
"""Called after every successful call with (job_id, role, model, usage)."""
DeltaSink = Callable[[str], Awaitable[None] | None]

_RETRY_AFTER_CAP = 60.0  # a provider asking us to wait longer than this is treated as unavailable
DEFAULT_MAX_TOKENS = 4096  # the cap of a call whose caller names none: no call generates without limit
REPETITION = "repetition"  # the finish reason of a reply cut because it repeated itself
TIME_LIMIT = "time_limit"  # the finish reason of a reply stopped at its call's deadline
_LOOP_CHECK_CHARS = 64  # a stream is checked for a loop every this many new characters
# Providers whose prompt cache needs explicit breakpoints (Anthropic's cache_control, through litellm);
# OpenAI, DeepSeek and others cache a repeated prefix by themselves. The breakpoints: the system
# message (role and rules, the same in every phase a role speaks in) always; the phase's prompt once
# its dialogue continues (a correction, a question, a second turn), since further turns then read
# it: a one-call phase does not pay the cache write's premium (Anthropic bills it at 1.25x).
_MARKED_CACHE_PROVIDERS = frozenset({"anthropic", "bedrock", "vertex_ai", "openrouter"})
CACHE_SYSTEM: dict[str, str | int] = {"location": "message", "role": "system"}
CACHE_PROMPT: dict[str, str | int] = {"location": "message", "index": 1}


@dataclass
class Completion:
    text: str
    model: str
    usage: Usage
    finish_reason: str | None
    seconds: float
    attempts: int


class ModelGateway(Protocol):
    """What the engine needs from a gateway: :class:`Gateway` itself, or a view of one that sets a
    team's model and temperature (``daemon.teams.team_gateway``)."""

    @property
    def settings(self) -> ModelSettings: ...

    def model_for(self, role: str | None = None, override: str | None = None) -> str: ...

    async def complete(self, messages: list[dict[str, str]], *, role: str | None = None, model: str | None = None,
                       job_id: str | None = None, budget: Budget | None = None, temperature: float | None = None,
                       max_tokens: int | None = None, stream: bool = False, on_delta: DeltaSink | None = None,
                       timeout: float | None = None, stop_on_repetition: bool = True,
                       deadline: float | None = None) -> Completion: ...


class _Request(TypedDict, total=False):
    """The keywords of one ``litellm.acompletion`` call, as :meth:`Gateway.complete` builds them."""

    model: str
    messages: list[dict[str, str]]
    timeout: float
    num_retries: int
    max_retries: int
    api_base: str
    api_key: str
    temperature: float
    drop_params: bool
    max_tokens: int
    cache_control_injection_points: list[dict[str, str | int]]


# litellm is imported lazily (seconds), so it is held as a module: what it hands back (responses, stream
# chunks, usage) is untyped to mypy and read here with getattr, checked as it is read (an edge, like JSON).
_litellm: ModuleType | None = None


def import_litellm() -> ModuleType:
    """Import litellm with its network look-ups switched off (it is slow: call it off the hot path)."""
    global _litellm
    if _litellm is None:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
        import litellm

        litellm.suppress_debug_info = True
        litellm.telemetry = False
        _litellm = litellm
    return _litellm


def price_unknown_at_zero(litellm: ModuleType, model: str) -> bool:
    """Enter a model litellm has no price for (a local server, a fine-tune) at zero cost, once.

    Troupe counts such calls as free anyway; without an entry litellm searches its whole price
    list with regular expressions on every reply (~0.3 ms of CPU a call, which adds up over a
    thousand agents). True when the model is one of those."""
    try:
        litellm.get_model_info(model)
        return False
    except Exception:
        provider, _, name = model.partition("/")
        litellm.register_model({model: {"input_cost_per_token": 0.0, "output_cost_per_token": 0.0,
                                        "cache_creation_input_token_cost": 0.0, "cache_read_input_token_cost": 0.0,
                                        "litellm_provider": provider if name else "openai", "mode": "chat"}})
        return True


def cache_points(litellm: ModuleType, model: str, messages: list[dict[str, str]]) -> list[dict[str, str | int]] | None:
    """The prompt-cache breakpoints to ask litellm for with ``model`` for these messages, or None
    where the provider needs none or has no prompt cache."""
    if model.partition("/")[0] not in _MARKED_CACHE_PROVIDERS:
        return None
    try:
        if not litellm.utils.supports_prompt_caching(model=model):
            return None
    except Exception:  # an unknown model: no cache marks (a request without them is always valid)
        return None
    return [dict(CACHE_SYSTEM)] + ([dict(CACHE_PROMPT)] if len(messages) > 2 else [])


def usage_of(u: object) -> Usage:  # a litellm usage object (or None), read with getattr
    """Tokens from a litellm usage object, with the prompt tokens read from the provider's cache
    (OpenAI's ``prompt_tokens_details.cached_tokens``, Anthropic's ``cache_read_input_tokens``)."""
    details = getattr(u, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) or getattr(u, "cache_read_input_tokens", None) or 0
    return Usage(getattr(u, "prompt_tokens", 0) or 0, getattr(u, "completion_tokens", 0) or 0,
                 cached_prompt_tokens=int(cached) if isinstance(cached, int | float) else 0)


def _retry_after(exc: BaseException) -> float | None:
    """Seconds the provider asked us to wait, from the exception's response headers."""
    candidates = [getattr(exc, "litellm_response_headers", None)]
    response = getattr(exc, "response", None)
    candidates.append(getattr(response, "headers", None))
    for headers in candidates:
        if not headers:
            continue
        try:
            value = headers.get("retry-after") or headers.get("Retry-After")
        except AttributeError:
            continue
        seconds = retry_after(value)
        if seconds is not None:
            return seconds
    return None


def _status(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


class Gateway:
    def __init__(
        self,
        settings: ModelSettings,
        *,
        on_usage: UsageSink | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.settings = settings
        self.on_usage = on_usage
        self._sleep = sleep
        self._slots = asyncio.Semaphore(max(1, settings.concurrency))
        self._priced: dict[str, bool] = {}  # model -> whether litellm has a price for it
        if settings.api_key:
            register_secret(settings.api_key.reveal())

    def model_for(self, role: str | None = None, override: str | None = None) -> str:
        model = override or self.settings.for_role(role)
        if not model:
            raise LLMNotConfigured(
                "no model is configured: set TROUPE_MODEL to a litellm model string "
                "(for example openai/gpt-4o-mini, anthropic/claude-sonnet-4-5, ollama/qwen2.5-coder) "
                "or [model] default in .troupe.toml"
            )
        return model

    async def complete(
        self,
        messages: list[dict[str, str]],
        *,
        role: str | None = None,
        model: str | None = None,
        job_id: str | None = None,
        budget: Budget | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        stream: bool = False,
        on_delta: DeltaSink | None = None,
        timeout: float | None = None,
        stop_on_repetition: bool = True,
        deadline: float | None = None,
    ) -> Completion:
        """One chat completion, retried on transient failures. Raises :class:`LLMError` subclasses.
        ``deadline`` (``time.monotonic()``): a stream stops there with what it has; no call starts,
        waits or is retried past it (:class:`TimeLimitReached`)."""
        if not messages:
            raise ValueError("complete() needs at least one message")
        name = self.model_for(role, model)
        if budget is not None:
            budget.check()
        litellm = _litellm if _litellm is not None else await asyncio.to_thread(import_litellm)
        if name not in self._priced:
            self._priced[name] = not price_unknown_at_zero(litellm, name)
        kwargs: _Request = {
            "model": name,
            "messages": messages,
            "timeout": timeout or self.settings.timeout,
            "num_retries": 0,  # retries are ours: bounded, with backoff and Retry-After
            "max_retries": 0,
        }
        if self.settings.api_base:
            kwargs["api_base"] = self.settings.api_base
        if self.settings.api_key:
            kwargs["api_key"] = self.settings.api_key.reveal()
        if temperature is None:
            temperature = self.settings.temperature
        if temperature is not None:
            kwargs["temperature"] = temperature
            kwargs["drop_params"] = True  # a model that takes no temperature (OpenAI's o-series) is still asked
        kwargs["max_tokens"] = max_tokens if max_tokens is not None else DEFAULT_MAX_TOKENS
        points = cache_points(litellm, name, messages)
        if points:
            kwargs["cache_control_injection_points"] = points

        started = time.monotonic()
        attempts = 0
        while True:
            attempts += 1
            try:
                async with self._slots:
                    wait = kwargs["timeout"] + 5.0  # a stream that stalls past litellm's own timeout
                    if deadline is not None:
                        left = deadline - time.monotonic()
                        if left <= 0:
                            raise TimeLimitReached(f"the time limit passed before model {name} was called")
                        wait = min(wait, left + 2.0)  # a stream returns at the deadline; the rest is a stall
                    text, finish, usage = await asyncio.wait_for(
                        self._call(litellm, kwargs, stream, on_delta, stop_on_repetition, deadline), timeout=wait)
                break
            except (asyncio.CancelledError, LLMNotConfigured, TimeLimitReached):
                raise
            except Exception as exc:  # classified below; nothing is swallowed
                if deadline is not None and time.monotonic() >= deadline:
                    raise TimeLimitReached(f"the time limit passed while model {name} was called "
                                           f"({type(exc).__name__})") from None
                retryable, reason = self._classify(litellm, exc)
                if not retryable:
                    raise LLMError(f"model {name} refused the request: {reason}") from None
                if attempts > self.settings.max_retries:
                    raise LLMUnavailable(
                        f"model {name} failed {attempts} times, last: {reason}; check the provider "
                        "or raise [model] max_retries / timeout"
                    ) from None
                delay = self._backoff(attempts, _retry_after(exc))
                if delay is None:
                    raise LLMUnavailable(
                        f"model {name} asked to wait more than {_RETRY_AFTER_CAP:.0f}s ({reason})"
                    ) from None
                log.warning("model %s: %s; retry %d in %.2fs", name, reason, attempts, delay)
                await self._sleep(delay)

        usage.cost = self._price(litellm, name, usage) if self._priced[name] else 0.0
        if budget is not None:
            budget.charge(usage)
        if self.on_usage is not None:
            result = self.on_usage(job_id, role, name, usage)
            if inspect.isawaitable(result):
                await result
        return Completion(text=text, model=name, usage=usage, finish_reason=finish,
                          seconds=time.monotonic() - started, attempts=attempts)

    async def _call(self, litellm: ModuleType, kwargs: _Request, stream: bool, on_delta: DeltaSink | None,
                    stop_on_repetition: bool, deadline: float | None) -> tuple[str, str | None, Usage]:
        if not stream:
            response = await litellm.acompletion(**kwargs)
            try:
                choice = response.choices[0]
                text = choice.message.content or ""
                finish = choice.finish_reason
            except (AttributeError, IndexError, TypeError) as exc:
                raise LLMBadResponse(f"reply has no choices/message: {str(response)[:200]}") from exc
            usage = usage_of(getattr(response, "usage", None))
            if not usage.total_tokens:
                usage = self._estimate(litellm, kwargs, text)
            if stop_on_repetition:
                text, looped = trim_loop(text)
                finish = REPETITION if looped else finish
            return text, finish, usage

        parts: list[str] = []
        finish = None
        usage = Usage()
        size = checked = 0  # characters received, and at the last loop check
        response = await litellm.acompletion(**kwargs, stream=True, stream_options={"include_usage": True})
        async for chunk in response:
            u = getattr(chunk, "usage", None)
            if u is not None and getattr(u, "total_tokens", None):
                usage = usage_of(u)
            if not getattr(chunk, "choices", None):
                continue
            choice = chunk.choices[0]
            finish = getattr(choice, "finish_reason", None) or finish
            delta = getattr(getattr(choice, "delta", None), "content", None)
            if delta:
                parts.append(delta)
                size += len(delta)
                if on_delta is not None:
                    result = on_delta(delta)
                    if inspect.isawaitable(result):
                        await result
            if stop_on_repetition and size - checked >= _LOOP_CHECK_CHARS:
                checked = size
                if loop_cut("".join(parts)) is not None:  # stop generating: the rest would be more of the same
                    finish = REPETITION
                    await _close(response)
                    break
            if deadline is not None and time.monotonic() >= deadline:
                finish = TIME_LIMIT  # what came is kept; the caller knows it may be unfinished
                await _close(response)
                break
        text = "".join(parts)
        if finish is None:
            raise LLMBadResponse("the stream ended without a finish reason (connection cut mid-reply)")
        if not usage.total_tokens:
            usage = self._estimate(litellm, kwargs, text)  # what was generated, the loop included
        if stop_on_repetition:
            text, looped = trim_loop(text)
            finish = REPETITION if looped else finish
        return text, finish, usage

    @staticmethod
    def _estimate(litellm: ModuleType, kwargs: _Request, text: str) -> Usage:
        """Token counts when the provider sent none (bundled tokenizer, offline)."""
        try:
            prompt = litellm.token_counter(model=kwargs["model"], messages=kwargs["messages"])
            completion = litellm.token_counter(model=kwargs["model"], text=text) if text else 0
        except Exception:
            prompt = sum(len(m.get("content") or "") for m in kwargs["messages"]) // 4
            completion = len(text) // 4
        return Usage(int(prompt), int(completion))

    @staticmethod
    def _price(litellm: ModuleType, model: str, usage: Usage) -> float:
        """Dollars for this call from litellm's bundled price list (cached prompt tokens at the cached
        rate); 0 for local or unpriced models."""
        try:
            prompt_cost, completion_cost = litellm.cost_per_token(
                model=model, prompt_tokens=usage.prompt_tokens, completion_tokens=usage.completion_tokens,
                cache_read_input_tokens=usage.cached_prompt_tokens,  # priced at the provider's cached rate
            )
            return float(prompt_cost + completion_cost)
        except Exception:
            return 0.0

    @staticmethod
    def _classify(litellm: ModuleType, exc: BaseException) -> tuple[bool, str]:
        """(retryable, a short reason a person can read)."""
        reason = redact(f"{type(exc).__name__}: {exc}")[:300]
        if isinstance(exc, LLMBadResponse | asyncio.TimeoutError):
            return True, reason
        if isinstance(exc, litellm.ContextWindowExceededError):
            return False, "the prompt is larger than the model's context window"
        if isinstance(exc, litellm.AuthenticationError):
            return False, "the provider rejected the API key (check TROUPE_API_KEY or the provider's variable)"
        if isinstance(exc, litellm.NotFoundError):
            return False, f"the model or endpoint does not exist ({reason})"
        retry_types = (litellm.RateLimitError, litellm.Timeout, litellm.APIConnectionError,
                       litellm.InternalServerError, litellm.ServiceUnavailableError)
        if isinstance(exc, retry_types):
            return True, reason
        status = _status(exc)
        if status is not None and (status == 429 or status >= 500):
            return True, reason
        if isinstance(exc, litellm.BadRequestError | litellm.APIError) and status in (400, 401, 403, 404, 422):
            return False, reason
        if isinstance(exc, ValueError | KeyError | TypeError | AttributeError):
            return True, f"malformed reply ({reason})"
        return isinstance(exc, litellm.APIError | OSError), reason

    def _backoff(self, attempt: int, retry_after: float | None) -> float | None:
        if retry_after is not None:
            return None if retry_after > _RETRY_AFTER_CAP else retry_after + random.uniform(0, 0.1)
        return Backoff(self.settings.backoff_base, self.settings.backoff_max, spread=0.5).delay(attempt - 1)


async def _close(stream: object) -> None:  # a litellm stream
    """Close a stream we stop reading, so the server stops generating (llama.cpp notices the hang-up)."""
    close = getattr(stream, "aclose", None)
    try:
        if close is not None:
            await close()
    except Exception as exc:  # the reply is already in hand; a failed close only costs the connection
        log.debug("closing a stream failed: %s", exc)


async def check_model(settings: ModelSettings, timeout: float = 20.0) -> tuple[bool, str]:
    """Ask the configured model for one word; (ok, what happened) for ``troupe doctor``."""
    probe = ModelSettings(**{**settings.__dict__, "max_retries": 0, "timeout": timeout})
    try:
        reply = await Gateway(probe).complete(
            [{"role": "user", "content": "Reply with the single word: ready"}], max_tokens=8
        )
    except LLMError as exc:
        return False, str(exc)
    return True, f"{reply.model} answered in {reply.seconds:.2f}s ({reply.usage.total_tokens} tokens)"
