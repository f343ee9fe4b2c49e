"""Checking and converting values on their way into and out of SQLite.

Every check raises ``ValueError`` naming the field and the offending value, so a caller can show
the message to a user as is.
"""

from __future__ import annotations

import json
import math
import posixpath
import time
from collections.abc import Iterable
from enum import StrEnum
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

E = TypeVar("E", bound=StrEnum)
R = TypeVar("R", bound="DataclassInstance")


def now() -> float:
    return time.time()


def enum_value(enum: type[E], value: object, what: str) -> E:
    """``value`` as a member of ``enum``; e.g. ``enum_value(JobState, "runing", "job state")`` raises."""
    if isinstance(value, str):  # members are strings too
        try:
            return enum(value)
        except ValueError:
            pass
    allowed = ", ".join(member.value for member in enum)
    raise ValueError(f"{what} {value!r} is not one of: {allowed}")


def enum_values(enum: type[E], value: str | Iterable[object], what: str) -> list[E]:
    """One member or an iterable of members (for filters such as ``state=("queued", "running")``)."""
    if isinstance(value, str):
        return [enum_value(enum, value, what)]
    return [enum_value(enum, item, what) for item in value]


def text(value: object, what: str, *, required: bool = True) -> str:
    """A string SQLite can store as UTF-8 (no lone surrogates); ``required`` forbids blank ones."""
    if not isinstance(value, str):
        raise ValueError(f"{what} must be text, not {type(value).__name__}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"{what} is not valid UTF-8 text ({exc.reason} at index {exc.start}); "
                         "decode the bytes with errors='replace' first") from None
    if required and not value.strip():
        raise ValueError(f"{what} must not be empty")
    return value


def optional_text(value: object, what: str) -> str | None:
    return None if value is None else text(value, what, required=False)


def integer(value: object, what: str, *, minimum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{what} must be an integer, not {value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{what} must be at least {minimum}, not {value}")
    return value


def amount(value: object, what: str) -> float:
    """A finite, non-negative number (token costs)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{what} must be a finite number, not {value!r}")
    if value < 0:
        raise ValueError(f"{what} must not be negative, not {value}")
    return float(value)


def to_json(value: Any, what: str) -> str:
    # ensure_ascii keeps lone surrogates (undecodable file names, say) as \\udcxx escapes,
    # so any Python string round-trips instead of failing at the SQLite boundary.
    try:
        return json.dumps(value, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise ValueError(f"{what} must be JSON-serialisable: {exc}") from None


def from_json(raw: str | None) -> Any:
    return None if raw is None else json.loads(raw)


def record(cls: type[R], row: dict[str, Any], **overrides: Any) -> R:
    """A record dataclass from a row, ignoring columns the record does not name."""
    fields = cls.__dataclass_fields__
    return cls(**{name: overrides.get(name, row.get(name)) for name in fields})


def relative_file(value: object, what: str = "file") -> str:
    """A workspace-relative, '/'-separated path that stays inside the workspace."""
    path = text(value, what).replace("\\", "/")
    if path.startswith("/") or (len(path) > 1 and path[1] == ":"):
        raise ValueError(f"{what} {value!r} must be relative to the workspace root, not absolute")
    normal = posixpath.normpath(path)
    if normal == ".." or normal.startswith("../"):
        raise ValueError(f"{what} {value!r} leaves the workspace")
    if normal == ".":
        raise ValueError(f"{what} {value!r} names the workspace root, not a file")
    return normal


def searchable_text(data: Any, limit: int = 100_000) -> str:
    """Every string inside ``data`` (an event's payload), joined: what full-text search sees."""
    parts: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, str):
            parts.append(node)
        elif isinstance(node, dict):
            for item in node.values():
                walk(item)
        elif isinstance(node, list | tuple):
            for item in node:
                walk(item)

    walk(data)
    joined = "\n".join(parts)[:limit]
    # Search text is derived, so it may drop undecodable characters and NULs (PostgreSQL's text refuses
    # them); the data itself keeps them (JSON escapes both).
    return joined.encode("utf-8", "replace").decode("utf-8").replace("\x00", " ")
