"""Operations over the primitive encodings (spec/primitives.md)."""

from __future__ import annotations

from kstate.codecs import primitives as p
from kstate.ops import JsonDict, op, tohex
from kstate.ops.inputs import require_hex, require_int


def _lenient_varint(payload: JsonDict) -> str | None:
    """Kafka accepts non-minimal encodings and drops high bits of an over-long last byte (PRIM-7)."""
    data = bytes.fromhex(payload.get("bytes") or "")
    end = 0
    while end < len(data) and data[end] & 0x80:
        end += 1
    if end >= len(data):
        return None
    used = data[: end + 1]
    if len(used) > 1 and used[-1] == 0:
        return "non-minimal varint encoding accepted"
    if (len(used) == 5 and used[-1] > 0x0F) or (len(used) == 10 and used[-1] > 0x01):
        return "high bits of the final varint byte dropped"
    return None


@op("varint.write_varint", rules=["PRIM-5", "PRIM-6"], java=["ByteUtils.writeVarint"])
def write_varint(payload: JsonDict) -> JsonDict:
    """Zig-zag varint of a Java int."""
    data = p.write_varint(require_int(payload, "value"))
    return {"bytes": tohex(data), "size": len(data)}


@op("varint.write_varlong", rules=["PRIM-5", "PRIM-6"], java=["ByteUtils.writeVarlong"])
def write_varlong(payload: JsonDict) -> JsonDict:
    """Zig-zag varlong of a Java long."""
    data = p.write_varlong(require_int(payload, "value"))
    return {"bytes": tohex(data), "size": len(data)}


@op("varint.write_unsigned_varint", rules=["PRIM-5"], java=["ByteUtils.writeUnsignedVarint"])
def write_unsigned_varint(payload: JsonDict) -> JsonDict:
    """Unsigned varint of a Java int's bit pattern."""
    data = p.write_unsigned_varint(require_int(payload, "value"))
    return {"bytes": tohex(data), "size": len(data)}


@op("varint.write_unsigned_varlong", rules=["PRIM-5"], java=["ByteUtils.writeUnsignedVarlong"])
def write_unsigned_varlong(payload: JsonDict) -> JsonDict:
    """Unsigned varlong of a Java long's bit pattern."""
    data = p.write_unsigned_varlong(require_int(payload, "value"))
    return {"bytes": tohex(data), "size": len(data)}


@op("varint.read_varint", rules=["PRIM-6", "PRIM-7"], java=["ByteUtils.readVarint"], lenient=_lenient_varint)
def read_varint(payload: JsonDict) -> JsonDict:
    """Decode a zig-zag varint from the start of ``bytes``."""
    value, consumed = p.read_varint(require_hex(payload, "bytes", nullable=False))
    return {"value": value, "bytes_consumed": consumed}


@op("varint.read_varlong", rules=["PRIM-6", "PRIM-7"], java=["ByteUtils.readVarlong"], lenient=_lenient_varint)
def read_varlong(payload: JsonDict) -> JsonDict:
    """Decode a zig-zag varlong from the start of ``bytes``."""
    value, consumed = p.read_varlong(require_hex(payload, "bytes", nullable=False))
    return {"value": value, "bytes_consumed": consumed}


@op(
    "varint.read_unsigned_varint",
    rules=["PRIM-5", "PRIM-7"],
    java=["ByteUtils.readUnsignedVarint"],
    lenient=_lenient_varint,
)
def read_unsigned_varint(payload: JsonDict) -> JsonDict:
    """Decode an unsigned varint from the start of ``bytes``."""
    value, consumed = p.read_unsigned_varint(require_hex(payload, "bytes", nullable=False))
    return {"value": value, "bytes_consumed": consumed}


@op(
    "varint.read_unsigned_varlong",
    rules=["PRIM-5", "PRIM-7"],
    java=["ByteUtils.readUnsignedVarlong"],
    lenient=_lenient_varint,
)
def read_unsigned_varlong(payload: JsonDict) -> JsonDict:
    """Decode an unsigned varlong from the start of ``bytes``."""
    value, consumed = p.read_unsigned_varlong(require_hex(payload, "bytes", nullable=False))
    return {"value": value, "bytes_consumed": consumed}


@op("primitives.segment_id", rules=["PRIM-4"])
def segment_id(payload: JsonDict) -> JsonDict:
    """``timestamp / segment_interval`` with Java truncation."""
    return {"segment_id": p.segment_id(require_int(payload, "timestamp"), require_int(payload, "segment_interval"))}


@op("primitives.increment", rules=["PRIM-3"])
def increment(payload: JsonDict) -> JsonDict:
    """``Bytes.increment`` of ``bytes``; an error on carry overflow."""
    return {"bytes": tohex(p.increment(require_hex(payload, "bytes", nullable=False)))}


@op("primitives.compare", rules=["PRIM-2"])
def compare(payload: JsonDict) -> JsonDict:
    """Unsigned lexicographic comparison of ``a`` and ``b``: -1, 0 or 1."""
    return {"result": p.compare_unsigned(require_hex(payload, "a", nullable=False), require_hex(payload, "b", nullable=False))}


@op("primitives.encode_int64", rules=["PRIM-1"])
def encode_int64(payload: JsonDict) -> JsonDict:
    """Big-endian two's complement int64."""
    return {"bytes": tohex(p.encode_int64(require_int(payload, "value")))}


@op("primitives.read_int64", rules=["PRIM-1", "PRIM-8"])
def read_int64(payload: JsonDict) -> JsonDict:
    """Read a big-endian int64 at ``offset`` of ``bytes``."""
    value, _ = p.read_int64(require_hex(payload, "bytes", nullable=False), require_int(payload, "offset", 0))
    return {"value": value}


@op("primitives.encode_int32", rules=["PRIM-1"])
def encode_int32(payload: JsonDict) -> JsonDict:
    """Big-endian two's complement int32."""
    return {"bytes": tohex(p.encode_int32(require_int(payload, "value")))}
