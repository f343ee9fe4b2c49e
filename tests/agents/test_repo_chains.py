"""A repository's own chains and roles are used in a run: its review chain, its reviewer on its
own model; and a review loop stops only when the reviewer really says it is finished."""

from __future__ import annotations

from daemon.agents.job import JobSpec
from daemon.events import EventKind
from tests.agents.conftest import write_tree
from tests.agents.test_bad_output import script_change
from tests.agents.test_change_chain import CODE, REPO, TASK

MODIFY = """pkg_b/shout.py
```python
<<<<<<< SEARCH
def shout(name, times=1):
=======
def shout(name, times=1):
    if times < 1:
        raise ValueError("times must be at least 1")
>>>>>>> REPLACE
```"""

SECURITY_CHAIN = '''name = "review"
description = "Security review only."

[[steps]]
phase = "audit"
instructor = "cto"
assistant = "security"
produces = "findings"
max_questions = 0
severities = "as_given"  # the team trusts its security model's severities
template = """Audit for security holes only.
{target}
{findings_format}"""
'''


async def test_a_repo_chain_and_role_model_override_are_used(fake_llm, make_runner, recorder, tmp_path):
    repo = write_tree(tmp_path / "repo", {
        "app.py": "import subprocess\n\n\ndef run(cmd):\n    return subprocess.call(cmd, shell=True)\n",
        ".troupe/chains/roles.toml": '[roles.security]\nprompt = "You audit code for security holes."\n'
                                    'model = "openai/security-model"\n',
        ".troupe/chains/review.toml": SECURITY_CHAIN,
    })
    fake_llm.add_rule('[{"file": "app.py", "start_line": 5, "severity": "critical", "message": "shell injection",'
                      ' "quote": "shell=True"}]', system="You audit code for security holes.")
    outcome = await make_runner().run(JobSpec(chain="review", task="audit", workspace=repo, files=["app.py"]))
    assert outcome.status == "succeeded", outcome.error
    assert recorder.phases_finished() == ["audit"]
    assert [r.model for r in fake_llm.requests] == ["security-model"]
    assert fake_llm.requests[0].last_user.startswith("Audit for security holes only.")
    assert [(f.start_line, f.severity) for f in outcome.findings] == [(5, "critical")]


async def test_a_comment_that_mentions_finished_without_the_marker_does_not_stop_the_review(fake_llm, make_runner,
                                                                                           recorder, tmp_path):
    repo = write_tree(tmp_path / "repo", REPO)
    fake_llm.add_rule("Not finished: shout() should reject times < 1 with a ValueError.",
                      user="Give the ONE most important problem", times=1)
    script_change(fake_llm, CODE, MODIFY)
    outcome = await make_runner().run(JobSpec(chain="change", task=TASK, workspace=repo))
    assert outcome.status == "succeeded", outcome.error
    # the comment was acted on; then the fix, lint and tests decided, without another review turn
    assert recorder.phases_finished() == ["plan", "code", "review_comment", "review_modify"]
    assert any("the tests pass" in (e.data.reason or "") for e in recorder.of(EventKind.LOG))
    assert "+    if times < 1:" in outcome.change.diff
