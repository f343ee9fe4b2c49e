"""How the language server's messages travel: :class:`Record`, the base of every one (msgspec
structs with camelCase keys, unknown fields refused), :func:`wire` (a record as the JSON sent) and
:func:`read` (JSON as a record, strictly, or :class:`BadParams` naming the field as the client wrote
it). The messages themselves are in :mod:`lsp.messages`.
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec


class Record(msgspec.Struct, rename="camel", forbid_unknown_fields=True, kw_only=True, omit_defaults=True):
    """Base of the server's messages: camelCase keys, unknown fields refused, a field at its default
    (None) left out of what is sent."""

    def check(self) -> str | None:
        """What is wrong with values the types alone cannot catch (None: nothing)."""
        return None


R = TypeVar("R", bound=Record)


def wire(record: Record) -> dict[str, Any]:
    """The record as the JSON the client gets (camelCase keys; fields at their default left out)."""
    data: dict[str, Any] = msgspec.to_builtins(record)  # a struct: always an object
    return data


class BadParams(ValueError):
    """Params that are not the record's JSON; the message names the field as the client wrote it."""


def read(cls: type[R], value: Any) -> R:
    """``value`` (a JSON object) as ``cls``, strictly (5 is not "5"); raises :class:`BadParams`."""
    if not isinstance(value, dict):
        raise BadParams(f"expected one JSON object, got {_json_kind(value)}")
    try:
        record = msgspec.convert(value, cls, strict=True)
    except msgspec.ValidationError as exc:
        raise BadParams(_readable(str(exc), cls)) from None
    problem = record.check()
    if problem:
        raise BadParams(problem)
    return record


def _json_kind(value: Any) -> str:
    return {list: "a list", str: "a string", bool: "a boolean", int: "a number", float: "a number",
            type(None): "null"}.get(type(value), type(value).__name__)


def _readable(message: str, cls: type[Record]) -> str:
    """msgspec's ``Expected `int`, got `str` - at `$.findingId``` as ``findingId: expected int, got str``,
    with the field names as the client writes them; a value outside a Literal names the allowed ones."""
    text, _, path = message.partition(" - at `$")
    path, text = path.rstrip("`").lstrip("."), text.replace("`", "")
    where = f"{path}: " if path else ""
    if text.startswith("Invalid enum value "):
        allowed = ", ".join(map(repr, _allowed(cls, path)))
        return f"{path} must be one of {allowed}; got {text.removeprefix('Invalid enum value ')}"
    if text.startswith("Object contains unknown field "):
        known = ", ".join(f.encode_name for f in _fields(cls, path)) or "none"
        return f"{where}unknown field {text.removeprefix('Object contains unknown field ')}; known fields are {known}"
    if text.startswith("Object missing required field "):
        return f"{where}required field {text.removeprefix('Object missing required field ')} is missing"
    return f"{where}{text[:1].lower()}{text[1:]}"


def _fields(cls: Any, path: str) -> tuple[Any, ...]:
    """The msgspec fields of the struct at ``path`` (``""``: ``cls`` itself; ``selection.start``)."""
    info: Any = msgspec.inspect.type_info(cls)
    for name in [p for p in path.split(".") if p]:
        info = _struct_in(next((f.type for f in info.fields if f.encode_name == name), None))
        if info is None:
            return ()
    return tuple(info.fields)


def _struct_in(info: Any) -> Any:
    if isinstance(info, msgspec.inspect.StructType):
        return info
    if isinstance(info, msgspec.inspect.UnionType):
        return next((t for t in info.types if isinstance(t, msgspec.inspect.StructType)), None)
    return None


def _allowed(cls: type[Record], path: str) -> tuple[Any, ...]:
    parent, _, name = path.rpartition(".")
    field = next((f for f in _fields(cls, parent) if f.encode_name == name), None)
    kinds = getattr(field.type, "types", (field.type,)) if field is not None else ()
    return next((k.values for k in kinds if isinstance(k, msgspec.inspect.LiteralType)), ())
