"""Mutants of the session stores (spec/session-store.md): each a bug a port of Kafka's session stores could
plausibly have. Bugs of a read's filter or order replace that ``session_store.*`` operation with the reference's
answer mishandled the way the port would; bugs of what a store keeps or logs act at the store level.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, cast

from kstate.codecs.changelog import ChangelogRecord
from kstate.codecs.session_keys import SessionKeySchema, SessionStoreKey
from kstate.codecs.store_types import StoreType
from kstate.errors import KStateError
from kstate.ops import JsonDict, call
from kstate.ops.store_ops import DEFAULT_BUILDER, handle_for, make_open_handler
from kstate.stores.api import Backend
from kstate.stores.changelogging import ChangelogSink, RecordContextHolder
from kstate.stores.column_families import DualColumnFamilyAccessor, SingleColumnFamilyAccessor
from kstate.stores.factory import open_bytes_store, task_directory
from kstate.stores.families import changelogging_store, store_classes
from kstate.stores.segments import KeyValueSegment, KeyValueSegments
from kstate.stores.session import (
    ChangeLoggingSessionBytesStore,
    RocksDBSessionStore,
    RocksDBSessionStoreWithHeaders,
    SessionSegmentsWithHeaders,
)
from kstate_conformance.adapter import Handler
from kstate_conformance.mutants import mutant

FAMILY = "session_store"
SESSION_TYPES = ("session", "session_with_headers")
_READS = ("session_store.find_sessions", "session_store.fetch")


def _handle_type(payload: JsonDict) -> StoreType | None:
    """The store type of the handle ``payload`` names, None when it names none that is open."""
    try:
        return handle_for(payload).store_type
    except KStateError:
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


@mutant("session-backward-forward-order", "the backward variants answer the forward order", FAMILY, rules=("SS-6", "SS-7"))
def _backward_forward() -> dict[str, Handler]:
    def forward(op: str) -> Handler:
        return lambda payload: call(op, {**payload, "backward": False})

    return {op: forward(op) for op in _READS}


@mutant("session-expiry-off-by-one", "a session ending exactly at observed stream time - retention is still live "
        "(< where Kafka has <=): the store keeps one millisecond more than its retention", FAMILY,
        rules=("SS-13", "SS-17"))
def _expiry_off_by_one() -> dict[str, Handler]:
    def open_store(payload: JsonDict) -> JsonDict:
        options = payload.get("options")
        if payload.get("store_type") in SESSION_TYPES and isinstance(options, dict) \
                and isinstance(options.get("retention_ms"), int):
            payload = {**payload, "options": {**options, "retention_ms": options["retention_ms"] + 1}}
        return call("store.open", payload)

    return {"store.open": open_store}


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
        return cls(kwargs.pop("name"), task_dir, **kwargs, **options)

    def logging_layer(inner: Any, store_type: StoreType, context: RecordContextHolder, sink: ChangelogSink) -> Any:
        if logging is not None and StoreType(store_type) in (StoreType.SESSION, StoreType.SESSION_WITH_HEADERS):
            return logging(inner, StoreType(store_type), context, sink)
        return changelogging_store(inner, store_type, context, sink)

    return {"store.open": make_open_handler(replace(DEFAULT_BUILDER, open_bytes_store=open_bytes,
                                                    logging_layer=logging_layer))}


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


class _HeaderlessLogging(ChangeLoggingSessionBytesStore):
    def _record(self, key: bytes, start: int, end: int, value: bytes | None) -> ChangelogRecord:
        return dataclasses.replace(super()._record(key, start, end, value), headers=())


@mutant("session-headers-changelog-drops-headers", "session_with_headers logs the raw aggregate without the stored "
        "headers (and tombstones without the context's)", FAMILY, rules=("SS-26", "SS-27"))
def _headers_changelog_drops_headers() -> dict[str, Handler]:
    return _open_with(logging=_HeaderlessLogging)


class _FirstSegmentOnlyUpgrade(SessionSegmentsWithHeaders):
    """Only the first segment opened reads its legacy ``default`` family; the others see the new family only."""

    def get_or_create_segment(self, segment_id_: int) -> KeyValueSegment:
        first = not self._segments
        segment = super().get_or_create_segment(segment_id_)
        accessor = segment.instance.accessor
        if not first and isinstance(accessor, DualColumnFamilyAccessor):
            segment.instance.accessor = SingleColumnFamilyAccessor(accessor.staged, accessor.new_cf)
        return segment


class _FirstSegmentOnlyStore(RocksDBSessionStoreWithHeaders):
    SEGMENTS = _FirstSegmentOnlyUpgrade


@mutant("session-upgrade-first-segment-only", "opening a session store as session_with_headers migrates the first "
        "segment only: the plain rows of the other segments are no longer read", FAMILY, rules=("SS-32",))
def _upgrade_first_segment_only() -> dict[str, Handler]:
    return _open_with({StoreType.SESSION_WITH_HEADERS: _FirstSegmentOnlyStore})


class _FetchSessionIgnoresExpiry(RocksDBSessionStore):
    def _get(self, key: bytes, start: int, end: int) -> bytes | None:
        segment = self.segments.segment_for_timestamp(end)
        return None if segment is None else segment.accessor.get(self.SCHEMA.to_store_key(key, start, end))


class _FetchSessionIgnoresExpiryWithHeaders(RocksDBSessionStoreWithHeaders):
    _get = _FetchSessionIgnoresExpiry._get


@mutant("session-fetch-session-ignores-expiry", "RocksDB fetchSession answers a session its segment still holds "
        "although it ended before observed stream time - retention + 1", FAMILY, rules=("SS-16",))
def _fetch_session_ignores_expiry() -> dict[str, Handler]:
    return _open_with({StoreType.SESSION: _FetchSessionIgnoresExpiry,
                       StoreType.SESSION_WITH_HEADERS: _FetchSessionIgnoresExpiryWithHeaders})


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


@mutant("session-dropped-write-not-logged", "a put the store drops as expired is not logged", FAMILY,
        rules=("SS-28",))
def _dropped_write_not_logged() -> dict[str, Handler]:
    return _open_with(logging=_SkipsDroppedWrites)


class _SegmentByStart(RocksDBSessionStore):
    def _put(self, key: bytes, start: int, end: int, value: bytes | None) -> None:
        self.observed_stream_time = max(self.observed_stream_time, end)
        segment = self.segments.get_or_create_segment_if_live(self.segments.segment_id(start), self.observed_stream_time)
        if segment is None:
            self.dropped_records += 1
            return
        segment.accessor.put(self.SCHEMA.to_store_key(key, start, end), value)


@mutant("session-store-segment-by-start", "the RocksDB session store puts a session into the segment of its START",
        FAMILY, rules=("SS-10",))
def _store_segment_by_start() -> dict[str, Handler]:
    return _open_with({StoreType.SESSION: _SegmentByStart})


class _SegmentsNeverExpire(KeyValueSegments):
    def cleanup_expired_segments(self, stream_time: int) -> None:
        return None


class _KeepsExpiredSegments(RocksDBSessionStore):
    SEGMENTS = _SegmentsNeverExpire


@mutant("session-expired-segments-kept", "expired segments are never deleted (reads still hide their sessions)",
        FAMILY, rules=("SS-15",))
def _expired_segments_kept() -> dict[str, Handler]:
    return _open_with({StoreType.SESSION: _KeepsExpiredSegments})


@mutant("session-restore-ignores-record-headers", "session_with_headers restores a record with empty headers "
        "(the plain session converter) instead of the record's headers", FAMILY, rules=("SS-34",))
def _restore_ignores_record_headers() -> dict[str, Handler]:
    def restore(payload: JsonDict) -> JsonDict:
        records = payload.get("records")
        if isinstance(records, list) and _handle_type(payload) is StoreType.SESSION_WITH_HEADERS:
            payload = {**payload, "records": [{**r, "headers": []} if isinstance(r, dict) else r for r in records]}
        return call("store.restore", payload)

    return {"store.restore": restore}
