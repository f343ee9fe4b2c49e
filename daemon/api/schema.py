"""How protocol types check themselves: a strict ``from_json`` driven by the dataclass's type
hints, and :class:`ProtocolError`, which the server answers as an HTTP error. The types are in
:mod:`daemon.api.protocol`."""

from __future__ import annotations

import dataclasses
import types
import typing
from functools import cache
from typing import Any, ClassVar, Literal, TypeVar


class ProtocolError(ValueError):
    """A request the daemon cannot accept; ``status`` and ``code`` become the HTTP error answer."""

    def __init__(self, message: str, *, status: int = 400, code: str = "bad_request") -> None:
        super().__init__(message)
        self.message, self.status, self.code = message, status, code


T = TypeVar("T", bound="Message")

MAX_DEPTH = 32  # no request of the protocol nests deeper; deeper ones only cost recursion
TOO_DEEP = f"the request body nests lists or objects more than {MAX_DEPTH} levels deep; send flatter JSON"


def plain_json(data: Any) -> None:
    """Refuse, before any handler walks it, JSON that is not plain text data: nested more than
    MAX_DEPTH levels, or holding a lone surrogate (``"\\ud800"``: valid JSON, not valid Unicode; no
    model, file or store can take it). Iterative, so depth itself cannot overflow the stack."""
    stack: list[tuple[Any, str, int]] = [(data, "body", 0)]
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


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "true or false",
          dict: "an object", list: "a list"}


def _check(value: Any, tp: Any, where: str) -> Any:
    """Validate (and lightly convert) one JSON value against a type hint."""
    origin = typing.get_origin(tp)
    if tp is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(tp)
        if value is None and type(None) in options:
            return None
        errors = []
        for option in options:
            if option is type(None):
                continue
            try:
                return _check(value, option, where)
            except ProtocolError as exc:
                errors.append(exc.message)
        raise ProtocolError(errors[0] if len(errors) == 1 else f"{where}: {value!r} is not valid")
    if origin is Literal:
        allowed = typing.get_args(tp)
        if value not in allowed:
            raise ProtocolError(f"{where}: {value!r} is not one of {', '.join(map(repr, allowed))}")
        return value
    if origin is list:
        if not isinstance(value, list):
            raise ProtocolError(f"{where}: expected a list, got {_json_type(value)}")
        (item,) = typing.get_args(tp) or (Any,)
        return [_check(v, item, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict or tp is dict:
        if not isinstance(value, dict):
            raise ProtocolError(f"{where}: expected an object, got {_json_type(value)}")
        args = typing.get_args(tp)
        return {k: _check(v, args[1], f"{where}.{k}") for k, v in value.items()} if args else value
    if isinstance(tp, type) and issubclass(tp, Message):
        return tp.from_json(value, where=where)
    if tp is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if tp in _NAMES:
        if not isinstance(value, tp) or (tp is int and isinstance(value, bool)):
            raise ProtocolError(f"{where}: expected {_NAMES[tp]}, got {_json_type(value)}")
        return value
    raise TypeError(f"protocol: unsupported type hint {tp!r} at {where}")  # a bug in this module


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "a number", float: "a number", str: f"the string {str(value)[:40]!r}",
            list: "a list", dict: "an object"}.get(type(value), type(value).__name__)


class Message:
    """Base of every protocol type: strict ``from_json`` (unknown fields refused), plain ``to_json``."""

    _max_lengths: ClassVar[dict[str, int]] = {}

    @classmethod
    def from_json(cls: type[T], data: Any, *, where: str | None = None) -> T:
        where = where or cls.__name__
        if not isinstance(data, dict):
            raise ProtocolError(f"{where}: expected a JSON object, got {_json_type(data)}")
        hints = _hints(cls)
        names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        unknown = sorted(set(data) - names)
        if unknown:
            raise ProtocolError(f"{where}: unknown field(s) {', '.join(unknown)}; "
                                f"known fields are {', '.join(sorted(names))}")
        values = {}
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            if f.name not in data:
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                    raise ProtocolError(f"{where}: missing required field {f.name!r}")
                continue
            values[f.name] = _check(data[f.name], hints[f.name], f"{where}.{f.name}")
            limit = cls._max_lengths.get(f.name)
            if limit is not None and isinstance(values[f.name], str | list) and len(values[f.name]) > limit:
                raise ProtocolError(f"{where}.{f.name}: longer than the limit of {limit:,}", status=413,
                                    code="too_large")
        obj = cls(**values)
        obj.validate()  # type: ignore[attr-defined]
        return obj

    def validate(self) -> None:
        """Cross-field rules; raise :class:`ProtocolError`."""

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)  # type: ignore[call-overload]
