"""``troupe.ask`` end to end: the team works on a change (the change chain on the fake LLM),
the editor sees work-done progress begin / report (phase and role) / end, is offered the
proposed change with Apply / Discard, and Apply arrives as a ``workspace/applyEdit``."""

from __future__ import annotations

from typing import Any

from lsprotocol import types

from tests.daemon.conftest import DaemonProcess
from tests.fakes.llm_server import FakeLLM
from tests.lsp.conftest import PLANTED, apply_text_edits, new_repo, until, uri_of

PLAN = "I will fix the subtraction.\n<INFO> calc.py: add() must return a + b"
CODE = """calc.py
```python
<<<<<<< SEARCH
    return a - b
=======
    return a + b
>>>>>>> REPLACE
```
"""

TESTS = "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"


async def test_ask_for_a_change_reports_progress_and_applies_the_proposal_through_apply_edit(
        engine_daemon: DaemonProcess, llm: FakeLLM, open_editor: Any) -> None:
    llm.add_rule(PLAN, user="List the files to change", times=1)
    llm.add_rule(CODE, user="Make the change.", times=1)
    llm.add_rule("<INFO> Finished", user="Give the ONE most important problem", times=1)
    root = new_repo(engine_daemon.home, "ask", {"calc.py": PLANTED, "test_calc.py": TESTS})
    editor = await open_editor(engine_daemon.home, [root])
    editor.choose = lambda params: "Apply" if params.message.startswith("Troupe proposes a change") else None
    await editor.registered(root)
    calc = root / "calc.py"
    editor.open(calc, PLANTED)

    selection = types.Range(start=types.Position(line=4, character=0), end=types.Position(line=4, character=16))
    answer = await editor.command("troupe.ask", {"prompt": "add() is wrong, fix it", "file": uri_of(calc),
                                                 "selection": selection, "mode": "change"})
    job_id = answer["jobId"]

    applied = await until(lambda: editor.applied, timeout=60, what="the apply-edit request")
    (params,) = applied
    assert params.label.startswith("Troupe: change ")
    (doc_edit,) = params.edit.document_changes
    assert doc_edit.text_document.uri == uri_of(calc) and doc_edit.text_document.version == 1
    assert apply_text_edits(PLANTED, list(doc_edit.edits)) == PLANTED.replace("a - b", "a + b")
    assert calc.read_text() == PLANTED  # the server never writes the user's files itself

    (offer,) = [r for r in editor.requests if r.message.startswith("Troupe proposes a change")]
    assert [a.title for a in offer.actions] == ["Apply", "Discard", "Later"]
    (proposed,) = editor.notifications("troupe/changeProposed")
    assert proposed.jobId == job_id and proposed.files == ["calc.py"] and "+    return a + b" in proposed.diff

    (token,) = [t for t in editor.client.progress_reports if job_id in str(t)]
    reports = await until(lambda: (r := editor.client.progress_reports[token]) and
                          isinstance(r[-1], types.WorkDoneProgressEnd) and r, what="the end of progress")
    assert isinstance(reports[0], types.WorkDoneProgressBegin) and reports[0].title == "Troupe: change"
    messages = [r.message for r in reports[1:-1]]
    assert "plan · programmer" in messages and "code · programmer" in messages
    assert reports[-1].message == "succeeded"
    finished = await until(lambda: editor.notifications("troupe/jobFinished"), what="troupe/jobFinished")
    assert finished[0].job.id == job_id and finished[0].job.state == "succeeded"
    asked = llm.prompts_containing("add() is wrong, fix it")
    assert asked and "return a - b" in asked[0].prompt  # the selected code reached the team


async def test_the_teams_question_reaches_the_user_and_the_answer_reaches_the_team(
        engine_daemon: DaemonProcess, llm: FakeLLM, open_editor: Any) -> None:
    llm.add_rule("ASK_HUMAN: Should add() accept floats too?", user="Question: may add() change", times=1)
    llm.add_rule("<INFO> Yes: add() in calc.py:4 works for floats as well.", user="The user answers: Yes.", times=1)
    root = new_repo(engine_daemon.home, "question", {"calc.py": PLANTED})
    editor = await open_editor(engine_daemon.home, [root])
    editor.choose = lambda params: "Yes" if params.message.startswith("Troupe asks:") else None
    await editor.registered(root)

    job_id = (await editor.command("troupe.ask", {"prompt": "may add() change for floats?",
                                                  "file": uri_of(root / "calc.py")}))["jobId"]
    answer = await until(lambda: editor.shown("works for floats"), timeout=30, what="the team's answer")
    (request,) = editor.requests
    assert request.message == "Troupe asks: Should add() accept floats too?"
    assert [a.title for a in request.actions] == ["Yes", "No", "Let the team decide"]
    (question,) = editor.notifications("troupe/question")
    assert question.jobId == job_id and question.text == "Should add() accept floats too?"
    assert answer == ["Troupe: Yes: add() in calc.py:4 works for floats as well."]
    assert llm.prompts_containing("The user answers: Yes.")


async def test_cancelling_the_progress_in_the_editor_cancels_the_job(
        engine_daemon: DaemonProcess, llm: FakeLLM, open_editor: Any) -> None:
    root = new_repo(engine_daemon.home, "cancel", {"calc.py": PLANTED})
    editor = await open_editor(engine_daemon.home, [root])
    await editor.registered(root)
    llm.fail_next("hang", seconds=20)  # the team thinks for a long time
    job_id = (await editor.command("troupe.ask", {"prompt": "explain add()", "file": uri_of(root / "calc.py")}))[
        "jobId"]
    token = await until(lambda: next((t for t in editor.client.progress_reports if job_id in str(t)), None),
                        what="the progress token")
    await until(lambda: any(getattr(r, "message", "") == "answer" for r in editor.client.progress_reports[token]),
                what="the answer phase to start")
    editor.client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))

    finished = await until(lambda: editor.notifications("troupe/jobFinished"), what="the job to end")
    assert finished[0].job.id == job_id and finished[0].job.state == "cancelled"
    assert editor.client.progress_reports[token][-1].message.startswith("cancelled")
