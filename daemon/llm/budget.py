"""Per-job budgets in tokens and dollars, and the usage record of one call."""

from __future__ import annotations

from dataclasses import dataclass

from daemon.llm.errors import BudgetExceeded


@dataclass
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    cached_prompt_tokens: int = 0  # of prompt_tokens, read from the provider's prompt cache (billed less)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass
class Budget:
    """What a job may spend. ``None`` means unlimited. The gateway checks before each call."""

    tokens: int | None = None
    dollars: float | None = None
    used_tokens: int = 0
    used_dollars: float = 0.0

    def check(self) -> None:
        if self.tokens is not None and self.used_tokens >= self.tokens:
            raise BudgetExceeded(
                f"token budget spent: {self.used_tokens:,} of {self.tokens:,} tokens used; "
                "raise [budget] tokens in .troupe.toml or TROUPE_BUDGET_TOKENS to continue"
            )
        if self.dollars is not None and self.used_dollars >= self.dollars:
            raise BudgetExceeded(
                f"cost budget spent: ${self.used_dollars:.4f} of ${self.dollars:.4f} used; "
                "raise [budget] dollars in .troupe.toml or TROUPE_BUDGET_DOLLARS to continue"
            )

    def charge(self, usage: Usage) -> None:
        self.used_tokens += usage.total_tokens
        self.used_dollars += usage.cost

    @property
    def fraction_used(self) -> float:
        """How much of the tightest limit is spent, 0..1 (0 when unlimited): the urgency signal."""
        parts = []
        if self.tokens:
            parts.append(self.used_tokens / self.tokens)
        if self.dollars:
            parts.append(self.used_dollars / self.dollars)
        return min(1.0, max(parts, default=0.0))
