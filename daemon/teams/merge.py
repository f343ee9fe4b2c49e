"""One model call that merges a group of solutions into a better one: "keep the strengths, drop
the weaknesses" (Croto's aggregation, and MacNet's for a node with several predecessors).

The best-ranked solution of the group is the starting point: the reply's edits (whole files or
SEARCH/REPLACE blocks) apply to it, so files nobody touched stay as they were. A reply whose
edits cannot be used is sent back once with the reason; after that the starting point stands
and a warning says so.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from daemon.json_types import JsonDict
from daemon.teams.solution import EditApplyError, EditParseError, Solution, apply_reply
from daemon.workspace.edits import EDIT_FORMAT_HELP

Complete = Callable[[list[dict[str, str]], str, float | None], Awaitable[str]]
"""One model call: (messages, role, temperature) -> the reply's text (accounting is the caller's)."""
Warn = Callable[[str], Awaitable[None]]

MERGE_ROLE = "merger"
MERGE_SYSTEM = ("You are the lead engineer. Several teams solved the same task; you merge their solutions "
                "into one that is better than each: keep the strengths, drop the weaknesses.")


def merge_prompt(task: str, group: list[Solution]) -> str:
    parts = [f"The task:\n{task}", f"{len(group)} solutions to it follow, each with the files it wrote."]
    for number, solution in enumerate(group, 1):
        head = f"### Solution {number} ({solution.label}"
        if solution.score is not None:
            head += f"; tests passing {solution.score.executability:.0%}, placeholders {solution.score.placeholders}"
        parts.append(head + ")")
        if solution.notes:
            parts.append(f"A critic's suggestion for it: {solution.notes}")
        parts.append(solution.render())
    critics = any(s.notes for s in group)
    parts.append("Write ONE solution that keeps the strengths of these and drops their weaknesses"
                 + (", and that follows the critics' suggestions" if critics else "") + ". Start from "
                 "solution 1: send every file that must differ from solution 1, as a whole file or with "
                 "SEARCH/REPLACE blocks against solution 1's text. Send no file that stays as in solution 1.")
    parts.append(EDIT_FORMAT_HELP)
    return "\n\n".join(parts)


def ranked(group: list[Solution]) -> list[Solution]:
    """Best first (by score when the group was scored; otherwise as given)."""
    return sorted(group, key=lambda s: -(s.score.value if s.score else 0.0))


class Merger:
    def __init__(self, complete: Complete, task: str, *, warn: Warn | None = None,
                 temperature: float | None = None, role: str = MERGE_ROLE) -> None:
        self.complete, self.task, self.warn = complete, task, warn
        self.temperature, self.role = temperature, role
        self.calls = 0

    async def __call__(self, group: list[Solution], temperature: float | None = None) -> Solution:
        group = ranked(group)
        if len(group) == 1:
            return group[0]
        start = group[0]
        messages = [{"role": "system", "content": MERGE_SYSTEM},
                    {"role": "user", "content": merge_prompt(self.task, group)}]
        label = "merge of " + " + ".join(s.label for s in group[:4]) + (" + ..." if len(group) > 4 else "")
        temp = self.temperature if temperature is None else temperature
        problem = ""
        for attempt in range(2):
            reply = await self.complete(messages, self.role, temp)
            self.calls += 1
            try:
                files = apply_reply(start, reply)
                if files == start.files:  # the merge changed nothing: solution 1 stands, with its test run
                    return start
                return start.derive(label, files, conclusions=dict(start.conclusions), origin=start.origin)
            except (EditParseError, EditApplyError) as exc:
                problem = str(exc)
                if attempt == 0:
                    messages += [{"role": "assistant", "content": reply},
                                 {"role": "user", "content": f"Your edits were not applied. {problem}"}]
        if self.warn is not None:
            await self.warn(f"{label}: the merged reply could not be used ({problem[:200]}); kept {start.label}")
        return start


def describe(group: list[Solution]) -> list[JsonDict]:
    return [{"label": s.label, "chars": s.chars, **({"score": s.score.to_dict()} if s.score else {})} for s in group]
