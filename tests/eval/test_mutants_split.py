"""``troupe eval mutants --experience-split`` against a real daemon with experience on and the fake
LLM: the team learns on the first half of one repository's kept mutants, in order, then runs the
held-out second half with experience off and on. The held-out "on" jobs read what the learning
half's jobs left; what the team learns is what it saw and did itself: never a mutant's identity,
and never the original line it had to find (the unmutated file the eval reviews for false
positives holds it, so that review adds no experience)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from daemon.eval.fix import FixSuite
from daemon.eval.mutants import MutantsSuite
from daemon.eval.runner import DaemonContext
from daemon.eval.split import SplitReport, halves, run_split, split_order
from daemon.eval.suite import Item
from tests.daemon.conftest import DaemonProcess
from tests.eval.conftest import MODEL, ArmPrompts, last_user
from tests.eval.test_mutants_suite import OPS, make_repo
from tests.fakes.llm_server import FakeLLM

EXPERIENCE = "Experience from similar earlier tasks"
PEOPLE = "What the people of this repository said"
SEED = 1  # two kept mutants, both of `if x > high:` (line 7): ReplaceComparisonOperator_Gt_LtE, then AddNot


def own_part(prompt: str) -> str:
    """The prompt before any experience block: what the job itself is about."""
    return prompt.split(EXPERIENCE)[0].split(PEOPLE)[0]


def rewritten(original: str) -> str:
    """The team's own fix: the original meaning, written without spaces around the comparison (so the
    original line's text is never the team's output)."""
    return re.sub(r"\s*([<>]=?|[!=]=)\s*", r"\1", original)


def team_model(items: list[Item], *, verbatim: bool = False) -> Callable[[dict[str, Any]], str]:
    """The reviewer points at the mutated line (line 13 of a file with no mutant: a false positive);
    the fixer rewrites the mutated line as :func:`rewritten` says (``verbatim``: puts the original line
    back as it was); anything else gets one sentence."""
    def reply(body: dict[str, Any]) -> str:
        prompt = last_user(body)
        mine = own_part(prompt)
        mutant = next((i for i in items if i.data["mutated"] in mine), None)
        if "Find the bugs" in prompt:
            line = 13 if mutant is None else mutant.data["line"]
            return f"LINE: {line}\nBUG: the comparison is the wrong way round\nFIX: compare the other way"
        if "so the tests pass" in prompt and mutant is not None:
            lines = mutant.data["text"].splitlines()
            original = mutant.data["original"]
            lines[mutant.data["line"] - 1] = original if verbatim else rewritten(original)
            return "calc/ops.py\n```python\n" + "\n".join(lines) + "\n```\n"
        return "The comparison in clamp is wrong."
    return reply


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_repo(tmp_path_factory.mktemp("split") / "repo")


def test_mutants_split_in_order_and_the_other_suites_alternate() -> None:
    items = [Item(id=str(n)) for n in range(5)]
    assert [[i.id for i in half] for half in halves(items, "ordered")] == [["0", "1", "2"], ["3", "4"]]
    assert [[i.id for i in half] for half in halves(items)] == [["0", "2", "4"], ["1", "3"]]
    assert split_order(MutantsSuite) == "ordered" and split_order(FixSuite) == "alternate"

    class Odd:
        name, split_order = "odd", "backwards"

    with pytest.raises(ValueError, match="'odd' declares split_order 'backwards'"):
        split_order(Odd())


async def test_the_held_out_half_reads_what_the_learning_half_of_the_same_repository_left_and_never_the_fix(
        repo: Path, llm: FakeLLM, learning_daemon: DaemonProcess) -> None:
    suite = MutantsSuite(repo, n=2, seed=SEED)
    first, second = await suite.prepare()
    assert first.data["line"] == second.data["line"] == 7, (first.id, second.id)
    original = first.data["original"].strip()
    assert original not in first.data["text"] and original in OPS, "the learning mutant's fix is its original line"
    llm.reset()
    llm.default_reply = team_model([first, second])
    report = SplitReport("mutants", MODEL, "abc", [first.id], [second.id], suite.score_names, order="ordered")
    prompts = ArmPrompts(llm)  # each result with the prompts its jobs sent

    async with learning_daemon.client() as client:
        ctx = DaemonContext(client, model=MODEL, job_timeout=60, poll=0.05)
        try:
            await run_split(suite, ctx, report, on_result=prompts)
            store = await client.export_experience()  # every workspace's, before the run forgets them
            held_on = [r for job in prompts[2][0].result.jobs for r in await client.retrievals(job_id=job)]
        finally:
            await ctx.close()

    assert [(a.half, a.experience, a.result.item) for a, _ in prompts] == [
        ("learn", "on", first.id), ("held-out", "off", second.id), ("held-out", "on", second.id)]
    for arm, _ in prompts:
        assert arm.result.status == "ok" and arm.result.solved, (arm.half, arm.experience, arm.result.error)
        assert arm.result.scores["caught"] == 1, (arm.half, arm.experience)
        # every arm is a run of its own: the unmutated file is reviewed for false positives in each
        assert arm.result.scores["clean_files"] == 1 and arm.result.scores["false_positives"] == 1, arm.half
    assert report.learnt, "the learning half's jobs were mined into the run's store"
    assert {row["workspace_id"] for row in store} == {store[0]["workspace_id"]} != {None}, "one store, the run's"

    learn, off, on = (sent for _, sent in prompts)
    assert not any(EXPERIENCE in p for p in learn + off), "nothing was learnt before, or it was off"
    assert any(EXPERIENCE in p for p in on), "the held-out jobs read what the learning half left"
    assert prompts[2][0].experience_used and prompts[1][0].experience_used == 0
    assert any(rewritten(first.data["original"]).strip() in p for p in on), "the team's own fix came back"
    # each retrieval is logged with why it matched: its use, the words it shares with the query, the cosine
    assert held_on and {r.why for r in held_on} <= {"hint", "solution", "example", "workflow"}, held_on
    assert all(r.matched and r.relevance is not None and r.relevance > 0 for r in held_on), held_on
    assert all(r.job_id in prompts[2][0].result.jobs and r.pool for r in held_on)
    # the held-out mutant's line as it was is not in what reached it (the team wrote its fix otherwise)
    assert [a.answer_in_experience for a, _ in prompts] == [None, None, False]
    assert report.to_json()["summary"][2]["answer_in_experience"] == "0/1"

    # What the team learnt is what it saw and did: never the original line it had to find, which the
    # eval alone knows (and its review of the unmutated file shows), nor what the mutant is.
    dumped = json.dumps(store)
    assert original not in dumped
    hidden = [first.id, second.id, first.data["operator"].removeprefix("core/"), "AddNot", "mutant"]
    for text in hidden:
        assert text.lower() not in dumped.lower(), text
        assert not any(text.lower() in json.dumps(r.body).lower() for r in llm.requests), text
    assert any(original in p for p in learn), "the learning half's review of the unmutated file did show it"


def test_troupe_eval_mutants_experience_split_prints_a_row_per_half_and_saves_the_order(
        repo: Path, llm: FakeLLM, learning_daemon: DaemonProcess, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from daemon.cli.main import main

    for name in ("TROUPE_HOME", "TROUPE_AUTOSTART", "XDG_CONFIG_HOME"):
        monkeypatch.setenv(name, learning_daemon.env[name])
    monkeypatch.delenv("TROUPE_SERVER_URL", raising=False)
    llm.reset()
    llm.default_reply = team_model(MutantsSuite(repo, n=2, seed=SEED).items(), verbatim=True)
    out = tmp_path / "split.json"

    assert main(["eval", "mutants", "--repo", str(repo), "-n", "2", "--seed", str(SEED), "--experience-split",
                 "--model", MODEL, "--job-timeout", "60", "--out", str(out)]) == 0

    table = capsys.readouterr().out
    assert "1 items learn, 1 held out (ordered)" in table, table
    assert [line.split("  ")[0].strip() for line in table.splitlines()[2:5]] == [
        "learn (on)", "held-out (off)", "held-out (on)"], table
    saved = json.loads(out.read_text())
    assert saved["order"] == "ordered" and saved["halves"]["learn"] == [saved["results"][0]["item"]]
    assert [(s["half"], s["experience"], s["scores"]["clean_files"]) for s in saved["summary"]] == [
        ("learn", "on", 1), ("held-out", "off", 1), ("held-out", "on", 1)]
    assert saved["results"][0]["experience_used"] == 0, "a run's store starts empty, whatever the daemon learnt before"
    # the learning half's fix put the line back as it was, and the held-out mutant replaced that same line:
    # its answer reached it as experience (the team's own output), and the table says so
    assert [r["answer_in_experience"] for r in saved["results"]] == [None, None, True]
    assert [s["answer_in_experience"] for s in saved["summary"]] == ["—", "—", "1/1"]
    assert "answer in experience" in table.splitlines()[1]
