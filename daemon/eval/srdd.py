"""The ``build`` suite of ``troupe eval``: new software from an SRDD requirement, scored the way
ChatDev 1.0 scores it and with Troupe's stronger checks, for the team and for the bare model.

Items: one SRDD task per category, 40 in all (:mod:`daemon.eval.srdd_data`; SRDD is CC BY-NC
4.0 and not shipped: ``--data PATH`` or ``TROUPE_SRDD``). The prompt of both rows is the
requirement and one line, "Write it in Python; ``python main.py`` starts the program."

- **team**: a ``build`` job in an empty workspace; its proposed change is written into an empty
  folder, which is scored.
- **bare**: one ``complete`` call (the requirement, then "reply with every file in full, each in a
  fenced block with its path on the fence line", capped at :data:`BARE_MAX_TOKENS`); the files in
  its reply are parsed with the engine's own reply parser (one unnamed block: ``main.py``) and
  scored the same way. (Not the engine's ``EDIT_FORMAT_HELP``: its example path
  ``src/app/main.py`` is copied by small models, which then have no ``main.py``.)

Scores per item (0/1 unless said; the table sums them over items):

==================== =========================================================================
``complete_chatdev`` ChatDev's completeness: no line of the concatenated ``.py`` files contains
                     "pass" or "todo" (lines with password/passenger/passed/passes ignored).
                     Crude: ``bypass``, ``compass``, a ``todo_list`` or ``todo.py`` score 0, a
                     project without Python scores 1.
``runs_chatdev``     ChatDev's executability: ``python3 main.py`` in the folder of the last
                     ``.py`` file ``os.walk`` yields, killed after 3 s; 0 only when stderr holds
                     "Traceback" or there is no ``.py`` file (a crash without a traceback, even
                     "can't open file main.py", scores 1).
``consistency``      A proxy for ChatDev's (ada-002 cosine of requirement and comment-stripped
                     code; no embedding model is reachable): TF-IDF cosine of the requirement
                     and the same comment-stripped code, Python keywords left out. 0..1; not
                     comparable with the paper's numbers, only between rows and models.
``complete``         Troupe's placeholder check: code exists, and no stub function (only
                     ``pass``/``...``/``raise NotImplementedError``), no TODO/FIXME, every
                     Python file parses.
``runs``             Troupe's executability: the entry point runs 5 s; a non-zero exit or any
                     traceback fails, still running at the deadline (a GUI, a loop, a prompt
                     waiting for input) passes; no entry point fails.
``tests_pass``       The project's own pytest tests pass (``detail.tests``: passed, failed or
                     none).
==================== =========================================================================

Every run is in the sandbox, with an open, empty stdin and a virtual display (``Xvfb``, started
for each item) so Tk and pygame programs can start; where Xvfb is missing, GUI programs are not
run and their run scores are left out (the item's ``detail.display`` says why). **solved** is
``complete`` and ``runs`` and tests not failing. :func:`quality` gives the paper's
Quality = mean(completeness) x mean(executability) x mean(consistency) for ChatDev's scores and
for Troupe's.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path

from daemon.eval.srdd_data import load_sample
from daemon.eval.srdd_run import chatdev_executability, executability, team_tests
from daemon.eval.srdd_score import chatdev_completeness, code_files, consistency, mean, unfinished
from daemon.eval.suite import Context, Item, ItemResult, JobRun, Row
from daemon.json_types import JsonDict, JsonObject
from daemon.messages import ChangeInfo, SubmitJob
from daemon.workspace.change import ProposedDiff, apply_change
from daemon.workspace.display import virtual_display
from daemon.workspace.edits import (
    NEW_PROGRAM_FORMAT,
    NEW_PROGRAM_PATH,
    EditApplyError,
    EditParseError,
    apply_edits,
    parse_edits,
)
from daemon.workspace.interpreter import project_python
from daemon.workspace.scratch import PathOutsideWorkspace, Scratch

BARE_MAX_TOKENS = 4096
"""The bare call's completion cap: a whole small program (the team's code phases get 3,072 each)."""
TASK = "{description}\n\nWrite it in Python; `python main.py` starts the program."
BARE = "{task}\n\n" + NEW_PROGRAM_FORMAT  # the words the team's coding phase gets for an empty workspace
SCORE_NAMES = ("complete_chatdev", "runs_chatdev", "consistency", "complete", "runs", "tests_pass")


class BuildSuite:
    name = "build"
    score_names = SCORE_NAMES

    def __init__(self, data: Path | None = None) -> None:
        self.tasks = load_sample(data)

    def items(self) -> list[Item]:
        return [Item(task.id, {}, {"row": task.row, "category": task.category, "name": task.name,
                                   "description": task.description}) for task in self.tasks]

    async def run(self, item: Item, row: Row, ctx: Context) -> ItemResult:
        task = TASK.format(description=item.data["description"])
        workspace = await ctx.workspace({}, name=item.data["name"])
        notes: JsonDict = {}
        if row == "team":
            run = await ctx.job(SubmitJob(kind="build", workspace=str(workspace), prompt=task))
            change = proposed_of(run.change)
        else:
            run = await ctx.complete(workspace, BARE.format(task=task), max_tokens=BARE_MAX_TOKENS)
            change, problem = files_of_reply(run.answer)
            if problem:
                notes["reply"] = problem
        return await score_item(item, row, [run], change, notes)


def proposed_of(change: ChangeInfo | None) -> ProposedDiff:
    """The team's proposed change as the engine made it (empty when the job proposed none)."""
    if change is None or not isinstance(change.edits, dict):
        return ProposedDiff(diff="")
    return ProposedDiff.from_dict(change.edits)


def files_of_reply(reply: str) -> tuple[ProposedDiff, str]:
    """The files a bare reply writes, parsed and applied as the engine does in an empty workspace (a
    single code block without a path is the ``main.py`` the prompt asked for); (an empty change, why)
    when the reply holds no usable file."""
    with Scratch.empty() as scratch:
        try:
            apply_edits(scratch, parse_edits(reply, default_path=NEW_PROGRAM_PATH))
        except (EditParseError, EditApplyError, PathOutsideWorkspace) as exc:
            return ProposedDiff(diff=""), str(exc).splitlines()[0][:300]
        return scratch.proposed_change(), ""


async def score_item(item: Item, row: Row, runs: list[JobRun], change: ProposedDiff,
                     notes: JsonObject | None = None) -> ItemResult:
    """Write ``change`` into an empty folder and score it (:func:`score_project`)."""
    folder = Path(tempfile.mkdtemp(prefix="troupe-eval-build-"))
    try:
        apply_change(folder, change)
        scores, detail = await score_project(folder, item.data["description"])
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    detail = {**(notes or {}), **detail, "files": change.files}
    solved = bool(scores["complete"] and scores.get("runs") and detail["tests"] != "failed")
    return ItemResult.of(BuildSuite.name, item, row, runs, solved=solved, scores=scores, detail=detail)


async def score_project(root: Path, requirement: str) -> tuple[dict[str, float], JsonDict]:
    """Every build score of the project at ``root`` (see the module docstring), and what explains them.

    Run scores of a GUI program that could not get a display are left out of the scores."""
    scores: dict[str, float] = {"complete_chatdev": chatdev_completeness(root),
                                "consistency": consistency(requirement, root)}
    places = unfinished(root)
    scores["complete"] = int(bool(code_files(root)) and not places)
    detail: JsonDict = {"unfinished": places[:10]}
    python = await asyncio.to_thread(project_python)
    async with virtual_display() as display:
        chatdev = await chatdev_executability(root, python, display)
        ours = await executability(root, python, display)
        tests, tests_summary = await team_tests(root, python, display)
    for name, run in (("runs_chatdev", chatdev), ("runs", ours)):
        if run.score is not None:
            scores[name] = run.score
        detail[name] = run.detail
    scores["tests_pass"] = int(tests == "passed")
    detail.update(tests=tests, tests_summary=tests_summary, display=display.name or display.note)
    return scores, detail


def quality(results: list[ItemResult]) -> dict[str, float]:
    """The paper's Quality (mean completeness x mean executability x mean consistency) of one row's
    results, with ChatDev's scores (``quality_chatdev``) and with Troupe's (``quality``); items whose
    program was not run are left out of the executability mean."""
    def avg(name: str) -> float:
        return mean([r.scores[name] for r in results if name in r.scores])

    return {"quality_chatdev": round(avg("complete_chatdev") * avg("runs_chatdev") * avg("consistency"), 4),
            "quality": round(avg("complete") * avg("runs") * avg("consistency"), 4)}


__all__ = ["BuildSuite", "files_of_reply", "proposed_of", "quality", "score_item", "score_project"]
