"""Mutants of the window store keys: each a bug a port of the window key schemas could plausibly have."""

from __future__ import annotations

import struct

from kstate.codecs import primitives as p
from kstate.codecs import window_keys as wk
from kstate.errors import DecodeError, NullKeyError
from kstate.ops import JsonDict, call, capture, tohex, unhex
from kstate_conformance.adapter import Handler
from kstate_conformance.mutants import mutant


@mutant("window-seqnum-int64", "the window store key's seqnum written and read as an 8-byte long", "window", rules=("WIN-1",))
def _seqnum_int64() -> dict[str, Handler]:
    def encode(payload: JsonDict) -> JsonDict:
        key = unhex(payload["key"])
        if key is None:
            raise NullKeyError("null key")
        return {"bytes": (key + struct.pack(">qq", payload["timestamp"], payload["seqnum"])).hex()}

    def decode(payload: JsonDict) -> JsonDict:
        data = bytes.fromhex(payload["bytes"])
        if len(data) < 16:
            raise DecodeError("window-key", "short", 0)
        timestamp, seqnum = struct.unpack_from(">qq", data, len(data) - 16)
        return {"key": data[:-16].hex(), "timestamp": timestamp, "seqnum": seqnum}

    return {"window.key_schema.to_store_key_binary": encode, "window.key_schema.extract_store_key": decode}


@mutant("window-start-little-endian", "the window start of plain store keys written and read little-endian", "window", rules=("WIN-1",))
def _start_little_endian() -> dict[str, Handler]:
    def encode(payload: JsonDict) -> JsonDict:
        key = unhex(payload["key"])
        if key is None:
            raise NullKeyError("null key")
        return {"bytes": (key + struct.pack("<q", payload["timestamp"]) + struct.pack(">i", payload["seqnum"])).hex()}

    def decode(payload: JsonDict) -> JsonDict:
        data = bytes.fromhex(payload["bytes"])
        if len(data) < 12:
            raise DecodeError("window-key", "short", 0)
        (timestamp,) = struct.unpack_from("<q", data, len(data) - 12)
        (seqnum,) = struct.unpack_from(">i", data, len(data) - 4)
        return {"key": data[:-12].hex(), "timestamp": timestamp, "seqnum": seqnum}

    return {"window.key_schema.to_store_key_binary": encode, "window.key_schema.extract_store_key": decode}


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

    return {
        "window.time_first.to_store_key_binary": rewritten("window.time_first.to_store_key_binary"),
        "window.key_first.to_store_key_binary": rewritten("window.key_first.to_store_key_binary"),
        "window.time_first.from_non_prefix_window_key": rewritten("window.time_first.from_non_prefix_window_key"),
        "window.key_first.from_non_prefix_window_key": rewritten("window.key_first.from_non_prefix_window_key"),
        "window.is_time_first_schema_key": is_time_first,
    }


@mutant("window-upper-range-keeps-key", "upperRange appends the suffix to the whole key (no OrderedBytes truncation)", "window", rules=("WIN-11",))
def _upper_range_keeps_key() -> dict[str, Handler]:
    def ranges_for(schema: wk.WindowSchema) -> Handler:
        def handler(payload: JsonDict) -> JsonDict:
            out = call(f"window.{schema.value}.ranges", payload)
            key = unhex(payload["key"])
            if key is not None:
                whole = key + p.encode_int64(payload["time"]) + p.encode_int32(p.INT32_MAX)
                prefix = b"" if schema is wk.WindowSchema.PLAIN else b"\x01"
                out["upper_range"] = {"bytes": tohex(prefix + whole)}
            return out

        return handler

    return {f"window.{s.value}.ranges": ranges_for(s) for s in (wk.WindowSchema.PLAIN, wk.WindowSchema.KEY_FIRST)}


@mutant("window-end-overflow-refused", "start + size overflowing a long is refused instead of capped at Long.MAX", "window", rules=("WIN-9",))
def _end_overflow_refused() -> dict[str, Handler]:
    def window_for(schema: wk.WindowSchema) -> Handler:
        def handler(payload: JsonDict) -> JsonDict:
            start = wk.extract_store_timestamp(schema, bytes.fromhex(payload["bytes"]))
            end = start + payload["window_size"]
            if not 0 <= start < end <= p.INT64_MAX:
                raise DecodeError("window", f"invalid window [{start}, {end})")
            return {"start": start, "end": end}

        return handler

    return {f"window.{s.value}.extract_store_window": window_for(s) for s in wk.WindowSchema}


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
    def ranges_for(schema: wk.WindowSchema) -> Handler:
        def handler(payload: JsonDict) -> JsonDict:
            out = call(f"window.{schema.value}.ranges", payload)
            key = unhex(payload["key"])
            out["lower_range_fixed_size"] = capture(
                lambda: {"bytes": tohex(wk.to_store_key_binary(schema, key, payload["time"], 0))})
            return out

        return handler

    return {f"window.{s.value}.ranges": ranges_for(s) for s in wk.WindowSchema}
