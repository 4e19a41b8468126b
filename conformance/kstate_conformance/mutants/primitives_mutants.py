"""Mutants of the primitive encodings."""

from __future__ import annotations

from kstate.ops import JsonDict
from kstate_conformance.adapter import Handler
from kstate_conformance.mutants import mutant


def _leb128(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


@mutant("unsigned-varints", "signed varints written without zig-zag (the int's bit pattern as LEB128)", "varint", rules=("PRIM-6",))
def _unsigned_varints() -> dict[str, Handler]:
    def write_varint(payload: JsonDict) -> JsonDict:
        data = _leb128(payload["value"] & 0xFFFFFFFF)
        return {"bytes": data.hex(), "size": len(data)}

    def write_varlong(payload: JsonDict) -> JsonDict:
        data = _leb128(payload["value"] & 0xFFFFFFFFFFFFFFFF)
        return {"bytes": data.hex(), "size": len(data)}

    return {"varint.write_varint": write_varint, "varint.write_varlong": write_varlong}


@mutant("floor-segment-ids", "segment ids computed with Python floor division instead of Java truncation", "primitives", rules=("PRIM-4",))
def _floor_segment_ids() -> dict[str, Handler]:
    def segment_id(payload: JsonDict) -> JsonDict:
        return {"segment_id": payload["timestamp"] // payload["segment_interval"]}

    return {"primitives.segment_id": segment_id}
