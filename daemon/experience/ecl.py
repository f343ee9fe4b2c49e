"""Experiential co-learning (ECL): shortcuts mined from one run's sequence of code states.

The run is a graph whose nodes are distinct code states (by hash: a state the team returned to
is one node) and whose edges are the steps between them. On the shortest path from the first to
the final state each state gets a value::

    value(s) = sim(s, final) / (1 + steps(s, final))      how close it is to where the team got
             × (0.5 + 0.5 · sim(s, task))                  how much it is about the task
             × signal(s)                                   it parses; the tests passed on it
             × (1 + 0.2 · (in_degree(s) − 1), at most 2)   the team came back to it

(similarities are TF-IDF cosines; the task factor is floored at 0.5 because code and prose share
few words). A shortcut is a pair of *non-adjacent* states on the path whose value gain, relative
to the final state's value, is at least ``threshold``, and whose target parses and has no
placeholder: the jump a good instruction could have made in one step.
"""

from __future__ import annotations

import ast
import itertools
from collections import deque
from dataclasses import dataclass, field

from daemon.agents.placeholders import find_unfinished
from daemon.experience.text import Corpus


@dataclass
class StateSnapshot:
    index: int
    hash: str
    instruction: str
    files: dict[str, str]            # the team's files in this state (bounded)
    tests_ok: bool | None = None     # the tests ran on this state: passed / failed; None: not run

    @property
    def text(self) -> str:
        return "\n".join(f"# {path}\n{text}" for path, text in sorted(self.files.items()))

    @property
    def parses(self) -> bool:
        for path, text in self.files.items():
            if path.endswith(".py"):
                try:
                    ast.parse(text)
                except (SyntaxError, ValueError):
                    return False
        return True

    @property
    def has_placeholder(self) -> bool:
        return bool(find_unfinished(self.files.items()))

    @property
    def signal(self) -> float:
        parsed = 1.0 if self.parses else 0.2
        tests = 1.0 if self.tests_ok else 0.8 if self.tests_ok is None else 0.4
        return parsed * tests


@dataclass
class Shortcut:
    source: StateSnapshot
    target: StateSnapshot
    gain: float                                  # relative to the final state's value
    steps: list[str] = field(default_factory=list)  # the instructions recorded along the way


def shortest_path(states: list[StateSnapshot]) -> tuple[list[StateSnapshot], dict[str, int]]:
    """The shortest path from the first to the last state over distinct states, and each node's in-degree."""
    if not states:
        return [], {}
    latest: dict[str, StateSnapshot] = {}
    edges: dict[str, list[str]] = {}
    in_degree: dict[str, int] = {states[0].hash: 0}
    for before, after in itertools.pairwise(states):
        if before.hash != after.hash:
            edges.setdefault(before.hash, []).append(after.hash)
            in_degree[after.hash] = in_degree.get(after.hash, 0) + 1
    for state in states:
        latest[state.hash] = state
    start, goal = states[0].hash, states[-1].hash
    previous: dict[str, str | None] = {start: None}
    queue = deque([start])
    while queue:
        visiting = queue.popleft()
        if visiting == goal:
            break
        for nxt in edges.get(visiting, []):
            if nxt not in previous:
                previous[nxt] = visiting
                queue.append(nxt)
    path: list[str] = []
    node: str | None = goal
    while node is not None:
        path.append(node)
        node = previous.get(node)
    return [latest[h] for h in reversed(path)], in_degree


def state_values(path: list[StateSnapshot], task: str, in_degree: dict[str, int]) -> list[float]:
    if not path:
        return []
    corpus = Corpus([s.text for s in path] + [task])
    final, task_index = len(path) - 1, len(path)
    values = []
    for i, state in enumerate(path):
        closeness = corpus.similarity(i, final) / (1 + final - i)
        relevance = 0.5 + 0.5 * corpus.similarity(i, task_index)
        weight = min(2.0, 1 + 0.2 * (max(1, in_degree.get(state.hash, 1)) - 1))
        values.append(closeness * relevance * state.signal * weight)
    return values


def find_shortcuts(states: list[StateSnapshot], task: str, *, threshold: float = 0.25,
                   limit: int = 10) -> list[Shortcut]:
    """The best shortcuts of a run, largest gain first (at most ``limit``)."""
    path, in_degree = shortest_path(states)
    values = state_values(path, task, in_degree)
    if len(path) < 3 or values[-1] <= 0:
        return []
    top = values[-1]
    by_index = {s.index: s for s in states}
    found = []
    for i, source in enumerate(path):
        for j in range(i + 2, len(path)):
            target = path[j]
            gain = (values[j] - values[i]) / top
            if gain < threshold or target.has_placeholder or not target.parses:
                continue
            steps = [by_index[k].instruction for k in range(source.index + 1, target.index + 1) if k in by_index]
            found.append(Shortcut(source, target, round(gain, 4), steps))
    found.sort(key=lambda s: (-s.gain, s.source.index, -s.target.index))
    return found[:limit]
