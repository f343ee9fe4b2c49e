"""The ask suite: questions with one right answer (a path, a line range, a value) over ``pantry``
(a small multi-package app shipped in ``data/ask/``) and a one-file ``calc.py`` repo, graded by
rule — regular expressions, no judge model (``data/ask/questions.json`` says how).

The team row runs an ``ask`` job in a fresh copy of the repo; the bare row gets the question with
every file of the repo (paths and numbered lines) in one prompt.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

from daemon.eval.scoring import numbered
from daemon.eval.suite import Context, Item, ItemResult, Row
from daemon.json_types import JsonObject
from daemon.messages import SubmitJob

DATA = Path(__file__).resolve().parent / "data" / "ask"
BARE_MAX_TOKENS = 256
BARE_PROMPT = """Here is a repository, file by file, with numbered lines.

{files}

Question: {question}"""


@functools.cache
def _questions() -> JsonObject:
    questions: JsonObject = json.loads((DATA / "questions.json").read_text(encoding="utf-8"))  # the suite's data
    return questions


@functools.cache
def repo_files(name: str) -> dict[str, str]:
    """The files of repo ``name``: a folder under ``data/ask/``, or one written inline in the JSON."""
    inline = _questions()["repos"].get(name)
    if inline is not None:
        return dict(inline)
    root = DATA / name
    return {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8")
            for p in sorted(root.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


def grade(answer: str, data: JsonObject) -> bool:  # an item's data, from questions.json
    """Every ``expect`` pattern found, no ``reject`` pattern, within ``max_chars``."""
    limit = int(data.get("max_chars") or _questions()["max_chars"])
    if not answer.strip() or len(answer) > limit:
        return False
    found = all(re.search(p, answer, re.IGNORECASE) for p in data["expect"])
    return found and not any(re.search(p, answer, re.IGNORECASE) for p in data.get("reject", []))


class AskSuite:
    name = "ask"
    score_names = ()

    def __init__(self, data: Path | None = None) -> None:
        self.data = data

    def items(self) -> list[Item]:
        items = []
        for q in _questions()["questions"]:
            repo = q.get("repo", "pantry")
            items.append(Item(id=q["id"], files=repo_files(repo), data={**q, "repo": repo}))
        return items

    async def run(self, item: Item, row: Row, ctx: Context) -> ItemResult:
        root = await ctx.workspace(item.files, item.id)
        question = item.data["question"]
        if row == "team":
            run = await ctx.job(SubmitJob(kind="ask", workspace=str(root), prompt=question))
        else:
            files = "\n\n".join(f"{path}:\n{numbered(text)}" for path, text in sorted(item.files.items()))
            run = await ctx.complete(root, BARE_PROMPT.format(files=files, question=question),
                                     max_tokens=BARE_MAX_TOKENS)
        answer = run.answer.strip()
        return ItemResult.of(self.name, item, row, [run], solved=grade(answer, item.data),
                             detail={"answer": answer[:2000]})
