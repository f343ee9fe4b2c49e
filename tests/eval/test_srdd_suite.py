"""The build suite: its stratified sample of a (tiny, invented) SRDD-shaped CSV, the bare reply's
files, and the suite end to end at two items through a real daemon running the agent engine
against the fake model server, team and bare rows scored the same way."""

from __future__ import annotations

import csv
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from daemon.eval.runner import DaemonContext, run_suite
from daemon.eval.srdd import BuildSuite, files_of_reply, quality
from daemon.eval.suite import SuiteError, load_suite
from daemon.workspace.edits import EDIT_FORMAT_HELP
from tests.daemon.conftest import DaemonProcess, daemon_env
from tests.fakes.llm_script import message_text
from tests.fakes.llm_server import FakeLLM

# Invented tasks in SRDD's shape (never SRDD rows: the dataset is CC BY-NC and stays out of the repo).
DICE = "Dice_Roller is a small program that rolls two six-sided dice and prints their total."
WORDS = "Word_Tally is a program that counts the words of a sentence and prints the count."
DRAFT = "Word_Draft is a program that counts words; the description breaks the rules."
ROWS = [("Word_Draft", DRAFT, "Tools"), ("Word_Tally", WORDS, "Tools"), ("Dice_Roller", DICE, "Game")]


def write_srdd(folder: Path, *, check: bool = True) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "data_attribute_format.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)  # CRLF line ends, as upstream
        writer.writerow(["Name", "Description", "Category"])
        writer.writerows(ROWS)
    if check:
        with (folder / "check.csv").open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(["SoftwareCategory", "SoftwareName", "SoftwareDescription", "CountObey\t\t\t"])
            writer.writerows([["Tools", "Draft", DRAFT, "3"], ["Tools", "Tally", WORDS, "5"],
                              ["Board Game", "Dice", DICE, "5"]])
    return folder


def test_the_sample_is_one_clean_task_per_category_in_a_fixed_order(tmp_path):
    suite = load_suite("build", write_srdd(tmp_path / "srdd"))

    items = suite.items()

    assert [item.id for item in items] == ["Game/Dice_Roller", "Tools/Word_Tally"]
    assert items[1].data["description"] == WORDS and items[1].data["row"] == 2
    assert [i.id for i in BuildSuite(tmp_path / "srdd" / "data_attribute_format.csv").items()] == [i.id for i in items]


def test_without_check_csv_the_first_row_of_each_category_is_taken(tmp_path):
    items = BuildSuite(write_srdd(tmp_path / "srdd", check=False)).items()

    assert [item.id for item in items] == ["Game/Dice_Roller", "Tools/Word_Draft"]


def test_without_data_the_suite_says_where_to_get_srdd(monkeypatch, tmp_path):
    monkeypatch.delenv("TROUPE_SRDD", raising=False)
    with pytest.raises(SuiteError, match=r"CC BY-NC.*github.com/OpenBMB/ChatDev.*--data PATH.*TROUPE_SRDD"):
        BuildSuite(None)
    monkeypatch.setenv("TROUPE_SRDD", str(tmp_path / "nowhere"))
    with pytest.raises(SuiteError, match=r"no SRDD tasks file at .*nowhere"):
        BuildSuite(None)


def test_a_bare_reply_gives_the_files_the_engine_would_write():
    reply = "Here it is.\n\n```python main.py\nprint(1)\n```\n\n```python util/x.py\nX = 1\n```"
    change, problem = files_of_reply(reply)
    unnamed, _ = files_of_reply("```python\nprint('one block, no path')\n```\nRun it with python.")
    nothing, why = files_of_reply("I would write a program that rolls dice.")

    assert problem == "" and change.files == ["main.py", "util/x.py"]
    assert change.edits[0].after == "print(1)\n"
    assert unnamed.files == ["main.py"]
    assert nothing.empty and why


DICE_CODE = '''```python main.py
import random


def roll_two():
    return random.randint(1, 6) + random.randint(1, 6)


if __name__ == "__main__":
    print("You rolled", roll_two())
```

```python tests/test_main.py
from main import roll_two


def test_roll_two_is_between_two_and_twelve():
    assert all(2 <= roll_two() <= 12 for _ in range(100))
```
'''
WORDS_CODE = '''```python main.py
import sys


def tally(sentence):
    return len(sentence.split())


if __name__ == "__main__":
    print(tally(" ".join(sys.argv[1:]) or "one two three"))
```
'''
BARE_STUB = '```python main.py\ndef roll_two():\n    pass\n\n\nprint("You rolled", roll_two())\n```\n'
BARE_CRASH = '```python main.py\nwords = None\nprint(len(words.split()))\n```\n'


def scripted_reply(body: dict[str, Any]) -> str:
    """The fake model: each item's program for the phases that ask for code (whatever their wording),
    the documents by name, "<INFO> Finished" for every decision; the bare row's replies by item."""
    text = message_text(body["messages"][-1])
    dice = "Dice_Roller" in text or "roll_two" in text
    if "Reply with every file of the program" in text:
        return BARE_STUB if dice else BARE_CRASH
    if EDIT_FORMAT_HELP.splitlines()[0] in text:
        return DICE_CODE if dice else WORDS_CODE
    if "README.md" in text:
        return "# The program\n\nRun it with `python main.py`.\n"
    if "requirements.txt" in text:
        return "No third-party package is needed."
    return "<INFO> Finished"


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLM]:
    fake = FakeLLM().start_in_thread()
    fake.default_reply = scripted_reply
    yield fake
    fake.stop_thread()


@pytest.fixture
def engine_daemon(llm: FakeLLM) -> Iterator[DaemonProcess]:
    home = Path(tempfile.mkdtemp(prefix="trs-", dir="/tmp"))
    env = daemon_env(home, **llm.env(), TROUPE_EXECUTOR="daemon.jobs.engine:EngineExecutor", TROUPE_EXPERIENCE="off")
    daemon = DaemonProcess(home, env).start()
    yield daemon
    daemon.stop()
    shutil.rmtree(home, ignore_errors=True)


async def test_the_build_suite_end_to_end_at_two_items_scores_both_rows_the_same_way(engine_daemon, llm, tmp_path):
    suite = load_suite("build", write_srdd(tmp_path / "srdd"))
    async with engine_daemon.client() as client:
        ctx = DaemonContext(client)
        try:
            results = await run_suite(suite, ctx, rows=("team", "bare"), limit=2)
        finally:
            await ctx.close()

    by = {(r.item, r.row): r for r in results}
    assert [(r.item, r.row) for r in results] == [("Game/Dice_Roller", "team"), ("Game/Dice_Roller", "bare"),
                                                  ("Tools/Word_Tally", "team"), ("Tools/Word_Tally", "bare")]
    dice_team, dice_bare = by["Game/Dice_Roller", "team"], by["Game/Dice_Roller", "bare"]
    words_team, words_bare = by["Tools/Word_Tally", "team"], by["Tools/Word_Tally", "bare"]
    # the team's programs are complete, run, and the dice's own tests pass
    assert dice_team.solved and words_team.solved, (dice_team.error, words_team.error)
    assert {k: dice_team.scores[k] for k in ("complete_chatdev", "runs_chatdev", "complete", "runs", "tests_pass")} \
        == dict.fromkeys(("complete_chatdev", "runs_chatdev", "complete", "runs", "tests_pass"), 1)
    assert "tests/test_main.py" in dice_team.detail["files"] and words_team.detail["tests"] == "none"
    # the bare model's stub fails both completeness checks; its crash fails both executability checks
    assert not dice_bare.solved and dice_bare.scores["complete_chatdev"] == 0 and dice_bare.scores["complete"] == 0
    assert dice_bare.detail["unfinished"] == ["main.py:1: function roll_two() has no implementation"]
    assert not words_bare.solved and words_bare.scores["runs_chatdev"] == 0 and words_bare.scores["runs"] == 0
    assert words_bare.scores["complete"] == 1 and "AttributeError" in words_bare.detail["runs"]
    # one plain call with the same requirement for the bare row; the team ran its chain
    # (the team's coding phase is asked in the same words, under its programmer role)
    asked = llm.prompts_containing("Reply with every file of the program")
    bare_prompts = [p for p in asked if p.body["messages"][0]["role"] == "user"]
    assert len(asked) == 4 and {p.last_user for p in asked} == {p.last_user for p in bare_prompts}
    assert len(bare_prompts) == 2 and all("`python main.py` starts the program" in p.last_user for p in bare_prompts)
    assert dice_bare.calls == 1 and dice_bare.prompt_tokens > 0 and dice_bare.completion_tokens > 0
    assert dice_team.calls > dice_bare.calls and dice_team.prompt_tokens > dice_bare.prompt_tokens
    # the paper's Quality, with ChatDev's scores and with ours
    team, bare = quality([dice_team, words_team]), quality([dice_bare, words_bare])
    consistency = (dice_team.scores["consistency"] + words_team.scores["consistency"]) / 2
    assert team == {"quality_chatdev": round(consistency, 4), "quality": round(consistency, 4)}
    assert bare["quality_chatdev"] == pytest.approx(0.5 * 0.5 * (dice_bare.scores["consistency"]
                                                                 + words_bare.scores["consistency"]) / 2, abs=1e-4)
