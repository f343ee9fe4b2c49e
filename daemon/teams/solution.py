"""A solution: the files one team or one agent changed, over a shared, read-only base.

Only solutions travel between teams (Croto) and along a network's edges (MacNet), never
dialogues: that keeps every prompt, and memory, linear in what was written. A solution holds
its own changed files (``None`` = deleted) and reads everything else from the base (the
repository, or nothing for new software). Edits from a model reply apply to a solution in
memory with the engine's own parser and applier, so the same tolerance and error messages hold.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypedDict, Unpack

from daemon.agents.job import Checkpoint
from daemon.agents.placeholders import CODE_SUFFIXES
from daemon.agents.workbench import fence
from daemon.json_types import JsonDict
from daemon.workspace.edits import EditApplyError, EditParseError, apply_edits, parse_edits
from daemon.workspace.reports import TestReport

BaseReader = Callable[[str], str | None]
"""The base's text of a path (None: no such file); must be cheap and side-effect free."""


def no_base(_path: str) -> str | None:
    return None


@dataclass
class Score:
    """How good a solution looks without asking a model (Croto's ranking).

    ``value`` = (10 x executability + completeness) x 10000 - 100 x unimplemented - lint, where
    executability is the share of tests passing (0 when they do not run) and completeness is 1
    when no placeholder is left.
    """

    executability: float = 0.0
    placeholders: int = 0
    unimplemented: int = 0
    lint: int = 0
    tests: str = ""  # what was run, for reports
    tested: bool = True  # False when no test ran (executability then only says the code parses)

    @property
    def completeness(self) -> float:
        return 1.0 if self.placeholders == 0 else 0.0

    @property
    def value(self) -> float:
        return (10 * self.executability + self.completeness) * 10_000 - 100 * self.unimplemented - self.lint

    @property
    def flawless(self) -> bool:
        """Tests ran and all passed, nothing is left unfinished, ruff found nothing: the most this
        score can say, so a merge cannot improve it by any measure Croto has."""
        return self.tested and self.executability == 1.0 and not (self.placeholders or self.unimplemented or self.lint)

    def to_dict(self) -> JsonDict:
        return {"value": self.value, "executability": self.executability, "placeholders": self.placeholders,
                "unimplemented": self.unimplemented, "lint": self.lint, "tests": self.tests}


class SolutionFields(TypedDict, total=False):
    """The fields of a :class:`Solution` besides its label, files and base, for :meth:`Solution.derive`."""

    notes: str
    score: Score | None
    test_report: TestReport | None
    conclusions: dict[str, str]
    origin: Checkpoint | None


@dataclass
class Solution:
    label: str                                    # "team 2", "agent 17", "merge of team 1 + team 3"
    files: dict[str, str | None] = field(default_factory=dict)  # changed files over the base
    base: BaseReader = no_base
    notes: str = ""                               # a critic's suggestion, a team's last conclusion
    score: Score | None = None
    test_report: TestReport | None = None         # the team's last test run, if still fresh
    conclusions: dict[str, str] = field(default_factory=dict)
    origin: Checkpoint | None = None              # what produced it (a team's checkpoint), for the caller

    def read(self, path: str) -> str | None:
        if path in self.files:
            return self.files[path]
        return self.base(path)

    def changed(self) -> list[str]:
        return sorted(p for p, text in self.files.items() if text is not None)

    def code_files(self) -> list[tuple[str, str]]:
        return [(p, t) for p, t in sorted(self.files.items()) if t is not None and p.endswith(CODE_SUFFIXES)]

    @property
    def chars(self) -> int:
        return sum(len(t or "") + len(p) for p, t in self.files.items()) + len(self.notes)

    def render(self) -> str:
        """The changed files as fenced blocks, the way the edit format writes them."""
        parts = [fence(path, text) for path, text in sorted(self.files.items()) if text is not None]
        parts += [f"DELETE: {path}" for path, text in sorted(self.files.items()) if text is None]
        return "\n\n".join(parts) or "(no files changed)"

    def derive(self, label: str, files: dict[str, str | None], **kwargs: Unpack[SolutionFields]) -> Solution:
        """A new solution over the same base with ``files`` as its changes."""
        return Solution(label, files, self.base, **kwargs)


class _Files:
    """The surface ``apply_edits`` writes through, over a solution in memory."""

    def __init__(self, solution: Solution) -> None:
        self.solution = solution
        self.files = dict(solution.files)

    def read(self, path: str) -> str:
        text = self.files[path] if path in self.files else self.solution.base(path)
        if text is None:
            raise FileNotFoundError(f"no file {path!r}")
        return text

    def write(self, path: str, text: str) -> None:
        self.files[path] = text

    def delete(self, path: str) -> None:
        self.files[path] = None

    def list_files(self) -> list[str]:
        return sorted(p for p, t in self.files.items() if t is not None)


def apply_reply(solution: Solution, reply: str) -> dict[str, str | None]:
    """``solution``'s files with the edits of ``reply`` applied (nothing is changed in place).

    Raises EditParseError / EditApplyError with a message written for the model."""
    edits = parse_edits(reply)
    if not edits:
        raise EditParseError("your reply contains no file edit")
    files = _Files(solution)
    apply_edits(files, edits)
    return {p: t for p, t in files.files.items() if t != solution.base(p)}


__all__ = ["BaseReader", "EditApplyError", "EditParseError", "Score", "Solution", "apply_reply", "no_base"]
