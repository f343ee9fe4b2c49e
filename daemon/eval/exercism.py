"""The exercism suite: Aider's code-editing benchmark (Exercism's Python practice exercises) on
Aider's protocol, for the team and for the bare model.

Items: the exercises of ``data/exercism/exercises/`` (89, MIT; ``--data PATH`` for another copy
with the same layout), in name order. Per exercise the model is given what Aider gives it: the
instructions (``.docs/introduction.md``, ``instructions.md`` and ``instructions.append.md``, those
present, in that order, then Aider's addendum naming the file to edit) and the stub
(``.meta/config.json``'s solution file). The exercise's tests (its test files) never reach a
prompt: the harness runs them in the sandbox (pytest, :data:`TEST_SECONDS` for the whole run, as
Aider's harness times out a run) on the solution. When they fail, the model gets one more try
with the run's *output*, cleaned and trimmed as Aider does (timings out, the scratch path made the
exercise's name, the first :data:`OUTPUT_LINES` lines) and Aider's words "See the testing errors
above…". ``pass1``: the first try passes; ``pass2`` (the item's ``solved``): the first or the second.

- **bare**: each try is one ``complete`` call: the instructions, the file as it is, and "reply
  with the whole file" (a second try: the file as the first try left it, then the test output).
- **team**: each try is a ``change`` job on a workspace holding only the solution file (as it is).
  Its own test loops may run the exercise's tests: the job's test command runs them from a folder
  outside the workspace, so the team's tools see their output (as the harness does), never their
  source (no workspace file, repository map or listing holds it). A second try is a second
  ``change`` job on the first try's file, with the same words as the bare second try.

Both rows are scored by the same test run, so a try counts the same way in both. Aider's published
row for the same model (the README's table beside the data) is printed under the table
(:meth:`ExercismSuite.reference`).
"""

from __future__ import annotations

import asyncio
import json
import re
import shlex
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from daemon.eval.fix import changed_file
from daemon.eval.report import render
from daemon.eval.scoring import parse_file_reply
from daemon.eval.suite import Context, Item, ItemResult, JobRun, Row, SuiteError
from daemon.json_types import JsonDict
from daemon.messages import JobOptions, SubmitJob

DATA = Path(__file__).resolve().parent / "data" / "exercism"
TEST_SECONDS = 60.0
"""Seconds one run of an exercise's tests may take (Aider's harness: 60 s); past it the run fails."""
OUTPUT_LINES = 50
"""How much of a failing run's output the second try gets (Aider keeps its first 50 lines)."""
BARE_MAX_TOKENS = 3072
"""The bare call's completion cap: the whole solution file (the team's code phases get 3,072 each)."""
TIMED_OUT = "Tests timed out!"  # Aider's words for a run past its limit

# Aider's benchmark prompts (benchmark/prompts.py), word for word.
INSTRUCTIONS_ADDENDUM = """
####

Use the above instructions to modify the supplied files: {file_list}
Don't change the names of existing functions or classes, as they may be referenced from other code like unit tests, etc.
Only use standard libraries, don't suggest installing any packages.
"""
TEST_FAILURES = """
####

See the testing errors above.
The tests are correct, don't try and change them.
Fix the code in {file_list} to resolve the errors.
"""
BARE_FILE = """{file}:
```python
{text}```

Reply with the whole {file} in one ```python block."""

_TIMING = re.compile(r"\bin \d+\.\d+s\b")
_PUBLISHED = re.compile(r"^\|\s*(Qwen2\.5-Coder\s+([\d.]+)B[^|]*?)\s*\|\s*([\d.]+)\s*%\s*\|\s*([\d.]+)\s*%\s*\|",
                        re.MULTILINE | re.IGNORECASE)
_MODEL_SIZE = re.compile(r"qwen2\.?5[\w.-]*?coder[-_ ]?([\d.]+)b", re.IGNORECASE)


@dataclass
class TestRun:
    """One run of an exercise's tests on a solution."""

    __test__ = False  # not a pytest test class

    passed: bool
    timed_out: bool
    output: str  # what the next try would see: the cleaned, trimmed output (Aider's), "" when it passed


class Try(TypedDict):
    """One try of an item, as its result's detail keeps it."""

    job: str | None
    wrote_file: bool
    passed: bool
    timed_out: bool
    output: str


@dataclass
class Published:
    """Aider's row for one model, from the README's table."""

    model: str
    pass1: float  # percent
    pass2: float


def load_exercises(root: Path) -> list[Item]:
    """Every exercise under ``root/exercises`` in name order; a SuiteError that says what is wrong
    when the folder is not an Exercism set."""
    folder = root / "exercises"
    if not folder.is_dir():
        raise SuiteError(f"no Exercism exercises at {root}: expected {folder} with one folder per exercise "
                         "(NAME/.meta/config.json, NAME/.docs/instructions.md, the stub and its tests)")
    items = [_exercise(path) for path in sorted(folder.iterdir()) if path.is_dir() and not path.name.startswith(".")]
    if not items:
        raise SuiteError(f"no Exercism exercises in {folder}")
    return items


def _exercise(path: Path) -> Item:
    try:
        files = json.loads((path / ".meta" / "config.json").read_text(encoding="utf-8"))["files"]
        solution, tests = list(files["solution"]), list(files["test"])
        instructions = "".join((path / ".docs" / name).read_text(encoding="utf-8")
                               for name in ("introduction.md", "instructions.md", "instructions.append.md")
                               if (path / ".docs" / name).is_file())
        stub = {name: (path / name).read_text(encoding="utf-8") for name in solution}
        helpers = [p.name for p in sorted(path.glob("*.py")) if p.name not in {*solution, *tests}]
        # the tests' own helpers (error-handling's test_utils.py, not in its config) go with them
        test_files = {name: (path / name).read_text(encoding="utf-8") for name in [*tests, *helpers]}
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
        raise SuiteError(f"the exercise {path} cannot be read ({type(exc).__name__}: {exc}); it needs "
                         ".meta/config.json with files.solution and files.test, and those files") from None
    if len(solution) != 1 or not tests or not (path / ".docs" / "instructions.md").is_file():
        raise SuiteError(f"the exercise {path} needs one solution file, its test files and .docs/instructions.md")
    return Item(id=path.name, files=stub, data={"file": solution[0], "tests": test_files,
                                                "instructions": instructions})


def published_rows(root: Path) -> list[Published]:
    """Aider's published rows from the README beside the exercises (none when it has no table)."""
    try:
        text = (root / "README.md").read_text(encoding="utf-8")
    except OSError:
        return []
    return [Published(m.group(1).strip(), float(m.group(3)), float(m.group(4))) for m in _PUBLISHED.finditer(text)]


def published_for(model: str, rows: list[Published]) -> Published | None:
    """The published row for ``model`` (a Qwen2.5-Coder of the same size, by name), or None."""
    wanted = {m.group(1) for m in _MODEL_SIZE.finditer(model or "")}
    for row in rows:
        size = _MODEL_SIZE.search(row.model.replace(" ", "-"))
        if size and size.group(1) in wanted:
            return row
    return None


def first_prompt(item: Item) -> str:
    """What Aider's first message says: the instructions, then its addendum naming the file."""
    instructions: str = item.data["instructions"]  # the exercise's .docs, read by items()
    return instructions + INSTRUCTIONS_ADDENDUM.format(file_list=item.data["file"])


def retry_prompt(item: Item, output: str) -> str:
    """The second try's words: the first message (Aider's chat still holds it), the failing run's
    output and Aider's "see the testing errors above"."""
    return f"{first_prompt(item)}\n{output}\n{TEST_FAILURES.format(file_list=item.data['file'])}"


def bare_prompt(words: str, file: str, text: str) -> str:
    """One bare try: the words, the file as it is now, and "reply with the whole file"."""
    text = text if text.endswith("\n") else text + "\n"
    return f"{words}\n{BARE_FILE.format(file=file, text=text)}"


def clean_output(output: str, scratch: Path, name: str) -> str:
    """A failing run's output as Aider passes it on: no timings, the scratch folder named as the
    exercise, its first :data:`OUTPUT_LINES` lines."""
    text = _TIMING.sub("", output).replace(str(scratch), name)
    return "\n".join(text.strip().splitlines()[:OUTPUT_LINES])


async def run_exercise_tests(item: Item, solution: str, *, timeout: float = TEST_SECONDS) -> TestRun:
    """The exercise's tests against ``solution`` (the solution file's text), in the sandbox, in a
    scratch folder holding the two; exit 0 within ``timeout`` passes."""
    from daemon.sandbox import SandboxError, run_sandboxed
    from daemon.workspace.interpreter import project_python

    python = await asyncio.to_thread(project_python)
    with tempfile.TemporaryDirectory(prefix="troupe-exercism-") as tmp:
        scratch = Path(tmp).resolve()
        for name, text in {**item.data["tests"], item.data["file"]: solution}.items():
            (scratch / name).write_text(text, encoding="utf-8")
        tests = [name for name in item.data["tests"] if name.endswith("_test.py")] or list(item.data["tests"])
        argv = [python, "-m", "pytest", "-q", "--tb=short", "-p", "no:cacheprovider", "--color=no", *tests]
        try:  # Troupe's own pytest plugins stay out of the run (the exercises need none)
            result = await run_sandboxed(argv, cwd=scratch, timeout=timeout,
                                         env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
        except SandboxError as exc:
            return TestRun(False, False, f"the sandbox could not start: {exc}")
        if result.timed_out:
            return TestRun(False, True, TIMED_OUT)
        passed = result.returncode == 0
        output = "" if passed else clean_output((result.stdout or "") + (result.stderr or ""), scratch, item.id)
        return TestRun(passed, False, output)


def hidden_tests(item: Item, folder: Path) -> str:
    """Write the exercise's test files into ``folder`` (outside every workspace, readable by the
    sandbox's user) and return the team's test command that runs them from there."""
    folder.chmod(0o755)
    for name, text in item.data["tests"].items():
        path = folder / name
        path.write_text(text, encoding="utf-8")
        path.chmod(0o644)
    tests = [name for name in item.data["tests"] if name.endswith("_test.py")] or list(item.data["tests"])
    # the folder as pytest's rootdir: the failures are named "leap_test.py::LeapTest::test_…", as the harness names them
    return f"pytest -q --tb=short --rootdir={shlex.quote(str(folder))} " + " ".join(
        shlex.quote(str(folder / name)) for name in tests)


class ExercismSuite:
    name = "exercism"
    score_names = ("pass1", "pass2")

    def __init__(self, data: Path | None = None, *, test_seconds: float = TEST_SECONDS) -> None:
        self.root = Path(data).expanduser().resolve() if data is not None else DATA
        self.exercises = load_exercises(self.root)
        self.published = published_rows(self.root)
        self.test_seconds = test_seconds

    def items(self) -> list[Item]:
        return list(self.exercises)

    async def run(self, item: Item, row: Row, ctx: Context) -> ItemResult:
        file, stub = item.data["file"], item.files[item.data["file"]]
        root = await ctx.workspace({file: stub}, item.id)
        runs: list[JobRun] = []
        tries: list[Try] = []
        current, words = stub, first_prompt(item)
        with tempfile.TemporaryDirectory(prefix="troupe-exercism-tests-") as hidden:
            command = hidden_tests(item, Path(hidden))
            for _ in range(2):
                if row == "team":
                    (root / file).write_text(current, encoding="utf-8")
                    run = await ctx.job(SubmitJob(kind="change", workspace=str(root), prompt=words, files=[file],
                                                  options=JobOptions(test_command=command)))
                    written = changed_file(run, file)
                else:
                    run = await ctx.complete(root, bare_prompt(words, file, current), max_tokens=BARE_MAX_TOKENS)
                    written = parse_file_reply(run.answer)
                runs.append(run)
                current = written if written is not None else current
                outcome = await run_exercise_tests(item, current, timeout=self.test_seconds)
                tries.append({"job": run.job_id, "wrote_file": written is not None, "passed": outcome.passed,
                              "timed_out": outcome.timed_out, "output": outcome.output})
                if outcome.passed:
                    break
                words = retry_prompt(item, outcome.output)
        pass1, pass2 = tries[0]["passed"], tries[-1]["passed"]
        return ItemResult.of(self.name, item, row, runs, solved=pass2,
                             scores={"pass1": float(pass1), "pass2": float(pass2)},
                             detail={"tries": tries, "solution": current})

    def reference(self, model: str, results: list[ItemResult], rows: list[str]) -> tuple[str, JsonDict]:
        """pass@1 and pass@2 of each row in percent beside Aider's published row for ``model``: the
        text printed under the table, and the same as data for the results JSON."""
        lines = [["row", "pass@1", "pass@2", "items"]]
        per_row: dict[str, JsonDict] = {}
        data: JsonDict = {"rows": per_row, "published": None}
        for row in rows:
            mine = [r for r in results if r.row == row]
            if mine:
                one, two = (100 * sum(r.scores.get(s, 0.0) for r in mine) / len(mine) for s in ("pass1", "pass2"))
                per_row[row] = {"pass1": round(one, 1), "pass2": round(two, 1), "items": len(mine)}
                lines.append([row, f"{one:.1f} %", f"{two:.1f} %", str(len(mine))])
        found = published_for(model, self.published)
        if found is None:
            note = f"no published row for {model or 'this model'} (Aider's table: Qwen2.5-Coder 0.5B to 7B)"
            return render(f"pass rates; {note}", lines), data
        data["published"] = {"model": found.model, "pass1": found.pass1, "pass2": found.pass2, "items": 133}
        lines.append([f"Aider, published ({found.model}, whole)", f"{found.pass1:.1f} %", f"{found.pass2:.1f} %",
                      "133"])
        return render("pass rates beside Aider's published row (its 133 exercises; ours: the items above)", lines), data
