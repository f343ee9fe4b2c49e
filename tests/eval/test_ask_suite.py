"""The ask suite on two questions, through the daemon and the fake LLM, graded by rule; and the
``troupe eval`` command itself: the table, the JSON with the model, the commit and the items."""

from __future__ import annotations

import json
import subprocess
import sys

from daemon.eval.ask import AskSuite, grade
from daemon.eval.report import source_commit
from daemon.eval.runner import run_suite
from tests.eval.conftest import MODEL, last_user

ANSWERS = {"What does the function add": "It returns the sum of a and b (calc.py:2).",
           "Which file defines the class Warehouse": "pantry/orders/cart.py:12"}  # a wrong file


def model_reply(body: dict) -> str:
    prompt = last_user(body)
    return next(answer for question, answer in ANSWERS.items() if question in prompt)


async def test_answers_are_graded_by_rule_on_both_rows(llm, ctx) -> None:
    for question in ANSWERS:
        llm.add_rule(model_reply, user=question)
    results = await run_suite(AskSuite(), ctx, rows=("team", "bare"), limit=2)
    assert [(r.item, r.row, r.solved) for r in results] == [
        ("calc-add", "team", True), ("calc-add", "bare", True),
        ("where-warehouse", "team", False), ("where-warehouse", "bare", False)]
    bare_prompt = next(r for r in llm.requests if "Which file defines the class Warehouse" in r.prompt
                       and "file by file" in r.prompt).prompt
    assert "pantry/inventory/warehouse.py:\n  1|" in bare_prompt, "the bare model sees every file, numbered"


def test_the_calc_question_needs_the_sum_and_not_a_copied_citation() -> None:
    calc = AskSuite().items()[0].data
    assert grade("add returns a + b.", calc) and grade("It returns the sum of its two arguments.", calc)
    assert not grade("`calc.py:13`", calc) and not grade("", calc)
    assert not grade("the sum " + "and more " * 100, calc), "an answer past max_chars is not an answer"


def test_a_reject_pattern_fails_an_answer_that_hedges() -> None:
    bulk = next(i.data for i in AskSuite().items() if i.id == "eval-bulk-12")
    assert grade("10", bulk) and not grade("5 or 10", bulk)


def test_a_number_ending_a_sentence_counts_but_one_inside_a_longer_number_does_not() -> None:
    items = {i.id: i.data for i in AskSuite().items()}
    assert grade("The value of bulk_discount(7) is 5.", items["eval-bulk-7"])
    assert grade("The default value of the quantity argument of Cart.add is 1.", items["default-quantity"])
    assert not grade("It is 5.5", items["eval-bulk-7"]) and not grade("50", items["eval-bulk-7"])
    assert not grade("line 200", items["line-with-tax"]) and grade("It is on line 20.", items["line-with-tax"])


def test_there_are_at_least_thirty_questions_with_unique_ids() -> None:
    ids = [item.id for item in AskSuite().items()]
    assert len(ids) >= 30 and len(set(ids)) == len(ids)


def test_troupe_eval_prints_the_table_and_writes_reproducible_json(llm, ctx, eval_daemon, tmp_path) -> None:
    for question in ANSWERS:
        llm.add_rule(model_reply, user=question)
    out = tmp_path / "ask.json"
    env = {**eval_daemon.env, "TROUPE_AUTOSTART": "0"}
    done = subprocess.run([sys.executable, "-m", "daemon.cli.main", "eval", "ask", "--limit", "2", "--model", MODEL,
                           "--out", str(out)], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    title, head, team, bare = done.stdout.strip().splitlines()
    assert title.startswith(f"troupe eval ask — {MODEL} @ ") and "2 items" in title
    assert head.split()[:2] == ["row", "solved"]
    assert team.split()[:2] == ["team", "1/2"] and bare.split()[:2] == ["bare", "1/2"]
    assert "ask 4/4 where-warehouse bare: unsolved" in done.stderr  # the progress, one line per item off a tty
    data = json.loads(out.read_text())
    assert data["model"] == MODEL and data["items"] == ["calc-add", "where-warehouse"]
    assert data["commit"] == source_commit() and data["summary"]["team"]["solved"] == 1
    assert [r["row"] for r in data["results"]] == ["team", "bare", "team", "bare"]


def test_a_run_cut_short_keeps_what_finished_and_resume_runs_only_the_rest(llm, ctx, eval_daemon, tmp_path) -> None:
    for question in ANSWERS:
        llm.add_rule(model_reply, user=question)
    out = tmp_path / "ask.json"
    env = {**eval_daemon.env, "TROUPE_AUTOSTART": "0"}
    command = [sys.executable, "-m", "daemon.cli.main", "eval", "ask", "--limit", "2", "--model", MODEL]
    done = subprocess.run([*command, "--out", str(out)], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    whole = json.loads(out.read_text())
    cut = {**whole, "results": whole["results"][:3], "interrupted": True}  # as the file was after the 3rd result
    out.write_text(json.dumps(cut))
    asked = len(llm.requests)

    again = subprocess.run([*command, "--resume", str(out)], env=env, capture_output=True, text=True, timeout=120)

    assert again.returncode == 0, again.stderr
    assert "ask 4/4 where-warehouse bare" in again.stderr and "1/4" not in again.stderr  # only the 4th ran
    assert len(llm.requests) == asked + 1  # one bare call
    data = json.loads(out.read_text())
    assert not data["interrupted"] and [(r["item"], r["row"]) for r in data["results"]] == [
        (r["item"], r["row"]) for r in whole["results"]]
    assert [data["summary"][row]["solved"] for row in ("team", "bare")] == [1, 1]

    other = {**cut, "commit": "0" * 40}
    out.write_text(json.dumps(other))
    refused = subprocess.run([*command, "--resume", str(out)], env=env, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and f"it holds commit {'0' * 40}" in refused.stderr
    out.write_text(json.dumps(cut))
    one = [arg if arg != "2" else "1" for arg in command]
    refused = subprocess.run([*one, "--resume", str(out)], env=env, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "other items" in refused.stderr
