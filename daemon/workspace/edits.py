"""File edits in model replies: parse them (:func:`parse_edits`), apply them (:func:`apply_edits`).

Callers import from here. :data:`EDIT_FORMAT_HELP` goes into every prompt that asks for
code; EditParseError and EditApplyError messages go back to the model as they are.
"""

from __future__ import annotations

from daemon.workspace.patching import apply_edits, closest_lines, elisions
from daemon.workspace.reply_parser import (
    EDIT_FORMAT_HELP,
    NEW_PROGRAM_FORMAT,
    NEW_PROGRAM_PATH,
    EditApplyError,
    EditParseError,
    ParsedEdit,
    looks_like_path,
    parse_edits,
)

__all__ = [
    "EDIT_FORMAT_HELP", "NEW_PROGRAM_FORMAT", "NEW_PROGRAM_PATH",
    "EditApplyError", "EditParseError", "ParsedEdit", "apply_edits", "closest_lines",
    "elisions", "looks_like_path", "parse_edits",
]
