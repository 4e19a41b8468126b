"""Bugs a port of any window or session key schema could have, built from the reference's schema objects.

Each segmented family's mutants module registers mutants from these builders.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from typing import Any, TypeVar

from kstate.codecs.key_schemas import KeySchema, TimeFirstLayout
from kstate.errors import DecodeError, NullKeyError
from kstate.ops import JsonDict, call, tohex, unhex
from kstate_conformance.adapter import Handler

AnySchema = KeySchema[Any]
SchemaT = TypeVar("SchemaT", bound=AnySchema)


def each_schema(
    schemas: Iterable[SchemaT], op: str, handler: Callable[[SchemaT, JsonDict], JsonDict],
) -> dict[str, Handler]:
    """Override ``<family>.<schema>.<op>`` of every schema with ``handler``, given the schema."""
    return {f"{s.family}.{s.name}.{op}": partial(handler, s) for s in schemas}


def wrong_plain_suffix(
    fmt: str, size: int, encode_op: str, decode_op: str,
    write: Callable[[JsonDict], bytes], read: Callable[[bytes], JsonDict],
) -> dict[str, Handler]:
    """A plain layout whose ``size``-byte suffix is written from the input by ``write`` and read back by ``read``."""

    def encode(payload: JsonDict) -> JsonDict:
        key = unhex(payload["key"])
        if key is None:
            raise NullKeyError("null key")
        return {"bytes": (key + write(payload)).hex()}

    def decode(payload: JsonDict) -> JsonDict:
        data = bytes.fromhex(payload["bytes"])
        if len(data) < size:
            raise DecodeError(fmt, "short", 0)
        return {"key": data[: len(data) - size].hex(), **read(data[len(data) - size :])}

    return {encode_op: encode, decode_op: decode}


def upper_range_keeps_whole_key(schemas: Iterable[AnySchema]) -> dict[str, Handler]:
    """``upperRange`` appends the maximal suffix to the whole key, without ``OrderedBytes`` truncation."""

    def ranges(schema: AnySchema, payload: JsonDict) -> JsonDict:
        out = call(f"{schema.family}.{schema.name}.ranges", payload)
        key = unhex(payload["key"])
        if key is not None:
            prefix = b"" if schema.prefix is None else bytes([schema.prefix])
            out["upper_range"] = {"bytes": tohex(prefix + key + schema.max_suffix(payload["time"]))}
        return out

    return each_schema([s for s in schemas if not isinstance(s, TimeFirstLayout)], "ranges", ranges)
