"""Primitive encodings chosen to pin segment ids, increments and ordering (PRIM-*)."""

from __future__ import annotations

from kstate.fixtures_tool import CaseSpec


def cases() -> list[CaseSpec]:
    out: list[CaseSpec] = []
    for ts, interval in [(0, 10), (9, 10), (10, 10), (-1, 10), (-9, 10), (-10, 10), (-11, 10),
                         (-(1 << 63), 60000), ((1 << 63) - 1, 60000), (1700000000000, 300000)]:
        out.append(CaseSpec(f"segment_id_{ts}_{interval}", "primitives.segment_id",
                            {"timestamp": ts, "segment_interval": interval}))
    for data in ["", "00", "ff", "00ff", "01ff", "ffff", "7f", "0000", "fffe"]:
        out.append(CaseSpec(f"increment_{data or 'empty'}", "primitives.increment", {"bytes": data}))
    for a, b in [("", ""), ("", "00"), ("01", "ff"), ("ff", "01"), ("0100", "01"), ("7f", "80"),
                 ("ffffffff", "00000001")]:
        out.append(CaseSpec(f"compare_{a or 'empty'}_{b or 'empty'}", "primitives.compare", {"a": a, "b": b}))
    return out + int_cases()


def int_cases() -> list[CaseSpec]:
    out = [CaseSpec(f"int64_{v}", "primitives.encode_int64", {"value": v})
           for v in (0, 1, -1, 255, -256, (1 << 63) - 1, -(1 << 63), 1700000000000)]
    out += [CaseSpec(f"int32_{v}", "primitives.encode_int32", {"value": v}) for v in (0, 1, -1, (1 << 31) - 1, -(1 << 31))]
    out += [CaseSpec("int64_out_of_range", "primitives.encode_int64", {"value": 1 << 63})]
    out += [CaseSpec(f"read_int64_{name}", "primitives.read_int64", {"bytes": data, "offset": off})
            for name, data, off in [("minus_one", "ffffffffffffffff", 0), ("at_offset", "00000000000000000105", 2),
                                    ("truncated", "00000000000000", 0), ("empty", "", 0)]]
    return out
