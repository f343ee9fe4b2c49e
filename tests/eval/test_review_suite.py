"""The review suite on two HumanEvalFix items, through the daemon and the fake LLM: a finding on
the bug line is caught and its fix makes the tests pass, one elsewhere is not caught, findings on
the canonical file are false positives, lint never counts — and the bare row scores the same."""

from __future__ import annotations

import json

from daemon.api.protocol import FindingInfo
from daemon.eval.humanevalfix import covers_bug, load_items
from daemon.eval.report import EvalReport
from daemon.eval.review import ReviewSuite
from daemon.eval.runner import run_suite
from daemon.eval.suite import JobRun
from tests.eval.conftest import MODEL, last_user

# what the fake model says about each file: (line, quoted code, fix) per finding
SPOTS = {
    "distance = elem - elem2": [(15, "distance = elem - elem2", "distance = abs(elem - elem2)")],  # the bug line
    "distance = abs(elem - elem2)": [],
    "if current_depth < 0:": [(12, "result = []", "result = list()")],  # the bug is on line 24
    "if current_depth == 0:": [(13, "current_string = []", "current_string = list()")],  # a false positive
}


def model_reply(body: dict) -> str:
    prompt = last_user(body)
    spots = next((spots for marker, spots in SPOTS.items() if marker in prompt), None)
    if spots is None:  # the review's reproduce call goes on with its conversation: the code is not sent again
        return "I cannot write a test for that."
    if prompt.startswith("Please review"):  # the bare row's prompt asks for the reviewer's format
        return "\n\n".join(f"LINE: {n}\n**Bug:** looks wrong\nFIX: {fix}" for n, _, fix in spots) or "NONE"
    findings = [{"start_line": n, "end_line": n, "severity": "major", "message": "this looks wrong",
                 "quote": quote, "replacement": fix} for n, quote, fix in spots]
    return f"```json\n{json.dumps(findings)}\n```"


async def test_findings_on_the_bug_line_count_and_both_rows_are_scored_alike(llm, ctx) -> None:
    llm.add_rule(model_reply, user="elem")
    llm.add_rule(model_reply, user="current_depth")
    suite = ReviewSuite()
    results = await run_suite(suite, ctx, rows=("team", "bare"), limit=2)

    by = {(r.item, r.row): r for r in results}
    for row in ("team", "bare"):
        first, second = by["Python/0", row], by["Python/1", row]
        assert (first.solved, first.scores) == (True, {"caught": 1, "fixed": 1, "false_positives": 0, "findings": 1}), \
            (row, first)
        assert (second.solved, second.scores) == (False, {"caught": 0, "fixed": 0, "false_positives": 1,
                                                           "findings": 1}), (row, second)
        assert first.status == second.status == "ok"
        assert first.prompt_tokens > 0 and first.completion_tokens > 0 and first.seconds > 0
    assert by["Python/0", "bare"].calls == 2  # one plain call per file: buggy and canonical
    assert by["Python/0", "team"].calls >= 2
    assert {r.body["model"] for r in llm.requests} == {MODEL.removeprefix("openai/")}

    report = EvalReport("review", MODEL, "abc", ["Python/0", "Python/1"], ["team", "bare"], suite.score_names, results)
    team, bare = report.summaries()
    assert (team.solved, team.scores, team.failed) == (bare.solved, bare.scores, bare.failed) == (
        1, {"caught": 1, "fixed": 1, "false_positives": 1, "findings": 2}, 0)
    assert "1/2" in report.table().splitlines()[2]


def test_a_finding_counts_within_one_line_of_the_bug_and_at_most_three_lines_long() -> None:
    item = load_items()[0]  # the bug is line 15
    assert covers_bug(item, 15, 15) and covers_bug(item, 14, 14) and covers_bug(item, 16, 16)
    assert covers_bug(item, 14, 16)
    assert not covers_bug(item, 17, 17) and not covers_bug(item, 12, 13)
    assert not covers_bug(item, 13, 17), "a five-line finding does not pin the bug down"


class PreparedContext:
    """A context whose review jobs return prepared findings (no daemon): for what the suite keeps."""

    model = None

    def __init__(self, findings: list[FindingInfo]) -> None:
        self.findings = findings

    async def workspace(self, files, name="item"):  # type: ignore[no-untyped-def]
        from pathlib import Path

        return Path("/nowhere")

    async def job(self, request):  # type: ignore[no-untyped-def]
        return JobRun("j", "review", "succeeded", findings=self.findings)


async def test_a_lint_finding_on_the_bug_line_is_not_caught() -> None:
    lint = FindingInfo(1, "has_close_elements.py", "minor", "F841 unused", 15, end_line=15, rule="F841")
    result = await ReviewSuite().run(load_items()[0], "team", PreparedContext([lint]))
    assert result.scores["caught"] == 0 and not result.solved
