"""``troupe/experience``: the language server searches what the team has learnt (the extension's
Open Experience asks it, and needs no CLI); bad queries get JSON-RPC errors."""

from __future__ import annotations

from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.daemon.conftest import DaemonProcess
from tests.lsp.conftest import new_repo


async def test_the_server_answers_an_experience_search_from_the_daemon(
        engine_daemon: DaemonProcess, open_editor: Any) -> None:
    async with engine_daemon.client() as client:
        added = await client.import_experience([
            {"pool": "learning", "key": "review of app.py", "value": "prefer pathlib over os.path in this repo"},
            {"pool": "instructor", "key": "a failing test", "value": "run pytest -x before changing the parser"}])
    assert added.added == 2
    root = new_repo(engine_daemon.home, "learnt")
    editor = await open_editor(engine_daemon.home, [root])
    await editor.registered(root)

    found = await editor.client.protocol.send_request_async("troupe/experience", {"query": "pathlib", "limit": 5})
    assert found.query == "pathlib"
    assert [hit.text for hit in found.hits] == ["prefer pathlib over os.path in this repo"]
    nothing = await editor.client.protocol.send_request_async("troupe/experience", {"query": "kubernetes"})
    assert nothing.hits == []

    for params, words in (({"query": "  "}, "query is empty"), ({"query": "x", "limit": 0}, "limit must be")):
        with pytest.raises(JsonRpcException) as caught:
            await editor.raw_request("troupe/experience", params)
        assert caught.value.code == types.ErrorCodes.InvalidParams.value and words in caught.value.message
