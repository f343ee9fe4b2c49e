"""Errors from the LLM gateway. Each message says what went wrong and what to do."""

from __future__ import annotations


class LLMError(RuntimeError):
    """A model call failed for good (after any retries)."""

    retryable = False


class LLMNotConfigured(LLMError):
    """No model is configured for this role."""


class LLMUnavailable(LLMError):
    """The provider kept failing (rate limits, 5xx, timeouts) past the retry limit."""


class LLMBadResponse(LLMError):
    """The provider answered with something that is not a chat completion."""


class BudgetExceeded(LLMError):
    """The job's token or dollar budget is spent; the job must stop."""


class TimeLimitReached(LLMError):
    """The job's time limit (a chain's ``time_limit``) passed before or during this call."""
