"""An operation's input and output fields, declared once on ``@op`` (spec/ops.md, OPS-2, OPS-3).

A :class:`Field` names an input field, its JSON type as the index shows it, its default (:data:`REQUIRED`
when it has none), its doc and how it is read; :func:`parse_request` reads every declared field, in
declaration order, into a :class:`Request` before the handler runs, so a missing field or one of the wrong
JSON type is refused by name (an :class:`~kstate.ops.inputs.InputError`) as the readers of
:mod:`kstate.ops.inputs` refuse it. :data:`Output` (a field too) documents an answer's. The operation index
(:mod:`kstate.ops.index`, spec/ops-index.md) renders both.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from kstate.ops import inputs
from kstate.ops.inputs import INT64_MAX, INT64_MIN

JsonDict = dict[str, Any]


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


#: The default of a field that has none: leaving it out is refused naming it.
REQUIRED: Any = _Required()

#: How a field is read: ``(payload, name, default)`` to its value (``default`` is :data:`REQUIRED` or a value).
Reader = Callable[[JsonDict, str, Any], Any]


def _raw(payload: JsonDict, name: str, default: Any) -> Any:
    # A field the handler's own helpers check (a handle resolves to its store): passed on as sent.
    return payload.get(name) if default is REQUIRED else inputs.field(payload, name, default)


@dataclass(frozen=True)
class Field:
    """One input field: name, JSON type (as the index shows it), default, doc, and its reader."""

    name: str
    type: str
    doc: str = ""
    default: Any = REQUIRED
    read: Reader = _raw
    #: Shown as optional although it has no default (a field only some forms of the operation use).
    optional: bool = False
    #: Read by the handler itself (``field.parse(request.payload)``) after a check Kafka makes first, so that
    #: which fault of a doubly bad input is refused stays Kafka's; :func:`parse_request` leaves it unread.
    deferred: bool = False

    @property
    def required(self) -> bool:
        return self.default is REQUIRED and not self.optional

    def parse(self, payload: JsonDict) -> Any:
        if self.read is _raw:
            return _raw(payload, self.name, self.default)
        return self.read(payload, self.name, _Missing if self.default is REQUIRED else self.default)

    def note(self) -> str:
        """The index's note: ``optional, default X`` for an optional field, then the doc."""
        parts = []
        if not self.required:
            parts.append("optional" if self.default in (REQUIRED, None) else f"optional, default {json.dumps(self.default)}")
        if self.doc:
            parts.append(self.doc)
        return "; ".join(parts)


class _MissingType:
    pass


# The readers of kstate.ops.inputs take their own "no default" marker: an absent argument.
_Missing: Any = _MissingType()


def _call(reader: Callable[..., Any], **options: Any) -> Reader:
    def read(payload: JsonDict, name: str, default: Any) -> Any:
        if default is _Missing:
            return reader(payload, name, **options)
        return reader(payload, name, default, **options)

    return read


def hex_field(name: str, doc: str = "", default: Any = REQUIRED, *, nullable: bool = True,
              type: str = "hex | null") -> Field:
    """Bytes of a hex field; ``nullable=False`` refuses ``null``."""
    return Field(name, type, doc, default, _call(inputs.require_hex, nullable=nullable))


def int_field(name: str, doc: str = "", default: Any = REQUIRED, *, nullable: bool = False,
              minimum: int = INT64_MIN, maximum: int = INT64_MAX, type: str = "int") -> Field:
    return Field(name, type, doc, default, _call(inputs.require_int, nullable=nullable, minimum=minimum, maximum=maximum))


def str_field(name: str, doc: str = "", default: Any = REQUIRED, *, type: str = "string") -> Field:
    return Field(name, type, doc, default, _call(inputs.require_str))


def bool_field(name: str, doc: str = "", default: Any = REQUIRED) -> Field:
    return Field(name, "bool", doc, default, _call(inputs.require_bool))


def choice_field(name: str, choices: Sequence[str], doc: str = "", default: Any = REQUIRED) -> Field:
    """A string that must be one of ``choices``."""
    options = tuple(choices)

    def read(payload: JsonDict, field_name: str, given: Any) -> Any:
        if given is _Missing:
            return inputs.require_choice(payload, field_name, options)
        return inputs.require_choice(payload, field_name, options, given)

    return Field(name, "string", doc, default, read)


def headers_field(name: str = "headers", doc: str = "", *, type: str = "list[[string, hex | null]] | null") -> Field:
    """Header pairs ``[[key, hex-or-null], ...]`` (a key is text, OPS-2); a field left out reads as null."""
    return Field(name, type, doc, read=lambda payload, field_name, _default: inputs.as_headers(payload.get(field_name),
                                                                                                 field_name))


def list_field(name: str, type: str, doc: str = "", default: Any = REQUIRED) -> Field:
    return Field(name, type, doc, default, _call(inputs.require_list))


def object_field(name: str, type: str, doc: str = "", default: Any = REQUIRED) -> Field:
    return Field(name, type, doc, default, _call(inputs.require_object))


#: One field of an operation's answer: name, JSON type, doc; ``optional=True`` when some answers leave it out.
Output = Field


class Request:
    """An operation's input parsed by its declared fields: ``request.name`` is the parsed value; ``payload``
    is the input object itself (for the helpers that resolve a handle from it)."""

    __slots__ = ("_values", "payload")

    def __init__(self, payload: JsonDict, values: dict[str, Any]) -> None:
        self.payload = payload
        self._values = values

    def __getattr__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"the request has no declared field {name!r}") from None

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def __repr__(self) -> str:
        return f"Request({self._values!r})"


def parse_request(fields: Sequence[Field], payload: JsonDict) -> Request:
    """Every declared field of ``payload`` but the deferred ones, read in declaration order (the first bad one is
    refused by name)."""
    return Request(payload, {f.name: f.parse(payload) for f in fields if not f.deferred})


def nullable_hex(name: str, doc: str = "", *, type: str = "hex | null") -> Field:
    """A required hex field that may be null and whose absence reads as null (a key or value the store checks)."""
    return Field(name, type, doc, read=lambda payload, field_name, _default: inputs.require_hex(payload, field_name, None))


def deferred(field: Field) -> Field:
    """``field``, read by the handler when it needs it rather than before it runs (:attr:`Field.deferred`)."""
    return replace(field, deferred=True)
