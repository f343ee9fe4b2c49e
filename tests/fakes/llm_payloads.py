"""The OpenAI-shaped bodies the fake LLM server sends: completions, stream chunks, errors."""

from __future__ import annotations

import json
import re
import time
from typing import Any

from tests.fakes.llm_script import RecordedRequest, estimate_tokens


def error_body(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": kind}}


def sse(payload: dict[str, Any] | str) -> bytes:
    """One server-sent event: `data: <json>` (or a literal such as `[DONE]`) and a blank line."""
    data = payload if isinstance(payload, str) else json.dumps(payload)
    return f"data: {data}\n\n".encode()


def usage(recorded: RecordedRequest) -> dict[str, Any]:
    prompt, completion = recorded.prompt_tokens, estimate_tokens(recorded.reply or "")
    out: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion,
                           "total_tokens": prompt + completion}
    if recorded.cached_tokens:  # as OpenAI reports a prompt-cache hit (part of prompt_tokens)
        out["prompt_tokens_details"] = {"cached_tokens": recorded.cached_tokens}
    return out


def envelope(recorded: RecordedRequest, kind: str) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-fake-{recorded.number}",
        "object": kind,
        "created": int(time.time()),
        "model": recorded.model,
    }


def completion(recorded: RecordedRequest) -> dict[str, Any]:
    message = {"role": "assistant", "content": recorded.reply}
    return {
        **envelope(recorded, "chat.completion"),
        "choices": [{"index": 0, "message": message, "finish_reason": recorded.finish_reason}],
        "usage": usage(recorded),
    }


def chunks(recorded: RecordedRequest) -> list[dict[str, Any]]:
    """The reply word by word, a finishing chunk, and the usage chunk if the request asked for it."""
    head = envelope(recorded, "chat.completion.chunk")
    pieces = re.findall(r"\s*\S+\s*", recorded.reply or "") or [recorded.reply or ""]
    deltas = [{"role": "assistant", "content": ""}] + [{"content": piece} for piece in pieces if recorded.reply]
    stream = [{**head, "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
    stream.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": recorded.finish_reason}]})
    if (recorded.body.get("stream_options") or {}).get("include_usage"):
        stream.append({**head, "choices": [], "usage": usage(recorded)})
    return stream
