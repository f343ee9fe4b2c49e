"""A proposed change as a WorkspaceEdit: minimal line edits that reproduce the team's text, resource
operations for new and deleted files, and a clear refusal when the file moved on (no processes)."""

from __future__ import annotations

import pytest
from lsprotocol import types

from lsp.edits import ChangeNotApplicable, line_edits, workspace_edit
from tests.lsp.conftest import apply_text_edits

CASES = [
    ("a\nb\nc\n", "a\nB\nc\n"),
    ("a\nb\nc\n", "a\nb\nc\nd\n"),
    ("a\nb\nc", "a\nb\nc\nd"),  # no newline at the end
    ("a\nb\nc\n", "c\n"),
    ("", "new\n"),
    ("x\r\ny\r\n", "x\r\nz\r\n"),
]


@pytest.mark.parametrize(("before", "after"), CASES)
def test_line_edits_turn_before_into_after(before: str, after: str) -> None:
    assert apply_text_edits(before, line_edits(before, after)) == after


def test_only_the_changed_lines_are_edited() -> None:
    (edit,) = line_edits("a\nb\nc\n", "a\nB\nc\n")
    assert edit.range.start.line == 1 and edit.range.end.line == 2 and edit.new_text == "B\n"


def change(*edits: dict[str, str | None]) -> dict[str, object]:
    return {"diff": "...", "edits": list(edits), "base_hashes": {}}


def current(texts: dict[str, str], versions: dict[str, int] | None = None):  # -> CurrentText
    def read(uri: str) -> tuple[str | None, int | None]:
        name = uri.rsplit("/", 1)[-1]
        return texts.get(name), (versions or {}).get(name)

    return read


def test_a_modified_file_becomes_a_versioned_text_document_edit() -> None:
    edit = workspace_edit("/repo", change({"path": "a.py", "before": "x = 1\n", "after": "x = 2\n"}),
                          current({"a.py": "x = 1\n"}, {"a.py": 7}))
    (doc,) = edit.document_changes
    assert doc.text_document == types.OptionalVersionedTextDocumentIdentifier(uri="file:///repo/a.py", version=7)
    assert [e.new_text for e in doc.edits] == ["x = 2\n"]


def test_new_and_deleted_files_become_resource_operations() -> None:
    edit = workspace_edit("/repo", change({"path": "new.py", "before": None, "after": "n = 1\n"},
                                          {"path": "old.py", "before": "o = 1\n", "after": None}),
                          current({"old.py": "o = 1\n"}))
    create, fill, delete = edit.document_changes
    assert isinstance(create, types.CreateFile) and create.uri == "file:///repo/new.py"
    assert fill.edits[0].new_text == "n = 1\n"
    assert isinstance(delete, types.DeleteFile) and delete.uri == "file:///repo/old.py"


def test_clients_without_document_changes_get_plain_changes() -> None:
    edit = workspace_edit("/repo", change({"path": "a.py", "before": "x = 1\n", "after": "x = 2\n"}),
                          current({"a.py": "x = 1\n"}), document_changes=False)
    assert list(edit.changes) == ["file:///repo/a.py"] and edit.document_changes is None


def test_a_file_that_changed_since_the_team_started_is_refused() -> None:
    with pytest.raises(ChangeNotApplicable, match=r"a\.py changed since the team started; nothing was applied"):
        workspace_edit("/repo", change({"path": "a.py", "before": "x = 1\n", "after": "x = 2\n"}),
                       current({"a.py": "x = 3\n"}))


def test_creating_a_file_needs_a_client_that_can() -> None:
    with pytest.raises(ChangeNotApplicable, match="cannot create or delete files"):
        workspace_edit("/repo", change({"path": "new.py", "before": None, "after": "n = 1\n"}), current({}),
                       file_operations=False)
    with pytest.raises(ChangeNotApplicable, match="no structured edits"):
        workspace_edit("/repo", {"diff": "only a diff"}, current({}))
