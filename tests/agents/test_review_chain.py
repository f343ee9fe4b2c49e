"""The review chain: static checks first (given to the reviewer, never re-asked), then JSON
findings validated against the file — right lines kept, wrong lines re-anchored or dropped."""

from __future__ import annotations

from daemon.agents.job import JobSpec, Selection
from daemon.events import EventKind
from tests.agents.conftest import snapshot_tree, write_tree

CALC = """import os


def divide(a, b):
    return a / b


def average(values):
    return sum(values) / len(values)
"""

FINDINGS = """Here are my findings:
```json
[
  {"file": "calc.py", "start_line": 5, "end_line": 5, "severity": "major",
   "message": "divide() does not handle b == 0", "quote": "return a / b",
   "replacement": "    return a / b if b else 0.0"},
  {"file": "calc.py", "start_line": 2, "end_line": 2, "severity": "major",
   "message": "average([]) raises ZeroDivisionError", "quote": "return sum(values) / len(values)"},
  {"file": "calc.py", "start_line": 999, "severity": "minor", "message": "a phantom line"},
  {"file": "calc.py", "start_line": 4, "severity": "minor", "message": "quotes code that is not there",
   "quote": "def multiply(a, b):"},
  {"file": "other.py", "start_line": 1, "severity": "info", "message": "a file nobody asked about"},
]
```"""


async def test_review_findings_carry_correct_lines(fake_llm, make_runner, recorder, tmp_path):
    repo = write_tree(tmp_path / "repo", {"calc.py": CALC, "other.py": "x = 1\n"})
    before = snapshot_tree(repo)
    fake_llm.add_rule(FINDINGS, system="You are a code reviewer")

    outcome = await make_runner().run(JobSpec(chain="review", task="review calc.py", workspace=repo,
                                              files=["calc.py"], job_id="job-review"))

    assert outcome.status == "succeeded", outcome.error
    placed = [(f.file, f.start_line, f.end_line, f.severity, f.source) for f in outcome.findings]
    assert placed == [("calc.py", 1, 1, "minor", "ruff"),       # lint, found without the model
                      ("calc.py", 5, 5, "info", "reviewer"),    # right as given; no evidence: a suggestion
                      ("calc.py", 9, 9, "info", "reviewer")]    # quoted code found at its real line
    assert outcome.findings[0].rule == "F401"
    assert outcome.findings[1].replacement == "    return a / b if b else 0.0"
    reasons = [r["reason"] for r in outcome.rejected_findings]
    assert reasons == ["line 999 does not exist in calc.py (9 lines)",
                       "the quoted code 'def multiply(a, b):' is not in calc.py",
                       "file 'other.py' was not under review"]
    dropped = [e.data.text for e in recorder.of(EventKind.LOG) if e.data.finding]
    assert len(dropped) == 3
    # the reviewer got numbered lines and the lint it must not repeat
    prompt = fake_llm.requests[0].last_user
    assert "   5|     return a / b" in prompt
    assert "F401 ×1 in calc.py (line 1)" in prompt  # a short summary of the lint, not its whole list
    assert len(fake_llm.requests) == 2  # the reviewer, then asked to reproduce its suggestion with a fix
    review, reproduce = fake_llm.requests
    # the reviewer's conversation goes on: its prompt and reply come first, unchanged (a prompt cache serves
    # them again), and only what this review found is new
    assert reproduce.messages[:2] == review.messages
    assert reproduce.messages[2] == {"role": "assistant", "content": FINDINGS}
    assert [m["role"] for m in reproduce.messages] == ["system", "user", "assistant", "user"]
    assert reproduce.last_user.startswith("Check these bugs you found with tests:\n1. calc.py line 5\n\n")
    assert "```python\nimport os" not in reproduce.last_user, "the code is not sent again"
    assert snapshot_tree(repo) == before


async def test_reviewing_a_diff_shows_only_the_changed_hunks(fake_llm, make_runner, tmp_path):
    body = "".join(f"def f{n}():\n    return {n}\n\n\n" for n in range(1, 30))
    repo = write_tree(tmp_path / "repo", {"mod.py": body})
    diff = ("diff --git a/mod.py b/mod.py\n--- a/mod.py\n+++ b/mod.py\n@@ -49,2 +49,2 @@\n"
            " def f13():\n-    return 12\n+    return 13\n")
    fake_llm.add_rule('[{"file": "mod.py", "start_line": 50, "severity": "info", "message": "magic number",'
                      ' "quote": "return 13"}]', system="You are a code reviewer")
    outcome = await make_runner().run(JobSpec(chain="review", task="review my change", workspace=repo, diff=diff))
    assert outcome.status == "succeeded", outcome.error
    prompt = fake_llm.requests[0].last_user
    assert "mod.py (changed hunks, with line numbers)" in prompt
    assert "  50|     return 13" in prompt and "def f1():" not in prompt and "def f29():" not in prompt
    assert [(f.file, f.start_line) for f in outcome.findings] == [("mod.py", 50)]


def test_the_changed_hunks_are_found_for_file_names_git_writes_with_spaces_or_quotes(tmp_path):
    import subprocess

    from daemon.review.gitdiff import diff_ranges

    names = ["my module.py", "café.py", "plain.py"]
    repo = write_tree(tmp_path / "repo", {name: "a = 1\nb = 2\nc = 3\n" for name in names})
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(repo)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "start"], check=True)
    for name in names:
        (repo / name).write_text("a = 1\nb = 20\nc = 3\n")
    diff = subprocess.run([*git, "diff", "HEAD"], check=True, capture_output=True, text=True).stdout
    assert '+++ "b/caf\\303\\251.py"' in diff and "+++ b/my module.py" in diff  # as git writes them
    assert diff_ranges(diff) == {name: [(1, 3)] for name in sorted(names)}
    assert diff_ranges("--- old.py\t2026-12-04 10:00\n+++ new.py\t2026-12-04 10:01\n@@ -2 +2 @@\n-b\n+B\n") == {
        "new.py": [(2, 2)]}


async def test_a_selection_is_reviewed_with_its_real_line_numbers(fake_llm, make_runner, tmp_path):
    repo = write_tree(tmp_path / "repo", {"calc.py": CALC})
    fake_llm.add_rule("[]", system="You are a code reviewer")
    outcome = await make_runner().run(JobSpec(chain="review", task="review", workspace=repo,
                                              selection=Selection("calc.py", 8, 9)))
    assert outcome.status == "succeeded" and [f.source for f in outcome.findings] == ["ruff"]
    prompt = fake_llm.requests[0].last_user
    assert "calc.py (lines 8-9)" in prompt and "   9|     return sum(values)" in prompt
    assert "divide" not in prompt
