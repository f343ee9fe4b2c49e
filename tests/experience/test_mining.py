"""Mining: a scripted code-state sequence yields the expected shortcuts; a real build run (real
pytest failing, then passing) is captured before its scratch copy goes, mined into the pools with
model-written instructions (capped), and what it taught reaches the next similar job's prompt."""

from __future__ import annotations

from daemon.experience.ecl import StateSnapshot, find_shortcuts, shortest_path
from daemon.experience.settings import ExperienceSettings
from tests.agents.test_build_chain import script_build
from tests.experience.conftest import GOOD_CODE, script_quiet_build

STUB = "def count_words(text):\n    pass\n"
WORDS = "def count_words(text):\n    return len(text.split())\n"
LINES = WORDS + "\n\ndef count_lines(text):\n    return text.count('\\n')\n"
FIXED = WORDS + "\n\ndef count_lines(text):\n    return len(text.splitlines())\n"
TASK = "count the words and the lines of a text"


def test_a_scripted_state_sequence_yields_the_expected_shortcuts():
    states = [StateSnapshot(0, "h0", "initial state", {}),
              StateSnapshot(1, "h1", "coding: write it", {"wc.py": STUB}),
              StateSnapshot(2, "h2", "complete: finish it", {"wc.py": WORDS}),
              StateSnapshot(3, "h3", "review_modify: a broken detour", {"wc.py": WORDS + "def oops(:\n"}),
              StateSnapshot(4, "h2", "test_fix: back to the good state", {"wc.py": WORDS}),
              StateSnapshot(5, "h5", "review_modify: count lines", {"wc.py": LINES}),
              StateSnapshot(6, "h6", "test_fix: last line", {"wc.py": FIXED}, tests_ok=True)]
    path, in_degree = shortest_path(states)
    assert [s.hash for s in path] == ["h0", "h1", "h2", "h5", "h6"]  # the detour is not on the shortest path
    assert in_degree["h2"] == 2  # the team came back to it

    found = [(s.source.hash, s.target.hash, s.gain) for s in find_shortcuts(states, TASK, threshold=0.3)]
    assert [(a, b) for a, b, _ in found] == [("h0", "h6"), ("h1", "h6"), ("h2", "h6"), ("h0", "h5")]
    lower = {(s.source.hash, s.target.hash) for s in find_shortcuts(states, TASK, threshold=0.25)}
    assert lower == {(a, b) for a, b, _ in found} | {("h0", "h2"), ("h1", "h5")}  # smaller jumps
    assert found[0][2] == 1.0  # from nothing to the final state: the whole value
    # never adjacent steps, never into a placeholder (h1) or a state that does not parse (h3)
    assert all({a, b} not in ({"h0", "h1"}, {"h1", "h2"}, {"h2", "h5"}, {"h5", "h6"}) for a, b, _ in found)
    assert not [b for _, b, _ in found if b in ("h1", "h3")]
    shortcut = find_shortcuts(states, TASK)[0]
    assert shortcut.steps == ["coding: write it", "complete: finish it", "review_modify: a broken detour",
                              "test_fix: back to the good state", "review_modify: count lines",
                              "test_fix: last line"]
    assert find_shortcuts(states, TASK, threshold=1.01) == []
    assert find_shortcuts(states[:2], TASK) == []


async def test_a_real_run_is_mined_and_what_it_taught_reaches_the_next_similar_job(fake_llm, gateway, run_job, store):
    instruction = "Write count_words and count_lines with a --lines flag, and pytest tests for both."
    fake_llm.add_rule(instruction, system="You write one instruction")
    script_build(fake_llm)
    outcome, experience = await run_job("a CLI that counts the words in a file", job_id="job-1",
                                        test_command=None)  # the real pytest: fails, then passes
    assert outcome.ok and outcome.test_report.ok, outcome.error
    record = experience.record
    assert [s.instruction.split(":")[0] for s in record.states] == [
        "initial state", "coding", "complete", "review_modify", "run_fix", "manual"]
    assert "def count_lines" in record.states[3].files["wordcount.py"]  # contents kept after the cleanup
    assert [s.tests_ok for s in record.states] == [None, None, None, False, True, None]

    report = await experience.mine(gateway)
    assert 1 <= report.shortcuts <= 3
    assert len(fake_llm.prompts_containing("Write the one instruction")) == report.instruction_calls
    instructors = await store.list_experience(pool="instructor")
    assistants = await store.list_experience(pool="assistant")
    assert len(instructors) == report.shortcuts
    # one model call per distinct target: a jump to a target already described reuses its instruction
    assert len(assistants) == report.instruction_calls >= 1
    assert all(e.value == instruction and e.data["instruction_by"] in ("model", "known") for e in instructors)
    assert all(e.data["target"] != 1 for e in instructors)  # state 1 still had a placeholder main()
    assert any("def count_lines" in e.value for e in assistants)
    agents = await store.list_experience(pool="agent")
    assert {e.phase for e in agents} == {"coding", "complete", "review_comment", "review_modify", "run_fix",
                                         "manual"}  # environment: skipped, no call
    coding = next(e for e in agents if e.phase == "coding")
    assert coding.role == "programmer" and 0.5 <= coding.score <= 1.0
    (workflow,) = await store.list_experience(pool="workflow")
    steps = workflow.data["steps"]
    assert steps["loop:review"]["work_cycles"] == 1 and steps["loop:review"]["finished"]
    assert "phase:environment" not in steps  # the standard library only: skipped before any model call
    assert not steps["phase:manual"]["redundant"]

    fake_llm.reset()
    script_quiet_build(fake_llm)
    outcome, _ = await run_job("a CLI that counts the words and lines in a file", job_id="job-2")
    assert outcome.ok, outcome.error
    coding_prompt = fake_llm.prompts_containing("Reply with every file of the program")[0].last_user
    assert "<<<experience" in coding_prompt and "quoted data" in coding_prompt
    assert instruction in coding_prompt                 # the instructor pool: state -> instruction
    assert "def count_lines(text):" in coding_prompt   # the assistant pool: instruction -> code
    manual_prompt = fake_llm.prompts_containing("Write README.md")[0].last_user
    assert "<<<experience" not in manual_prompt  # it concluded at once before: an example could only cost
    used = [e for e in await store.list_experience(limit=None) if e.uses]
    assert {e.pool for e in used} >= {"instructor", "assistant", "agent"}


async def test_a_planted_secret_never_reaches_the_store(fake_llm, gateway, run_job, store):
    secret, token = "sk-live-abcdefghijklmnop1234", "ghp_" + "a1b2c3d4e5" * 4
    fake_llm.add_rule("Move the token into an environment variable.", system="You write one instruction")
    script_quiet_build(fake_llm, GOOD_CODE.replace("import sys\n", f"import sys\nTOKEN = '{token}'\n"))
    outcome, experience = await run_job(f"a word counter; deploy with key {secret}", job_id="job-s",
                                        settings=ExperienceSettings(shortcut_gain=0.0))
    assert outcome.ok, outcome.error
    await experience.mine(gateway)
    stored = repr(await store.export_experience())
    assert "count_words" in stored and "***" in stored
    assert secret not in stored and token not in stored
    assert all(secret not in r.prompt for r in fake_llm.prompts_containing("Write the one instruction"))
