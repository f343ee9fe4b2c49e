"""What ``troupe eval`` prints and saves: per row, solved and the suite's scores over the items,
tokens, calls and seconds per item, tokens per solved item, and how many jobs failed or hit a cap;
the JSON carries every item's result with the model, the commit and the item ids, so a run can be reproduced."""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from daemon.eval.suite import ItemResult, Row
from daemon.json_types import JsonDict


@dataclass
class RowSummary:
    row: str  # the row's label: team, bare, or an experience split's arm
    items: int
    solved: int
    scores: dict[str, float]
    prompt_tokens: float  # per item
    completion_tokens: float
    calls: float
    seconds: float
    max_seconds: float  # the slowest item
    max_job_seconds: float  # the slowest job: a review must finish in its time every time, not on average
    failed: int
    capped: int
    tokens_per_solved: float | None  # prompt + completion tokens of the row / solved items; None: none solved

    @classmethod
    def of(cls, row: str, results: list[ItemResult], score_names: tuple[str, ...]) -> RowSummary:
        n = len(results) or 1

        def mean(name: str) -> float:
            total: float = sum(getattr(r, name) for r in results)  # a float field of ItemResult, by name
            return round(total / n, 1)

        solved = sum(r.solved for r in results)
        tokens = sum(r.prompt_tokens + r.completion_tokens for r in results)
        return cls(row=row, items=len(results), solved=solved,
                   scores={s: round(sum(r.scores.get(s, 0.0) for r in results), 3) for s in score_names},
                   prompt_tokens=mean("prompt_tokens"), completion_tokens=mean("completion_tokens"),
                   calls=mean("calls"), seconds=round(sum(r.seconds for r in results) / n, 2),
                   max_seconds=round(max((r.seconds for r in results), default=0.0), 1),
                   max_job_seconds=round(max((r.job_seconds or r.seconds for r in results), default=0.0), 1),
                   failed=sum(r.status == "failed" for r in results), capped=sum(r.status == "capped" for r in results),
                   tokens_per_solved=round(tokens / solved, 1) if solved else None)

    def cells(self, score_names: tuple[str, ...]) -> list[str]:
        """The row's table cells after its label (see :data:`HEAD`)."""
        return [f"{self.solved}/{self.items}", *(_num(self.scores[n]) for n in score_names), _num(self.prompt_tokens),
                _num(self.completion_tokens), "—" if self.tokens_per_solved is None else _num(self.tokens_per_solved),
                _num(self.calls), f"{self.seconds:.1f}", f"{self.max_seconds:.1f}", f"{self.max_job_seconds:.1f}",
                str(self.failed),
                str(self.capped)]


def head(score_names: tuple[str, ...]) -> list[str]:
    """The table's header after the label columns, in the order of :meth:`RowSummary.cells`."""
    return ["solved", *score_names, "prompt tok/item", "compl. tok/item", "tok/solved", "calls/item", "s/item",
            "max s", "max job s", "failed", "capped"]


def render(title: str, lines: list[list[str]]) -> str:
    """``lines`` (the header first) as aligned columns under ``title``: the first left, the rest right."""
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    text = ["  ".join(cell.rjust(w) if i else cell.ljust(w)
                      for i, (cell, w) in enumerate(zip(line, widths, strict=True))) for line in lines]
    return "\n".join([title, *text])


@dataclass
class EvalReport:
    suite: str
    model: str
    commit: str
    items: list[str]
    rows: list[Row]
    score_names: tuple[str, ...]
    results: list[ItemResult] = field(default_factory=list)
    started_at: float = field(default_factory=time.time)
    seconds: float = 0.0
    interrupted: bool = False  # Ctrl-C: the results are those finished before it

    def summaries(self) -> list[RowSummary]:
        return [RowSummary.of(row, [r for r in self.results if r.row == row], self.score_names) for row in self.rows]

    def to_json(self) -> JsonDict:
        return {"suite": self.suite, "model": self.model, "commit": self.commit, "items": self.items,
                "rows": self.rows, "started_at": self.started_at, "seconds": round(self.seconds, 1),
                "interrupted": self.interrupted,
                "summary": {s.row: vars(s) for s in self.summaries()},
                "results": [r.to_json() for r in self.results]}

    def table(self) -> str:
        """The rows side by side, one line each, with a header."""
        lines = [["row", *head(self.score_names)]]
        lines += [[s.row, *s.cells(self.score_names)] for s in self.summaries()]
        done = "" if not self.interrupted else f" (interrupted: {len(self.results)} results)"
        return render(f"troupe eval {self.suite} — {self.model} @ {short(self.commit)}, {len(self.items)} items{done}",
                      lines)


def short(commit: str) -> str:
    return commit[:12] + ("+dirty" if commit.endswith("+dirty") else "")


def _num(value: float) -> str:
    return f"{value:g}" if value == int(value) else f"{value:.1f}"


def source_commit() -> str:
    """The commit Troupe runs from (``+dirty`` with uncommitted changes), or ``unknown``."""
    root = Path(__file__).resolve().parents[2]
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    if head.returncode != 0:
        return "unknown"
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
