"""Language-server tests drive ``python -m lsp`` as a subprocess with pytest-lsp's client, against
a real daemon subprocess (the agent engine, pointed at the fake LLM server).

One engine daemon serves the whole session (starting one costs seconds); every test works in
its own git repository under that daemon's TROUPE_HOME. :class:`Editor` is the test's editor:
it records what the server sent (diagnostics, progress, messages, custom notifications,
apply-edit requests) and answers ``window/showMessageRequest`` as scripted.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.protocol import JsonRPCRequestMessage, default_converter
from pygls.uris import from_fs_path
from pytest_lsp import LanguageClient

from lsp.messages import NOTIFICATIONS
from lsp.records import BadParams, read
from lsp.rpc import plain
from tests.daemon.conftest import REPO, DaemonProcess, daemon_env
from tests.fakes.llm_server import FakeLLM

PLANTED = "import os\n\n\ndef add(a, b):\n    return a - b\n"
CONVERTER = default_converter()
BUG_MESSAGE = "add() subtracts: a planted bug"
REVIEW = ('[{"start_line": 5, "severity": "major", "message": "' + BUG_MESSAGE + '", '
          '"quote": "return a - b", "replacement": "    return a + b"}]')


@pytest.fixture(scope="session")
def llm() -> Iterator[FakeLLM]:
    fake = FakeLLM().start_in_thread()
    fake.default_reply = REVIEW
    yield fake
    fake.stop_thread()


def engine_env(home: Path, llm: FakeLLM, **extra: str) -> dict[str, str]:
    return daemon_env(home, **llm.env(), TROUPE_EXECUTOR="daemon.jobs.engine:EngineExecutor",
                      TROUPE_JOBS_CONCURRENCY="2", **extra)


@pytest.fixture(scope="session")
def engine_daemon(llm: FakeLLM) -> Iterator[DaemonProcess]:
    home = Path(tempfile.mkdtemp(prefix="trl-", dir="/tmp"))
    daemon = DaemonProcess(home, engine_env(home, llm, TROUPE_PRELOAD_LLM="1")).start()
    yield daemon
    daemon.kill9()  # a graceful stop costs seconds and is the daemon suite's subject, not ours
    shutil.rmtree(home, ignore_errors=True)


def new_repo(parent: Path, name: str, files: dict[str, str] | None = None) -> Path:
    root = parent / name
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / ".gitignore").write_text("*.log\n")
    for rel, text in (files or {}).items():
        (root / rel).write_text(text)
    return root.resolve()


def uri_of(path: Path) -> str:
    uri = from_fs_path(str(path))
    assert uri is not None
    return uri


async def until(predicate: Callable[[], Any], timeout: float = 30.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        await asyncio.sleep(0.02)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def apply_text_edits(text: str, edits: list[types.TextEdit]) -> str:
    lines = text.splitlines(keepends=True)

    def offset(pos: types.Position) -> int:
        return sum(len(line) for line in lines[:pos.line]) + pos.character

    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[:offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end):]
    return text


class Editor:
    """The pytest-lsp client plus what a test needs to act like an editor."""

    def __init__(self, client: LanguageClient) -> None:
        self.client = client
        self.custom: list[tuple[str, Any]] = []
        self.applied: list[types.ApplyWorkspaceEditParams] = []
        self.requests: list[types.ShowMessageRequestParams] = []
        self.choose: Callable[[types.ShowMessageRequestParams], str | None] = lambda params: None
        self.versions: dict[str, int] = {}
        self.malformed: list[str] = []  # custom notifications that are not their record of lsp/messages.py

    def notifications(self, method: str) -> list[Any]:
        return [params for name, params in self.custom if name == method]

    def shown(self, needle: str) -> list[str]:
        return [m.message for m in self.client.messages if needle in m.message]

    def diagnostics(self, path: Path) -> list[types.Diagnostic]:
        return list(self.client.diagnostics.get(uri_of(path), []))

    def troupe_diagnostics(self, path: Path, message: str) -> list[types.Diagnostic]:
        return [d for d in self.diagnostics(path) if d.source == "troupe" and d.message == message]

    async def status(self) -> Any:
        return await self.client.protocol.send_request_async("troupe/getStatus", {})

    async def registered(self, root: Path, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if str(root) in (await self.status()).workspaces:
                return
            await asyncio.sleep(0.02)
        raise AssertionError(f"{root} was never registered with the daemon")

    def open(self, path: Path, text: str) -> None:
        self.versions[str(path)] = 1
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
            uri=uri_of(path), language_id="python", version=1, text=text)))

    def save(self, path: Path, text: str) -> None:
        """What an editor does on save: the text reaches the disk, then didSave."""
        path.write_text(text)
        self.client.text_document_did_save(types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=uri_of(path))))

    def edit(self, path: Path, start: tuple[int, int], end: tuple[int, int], text: str) -> None:
        self.versions[str(path)] += 1
        rng = types.Range(start=types.Position(line=start[0], character=start[1]),
                          end=types.Position(line=end[0], character=end[1]))
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri_of(path), version=self.versions[str(path)]),
            content_changes=[types.TextDocumentContentChangePartial(range=rng, text=text)]))

    async def raw_request(self, method: str, params: Any) -> Any:
        """A request sent as given, not typed by the client first: how a buggy client talks."""
        msg_id = str(uuid.uuid4())
        future: Future[Any] = Future()
        self.client.protocol._request_futures[msg_id] = future
        self.client.protocol._send_data(JsonRPCRequestMessage(id=msg_id, method=method, params=params,
                                                              jsonrpc="2.0"))
        return await asyncio.wait_for(asyncio.wrap_future(future), 10)

    def raw_notify(self, method: str, params: Any) -> None:
        self.client.protocol._send_data({"jsonrpc": "2.0", "method": method, "params": params})

    async def command(self, name: str, *arguments: Any) -> Any:
        return await self.client.workspace_execute_command_async(types.ExecuteCommandParams(
            command=name, arguments=list(arguments)))


def _command_or_code_action(obj: Any, _: type) -> types.Command | types.CodeAction:
    """lsprotocol reads every code action that carries a command as a bare Command; a Command's
    ``command`` is a string, a CodeAction's is an object."""
    cls = types.Command if isinstance(obj.get("command"), str) else types.CodeAction
    return CONVERTER.structure(obj, cls)


def make_editor() -> Editor:
    client = pytest_lsp.make_test_lsp_client()
    client.protocol._converter.register_structure_hook(types.Command | types.CodeAction, _command_or_code_action)
    editor = Editor(client)
    def received(method: str, params: Any) -> None:
        editor.custom.append((method, params))
        try:
            read(NOTIFICATIONS[method], plain(params))
        except BadParams as exc:
            editor.malformed.append(f"{method}: {exc}")

    for method in NOTIFICATIONS:  # every one the server declares, each read as its record
        client.feature(method)(lambda params, method=method: received(method, params))

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def apply_edit(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        editor.applied.append(params)
        return types.ApplyWorkspaceEditResult(applied=True)

    @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    def message_request(params: types.ShowMessageRequestParams) -> types.MessageActionItem | None:
        editor.requests.append(params)
        title = editor.choose(params)
        return types.MessageActionItem(title=title) if title else None

    return editor


# `troupe lsp`, as editors start it (daemon.cli.main hands its arguments to lsp.app.main);
# `python -m lsp` where a checkout's CLI does not have the sub-command yet.
_CLI_HAS_LSP = "lsp.app" in (REPO / "daemon" / "cli" / "main.py").read_text()
SERVER_COMMAND = [sys.executable, "-m", *(("daemon.cli.main", "lsp") if _CLI_HAS_LSP else ("lsp",))]


def lsp_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TROUPE_", "OPENAI_", "ANTHROPIC_"))}
    env.update({"TROUPE_HOME": str(home), "TROUPE_AUTOSTART": "0", "PYTHONPATH": str(REPO),
                "XDG_CONFIG_HOME": str(home / "config")})
    env.update(extra)
    return env


async def start_editor(home: Path, folders: list[Path], *, capabilities: str = "visual-studio-code",
                       options: dict[str, Any] | None = None, env: dict[str, str] | None = None) -> Editor:
    """``env``: more of the server's environment (a team server's TROUPE_SERVER_URL and TROUPE_TOKEN)."""
    editor = make_editor()
    await editor.client.start_io(*SERVER_COMMAND, env=lsp_env(home, **(env or {})), cwd=str(REPO))
    await editor.client.initialize_session(types.InitializeParams(
        capabilities=pytest_lsp.client_capabilities(capabilities),
        workspace_folders=[types.WorkspaceFolder(uri=uri_of(f), name=f.name) for f in folders],
        initialization_options=options or {}))
    return editor


async def stop_editor(editor: Editor) -> None:
    try:
        await asyncio.wait_for(editor.client.shutdown_session(), 10)
    finally:
        await editor.client.stop()


@pytest.fixture
async def open_editor() -> AsyncIterator[Callable[..., Any]]:
    """``await open_editor(home, [folders], ...)`` -> a started, initialized :class:`Editor`."""
    editors: list[Editor] = []

    async def start(home: Path, folders: list[Path], **kwargs: Any) -> Editor:
        editor = await start_editor(home, folders, **kwargs)
        editors.append(editor)
        return editor

    yield start
    for editor in editors:
        await stop_editor(editor)
    assert not [bad for editor in editors for bad in editor.malformed], "the server sent undeclared shapes"
