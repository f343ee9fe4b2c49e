"""The ``complete`` job: the bare model, one prompt and one reply through the gateway.

It is what ``troupe eval`` compares the team with: the same model (the workspace's settings,
the bundled local model when nothing is configured), the same accounting, budget and timeout,
but no chain, no roles, no files read. The reply is capped at ``options.max_tokens``; a reply
the cap cut short is marked ``capped`` in the result, an empty one is a failure.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from daemon.events import Event, EventSink
from daemon.jobs.executor import JobResult, RunningJob
from daemon.json_types import JsonDict
from daemon.llm.budget import Budget
from daemon.llm.errors import LLMError
from daemon.messages import COMPLETE_MAX_TOKENS
from daemon.payloads import MessageData, PhaseFinishedData, PhaseStartedData, UsageData

if TYPE_CHECKING:
    from daemon.llm.gateway import ModelGateway


async def run_complete(job: RunningJob, gateway: ModelGateway, budget: Budget, emit: EventSink) -> JobResult:
    cap = job.options.max_tokens or COMPLETE_MAX_TOKENS
    started = time.monotonic()
    await emit(Event(PhaseStartedData(phase="complete"), phase="complete"))
    try:
        reply = await gateway.complete([{"role": "user", "content": job.prompt}], job_id=job.id, budget=budget,
                                       max_tokens=cap)
    except LLMError as exc:
        return JobResult("failed", error=str(exc))
    seconds = time.monotonic() - started
    usage = {"calls": 1, "prompt_tokens": reply.usage.prompt_tokens, "completion_tokens": reply.usage.completion_tokens,
             "tokens": reply.usage.total_tokens, "cost": reply.usage.cost, "model_seconds": round(reply.seconds, 3),
             "seconds": round(seconds, 3)}
    await emit(Event(UsageData(model=reply.model, prompt_tokens=reply.usage.prompt_tokens,
                               completion_tokens=reply.usage.completion_tokens, cost=reply.usage.cost,
                               total_tokens=reply.usage.total_tokens, finish_reason=reply.finish_reason, max_tokens=cap,
                               model_seconds=usage["model_seconds"], seconds=usage["seconds"]), phase="complete"))
    await emit(Event(MessageData(text=reply.text), phase="complete", role="model"))
    capped = reply.finish_reason == "length"
    result: JsonDict = {"answer": reply.text, "model": reply.model, "finish_reason": reply.finish_reason,
                        "capped": capped, "max_tokens": cap, "usage": usage}
    await emit(Event(PhaseFinishedData(phase="complete", conclusion=reply.text[:200], tokens=reply.usage.total_tokens,
                                       cost=reply.usage.cost, seconds=round(seconds, 3)), phase="complete"))
    if not reply.text.strip():
        return JobResult("failed", result, error=f"model {reply.model} sent an empty reply "
                         f"(finish reason {reply.finish_reason!r})")
    return JobResult("succeeded", result)
