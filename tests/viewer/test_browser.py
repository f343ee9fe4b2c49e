"""The run viewer in a real browser: a live job fills the page as its events arrive, a model reply
carrying <script> and <img onerror> shows as text and runs nothing, the diff renders, and a
replay from the store shows what the live page showed. Screenshots go to test-artifacts/."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from daemon.api.protocol import SubmitJob
from tests.daemon.conftest import DaemonProcess
from tests.fakes.llm_server import FakeLLM
from tests.viewer.conftest import (
    ARTIFACTS,
    Gate,
    browser_missing,
    make_repo,
    run,
    script_change_job,
    submit,
    viewer_link,
)

WAIT_MS = 60_000  # the first model call waits for litellm's import on a busy machine
pytestmark = pytest.mark.skipif(browser_missing() is not None, reason=browser_missing() or "")


@pytest.fixture
def page(chromium: Any) -> Any:
    context = chromium.new_context(viewport={"width": 1440, "height": 1000})
    page = context.new_page()
    page.console_errors = []  # type: ignore[attr-defined]
    page.on("console", lambda msg: msg.type == "error" and page.console_errors.append(msg.text))
    page.on("pageerror", lambda exc: page.console_errors.append(str(exc)))
    page.on("response", lambda r: r.status >= 400 and page.console_errors.append(f"{r.status} {r.url}"))
    yield page
    context.close()


def content(page: Any) -> str:
    return page.evaluate("window.troupeViewer.contentText()")


def test_a_live_job_appears_as_it_runs_runs_no_injected_script_and_replays_the_same(
        viewer_daemon: DaemonProcess, viewer_llm: FakeLLM, page: Any, tmp_path: Path) -> None:
    gate = Gate()
    script_change_job(viewer_llm, gate)
    repo = make_repo(tmp_path, "repo")
    try:
        job_id = run(submit(viewer_daemon, SubmitJob(kind="change", workspace=str(repo),
                                                     prompt="add() should take an optional third number")))
        status, link = run(viewer_link(viewer_daemon, job_id[:8]))
        assert status == 200, link
        page.goto(link["url"])
        assert "token=" not in page.url and page.url.endswith(f"/viewer/jobs/{job_id}")

        # Live, while the code phase waits on the gate: phases, messages, the question and its answer.
        page.wait_for_selector("#job[data-mode=live]", timeout=WAIT_MS)
        page.wait_for_selector('.step.done[data-phase="plan"]', timeout=WAIT_MS)
        page.wait_for_selector('.step.running[data-phase="code"]', timeout=WAIT_MS)
        assert page.inner_text("#job-state") == "running"
        conversation = page.locator("#conversation")
        assert conversation.get_by_text("Which Python versions must add() support?").count() >= 1
        assert page.locator("#qa").get_by_text("Python 3.11 and newer.").count() == 1
        roles = set(page.eval_on_selector_all("#conversation .msg", "els => els.map(e => e.dataset.role)"))
        assert {"cto", "programmer"} <= roles

        # The injected markup is visible as text, and nothing of it ran.
        injected = conversation.get_by_text('<script>window.__pwned = 1; document.title = "pwned"</script>')
        assert injected.count() == 1 and injected.is_visible()
        assert conversation.get_by_text('<img src=x onerror="window.__pwned = 2">').count() == 1
        assert page.evaluate("window.__pwned") is None
        assert page.title() != "pwned"
        assert page.locator("#conversation script, #conversation img").count() == 0
        before_code = len(page.locator("#conversation .msg").all())
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "viewer-running.png"))
        gate.opened.set()

        # The rest arrives live: the edit, the tests, the diff, the final state.
        page.wait_for_selector('.step.end.succeeded', timeout=WAIT_MS)
        page.wait_for_selector("#job[data-mode=done]", timeout=WAIT_MS)
        assert len(page.locator("#conversation .msg").all()) > before_code
        assert page.inner_text("#job-state") == "succeeded"
        tests = page.locator('#tests li[data-tool="tests"]')
        assert tests.count() == 1 and "1 passed" in tests.inner_text() and "PASS" in tests.inner_text()
        added = page.locator("#diff tr.add td.src").all_inner_texts()
        removed = page.locator("#diff tr.del td.src").all_inner_texts()
        assert "def add(a, b, c=0):" in added and "def add(a, b):" in removed
        assert '    """Add two or three numbers; <b>not</b> HTML."""' in added
        assert page.locator("#diff b").count() == 0
        assert page.locator("#diff .diff-name").all_inner_texts() == ["app.py"]
        assert page.locator("#chart svg circle").count() >= 5
        assert re.search(r"[\d,]+ tokens · \$0\.0000 · \d+ call\(s\)", page.inner_text("#usage-totals"))
        live = content(page)
        page.screenshot(path=str(ARTIFACTS / "viewer-live.png"), full_page=True)

        # A replay from the store shows the same content; at 4x it builds up step by step.
        page.goto(f"{page.url.split('?')[0]}?speed=instant")
        page.wait_for_selector("#job[data-mode=replayed]", timeout=WAIT_MS)
        assert content(page) == live
        final_messages = len(page.locator("#conversation .msg").all())
        page.click('#speeds button[data-speed="4"]')
        page.wait_for_selector("#job[data-mode=replaying]", timeout=WAIT_MS)
        assert len(page.locator("#conversation .msg").all()) < final_messages
        page.wait_for_selector("#job[data-mode=replayed]", timeout=WAIT_MS)
        assert content(page) == live
        assert page.evaluate("window.__pwned") is None and page.title() != "pwned"
        page.screenshot(path=str(ARTIFACTS / "viewer-replay.png"), full_page=True)
        assert page.console_errors == []
    finally:
        gate.opened.set()
        viewer_llm.reset()


def test_the_job_list_links_to_each_job(viewer_daemon: DaemonProcess, page: Any, tmp_path: Path) -> None:
    repo = make_repo(tmp_path, "repo")
    job_id = run(submit(viewer_daemon, SubmitJob(kind="ask", workspace=str(repo), prompt="where is add()?")))
    status, link = run(viewer_link(viewer_daemon))
    assert status == 200 and "/viewer/?token=" in link["url"]
    page.goto(link["url"])
    entry = page.locator(f'#job-list li[data-job-id="{job_id}"]')
    entry.wait_for(timeout=WAIT_MS)
    assert "where is add()?" in entry.inner_text()
    entry.locator("a").click()
    page.wait_for_url(f"**/viewer/jobs/{job_id}", timeout=WAIT_MS)
    page.wait_for_selector(".step.end.succeeded", timeout=WAIT_MS)
    assert page.inner_text("#job-title") == "ask: where is add()?"  # the daemon's job title
    assert page.locator('#timeline .step[data-phase="answer"]').count() == 1
    assert page.console_errors == []
    # Defence in depth: the CSP refuses inline script, so even a script element added to the page does not run.
    ran = page.evaluate("""() => { const s = document.createElement("script");
        s.textContent = "window.__inline = 1"; document.body.append(s); return window.__inline ?? null; }""")
    assert ran is None
    assert any("Content Security Policy" in error for error in page.console_errors)
