"""A minimal third-party implementation plugged into the suite in process (spec/ops.md, OPS-1..OPS-3).

It implements zig-zag varints and KIP-258 timestamped values on its own (of the kit it imports only the
adapter base class, never the reference ``kstate``) and declares everything else unsupported, so the suite skips those tests instead of failing them::

    PYTHONPATH=examples/inprocess_adapter kstate conformance --impl mini_codecs:create
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kstate_conformance.adapter import ImplementationAdapter, Unsupported

Json = dict[str, Any]


class Refused(Exception):
    """Where Kafka throws: answered as ``{"error": ...}``."""


def _field(payload: Json, name: str) -> Any:
    # A missing field is bad input, refused like any other (OPS-3), not a KeyError.
    if name not in payload:
        raise Refused(f"missing field {name!r}")
    return payload[name]


def _bytes(value: Any) -> bytes:
    if not isinstance(value, str):
        raise Refused("expected a hex string")
    try:
        return bytes.fromhex(value)
    except ValueError as exc:
        raise Refused(f"not hex: {value!r}") from exc


def _wrap(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def _write(value: Any, bits: int) -> Json:
    if not isinstance(value, int) or not -(1 << (bits - 1)) <= value < (1 << (bits - 1)):
        raise Refused(f"{value!r} is not a {bits}-bit integer")
    unsigned = ((value << 1) ^ (value >> (bits - 1))) & ((1 << bits) - 1)
    out = bytearray()
    while unsigned >= 0x80:
        out.append(unsigned & 0x7F | 0x80)
        unsigned >>= 7
    out.append(unsigned)
    return {"bytes": out.hex(), "size": len(out)}


def _read(data: bytes, bits: int) -> Json:
    # Kafka's loop: a continuation past 5 (10) bytes is refused; the last byte's excess bits are dropped.
    max_shift = 28 if bits == 32 else 63
    raw = shift = 0
    for used, byte in enumerate(data, start=1):
        raw |= (byte & 0x7F if byte & 0x80 else byte) << shift
        if not byte & 0x80:
            raw = raw & ((1 << bits) - 1)
            return {"value": _wrap((raw >> 1) ^ -(raw & 1), bits), "bytes_consumed": used}
        shift += 7
        if shift > max_shift:
            raise Refused("varint too long")
    raise Refused("truncated varint")


def _serialize(payload: Json) -> Json:
    timestamp = _field(payload, "timestamp")
    if not isinstance(timestamp, int) or not -(1 << 63) <= timestamp < (1 << 63):
        raise Refused("timestamp out of range")
    if _field(payload, "value") is None:
        return {"bytes": None}
    return {"bytes": timestamp.to_bytes(8, "big", signed=True).hex() + _bytes(_field(payload, "value")).hex()}


def _deserialize(payload: Json) -> Json:
    if _field(payload, "bytes") is None:
        return {"result": None}
    data = _bytes(_field(payload, "bytes"))
    if len(data) < 8:
        raise Refused("fewer than 8 timestamp bytes")
    return {"result": {"value": data[8:].hex(), "timestamp": int.from_bytes(data[:8], "big", signed=True)}}


OPERATIONS: dict[str, Callable[[Json], Json]] = {
    "varint.write_varint": lambda p: _write(_field(p, "value"), 32),
    "varint.write_varlong": lambda p: _write(_field(p, "value"), 64),
    "varint.read_varint": lambda p: _read(_bytes(_field(p, "bytes")), 32),
    "varint.read_varlong": lambda p: _read(_bytes(_field(p, "bytes")), 64),
    "timestamped.serialize": _serialize,
    "timestamped.deserialize": _deserialize,
}


class MiniCodecs(ImplementationAdapter):
    """The adapter protocol: ``name``, ``supports(op)``, ``call(op, input)``."""

    name = "mini-codecs"

    def supports(self, op: str) -> bool:
        return op in OPERATIONS

    def call(self, op: str, payload: Json) -> Json:
        handler = OPERATIONS.get(op)
        if handler is None:
            raise Unsupported(op)
        try:
            return handler(payload)
        except Refused as exc:
            return {"error": {"type": "Refused", "message": str(exc)}}


def create() -> MiniCodecs:
    """The factory named on the command line: ``--impl mini_codecs:create``."""
    return MiniCodecs()
