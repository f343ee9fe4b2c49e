"""Model output that is not what was asked: the model is told precisely what was wrong and
retried a bounded number of times, then the job fails clearly; nothing is ever written outside
the workspace copy, and the user's tree is never touched."""

from __future__ import annotations

import os
from pathlib import Path

from daemon.agents.job import JobSpec
from tests.agents.conftest import snapshot_tree, write_tree
from tests.agents.test_change_chain import CODE, REPO, TASK
from tests.agents.test_review_chain import CALC

PROGRAMMER = "You are a careful programmer"


def script_change(fake_llm, *code_replies: str) -> None:
    fake_llm.add_rule("<INFO> edit pkg_a/greet.py and pkg_b/shout.py", user="List the files to change")
    fake_llm.add_rule("<INFO> Finished", user="Give the ONE most important problem")
    fake_llm.enqueue(*code_replies)  # the code phase's replies, in order


def scratches(root: Path) -> list[Path]:
    return list(root.glob("troupe-scratch-*")) if root.exists() else []


async def test_a_reply_without_code_is_sent_back_with_the_reason(fake_llm, make_runner, tmp_path):
    repo = write_tree(tmp_path / "repo", REPO)
    script_change(fake_llm, "I would add an exclamation mark to greet() and a times parameter to shout().", CODE)
    outcome = await make_runner().run(JobSpec(chain="change", task=TASK, workspace=repo))
    assert outcome.status == "succeeded", outcome.error
    correction = fake_llm.requests[2].messages[-1]["content"]  # the instructor's correction
    assert correction.startswith("Your edits were not applied.") and "SEARCH" in correction
    assert outcome.change is not None and "pkg_b/shout.py" in outcome.change.files


async def test_no_usable_code_after_the_retries_fails_the_job_clearly(fake_llm, make_runner, tmp_path):
    repo = write_tree(tmp_path / "repo", REPO)
    before = snapshot_tree(repo)
    script_change(fake_llm, "Sure, I'll do that.", "Done!", "It is done, trust me.")
    outcome = await make_runner().run(JobSpec(chain="change", task=TASK, workspace=repo))
    assert outcome.status == "failed" and outcome.change is None
    assert outcome.error.startswith("phase 'code': the programmer's edits could not be used after 3 tries")
    assert len(fake_llm.requests) == 4  # plan + 3 tries, then stop
    assert snapshot_tree(repo) == before
    assert scratches(tmp_path / "scratches") == []  # the copy is cleaned up


async def test_paths_leaving_the_workspace_are_refused_and_nothing_is_written_outside(fake_llm, make_runner,
                                                                                     tmp_path):
    repo = write_tree(tmp_path / "repo", REPO)
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, repo / "escape")  # a link in the user's repo that leads out of it
    passwd = Path("/etc/passwd").read_bytes()
    script_change(
        fake_llm,
        "```python ../../x.py\nprint('escaped')\n```",
        "```text /etc/passwd\nroot::0:0::/root:/bin/sh\n```",
        "```python escape/pwned.py\nprint('escaped through a link')\n```",
    )
    outcome = await make_runner().run(JobSpec(chain="change", task=TASK, workspace=repo))

    assert outcome.status == "failed"
    assert "could not be used after 3 tries" in outcome.error and "escape" in outcome.error
    corrections = [r.messages[-1]["content"] for r in fake_llm.requests[2:4]]
    assert "'..'" in corrections[0] and "absolute paths are not allowed" in corrections[1]
    assert Path("/etc/passwd").read_bytes() == passwd
    assert list(outside.iterdir()) == []
    for parent in (tmp_path, tmp_path.parent):
        assert not (parent / "x.py").exists()
    assert not any(p.name in ("x.py", "pwned.py") for p in tmp_path.rglob("*"))
    assert scratches(tmp_path / "scratches") == []


async def test_broken_findings_json_gets_one_precise_retry(fake_llm, make_runner, tmp_path):
    repo = write_tree(tmp_path / "repo", {"calc.py": CALC})
    fake_llm.enqueue('[{"file": "calc.py", "start_line": 5 "severity": "major", "message": "b may be 0"}]',
                     '[{"file": "calc.py", "start_line": 5, "severity": "major", "message": "b may be 0"}]')
    outcome = await make_runner().run(JobSpec(chain="review", task="review", workspace=repo, files=["calc.py"]))
    assert outcome.status == "succeeded", outcome.error
    retry = fake_llm.requests[1].messages[-1]["content"]
    assert retry.startswith("your JSON is not valid: Expecting ',' delimiter at line 1")
    assert [(f.start_line, f.message) for f in outcome.findings if f.source == "reviewer"] == [(5, "b may be 0")]


async def test_findings_that_stay_broken_fail_the_job_with_the_reason(fake_llm, make_runner, tmp_path):
    repo = write_tree(tmp_path / "repo", {"calc.py": CALC})
    fake_llm.enqueue("The code looks mostly fine but divide is risky.", "{'file': calc.py}")
    outcome = await make_runner().run(JobSpec(chain="review", task="review", workspace=repo, files=["calc.py"]))
    assert outcome.status == "failed" and len(fake_llm.requests) == 2
    assert outcome.error.startswith("phase 'review': the reviewer did not return usable findings after 2 tries")
    assert "not valid" in outcome.error


async def test_a_model_that_keeps_failing_ends_the_job_with_the_providers_reason(fake_llm, make_runner, tmp_path):
    repo = write_tree(tmp_path / "repo", {"calc.py": CALC})
    fake_llm.fail_next("server_error", times=5)
    outcome = await make_runner().run(JobSpec(chain="review", task="review", workspace=repo, files=["calc.py"]))
    assert outcome.status == "failed"
    assert outcome.error.startswith("phase 'review': model openai/fake-model failed")
