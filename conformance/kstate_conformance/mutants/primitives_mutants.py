"""Mutants of the primitive encodings."""

from __future__ import annotations

from kstate.ops import JsonDict, call
from kstate_conformance.adapter import Handler
from kstate_conformance.bytes_model import unsigned_varint
from kstate_conformance.mutants import alters, mutant, replaces


@mutant("unsigned-varints", "signed varints written without zig-zag (the int's bit pattern as LEB128)", "varint", rules=("PRIM-6",))
def _unsigned_varints() -> dict[str, Handler]:
    def write_varint(payload: JsonDict) -> JsonDict:
        data = unsigned_varint(payload["value"] & 0xFFFFFFFF)
        return {"bytes": data.hex(), "size": len(data)}

    def write_varlong(payload: JsonDict) -> JsonDict:
        data = unsigned_varint(payload["value"] & 0xFFFFFFFFFFFFFFFF)
        return {"bytes": data.hex(), "size": len(data)}

    return {"varint.write_varint": write_varint, "varint.write_varlong": write_varlong}


@mutant("floor-segment-ids", "segment ids computed with Python floor division instead of Java truncation", "primitives", rules=("PRIM-4",))
@replaces("primitives.segment_id")
def _floor_segment_ids(payload: JsonDict) -> JsonDict:
    return {"segment_id": payload["timestamp"] // payload["segment_interval"]}


@mutant("int64-little-endian", "fixed-width integers written and read little-endian (struct '<q')", "primitives",
        rules=("PRIM-1",))
def _int64_little_endian() -> dict[str, Handler]:
    def encode_int64(payload: JsonDict) -> JsonDict:
        return {"bytes": payload["value"].to_bytes(8, "little", signed=True).hex()}

    def encode_int32(payload: JsonDict) -> JsonDict:
        return {"bytes": payload["value"].to_bytes(4, "little", signed=True).hex()}

    def read_int64(payload: JsonDict) -> JsonDict:
        out = call("primitives.read_int64", payload)
        if "error" in out:
            return out
        at = payload.get("offset", 0)
        return {"value": int.from_bytes(bytes.fromhex(payload["bytes"])[at:at + 8], "little", signed=True)}

    return {"primitives.encode_int64": encode_int64, "primitives.encode_int32": encode_int32,
            "primitives.read_int64": read_int64}


@mutant("signed-byte-compare", "keys compared as Java's signed bytes (0x80 sorts before 0x00)", "primitives",
        rules=("PRIM-2",))
@replaces("primitives.compare")
def _signed_byte_compare(payload: JsonDict) -> JsonDict:
    a = [b - 256 if b > 127 else b for b in bytes.fromhex(payload["a"])]
    b = [x - 256 if x > 127 else x for x in bytes.fromhex(payload["b"])]
    return {"result": (a > b) - (a < b)}


@mutant("increment-wraps", "Bytes.increment of all-FF bytes wraps to zeros instead of failing", "primitives",
        rules=("PRIM-3",))
@alters("primitives.increment")
def _increment_wraps(payload: JsonDict, out: JsonDict) -> JsonDict:
    data = bytes.fromhex(payload["bytes"])
    if "error" in out and data and set(data) == {0xFF}:
        return {"bytes": bytes(len(data)).hex()}
    return out


@mutant("unsigned-varint-as-long", "an unsigned varint of a negative int written over 64 bits, not 32", "varint",
        rules=("PRIM-5",))
@replaces("varint.write_unsigned_varint")
def _unsigned_varint_as_long(payload: JsonDict) -> JsonDict:
    data = unsigned_varint(payload["value"] & 0xFFFFFFFFFFFFFFFF)
    return {"bytes": data.hex(), "size": len(data)}


@mutant("read-int64-short-input-padded", "an int64 read past the end of the input is zero-padded, not refused",
        "primitives", rules=("PRIM-8",))
@alters("primitives.read_int64")
def _read_int64_short_input_padded(payload: JsonDict, out: JsonDict) -> JsonDict:
    if "error" not in out:
        return out
    at = payload.get("offset", 0)
    if not isinstance(at, int) or at < 0:
        return out
    chunk = bytes.fromhex(payload["bytes"])[at:at + 8]
    return {"value": int.from_bytes(chunk.ljust(8, b"\x00"), "big", signed=True)}
