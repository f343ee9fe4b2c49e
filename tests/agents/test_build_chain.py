"""The build chain end to end against the fake LLM server: the program is written and completed,
ruff's finding sends it to review, the reviewer's comment changes the code, real pytest fails, its
failure reaches the programmer's next prompt, and the fix makes it pass."""

from __future__ import annotations

import subprocess
import sys

from daemon.agents.job import JobSpec
from daemon.events import EventKind
from daemon.workspace.change import apply_change

CODING = '''Here is the program.

```python wordcount.py
import sys


def count_words(text):
    return len(text.split())


def main(argv=None):
    pass


if __name__ == "__main__":
    main()
```

```python tests/test_wordcount.py
from wordcount import count_words


def test_count_words():
    assert count_words("a b  c") == 3
```
'''

COMPLETION = '''```python wordcount.py
import os
import sys


def count_words(text):
    return len(text.split())


def main(argv=None):
    args = sys.argv[1:] if argv is None else argv
    with open(args[0]) as handle:
        print(count_words(handle.read()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
```'''

COMMENT = "wordcount.py: users also want to count lines. Add count_lines(text) and a --lines flag."

MODIFY = '''wordcount.py
```python
<<<<<<< SEARCH
def main(argv=None):
    args = sys.argv[1:] if argv is None else argv
    with open(args[0]) as handle:
        print(count_words(handle.read()))
    return 0
=======
def count_lines(text):
    return text.count("\\n")


def main(argv=None):
    args = sys.argv[1:] if argv is None else argv
    path = [a for a in args if a != "--lines"][0]
    with open(path) as handle:
        text = handle.read()
    print(count_lines(text) if "--lines" in args else count_words(text))
    return 0
>>>>>>> REPLACE
```

```python tests/test_wordcount.py
from wordcount import count_lines, count_words


def test_count_words():
    assert count_words("a b  c") == 3


def test_count_lines_without_final_newline():
    assert count_lines("one\\ntwo") == 2
```'''

FIX = '''The count misses a last line without a newline.

wordcount.py
```python
<<<<<<< SEARCH
    return text.count("\\n")
=======
    return len(text.splitlines())
>>>>>>> REPLACE
```'''

README = "# wordcount\n\nCounts the words (or, with --lines, the lines) of a file:\n\n    python wordcount.py a.txt\n"


def script_build(fake_llm) -> None:
    fake_llm.add_rule(CODING, user="Reply with every file of the program in full")
    fake_llm.add_rule(COMPLETION, user="These places are still unfinished")
    fake_llm.add_rule(COMMENT, user="Give the ONE most important problem", times=1)
    fake_llm.add_rule("<INFO> Finished", user="Give the ONE most important problem")
    fake_llm.add_rule(MODIFY, user="Fix the code as the comment asks")
    fake_llm.add_rule(FIX, user="The program fails when it runs:")
    fake_llm.add_rule("No third-party package is needed: the standard library is enough.",
                      user="Write requirements.txt")
    fake_llm.add_rule(README, user="Write README.md")


async def test_build_chain_review_then_failing_test_then_fix(fake_llm, make_runner, recorder, tmp_path):
    script_build(fake_llm)
    outcome = await make_runner().run(JobSpec(chain="build", task="a CLI that counts the words in a file",
                                              job_id="job-build"))

    assert outcome.status == "succeeded", outcome.error
    assert not outcome.warnings, outcome.warnings
    assert recorder.phases_finished() == ["coding", "complete", "review_comment", "review_modify",
                                          "review_comment", "run_fix", "environment", "manual"]
    # ruff's unused import in the completed program kept the review on
    # the placeholder main() was found and sent to the completion phase
    completion = fake_llm.prompts_containing("These places are still unfinished")[0]
    assert "wordcount.py:8: function main() has no implementation" in completion.last_user
    # the reviewer's comment reached the programmer
    assert COMMENT in fake_llm.prompts_containing("Fix the code as the comment asks")[0].last_user
    # real pytest failed, and its failure text reached the next prompt
    runs = [e.data for e in recorder.of(EventKind.TOOL_RUN) if e.data.tool == "tests"]
    assert [r.ok for r in runs] == [False, True]
    fix_prompt = fake_llm.prompts_containing("The program fails when it runs:")[0].last_user
    assert "test_count_lines_without_final_newline" in fix_prompt and "assert 1 == 2" in fix_prompt
    assert outcome.test_report.ok and outcome.test_report.passed == 2
    assert outcome.conclusion.startswith("Tests PASSED")
    # the first prompt is the bare call's: the request, then every file in full, main.py the example
    coding = fake_llm.prompts_containing("Reply with every file of the program in full")[0].last_user
    assert coding.startswith("a CLI that counts the words in a file\n\n") and "```python main.py" in coding

    change = outcome.change
    assert change is not None and change.files == ["README.md", "tests/test_wordcount.py", "wordcount.py"]
    assert "requirements.txt" not in change.files  # prose is not written into a requirements file
    assert [s.instruction.split(":")[0] for s in outcome.code_states] == [
        "initial state", "coding", "complete", "review_modify", "run_fix", "manual"]
    assert len(recorder.of(EventKind.CODE_STATE)) == 5

    # the proposed program works for a user who applies it
    target = tmp_path / "applied"
    target.mkdir()
    apply_change(target, change)
    (target / "notes.txt").write_text("one two\nthree")
    run = subprocess.run([sys.executable, "wordcount.py", "--lines", "notes.txt"], cwd=target,
                         capture_output=True, text=True, timeout=30)
    assert run.stdout.strip() == "2"

    # accounting: per phase and per job, matching what the server counted
    finished = recorder.of(EventKind.PHASE_FINISHED)
    assert all(e.data.tokens > 0 and e.data.calls >= 1 for e in finished if e.data.phase != "environment")
    # the code imports only the standard library: requirements.txt costs no model call, and says why
    environment = next(e.data for e in finished if e.data.phase == "environment")
    assert environment.calls == 0 and "standard library" in environment.skipped
    assert outcome.usage.prompt_tokens == sum(r.prompt_tokens for r in fake_llm.requests)
    assert outcome.usage.calls == len(fake_llm.requests) == 7
    assert sum(e.data.tokens for e in finished) == outcome.usage.tokens
    # every turn is a MESSAGE event with its phase and role
    messages = recorder.of(EventKind.MESSAGE)
    assert {(m.phase, m.role) for m in messages} >= {("coding", "cto"), ("coding", "programmer"),
                                                     ("review_comment", "reviewer"), ("run_fix", "tester")}
    assert outcome.checkpoint and outcome.checkpoint["next"] == [7, 0, 0]


PYGAME = '''```python main.py
import pygame


def main():
    pygame.init()
    print("Dice: 4")


if __name__ == "__main__":
    main()
```'''
STDLIB = '''```python main.py
import random


def main():
    print("Dice:", random.randint(1, 6))


if __name__ == "__main__":
    main()
```'''


async def test_a_crash_the_repair_sends_back_unchanged_is_written_anew_from_the_request(fake_llm, make_runner,
                                                                                       recorder):
    fake_llm.add_rule(PYGAME, user="Reply with every file of the program in full", times=1)
    fake_llm.add_rule("<INFO> Finished", user="Give the ONE most important problem")
    fake_llm.add_rule(PYGAME, user="The program fails when it runs:")  # the small model's usual repair
    fake_llm.add_rule(STDLIB, user="Write the program anew so that it runs")
    fake_llm.add_rule("# Dice\n\nRolls a die: `python main.py`.\n", user="Write README.md")
    outcome = await make_runner().run(JobSpec(chain="build", task="a dice roller", job_id="job-dice"))

    assert outcome.status == "succeeded", outcome.error
    assert recorder.phases_finished() == ["coding", "review_comment", "run_fix", "rewrite", "environment",
                                          "manual"]
    skips = [e.data.text for e in recorder.of(EventKind.LOG) if e.data.skipped is not None]
    assert any("loop 'run' cycle 2 skipped: the last fix kept the code as it was" in s for s in skips)
    rewrite = fake_llm.prompts_containing("Write the program anew so that it runs")[0].last_user
    assert rewrite.startswith("a dice roller\n\n") and "No module named 'pygame'" in rewrite
    assert "pygame.init()" not in rewrite.split("failed when it ran:")[0]  # the request, not the old code
    assert "```python main.py" in rewrite  # every file in full, as the first step was asked
    assert outcome.test_report.ok and not outcome.warnings
    assert "import random" in outcome.change.diff and "pygame" not in outcome.change.diff


BROKEN = '''```python main.py
import random


def main(:
    print("Dice:", random.randint(1, 6))
```'''


async def test_a_new_program_that_stays_invalid_python_is_kept_and_completed(fake_llm, make_runner, recorder):
    fake_llm.add_rule(BROKEN, user="Reply with every file of the program in full")
    fake_llm.add_rule(BROKEN, user="Your edits were not applied")  # both corrections come back as broken
    fake_llm.add_rule(STDLIB, user="These places are still unfinished:")
    fake_llm.add_rule("# Dice\n\nRolls a die: `python main.py`.\n", user="Write README.md")
    outcome = await make_runner().run(JobSpec(chain="build", task="a dice roller", job_id="job-broken"))

    assert outcome.status == "succeeded", outcome.error
    assert [r.last_user.split(".")[0] for r in fake_llm.requests[1:3]] == ["Your edits were not applied"] * 2
    assert any("kept the programmer's files after 3 tries though main.py is not valid Python (line 4" in w
               for w in outcome.warnings)
    assert recorder.phases_finished() == ["coding", "complete", "environment", "manual"]
    completion = fake_llm.requests[3].last_user
    assert completion.startswith("These places are still unfinished:\nmain.py:4: does not parse")
    assert outcome.test_report.ok and "def main(:" not in outcome.change.diff


LAZY = '''```python main.py
import random


def main():
    print("Dice:", random.randint(1, 6))


if __name__ == "__main__":
    main()
```

```python dice.py
<the complete file>
```'''


async def test_a_file_left_as_the_formats_placeholder_is_named_and_at_last_left_out(fake_llm, make_runner,
                                                                                    recorder):
    fake_llm.add_rule(LAZY, user="Reply with every file of the program in full")
    fake_llm.add_rule(LAZY, user="Your edits were not applied")
    fake_llm.add_rule("# Dice\n\nRolls a die: `python main.py`.\n", user="Write README.md")
    outcome = await make_runner().run(JobSpec(chain="build", task="a dice roller", job_id="job-lazy"))

    assert outcome.status == "succeeded", outcome.error
    corrections = [r.last_user for r in fake_llm.requests if r.last_user.startswith("Your edits were not applied")]
    assert len(corrections) == 2 and all("your edit of dice.py holds the words <the complete file>" in c
                                         for c in corrections)
    assert any("left out dice.py, which held only the format's <the complete file>" in w for w in outcome.warnings)
    assert outcome.change.files == ["README.md", "main.py"] and outcome.test_report.ok
