"""Mutants of the session store keys: each a bug a port of the session key schemas could plausibly have."""

from __future__ import annotations

import struct

from kstate.codecs import primitives as p
from kstate.codecs import session_keys as sk
from kstate.errors import EncodeError, NullKeyError
from kstate.ops import JsonDict, call, capture, tohex, unhex
from kstate_conformance.adapter import Handler
from kstate_conformance.mutants import altered, mutant
from kstate_conformance.mutants.key_schema_bugs import each_schema, upper_range_keeps_whole_key, wrong_plain_suffix


@mutant("session-start-before-end", "plain session keys written and read as [key][start][end] (the natural order)", "session", rules=("SESS-1",))
def _start_before_end() -> dict[str, Handler]:
    def fields(suffix: bytes) -> JsonDict:
        start, end = struct.unpack(">qq", suffix)

        def window() -> JsonDict:
            sk.validate_session_window(start, end)
            return {"start": start, "end": end}

        return {"start": start, "end": end, "window": capture(window)}

    return wrong_plain_suffix(
        "session-key", 16, "session.key_schema.to_binary", "session.key_schema.extract",
        lambda payload: struct.pack(">qq", payload["start"], payload["end"]), fields,
    )


@mutant("session-time-first-null-key-refused", "the time-first schema refuses a null key like the other two", "session", rules=("SESS-6",))
def _time_first_null_key_refused() -> dict[str, Handler]:
    def encode(payload: JsonDict) -> JsonDict:
        if payload["key"] is None:
            raise NullKeyError("null key")
        return call("session.time_first.to_binary", payload)

    def ranges(payload: JsonDict) -> JsonDict:
        out = call("session.time_first.ranges", payload)
        if payload["key"] is None:
            refused = {"error": {"type": "NullKeyError"}}
            out["lower_range_fixed_size"] = refused
            out["upper_range_fixed_size"] = refused
        return out

    return {"session.time_first.to_binary": encode, "session.time_first.ranges": ranges}


@mutant("session-segment-by-start", "a session key's segment chosen by its start instead of its end", "session", rules=("SESS-11",))
def _segment_by_start() -> dict[str, Handler]:
    def segment_id(schema: sk.SessionSchema, payload: JsonDict) -> JsonDict:
        decoded = schema.decode(bytes.fromhex(payload["bytes"]))
        interval = payload["segment_interval"]
        if interval < 1:
            raise EncodeError("session-store", "bad interval")
        return {"segment_timestamp": decoded.start, "segment_id": p.segment_id(decoded.start, interval)}

    return each_schema(sk.SCHEMAS, "segment_id", segment_id)


mutant("session-upper-range-keeps-key", "upperRange appends [MAX][to] to the whole key (no OrderedBytes truncation)", "session", rules=("SESS-8",))(
    lambda: upper_range_keeps_whole_key(sk.SCHEMAS))


@mutant("session-window-like-time-window", "session windows validated like TimeWindow: start == end refused", "session", rules=("SESS-4",))
def _window_like_time_window() -> dict[str, Handler]:
    def extract(schema: sk.SessionSchema, payload: JsonDict) -> JsonDict:
        out = call(f"session.{schema.name}.extract", payload)
        if "window" in out and out["start"] == out["end"]:
            out["window"] = {"error": {"type": "DecodeError"}}
        return out

    return each_schema(sk.SCHEMAS, "extract", extract)


@mutant("session-fixed-upper-unchecked", "upperRangeFixedSize of the plain schema skips the SessionWindow(to, MAX) check", "session", rules=("SESS-7",))
def _fixed_upper_unchecked() -> dict[str, Handler]:
    def ranges(payload: JsonDict, out: JsonDict) -> JsonDict:
        key = unhex(payload["key"])
        out["upper_range_fixed_size"] = capture(lambda: {"bytes": tohex(sk.PLAIN.to_store_key(key, payload["time"], p.INT64_MAX))})
        return out

    return altered("session.key_schema.ranges", ranges)
