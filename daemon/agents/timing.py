"""A chain's time limit from the model's measured speed.

A chain with ``time_limit_covers = ["review", "reproduce"]`` gets, when the model's speed is known
(the local server measures it at each start; a provider's model may be given ``[model]
tokens_per_s`` and ``prompt_per_s``), a limit that leaves each of those phases time to process its
prompt and to write its reply up to its cap, plus the sandbox runs around the calls. A slow
machine then still finishes a useful review, and a fast one does not wait out a limit set for a
slow one. Without a measured speed the chain's fixed ``time_limit`` holds.

A phase that ``continues`` an earlier one pays only for its new message: the conversation before
it is the prompt cache's (and the earlier reply was written into that cache as it was generated).

    seconds, why = speed_limit(chain, settings.model, file_tokens=900)

Within the limit, a call whose prompt alone would take longer to process than the time left is not
started (:func:`too_late`): it could write nothing before the limit, and would hold the model server
past it.

    reason = too_late(prompt, settings.model, seconds_left=12.0)  # "" when it may start
"""

from __future__ import annotations

from daemon.agents.model import Chain
from daemon.config import ModelSettings
from daemon.workspace.repomap import estimate_tokens

TOOL_SECONDS = 6.0
"""The sandbox runs a review makes around its calls: the static check, the examples, the related
tests, and the reproducing test on the code and with each fix (about a second each here)."""
NEW_MESSAGE_TOKENS = 120
"""What a continuing phase's message holds beyond its template (the review's suspects: two lines)."""
MIN_SECONDS = 20.0
"""However fast the model: the repository's related tests run inside the limit too."""
MAX_SECONDS = 180.0
"""However slow: a review on save that takes longer is no longer waited for."""


def speed_limit(chain: Chain, model: ModelSettings, file_tokens: int) -> tuple[float, str] | None:
    """The chain's limit in seconds at ``model``'s measured speed, and how it was reached, for phases
    that see ``file_tokens`` of code; None when the chain covers no phase or the speed is not known."""
    if not chain.time_limit_covers or not model.tokens_per_s or not model.prompt_per_s:
        return None
    seconds, parts = TOOL_SECONDS, []
    for phase in chain.phases():
        if phase.name not in chain.time_limit_covers:
            continue
        prompt = estimate_tokens(phase.template)
        if phase.continues:
            prompt += NEW_MESSAGE_TOKENS
        else:
            role = chain.roles.get(phase.assistant)
            prompt += file_tokens + (estimate_tokens(role.prompt) if role else 0)
        seconds += prompt / model.prompt_per_s + phase.token_cap / model.tokens_per_s
        parts.append(f"{phase.name}: {prompt} prompt tokens, {phase.token_cap} to write")
    seconds = min(MAX_SECONDS, max(MIN_SECONDS, seconds))
    return seconds, (f"{seconds:.0f} s from the model's measured speed ({model.tokens_per_s:g} tokens/s written, "
                     f"{model.prompt_per_s:g} processed; {'; '.join(parts)}; {TOOL_SECONDS:g} s of sandbox runs)")


def too_late(prompt: str, model: ModelSettings, seconds_left: float) -> str:
    """Why a call with this new ``prompt`` (its messages before are the prompt cache's) cannot write
    anything in ``seconds_left`` at ``model``'s measured prompt speed; "" when it can, or when the
    speed is not known."""
    if not model.prompt_per_s:
        return ""
    tokens = estimate_tokens(prompt)
    needed = tokens / model.prompt_per_s
    if needed <= seconds_left:
        return ""
    return (f"the {max(0.0, seconds_left):.0f} s left before the chain's time limit do not cover processing its prompt "
            f"(about {tokens} tokens at {model.prompt_per_s:g} tokens/s: {needed:.0f} s)")
