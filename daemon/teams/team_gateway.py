"""The job's gateway as one team or network sees it: its own temperature and model.

The real :class:`~daemon.llm.gateway.Gateway` stays shared, so its concurrency limit, retries,
budgets and usage records hold for every team at once.
"""

from __future__ import annotations

from typing import Any

from daemon.config import ModelSettings
from daemon.llm.gateway import Completion, ModelGateway


class TeamGateway:
    def __init__(self, gateway: ModelGateway, *, temperature: float | None = None, model: str | None = None) -> None:
        self.gateway, self.temperature, self.model = gateway, temperature, model

    @property
    def settings(self) -> ModelSettings:
        return self.gateway.settings

    def model_for(self, role: str | None = None, override: str | None = None) -> str:
        return self.gateway.model_for(role, override or self.model)

    async def complete(self, messages: list[dict[str, str]], *, model: str | None = None,
                       temperature: float | None = None, **kwargs: Any) -> Completion:
        """A role's own model (from the chain file) wins over the team's; the team's wins over the default."""
        return await self.gateway.complete(messages, model=model or self.model,
                                           temperature=self.temperature if temperature is None else temperature,
                                           **kwargs)
