"""Typed readers of an operation's JSON input: a wrong JSON type is refused naming the field (OPS-2, OPS-3).

Every operation module reads its input through these, so that ``null`` where a value is needed, a list
where an object is needed, a string for an int or a bool for an int is an :class:`InputError` (a typed
refusal), never a ``TypeError`` deep inside a codec. ``where`` names the field as a path
(``record.headers[2]``) so that the refusal says which part of the input was wrong.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kstate.errors import KStateError

JsonDict = dict[str, Any]

_MISSING: Any = object()


class InputError(KStateError, ValueError):
    """An operation input with a missing field or a field of the wrong JSON type (OPS-2, OPS-3)."""

    def __init__(self, field: str, reason: str) -> None:
        self.field = field
        self.reason = reason
        super().__init__(f"input field {field}: {reason}")


class MissingFieldError(InputError, KeyError):
    """A required input field is absent (also a ``KeyError``, as ``payload[name]`` raises)."""

    def __str__(self) -> str:  # KeyError's own str() would quote the message
        return str(self.args[0]) if self.args else ""


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


def _wrong(where: str, expected: str, value: Any) -> InputError:
    return InputError(where, f"expected {expected}, got {_json_type(value)}")


class Payload(dict[str, Any]):
    """An input object whose missing fields raise :class:`MissingFieldError` naming the field."""

    def __missing__(self, key: str) -> Any:
        raise MissingFieldError(key, "missing")


def as_payload(value: Any, where: str = "input") -> Payload:
    """The input object itself; anything but a JSON object is refused."""
    if isinstance(value, Payload):
        return value
    if not isinstance(value, Mapping):
        raise _wrong(where, "an object", value)
    return Payload(value)


def field(payload: Mapping[str, Any], name: str, default: Any = _MISSING) -> Any:
    """``payload[name]``; absent means ``default``, or a :class:`MissingFieldError` without one."""
    if name in payload:
        return payload[name]
    if default is _MISSING:
        raise MissingFieldError(name, "missing")
    return default


# --- values ---------------------------------------------------------------------------------------------


INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def as_int(value: Any, where: str, *, nullable: bool = False, minimum: int = INT64_MIN, maximum: int = INT64_MAX) -> Any:
    """A JSON integer (never a boolean) in ``[minimum, maximum]``, by default the signed 64-bit range (OPS-2)."""
    if value is None and nullable:
        return None
    if type(value) is not int:
        raise _wrong(where, "an integer" + (" or null" if nullable else ""), value)
    if not minimum <= value <= maximum:
        raise InputError(where, f"{value} is outside [{minimum}, {maximum}]")
    return value


def _of_type(value: Any, where: str, nullable: bool, kind: type, what: str) -> Any:
    """``value`` where it is a ``kind`` (or null where ``nullable``); else the typed error naming ``what`` (OPS-2)."""
    if value is None and nullable:
        return None
    if not isinstance(value, kind):
        raise _wrong(where, what + (" or null" if nullable else ""), value)
    return value


def as_str(value: Any, where: str, *, nullable: bool = False) -> Any:
    return _of_type(value, where, nullable, str, "a string")


def as_bool(value: Any, where: str, *, nullable: bool = False) -> Any:
    return _of_type(value, where, nullable, bool, "true or false")


def as_hex(value: Any, where: str, *, nullable: bool = True) -> Any:
    """Lowercase (or uppercase) hex to bytes; ``null`` is a Java null where ``nullable`` (OPS-2)."""
    if value is None:
        if nullable:
            return None
        raise InputError(where, "expected bytes (a hex string), got null")
    if not isinstance(value, str):
        raise _wrong(where, "a hex string" + (" or null" if nullable else ""), value)
    try:
        return bytes.fromhex(value)
    except ValueError as exc:
        shown = value if len(value) <= 40 else value[:37] + "..."
        raise InputError(where, f"not a hex string: {shown!r}") from exc


def as_list(value: Any, where: str, *, nullable: bool = False) -> Any:
    return _of_type(value, where, nullable, list, "a list")


def as_object(value: Any, where: str, *, nullable: bool = False) -> Any:
    return _of_type(value, where, nullable, Mapping, "an object")


def as_tuple(value: Any, size: int, where: str) -> list[Any]:
    """A list of exactly ``size`` items, such as a ``[topic, partition, offset]`` entry."""
    if not isinstance(value, list):
        raise _wrong(where, f"a list of {size} items", value)
    if len(value) != size:
        raise InputError(where, f"expected a list of {size} items, got {len(value)}")
    return value


def as_headers(value: Any, where: str = "headers", *, nullable: bool = True) -> list[tuple[str, bytes | None]] | None:
    """``[[key, hex-or-null], ...]`` to ``[(key, bytes-or-None), ...]``; the key a string (OPS-2)."""
    items = as_list(value, where, nullable=nullable)
    if items is None:
        return None
    out: list[tuple[str, bytes | None]] = []
    for i, item in enumerate(items):
        key, data = as_tuple(item, 2, f"{where}[{i}]")
        out.append((as_str(key, f"{where}[{i}][0]"), as_hex(data, f"{where}[{i}][1]")))
    return out


# --- fields of the input object -------------------------------------------------------------------------


def require_int(payload: Mapping[str, Any], name: str, default: Any = _MISSING, *, nullable: bool = False,
                minimum: int = INT64_MIN, maximum: int = INT64_MAX) -> Any:
    return as_int(field(payload, name, default), name, nullable=nullable or default is None, minimum=minimum,
                  maximum=maximum)


def require_str(payload: Mapping[str, Any], name: str, default: Any = _MISSING, *, nullable: bool = False) -> Any:
    return as_str(field(payload, name, default), name, nullable=nullable or default is None)


def require_bool(payload: Mapping[str, Any], name: str, default: Any = _MISSING, *, nullable: bool = False) -> Any:
    return as_bool(field(payload, name, default), name, nullable=nullable or default is None)


def require_hex(payload: Mapping[str, Any], name: str, default: Any = _MISSING, *, nullable: bool = True) -> Any:
    """Bytes of a hex field; ``nullable=False`` refuses ``null``."""
    return as_hex(field(payload, name, default), name, nullable=nullable)


def require_list(payload: Mapping[str, Any], name: str, default: Any = _MISSING, *, nullable: bool = False) -> Any:
    return as_list(field(payload, name, default), name, nullable=nullable or default is None)


def require_object(payload: Mapping[str, Any], name: str, default: Any = _MISSING, *, nullable: bool = False) -> Any:
    return as_object(field(payload, name, default), name, nullable=nullable or default is None)


def require_headers(payload: Mapping[str, Any], name: str = "headers", default: Any = _MISSING,
                    *, nullable: bool = True) -> list[tuple[str, bytes | None]] | None:
    return as_headers(field(payload, name, default), name, nullable=nullable)


def require_choice(payload: Mapping[str, Any], name: str, choices: tuple[str, ...], default: Any = _MISSING) -> str:
    """A string field that must be one of ``choices``."""
    value = as_str(field(payload, name, default), name)
    if value not in choices:
        raise InputError(name, f"expected one of {', '.join(choices)}, got {value!r}")
    return str(value)
