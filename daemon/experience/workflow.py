"""Workflow shortcuts (Co-Saving): which steps of a chain were redundant on similar tasks, and
whether to skip or shorten them now.

Only two kinds of step are ever candidates, because only they can be redundant without
changing what later steps see:

- a loop that runs until the reviewer says "Finished": skipped when similar runs never changed
  anything in it, or cut to the cycles that did work (the last cycle only confirmed);
- a phase that writes a document: skipped when similar runs wrote nothing (no third-party
  package, say).

Tests never: loops until the tests pass and tool steps are not asked about at all (the runner
does not offer them), and neither are code, findings, answer or decision phases.

The decision weighs the chance the step is redundant against its cost, with an urgency factor
that weighs cost more as the job's token budget runs out::

    skip  <=>  p_redundant >= 0.5  and  1 − p_redundant < (1 + urgency · budget_used) · cost / tokens_left
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from daemon.agents.model import Chain, Loop, Phase, Produces, Until
from daemon.json_types import JsonDict, JsonObject
from daemon.llm.budget import Budget

if TYPE_CHECKING:
    from daemon.experience.session import PhaseRecord

SimilarRun = tuple[float, int, JsonObject]
"""(task similarity, experience id, that run's workflow data as the store keeps it: read with ``.get``)."""


@dataclass
class StepPlan:
    """What to do with one step: ``cycles`` for a loop (0 = skip it), ``skip`` for a phase."""

    step: str
    cycles: int | None = None
    skip: bool = False
    reason: str = ""
    used: list[int] = field(default_factory=list)  # the workflow experiences behind the decision


def step_key(step: Loop | Phase) -> str:
    return f"loop:{step.name}" if isinstance(step, Loop) else f"phase:{step.name}"


def skippable(step: Loop | Phase) -> bool:
    if isinstance(step, Loop):
        return step.until is Until.FINISHED
    return step.produces is Produces.DOCUMENT


def trajectory_steps(chain: Chain, records: list[PhaseRecord]) -> dict[str, JsonDict]:
    """What each skippable step cost in one run and whether it was redundant. ``records`` are the
    run's phase records (``phase``, ``cycle``, ``tokens``, ``calls``, ``changed``), in order."""
    steps: dict[str, JsonDict] = {}
    for step in chain.steps:
        if isinstance(step, Loop) and skippable(step):
            names = [p.name for p in step.phases]
            mine = [r for r in records if r.phase in names]
            if not mine:
                continue
            firsts = [r for r in mine if r.phase == names[0]]
            work = {r.cycle for r in mine if r.phase != names[0]}
            finished = len(firsts) > len(work)  # the last first phase was not followed: the stop word came
            steps[step_key(step)] = {
                "tokens": sum(r.tokens for r in mine), "calls": sum(r.calls for r in mine),
                "work_cycles": len(work), "finished": finished, "redundant": not work and finished,
                "confirm_tokens": firsts[-1].tokens if finished else 0}
        elif isinstance(step, Phase) and skippable(step):
            mine = [r for r in records if r.phase == step.name]
            if mine:
                steps[step_key(step)] = {"tokens": sum(r.tokens for r in mine), "calls": sum(r.calls for r in mine),
                                         "redundant": not any(r.changed for r in mine)}
    return steps


def _worth_skipping(p_redundant: float, cost: float, budget: Budget | None, typical_tokens: float,
                    urgency: float) -> bool:
    if p_redundant < 0.5:
        return False
    used = budget.fraction_used if budget is not None else 0.0
    if budget is not None and budget.tokens:
        left = max(1.0, budget.tokens - budget.used_tokens)
    else:
        left = max(1.0, typical_tokens)
    return 1 - p_redundant < (1 + urgency * used) * cost / left


def plan_step(step: Loop | Phase, history: list[SimilarRun], *, budget: Budget | None,
              min_support: int, urgency: float) -> StepPlan | None:
    """Decide from ``history``: (task similarity, experience id, that run's workflow data) of similar
    successful runs. None: run the step as configured."""
    if not skippable(step):
        return None
    key = step_key(step)
    runs = [(weight, eid, data["steps"][key], data.get("tokens", 0)) for weight, eid, data in history
            if key in data.get("steps", {})]
    if len(runs) < min_support:
        return None
    total = sum(w for w, *_ in runs) or 1.0
    typical = sum(w * tokens for w, _, _, tokens in runs) / total
    used = [eid for _, eid, _, _ in runs]
    p_idle = sum(w for w, _, s, _ in runs if s["redundant"]) / total
    cost = sum(w * s["tokens"] for w, _, s, _ in runs) / total
    what = "loop" if isinstance(step, Loop) else "phase"
    if _worth_skipping(p_idle, cost, budget, typical, urgency):
        return StepPlan(key, cycles=0 if isinstance(step, Loop) else None, skip=True, used=used,
                        reason=f"{what} {step.name!r} did nothing in {p_idle:.0%} of {len(runs)} similar runs "
                               f"(about {cost:.0f} tokens)")
    if not isinstance(step, Loop):
        return None
    finished = [(w, s) for w, _, s, _ in runs if s.get("finished")]
    if not finished:
        return None
    cycles = max(s["work_cycles"] for _, s in finished)
    p_done = sum(w for w, s in finished if s["work_cycles"] <= cycles) / total
    confirm = sum(w * s.get("confirm_tokens", 0) for w, s in finished) / total
    if 0 < cycles < step.max_cycles and _worth_skipping(p_done, confirm, budget, typical, urgency):
        return StepPlan(key, cycles=cycles, used=used,
                        reason=f"loop {step.name!r} finished after {cycles} cycle(s) of work in {p_done:.0%} of "
                               f"{len(runs)} similar runs; its confirming cycle is skipped")
    return None
