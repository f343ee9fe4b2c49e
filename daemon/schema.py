"""How protocol types check themselves: a strict ``from_json`` (msgspec converts and type-checks
the JSON against the dataclass; unknown fields, length limits and cross-field rules are checked
here), and :class:`ProtocolError`, which the server answers as an HTTP error. The types are in
:mod:`daemon.messages`."""

from __future__ import annotations

import dataclasses
import re
import typing
from typing import ClassVar, TypeVar

import msgspec

from daemon.json_types import Json, JsonDict


class ProtocolError(ValueError):
    """A request the daemon cannot accept; ``status`` and ``code`` become the HTTP error answer."""

    def __init__(self, message: str, *, status: int = 400, code: str = "bad_request") -> None:
        super().__init__(message)
        self.message, self.status, self.code = message, status, code


T = TypeVar("T", bound="Message")

MAX_DEPTH = 32  # no request of the protocol nests deeper; deeper ones only cost recursion
TOO_DEEP = f"the request body nests lists or objects more than {MAX_DEPTH} levels deep; send flatter JSON"


def plain_json(data: Json) -> None:
    """Refuse, before any handler walks it, JSON that is not plain text data: nested more than
    MAX_DEPTH levels, or holding a lone surrogate (``"\\ud800"``: valid JSON, not valid Unicode; no
    model, file or store can take it). Iterative, so depth itself cannot overflow the stack."""
    stack: list[tuple[Json, str, int]] = [(data, "body", 0)]
    while stack:
        value, where, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ProtocolError(TOO_DEEP)
        if isinstance(value, str):
            check_text(value, where)
        elif isinstance(value, dict):
            for key, item in value.items():
                check_text(key, f"{where} key")
                stack.append((item, f"{where}.{key}"[:200], depth + 1))
        elif isinstance(value, list):
            stack.extend((item, f"{where}[{i}]"[:200], depth + 1) for i, item in enumerate(value))


def check_text(text: str, where: str) -> None:
    """A ProtocolError naming ``where`` when ``text`` holds a lone surrogate."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ProtocolError(f"{where}: the text holds a lone surrogate ({text[exc.start]!r} at character "
                            f"{exc.start}), which is not valid Unicode; send UTF-8 text") from None


_HINTS: dict[type, dict[str, object]] = {}  # a type hint is an object: a class, a union, a Literal…


def _hints(cls: type) -> dict[str, object]:
    """The resolved field types of ``cls`` (cached: protocol types never change)."""
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def _json_type(value: Json) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "a number", float: "a number", str: f"the string {str(value)[:40]!r}",
            list: "a list", dict: "an object"}.get(type(value), type(value).__name__)


def _messages_in(tp: object) -> list[type[Message]]:
    """The protocol types a type hint can hold (``X``, ``X | None``, ``list[X]``, ``dict[str, X]``)."""
    if isinstance(tp, type) and issubclass(tp, Message):
        return [tp]
    return [m for arg in typing.get_args(tp) for m in _messages_in(arg)]


def _refuse_unknown(cls: type[Message], data: Json, where: str) -> None:
    """msgspec ignores unknown fields of dataclasses; the protocol refuses them, naming the known ones."""
    if not isinstance(data, dict):
        return
    names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(data) - names)
    if unknown:
        raise ProtocolError(f"{where}: unknown field(s) {', '.join(map(str, unknown))}; "
                            f"known fields are {', '.join(sorted(names))}")
    for name, hint in _hints(cls).items():
        value = data.get(name)
        for inner in _messages_in(hint):
            if isinstance(value, list):
                for i, item in enumerate(value):
                    _refuse_unknown(inner, item, f"{where}.{name}[{i}]")
            else:
                _refuse_unknown(inner, value, f"{where}.{name}")


def _checked(obj: object, where: str) -> None:
    """Length limits and cross-field rules of ``obj`` and the protocol values inside it."""
    if isinstance(obj, list):
        for i, item in enumerate(obj):
            _checked(item, f"{where}[{i}]")
        return
    if not isinstance(obj, Message):
        return
    for f in dataclasses.fields(obj):  # type: ignore[arg-type]
        value = getattr(obj, f.name)
        limit = obj._max_lengths.get(f.name)
        if limit is not None and isinstance(value, str | list) and len(value) > limit:
            raise ProtocolError(f"{where}.{f.name}: longer than the limit of {limit:,}", status=413, code="too_large")
        _checked(value, f"{where}.{f.name}")
    obj.validate()


def convert_error(exc: msgspec.ValidationError, cls: type, where: str) -> ProtocolError:
    """msgspec's message (``Expected `str`, got `int` - at `$.prompt```) as ``where.prompt: …``; a
    value outside a Literal names the allowed ones."""
    message, _, path = str(exc).partition(" - at `$")
    path = path.rstrip("`")
    allowed = _literal_at(cls, path)
    bad = message.removeprefix("Invalid enum value ")
    if allowed and bad != message:
        message = f"{bad} is not one of {', '.join(map(repr, allowed))}"
    return ProtocolError(f"{where}{path}: {message}")


def _literal_at(cls: type, path: str) -> tuple[object, ...]:
    """The allowed values of the Literal field at ``path`` (``.settings.model``, ``.files[0]``), if any."""
    tp: object = cls
    for name in re.findall(r"\.(\w+)", path):
        candidates: list[object] = [t for t in _messages_in(tp)] or [tp]
        first = candidates[0]
        hints: dict[str, object] = _hints(first) if isinstance(first, type) and dataclasses.is_dataclass(first) else {}
        if name not in hints:
            return ()
        tp = hints[name]
    options = [tp, *typing.get_args(tp)]
    return next((typing.get_args(t) for t in options if typing.get_origin(t) is typing.Literal), ())


class Message:
    """Base of every protocol type: strict ``from_json`` (unknown fields refused), plain ``to_json``."""

    _max_lengths: ClassVar[dict[str, int]] = {}

    @classmethod
    def from_json(cls: type[T], data: Json, *, where: str | None = None) -> T:
        where = where or cls.__name__
        if not isinstance(data, dict):
            raise ProtocolError(f"{where}: expected a JSON object, got {_json_type(data)}")
        _refuse_unknown(cls, data, where)
        try:
            obj = msgspec.convert(data, cls, strict=True)
        except msgspec.ValidationError as exc:
            raise convert_error(exc, cls, where) from None
        _checked(obj, where)
        return obj

    def validate(self) -> None:
        """Cross-field rules; raise :class:`ProtocolError`."""

    def to_json(self) -> JsonDict:
        data: JsonDict = msgspec.to_builtins(self)  # a dataclass: always a JSON object
        return data
