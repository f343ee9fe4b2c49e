"""The mutants suite's bare rows: what one plain call is asked, and how its reply is read.

The same information as the team's jobs get: a save's diff and the definitions holding it (the
whole file numbered when it is short) with the team reviewer's findings format; for the fix, the
failing test output and the file whole, or, when it is too large to send whole, the definitions
the failures name, edited with SEARCH/REPLACE blocks or sent back whole and put in their place as
the team's phases do (:func:`daemon.workspace.excerpts.merge_excerpt`).
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from daemon.eval.scoring import BARE_REVIEW_MAX_TOKENS, parse_file_reply
from daemon.eval.suite import Context, JobRun

BARE_SAVE_REVIEW_PROMPT = """I just changed {file} in my repository and saved it. The change:

```diff
{diff}```

{target}

Find the bugs in this change.

{findings_format}"""
"""The team reviewer's instruction ("Find the bugs in this code."): asked to "review the change for bugs", the 1.5B
answered NONE to all 6 more-itertools saves it was shown (2026-12-07), so the bare row caught nothing by its wording."""
BARE_PART_TOKENS = 1800
"""The part of a large file a bare call sees (of the bundled model's 4,096-token window)."""
BARE_PART_FIX_PROMPT = """The tests of my repository fail:

{failures}
{changed}
{target}

Fix {file} so that the tests pass.

{edit_format}"""
BARE_FIX_PROMPT = """The tests of my repository fail:

{failures}
{changed}
{file}:
```python
{text}```

Fix {file} so that the tests pass. Reply with the whole corrected {file} in one ```python block."""


async def bare_fix(ctx: Context, root: Path, file: str, text: str, mutated: dict[str, str], failures: str, *,
                   part_only: bool) -> tuple[JobRun, dict[str, str] | None, str]:
    """One plain call that fixes ``file`` (whose mutated text is ``text``) from the failing tests'
    output: the call, the repository's files as it leaves them (None: nothing to test) and why not.
    ``part_only`` (a save): a file too large to send whole is sent as the definitions the failures name.
    The lines changed since the last commit are named, as a user would say, and as ``troupe test`` finds."""
    changed = await asyncio.to_thread(changed_since_commit, root, file)
    part = bare_part(file, text, failures) if part_only else ""
    if part:  # too large to send whole: the definitions the failures name, edited in place
        from daemon.workspace.edits import EDIT_FORMAT_HELP

        prompt = BARE_PART_FIX_PROMPT.format(failures=failures, target=part, file=file, changed=changed,
                                             edit_format=EDIT_FORMAT_HELP.strip())
        run = await ctx.complete(root, prompt, max_tokens=BARE_REVIEW_MAX_TOKENS * 2)
        after, note = edited(mutated, file, run.answer)
        return run, after, note
    prompt = BARE_FIX_PROMPT.format(failures=failures, file=file, text=text, changed=changed)
    run = await ctx.complete(root, prompt, max_tokens=_whole_file_tokens(text))
    corrected = parse_file_reply(run.answer)
    if corrected is None or corrected == text:
        return run, None, "no corrected file in the reply" if corrected is None else "the file came back unchanged"
    return run, {**mutated, file: corrected}, ""


def changed_since_commit(root: Path, file: str) -> str:
    """"They passed on my last commit; since then I changed line N of FILE." and a blank line ("" when git
    shows no such change)."""
    from daemon.agents.workbench import spans_text
    from daemon.review.gitdiff import changed_lines
    from daemon.workspace.related import uncommitted_diff

    spans = changed_lines(uncommitted_diff(root)).get(file)
    if not spans:
        return ""
    return f"\nThey passed on my last commit; since then I changed {file} at line(s) {spans_text(spans)}.\n"


def bare_save_review_prompt(file: str, text: str, diff: str) -> str:
    """The bare review of a save: the diff, and the definitions holding its hunks with line numbers
    (the whole file numbered when it is short), with the team reviewer's findings format."""
    from daemon.agents.findings import FINDINGS_FORMAT
    from daemon.agents.workbench import numbered
    from daemon.review.gitdiff import diff_ranges
    from daemon.workspace.repomap import estimate_tokens, excerpt

    lines = text.splitlines()
    target = f"{file} (with line numbers):\n" + numbered(lines, 1, len(lines))
    if estimate_tokens(target) > BARE_PART_TOKENS:
        changed = [n for a, b in diff_ranges(diff).get(file, []) for n in range(a, b + 1)]
        target = excerpt(file, text, changed, BARE_PART_TOKENS) or target
    return BARE_SAVE_REVIEW_PROMPT.format(file=file, diff=diff, target=target, findings_format=FINDINGS_FORMAT)


def bare_part(file: str, text: str, failures: str) -> str:
    """The definitions of ``file`` that ``failures`` name, when the file is too large for a bare call
    to get whole ("" when it is not, or when nothing in the failures names a part of it)."""
    from daemon.workspace.repomap import estimate_tokens, excerpt, symbols_for

    if estimate_tokens(text) <= BARE_PART_TOKENS:
        return ""
    named = set(re.findall(r"[A-Za-z_]\w*", failures))
    lines = [s.line for s in symbols_for(file, text) if s.name.rsplit(".", 1)[-1] in named]
    return excerpt(file, text, lines[:6], BARE_PART_TOKENS, line_numbers=False) if lines else ""


def edited(files: dict[str, str], file: str, reply: str) -> tuple[dict[str, str] | None, str]:
    """``files`` with a bare reply's edits of ``file`` applied: SEARCH/REPLACE blocks, or the part it was shown
    sent back whole, put back in its place as the team's is (None and why when none apply)."""
    from daemon.workspace.edits import EditApplyError, EditParseError, ParsedEdit, apply_edits, parse_edits
    from daemon.workspace.excerpts import merge_excerpt

    class Memory:
        def __init__(self) -> None:
            self.files = dict(files)

        def read(self, path: str) -> str:
            return self.files[path]

        def write(self, path: str, text: str) -> None:
            self.files[path] = text

        def delete(self, path: str) -> None:
            self.files.pop(path, None)

        def list_files(self) -> list[str]:
            return sorted(self.files)

    memory = Memory()
    try:
        edits = []
        for edit in parse_edits(reply, default_path=file):
            merged = merge_excerpt(file, files[file], edit.content) if edit.kind == "whole" else None
            if edit.path == file and (edit.kind != "whole" or merged is not None):  # never the whole of a part
                edits.append(edit if merged is None else ParsedEdit(file, "whole", content=merged))
        changed = apply_edits(memory, edits) if edits else []
    except (EditParseError, EditApplyError, KeyError) as exc:
        return None, f"the edits could not be applied ({str(exc).splitlines()[0] if str(exc) else exc!r})"
    if not changed:
        return None, "no edit of the file in the reply" if not edits else "the edits changed nothing"
    return memory.files, ""


def _whole_file_tokens(text: str) -> int:
    from daemon.messages import COMPLETE_MAX_TOKENS_LIMIT

    return min(COMPLETE_MAX_TOKENS_LIMIT, len(text) // 3 + 256)  # the file back, ~3-4 characters a token
