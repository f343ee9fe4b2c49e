"""Learnings from people: a finding the user dismissed, with a reason, shapes the next review —
the reason reaches the reviewer's prompt as quoted data, and the same kind of finding on the same
code is not reported again, even reworded. Applying records a learning; reopening withdraws it."""

from __future__ import annotations

from daemon.events import EventKind
from daemon.experience.learnings import record_learning
from daemon.experience.session import JobExperience
from daemon.jobs.engine import finding_draft
from tests.agents.conftest import write_tree
from tests.agents.test_review_chain import CALC

FIRST = """[{"file": "calc.py", "start_line": 5, "severity": "major", "message": "divide() does not handle b == 0",
  "quote": "return a / b"},
 {"file": "calc.py", "start_line": 9, "severity": "major", "message": "average([]) raises ZeroDivisionError",
  "quote": "return sum(values) / len(values)"}]"""
REWORDED = """[{"file": "calc.py", "start_line": 5, "severity": "critical",
  "message": "divide() fails with ZeroDivisionError when b == 0", "quote": "return a / b"},
 {"file": "calc.py", "start_line": 9, "severity": "major", "message": "average([]) raises ZeroDivisionError",
  "quote": "return sum(values) / len(values)"}]"""
REASON = "b is never 0 here: every caller validates it first"


async def review(run_job, store, ws, job_id):
    experience = JobExperience(store, job_id=job_id, workspace_id=ws.id)
    outcome, _ = await run_job("review calc.py", job_id=job_id, chain="review", workspace=ws.root,
                               files=["calc.py"], experience=experience)
    assert outcome.ok, outcome.error
    return outcome


async def test_a_dismissed_finding_shapes_the_next_review(fake_llm, run_job, store, recorder, tmp_path):
    repo = write_tree(tmp_path / "repo", {"calc.py": CALC})
    ws = await store.add_workspace(str(repo))
    fake_llm.add_rule(FIRST, system="You are a code reviewer", times=1)
    fake_llm.add_rule(REWORDED, system="You are a code reviewer")
    first = await review(run_job, store, ws, "job-1")
    stored = await store.add_findings(ws.id, None, "calc.py", [finding_draft(f) for f in first.findings
                                                                if f.source == "reviewer"])
    divide = next(f for f in stored if "divide" in f.message)
    dismissed = await store.set_finding_state(divide.id, "dismissed")
    learning = await record_learning(store, dismissed, "dismissed", REASON, str(repo))
    assert learning.data["code"] == "return a / b" and learning.workspace_id == ws.id

    second = await review(run_job, store, ws, "job-2")
    prompt = fake_llm.requests[-1].last_user
    assert REASON in prompt and "<<<experience" in prompt and "divide() does not handle b == 0" in prompt
    assert [f.message for f in second.findings if f.source == "reviewer"] == [
        "average([]) raises ZeroDivisionError"]  # the reworded divide() finding is not reported again
    notes = [e.data.text for e in recorder.of(EventKind.LOG) if e.data.experience]
    assert any("not reported again: calc.py:5" in note for note in notes)
    assert (await store.get_experience(learning.id)).uses == 2  # in the prompt, and in the screening

    # other code, same words: that is a new problem, and it is reported
    (repo / "calc.py").write_text(CALC.replace("return a / b", "return a / b if a else 0"))
    third = await review(run_job, store, ws, "job-3")
    assert len([f for f in third.findings if f.source == "reviewer"]) == 2


async def test_applying_records_a_learning_and_reopening_withdraws_it(store, tmp_path):
    repo = write_tree(tmp_path / "repo", {"calc.py": CALC})
    ws = await store.add_workspace(str(repo))
    (finding,) = await store.add_findings(ws.id, None, "calc.py", [
        {"message": "average([]) raises", "severity": "major", "start_line": 9}])
    applied = await record_learning(store, await store.set_finding_state(finding.id, "applied"), "applied", None,
                                    str(repo))
    assert "applied the fix" in applied.value
    reopened = await store.set_finding_state(finding.id, "open")
    assert await record_learning(store, reopened, "open", None, str(repo)) is None
    assert await store.list_experience(pool="learning") == []
