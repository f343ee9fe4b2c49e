"""The review suite: HumanEvalFix's buggy functions reviewed, scored by where the findings land.

Per item, two reviews of the same model: the buggy file, then the canonical one (same name, same
docstring). Scores: *caught* (a model finding — never a lint finding — of at most 3 lines on a bug
line ±1; the item's ``solved``), *fixed* (a catching finding's suggested fix, applied as an editor
applies it, makes the item's tests pass in the sandbox), *false_positives* (model findings on the
canonical file), *findings* (model findings on the buggy file). The team row runs ``review`` jobs;
the bare row asks the model once per file, as a careful user would, with the whole file numbered and
the findings format the team's reviewer gets; its reply is parsed and placed by the code that handles
the reviewer's, and scored by the same function.
"""

from __future__ import annotations

from pathlib import Path

from daemon.eval.humanevalfix import buggy_module, covers_bug, load_items, run_item_tests
from daemon.eval.scoring import BARE_REVIEW_MAX_TOKENS, Spot, apply_line_fix, bare_review_prompt, bare_spots
from daemon.eval.suite import Context, Item, ItemResult, JobRun, Row
from daemon.messages import SubmitJob


class ReviewSuite:
    name = "review"
    score_names = ("caught", "fixed", "false_positives", "findings")

    def __init__(self, data: Path | None = None) -> None:
        self.data = data

    def items(self) -> list[Item]:
        return list(load_items())

    async def run(self, item: Item, row: Row, ctx: Context) -> ItemResult:
        file = item.data["file"]
        buggy_run, buggy = await self.review(ctx, row, item.id, file, buggy_module(item))
        clean_run, clean = await self.review(ctx, row, item.id + "-canonical", file, item.data["canonical"])
        scores = await score_review(item, buggy, clean)
        detail = {"findings": [vars(s) for s in buggy], "canonical_findings": [vars(s) for s in clean]}
        return ItemResult.of(self.name, item, row, [buggy_run, clean_run], solved=bool(scores["caught"]),
                             scores=scores, detail=detail)

    async def review(self, ctx: Context, row: Row, name: str, file: str, text: str) -> tuple[JobRun, list[Spot]]:
        """One review of ``text`` as ``file``: the job, and its model findings on that file."""
        root = await ctx.workspace({file: text}, name)
        if row == "team":
            run = await ctx.job(SubmitJob(kind="review", workspace=str(root), files=[file]))
            return run, [Spot(f.start_line, f.end_line or f.start_line, f.message, f.suggested_fix)
                         for f in run.findings if f.rule is None and f.file == file]
        run = await ctx.complete(root, bare_review_prompt(file, text), max_tokens=BARE_REVIEW_MAX_TOKENS)
        return run, bare_spots(run.answer, file, text)


async def score_review(item: Item, buggy: list[Spot], clean: list[Spot]) -> dict[str, float]:
    catching = [s for s in buggy if covers_bug(item, s.start, s.end)]
    fixed = False
    for spot in catching:
        if spot.fix is not None and not fixed:
            module = apply_line_fix(buggy_module(item), spot.start, spot.end, spot.fix)
            fixed = (await run_item_tests(item, module)).passed
    return {"caught": float(bool(catching)), "fixed": float(fixed), "false_positives": float(len(clean)),
            "findings": float(len(buggy))}
