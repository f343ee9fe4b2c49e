"""A proposed change (the daemon's structured before/after edits) as an LSP ``WorkspaceEdit``.

Modified files become minimal line edits (a line diff of before -> after), so the editor keeps
cursors and undo history sensible; created and deleted files become resource operations when
the client supports them. A file whose current text (the open buffer, else the disk) is not the
``before`` the team worked from is refused: the change would land in the wrong place.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.uris import from_fs_path

CurrentText = Callable[[str], "tuple[str | None, int | None]"]
"""``uri -> (text or None when there is no such file, open document version or None)``."""


class ChangeNotApplicable(ValueError):
    """The change cannot be turned into an edit for this editor; the message says why and what to do."""


@dataclass
class FileChange:
    path: str
    before: str | None
    after: str | None


def file_changes(edits: Any) -> list[FileChange]:
    """The ``edits`` field of a ``ChangeInfo`` (``{"edits": [{path, before, after}], ...}``)."""
    items = edits.get("edits") if isinstance(edits, dict) else None
    if not isinstance(items, list) or not items:
        raise ChangeNotApplicable("the change has no structured edits; apply it with `troupe apply`")
    changes = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("path"), str):
            raise ChangeNotApplicable(f"the change holds an edit without a path: {str(item)[:80]}")
        changes.append(FileChange(item["path"], item.get("before"), item.get("after")))
    return changes


def _position(lines: list[str], index: int, units: Callable[[str], int]) -> types.Position:
    """Start of line ``index``; past the last line: the end of the text."""
    if index < len(lines):
        return types.Position(line=index, character=0)
    if lines and not lines[-1].endswith("\n"):
        return types.Position(line=len(lines) - 1, character=units(lines[-1]))
    return types.Position(line=len(lines), character=0)


def _lines(text: str) -> list[str]:
    """Lines with their line feed; only a line feed splits (a CRLF line keeps its CR before it)."""
    return [line for line in re.split(r"(?<=\n)", text) if line]


def line_edits(before: str, after: str, units: Callable[[str], int] = len) -> list[types.TextEdit]:
    """Minimal whole-line edits that turn ``before`` into ``after``."""
    old, new = _lines(before), _lines(after)
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    edits = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        rng = types.Range(start=_position(old, i1, units), end=_position(old, i2, units))
        edits.append(types.TextEdit(range=rng, new_text="".join(new[j1:j2])))
    return edits


def workspace_edit(root: str, edits: Any, current: CurrentText, *, document_changes: bool = True,
                   file_operations: bool = True, units: Callable[[str], int] = len) -> types.WorkspaceEdit:
    """The change as one ``WorkspaceEdit`` (``documentChanges`` when the client supports them, else
    ``changes``); raises :class:`ChangeNotApplicable`."""
    file_operations = file_operations and document_changes
    out: list[Any] = []
    for change in file_changes(edits):
        uri = from_fs_path(str(Path(root) / change.path))
        assert uri is not None
        text, version = current(uri)
        if text != change.before:
            state = "does not exist" if text is None else "changed since the team started"
            raise ChangeNotApplicable(f"{change.path} {state}; nothing was applied. Ask the team again.")
        if change.before is not None and change.after is not None:
            out.append(types.TextDocumentEdit(
                text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version),
                edits=line_edits(change.before, change.after, units)))
            continue
        if not file_operations:
            raise ChangeNotApplicable(f"{change.path} is {'created' if change.before is None else 'deleted'} by "
                                      "the change and this editor cannot create or delete files through LSP; "
                                      "apply it with `troupe apply`")
        if change.before is None:
            out.append(types.CreateFile(uri=uri, options=types.CreateFileOptions(overwrite=False)))
            out.append(types.TextDocumentEdit(
                text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=None),
                edits=[types.TextEdit(range=types.Range(start=types.Position(line=0, character=0),
                                                        end=types.Position(line=0, character=0)),
                                      new_text=change.after or "")]))
        else:
            out.append(types.DeleteFile(uri=uri))
    if document_changes:
        return types.WorkspaceEdit(document_changes=out)
    return types.WorkspaceEdit(changes={dc.text_document.uri: list(dc.edits) for dc in out})
