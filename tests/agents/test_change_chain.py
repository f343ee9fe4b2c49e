"""The change chain on a multi-folder repository: two files in different packages are edited
correctly, the user's tree is untouched, and the result is a proposed diff."""

from __future__ import annotations

import subprocess
import sys

from daemon.agents.job import JobSpec
from daemon.events import EventKind
from daemon.workspace.change import apply_change
from tests.agents.conftest import snapshot_tree, write_tree

REPO = {
    "pkg_a/__init__.py": "",
    "pkg_a/greet.py": 'def greet(name):\n    return f"Hello, {name}"\n',
    "pkg_b/__init__.py": "",
    "pkg_b/shout.py": "from pkg_a.greet import greet\n\n\ndef shout(name):\n    return greet(name).upper()\n",
    "tests/test_greet.py": ("from pkg_a.greet import greet\nfrom pkg_b.shout import shout\n\n\n"
                            "def test_greet():\n    assert greet(\"Ann\").startswith(\"Hello, Ann\")\n\n\n"
                            "def test_shout():\n    assert shout(\"Ann\").startswith(\"HELLO, ANN\")\n"),
    ".gitignore": "*.log\n",
    "debug.log": "SECRET-LOOKING NOISE that must never reach a prompt\n",
}

TASK = "greet() should end with an exclamation mark, and shout() should take times=1 and repeat the greeting."

PLAN = """I will change two files.
<INFO> pkg_a/greet.py: append "!" in greet(); pkg_b/shout.py: add a times=1 parameter to shout()"""

CODE = '''pkg_a/greet.py
```python
<<<<<<< SEARCH
    return f"Hello, {name}"
=======
    return f"Hello, {name}!"
>>>>>>> REPLACE
```

pkg_b/shout.py
```python
<<<<<<< SEARCH
def shout(name):
    return greet(name).upper()
=======
def shout(name, times=1):
    return " ".join([greet(name).upper()] * times)
>>>>>>> REPLACE
```

tests/test_greet.py
```python
<<<<<<< SEARCH
def test_shout():
    assert shout("Ann").startswith("HELLO, ANN")
=======
def test_shout():
    assert shout("Ann") == "HELLO, ANN!"
    assert shout("Ann", times=2) == "HELLO, ANN! HELLO, ANN!"
>>>>>>> REPLACE
```
'''


async def test_change_chain_edits_two_packages_and_leaves_the_user_tree_alone(fake_llm, make_runner, recorder,
                                                                            tmp_path):
    repo = write_tree(tmp_path / "repo", REPO)
    before = snapshot_tree(repo)
    fake_llm.add_rule(PLAN, user="List the files to change")
    fake_llm.add_rule(CODE, user="Make the change.")
    fake_llm.add_rule("<INFO> Finished", user="Give the ONE most important problem with this change")

    outcome = await make_runner().run(JobSpec(chain="change", task=TASK, workspace=repo, job_id="job-change"))

    assert outcome.status == "succeeded", outcome.error
    assert recorder.phases_finished() == ["plan", "code", "review_comment"]
    change = outcome.change
    assert change is not None and change.files == ["pkg_a/greet.py", "pkg_b/shout.py", "tests/test_greet.py"]
    assert '-    return f"Hello, {name}"\n+    return f"Hello, {name}!"' in change.diff
    assert "+def shout(name, times=1):" in change.diff
    assert all(change.base_hashes[f] for f in change.files)  # all modified, none created
    assert snapshot_tree(repo) == before  # nothing touched the user's files
    # the repository context reached the planner, .gitignore honoured; the plan reached the coder
    plan_prompt = fake_llm.prompts_containing("List the files to change")[0].last_user
    assert "pkg_b/shout.py" in plan_prompt and "def shout(name):" in plan_prompt
    assert not fake_llm.prompts_containing("SECRET-LOOKING NOISE")
    assert "add a times=1 parameter" in fake_llm.prompts_containing("Make the change.")[0].last_user
    # the reviewer saw the diff of the change
    review_prompt = fake_llm.prompts_containing("Give the ONE most important problem")[0].last_user
    assert "+def shout(name, times=1):" in review_prompt
    # the tests ran on the changed copy and pass
    assert outcome.test_report.ok and outcome.test_report.passed == 2
    assert [e.data.tool for e in recorder.of(EventKind.TOOL_RUN)] == ["context", "tests"]

    # applied by the user, the change is what was promised, and the tests pass there too
    apply_change(repo, change)
    assert (repo / "pkg_a/greet.py").read_text() == 'def greet(name):\n    return f"Hello, {name}!"\n'
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=repo,
                         capture_output=True, text=True, timeout=60)
    assert "2 passed" in run.stdout, run.stdout + run.stderr
