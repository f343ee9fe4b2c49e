"""The mutants suite on a tiny repository made here, with its own tests: Cosmic Ray makes the
mutants, the ones the tests do not kill are dropped, the draw is fixed by the seed; through the
daemon and the fake LLM, a finding on the mutated line is caught and one 5 lines away is not, a fix
that makes the tests pass is fixed, findings on the unmutated file are false positives — and the
bare rows are scored the same way."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from daemon.cli.main import main
from daemon.eval.mutants import MutantsSuite, covers
from daemon.eval.report import EvalReport
from daemon.eval.runner import run_suite
from daemon.eval.suite import Item, SuiteError
from tests.eval.conftest import last_user

OPS = '''"""Small numeric helpers."""


def clamp(x, low, high):
    if x < low:
        return low
    if x > high:
        return high
    return x


def double(x):
    return x * 2


def triple(x):
    return x * 3
'''
TESTS = '''from calc.ops import clamp


def test_clamp():
    assert clamp(5, 0, 10) == 5
    assert clamp(-1, 0, 10) == 0
    assert clamp(11, 0, 10) == 10
'''
CLAMP_LINES = range(4, 10)  # only clamp is tested: a mutant of double or triple survives


def make_repo(root: Path, tests: str = TESTS) -> Path:
    (root / "calc").mkdir(parents=True)
    (root / "calc" / "__init__.py").write_text("")
    (root / "calc" / "ops.py").write_text(OPS)
    if tests:
        (root / "tests").mkdir()
        (root / "tests" / "test_ops.py").write_text(tests)
    return root


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_repo(tmp_path_factory.mktemp("mutants") / "repo")


async def test_only_mutants_the_tests_kill_are_kept_and_the_seed_fixes_the_draw(repo: Path) -> None:
    suite = MutantsSuite(repo, n=3, seed=7)
    items = await suite.prepare()

    assert len(items) == 3
    stats = suite.stats
    assert stats.survived >= 1, stats  # double and triple have no tests
    assert stats.tested == stats.killed + stats.survived + stats.timed_out and stats.killed == stats.kept == 3
    original = OPS.splitlines()
    for item in items:
        file, line = item.data["file"], item.data["line"]
        assert file == "calc/ops.py" and line in CLAMP_LINES, item.id
        assert item.data["original"] == original[line - 1] and item.data["mutated"] != item.data["original"]
        mutated = item.data["text"].splitlines()
        assert mutated[line - 1] == item.data["mutated"]
        assert [t for n, t in enumerate(mutated, 1) if n != line] == [t for n, t in enumerate(original, 1) if n != line]
        assert "FAILED tests/test_ops.py::test_clamp" in item.data["failures"]

    again = await MutantsSuite(repo, n=3, seed=7).prepare()
    assert [i.id for i in again] == [i.id for i in items]
    assert [i.id for i in await MutantsSuite(repo, n=3, seed=8).prepare()] != [i.id for i in items]


def test_a_finding_counts_within_one_line_of_the_mutant_and_at_most_three_lines_long() -> None:
    assert covers(7, 7, 7) and covers(7, 6, 6) and covers(7, 8, 8) and covers(7, 6, 8)
    assert not covers(7, 2, 2) and not covers(7, 12, 12) and not covers(7, 5, 9)


def test_nothing_inside_a_type_annotation_is_mutated() -> None:
    from daemon.eval.mutation import candidates

    typed = ("from __future__ import annotations\n\n\ndef pick(x: int | None = 1, *rest: list[int]) -> int | None:\n"
             "    y: int | None = x\n    return y | 2\n")
    found = candidates("calc/typed.py", typed)
    assert found and {c.line for c in found} <= {4, 6}  # the default 1, and `y | 2`: no annotation
    applied = [m for c in found if (m := c.apply(typed)) is not None]
    assert all(m.mutated.count("int | None") == m.original.count("int | None") for m in applied)
    assert any("y | 2" not in m.mutated for m in applied)


def test_a_missing_repository_or_one_without_tests_is_a_clear_error(tmp_path: Path, capsys) -> None:
    with pytest.raises(SuiteError, match="no repository at"):
        MutantsSuite(tmp_path / "nowhere")
    bare = make_repo(tmp_path / "untested", tests="")
    with pytest.raises(SuiteError, match="has no tests"):
        MutantsSuite(bare)
    with pytest.raises(SuiteError, match="needs a repository"):
        MutantsSuite(None)
    with pytest.raises(SuiteError, match="no Python files matching"):
        MutantsSuite(make_repo(tmp_path / "other"), files="nothing/*.py")

    assert main(["eval", "mutants", "--repo", str(tmp_path / "nowhere")]) == 2
    assert "no repository at" in capsys.readouterr().err


async def test_a_repository_whose_tests_fail_unmutated_is_refused(tmp_path: Path) -> None:
    broken = make_repo(tmp_path / "broken", tests=TESTS.replace("== 5", "== 6"))
    with pytest.raises(SuiteError, match="do not pass without any mutant"):
        await MutantsSuite(broken, n=1).prepare()


async def test_tests_names_the_command_that_judges_the_mutants_and_the_team_runs(tmp_path: Path) -> None:
    """--tests: a repository whose other tests fail (or need what is not here) is judged by the tests named."""
    repo = make_repo(tmp_path / "repo")
    (repo / "tests" / "test_elsewhere.py").write_text("def test_needs_a_server():\n    assert False\n")
    with pytest.raises(SuiteError, match="do not pass without any mutant"):
        await MutantsSuite(repo, n=1).prepare()

    suite = MutantsSuite(repo, n=2, seed=7, tests="pytest -q tests/test_ops.py")
    items = await suite.prepare()

    assert len(items) == 2 and all(item.data["line"] in CLAMP_LINES for item in items)
    assert suite.stats.baseline_runner == "python -m pytest -q tests/test_ops.py"
    assert "test_elsewhere" not in "".join(item.data["failures"] for item in items)
    assert suite._options().test_command == "pytest -q tests/test_ops.py"  # the team's test jobs run the same


def fake_model(caught: Item, missed: Item):
    """The fake reviewer points at the first mutant's line and at a line 5 or more lines away from the
    second's, and at line 13 of the clean file (a false positive); the fixer (and the team's patch phase)
    puts the first one's line back and returns the second one's file unchanged."""
    def numbered_line(prompt: str, line: int) -> str:
        match = re.search(rf"^\s*{line}\| (.*)$", prompt, re.MULTILINE)
        return match.group(1) if match else ""

    def away(prompt: str, line: int) -> int:
        return next(n for d in (5, 6, 7, -5, -6, -7) if numbered_line(prompt, n := line + d).strip())

    def reply(body: dict) -> str:
        prompt = last_user(body)
        mutant = caught if caught.data["mutated"] in prompt else missed if missed.data["mutated"] in prompt else None
        if "Find the bugs" in prompt or "Please review" in prompt:  # the team's reviewer, the bare rows
            line = 13 if mutant is None else mutant.data["line"]
            line = away(prompt, line) if mutant is missed else line
            return f"LINE: {line}\nBUG: this is wrong\nFIX: {numbered_line(prompt, line).strip()}  # fixed"
        if "versions of the new line" in prompt:  # the team's patch phase: its line put back, or no code
            return f"```python\n{caught.data['original']}\n```" if mutant is caught else "I do not know."
        if "tests pass" in prompt:  # the team's fix phase and the bare fix
            assert mutant is not None, prompt
            text = OPS if mutant is caught else mutant.data["text"]
            return f"calc/ops.py\n```python\n{text}```\n"
        return "The comparison in clamp is wrong."
    return reply


async def test_caught_fixed_and_false_positives_are_scored_alike_on_both_rows(repo: Path, llm, ctx) -> None:
    suite = MutantsSuite(repo, n=2, seed=7)
    first, second = await suite.prepare()
    llm.add_rule(fake_model(first, second), user="clamp")

    results = await run_suite(suite, ctx, rows=("team", "bare"))

    by = {(r.item, r.row): r for r in results}
    for row in ("team", "bare"):
        hit, miss = by[first.id, row], by[second.id, row]
        assert (hit.solved, hit.scores) == (True, {"caught": 1, "fixed": 1, "false_positives": 1, "clean_files": 1,
                                                   "findings": 1}), (row, hit)
        assert (miss.solved, miss.scores) == (False, {"caught": 0, "fixed": 0, "false_positives": 0,
                                                      "clean_files": 0, "findings": 1}), (row, miss)
        assert hit.detail["fix"] == "tests pass" and hit.detail["clean_findings"][0]["start"] == 13
        assert hit.prompt_tokens > 0 and hit.job_seconds > 0
    assert by[first.id, "bare"].calls == 3  # review, fix, and the clean file's review (once per file)
    assert by[second.id, "bare"].calls == 2

    assert not any("mutant" in last_user(r.body).lower() for r in llm.requests)

    report = EvalReport("mutants", "m", "abc", [first.id, second.id], ["team", "bare"], suite.score_names, results)
    team, bare = report.summaries()
    assert (team.solved, team.scores) == (bare.solved, bare.scores) == (
        1, {"caught": 1, "fixed": 1, "false_positives": 1, "clean_files": 1, "findings": 2})
    text, data = suite.reference("m", results, ["team", "bare"])
    assert "team: 1.00 false findings per clean file (1 in 1 files, 0 of them major)" in text  # a suggestion
    assert "bare: 1.00 false findings per clean file (1 in 1 files);" in text
    assert data["rows"]["bare"]["false_positives_per_clean_file"] == 1.0 and data["mutants"]["kept"] == 2


async def test_a_resumed_run_does_not_review_a_clean_file_again(repo: Path, llm, ctx) -> None:
    """troupe eval --resume: the first item (with its clean file's review) finished before the cut; the
    second, run now, is on the same file and row, so its clean file is not reviewed (nor counted) twice."""
    suite = MutantsSuite(repo, n=2, seed=7)
    first, second = await suite.prepare()
    llm.add_rule(fake_model(first, second), user="clamp")
    [before] = await run_suite(suite, ctx, rows=("bare",), limit=1)
    assert before.scores["clean_files"] == 1

    again = MutantsSuite(repo, n=2, seed=7)
    await again.prepare()
    again.resumed([before])
    [after] = await run_suite(again, ctx, rows=("bare",), skip={(first.id, "bare")})
    assert after.item == second.id and after.scores["clean_files"] == 0 and after.calls == 2


async def test_the_team_sees_a_plain_repository_with_the_mutant_committed(repo: Path, ctx) -> None:
    suite = MutantsSuite(repo, n=1, seed=7)
    (item,) = await suite.prepare()
    root = await suite.workspace(ctx, {**suite.snapshot, item.data["file"]: item.data["text"]})

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout

    assert len(git("log", "--oneline").splitlines()) == 1 and git("status", "--porcelain") == ""
    assert git("show", "HEAD:calc/ops.py") == item.data["text"]
    assert root.name.partition("-")[0] == "repo", root  # the folder's name says nothing of the mutant


def test_a_test_that_outruns_its_timeout_unmutated_is_left_out_of_every_run() -> None:
    from daemon.eval.mutants import _deselectable
    from daemon.workspace.reports import TestFailure, TestReport

    def report(*failures: TestFailure) -> TestReport:
        return TestReport(ok=False, command=["python", "-m", "pytest", "-q"], passed=9, failed=len(failures),
                          errors=0, skipped=0, failures=list(failures))

    slow = TestFailure("tests/test_x.py::Primes::test_primes", "x.py", 9, "Failed: Timeout (>30.0s) from pytest", "")
    wrong = TestFailure("tests/test_x.py::test_sum", "x.py", 3, "assert 1 == 2", "")
    assert _deselectable(report(slow)) == ["tests/test_x.py::Primes::test_primes"]
    assert _deselectable(report(slow, wrong)) == [], "a real failure is not the clock's fault"


async def test_on_save_the_mutant_is_a_save_reviewed_with_its_diff_on_both_rows(repo: Path, llm, ctx) -> None:
    suite = MutantsSuite(repo, n=1, seed=7, on_save=True)
    (item,) = await suite.prepare()
    root, diff = await suite.saved(ctx, item.data["file"], item.data["text"])
    status = subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True).stdout
    assert status.split() == ["M", "calc/ops.py"] and diff is not None  # the last commit is clean: a save over it
    assert f"-{item.data['original']}\n+{item.data['mutated']}\n" in diff
    # the clean review's save: the mutant committed, put right by the save (a correct change of the same line)
    _, clean = await suite.saved(ctx, item.data["file"], suite.snapshot[item.data["file"]],
                                 base={**suite.snapshot, item.data["file"]: item.data["text"]})
    assert clean is not None and f"-{item.data['mutated']}\n+{item.data['original']}\n" in clean
    never = Item(id="none", data={"mutated": "\x00 not in any prompt", "line": 1, "text": ""})
    llm.add_rule(fake_model(item, never), user="clamp")

    results = await run_suite(suite, ctx, rows=("team", "bare"))

    for result in results:
        assert result.scores["caught"] == 1 and result.scores["fixed"] == 1, result
        assert result.scores["clean_files"] == 1, result
    by_row = {r.row: r.detail["clean_findings"] for r in results}
    assert by_row["team"] == [] and by_row["bare"], by_row  # the fake's line 13: not a line the clean save changed
    reviews = [last_user(r.body) for r in llm.requests if "Find the bugs in this code" in last_user(r.body)]
    assert len(reviews) == 2 and all("(changed hunks, with line numbers)" in p for p in reviews)
    assert sum(item.data["mutated"] in p for p in reviews) == 1  # the save, and the same lines unchanged
    bare = [last_user(r.body) for r in llm.requests if "Find the bugs in this change" in last_user(r.body)]
    assert len(bare) == 2 and f"+{item.data['mutated']}" in bare[0] and f"+{item.data['original']}" in bare[1]
    [fix] = [last_user(r.body) for r in llm.requests if last_user(r.body).startswith("The tests of my repository")]
    assert f"since then I changed calc/ops.py at line(s) {item.data['line']}." in fix  # what troupe test finds too


def test_a_bare_fix_of_a_large_file_may_send_the_definition_back_whole() -> None:
    """The bare row's fix of a file shown in part is read as the team's is: SEARCH/REPLACE blocks, or the
    definition sent back whole and put in its place; the whole of a part is never written over the file."""
    from daemon.eval.mutants_bare import edited

    big = "".join(f"def filler_{i}(x):\n    return x + {i}\n\n\n" for i in range(500)) + OPS
    mutated = big.replace("if x > high:", "if x >= high:")
    files = {"calc/ops.py": mutated, "tests/test_ops.py": TESTS}
    fixed = "```python\ndef clamp(x, low, high):\n    if x < low:\n        return low\n    if x > high:\n" \
            "        return high\n    return x\n```"
    after, note = edited(files, "calc/ops.py", fixed)
    assert after is not None and after["calc/ops.py"] == big and note == ""
    assert edited(files, "calc/ops.py", "```python\nprint(clamp(1, 2, 3))\n```") == (
        None, "no edit of the file in the reply")
