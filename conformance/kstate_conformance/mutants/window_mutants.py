"""Mutants of the window store keys: each a bug a port of the window key schemas could plausibly have."""

from __future__ import annotations

import struct
from collections.abc import Callable

from kstate.codecs import primitives as p
from kstate.codecs import window_keys as wk
from kstate.errors import DecodeError
from kstate.ops import JsonDict, call, capture, tohex, unhex
from kstate_conformance.adapter import Handler
from kstate_conformance.mutants import mutant
from kstate_conformance.mutants.key_schema_bugs import each_schema, upper_range_keeps_whole_key, wrong_plain_suffix
from kstate_conformance.mutants.paired_mutants import changed_answer, paired_mutant

_PREFIXED = [s for s in wk.SCHEMAS if s.prefix is not None]


def _wrong_plain_suffix(size: int, write: Callable[[int, int], bytes], read: Callable[[bytes], tuple[int, int]]) -> dict[str, Handler]:
    def fields(suffix: bytes) -> JsonDict:
        timestamp, seqnum = read(suffix)
        return {"timestamp": timestamp, "seqnum": seqnum}

    return wrong_plain_suffix(
        "window-key", size, "window.key_schema.to_store_key_binary", "window.key_schema.extract_store_key",
        lambda payload: write(payload["timestamp"], payload["seqnum"]), fields,
    )


@mutant("window-seqnum-int64", "the window store key's seqnum written and read as an 8-byte long", "window", rules=("WIN-1",))
def _seqnum_int64() -> dict[str, Handler]:
    return _wrong_plain_suffix(16, lambda ts, seq: struct.pack(">qq", ts, seq), lambda suffix: struct.unpack(">qq", suffix))


@mutant("window-start-little-endian", "the window start of plain store keys written and read little-endian", "window", rules=("WIN-1",))
def _start_little_endian() -> dict[str, Handler]:
    def read(suffix: bytes) -> tuple[int, int]:
        return struct.unpack_from("<q", suffix)[0], struct.unpack_from(">i", suffix, 8)[0]

    return _wrong_plain_suffix(12, lambda ts, seq: struct.pack("<q", ts) + struct.pack(">i", seq), read)


@mutant("window-prefixes-swapped", "time-first keys prefixed 0x01 and key-first keys 0x00", "window", rules=("WIN-2", "WIN-3"))
def _prefixes_swapped() -> dict[str, Handler]:
    def swap_first(data_hex: str) -> str:
        data = bytes.fromhex(data_hex)
        if not data or data[0] > 1:
            return data_hex
        return (bytes([data[0] ^ 1]) + data[1:]).hex()

    def rewritten(op: str) -> Handler:
        def handler(payload: JsonDict) -> JsonDict:
            out = call(op, payload)
            return {"bytes": swap_first(out["bytes"])} if "bytes" in out else out

        return handler

    def is_time_first(payload: JsonDict) -> JsonDict:
        data = bytes.fromhex(payload["bytes"])
        return {"result": len(data) > 0 and data[0] == 1}

    ops = [f"window.{s.name}.{op}" for op in ("to_store_key_binary", "from_non_prefix_window_key") for s in _PREFIXED]
    return {**{op: rewritten(op) for op in ops}, "window.is_time_first_schema_key": is_time_first}


mutant("window-upper-range-keeps-key", "upperRange appends the suffix to the whole key (no OrderedBytes truncation)", "window", rules=("WIN-11",))(
    lambda: upper_range_keeps_whole_key(wk.SCHEMAS))


@mutant("window-end-overflow-refused", "start + size overflowing a long is refused instead of capped at Long.MAX", "window", rules=("WIN-9",))
def _end_overflow_refused() -> dict[str, Handler]:
    def extract_store_window(schema: wk.WindowSchema, payload: JsonDict) -> JsonDict:
        start = schema.segment_timestamp(bytes.fromhex(payload["bytes"]))
        end = start + payload["window_size"]
        if not 0 <= start < end <= p.INT64_MAX:
            raise DecodeError("window", f"invalid window [{start}, {end})")
        return {"start": start, "end": end}

    return each_schema(wk.SCHEMAS, "extract_store_window", extract_store_window)


@mutant("window-seqnum-wraps-negative", "the duplicate seqnum overflows to Integer.MIN_VALUE (no & 0x7FFFFFFF)", "window", rules=("WIN-6",))
def _seqnum_wraps_negative() -> dict[str, Handler]:
    def next_seqnum(payload: JsonDict) -> JsonDict:
        seq = payload["seqnum"]
        if payload["retain_duplicates"]:
            seq = p.to_int32(seq + 1)
        return {"seqnum": seq}

    return {"window.next_seqnum": next_seqnum}


@mutant("window-fixed-lower-unclamped", "lowerRangeFixedSize writes a negative from instead of max(0, from)", "window", rules=("WIN-10",))
def _fixed_lower_unclamped() -> dict[str, Handler]:
    def ranges(schema: wk.WindowSchema, payload: JsonDict) -> JsonDict:
        out = call(f"window.{schema.name}.ranges", payload)
        key = unhex(payload["key"])
        out["lower_range_fixed_size"] = capture(lambda: {"bytes": tohex(schema.to_store_key(key, payload["time"], 0))})
        return out

    return each_schema(wk.SCHEMAS, "ranges", ranges)


# --- paired mutants (caught beside a model only: kstate conformance --model; mutants/paired_mutants.py) ---------

paired_mutant("paired-window-backward-all-forward", "a window store's backward all() answers the forward order",
              "window", ("WS-12",), {"window_store.all": changed_answer("window_store.all", lambda p, out: (
                  out if not p.get("backward") else {**out, "entries": out["entries"][::-1]}))})
