"""The job's gateway as one team or network sees it: its own temperature and model.

The real :class:`~daemon.llm.gateway.Gateway` stays shared, so its concurrency limit, retries,
budgets and usage records hold for every team at once.
"""

from __future__ import annotations

from daemon.config import ModelSettings
from daemon.llm.budget import Budget
from daemon.llm.gateway import Completion, DeltaSink, ModelGateway


class TeamGateway:
    def __init__(self, gateway: ModelGateway, *, temperature: float | None = None, model: str | None = None) -> None:
        self.gateway, self.temperature, self.model = gateway, temperature, model

    @property
    def settings(self) -> ModelSettings:
        return self.gateway.settings

    def model_for(self, role: str | None = None, override: str | None = None) -> str:
        return self.gateway.model_for(role, override or self.model)

    async def complete(self, messages: list[dict[str, str]], *, role: str | None = None, model: str | None = None,
                       job_id: str | None = None, budget: Budget | None = None, temperature: float | None = None,
                       max_tokens: int | None = None, stream: bool = False, on_delta: DeltaSink | None = None,
                       timeout: float | None = None, stop_on_repetition: bool = True,
                       deadline: float | None = None) -> Completion:
        """A role's own model (from the chain file) wins over the team's; the team's wins over the default."""
        return await self.gateway.complete(messages, role=role, model=model or self.model, job_id=job_id,
                                           budget=budget,
                                           temperature=self.temperature if temperature is None else temperature,
                                           max_tokens=max_tokens, stream=stream, on_delta=on_delta, timeout=timeout,
                                           stop_on_repetition=stop_on_repetition, deadline=deadline)
