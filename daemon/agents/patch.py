"""A fix where the tests point: the lines changed since the last commit (``produces = "patch"``).

When tests that pass on the last commit fail on the user's code (``bench.since_commit``) and the code
changed there in one short span, one phase shows the definition holding it, numbered, and asks for
those lines rewritten: a reply of a line or two, which a small model writes far more reliably than
edit blocks naming a file (the 1.5B's fix phase sent such a file back unchanged, or sent blocks naming
none: bench/RESULTS.md, Evaluation: mutants). Each reply goes into the job's copy and those tests run
again there. One that leaves them failing is taken back, and what the tests now say goes back to the
model as its next try (``max_retries``); the first that makes them pass is the job's change, and the
test loop after it runs the whole suite. The old text of the lines is never shown: the tests decide,
not a revert.

    changed, what_happened = await patch_lines(bench, phase, dialogue, reply)
"""

from __future__ import annotations

import ast
import difflib
import re
from dataclasses import dataclass

from daemon.agents.dialogue import Dialogue
from daemon.agents.model import Phase
from daemon.agents.workbench import Workbench, numbered
from daemon.workspace.related import RELATED_SECONDS, run_related
from daemon.workspace.reports import TestReport

VERSIONS = 3  # asked of each reply: a small model's second guess is often the right one
MAX_SPAN_LINES = 6  # a longer change is a rewrite: the fix phase's edits
NEAR = 3  # spans of one file this close are one span
CONTEXT_LINES = 12  # each side of the span, when no definition of at most MAX_WINDOW lines holds it
MAX_WINDOW = 60
FAILURE_CHARS = 1500  # what a try's failing tests say, sent back with the next try
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})[^\n]*\n(.*?)^\s*\1\s*$", re.DOTALL | re.MULTILINE)
_NUMBERED = re.compile(r"^\s*\d+\| ?")
_FENCES = re.compile(r"^\s*```", re.MULTILINE)


@dataclass(frozen=True)
class Target:
    path: str
    start: int  # the changed lines (1-based, inclusive)
    end: int
    first: int  # the lines shown: the definition holding them
    last: int

    @property
    def which(self) -> str:
        return f"line {self.start}" if self.start == self.end else f"lines {self.start}-{self.end}"


def patch_target(bench: Workbench) -> Target | None:
    """The one short span changed since the last commit that the failing tests point at; None when the
    change is elsewhere too, longer, or not known."""
    since = bench.since_commit
    if since is None or len(since.lines) != 1:
        return None
    [(path, spans)] = since.lines.items()
    start, end = spans[0]
    for a, b in spans[1:]:
        if a - end > NEAR:
            return None
        end = max(end, b)
    text = bench.read(path)
    if text is None or end - start + 1 > MAX_SPAN_LINES or end > len(text.splitlines()):
        return None
    first, last = _enclosing(text, start, end)
    return Target(path, start, end, first, last)


def _enclosing(text: str, start: int, end: int) -> tuple[int, int]:
    """The lines of the innermost definition holding ``start..end`` (decorators included), or the span
    with :data:`CONTEXT_LINES` either side when none of at most :data:`MAX_WINDOW` lines does."""
    count = len(text.splitlines())
    best = (max(1, start - CONTEXT_LINES), min(count, end + CONTEXT_LINES))
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return best
    held = [(first, node.end_lineno) for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.end_lineno
            and (first := min([node.lineno, *(d.lineno for d in node.decorator_list)])) <= start
            and end <= node.end_lineno and node.end_lineno - first < MAX_WINDOW]
    return min(held, key=lambda window: window[1] - window[0], default=best)


def render_changed_lines(bench: Workbench) -> str:
    """The ``{changed_lines}`` field: the definition holding the changed span, numbered, and what to send
    back ("" when there is no such span)."""
    target = patch_target(bench)
    text = bench.read(target.path) if target else None
    if target is None or text is None:
        return ""
    which = target.which
    return (f"{target.path}, lines {target.first}-{target.last}:\n```\n"
            f"{numbered(text.splitlines(), target.first, target.last)}\n```\n"
            f"The code changed at {which} since the last commit, where these tests passed: the bug is in {which}.\n\n"
            f"Rewrite {which} so that the tests pass. {_ask(which, 'different')}")


def _ask(which: str, kind: str) -> str:
    return (f"Reply with up to {VERSIONS} {kind} versions of the new {which}, the likeliest first, each in its own "
            "```python block, indented as in the file, without line numbers.")


def candidates(target: Target, original: str, reply: str) -> tuple[list[str], str]:
    """The file with each version the reply holds (its fenced blocks, or the reply itself) in place of the
    target's lines, in the reply's order, and what to tell the model of those that cannot be tried."""
    blocks = [m.group(2) for m in _FENCE.finditer(reply)] or ([reply] if "```" not in reply else [])
    if getattr(reply, "cut_at_cap", False) and len(_FENCES.findall(reply)) % 2:  # it stopped inside a block:
        blocks.append(reply[reply.rfind("```"):].partition("\n")[2].rsplit("\n", 1)[0])  # less its cut last line
    texts: list[str] = []
    problems: list[str] = []
    for part in [part for block in blocks for part in _parts(block)][:2 * VERSIONS]:
        text, problem = _version(target, original, part)
        if text is None:
            problems.append(problem)
        elif text not in texts:
            texts.append(text)
    if not blocks:
        problems.append("Your reply holds no ```python block.")
    return texts, " ".join(dict.fromkeys(problems))


def _parts(block: str) -> list[str]:
    """A block, then, when comment lines split it in several pieces of code, each piece: the 1.5B often sends
    its versions in one block ("# Version 1: ...", "# Version 2: ...")."""
    pieces: list[list[str]] = [[]]
    for line in block.splitlines():
        if line.lstrip().startswith("#"):
            pieces.append([])
        elif line.strip():
            pieces[-1].append(line)
    code = ["\n".join(piece) for piece in pieces if piece]
    return [block, *code] if len(code) > 1 else [block]


def _version(target: Target, original: str, block: str) -> tuple[str | None, str]:
    which = target.which
    new = [_NUMBERED.sub("", line).rstrip() for line in block.splitlines()]
    while new and (not new[0].strip() or new[0].lstrip().startswith("#")):  # "# Version 2: ..." is no code
        new.pop(0)
    while new and (not new[-1].strip() or new[-1].lstrip().startswith("#")):
        new.pop()
    if not new:
        return None, "A block of your reply holds no code."
    lines = original.splitlines()
    first, last = _replaced(target, lines, new)
    new = _indented(new, _indent(lines[first - 1]))
    text = "\n".join([*lines[:first - 1], *new, *lines[last:]]) + ("\n" if original.endswith("\n") else "")
    if text == original:
        return None, f"One version is {which} as it is now, and with it these tests fail."
    try:
        ast.parse(text)
    except SyntaxError as exc:
        return None, f"With one version, {target.path} does not parse: {exc.msg} (line {exc.lineno})."
    return text, ""


def _replaced(target: Target, lines: list[str], new: list[str]) -> tuple[int, int]:
    """The lines a version replaces: the target's, or, when it is longer and at least half its lines are shown
    lines in their order (the definition, or a part of it, sent back with a change somewhere), the shown lines it
    runs over: the tests decide whatever it changed."""
    if len(new) <= target.end - target.start + 1:
        return target.start, target.end
    first = max(1, min(target.first, target.start - len(new)))  # what it may run over: the shown lines and on
    window = [line.strip() for line in lines[first - 1:target.end + len(new)]]
    matcher = difflib.SequenceMatcher(None, window, [line.strip() for line in new], autojunk=False)
    blocks = [block for block in matcher.get_matching_blocks() if block.size]
    if 2 * sum(block.size for block in blocks if block.size > 1 or window[block.a]) < len(new):
        return target.start, target.end
    head, tail = blocks[0], blocks[-1]
    start = max(0, head.a - head.b)
    end = min(len(window), tail.a + tail.size + (len(new) - tail.b - tail.size))
    return first + start, first + max(end, start + 1) - 1


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _indented(new: list[str], indent: int) -> list[str]:
    """``new`` moved so that its first line starts at ``indent`` (a reply often drops the indentation)."""
    shift = indent - _indent(new[0])
    if shift > 0:
        return [" " * shift + line if line.strip() else line for line in new]
    if shift < 0 and all(not line.strip() or _indent(line) >= -shift for line in new):
        return [line[-shift:] for line in new]
    return new


def _failures(report: TestReport | None) -> str:
    return "(no test ran)" if report is None else report.summary(max_failures=2, max_chars=FAILURE_CHARS)


async def patch_lines(bench: Workbench, phase: Phase, dialogue: Dialogue, reply: str) -> tuple[list[str], str]:
    """The files the kept rewrite changed ([] when none was kept) and what became of the tries, in words."""
    target, scratch, since = patch_target(bench), bench.scratch, bench.since_commit
    if target is None or scratch is None or since is None:
        return [], "no short change since the last commit to rewrite"
    original = scratch.read(target.path)
    which, rounds, tried, problem = target.which, phase.max_retries + 1, [], ""
    for attempt in range(rounds):
        if attempt:
            reply = await dialogue.correct(problem)
        texts, problem = candidates(target, original, reply)
        first_failure = ""
        for text in texts:
            if text in tried:
                continue
            tried.append(text)
            passed, report = await _tried(bench, target.path, text, original, since.tests)
            if passed:
                return [target.path], (f"{target.path} {which} rewritten: the {len(since.tests)} failing test(s) "
                                       f"pass with version {len(tried)} (reply {attempt + 1} of {rounds})")
            first_failure = first_failure or _failures(report)
        if first_failure:
            problem = f"None of those makes the tests pass. With the first, they say:\n{first_failure}\n\n{problem}"
        elif texts:
            problem = f"You sent those already, and the tests fail with them. {problem}"
        problem = f"{problem.strip()} {_ask(which, 'other')}"
    return [], f"none of {len(tried)} version(s) of {target.path} {which} made the failing tests pass"


async def _tried(bench: Workbench, path: str, text: str, original: str,
                 tests: list[str]) -> tuple[bool, TestReport | None]:
    """Whether ``tests`` pass with ``text`` in ``path`` of the job's copy (where it then stays; else the file is put
    back as it was), and their report."""
    scratch = bench.scratch
    assert scratch is not None
    scratch.write(path, text)
    passed = False
    try:
        report = await run_related(scratch.root, tests, timeout=bench.seconds_left(RELATED_SECONDS * 3))
        passed = report is not None and report.ok and not report.timed_out and report.passed >= len(tests)
    finally:
        if not passed:
            scratch.write(path, original)
    return passed, report
