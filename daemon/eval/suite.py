"""What a ``troupe eval`` suite is, and the records it hands back. A stable interface: the review,
fix, ask and build suites all plug in here.

A suite is a fixed, ordered list of items and a way to run one item for one row:

    class MySuite:                                  # satisfies the Suite protocol below
        name = "review"
        score_names = ("caught", "false_positives")  # extra table columns (summed), besides solved
        def __init__(self, data: Path | None = None) -> None: ...   # data: --data PATH (build: the CSV)
        def items(self) -> list[Item]: ...           # the full list, always in the same order
        async def run(self, item: Item, row: Row, ctx: Context) -> ItemResult: ...

``row`` is ``"team"`` (real jobs of the team: ``await ctx.job(SubmitJob(...))``) or ``"bare"``
(the same model, one plain call with the same information: ``await ctx.complete(workspace,
prompt)``); both are scored the same way, by the suite. ``ctx.workspace(files)`` makes a
temporary workspace holding ``files`` and registers it with the daemon (with the eval's model);
the suite scores in the sandbox itself (``daemon.sandbox.run_sandboxed`` or
``daemon.eval.scoring.run_python``). Build an :class:`ItemResult` with
:meth:`ItemResult.of` so tokens, calls, seconds, failures and caps come from the jobs it ran.
An exception out of ``run`` is recorded by the runner as a failed item; the run goes on.

Suites are named in :data:`SUITES` as ``module:class`` and imported only when chosen (the build
suite's module, ``daemon.eval.srdd``, defines ``BuildSuite``).
"""

from __future__ import annotations

import importlib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from daemon.json_types import JsonDict, JsonObject

if TYPE_CHECKING:
    from daemon.messages import ChangeInfo, FindingInfo, SubmitJob

Row = Literal["team", "bare"]
ROWS: tuple[Row, ...] = ("team", "bare")
Status = Literal["ok", "failed", "capped"]

SUITES: dict[str, str] = {
    "review": "daemon.eval.review:ReviewSuite",
    "fix": "daemon.eval.fix:FixSuite",
    "ask": "daemon.eval.ask:AskSuite",
    "build": "daemon.eval.srdd:BuildSuite",
    "exercism": "daemon.eval.exercism:ExercismSuite",
    "mutants": "daemon.eval.mutants:MutantsSuite",
}


class SuiteError(RuntimeError):
    """A suite that cannot run (unknown name, missing data); the message says what to do."""


@dataclass
class Item:
    """One benchmark item: a stable id, the workspace's files, and whatever the suite scores with."""

    id: str
    files: dict[str, str] = field(default_factory=dict)
    data: JsonObject = field(default_factory=dict)  # the suite's own (from its data files), read by the suite


@dataclass
class JobRun:
    """One daemon job as the eval saw it (a team job, or the bare row's ``complete`` job)."""

    job_id: str | None
    kind: str
    state: str  # the job's final state, or "timeout" when the eval gave up waiting
    error: str | None = None
    answer: str = ""  # the job's answer / the bare reply text
    findings: list[FindingInfo] = field(default_factory=list)
    change: ChangeInfo | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    seconds: float = 0.0
    capped: bool = False  # a token cap or budget stopped (part of) it
    result: JsonObject = field(default_factory=dict)  # the job's result as the daemon sent it

    @property
    def ok(self) -> bool:
        return self.state == "succeeded"


class Context(Protocol):
    """What a suite may ask of the runner (:class:`daemon.eval.runner.DaemonContext`)."""

    model: str | None

    async def workspace(self, files: dict[str, str], name: str = "item") -> Path:
        """A new temporary folder holding ``files``, registered with the daemon (not watched)."""
        ...

    async def job(self, request: SubmitJob) -> JobRun:
        """Submit a team job and wait for its end (questions it asks are answered "no answer")."""
        ...

    async def complete(self, workspace: Path, prompt: str, *, max_tokens: int | None = None) -> JobRun:
        """The bare model: one ``complete`` job (one prompt, one capped reply) in ``workspace``."""
        ...


@dataclass
class ItemResult:
    """One item on one row: solved or not, the suite's named scores, and what it cost."""

    suite: str
    item: str
    row: Row
    solved: bool
    scores: dict[str, float] = field(default_factory=dict)
    status: Status = "ok"
    error: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    seconds: float = 0.0
    job_seconds: float = 0.0  # its slowest job (a review item is two: the buggy and the canonical file)
    jobs: list[str] = field(default_factory=list)
    detail: JsonObject = field(default_factory=dict)  # the suite's free-form notes; its reference() reads them

    @classmethod
    def of(cls, suite: str, item: Item, row: Row, runs: list[JobRun], *, solved: bool,
           scores: dict[str, float] | None = None, detail: JsonObject | None = None) -> ItemResult:
        """The result of ``item`` scored from ``runs``: usage summed, the first failure kept."""
        failed = [r for r in runs if not r.ok]
        status: Status = "capped" if any(r.capped for r in runs) else ("failed" if failed else "ok")
        return cls(suite=suite, item=item.id, row=row, solved=solved, scores=dict(scores or {}), status=status,
                   error=next((f"{r.kind} job {r.state}: {r.error}" for r in failed), None),
                   prompt_tokens=sum(r.prompt_tokens for r in runs),
                   completion_tokens=sum(r.completion_tokens for r in runs),
                   calls=sum(r.calls for r in runs), seconds=round(sum(r.seconds for r in runs), 3),
                   job_seconds=round(max((r.seconds for r in runs), default=0.0), 3),
                   jobs=[r.job_id for r in runs if r.job_id], detail=dict(detail or {}))

    @classmethod
    def crashed(cls, suite: str, item: Item, row: Row, error: str, seconds: float = 0.0) -> ItemResult:
        """An item the eval could not finish (an exception, the daemon gone): unsolved, failed."""
        return cls(suite=suite, item=item.id, row=row, solved=False, status="failed", error=error, seconds=seconds)

    def to_json(self) -> JsonDict:
        return asdict(self)


class Suite(Protocol):
    name: str
    score_names: tuple[str, ...]

    def items(self) -> list[Item]: ...

    async def run(self, item: Item, row: Row, ctx: Context) -> ItemResult: ...


def load_suite(name: str, data: Path | None = None, **options: object) -> Suite:
    """The suite called ``name``, made with ``data`` (a path the user gave, or None) and the suite's own
    ``options`` when there are any (mutants: ``files``, ``n``, ``seed``)."""
    target = SUITES.get(name)
    if target is None:
        raise SuiteError(f"unknown suite {name!r}; choose one of {', '.join(SUITES)}")
    module_name, _, attr = target.partition(":")
    try:
        factory = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise SuiteError(f"the {name} suite is not available ({exc})") from None
    suite: Suite = factory(data, **options) if options else factory(data)  # imported by name: a Suite class
    return suite
