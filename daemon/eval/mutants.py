"""The mutants suite: one-line bugs planted in the user's own repository, kept only when its own
tests catch them; then the team reviews the mutated file and fixes the repository.

``troupe eval mutants --repo PATH [--files GLOB] [--tests COMMAND] [-n N] [--seed S]``. Before any
job, the repository's tests (``--tests``: only the command given, e.g. the tests of the package
mutated; it is the team's test command too) run once in the sandbox on an unmutated copy (they must
pass), then mutants
(:mod:`daemon.eval.mutation`: Cosmic Ray's operators) are drawn in an order fixed by the seed
and each is tested on its own copy, every test with its own timeout; the first ``N`` the tests
kill are the items. How many were drawn, killed, survived or timed out is in :attr:`stats`.

Per item, on a fresh copy with the mutant applied and committed as the repository's only state
(the team sees a normal repository, never the mutant's identity or the original line):

- *caught*: a model finding (never a lint finding) of at most 3 lines touching the mutated line ±1;
- *fixed* (the item's ``solved``): the change proposed by a ``test`` job (``troupe test``), applied
  to a copy with the repository's own test files left as they are, makes the tests pass;
- *false_positives*: the findings of a review of the same file unmutated, once per file, row and run
  (counted on that file's first item, with ``clean_files`` 1 there), so the row's
  ``false_positives / clean_files`` is false findings per clean file. That review may read experience
  but adds none (it holds every mutant's original line); with ``--experience-split`` each arm (a run of
  its own) measures it again, and the halves are ordered: learn on the first half of the kept mutants,
  hold out the rest.

With ``--on-save`` the mutant is what a person's save looks like instead: the unmutated repository
is the last commit and the mutated file is saved over it, and the review gets the file with its
``git diff HEAD`` as the watcher sends it. The clean review is then a correct save of the same file,
one per item: the mutant is the last commit and the unmutated file is saved over it (the diff puts
the mutated line back as it was), so a finding on that save is false, and a review that speaks only
about a save's lines is measured on lines a save did change. The bare review sees the same diffs and
the definitions holding them; the bare fix of a file too large to send whole sees the definitions
the failing tests name (:mod:`daemon.eval.mutants_bare`).

The bare rows get the same information with plain calls: the review sees the whole file numbered
as the team's reviewer sees it and the same findings format, placed by the same validator; the fix
sees the failing test output and the file, and returns the whole corrected file.

A file too large for the model's context is given whole all the same (what the review job does
with a saved file): the report's failed/capped columns then say so.
"""

from __future__ import annotations

import asyncio
import logging
import re
import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from daemon.eval.mutants_bare import bare_fix, bare_save_review_prompt
from daemon.eval.mutation import Candidate, Mutant, MutationError, candidates, python_files, sample_order
from daemon.eval.scoring import BARE_REVIEW_MAX_TOKENS, Spot, bare_review_prompt, bare_spots
from daemon.eval.suite import Context, Item, ItemResult, JobRun, Row, SuiteError
from daemon.json_types import JsonDict, JsonObject
from daemon.messages import JobOptions, SubmitJob
from daemon.workspace.files import list_repo_files
from daemon.workspace.repomap import is_test_file
from daemon.workspace.reports import TestReport

log = logging.getLogger("troupe.eval")

DEFAULT_N = 30
BASELINE_SECONDS = 900.0
"""The unmutated repository's test run may take this long (it is run once)."""
MAX_DRAWS_PER_KEPT = 5
"""Draw at most this many mutants per wanted one: a repository whose tests let most mutants
survive ends with fewer items, not with an endless run."""


@dataclass
class MutantStats:
    """What the drawing found: every one-line position, how many were drawn and what the tests said."""

    positions: int = 0  # every position where an operator applies, in the chosen files
    drawn: int = 0  # positions taken in the seed's order
    not_one_line: int = 0  # drawn, but applying it changes no line, or more than one
    tested: int = 0
    killed: int = 0
    survived: int = 0
    timed_out: int = 0  # a test stopped by its timeout, or the whole run
    kept: int = 0
    baseline_seconds: float = 0.0
    baseline_runner: str = ""
    deselected: list[str] = field(default_factory=list)  # tests that outran their timeout unmutated: not run

    def line(self) -> str:
        return (f"mutants: {self.positions} positions in the files, {self.drawn} drawn, {self.not_one_line} not a "
                f"one-line change, {self.tested} tested: {self.killed} killed, {self.survived} survived, "
                f"{self.timed_out} timed out; {self.kept} kept (the unmutated tests: {self.baseline_runner}, "
                f"{self.baseline_seconds:.1f} s" + (f"; not run, too slow for their timeout: "
                                                    f"{', '.join(self.deselected)}" if self.deselected else "") + ")")


def covers(line: int, start: int, end: int) -> bool:
    """A finding on ``start..end`` catches the mutant on ``line``: at most 3 lines, touching it ±1."""
    return end - start + 1 <= 3 and start <= line + 1 and end >= line - 1


class MutantsSuite:
    name = "mutants"
    score_names: tuple[str, ...] = ("caught", "fixed", "false_positives", "clean_files", "findings")
    split_order = "ordered"
    """``--experience-split``: every item is one repository's; learn on the first half of its mutants
    in the draw's order, hold out the rest (:func:`daemon.eval.split.halves`)."""

    def __init__(self, data: Path | None = None, *, files: str | None = None, n: int | None = None, seed: int = 0,
                 progress: Callable[[str], None] | None = None, on_save: bool = False,
                 tests: str | None = None) -> None:
        from daemon.workspace.testing import has_tests

        if data is None:
            raise SuiteError("the mutants suite needs a repository: --repo PATH (a copy: its files are only read)")
        root = Path(data).expanduser()
        if not root.is_dir():
            raise SuiteError(f"no repository at {data}: --repo must be a folder with Python code and its tests")
        self.root = root.resolve()
        if not has_tests(self.root):
            raise SuiteError(f"{data} has no tests (tests/, test_*.py, *_test.py): a mutant is kept only when the "
                             "repository's own tests catch it")
        self.files = python_files(self.root, files)
        if not self.files:
            what = f"matching {files!r}" if files else "outside its tests"
            raise SuiteError(f"{data} has no Python files {what}: nothing to mutate (--files takes a glob relative "
                             "to the repository, e.g. 'pkg/*.py')")
        self.n = n if n and n > 0 else DEFAULT_N
        self.seed = seed
        self.on_save = on_save
        self.progress = progress or (lambda text: log.info("%s", text))
        self.stats = MutantStats()
        self.snapshot: dict[str, str] = {}
        self.test_seconds = 120.0
        self._items: list[Item] | None = None
        self._kill_command: str | None = None
        self.tests = tests.strip() if tests and tests.strip() else None  # --tests: the repository's test command
        self._test_command = self.tests  # None: the runner's own choice; else the command, less the deselected
        self._clean: set[tuple[Context, Row, str]] = set()  # (the run, row, file) whose clean file was reviewed
        self._clean_before: set[tuple[Row, str]] = set()  # (row, file) reviewed clean by the run this one resumes

    # -- the items: drawn, tested, kept ---------------------------------------------------
    def items(self) -> list[Item]:
        if self._items is None:
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                asyncio.run(self.prepare())
            else:
                raise RuntimeError("MutantsSuite.items() inside an event loop: await suite.prepare() first")
        assert self._items is not None
        return self._items

    async def prepare(self) -> list[Item]:
        """Test the unmutated repository once, then draw mutants in the seed's order and keep the first
        ``n`` its tests kill. Raises :class:`SuiteError` when the unmutated tests do not pass."""
        if self._items is not None:
            return self._items
        self.snapshot = await asyncio.to_thread(_read_texts, self.root)
        started = time.monotonic()
        baseline = await self.run_tests(self.snapshot, command=self._test_command, timeout=BASELINE_SECONDS)
        slow = _deselectable(baseline)
        if slow:  # a test that outruns its timeout unmutated would make every mutant look like a hang
            self._test_command = (self.tests or "pytest -q") + "".join(f" --deselect {test}" for test in slow)
            baseline = await self.run_tests(self.snapshot, command=self._test_command, timeout=BASELINE_SECONDS)
            self.stats.deselected = slow
        self.stats.baseline_seconds = round(time.monotonic() - started, 1)
        self.stats.baseline_runner = shlex.join(_runner(baseline.command)) or "nothing"
        if not baseline.ok:
            raise SuiteError(f"the tests of {self.root} do not pass without any mutant, so no mutant can be judged "
                             f"by them:\n{baseline.summary(max_failures=3, max_chars=2000)}")
        # a mutant's run may take a few times the clean run (slower paths), never the whole night
        self.test_seconds = max(60.0, 3 * baseline.seconds + 30)
        if "pytest" in baseline.command:  # the first failure is enough to kill a mutant
            self._kill_command = (self._test_command or "pytest -q") + " -x"
        try:
            found = [c for f in self.files for c in candidates(f, self.snapshot[f])] if self.files else []
        except (MutationError, KeyError) as exc:
            raise SuiteError(f"cannot mutate {self.root}: {exc}") from None
        self.stats.positions = len(found)
        self._items = await self._draw(sample_order(found, self.seed))
        self.progress(self.stats.line())
        return self._items

    async def _draw(self, order: list[Candidate]) -> list[Item]:
        items: list[Item] = []
        seen: set[tuple[str, int, str]] = set()
        for candidate in order:
            if len(items) >= self.n or self.stats.tested >= self.n * MAX_DRAWS_PER_KEPT:
                break
            self.stats.drawn += 1
            mutant = candidate.apply(self.snapshot[candidate.file])
            if mutant is None or (mutant.file, mutant.line, mutant.mutated) in seen:
                self.stats.not_one_line += 1
                continue
            seen.add((mutant.file, mutant.line, mutant.mutated))
            report = await self.run_tests({**self.snapshot, mutant.file: mutant.text}, command=self._kill_command)
            self.stats.tested += 1
            verdict = _verdict(report)
            setattr(self.stats, verdict, getattr(self.stats, verdict) + 1)
            kept = len(items) + (verdict == "killed")
            self.progress(f"mutants: {mutant.id} {verdict} ({report.seconds:.1f} s); {kept}/{self.n} kept after "
                          f"{self.stats.tested} tested")
            if verdict == "killed":
                items.append(_item(mutant, report))
        self.stats.kept = len(items)
        return items

    async def run_tests(self, files: dict[str, str], *, command: str | None = None,
                        timeout: float | None = None) -> TestReport:
        """The repository's own tests on a scratch copy holding ``files``, in the sandbox (the runner
        ``daemon.workspace.testing`` chooses: pytest or unittest, a timeout per test)."""
        from daemon.workspace.testing import run_tests

        with tempfile.TemporaryDirectory(prefix="troupe-mutant-") as tmp:
            await asyncio.to_thread(_write_texts, Path(tmp), files)
            return await run_tests(Path(tmp), command=command, timeout=timeout or self.test_seconds)

    # -- one item on one row ----------------------------------------------------------------
    async def run(self, item: Item, row: Row, ctx: Context) -> ItemResult:
        file, line, text = item.data["file"], item.data["line"], item.data["text"]
        mutated = {**self.snapshot, file: text}
        diff = None
        if self.on_save:
            root, diff = await self.saved(ctx, file, text)
            review_run, spots = await self.review(ctx, row, root, file, text, diff=diff)
            fix_root, _ = await self.saved(ctx, file, text)
        else:
            review_run, spots = await self.review(ctx, row, await self.workspace(ctx, mutated), file, text)
            fix_root = await self.workspace(ctx, mutated)
        fix_run, fixed_files, fix_note = await self.fix(ctx, row, fix_root, item)
        fixed_report = await self.run_tests(fixed_files, command=self._test_command) if fixed_files else None
        runs = [review_run, fix_run]
        scores = {"caught": float(any(covers(line, s.start, s.end) for s in spots)),
                  "fixed": float(bool(fixed_report and fixed_report.ok)), "false_positives": 0.0,
                  "clean_files": 0.0, "findings": float(len(spots))}
        detail: JsonDict = {
            "file": file, "line": line, "operator": item.data["operator"], "original": item.data["original"],
            "mutated": item.data["mutated"], "findings": [asdict(s) for s in spots],
            "fix": fix_note if fixed_report is None else (
                "tests pass" if fixed_report.ok else fixed_report.summary(max_failures=2, max_chars=800)),
            "review_tokens": review_run.prompt_tokens + review_run.completion_tokens,
            "fix_tokens": fix_run.prompt_tokens + fix_run.completion_tokens}
        if self.on_save or ((ctx, row, file) not in self._clean and (row, file) not in self._clean_before):
            self._clean.add((ctx, row, file))  # the unmutated file, once per file, row and run (a context)
            if self.on_save:  # the mutant committed and put right by a save: a correct change, per item
                clean_root, clean_diff = await self.saved(ctx, file, self.snapshot[file], base=mutated)
            else:
                clean_root, clean_diff = await self.workspace(ctx, self.snapshot), None
            clean_run, clean = await self.review(ctx, row, clean_root, file, self.snapshot[file], diff=clean_diff,
                                                 probe=True)
            runs.append(clean_run)
            scores["false_positives"], scores["clean_files"] = float(len(clean)), 1.0
            detail["clean_findings"] = [asdict(s) for s in clean]
        return ItemResult.of(self.name, item, row, runs, solved=bool(scores["fixed"]), scores=scores, detail=detail)

    async def workspace(self, ctx: Context, files: dict[str, str]) -> Path:
        """A fresh copy holding ``files``, committed as the repository's one and only state. Its name
        says nothing about the mutant (the team sees the path)."""
        root = await ctx.workspace(files, "repo")
        await asyncio.to_thread(_commit, root)
        return root

    async def saved(self, ctx: Context, file: str, text: str,
                    base: dict[str, str] | None = None) -> tuple[Path, str | None]:
        """A fresh copy whose last commit is ``base`` (the unmutated repository), with ``text`` saved over
        ``file``, and the ``git diff HEAD`` the watcher would send for that save."""
        from daemon.watch.trigger import changed_hunks

        root = await self.workspace(ctx, self.snapshot if base is None else base)
        await asyncio.to_thread((root / file).write_text, text, encoding="utf-8")
        return root, await asyncio.to_thread(changed_hunks, root, [file])

    async def review(self, ctx: Context, row: Row, root: Path, file: str, text: str,
                     diff: str | None = None, *, probe: bool = False) -> tuple[JobRun, list[Spot]]:
        """One review of ``file`` (whose text is ``text``) in ``root``, of ``diff``'s hunks when a save
        gives one: the job and its model findings. A ``probe`` (the unmutated file's review, for false
        positives) may read experience but never adds any: that file holds every mutant's original line,
        the fix the team must find itself."""
        if row == "team":
            options = self._options()
            options.diff = diff
            if probe:
                options.experience = "read"
            run = await ctx.job(SubmitJob(kind="review", workspace=str(root), files=[file], options=options))
            return run, [Spot(f.start_line, f.end_line or f.start_line, f.message, f.suggested_fix, str(f.severity))
                         for f in run.findings if f.rule is None and f.file == file]
        prompt = bare_save_review_prompt(file, text, diff) if diff else bare_review_prompt(file, text)
        run = await ctx.complete(root, prompt, max_tokens=BARE_REVIEW_MAX_TOKENS)
        return run, bare_spots(run.answer, file, text)

    async def fix(self, ctx: Context, row: Row, root: Path, item: Item) -> tuple[JobRun, dict[str, str] | None, str]:
        """The row's fix: the job, the repository's files as its fix leaves them (None: nothing to
        test), and what happened when there is nothing to test."""
        file, text = item.data["file"], item.data["text"]
        mutated = {**self.snapshot, file: text}
        if row == "team":
            run = await ctx.job(SubmitJob(kind="test", workspace=str(root), files=[file], options=self._options()))
            edits = [e for e in ((run.change.edits or {}).get("edits", []) if run.change else [])
                     if isinstance(e, dict) and isinstance(e.get("path"), str)]
            if not edits:
                return run, None, "no change proposed"
            after, note = _applied(mutated, edits)
            return run, after, note
        return await bare_fix(ctx, root, file, text, mutated, item.data["failures"], part_only=self.on_save)

    def resumed(self, results: list[ItemResult]) -> None:
        """``troupe eval --resume``: the files whose clean review a finished item already counted."""
        self._clean_before |= {(r.row, str(r.detail.get("file"))) for r in results if r.scores.get("clean_files")}

    def _options(self) -> JobOptions:
        """The team's job options: the test command the scoring uses, when it is not the runner's own."""
        return JobOptions(test_command=self._test_command or None)

    def answer_in(self, result: ItemResult, texts: list[str]) -> bool:
        """Whether the line the item's mutant replaced is, verbatim, in ``texts`` (``--experience-split``:
        the experience that reached the item's prompts; :class:`daemon.eval.split.KnowsAnswer`)."""
        original = result.detail.get("original")
        return isinstance(original, str) and bool(original.strip()) and any(original.strip() in t for t in texts)

    def reference(self, model: str, results: list[ItemResult], rows: list[str]) -> tuple[str, JsonDict]:
        """What ``troupe eval`` prints under the table and saves as ``reference``: the drawing, and per
        row false findings per clean file and the tokens the review spent per caught mutant and the fix
        per fixed one."""
        lines, per_row = [self.stats.line()], {}
        for row in rows:
            mine = [r for r in results if r.row == row]
            sums = {name: sum(r.scores.get(name, 0.0) for r in mine)
                    for name in ("clean_files", "false_positives", "caught", "fixed")}
            sums["false_majors"] = float(sum(f.get("severity") in ("critical", "major")
                                             for r in mine for f in r.detail.get("clean_findings", [])))
            review = sum(r.detail.get("review_tokens", 0) for r in mine)
            fix = sum(r.detail.get("fix_tokens", 0) for r in mine)
            per_row[row] = {"false_positives_per_clean_file": _ratio(sums["false_positives"], sums["clean_files"]),
                            "review_tokens_per_caught": _ratio(review, sums["caught"]),
                            "fix_tokens_per_fixed": _ratio(fix, sums["fixed"]), **sums}
            shown = {k: "—" if v is None else f"{v:.2f}" if k.startswith("false") else f"{v:.0f}"
                     for k, v in per_row[row].items()}
            majors = f", {sums['false_majors']:g} of them major" if row == "team" else ""
            lines.append(f"{row}: {shown['false_positives_per_clean_file']} false findings per clean file "
                         f"({sums['false_positives']:g} in {sums['clean_files']:g} files{majors}); review tokens per "
                         f"caught {shown['review_tokens_per_caught']}, fix tokens per fixed "
                         f"{shown['fix_tokens_per_fixed']}")
        return "\n".join(lines), {"mutants": asdict(self.stats), "repo": str(self.root), "files": self.files,
                                  "seed": self.seed, "n": self.n, "rows": per_row}


def _item(mutant: Mutant, report: TestReport) -> Item:
    return Item(id=mutant.id, data={
        "file": mutant.file, "line": mutant.line, "operator": mutant.candidate.operator,
        "original": mutant.original, "mutated": mutant.mutated, "text": mutant.text,
        "failures": report.summary(max_failures=3, max_chars=3000)})


def _deselectable(report: TestReport) -> list[str]:
    """The pytest ids of the tests that failed only by outrunning their own timeout, when they are the
    run's only failures (and can be named on a command line); [] otherwise."""
    hanging = report.hanging
    if report.ok or report.timed_out or not hanging or len(hanging) != len(report.failures) or len(hanging) > 5:
        return []
    if "pytest" not in report.command or any(not re.fullmatch(r"[\w./:-]+", f.test_id) for f in hanging):
        return []
    return [f.test_id for f in hanging]


def _verdict(report: TestReport) -> str:
    if report.timed_out or report.hanging:
        return "timed_out"
    if report.ok:
        return "survived"
    return "killed"


def _applied(files: dict[str, str], edits: list[JsonObject]) -> tuple[dict[str, str] | None, str]:  # a change's
    """``files`` with a change's edits (whole after-texts) written, its edits to test files left out:
    the repository's own tests judge the fix."""
    result, skipped = dict(files), []
    for edit in edits:
        path = edit["path"]
        if is_test_file(path):
            skipped.append(path)
        elif edit.get("after") is None:
            result.pop(path, None)
        else:
            result[path] = edit["after"]
    if result == files:
        return None, "the change touches only the tests: " + ", ".join(skipped)
    return result, ("edits to tests left out: " + ", ".join(skipped)) if skipped else ""


def _runner(command: list[str]) -> list[str]:
    """A test command as a person would type it: no interpreter path, none of the runner's own options."""
    if not command:
        return []
    shown = [Path(command[0]).name]
    for arg in command[1:]:
        if arg.startswith(("-p", "--color", "--junitxml", "-o", "--timeout")):
            break
        shown.append(arg)
    return shown


def _ratio(a: float, b: float) -> float | None:
    return round(a / b, 3) if b else None


def _read_texts(root: Path) -> dict[str, str]:
    """The repository's text files (``.gitignore`` honoured, no binaries), relative path → text."""
    texts = {}
    for rel in list_repo_files(root):
        try:
            texts[rel] = (root / rel).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            log.info("mutants: %s not copied (%s)", rel, exc)
    return texts


def _write_texts(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def _commit(root: Path) -> None:
    """``root`` as a git repository with one commit holding every file (the team's tools read git)."""
    if shutil.which("git") is None:
        log.info("mutants: no git here; %s stays a plain folder", root)
        return
    env_args = ["-c", "user.name=Troupe eval", "-c", "user.email=eval@troupe.invalid", "-c", "commit.gpgsign=false"]
    for argv in (["git", "init", "-q"], ["git", "add", "."], ["git", *env_args, "commit", "-q", "-m", "Current state"]):
        done = subprocess.run(argv, cwd=root, capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv[:2])} failed in {root}: {done.stderr.strip()[:300]}")
