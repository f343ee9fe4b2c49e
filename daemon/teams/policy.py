"""The puppeteer's policy: which agent acts next, from cheap features of the run's state.

An *action* is one of the chain's loops (run one more cycle: the completion loop's programmer,
the review loop's reviewer and programmer, the test loop's tester) or ``finish``. The state's
features are the ones the issue names: the phase just run, the test status, open findings
(lint issues and an unanswered review comment), placeholders, tokens used, the turn count and
the last agent.

- :func:`heuristic` is the default: finish the placeholders, then make the tests pass, then
  satisfy the reviewer, then stop.
- :class:`LinearPolicy` is learned: a softmax over ``w_a . features + h * [a is the heuristic's
  pick]``. With zero weights and ``h = 2`` it starts close to the heuristic and learns from job
  outcomes by REINFORCE (:func:`reinforce`): reward = success - lambda * cost, discounted by
  gamma = 0.99 back through the episode, with a running-mean baseline.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from daemon.json_types import JsonObject

FINISH = "finish"
SCHEMA = 1
GAMMA = 0.99
LEARNING_RATE = 0.2
HEURISTIC_PRIOR = 2.0
BASELINE_RATE = 0.1


@dataclass(frozen=True)
class State:
    last_action: str          # the loop that ran last, or "start"
    last_agent: str           # the assistant role that acted last, or "none"
    tests: str                # "unknown" (never run, or code changed since), "pass", "fail"
    placeholders: int
    open_findings: int        # lint issues + 1 while the reviewer has an unanswered comment
    tokens: int
    turn: int
    max_turns: int
    available: tuple[str, ...]   # actions allowed now (finish is always one)
    kinds: tuple[tuple[str, str], ...] = ()  # (action, what its loop waits for: tests_pass, ...)

    def kind(self, action: str) -> str | None:
        return dict(self.kinds).get(action)

    def features(self) -> dict[str, float]:
        return {"bias": 1.0, f"tests:{self.tests}": 1.0, "placeholders": min(self.placeholders, 5) / 5,
                "open_findings": min(self.open_findings, 5) / 5, "tokens": min(self.tokens / 20_000, 2.0),
                "turn": self.turn / max(1, self.max_turns), f"last:{self.last_action}": 1.0,
                f"agent:{self.last_agent}": 1.0}


def heuristic(state: State) -> str:
    """Placeholders first, then failing or unknown tests, then the reviewer, then finish."""
    by_kind = {state.kind(a): a for a in state.available if a != FINISH}
    if state.placeholders and "no_placeholders" in by_kind:
        return by_kind["no_placeholders"]
    if state.tests != "pass" and "tests_pass" in by_kind:
        return by_kind["tests_pass"]
    if "finished" in by_kind:
        return by_kind["finished"]
    return FINISH


@dataclass
class Step:
    features: dict[str, float]
    available: tuple[str, ...]
    suggested: str  # the heuristic's pick
    action: str


@dataclass
class Episode:
    """One run's decisions, to learn from once its outcome is known."""

    steps: list[Step] = field(default_factory=list)
    tokens: int = 0


PolicyParams = JsonObject
"""A learned policy's parameters (``schema``, ``weights``, ``heuristic``, ``baseline``, ``episodes``): JSON
the store keeps and gives back; :class:`LinearPolicy` starts afresh from any of another ``schema``."""


def new_params() -> PolicyParams:
    return {"schema": SCHEMA, "weights": {}, "heuristic": HEURISTIC_PRIOR, "baseline": 0.0, "episodes": 0}


class LinearPolicy:
    def __init__(self, params: PolicyParams | None = None, *, rng: random.Random | None = None,
                 greedy: bool = False) -> None:
        self.params = params if params and params.get("schema") == SCHEMA else new_params()
        self.rng = rng or random.Random()
        self.greedy = greedy

    def probabilities(self, features: dict[str, float], available: tuple[str, ...], suggested: str) -> dict[str, float]:
        weights, prior = self.params["weights"], self.params["heuristic"]
        logits = {}
        for action in available:
            w = weights.get(action, {})
            logits[action] = sum(w.get(name, 0.0) * x for name, x in features.items()) + prior * (action == suggested)
        top = max(logits.values())
        exp = {a: math.exp(v - top) for a, v in logits.items()}
        total = sum(exp.values())
        return {a: e / total for a, e in exp.items()}

    def choose(self, state: State) -> Step:
        features, suggested = state.features(), heuristic(state)
        probs = self.probabilities(features, state.available, suggested)
        if self.greedy:
            action = max(probs, key=probs.__getitem__)
        else:
            action = self.rng.choices(list(probs), weights=list(probs.values()))[0]
        return Step(features, state.available, suggested, action)


class HeuristicPolicy:
    def choose(self, state: State) -> Step:
        suggested = heuristic(state)
        return Step(state.features(), state.available, suggested, suggested)


def reward(success: bool, tokens: int, *, cost_weight: float = 0.1, tokens_unit: int = 10_000) -> float:
    """success - lambda * cost, with cost in units of ``tokens_unit`` tokens (lambda = ``cost_weight``)."""
    return (1.0 if success else 0.0) - cost_weight * tokens / tokens_unit


def reinforce(params: PolicyParams, episode: Episode, value: float, *, lr: float = LEARNING_RATE,
              gamma: float = GAMMA) -> PolicyParams:
    """One REINFORCE update from an episode with final reward ``value``; returns new params."""
    policy = LinearPolicy({**params, "weights": {a: dict(w) for a, w in params["weights"].items()}})
    new = policy.params
    baseline = float(new["baseline"])
    last = len(episode.steps) - 1
    for t, step in enumerate(episode.steps):
        advantage = gamma ** (last - t) * value - baseline
        probs = LinearPolicy(params).probabilities(step.features, step.available, step.suggested)
        for action in step.available:
            grad = (1.0 if action == step.action else 0.0) - probs[action]
            row = new["weights"].setdefault(action, {})
            for name, x in step.features.items():
                row[name] = row.get(name, 0.0) + lr * advantage * grad * x
            if action == step.suggested:
                new["heuristic"] += lr * advantage * grad
    new["baseline"] = baseline + BASELINE_RATE * (value - baseline)
    new["episodes"] = int(new.get("episodes", 0)) + 1
    return new
