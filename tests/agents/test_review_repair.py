"""The shipped review's evidence: when a file's docstring examples fail, one repair is asked for and
tried on a copy; only a repair that makes every example pass becomes findings — one per changed hunk,
on the changed line, with the repaired lines as the fix and the failing example in the message. A
repair that still fails adds nothing (the reviewer speaks as before), a file whose examples pass
costs no repair call, and the user's tree is never touched."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from daemon.agents.job import JobSpec
from daemon.agents.loader import load_chains
from daemon.agents.repair import hunks
from daemon.agents.workbench import Workbench
from daemon.eval.scoring import apply_line_fix
from daemon.events import EventKind
from tests.agents.conftest import snapshot_tree, write_tree
from tests.agents.test_change_examples import CALC, FAILING, FIXED, whole

REPAIR = "This code does not do what its docstrings say."
REVIEW = "Find the bugs in this code."
NONE = "NONE"


def review(repo):
    return JobSpec(chain="review", task="review calc.py", workspace=repo, files=["calc.py"])


async def test_a_repair_that_passes_the_examples_is_a_finding_on_the_changed_line(fake_llm, make_runner,
                                                                                   recorder, tmp_path):
    repo = write_tree(tmp_path / "repo", {"calc.py": CALC})
    before = snapshot_tree(repo)
    fake_llm.add_rule(whole(FIXED), user=REPAIR)
    fake_llm.add_rule(NONE, user=REVIEW)
    outcome = await make_runner().run(review(repo))
    assert outcome.status == "succeeded", outcome.error
    prompt = fake_llm.prompts_containing(REPAIR)[0].last_user
    assert f"- {FAILING}" in prompt and "Reply with the whole corrected calc.py" in prompt
    found = [f for f in outcome.findings if f.rule is None]
    assert [(f.file, f.start_line, f.end_line, f.replacement, f.source) for f in found] == [
        ("calc.py", 18, 18, "    return a + b", "repair")]
    assert FAILING in found[0].message and "all 3 pass" in found[0].message
    assert apply_line_fix(CALC, 18, 18, found[0].replacement) == FIXED  # applying the finding applies the repair
    assert not fake_llm.prompts_containing(REVIEW)  # the verified repair is the review: no opinion call after it
    assert recorder.phases_finished() == ["repair", "repair_tests", "review", "reproduce"]
    assert outcome.change is None and snapshot_tree(repo) == before


async def test_a_repair_that_still_fails_adds_nothing_and_the_reviewer_speaks(fake_llm, make_runner, tmp_path):
    repo = write_tree(tmp_path / "repo", {"calc.py": CALC})
    before = snapshot_tree(repo)
    fake_llm.add_rule(whole(CALC.replace("return a - b", "return b - a")), user=REPAIR)  # changed, still wrong
    fake_llm.add_rule(NONE, user=REVIEW)
    outcome = await make_runner().run(review(repo))
    assert outcome.status == "succeeded", outcome.error
    assert [f for f in outcome.findings if f.rule is None] == []
    assert len(fake_llm.prompts_containing(REVIEW)) == 1
    assert snapshot_tree(repo) == before


async def test_a_repair_that_drops_the_failing_example_adds_nothing(fake_llm, make_runner, tmp_path):
    repo = write_tree(tmp_path / "repo", {"calc.py": CALC})
    fake_llm.add_rule(whole(CALC.replace("    >>> add(1, 2)\n    3\n", "")), user=REPAIR)  # the examples "pass"
    fake_llm.add_rule(NONE, user=REVIEW)
    outcome = await make_runner().run(review(repo))
    assert outcome.status == "succeeded", outcome.error
    assert [f for f in outcome.findings if f.rule is None] == []


async def test_a_file_whose_examples_pass_gets_no_repair_call(fake_llm, make_runner, recorder, tmp_path):
    repo = write_tree(tmp_path / "repo", {"calc.py": FIXED})
    fake_llm.add_rule(NONE, user=REVIEW)
    outcome = await make_runner().run(review(repo))
    assert outcome.status == "succeeded", outcome.error
    assert not fake_llm.prompts_containing(REPAIR) and len(fake_llm.prompts_containing(REVIEW)) == 1
    assert recorder.phases_finished() == ["repair", "repair_tests", "review", "reproduce"]  # skipped: no call
    runs = [e.data for e in recorder.of(EventKind.TOOL_RUN) if e.data.tool == "doctests"]
    assert len(runs) == 1 and (runs[0].passed, runs[0].failed) == (3, 0)


def test_hunks_are_the_changed_lines_an_insertion_keeps_its_anchor_and_a_rewrite_is_left_out():
    before = "a\nb\nc\nd\n"
    assert hunks(before, "a\nB\nc\nd\n") == [(2, 2, "B")]
    assert hunks(before, "a\nb\nnew\nc\nd\n") == [(2, 2, "b\nnew")]
    assert hunks(before, "top\na\nb\nc\nd\n") == [(1, 1, "top\na")]
    assert hunks(before, "a\nc\nd\n") == [(2, 2, "")]
    assert hunks(before, "w\nx\ny\nz\n") == []  # four lines at once: a rewrite, not a line finding
    assert hunks(before, "a\n\nb\n  c\nd\n") == []  # a blank line, an indent: no bug there
    for after in ("a\nB\nc\nd\n", "a\nb\nnew\nc\nd\n", "top\na\nb\nc\nd\n", "a\nc\nd\n"):
        (start, end, fix), = hunks(before, after)
        assert apply_line_fix(before, start, end, fix) == after


def test_the_repairs_check_on_a_copy_is_bounded_by_the_time_the_chain_has_left():
    chain = load_chains().get("review")
    bench = Workbench(JobSpec(chain="review", task="review"), chain, None, budget_chars=1000)
    assert bench.seconds_left(30.0) == 30.0  # no time limit: the examples' own bound
    bench.deadline = time.monotonic() + 5
    assert 3.0 < bench.seconds_left(30.0) <= 5.0
    bench.deadline = time.monotonic() - 10
    assert bench.seconds_left(30.0) == 2.0  # past it: a short last chance, never a negative timeout


async def test_the_reviewers_opinions_are_suggestions_and_at_most_two_per_file(fake_llm, make_runner, tmp_path):
    repo = write_tree(tmp_path / "repo", {"calc.py": FIXED})
    fake_llm.add_rule("LINE: 18\nBUG: adds instead of subtracting\nFIX:     return a - b\n\n"
                      "LINE: 7\nBUG: doubles instead of squaring\nFIX:     return x * x\n\n"
                      "LINE: 18\nBUG: a and b could be strings\nFIX:     return int(a) + int(b)\n", user=REVIEW)
    outcome = await make_runner().run(review(repo))
    assert outcome.status == "succeeded", outcome.error
    opinions = [f for f in outcome.findings if f.source == "reviewer"]
    assert [f.severity for f in opinions] == ["info", "info"]  # no executed evidence: never "major"
    assert [f.start_line for f in opinions] == [18, 7]


async def test_failing_related_tests_drive_a_repair_whose_findings_are_major(fake_llm, make_runner, recorder, tmp_path):
    repo = write_tree(tmp_path / "repo", {
        "calc.py": "def add(a, b):\n    return a - b\n\n\ndef double(a):\n    return a * 2\n",
        "tests/test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
        "tests/test_other.py": "def test_unrelated():\n    assert True\n",
    })
    before = snapshot_tree(repo)
    fake_llm.add_rule("```python\ndef add(a, b):\n    return a + b\n\n\ndef double(a):\n    return a * 2\n```",
                      user="The repository's tests of this code fail.")
    outcome = await make_runner().run(review(repo))
    assert outcome.status == "succeeded", outcome.error
    prompt = fake_llm.prompts_containing("The repository's tests of this code fail.")[0].last_user
    assert "FAILED tests/test_calc.py::test_add" in prompt and "assert -1 == 5" in prompt
    [found] = [f for f in outcome.findings if f.source == "repair"]
    assert (found.start_line, found.severity, found.replacement) == (2, "major", "    return a + b")
    assert "tests/test_calc.py::test_add" in found.message and "all 1 pass" in found.message
    runs = [e.data for e in recorder.of(EventKind.TOOL_RUN) if e.data.tool == "related_tests"]
    assert [(r.passed, r.failed) for r in runs] == [(0, 1)]  # only the related file ran
    assert not fake_llm.prompts_containing(REVIEW)  # the verified repair is the review
    assert snapshot_tree(repo) == before


SUSPECTS = "Check these bugs you found with tests:"
OPS = "def add(a, b):\n    return a - b\n\n\ndef double(a):\n    return a * 2\n"


async def test_a_suggestion_a_written_test_reproduces_becomes_major_with_the_test_as_evidence(
        fake_llm, make_runner, recorder, tmp_path):
    repo = write_tree(tmp_path / "repo", {"ops.py": OPS})
    before = snapshot_tree(repo)
    fake_llm.add_rule("LINE: 2\nBUG: subtracts instead of adding\nFIX:     return a + b\n\n"
                      "LINE: 6\nBUG: should triple\nFIX:     return a * 3\n", user=REVIEW)
    fake_llm.add_rule("```python\nfrom ops import add, double\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
                      "def test_double():\n    assert double(3) == 10\n```", user=SUSPECTS)  # wrong with either
    outcome = await make_runner().run(JobSpec(chain="review", task="review ops.py", workspace=repo, files=["ops.py"]))
    assert outcome.status == "succeeded", outcome.error
    prompt = fake_llm.prompts_containing(SUSPECTS)[0].last_user
    assert "\n1. ops.py line 2\n2. ops.py line 6\n\n" in prompt  # what is wrong there is in the reply it continues
    by_line = {f.start_line: f for f in outcome.findings if f.source in ("reviewer", "reproduced")}
    assert (by_line[2].severity, by_line[2].source) == ("major", "reproduced")
    assert "Reproduced: test_add fails on this code and passes with the fix" in by_line[2].message
    assert "def test_add():\n    assert add(2, 3) == 5" in by_line[2].message
    # the other test fails too, but with the other fix it still fails: no evidence, still a suggestion
    assert by_line[6].severity == "info" and "Reproduced" not in by_line[6].message
    assert snapshot_tree(repo) == before


async def test_a_reply_cut_at_its_cap_while_looping_on_asserts_keeps_its_whole_lines_as_the_test(
        fake_llm, make_runner, tmp_path):
    repo = write_tree(tmp_path / "repo", {"ops.py": OPS})
    fake_llm.add_rule("LINE: 2\nBUG: subtracts instead of adding\nFIX:     return a + b\n", user=REVIEW)
    looping = "".join(f"    assert add({n}, 1) == {n + 1}\n" for n in range(400))  # far past the reply's cap
    fake_llm.add_rule(f"```python\nfrom ops import add\n\n\ndef test_add():\n{looping}```", user=SUSPECTS)
    outcome = await make_runner().run(JobSpec(chain="review", task="review ops.py", workspace=repo, files=["ops.py"]))
    (finding,) = [f for f in outcome.findings if f.source in ("reviewer", "reproduced")]
    assert (finding.severity, finding.source) == ("major", "reproduced")
    assert "def test_add():\n    assert add(0, 1) == 1\n" in finding.message


async def test_a_test_that_passes_on_the_code_reproduces_nothing(fake_llm, make_runner, tmp_path):
    repo = write_tree(tmp_path / "repo", {"ops.py": OPS})
    fake_llm.add_rule("LINE: 6\nBUG: should triple\nFIX:     return a * 3\n", user=REVIEW)
    fake_llm.add_rule("```python\nfrom ops import double\n\n\ndef test_double():\n    assert double(2) == 4\n```",
                      user=SUSPECTS)
    outcome = await make_runner().run(JobSpec(chain="review", task="review ops.py", workspace=repo, files=["ops.py"]))
    assert [f.severity for f in outcome.findings if f.source == "reviewer"] == ["info"]


async def test_a_fix_that_breaks_the_repositorys_own_tests_is_not_reproduced(fake_llm, make_runner, tmp_path):
    repo = write_tree(tmp_path / "repo", {"ops.py": OPS.replace("a - b", "a + b"),
                                          "tests/test_ops.py": "from ops import double\n\n\ndef test_double():\n"
                                                               "    assert double(2) == 4\n"})
    fake_llm.add_rule("LINE: 6\nBUG: should triple\nFIX:     return a * 3\n", user=REVIEW)
    fake_llm.add_rule("```python\nfrom ops import double\n\n\ndef test_triple():\n    assert double(2) == 6\n```",
                      user=SUSPECTS)  # fails on the code, passes with the fix: but the fix breaks tests/test_ops.py
    outcome = await make_runner().run(JobSpec(chain="review", task="review ops.py", workspace=repo, files=["ops.py"]))
    assert [f.severity for f in outcome.findings if f.source in ("reviewer", "reproduced")] == ["info"]


async def test_a_related_test_that_fails_inside_the_reviewed_file_is_a_major_finding_on_that_line(
        fake_llm, make_runner, tmp_path):
    repo = write_tree(tmp_path / "repo", {
        "ops.py": "def ratio(a, b):\n    total = a + b\n    return a / (total - a - b)\n",
        "tests/test_ops.py": "from ops import ratio\n\n\ndef test_ratio():\n    assert ratio(1, 1) == 0.5\n",
    })
    fake_llm.add_rule("I am not sure.", user="The repository's tests of this code fail.")  # no usable repair
    fake_llm.add_rule("NONE", user=REVIEW)
    outcome = await make_runner().run(JobSpec(chain="review", task="review ops.py", workspace=repo, files=["ops.py"]))
    assert outcome.status == "succeeded", outcome.error
    [failing] = [f for f in outcome.findings if f.source == "tests"]
    assert (failing.file, failing.start_line, failing.severity, failing.rule) == (
        "ops.py", 3, "major", "troupe/failing-test")
    assert failing.message.startswith("The test tests/test_ops.py::test_ratio fails here: ZeroDivisionError")


CONNECT = "def add(a, b):\n    return a + b\n\n\ndef rows():\n    raise ConnectionRefusedError('no database here')\n"
CONNECT_TESTS = ("from calc import add, rows\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
                 "def test_rows():\n    assert rows() == []\n")


def saved(root, committed: dict[str, str], edits: dict[str, str]) -> JobSpec:
    """A git repository holding ``committed`` as its last commit, with ``edits`` saved over it: the review
    of that save, with the diff the watcher sends."""
    from daemon.watch.trigger import changed_hunks

    repo = write_tree(root, committed)
    who = ["-c", "user.name=t", "-c", "user.email=t@t.invalid"]
    for argv in (["init", "-q"], ["add", "."], [*who, "commit", "-qm", "c"]):
        subprocess.run(["git", *argv], cwd=repo, check=True, capture_output=True)
    write_tree(repo, edits)
    return JobSpec(chain="review", task="review calc.py", workspace=repo, files=["calc.py"],
                   diff=changed_hunks(repo, list(edits)))


async def test_a_related_test_that_failed_before_the_save_too_is_no_evidence_about_it(
        fake_llm, make_runner, recorder, tmp_path):
    """test_rows needs a database this machine lacks: red before the save and after it. The save breaks
    add: test_add alone drives the repair, and test_rows makes no finding on the line it fails in."""
    spec = saved(tmp_path / "repo", {"calc.py": CONNECT, "tests/test_calc.py": CONNECT_TESTS},
                 {"calc.py": CONNECT.replace("a + b", "a - b")})
    fake_llm.add_rule(f"```python\n{CONNECT}```", user="The repository's tests of this code fail.")
    outcome = await make_runner().run(spec)
    assert outcome.status == "succeeded", outcome.error
    prompt = fake_llm.prompts_containing("The repository's tests of this code fail.")[0].last_user
    assert "test_calc.py::test_add" in prompt and "test_rows" not in prompt
    [found] = [f for f in outcome.findings if f.severity == "major"]
    assert (found.source, found.start_line, found.replacement) == ("repair", 2, "    return a + b")
    runs = [e.data for e in recorder.of(EventKind.TOOL_RUN) if e.data.tool == "related_tests"]
    assert [(r.passed, r.failed) for r in runs] == [(0, 1)]  # the run the review used: test_rows left out


async def test_a_save_whose_only_failing_tests_were_red_before_gets_no_repair_and_nothing_major(
        fake_llm, make_runner, tmp_path):
    spec = saved(tmp_path / "repo", {"calc.py": CONNECT, "tests/test_calc.py": CONNECT_TESTS},
                 {"calc.py": CONNECT.replace("return a + b", "return b + a")})
    fake_llm.add_rule(NONE, user=REVIEW)
    outcome = await make_runner().run(spec)
    assert outcome.status == "succeeded", outcome.error
    assert not fake_llm.prompts_containing("The repository's tests of this code fail.")
    assert not [f for f in outcome.findings if f.severity == "major"]


BIG_ADD = "def add(a, b):\n    if a < b:\n        raise ValueError('too small')\n    return a + b\n"


def big_calc(tmp_path, chain: str | None = None):
    """calc.py too large to show whole (2,400 fillers, then add, whose bug a related test reaches)."""
    fillers = "".join(f"def filler_{i}(x):\n    return x + {i} * 7919\n\n\n" for i in range(2400))
    files = {"calc.py": fillers + BIG_ADD,
             "tests/test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"}
    if chain is not None:
        files[".troupe/chains/review.toml"] = chain
    return write_tree(tmp_path / "repo", files), fillers + BIG_ADD


async def test_a_file_too_large_to_show_whole_gets_the_reviewer_and_no_repair(fake_llm, make_runner, recorder,
                                                                              tmp_path):
    repo, big = big_calc(tmp_path)
    fake_llm.add_rule(f"LINE: {len(big.splitlines()) - 2}\nBUG: raises for a < b\nFIX:     if a < 0:\n", user=REVIEW)
    outcome = await make_runner().run(review(repo))
    assert outcome.status == "succeeded", outcome.error
    assert not fake_llm.prompts_containing("The repository's tests of this code fail.")
    skipped = {e.data.phase: e.data.skipped for e in recorder.of(EventKind.PHASE_FINISHED) if e.data.skipped}
    assert skipped["repair_tests"].startswith("calc.py too large to show whole: a repair would send back code")
    review_prompt = fake_llm.prompts_containing(REVIEW)[0].last_user
    assert "too large to show whole" in review_prompt and "filler_2399" not in review_prompt
    assert [(f.source, f.start_line) for f in outcome.findings if f.source == "reviewer"] == [
        ("reviewer", len(big.splitlines()) - 2)]


async def test_a_repair_of_a_file_shown_in_part_goes_back_in_its_place(fake_llm, make_runner, tmp_path):
    """A chain whose repair does run on a file too large to show whole (the shipped one skips it): the
    repair comes back as the function shown, not as SEARCH/REPLACE blocks; it is written back in its
    place, and the changed line is the finding."""
    from daemon.agents.chains import __file__ as chains

    shipped = (Path(chains).parent / "review.toml").read_text(encoding="utf-8")
    repo, big = big_calc(tmp_path, shipped.replace("skip_if_excerpted = true", "skip_if_excerpted = false"))
    fake_llm.add_rule(f"```python\n{BIG_ADD.replace('a < b', 'a < 0')}```", user="The repository's tests of this code")
    outcome = await make_runner().run(review(repo))
    assert outcome.status == "succeeded", outcome.error
    prompt = fake_llm.prompts_containing("The repository's tests of this code fail.")[0].last_user
    assert "too large to show whole" in prompt and "filler_2399" not in prompt
    [found] = [f for f in outcome.findings if f.source == "repair"]
    line = len(big.splitlines()) - 2
    assert (found.start_line, found.severity, found.replacement) == (line, "major", "    if a < 0:")


def test_a_diffs_changed_lines_are_its_added_lines_and_where_a_removal_was():
    from daemon.review.gitdiff import changed_lines

    diff = ("diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1,5 +1,6 @@\n a\n b\n-c\n+C\n+D\n d\n e\n"
            "@@ -10,6 +11,5 @@\n j\n k\n l\n-m\n n\n o\n"
            "diff --git a/new.py b/new.py\nnew file mode 100644\n--- /dev/null\n+++ b/new.py\n"
            "@@ -0,0 +1,2 @@\n+x\n+y\n")
    assert changed_lines(diff) == {"x.py": [(3, 4), (13, 13)], "new.py": [(1, 2)]}
    assert changed_lines("not a diff at all") == {}


ADD = "def add(a, b):\n    return a + b\n\n\ndef double(a):\n    return a * 2\n"
ADD_TESTS = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
BROKEN_SINCE = "passed before this change and fail since"


async def test_a_save_that_breaks_a_related_test_makes_the_reviewers_finding_on_its_line_major(
        fake_llm, make_runner, tmp_path):
    """test_add passed on the last commit and fails since the save: the reviewer is shown so, its finding on the
    changed line is "major" with that as its evidence, and its finding on a line the save left alone is dropped."""
    spec = saved(tmp_path / "repo", {"calc.py": ADD, "tests/test_calc.py": ADD_TESTS},
                 {"calc.py": ADD.replace("a + b", "a - b")})
    fake_llm.add_rule("I am not sure.", user="The repository's tests of this code fail.")  # no usable repair
    fake_llm.add_rule("LINE: 2\nBUG: subtracts instead of adding\nFIX:     return a + b\n\n"
                      "LINE: 6\nBUG: doubles by multiplying\nFIX:     return a + a\n", user=REVIEW)
    outcome = await make_runner().run(spec)
    assert outcome.status == "succeeded", outcome.error
    prompt = fake_llm.prompts_containing(REVIEW)[0].last_user
    assert BROKEN_SINCE in prompt and "test_calc.py::test_add" in prompt
    assert "(this change adds or changes line 2 of calc.py)" in prompt  # where, never what the line was
    assert "NONE is no answer here" in prompt and "write only NONE" not in prompt  # a run refuted "no bug"
    assert "a + b" not in prompt
    [found] = [f for f in outcome.findings if f.rule is None]
    assert (found.start_line, found.severity, found.source) == (2, "major", "tests")
    assert found.message.startswith("subtracts instead of adding Since this change, tests/test_calc.py::test_add")
    assert not [f for f in outcome.findings if f.rule == "troupe/regression"]  # the reviewer's finding covers it


async def test_a_save_that_breaks_a_related_test_is_a_finding_when_the_reviewer_says_nothing(
        fake_llm, make_runner, tmp_path):
    spec = saved(tmp_path / "repo", {"calc.py": ADD, "tests/test_calc.py": ADD_TESTS},
                 {"calc.py": ADD.replace("a + b", "a - b")})
    fake_llm.add_rule("I am not sure.", user="The repository's tests of this code fail.")
    fake_llm.add_rule(NONE, user=REVIEW)
    outcome = await make_runner().run(spec)
    assert outcome.status == "succeeded", outcome.error
    [found] = outcome.findings
    assert (found.start_line, found.end_line, found.severity, found.rule) == (2, 2, "major", "troupe/regression")
    assert "tests/test_calc.py::test_add" in found.message and "pass(es) on the last commit" in found.message


async def test_a_save_whose_related_tests_pass_shows_no_suggestion_that_no_test_reproduces(
        fake_llm, make_runner, recorder, tmp_path):
    spec = saved(tmp_path / "repo", {"calc.py": ADD, "tests/test_calc.py": ADD_TESTS},
                 {"calc.py": ADD.replace("a * 2", "a + a")})
    fake_llm.add_rule("LINE: 2\nBUG: a and b could be strings\nFIX:     return int(a) + int(b)\n\n"
                      "LINE: 6\nBUG: overflows for large a\nFIX:     return a * 2\n", user=REVIEW)
    fake_llm.add_rule("```python\nfrom calc import double\n\n\ndef test_big():\n"
                      "    assert double(10**20) == 2 * 10**20\n```", user=SUSPECTS)
    outcome = await make_runner().run(spec)
    assert outcome.status == "succeeded", outcome.error
    prompt = fake_llm.prompts_containing(REVIEW)[0].last_user
    assert BROKEN_SINCE not in prompt and "If there is no bug, write only NONE." in prompt
    assert fake_llm.prompts_containing(SUSPECTS)  # the suggestion on the changed line was still put to a test
    assert outcome.findings == []  # the related test passes, and the reviewer's own test passes on the code
    withheld = [e.data for e in recorder.of(EventKind.LOG) if e.data.text.startswith("suggestion withheld")]
    assert [w.finding["start_line"] for w in withheld] == [6]  # line 2 was not changed: dropped, not withheld
    assert withheld[0].text == ("suggestion withheld: the 1 related test(s) pass with this change and no test Troupe "
                                "wrote reproduces it (in the job's transcript only)")


async def test_a_withheld_suggestion_that_a_reproducing_test_backs_is_shown_major(fake_llm, make_runner, tmp_path):
    spec = saved(tmp_path / "repo", {"calc.py": ADD, "tests/test_calc.py": ADD_TESTS},
                 {"calc.py": ADD.replace("a * 2", "a * 3")})  # no related test calls double
    fake_llm.add_rule("LINE: 6\nBUG: triples instead of doubling\nFIX:     return a * 2\n", user=REVIEW)
    fake_llm.add_rule("```python\nfrom calc import double\n\n\ndef test_double():\n    assert double(2) == 4\n```",
                      user=SUSPECTS)
    outcome = await make_runner().run(spec)
    assert outcome.status == "succeeded", outcome.error
    [found] = outcome.findings
    assert (found.start_line, found.severity, found.source) == (6, "major", "reproduced")
    assert "test_double fails on this code and passes with the fix" in found.message


async def test_a_finding_on_a_line_the_save_broke_stands_there_whatever_its_words_name(fake_llm, make_runner, tmp_path):
    """Tests broke since the save: the reviewer's bare line number on the changed line is the run's place, even when
    its message names code on another line (which would otherwise move it there)."""
    spec = saved(tmp_path / "repo", {"calc.py": ADD, "tests/test_calc.py": ADD_TESTS},
                 {"calc.py": ADD.replace("a + b", "a - b")})
    fake_llm.add_rule("I am not sure.", user="The repository's tests of this code fail.")
    fake_llm.add_rule("LINE: 2\nBUG: the result is not what double expects\nFIX: use the right operator\n", user=REVIEW)
    outcome = await make_runner().run(spec)
    assert outcome.status == "succeeded", outcome.error
    assert [(f.start_line, f.severity, f.rule) for f in outcome.findings] == [(2, "major", None)]


EXAMPLED = 'def add(a, b):\n    """\n    >>> add(2, 3)\n    5\n    """\n    return a + b\n'
FILLERS = "".join(f"def filler_{i}(x):\n    return x + {i} * 7919\n\n\n" for i in range(2400))


async def test_a_save_that_breaks_a_docstring_example_of_a_large_file_is_evidence_too(fake_llm, make_runner, tmp_path):
    """A file too large to show whole gets no repair; the example its save broke (it passes on the last commit) is
    shown to the reviewer, and its finding on the changed line is major. An example red before the save is not."""
    stale = 'def sub(a, b):\n    """\n    >>> sub(2, 3)\n    1\n    """\n    return a - b\n\n\n'
    spec = saved(tmp_path / "repo", {"calc.py": FILLERS + stale + EXAMPLED},  # the save moves every line down one
                 {"calc.py": "import math\n" + FILLERS + stale + EXAMPLED.replace("a + b", "a - b")})
    line = len((FILLERS + stale + EXAMPLED).splitlines()) + 1
    fake_llm.add_rule(f"LINE: {line}\nBUG: subtracts\nFIX:     return a + b\n", user=REVIEW)
    outcome = await make_runner().run(spec)
    assert outcome.status == "succeeded", outcome.error
    prompt = fake_llm.prompts_containing(REVIEW)[0].last_user
    assert BROKEN_SINCE in prompt and "add(2, 3) returned -1, but the docstring expects 5" in prompt
    assert "sub(2, 3)" not in prompt.split(BROKEN_SINCE, 1)[1]  # red on the last commit too (a line up): no evidence
    [found] = [f for f in outcome.findings if f.rule is None]
    assert (found.start_line, found.severity, found.source) == (line, "major", "tests")
    assert "Since this change, docstring example of calc.add" in found.message


async def test_a_related_test_a_save_made_hang_fails_alone_and_is_evidence(fake_llm, make_runner, tmp_path):
    """The save makes one test's loop endless: it fails at its own share of the run's time, the other tests still run,
    and the ones that passed on the last commit are the save's doing."""
    loop = "def count(n):\n    i = 0\n    while i < n:\n        i += 1\n    return i\n"
    tests = ("from calc import count\n\n\ndef test_count():\n    assert count(3) == 3\n\n\n"
             "def test_other():\n    assert True\n")
    spec = saved(tmp_path / "repo", {"calc.py": loop, "tests/test_calc.py": tests},
                 {"calc.py": loop.replace("i += 1", "i += 0")})
    fake_llm.add_rule("I am not sure.", user="The repository's tests of this code fail.")
    fake_llm.add_rule(NONE, user=REVIEW)
    outcome = await make_runner().run(spec)
    assert outcome.status == "succeeded", outcome.error
    assert "test_calc.py::test_count" in fake_llm.prompts_containing(REVIEW)[0].last_user
    [found] = outcome.findings  # in the line it hangs on, next to the changed one: no second finding for the change
    assert (found.rule, found.start_line, found.severity) == ("troupe/failing-test", 3, "major")
    assert found.message.startswith("The test tests/test_calc.py::test_count fails here: Failed: Timeout (>5.0s)")


async def test_a_test_that_could_not_even_import_on_the_last_commit_was_not_broken_by_the_save(
        fake_llm, make_runner, tmp_path):
    """The last commit's module did not import (its tests errored at collection); the save makes it import, and a
    test that was never green fails: nothing says the save broke it (a false "major" on Troupe's own storage/)."""
    spec = saved(tmp_path / "repo", {"calc.py": "Number = int >> float  # TypeError\n\n\n" + ADD,
                                     "tests/test_calc.py": ADD_TESTS.replace("== 5", "== 6")},
                 {"calc.py": "\n\n\n" + ADD})
    fake_llm.add_rule("I am not sure.", user="The repository's tests of this code fail.")
    fake_llm.add_rule(NONE, user=REVIEW)
    outcome = await make_runner().run(spec)
    assert outcome.status == "succeeded", outcome.error
    assert BROKEN_SINCE not in fake_llm.prompts_containing(REVIEW)[0].last_user
    assert not [f for f in outcome.findings if f.rule == "troupe/regression" or f.severity == "major"]
