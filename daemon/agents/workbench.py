"""The state one job works on: the files (a scratch copy, or the user's tree read-only), the
phases' conclusions, the latest test run and lint, and the rendering of template fields.

Fields are rendered only when a template uses them, and every code listing is fitted into a
character budget derived from the model's context window: what does not fit is named, never
silently dropped.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from daemon.agents.findings import BROKEN_FORMAT, FINDINGS_FORMAT, render_lint
from daemon.agents.job import JobSpec
from daemon.agents.loader import placeholders
from daemon.agents.model import Chain
from daemon.agents.placeholders import find_unfinished
from daemon.agents.scope import View, code_map, diff_since, third_party_imports
from daemon.review.gitdiff import changed_lines, diff_ranges
from daemon.workspace.doctests import example_failures, without_bodies
from daemon.workspace.edits import EDIT_FORMAT_HELP, NEW_PROGRAM_FORMAT, EditParseError, ParsedEdit
from daemon.workspace.excerpts import merge_excerpt
from daemon.workspace.files import read_for_prompt
from daemon.workspace.paths import PathOutsideWorkspace, confine
from daemon.workspace.repomap import MAX_NAMED_EXCERPTS, build_context, excerpt, is_test_file, symbols_for
from daemon.workspace.reports import TestFailure, TestReport
from daemon.workspace.scratch import NotEditable, Scratch

if TYPE_CHECKING:
    from daemon.agents.findings import Finding
    from daemon.agents.placeholders import Unfinished
    from daemon.lint.check import LintIssue

_LANGUAGES = {".py": "python", ".js": "javascript", ".ts": "typescript", ".go": "go", ".rs": "rust",
              ".md": "markdown", ".toml": "toml", ".json": "json", ".sh": "bash", ".txt": "text"}
_TRACEBACK_LINE = re.compile(r'(?:File "|^)([\w./-]+\.py)(?:", line |:)(\d+)', re.MULTILINE)
HUNK_CONTEXT = 3
MAX_CHANGED_SPANS = 8  # a save's changed places named under its listing
EXAMPLE_IDS = ("docstring example", "import of ")  # a doctest run's failures (daemon.workspace.doctests)
REGRESSION_CHARS = 1500  # two failures' assertions and the frames that matter, ~400 tokens of the review's prompt
ONE_FILE_LINES = 150  # a focus file this short is asked for whole (cheaper than teaching SEARCH/REPLACE)


def fence(path: str, text: str) -> str:
    """A file in the same form the edit format asks the model to write (path on the fence line)."""
    lang = _LANGUAGES.get(Path(path).suffix, "")
    ticks = "````" if "```" in text else "```"
    return f"{ticks}{lang} {path}\n{text.rstrip()}\n{ticks}"


def numbered(lines: list[str], start: int, end: int) -> str:
    """Lines ``start..end`` (1-based, inclusive) with their real line numbers."""
    return "\n".join(f"{n:>4}| {lines[n - 1]}" for n in range(max(1, start), min(end, len(lines)) + 1))


def spans_text(spans: list[tuple[int, int]]) -> str:
    """Line ranges in words: "957", "12-14, 20" (the first :data:`MAX_CHANGED_SPANS`, then how many more)."""
    shown = ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans[:MAX_CHANGED_SPANS])
    more = len(spans) - MAX_CHANGED_SPANS
    return shown + (f" and {more} more places" if more > 0 else "")


@dataclass(frozen=True)
class SinceCommit:
    """Tests that fail on the user's code and pass on the last commit, and the lines changed since it (per
    file, inclusive ranges): executed evidence of where a fix belongs, never what those lines were."""

    tests: list[str]
    lines: dict[str, list[tuple[int, int]]]

    def describe(self) -> str:
        where = "; ".join(f"{path} line(s) {spans_text(spans)}" for path, spans in self.lines.items())
        count = f"{len(self.tests)} of the failing tests pass" if len(self.tests) > 1 else f"{self.tests[0]} passes"
        return f"{count} on the last commit; since it, the code changed at {where}"


class Workbench:
    def __init__(self, spec: JobSpec, chain: Chain, scratch: Scratch | None, budget_chars: int) -> None:
        self.spec, self.chain, self.scratch = spec, chain, scratch
        self.root: Path | None = scratch.root if scratch else spec.workspace
        self.budget_chars = budget_chars
        self.conclusions: dict[str, str] = {}
        self.context_text: str | None = None
        self.test_report: TestReport | None = None  # the last run of the project's tests (and examples)
        self.lint: list[LintIssue] = []
        self.excerpted: set[str] = set()  # files a prompt showed only in part: never to be rewritten whole
        self.examples: TestReport | None = None  # the docstring examples' run (daemon.workspace.doctests), if any
        self.related: TestReport | None = None  # the related tests' run (daemon.workspace.related), if any ran
        self.related_files: list[str] = []  # those test files
        self.related_stale: list[str] = []  # their tests that fail on the last commit too: left out of every run
        self.broken: list[TestFailure] = []  # related tests and docstring examples that pass on the last commit
        # and fail since the save: executed evidence that it broke them
        self.since_commit: SinceCommit | None = None  # the project's failing tests that pass on the last commit
        self.suggestions: list[Finding] = []  # the reviewer's findings (suggestions), for the reproduce phase
        self.withheld: list[Finding] = []  # those not shown: the tests vouch for the change (tests_vouch)
        self.checked_before: TestReport | None = None  # the first checks' report, before the team changed anything
        self.unfinished_text = ""
        self.left_out: list[str] = []
        self.view: View | None = None  # set by the runner for each phase of a loop (daemon.agents.scope)
        self.deadline: float | None = None  # time.monotonic() at the chain's time_limit (set by the runner)

    def seconds_left(self, at_most: float, at_least: float = 2.0) -> float:
        """A timeout for a run now: ``at_most``, or less when the chain's time limit is nearer."""
        if self.deadline is None:
            return at_most
        return max(at_least, min(at_most, self.deadline - time.monotonic()))

    # -- files --------------------------------------------------------------------------
    def unexcerpted(self, edits: list[ParsedEdit]) -> list[ParsedEdit]:
        """``edits``, a whole-file edit of a file the team was shown only part of written back into that
        file (:func:`daemon.workspace.excerpts.merge_excerpt`). Raises EditParseError (for the model) when
        one's parts cannot be placed."""
        out = []
        for edit in edits:
            if edit.kind == "whole" and edit.path in self.excerpted:
                merged = merge_excerpt(edit.path, self.read(edit.path) or "", edit.content)
                if merged is None:
                    raise EditParseError(f"you were shown only part of {edit.path}, so it cannot be rewritten whole: "
                                         "send SEARCH/REPLACE blocks that change only the lines that are wrong.")
                edit = ParsedEdit(edit.path, "whole", content=merged)
            out.append(edit)
        return out

    def read(self, path: str) -> str | None:
        """A file's current text for the team, or None when it is missing, unsafe or not text."""
        try:
            if self.scratch is not None:
                return self.scratch.read(path)
            if self.root is None:
                return None
            return read_for_prompt(confine(self.root, path))
        except (OSError, UnicodeDecodeError, PathOutsideWorkspace, NotEditable):
            return None

    def all_files(self) -> list[str]:
        if self.scratch is not None:
            return self.scratch.list_files()
        return list(self.spec.files)

    def changed_files(self) -> list[str]:
        if self.scratch is None:
            return []
        return [e.path for e in self.scratch.proposed_change().edits if e.after is not None]

    def snapshot(self) -> dict[str, str]:
        """The team's files as they are now (the changed ones; new software: every file)."""
        return {p: t for p in self.changed_files() if (t := self.read(p)) is not None}

    def focus_files(self) -> list[str]:
        """What the user pointed at, what the team changed, and files named by failing tests."""
        names = list(self.spec.files)
        if self.spec.selection:
            names.append(self.spec.selection.path)
        names += self.changed_files()
        for failure in self.test_report.failures if self.test_report is not None else []:
            if failure.file:
                names.append(failure.file)
        names += list(self.since_commit.lines) if self.since_commit else []
        return [n for n in dict.fromkeys(names) if self.read(n) is not None]

    def code_focus(self) -> list[str]:
        """The focus files that are code: the tests a failure names are in focus too, but it is the
        code that a change edits (one such file is asked for, and taken, whole)."""
        named = {*self.spec.files, *([self.spec.selection.path] if self.spec.selection else [])}
        return [f for f in self.focus_files() if f in named or not is_test_file(f)]  # a test the user named stays

    def focus_lines(self) -> dict[str, list[int]]:
        """The lines each file's excerpt must hold when the file is too large to show whole: the
        diff's hunks, the selection, and the lines failing tests' (related ones too) and examples' tracebacks
        name."""
        lines: dict[str, list[int]] = {}
        for path, spans in (diff_ranges(self.spec.diff) if self.spec.diff else {}).items():
            lines.setdefault(path, []).extend(n for a, b in spans for n in range(a, b + 1))
        if self.spec.selection:
            lines.setdefault(self.spec.selection.path, []).extend(
                range(self.spec.selection.start_line, self.spec.selection.end_line + 1))
        for path, spans in self.since_commit.lines.items() if self.since_commit else ():
            lines.setdefault(path, []).extend(n for a, b in spans[:MAX_CHANGED_SPANS] for n in range(a, b + 1))
        for report in (self.test_report, self.examples, self.related):
            for failure in getattr(report, "failures", None) or []:
                if failure.file and failure.line:
                    lines.setdefault(failure.file, []).append(failure.line)
                for path, number in _TRACEBACK_LINE.findall(f"{failure.message}\n{failure.output}"):
                    parts = path.removeprefix("./").split("/")  # absolute in a copy: the tail that is ours
                    known = next((tail for tail in ("/".join(parts[i:]) for i in range(len(parts)))
                                  if tail and self.read(tail) is not None), None)
                    if known is not None:
                        lines.setdefault(known, []).append(int(number))
        return lines

    def review_files(self) -> list[str]:
        """The files under review (a diff's, the selection's, or the given ones)."""
        if self.spec.diff:
            return list(diff_ranges(self.spec.diff))
        if self.spec.selection:
            return [self.spec.selection.path]
        return list(self.spec.files)

    # -- template fields ----------------------------------------------------------------
    def render(self, template: str, extra: dict[str, str] | None = None) -> str:
        values = dict(extra or {})
        for name in set(placeholders(template)) - set(values):
            values[name] = self.field(name)
        return re.sub(r"\{([A-Za-z_][A-Za-z0-9_]*)\}", lambda m: values.get(m.group(1), m.group(0)), template)

    def field(self, name: str) -> str:
        """A template field's text; a phase's name stands for its conclusion, unless a field has that
        name (the change chain's phase ``code`` must not hide ``{code}``, the code itself)."""
        simple = {"task": lambda: self.spec.task, "edit_format": self.edit_format,
                  "program_format": lambda: NEW_PROGRAM_FORMAT,
                  "findings_format": lambda: BROKEN_FORMAT if self.regression() else FINDINGS_FORMAT,
                  "files": lambda: ", ".join(self.spec.files) or "(none)",
                  "lint": lambda: render_lint(self.lint), "code": self.code, "diff": self.diff,
                  "target": self.target, "context": lambda: self.context_text or self.code(),
                  "test_report": self.test_summary, "test_failures": self.test_failures,
                  "unfinished": self.unfinished, "code_map": self.code_map, "imports": self.imports,
                  "examples": lambda: example_failures(self.examples),
                  "failing_tests": self.failing_tests, "suspects": self.suspects, "regression": self.regression,
                  "changed_lines": self.changed_span,
                  "other_files": lambda: ", ".join(p for p in self.all_files() if p not in self.spec.files),
                  "to_rewrite": self.to_rewrite, "rewrite_reason": self.rewrite_reason,
                  "rewrite_goal": self.rewrite_goal}
        if name not in simple and name in {p.name for p in self.chain.phases()}:
            conclusion = self.conclusions.get(name, "(not decided yet)")
            return "" if conclusion.startswith("(skipped: ") else conclusion  # the runner's mark of a skip
        return simple[name]()

    def suspects(self) -> str:
        from daemon.agents.reproduce import render_suspects  # (it imports this module)

        return render_suspects(self.suggestions)

    def changed_span(self) -> str:
        from daemon.agents.patch import render_changed_lines  # (it imports this module)

        return render_changed_lines(self)

    def failing_tests(self) -> str:
        """The related tests' failures as the tester reports them ("" when they pass, did not run, or cannot
        run here: an environment problem is no evidence about the code)."""
        report = self.related
        if report is None or report.ok or not report.ran or report.cannot_run or not report.failures:
            return ""
        return str(report.summary())

    def tests_vouch(self) -> str:
        """Why a change's unbacked suggestions are not shown: its related tests ran and pass with it, and no example
        fails (bench/RESULTS.md, Evaluation: mutants); "" when not (not a change, no related test, or one fails)."""
        related, examples = self.related, self.examples
        if not self.saved_lines() or related is None or not related.ran or not related.ok or related.timed_out:
            return ""
        if examples is not None and not examples.ok:
            return ""
        return (f"the {related.passed} related test(s) pass with this change and no test Troupe wrote reproduces it "
                "(in the job's transcript only)")

    def regression(self) -> str:
        """The related tests and docstring examples the save broke (they pass on the last commit), as the tester
        reports them, under a line saying so; "" when none did (or this is not a save)."""
        if not self.broken:
            return ""
        parts = ["The repository's tests of this code passed before this change and fail since, so the lines it "
                 "changed break them:"]
        tests = [f.test_id for f in self.broken if not f.test_id.startswith(EXAMPLE_IDS)]
        if tests and self.related is not None:
            parts.append(self.related.summary(max_failures=2, max_chars=REGRESSION_CHARS))
        examples = [f for f in self.broken if f.test_id.startswith(EXAMPLE_IDS)]
        if examples:
            parts.append("\n".join(f"{f.file}:{f.line}: {f.message}" if f.line else f.message for f in examples[:4]))
        return "\n".join(parts)

    def saved_lines(self) -> dict[str, list[tuple[int, int]]]:
        """The lines a save (or a diff under review) adds or changes, per file; {} when the review has no diff."""
        return changed_lines(self.spec.diff) if self.spec.diff else {}

    def edit_format(self) -> str:
        """How to write code edits. One short file in focus (a one-file fix): the whole file back, as
        a bare call would ask (small models follow that, and copy the general format's examples). A
        new program in an empty workspace: every file whole, ``main.py`` the example (the bare build call's words)."""
        if self.chain.start == "empty" and not self.all_files():
            return NEW_PROGRAM_FORMAT
        focus = self.code_focus() if self.chain.start == "repository" else []
        text = self.read(focus[0]) if len(focus) == 1 else None
        if text is None or len(text.splitlines()) > ONE_FILE_LINES:
            return EDIT_FORMAT_HELP.strip()
        lang = _LANGUAGES.get(Path(focus[0]).suffix, "")
        return f"Reply with the whole corrected {focus[0]} in one ```{lang} block."  # the bare call's words

    def to_rewrite(self) -> str:
        """The functions to write anew when repairs do not pass, each file with their bodies left out
        ("" when there are none): those whose docstring examples fail; when none fail but the tests
        do, those of a short focus file that the failures name (:meth:`named_by_failures`)."""
        failing: dict[str, list[int]] = {}
        for failure in getattr(self.examples, "failures", None) or []:
            if failure.file and failure.line:
                failing.setdefault(failure.file, []).append(failure.line)
        named = {} if failing else self.named_by_failures()
        parts = []
        for path in dict.fromkeys([*failing, *named]):
            text = self.read(path)
            outline, names = (without_bodies(text, failing.get(path, ()), named.get(path, ())) if text is not None
                              else ("", []))
            if names:
                lang = _LANGUAGES.get(Path(path).suffix, "")
                parts.append(f"{path}, without the body of {', '.join(names)}:\n```{lang}\n{outline.rstrip()}\n```")
        return "\n\n".join(parts)

    def rewrite_reason(self) -> str:
        """What the rewrite prompt says is wrong: the docstring examples fail, or the tests do."""
        return "The code does not do what its docstrings say" if self._examples_fail() else "The tests fail"

    def rewrite_goal(self) -> str:
        return ("the function does what its docstring says" if self._examples_fail() else
                "the tests pass and each function does what the user asks")

    def _examples_fail(self) -> bool:
        return bool(getattr(self.examples, "failures", None))

    def named_by_failures(self) -> dict[str, set[str]]:
        """The functions of each short Python focus file (not a test file) that the failing tests name:
        a traceback line inside the function, its name in the output (``decode(...)``), or a test named
        after it (``test_decode_a_sentence``). Empty when the tests pass, did not run or cannot run here."""
        report = self.test_report
        if report is None or report.ok or not report.ran or report.cannot_run or not report.failures:
            return {}
        text = "\n".join(f"{f.test_id}\n{f.message}\n{f.output}" for f in report.failures)
        words = set(re.findall(r"[A-Za-z_]\w*", text))
        tests = [w for w in words if w.startswith("test")]
        lines: dict[str, set[int]] = {}
        for failure in report.failures:
            if failure.file and failure.line:
                lines.setdefault(failure.file, set()).add(failure.line)
        named: dict[str, set[str]] = {}
        for path in self.focus_files():
            source = self.read(path)
            if not path.endswith(".py") or is_test_file(path) or source is None or \
                    len(source.splitlines()) > ONE_FILE_LINES:
                continue
            for symbol in symbols_for(path, source):
                name = symbol.name.rsplit(".", 1)[-1]
                if symbol.kind == "class":
                    continue
                inside = any(symbol.line <= line <= symbol.end_line for line in lines.get(path, ()))
                called = name in words or any(re.search(rf"(?:^|_){re.escape(name)}(?:_|$)", t) for t in tests)
                if inside or (called and not name.startswith("__")):
                    named.setdefault(path, set()).add(name)
        return named

    def excerpt(self, path: str, text: str, token_budget: int, *, line_numbers: bool) -> str:
        """``path``'s parts that matter here when it is too large to show whole ("" when nothing says
        which part does): the :meth:`focus_lines`, else the definitions the task and the failing
        tests' output name."""
        lines = self.focus_lines().get(path)
        if not lines:
            named = set(re.findall(r"[A-Za-z_]\w*", f"{self.spec.task}\n{self.test_failures()}"))
            lines = [s.line for s in symbols_for(path, text) if s.name.rsplit(".", 1)[-1] in named]
        cut = excerpt(path, text, lines[:MAX_NAMED_EXCERPTS], token_budget, line_numbers=line_numbers) if lines else ""
        if cut:
            self.excerpted.add(path)
        return cut

    def _listing(self, paths: list[str], render: Callable[[str, str], str], *, numbers: bool = False) -> str:
        parts: list[str] = []
        left: list[str] = []
        used = 0
        for path in paths:
            text = self.read(path)
            if text is None:
                continue
            block = render(path, text)
            if used + len(block) > self.budget_chars:
                cut = self.excerpt(path, text, (self.budget_chars - used) // 3, line_numbers=numbers)
                if cut:
                    block = cut
                elif parts:
                    left.append(path)
                    continue
            parts.append(block)
            used += len(block)
        if left:
            self.left_out = left
            parts.append(f"(left out, too large for the context window: {', '.join(left)})")
        return "\n\n".join(parts) if parts else "(no files yet)"

    def code(self) -> str:
        """New software: every file. A repository: the focus files first (selected, changed, named
        by failing tests), then the files most relevant to the task and the failures, in budget.
        Within a loop, what :attr:`view` narrows it to (``daemon.agents.scope``)."""
        view = self.view
        if view is not None and view.since is not None:
            return self._since(view.since)
        if view is not None and view.focus:
            return self._focused(view.focus, view.why)
        if self.chain.start == "empty" or self.root is None:
            return self._listing(self.all_files(), fence)
        files = self.all_files()
        if files and set(files) <= set(self.focus_files()):  # every file is in focus: a map adds nothing
            return self._listing(files, lambda path, text: f"{path}:\n{fence(path, text).replace(' ' + path, '', 1)}")
        query = self.spec.task
        if self.test_report is not None and not self.test_report.ok:
            query += "\n" + self.test_failures()
        context = build_context(self.root, query, self.budget_chars // 4, self.focus_files(), line_numbers=False,
                                focus_lines=self.focus_lines())
        self.left_out = context.left_out
        self.excerpted.update(context.excerpts)
        return context.text

    def _since(self, before: dict[str, str]) -> str:
        now = self.snapshot()
        diff = diff_since(before, now)
        touched = [p for p in now if before.get(p) != now[p]]
        rest = [p for p in self.all_files() if p not in touched]
        parts = [f"Changed since your last comment:\n```diff\n{diff.rstrip()}\n```" if diff else
                 "Nothing changed since your last comment."]
        if touched:
            parts.append("The files it touches, as they are now:\n\n" + self._listing(touched, fence))
        if rest:
            parts.append(f"Unchanged since you last saw them: {', '.join(rest)}.")
        return "\n\n".join(parts)

    def _focused(self, focus: list[str], why: str) -> str:
        files = self.all_files()
        shown = [p for p in focus if p in files]
        rest = {p: t for p, t in self.snapshot().items() if p not in shown}  # a repository: the changed ones
        text = self._listing(shown, fence)
        if rest:
            text += (f"\n\nThe other files ({why or 'not needed here'}; ask for one if you need it), "
                     f"with what they define:\n{code_map(rest)}")
        return text

    def code_map(self) -> str:
        """The team's files with their definitions, docstrings and command-line options (not their code)."""
        return code_map(self.snapshot()) or "(no files yet)"

    def imports(self) -> str:
        """The modules the code imports from outside the standard library and the project ("" if none)."""
        return third_party_imports(self.snapshot())

    def diff(self) -> str:
        if self.scratch is None:
            return self.spec.diff or "(no change)"
        return self.scratch.proposed_change().diff or "(no change yet)"

    def target(self) -> str:
        ranges = diff_ranges(self.spec.diff) if self.spec.diff else {}
        selection = self.spec.selection
        changed = self.saved_lines()

        def render(path: str, text: str) -> str:
            shown = show(path, text)
            spans = changed.get(path)
            if not spans:
                return shown
            plural = "s" if len(spans) > 1 or spans[0][0] != spans[0][1] else ""
            return f"{shown}\n(this change adds or changes line{plural} {spans_text(spans)} of {path})"

        def show(path: str, text: str) -> str:
            lines = text.splitlines()
            if len(text) > self.budget_chars:
                cut = self.excerpt(path, text, self.budget_chars // 3, line_numbers=True)
                if cut:
                    return cut
            if path in ranges:
                spans = [(max(1, a - HUNK_CONTEXT), b + HUNK_CONTEXT) for a, b in ranges[path]]
                body = "\n   ...\n".join(numbered(lines, a, b) for a, b in spans)
                return f"{path} (changed hunks, with line numbers):\n{body}"
            if selection and selection.path == path:
                return (f"{path} (lines {selection.start_line}-{selection.end_line}):\n"
                        + numbered(lines, selection.start_line, selection.end_line))
            return f"{path} (with line numbers):\n" + numbered(lines, 1, len(lines))

        return self._listing(self.review_files(), render, numbers=True)

    def test_summary(self) -> str:
        if self.test_report is None:
            return "(the tests have not run)"
        return str(self.test_report.summary())

    def test_failures(self) -> str:
        report = self.test_report
        if report is None:
            return "(the tests have not run)"
        text, limit = str(report.summary()), self.budget_chars // 2  # the code shares the prompt
        text = text if len(text) <= limit else text[:limit] + "\n(... output cut)"
        since = self.since_commit
        return f"{text}\n\n{since.describe()}: the fix belongs there." if since and not report.ok else text

    def refresh_unfinished(self) -> list[Unfinished]:
        files = [(p, self.read(p) or "") for p in self.all_files()]
        found = find_unfinished(files)
        self.unfinished_text = "\n".join(str(u) for u in found) or "(nothing)"
        return found

    def unfinished(self) -> str:
        return self.unfinished_text or "(nothing)"
