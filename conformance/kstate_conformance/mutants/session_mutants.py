"""Mutants of the session store keys: each a bug a port of the session key schemas could plausibly have; and the
session store's bugs at the places of the shared mutant modules (changelog, hard places, places), built with their
helpers, so that those modules name no family of their own."""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Callable
from typing import Any

from kstate.codecs import changelog as cl
from kstate.codecs import primitives as p
from kstate.codecs import session_keys as sk
from kstate.codecs.store_types import SESSION_TYPES, StoreType
from kstate.errors import EncodeError, NullKeyError
from kstate.ops import JsonDict, call, capture, tohex, unhex
from kstate_conformance.adapter import Handler
from kstate_conformance.mutants import altered, mutant
from kstate_conformance.mutants.hard_places_mutants import _rocksdb_with
from kstate_conformance.mutants.key_schema_bugs import each_schema, upper_range_keeps_whole_key, wrong_plain_suffix
from kstate_conformance.mutants.paired_mutants import changed_answer, paired_mutant
from kstate_conformance.mutants.places_mutants import _everywhere, _restoring_for


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


# --- the session store at the shared modules' places -----------------------------------------------------------------
# Their family is the module's they came from (changelog, store_rules): the tests that kill them are that module's.

STORE_RULES = "store_rules"


@mutant("session-logs-end-time", "session stores log at the session end, not the context timestamp", "changelog",
        rules=("CL-7",))
def _session_logs_end_time() -> dict[str, Handler]:
    def record_for_write(payload: JsonDict, out: JsonDict) -> JsonDict:
        record = out.get("record")
        if str(payload.get("store_type", "")).startswith("session") and isinstance(record, dict) \
                and isinstance(payload.get("end"), int) and payload["end"] >= 0:
            record["timestamp"] = payload["end"]
        return out

    return altered("changelog.record_for_write", record_for_write)


# --- SS-24, SS-12: stream time of a restore batch ------------------------------------------------------------------


class _RestoreStreamTimeOfPutsOnly:
    """A RocksDB session restore advances stream time over the batch's puts only: a later tombstone does not move it,
    so sessions its end has expired are written (right for every batch without a tombstone at its largest end)."""

    SCHEMA: Any
    observed_stream_time: int
    _live_segment: Callable[[int], Any]
    _enter_restore_mode: Callable[[Any], None]

    def restore_batch(self, entries: Any) -> None:
        entries = list(entries)
        super().restore_batch([(k, v) for k, v in entries if v is not None])  # type: ignore[misc]
        for key, _ in (e for e in entries if e[1] is None):
            segment = self._live_segment(self.SCHEMA.decode(key).end)
            if segment is not None:
                self._enter_restore_mode(segment)
                segment.accessor.put(key, None)


@mutant("session-restore-stream-time-of-puts-only", "a RocksDB session restore batch advances stream time over its "
        "puts only, not its tombstones", STORE_RULES, rules=("SS-24", "SS-12"))
def _restore_stream_time_of_puts_only() -> dict[str, Handler]:
    return _rocksdb_with(_RestoreStreamTimeOfPutsOnly, frozenset(SESSION_TYPES))


# --- CL-11, HV-12: the headers a header-aware segmented store restores ---------------------------------------------


def _last_of_each_header(r: cl.ChangelogRecord) -> cl.ChangelogRecord:
    """The record's headers as a map: one per key, the last value (``Headers.lastHeader`` read for each key)."""
    kept = dict(r.headers)
    return dataclasses.replace(r, headers=tuple(kept.items()))


@mutant("session-headers-restore-one-header-per-key", "a session store with headers restores one header per key, "
        "the last, dropping duplicates", STORE_RULES, rules=("CL-11", "HV-12"))
def _session_headers_restore_one_header_per_key() -> dict[str, Handler]:
    return _restoring_for(frozenset({StoreType("session_with_headers")}), _last_of_each_header)


class _EmptySessionValueAsNull:
    """``if not aggregate`` for ``if aggregate is None``: a session put of zero bytes removes the session."""

    def put(self, key: bytes, start: int, end: int, aggregate: bytes | None) -> None:
        super().put(key, start, end, aggregate or None)  # type: ignore[misc]


@mutant("session-empty-value-as-null", "a session store takes an aggregate of zero bytes for null, removing the "
        "session instead of storing it", STORE_RULES, rules=("OPS-2",))
def _session_empty_value_as_null() -> dict[str, Handler]:
    return _rocksdb_with(_EmptySessionValueAsNull, frozenset(SESSION_TYPES))


@mutant("session-ignores-position-file", "a session store does not read the pre-4.3 <store>.position file at open "
        "(the window store does)", STORE_RULES, rules=("OFF-18", "SS-21"))
def _session_ignores_position_file() -> dict[str, Handler]:
    return _everywhere({"kstate.stores.session.read_legacy_position": lambda task_dir, name: {}})


# --- paired mutants (caught beside a model only: kstate conformance --model; mutants/paired_mutants.py) ---------

paired_mutant("paired-session-backward-fetch-forward", "a session store's backwardFetch answers the forward order",
              "session", ("SS-6", "SS-7"), {"session_store.fetch": changed_answer("session_store.fetch", lambda p, out: (
                  out if not p.get("backward") else {**out, "entries": out["entries"][::-1]}))})
