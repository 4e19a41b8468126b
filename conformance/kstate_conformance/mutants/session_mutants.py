"""Mutants of the session family, each a bug a port could plausibly have: of its key schemas; of its stores
(spec/session-store.md), where bugs of a read's filter or order replace that ``session_store.*`` operation with the
reference's answer mishandled the way the port would, and bugs of what a store keeps or logs act at the store level;
its store's bugs at the places of the shared mutant modules (changelog, hard places, places), built with their
helpers, so that those modules name no family of their own; and its paired mutants (``paired_mutants``).
"""

from __future__ import annotations

import dataclasses
import struct
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, cast

from kstate.codecs import changelog as cl
from kstate.codecs import primitives as p
from kstate.codecs import session_keys as sk
from kstate.codecs.changelog import ChangelogRecord
from kstate.codecs.header_values import decode_aggregation_with_headers
from kstate.codecs.session_keys import SessionKeySchema, SessionStoreKey
from kstate.codecs.store_types import SESSION_TYPES, StoreType
from kstate.errors import EncodeError, KStateError, NullKeyError
from kstate.ops import JsonDict, call, capture, tohex, unhex
from kstate.ops.store_ops import DEFAULT_BUILDER, handle_for, make_open_handler
from kstate.stores.api import Backend
from kstate.stores.changelogging import ChangelogSink, RecordContextHolder
from kstate.stores.column_families import DualColumnFamilyAccessor, SingleColumnFamilyAccessor
from kstate.stores.factory import open_bytes_store, task_directory
from kstate.stores.families import changelogging_store, store_classes
from kstate.stores.life import Op
from kstate.stores.segments import KeyValueSegment, KeyValueSegments
from kstate.stores.session import (
    ChangeLoggingSessionBytesStore,
    RocksDBSessionStore,
    RocksDBSessionStoreWithHeaders,
    SessionSegmentsWithHeaders,
    check_session,
)
from kstate.stores.surface import RocksDBOptions, check_changelog_offsets, to_codec_tp
from kstate_conformance import store_types as types
from kstate_conformance.adapter import Handler
from kstate_conformance.mutants import altered, mutant, registering
from kstate_conformance.mutants.hard_places_mutants import _rocksdb_with
from kstate_conformance.mutants.key_schema_bugs import each_schema, upper_range_keeps_whole_key, wrong_plain_suffix
from kstate_conformance.mutants.paired_mutants import changed_answer, paired_mutant
from kstate_conformance.mutants.places_mutants import _everywhere, _restoring_for
from kstate_conformance.mutants.window_mutants import StrayEntryStopsTheScan


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


# --- its stores ----------------------------------------------------------------------------------------------------
FAMILY = "session_store"
_READS = ("session_store.find_sessions", "session_store.fetch")
Rewrite = Callable[[JsonDict], JsonDict]


def _handle_type(payload: JsonDict) -> StoreType | None:
    """The store type of the handle ``payload`` names, None when it names none that is open."""
    try:
        return handle_for(payload).store_type
    except KStateError:
        return None


def _rewriting(ops: tuple[str, ...], name: str, description: str,
               rules: tuple[str, ...]) -> Callable[[Rewrite], Rewrite]:
    """Register the mutant ``name`` whose ``ops`` answer as the reference's do to the payload the decorated function
    rewrites (a bug of the port's argument handling)."""

    def rewritten(op: str, rewrite: Rewrite) -> Handler:
        return lambda payload: call(op, rewrite(payload))

    return registering(FAMILY, lambda rewrite: {op: rewritten(op, rewrite) for op in ops})(name, description, rules)


def _session_open_options(payload: JsonDict) -> dict[str, Any] | None:
    """The options of a ``store.open`` of a session store that gives an integer ``retention_ms`` (else None)."""
    options = payload.get("options")
    if payload.get("store_type") in types.SESSION_TYPES and isinstance(options, dict) \
            and isinstance(options.get("retention_ms"), int):
        return options
    return None


def _entries_of(op: str, payload: JsonDict, keep: Any) -> JsonDict:
    out = call(op, payload)
    if "error" not in out:
        out["entries"] = [e for e in out["entries"] if keep(payload, e)]
    return out


@mutant("session-overlap-strict", "findSessions with strict inequalities: end > earliestSessionEndTime and "
        "start < latestSessionStartTime (sessions touching a bound are missed)", FAMILY, rules=("SS-5",))
def _overlap_strict() -> dict[str, Handler]:
    def strict(payload: JsonDict, entry: list[Any]) -> bool:
        _, start, end, _ = entry
        return bool(end > payload["earliest_end"] and start < payload["latest_start"])

    return {"session_store.find_sessions": lambda payload: _entries_of("session_store.find_sessions", payload, strict)}


@mutant("session-find-ordered-by-start", "findSessions and fetch order the sessions by start time (then key) "
        "instead of Kafka's end-time order", FAMILY, rules=("SS-6", "SS-7"))
def _ordered_by_start() -> dict[str, Handler]:
    def by_start(op: str) -> Handler:
        def handler(payload: JsonDict) -> JsonDict:
            out = call(op, payload)
            if "error" not in out:
                out["entries"] = sorted(out["entries"], key=lambda e: (e[1], bytes.fromhex(e[0]), e[2]),
                                        reverse=bool(payload.get("backward")))
            return out

        return handler

    return {op: by_start(op) for op in _READS}


@_rewriting(_READS, "session-backward-forward-order", "the backward variants answer the forward order",
            rules=("SS-6", "SS-7"))
def _forward(payload: JsonDict) -> JsonDict:
    return {**payload, "backward": False}


@_rewriting(("store.open",), "session-expiry-off-by-one", "a session ending exactly at observed stream time - "
            "retention is still live (< where Kafka has <=): the store keeps one millisecond more than its retention",
            rules=("SS-13", "SS-17"))
def _retention_one_more(payload: JsonDict) -> JsonDict:
    options = _session_open_options(payload)
    if options is None:
        return payload
    return {**payload, "options": {**options, "retention_ms": options["retention_ms"] + 1}}


@mutant("session-remove-writes-empty", "remove writes an empty aggregate (and logs it) instead of deleting the "
        "session with a tombstone", FAMILY, rules=("SS-4", "SS-27"))
def _remove_writes_empty() -> dict[str, Handler]:
    def remove(payload: JsonDict) -> JsonDict:
        return call("session_store.put", {**payload, "value": ""})

    return {"session_store.remove": remove}


# --- bugs of what a store keeps or logs: ``store.open`` builds the session stores with a broken class ---------------


def _open_with(rocksdb: Mapping[StoreType, type] | None = None, logging: type | None = None) -> dict[str, Handler]:
    """A ``store.open`` whose RocksDB session stores are ``rocksdb``'s classes and whose session change-logging
    layer is ``logging``; every other store is the reference's."""

    def open_bytes(store_type: StoreType, backend: Backend, **kwargs: Any) -> Any:
        cls = (rocksdb or {}).get(StoreType(store_type)) if Backend(backend) is Backend.ROCKSDB else None
        if cls is None:
            return open_bytes_store(store_type, backend, **kwargs)
        options = store_classes(StoreType(store_type)).check_options(kwargs.pop("options", None) or {})
        state_dir = kwargs.pop("state_dir", None) or tempfile.mkdtemp(prefix="kstate-")
        task_dir = task_directory(state_dir, kwargs.pop("application_id", "app"), kwargs.pop("task_id", "0_0"))
        name = kwargs.pop("name")
        return cls(name, task_dir, options=RocksDBOptions(**kwargs), **options)

    def logging_layer(inner: Any, store_type: StoreType, context: RecordContextHolder, sink: ChangelogSink) -> Any:
        if logging is not None and StoreType(store_type) in (StoreType.SESSION, StoreType.SESSION_WITH_HEADERS):
            return logging(inner, StoreType(store_type), context, sink)
        return changelogging_store(inner, store_type, context, sink)

    return {"store.open": make_open_handler(replace(DEFAULT_BUILDER, open_bytes_store=open_bytes,
                                                    logging_layer=logging_layer))}


#: The decorated class as the RocksDB session store, the RocksDB session_with_headers store, or the session
#: change-logging layer.
_session_mutant = registering(FAMILY, lambda cls: _open_with({StoreType.SESSION: cls}))
_headers_mutant = registering(FAMILY, lambda cls: _open_with({StoreType.SESSION_WITH_HEADERS: cls}))
_logging_mutant = registering(FAMILY, lambda cls: _open_with(logging=cls))


def _both_types(cls: type[RocksDBSessionStore]) -> dict[str, Handler]:
    """``cls`` as the RocksDB session store, and ``cls`` over the reference's RocksDB session_with_headers store."""
    with_headers = type(f"{cls.__name__}WithHeaders", (cls, RocksDBSessionStoreWithHeaders), {})
    return _open_with({StoreType.SESSION: cls, StoreType.SESSION_WITH_HEADERS: with_headers})


def _changed_store_mutant(name: str, description: str, rules: tuple[str, ...], store_type: StoreType,
                          **attributes: Any) -> None:
    """Register the mutant ``name``: the reference's RocksDB store of ``store_type`` with its class attributes
    ``attributes`` changed (its segments class, a flag)."""
    base = RocksDBSessionStore if store_type is StoreType.SESSION else RocksDBSessionStoreWithHeaders
    changed = type(f"{base.__name__}_{'_'.join(attributes)}", (base,), attributes)
    mutant(name, description, FAMILY, rules=rules)(lambda: _open_with({store_type: changed}))


#: The decorated subclass of the RocksDB session store, over both session store types.
_both_types_mutant = registering(FAMILY, _both_types)


class _StartFirstSchema(SessionKeySchema):
    """The session key written and read as ``[key][start][end]`` (the natural order; Kafka writes end first)."""

    def to_store_key(self, key: bytes | None, start: int, end: int) -> bytes:
        return super().to_store_key(key, end, start)

    def decode(self, data: bytes) -> SessionStoreKey:
        swapped = super().decode(data)
        return SessionStoreKey(swapped.key, swapped.end, swapped.start)


_START_FIRST = _StartFirstSchema()


class _StartFirstRocksDB(RocksDBSessionStore):
    SCHEMA = _START_FIRST


class _StartFirstRocksDBWithHeaders(RocksDBSessionStoreWithHeaders):
    SCHEMA = _START_FIRST


class _StartFirstLogging(ChangeLoggingSessionBytesStore):
    def _record(self, key: bytes, start: int, end: int, value: bytes | None) -> ChangelogRecord:
        return super()._record(key, end, start, value)


@mutant("session-key-start-before-end", "the session store key (RocksDB rows and changelog keys) is "
        "[key][start][end], the natural order, where Kafka writes the end first", FAMILY, rules=("SS-1", "SS-26"))
def _key_start_before_end() -> dict[str, Handler]:
    return _open_with({StoreType.SESSION: _StartFirstRocksDB, StoreType.SESSION_WITH_HEADERS: _StartFirstRocksDBWithHeaders},
                      _StartFirstLogging)


@_logging_mutant("session-headers-changelog-drops-headers", "session_with_headers logs the raw aggregate without the "
                 "stored headers (and tombstones without the context's)", rules=("SS-26", "SS-27"))
class _HeaderlessLogging(ChangeLoggingSessionBytesStore):
    def _record(self, key: bytes, start: int, end: int, value: bytes | None) -> ChangelogRecord:
        return dataclasses.replace(super()._record(key, start, end, value), headers=())


class _FirstSegmentOnlyUpgrade(SessionSegmentsWithHeaders):
    """Only the first segment opened reads its legacy ``default`` family; the others see the new family only."""

    def get_or_create_segment(self, segment_id_: int) -> KeyValueSegment:
        first = not self._segments
        segment = super().get_or_create_segment(segment_id_)
        accessor = segment.instance.accessor
        if not first and isinstance(accessor, DualColumnFamilyAccessor):
            segment.instance.accessor = SingleColumnFamilyAccessor(accessor.staged, accessor.new_cf)
        return segment


_changed_store_mutant("session-upgrade-first-segment-only", "opening a session store as session_with_headers "
                      "migrates the first segment only: the plain rows of the other segments are no longer read",
                      ("SS-32",), StoreType.SESSION_WITH_HEADERS, SEGMENTS=_FirstSegmentOnlyUpgrade)


@_both_types_mutant("session-fetch-session-ignores-expiry", "RocksDB fetchSession answers a session its segment still "
                    "holds although it ended before observed stream time - retention + 1", rules=("SS-16",))
class _FetchSessionIgnoresExpiry(RocksDBSessionStore):
    def _get(self, key: bytes, start: int, end: int) -> bytes | None:
        segment = self.segments.segment_for_timestamp(end)
        return None if segment is None else segment.accessor.get(self.SCHEMA.to_store_key(key, start, end))


@_logging_mutant("session-dropped-write-not-logged", "a put the store drops as expired is not logged", rules=("SS-28",))
class _SkipsDroppedWrites(ChangeLoggingSessionBytesStore):
    """Logs a put only if the store kept it (Kafka logs every accepted write)."""

    def put(self, key: bytes, start: int, end: int, aggregate: bytes | None) -> None:
        dropped = self.inner.dropped_records
        sink, kept = self.sink, cast(list[ChangelogRecord], [])
        self.sink = cast(ChangelogSink, kept)
        try:
            super().put(key, start, end, aggregate)
        finally:
            self.sink = sink
        if self.inner.dropped_records == dropped:
            for record in kept:
                sink.append(record)


@_session_mutant("session-store-segment-by-start", "the RocksDB session store puts a session into the segment of its "
                 "START", rules=("SS-10",))
class _SegmentByStart(RocksDBSessionStore):
    def _put(self, key: bytes, start: int, end: int, value: bytes | None) -> None:
        self.observed_stream_time = max(self.observed_stream_time, end)
        segment = self.segments.get_or_create_segment_if_live(self.segments.segment_id(start), self.observed_stream_time)
        if segment is None:
            self.dropped_records += 1
            return
        segment.accessor.put(self.SCHEMA.to_store_key(key, start, end), value)


class _SegmentsNeverExpire(KeyValueSegments):
    def cleanup_expired_segments(self, stream_time: int) -> None:
        return None


_changed_store_mutant("session-expired-segments-kept", "expired segments are never deleted (reads still hide their "
                      "sessions)", ("SS-15",), StoreType.SESSION, SEGMENTS=_SegmentsNeverExpire)
# As the plain store's segments: cleanup only after a live lookup.
_changed_store_mutant("session-headers-dropped-write-keeps-expired", "session_with_headers keeps its expired "
                      "segments after a dropped write, as the plain store does (SessionSegmentsWithHeaders cleans up "
                      "after every lookup)", ("SS-15",), StoreType.SESSION_WITH_HEADERS,
                      CLEANS_UP_ON_EXPIRED_WRITE=False)


@_rewriting(("store.restore",), "session-restore-ignores-record-headers", "session_with_headers restores a record "
            "with empty headers (the plain session converter) instead of the record's headers", rules=("SS-34",))
def _records_without_headers(payload: JsonDict) -> JsonDict:
    records = payload.get("records")
    if isinstance(records, list) and _handle_type(payload) is StoreType.SESSION_WITH_HEADERS:
        return {**payload, "records": [{**r, "headers": []} if isinstance(r, dict) else r for r in records]}
    return payload


# --- the reads' and writes' arguments (SS-2, SS-3, SS-8, SS-9) ---------------------------------------------------


@_rewriting(("session_store.put", "session_store.remove"), "session-null-key-as-empty", "a null session key is "
            "written (and removed) as the empty key instead of being refused", rules=("SS-2",))
def _null_key_as_empty(payload: JsonDict) -> JsonDict:
    return {**payload, "key": ""} if payload.get("key", "") is None else payload


def _lax_session(key: bytes | None, start: int, end: int) -> tuple[bytes, int, int]:
    """Only ``end >= start`` is checked: a negative start (SessionWindow's first check) passes."""
    if isinstance(start, int) and isinstance(end, int) and start < 0 <= end and key is not None:
        return bytes(key), start, end
    return check_session(key, start, end)


class _NegativeStartRocksDB(RocksDBSessionStore):
    def put(self, key: bytes, start: int, end: int, aggregate: bytes | None) -> None:
        checked_key, start_ms, end_ms = _lax_session(key, start, end)
        self._allow(Op.WRITE)
        self._put(checked_key, start_ms, end_ms, None if aggregate is None else bytes(aggregate))

    def remove(self, key: bytes, start: int, end: int) -> None:
        checked_key, start_ms, end_ms = _lax_session(key, start, end)
        self._allow(Op.WRITE)
        self._remove(checked_key, start_ms, end_ms)


class _NegativeStartLogging(ChangeLoggingSessionBytesStore):
    def put(self, key: bytes, start: int, end: int, aggregate: bytes | None) -> None:
        checked_key, start_ms, end_ms = _lax_session(key, start, end)
        value = None if aggregate is None else bytes(aggregate)
        record = self._record(checked_key, start_ms, end_ms, value)
        self.inner.put(checked_key, start_ms, end_ms, value)
        self.sink.append(record)


@mutant("session-negative-start-accepted", "a session window with a negative start (and end >= start) is written: "
        "the port checks end >= start only", FAMILY, rules=("SS-3",))
def _negative_start_accepted() -> dict[str, Handler]:
    return _open_with({StoreType.SESSION: _NegativeStartRocksDB}, _NegativeStartLogging)


@_rewriting(("session_store.fetch",), "session-fetch-range-single-key", "fetch(keyFrom, keyTo) answers keyFrom's "
            "sessions only (the single-key fetch called by mistake)", rules=("SS-8",))
def _range_as_single_key(payload: JsonDict) -> JsonDict:
    if payload.get("key_from") is not None and payload.get("key_to") is not None:
        return {**payload, "key_to": None}
    return payload


@_rewriting(_READS, "session-inverted-range-swapped", "a key range with from > to is read as [to, from] instead of "
            "answering nothing", rules=("SS-9",))
def _inverted_range_swapped(payload: JsonDict) -> JsonDict:
    key_from, key_to = payload.get("key_from"), payload.get("key_to")
    if isinstance(key_from, str) and isinstance(key_to, str) and bytes.fromhex(key_from) > bytes.fromhex(key_to):
        return {**payload, "key_from": key_to, "key_to": key_from}
    return payload


# --- segments, stream time, expiry (SS-11, SS-12, SS-14) ---------------------------------------------------------


@_rewriting(("store.open",), "session-default-interval-no-floor", "the default segment interval is retention / 2 "
            "without Kafka's 60000 floor", rules=("SS-11",))
def _interval_half_the_retention(payload: JsonDict) -> JsonDict:
    options = _session_open_options(payload)
    if options is None or options["retention_ms"] <= 1 or "segment_interval_ms" in options:
        return payload
    return {**payload, "options": {**options, "segment_interval_ms": options["retention_ms"] // 2}}


@_session_mutant("session-remove-keeps-stream-time", "the RocksDB store's remove does not advance observed stream "
                 "time (the in-memory store's behaviour ported to RocksDB)", rules=("SS-12",))
class _RemoveKeepsStreamTime(RocksDBSessionStore):
    def _remove(self, key: bytes, start: int, end: int) -> None:
        segment = self.segments.segment_for_timestamp(end)
        if segment is not None:
            segment.accessor.put(self.SCHEMA.to_store_key(key, start, end), None)


@_session_mutant("session-expired-put-written", "a put into an expired segment creates the segment and writes the "
                 "session (getOrCreateSegment where Kafka calls getOrCreateSegmentIfLive)", rules=("SS-14",))
class _WritesExpiredPuts(RocksDBSessionStore):
    def _put(self, key: bytes, start: int, end: int, value: bytes | None) -> None:
        self.observed_stream_time = max(self.observed_stream_time, end)
        segment = self.segments.get_or_create_segment(self.segments.segment_id(end))
        self._update_position()
        segment.accessor.put(self.SCHEMA.to_store_key(key, start, end), value)


# --- offsets, crash, restore (SS-19..SS-25) ----------------------------------------------------------------------


def _session_backend(payload: JsonDict) -> Backend | None:
    try:
        handle = handle_for(payload)
    except KStateError:
        return None
    return handle.backend if handle.store_type in types.SESSION_TYPES else None


@mutant("session-memory-keeps-offsets", "the in-memory session store remembers the offsets it was committed with "
        "and answers them (Kafka's is not persistent and manages none)", FAMILY, rules=("SS-19",))
def _memory_keeps_offsets() -> dict[str, Handler]:
    committed: dict[tuple[str, str, int], int] = {}

    def commit(payload: JsonDict) -> JsonDict:
        out = call("store.commit", payload)
        offsets = payload.get("changelog_offsets")
        if "error" not in out and _session_backend(payload) is Backend.MEMORY and isinstance(offsets, list):
            for topic, partition, offset in offsets:
                if offset is not None:
                    committed[(str(payload.get("handle")), topic, partition)] = offset
        return out

    def committed_offset(payload: JsonDict) -> JsonDict:
        out = call("store.committed_offset", payload)
        key = (str(payload.get("handle")), payload.get("topic"), payload.get("partition"))
        if "error" not in out and _session_backend(payload) is Backend.MEMORY and key in committed:
            out["offset"] = committed[key]
        return out

    return {"store.commit": commit, "store.committed_offset": committed_offset}


@_both_types_mutant("session-open-checks-segments-one-by-one", "existing segments are opened one by one, each checked "
                    "only when it opens: a refused open has already opened (and written) the segments before the bad "
                    "one", rules=("SS-20",))
class _OpensBeforeChecking(RocksDBSessionStore):
    """Kafka's ``openExisting`` ported literally: each segment opened in turn, the first bad one refusing the store
    after the ones before it were opened (and written)."""

    def _check_segment(self, path: Any) -> None:
        return None


@_both_types_mutant("session-stray-entry-stops-the-scan", "an entry of the segment directory that names no segment "
                    "stops the scan at open, as Kafka's swallowed error does: no segment is opened", rules=("LAY-12",))
class _StrayEntryStopsTheScan(StrayEntryStopsTheScan, RocksDBSessionStore):
    pass


@_both_types_mutant("session-deleted-segment-unnoticed", "a segment directory deleted outside the store goes "
                    "unnoticed: the store opens and still claims the committed offset that covers the lost rows",
                    rules=("LAY-13",))
class _DeletedSegmentUnnoticed(RocksDBSessionStore):
    """A segment directory deleted outside the store goes unnoticed while the others claim the committed offset."""

    def _check_listed_segments(self, found: Any) -> None:
        return None


@_session_mutant("session-commit-newest-segment-only", "commit writes the staged data, position and offsets of the "
                 "newest segment only (the one a put last created), not of every open segment", rules=("SS-21",))
class _CommitsNewestSegmentOnly(RocksDBSessionStore):
    def commit(self, changelog_offsets: Mapping[Any, int | None]) -> None:
        newest = self.segments.all_segments(forward=False)[:1]
        self._allow(Op.COMMIT)
        offsets = check_changelog_offsets(changelog_offsets)
        for segment in newest:
            segment.instance.commit(offsets, self._position)


@mutant("session-crash-closes-cleanly", "a crash of a session store writes its staged data and status CLOSED, as "
        "close does", FAMILY, rules=("SS-22",))
def _crash_closes_cleanly() -> dict[str, Handler]:
    def crash(payload: JsonDict) -> JsonDict:
        return call("store.close" if _session_backend(payload) is Backend.ROCKSDB else "store.crash", payload)

    return {"store.crash": crash}


@_session_mutant("session-committed-offset-newest-segment", "the committed offset is the newest segment's only: null "
                 "when that segment was created since the last commit, where Kafka walks on to an older one",
                 rules=("SS-23",))
class _NewestSegmentOffsetOnly(RocksDBSessionStore):
    def committed_offset(self, partition: Any) -> int | None:
        self._allow(Op.OFFSETS)
        newest = self.segments.all_segments(forward=False)[:1]
        return next((s.instance.committed_offset(to_codec_tp(partition)) for s in newest), None)


@_session_mutant("session-restore-ignores-liveness", "restore writes each record into the segment of its end without "
                 "the live check (getOrCreateSegment where Kafka calls getOrCreateSegmentIfLive): an expired record "
                 "recreates its segment", rules=("SS-24",))
class _RestoreIgnoresLiveness(RocksDBSessionStore):
    def restore_batch(self, entries: Any) -> None:
        ends = [self.SCHEMA.decode(key).end for key, _ in entries]
        self.observed_stream_time = max([self.observed_stream_time, *ends])
        for (key, value), end in zip(entries, ends, strict=True):
            self.segments.get_or_create_segment(self.segments.segment_id(end)).accessor.put(key, value)


_PLAIN_SCHEMA = SessionKeySchema()


@mutant("session-restore-through-put", "restore replays each changelog record through the store's put (the "
        "change-logging layer included), so restored records are logged again", FAMILY, rules=("SS-25",))
def _restore_through_put() -> dict[str, Handler]:
    def restore(payload: JsonDict) -> JsonDict:
        records = payload.get("records")
        if _handle_type(payload) is not StoreType.SESSION or not isinstance(records, list):
            return call("store.restore", payload)
        for record in records:
            session = _PLAIN_SCHEMA.decode(bytes.fromhex(record["key"]))
            out = call("session_store.put", {"handle": payload["handle"], "key": session.key.hex(),
                                             "start": session.start, "end": session.end, "value": record["value"]})
            if "error" in out:
                return out
        return {"batches": 1 if records else 0, "restored": len(records)}

    return {"store.restore": restore}


# --- change logging, header-aware segments, closing (SS-29..SS-37) -----------------------------------------------


@_rewriting(("changelog.topic_config",), "session-changelog-config-like-kv", "a session store's changelog topic is "
            "configured as a key-value store's: compact only, no retention", rules=("SS-29",))
def _topic_config_of_a_kv_store(payload: JsonDict) -> JsonDict:
    if payload.get("store_type") in types.SESSION_TYPES:
        return {**payload, "store_type": StoreType.KEY_VALUE.value}
    return payload


@_headers_mutant("session-headers-segments-plain", "session_with_headers segments are built with the plain segment "
                 "class: the values go to the default family and no sessionKeyValueWithHeaders family is created",
                 rules=("SS-31", "SS-35"))
class _HeadersInDefault(RocksDBSessionStore):
    """A ``session_with_headers`` store over the plain segment class (its ``LAYOUT`` the plain session's)."""

    store_type = StoreType.SESSION_WITH_HEADERS


@mutant("session-closed-store-reads-empty", "a closed session store answers reads with nothing instead of refusing "
        "them", FAMILY, rules=("SS-37",))
def _closed_store_reads_empty() -> dict[str, Handler]:
    def read(op: str) -> Handler:
        def handler(payload: JsonDict) -> JsonDict:
            out = call(op, payload)
            if "error" in out and "closed" in str(out["error"]).lower():
                return {"value": None} if op == "session_store.fetch_session" else {"entries": []}
            return out

        return handler

    return {op: read(op) for op in (*_READS, "session_store.fetch_session")}


def _aggregation_only(stored: str | None) -> str | None:
    decoded = decode_aggregation_with_headers(None if stored is None else bytes.fromhex(stored))
    return None if decoded is None else decoded.aggregation.hex()


@mutant("session-headers-reads-aggregation-only", "session_with_headers reads answer the aggregation without its "
        "[varint size][headers] prefix (the plain session view), instead of the value as stored", FAMILY,
        rules=("SS-30",))
def _headers_reads_aggregation_only() -> dict[str, Handler]:
    def read(op: str) -> Handler:
        def handler(payload: JsonDict) -> JsonDict:
            out = call(op, payload)
            if "error" in out or _handle_type(payload) is not StoreType.SESSION_WITH_HEADERS:
                return out
            if op == "session_store.fetch_session":
                return {**out, "value": _aggregation_only(out.get("value"))}
            return {**out, "entries": [[k, s, e, _aggregation_only(v)] for k, s, e, v in out["entries"]]}

        return handler

    return {op: read(op) for op in (*_READS, "session_store.fetch_session")}


# --- paired mutants (caught beside a model only: kstate conformance --model; mutants/paired_mutants.py) ---------

paired_mutant("paired-session-backward-fetch-forward", "a session store's backwardFetch answers the forward order",
              "session", ("SS-6", "SS-7"), {"session_store.fetch": changed_answer("session_store.fetch", lambda p, out: (
                  out if not p.get("backward") else {**out, "entries": out["entries"][::-1]}))})
