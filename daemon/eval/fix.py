"""The fix suite: HumanEvalFix's buggy functions as ``change`` jobs, scored by the hidden tests.

The team gets the one-file workspace and "the function does not do what its docstring says; fix
it"; its proposed change is applied to a scratch copy and the item's tests (never shown to the
team) run in the sandbox: pass@1 is ``solved``. The bare row gets the same words and the file, and
must reply with the whole corrected file; that file is tested the same way.
"""

from __future__ import annotations

from pathlib import Path

from daemon.eval.humanevalfix import buggy_module, load_items, run_item_tests
from daemon.eval.scoring import parse_file_reply
from daemon.eval.suite import Context, Item, ItemResult, JobRun, Row
from daemon.messages import SubmitJob

TASK = "The function {entry} in {file} does not do what its docstring says; fix it."
BARE_MAX_TOKENS = 1024
BARE_PROMPT = TASK + """

{file}:
```python
{text}```

Reply with the whole corrected {file} in one ```python block."""


def changed_file(run: JobRun, file: str) -> str | None:
    """``file`` as the job's proposed change leaves it (None: the change does not touch it)."""
    edits = (run.change.edits or {}).get("edits", []) if run.change is not None else []
    return next((e.get("after") for e in edits if isinstance(e, dict) and e.get("path") == file), None)


class FixSuite:
    name = "fix"
    score_names = ("changed",)

    def __init__(self, data: Path | None = None) -> None:
        self.data = data

    def items(self) -> list[Item]:
        return list(load_items())

    async def run(self, item: Item, row: Row, ctx: Context) -> ItemResult:
        file, entry, text = item.data["file"], item.data["entry_point"], buggy_module(item)
        root = await ctx.workspace({file: text}, item.id)
        if row == "team":
            task = TASK.format(entry=entry, file=file)
            run = await ctx.job(SubmitJob(kind="change", workspace=str(root), prompt=task, files=[file]))
            fixed = changed_file(run, file)
        else:
            run = await ctx.complete(root, BARE_PROMPT.format(entry=entry, file=file, text=text),
                                     max_tokens=BARE_MAX_TOKENS)
            fixed = parse_file_reply(run.answer)
        return await score_fix(self.name, item, row, run, fixed)


async def score_fix(suite: str, item: Item, row: Row, run: JobRun, fixed: str | None) -> ItemResult:
    """``fixed`` (the whole module, or None) against the item's tests; unchanged counts as not fixed."""
    changed = fixed is not None and fixed != buggy_module(item)
    outcome = await run_item_tests(item, fixed) if changed and fixed is not None else None
    detail = {"tests": outcome.tail if outcome else "no change to test",
              "timed_out": bool(outcome and outcome.timed_out)}
    return ItemResult.of(suite, item, row, [run], solved=bool(outcome and outcome.passed),
                         scores={"changed": float(changed)}, detail=detail)
