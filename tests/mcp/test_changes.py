"""``change`` proposes a diff (nothing written), ``apply_change`` writes it, ``discard_change`` drops it."""

from __future__ import annotations

from pathlib import Path

from tests.daemon.conftest import DaemonProcess
from tests.fakes.llm_server import FakeLLM
from tests.mcp.conftest import CODE, PLAN, PLANTED, ProgressLog, mcp_client, text_of

FIXED = PLANTED.replace("a - b", "a + b")


def script_a_fix(llm: FakeLLM, times: int = 1) -> None:
    llm.add_rule(PLAN, user="List the files to change", times=times)
    llm.add_rule(CODE, user="Make the change.", times=times)
    llm.add_rule("<INFO> Finished", user="Give the ONE most important problem", times=times)


async def test_change_returns_the_diff_and_its_id_and_apply_change_writes_it(
        engine_daemon: DaemonProcess, llm: FakeLLM, repo: Path) -> None:
    script_a_fix(llm)
    progress = ProgressLog()
    async with mcp_client(engine_daemon, repo) as session:
        proposed = await session.call_tool("change", {"request": "add() is wrong, fix it", "files": ["calc.py"]},
                                           progress_callback=progress)
        change = proposed.structured_content["change"]
        text = text_of(proposed)
        assert not proposed.is_error and change["state"] == "proposed" and change["files"] == ["calc.py"]
        assert "+    return a + b" in change["diff"] and "-    return a - b" in change["diff"]
        assert f"Proposed change {change['id']} (proposed) to calc.py:" in text and "```diff" in text
        assert f"`apply_change` tool (change_id '{change['id']}')" in text
        assert "running · plan · programmer" in progress.messages and "running · code · programmer" in progress.messages
        assert (repo / "calc.py").read_text() == PLANTED  # nothing written before apply_change

        applied = await session.call_tool("apply_change", {"change_id": change["id"]})
        assert text_of(applied) == f"Applied change {change['id']} to calc.py."
        assert (repo / "calc.py").read_text() == FIXED

        twice = await session.call_tool("apply_change", {"change_id": change["id"]})
        assert twice.is_error and "Troupe refused the request:" in text_of(twice)
        assert (repo / "calc.py").read_text() == FIXED


async def test_discard_change_leaves_the_files_alone(engine_daemon: DaemonProcess, llm: FakeLLM, repo: Path) -> None:
    script_a_fix(llm)
    async with mcp_client(engine_daemon, repo) as session:
        proposed = await session.call_tool("change", {"request": "add() is wrong, fix it"})
        change_id = proposed.structured_content["change"]["id"]
        discarded = await session.call_tool("discard_change", {"change_id": change_id})
        assert text_of(discarded) == f"Discarded change {change_id}."
        assert discarded.structured_content["change"]["state"] == "discarded"
        refused = await session.call_tool("apply_change", {"change_id": change_id})
        assert refused.is_error and "discarded" in text_of(refused)
        unknown = await session.call_tool("apply_change", {"change_id": "no-such-change"})
        assert unknown.is_error and "no-such-change" in text_of(unknown)
    assert (repo / "calc.py").read_text() == PLANTED
