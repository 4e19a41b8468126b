"""Mutants of the window family, each a bug a port could plausibly have: of its key schemas; of the reference
window stores and their change-logging layer, a bug of Kafka's ``RocksDBWindowStore`` / ``InMemoryWindowStore`` /
``ChangeLoggingWindowBytesStore`` (spec/window-store.md, WS-*); and its paired mutants (``paired_mutants``).

Each store mutant replaces ``store.open`` only: it builds window stores with a :class:`StoreBuilder` whose bytes
store (a subclass of the reference's, the bug in front) or change-logging layer carries the bug; every other store
type opens as the reference's. The suite's window tests (contract tests, hand-worked cases, the state machine) kill
them.

Not here: a seqnum counter left unmasked (``seqnum + 1`` without ``& 0x7FFFFFFF``). It differs from Kafka only
after 2^31 duplicate puts into one store, and no operation sets the counter, so no bounded test can tell; the
masking itself is checked at the codec (``window.next_seqnum``, WIN-6).
"""

from __future__ import annotations

import dataclasses
import struct
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kstate.codecs import changelog as cl
from kstate.codecs import primitives as p
from kstate.codecs import window_keys
from kstate.codecs import window_keys as wk
from kstate.codecs.segments import parse_segment_name
from kstate.codecs.store_types import WINDOW_TYPES, StoreType
from kstate.errors import DecodeError, KStateError
from kstate.ops import JsonDict, call, capture, tohex, unhex
from kstate.ops.store_ops import StoreBuilder, make_open_handler
from kstate.stores.api import Backend
from kstate.stores.changelogging import ChangeLoggingWindowBytesStore
from kstate.stores.factory import open_bytes_store, task_directory
from kstate.stores.families import changelogging_store, store_classes
from kstate.stores.life import Op
from kstate.stores.segmented import scan_segments
from kstate.stores.segments import KeyValueSegments, TimestampedSegments
from kstate.stores.surface import RocksDBOptions
from kstate_conformance.adapter import Handler
from kstate_conformance.mutants import mutant, registering
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


# --- its stores ----------------------------------------------------------------------------------------------------
FAMILY = "window_store"
Mixin = type


def _with(mixin: Mixin, base: type) -> type:
    return type(f"{mixin.__name__}{base.__name__}", (mixin, base), {})


def _opening(mixins: dict[Backend, Mixin | Callable[[type], type]]) -> Callable[..., Any]:
    """``open_bytes_store``, but a window store on a backend of ``mixins`` is the reference's class with the
    mixin in front of it (or the class a function of the reference's class builds)."""

    def mutated(base: type, backend: Backend) -> type:
        change = mixins[backend]
        return _with(change, base) if isinstance(change, type) else change(base)

    def open_store(store_type: StoreType, backend: Backend, *, name: str, state_dir: str | Path | None = None,
                   application_id: str = "app", task_id: str = "0_0", ignore_invalid_state: bool = False,
                   options: dict[str, Any] | None = None, **rest: Any) -> Any:
        store_type, backend = StoreType(store_type), Backend(backend)
        if store_type not in WINDOW_TYPES or backend not in mixins:
            return open_bytes_store(store_type, backend, name=name, state_dir=state_dir, application_id=application_id,
                                    task_id=task_id, ignore_invalid_state=ignore_invalid_state, options=options, **rest)
        classes = store_classes(store_type)
        family_options = classes.check_options(options or {})
        if backend is Backend.MEMORY:
            return mutated(classes.memory, backend)(name, **family_options)
        task_dir = task_directory(state_dir or tempfile.mkdtemp(prefix="kstate-"), application_id, task_id)
        return mutated(classes.rocksdb, backend)(
            name, task_dir, options=RocksDBOptions(ignore_invalid_state=ignore_invalid_state, **rest), **family_options)

    return open_store


def _open_with(**builder: Any) -> dict[str, Handler]:
    return {"store.open": make_open_handler(StoreBuilder(**builder))}


def _both(mixin: Mixin) -> dict[str, Handler]:
    return _open_with(open_bytes_store=_opening({Backend.ROCKSDB: mixin, Backend.MEMORY: mixin}))


def _rocksdb(mixin: Mixin | Callable[[type], type]) -> dict[str, Handler]:
    return _open_with(open_bytes_store=_opening({Backend.ROCKSDB: mixin}))


def _memory(mixin: Mixin) -> dict[str, Handler]:
    return _open_with(open_bytes_store=_opening({Backend.MEMORY: mixin}))


#: The mixin of the decorated mutant in front of the RocksDB window stores, the in-memory ones, or both.
_rocksdb_mutant = registering(FAMILY, _rocksdb)
_memory_mutant = registering(FAMILY, _memory)
_both_mutant = registering(FAMILY, _both)


class _WindowStoreAttributes:
    """What the mixins below read or set of the reference's window stores they are put in front of (declared for
    the type checker only: the attributes are the store's)."""

    seqnum: int
    retain_duplicates: bool
    observed_stream_time: int
    retention_period: int
    window_size: int
    store_type: StoreType
    segments: KeyValueSegments
    _position: Any


# --- seqnums (WS-4) ---------------------------------------------------------------------------------------------


@_both_mutant("window-seqnum-not-incremented", "duplicates all get seqnum 1, so each one replaces the previous",
              rules=("WS-4", "WS-16"))
class _SeqnumNeverAdvances(_WindowStoreAttributes):
    """The store computes ``seqnum + 1`` for each duplicate but never stores it back: every duplicate gets 1."""

    def put(self, key: bytes, value: bytes | None, window_start: int) -> None:
        before = self.seqnum
        super().put(key, value, window_start)  # type: ignore[misc]
        self.seqnum = before


@_rocksdb_mutant("window-seqnum-post-increment", "the first duplicate of a store gets seqnum 0 instead of 1",
                 rules=("WS-4",))
class _SeqnumPostIncrement(_WindowStoreAttributes):
    """``seqnum++`` where Kafka has ``++seqnum``: the first duplicate gets 0, the next 1, ..."""

    def put(self, key: bytes, value: bytes | None, window_start: int) -> None:
        if self.retain_duplicates and value is not None:
            used = getattr(self, "_post_increment_next", 0)
            self.seqnum = (used - 1) & 0x7FFFFFFF  # the store adds 1 back: the row gets ``used``
            super().put(key, value, window_start)  # type: ignore[misc]
            self._post_increment_next = (used + 1) & 0x7FFFFFFF
            return
        super().put(key, value, window_start)  # type: ignore[misc]


# --- order (WS-12, WS-13) ----------------------------------------------------------------------------------------


@_rocksdb_mutant("window-fetch-key-before-time", "RocksDB key-range fetches, fetchAll and all ordered by key before "
                 "time, ignoring segments", rules=("WS-13", "WS-14", "WS-15"))
class _KeyBeforeTime:
    """Multi-key scans sorted by key, then window start, across segments (a sorted map of ``(key, start)``),
    not segment by segment."""

    def _scan(self, key_from: bytes | None, key_to: bytes | None, time_from: int, time_to: int,
              forward: bool) -> list[tuple[bytes, int, bytes]]:
        rows = super()._scan(key_from, key_to, time_from, time_to, True)  # type: ignore[misc]
        rows = sorted(rows, key=lambda row: (row[0], row[1]))
        return rows if forward else rows[::-1]


@_both_mutant("window-backward-forward-order", "backwardFetch, backwardFetchAll and backwardAll answer the forward "
              "order", rules=("WS-12", "WS-18"))
class _BackwardIsForward:
    """Every backward variant answers the forward order."""

    def fetch_range(self, key: bytes, time_from: int, time_to: int, backward: bool = False) -> Any:
        return super().fetch_range(key, time_from, time_to, False)  # type: ignore[misc]

    def fetch_keys(self, key_from: bytes | None, key_to: bytes | None, time_from: int, time_to: int,
                   backward: bool = False) -> Any:
        return super().fetch_keys(key_from, key_to, time_from, time_to, False)  # type: ignore[misc]

    def fetch_all(self, time_from: int, time_to: int, backward: bool = False) -> Any:
        return super().fetch_all(time_from, time_to, False)  # type: ignore[misc]

    def all(self, backward: bool = False) -> Any:
        return super().all(False)  # type: ignore[misc]


# --- expiry (WS-6, WS-10, WS-11) --------------------------------------------------------------------------------


@_rocksdb_mutant("window-expiry-clamp-off-by-one", "RocksDB fetches clamp from to observed - retention, not observed "
                 "- retention + 1", rules=("WS-10", "WS-11", "WS-15"))
class _ClampOffByOne(_WindowStoreAttributes):
    """Fetches clamp ``from`` to ``observed - retention`` (Kafka adds 1): the window exactly one retention old is
    still answered."""

    def _earliest_live(self) -> int:
        return self.observed_stream_time - self.retention_period


@_both_mutant("window-stream-time-from-last-record", "observed stream time is the last put's window start, not the "
              "largest seen", rules=("WS-6", "WS-17"))
class _StreamTimeOfTheLastRecord(_WindowStoreAttributes):
    """Retention measured from the last record's window start, not the largest one observed: a late record moves
    the stream time back and windows it had expired come back."""

    def put(self, key: bytes, value: bytes | None, window_start: int) -> None:
        super().put(key, value, window_start)  # type: ignore[misc]
        self.observed_stream_time = window_start


# --- segments (WS-5, WS-27) -------------------------------------------------------------------------------------


class _NamedById:
    """Segment directories named ``<store>.<segment id>`` instead of ``<store>.<segment start>``."""

    name: str

    def segment_name(self, segment_id_: int) -> str:
        return f"{self.name}.{segment_id_}"


@_rocksdb_mutant("window-segment-named-by-id", "segment directories named <store>.<segment id>, not by segment start "
                 "time", rules=("WS-5",))
def _segments_named_by_id(base: type) -> type:
    return type(f"NamedById{base.__name__}", (base,), {"SEGMENTS": _with(_NamedById, base.SEGMENTS)})  # type: ignore[attr-defined]


class _FirstSegmentPlan(TimestampedSegments):
    """The column-family plan (with its upgrade from ``default``) is given to the first segment opened only; the
    others open with the plain plan and read their legacy rows unconverted."""

    def get_or_create_segment(self, segment_id_: int) -> Any:
        if self._segments and segment_id_ not in self._segments:
            self.LAYOUT = KeyValueSegments.LAYOUT
        return super().get_or_create_segment(segment_id_)


class _UpgradeFirstSegmentOnly:
    SEGMENTS = _FirstSegmentPlan


@mutant("window-upgrade-first-segment-only", "a plain window store reopened as timestamped upgrades its first "
        "segment only", FAMILY, rules=("WS-27",))
def _upgrade_first_segment_only() -> dict[str, Handler]:
    def open_store(store_type: StoreType, backend: Backend, **kwargs: Any) -> Any:
        if StoreType(store_type) is StoreType.TIMESTAMPED_WINDOW:
            return _opening({Backend.ROCKSDB: _UpgradeFirstSegmentOnly})(store_type, backend, **kwargs)
        return open_bytes_store(store_type, backend, **kwargs)

    return _open_with(open_bytes_store=open_store)


# --- the changelog (WS-22) --------------------------------------------------------------------------------------


def _logging_with(layer: type) -> dict[str, Handler]:
    def logging_layer(inner: Any, store_type: StoreType, context: Any, sink: Any) -> Any:
        if StoreType(store_type) in WINDOW_TYPES:
            return layer(inner, store_type, context, sink)
        return changelogging_store(inner, store_type, context, sink)

    return _open_with(logging_layer=logging_layer)


#: The decorated change-logging layer in front of the window stores.
_logging_mutant = registering(FAMILY, _logging_with)


@_logging_mutant("window-changelog-key-without-seqnum", "the changelog key is [key][start] without the logging "
                 "layer's seqnum", rules=("WS-22",))
class _PipeKeyLogging(ChangeLoggingWindowBytesStore):
    """Logs ``WindowKeySchema.toBinary`` (``[key][start]``, the repartition serde) instead of the store key
    ``[key][start][seqnum]``."""

    def _record(self, key: bytes | None, value: bytes | None, window_start: int, seqnum: int) -> cl.ChangelogRecord:
        record = super()._record(key, value, window_start, seqnum)
        return dataclasses.replace(record, key=record.key[:-4])


@_rocksdb_mutant("window-key-range-without-scan-bounds", "RocksDB key-range fetches filter every row by key instead "
                 "of scanning between lowerRange and upperRange", rules=("WS-40",))
class _NoScanBounds:
    """Key-range fetches scan each segment whole and filter by key: rows outside Kafka's scan bounds are answered."""

    def _fetch_rows(self, key_from: bytes | None, key_to: bytes | None, time_from: int, time_to: int, forward: bool,
                    single: bool) -> Any:
        if single:
            return super()._fetch_rows(key_from, key_to, time_from, time_to, forward, single)  # type: ignore[misc]
        return super()._fetch_rows(None, None, time_from, time_to, forward, False)  # type: ignore[misc]


# --- wave 2: one mutant per required rule no earlier mutant breaks --------------------------------------------------


class _SlowPathRows(_WindowStoreAttributes):
    """Every RocksDB put takes ``_put_in_live_segment`` (the cached-segment fast path never matches), so a mixin
    can change the row written through :meth:`_row`."""

    _last_segment_id: int

    def _put_in_live_segment(self, store_key: bytes, timestamp: int, value: bytes | None) -> None:
        store_key, value = self._row(store_key, value)
        super()._put_in_live_segment(store_key, timestamp, value)  # type: ignore[misc]
        self._last_segment_id = -1

    def _row(self, store_key: bytes, value: bytes | None) -> tuple[bytes, bytes | None]:
        return store_key, value


@_rocksdb_mutant("window-row-keyed-by-window-end", "RocksDB rows are [key][window end][seqnum], not [key][window "
                 "start][seqnum]", rules=("WS-3",))
class _RowKeyedByWindowEnd(_SlowPathRows):
    """The row key carries the window's end (``Windowed.window().end()``) where Kafka writes its start."""

    def _row(self, store_key: bytes, value: bytes | None) -> tuple[bytes, bytes | None]:
        key_end = len(store_key) - 12
        start, seqnum = struct.unpack_from(">qi", store_key, key_end)
        end = min(start + self.window_size, (1 << 63) - 1)
        return store_key[:key_end] + struct.pack(">qi", end, seqnum), value


@_rocksdb_mutant("window-timestamped-rows-plain", "the timestamped RocksDB window store stores values without their "
                 "timestamp", rules=("WS-21",))
class _TimestampStripped(_SlowPathRows):
    """The timestamped RocksDB store keeps the plain value, dropping the ``[ts]`` of the layout it was given."""

    def _row(self, store_key: bytes, value: bytes | None) -> tuple[bytes, bytes | None]:
        if value is not None and self.store_type is StoreType.TIMESTAMPED_WINDOW:
            value = value[8:]
        return store_key, value


@_memory_mutant("window-memory-types-plain", "the in-memory store of timestamped_window(_with_headers) is built as a "
                "plain window store (its change-logging layer, chosen by the store type opened, still logs the type's "
                "records)", rules=("WS-1",))
class _MemoryTypesArePlain:
    """The in-memory supplier builds a plain ``window`` store whatever the type asked for."""

    store_type = StoreType.WINDOW


@_both_mutant("window-size-above-retention-accepted", "a window size larger than the retention is accepted",
              rules=("WS-2",))
class _WindowSizeUnchecked:
    """``Stores.persistentWindowStore`` without its ``windowSize > retentionPeriod`` check."""

    def __init__(self, name: str, *args: Any, retention_ms: int, window_size_ms: int, **kwargs: Any) -> None:
        checked_size = window_size_ms if window_size_ms <= retention_ms else retention_ms
        super().__init__(name, *args, retention_ms=retention_ms, window_size_ms=checked_size,  # type: ignore[call-arg]
                         **kwargs)
        self.window_size = window_size_ms


@_rocksdb_mutant("window-expired-put-written", "a RocksDB put into an expired segment is written instead of dropped",
                 rules=("WS-7",))
class _ExpiredPutWritten(_WindowStoreAttributes):
    """A put into an expired segment creates the segment and is written (no ``getOrCreateSegmentIfLive``)."""

    def _live_segment(self, timestamp: int) -> Any:
        segment = super()._live_segment(timestamp)  # type: ignore[misc]
        if segment is None:
            segment = self.segments.get_or_create_segment(self.segments.segment_id(timestamp))
        return segment


@_rocksdb_mutant("window-expired-segments-kept", "expired RocksDB segments are never deleted", rules=("WS-8",))
class _ExpiredSegmentsKept(_WindowStoreAttributes):
    """Live segments are looked up without the expiry pass: expired segments are never deleted."""

    def _live_segment(self, timestamp: int) -> Any:
        segment_id = self.segments.segment_id(timestamp)
        if segment_id < self.segments.min_live_segment_id(self.observed_stream_time):
            return None
        return self.segments.get_or_create_segment(segment_id)


@_both_mutant("window-null-put-ignored", "put(key, null, start) without duplicates leaves the row in place",
              rules=("WS-9",))
class _NullPutIgnored:
    """A null value is a no-op on every store, as it is only with duplicates."""

    def put(self, key: bytes, value: bytes | None, window_start: int) -> None:
        if value is not None:
            super().put(key, value, window_start)  # type: ignore[misc]


@_memory_mutant("window-memory-fetch-finds-duplicates", "the in-memory fetch(key, time) with duplicates answers the "
                "key's last duplicate instead of null", rules=("WS-19",))
class _MemoryFetchReadsCurrentSeqnum(_WindowStoreAttributes):
    """The in-memory ``fetch(key, time)`` wraps the key with the current seqnum, as RocksDB reads its row."""

    def fetch(self, key: bytes, time: int) -> bytes | None:
        value: bytes | None = super().fetch(key, time)  # type: ignore[misc]
        if value is None and self.retain_duplicates:
            for start, stored in self.fetch_range(key, time, time):  # type: ignore[attr-defined]
                value = stored if start == time else value
        return value


@_memory_mutant("window-memory-all-unbounded", "the in-memory all() lists windows at or below observed - retention",
                rules=("WS-20",))
class _MemoryAllWithoutExpiry:
    """The in-memory ``all()`` lists every window held, with no expiry pass and no ``> T - R`` bound."""

    def all(self, backward: bool = False) -> Any:
        self._allow(Op.READ)  # type: ignore[attr-defined]
        held = self.segments.all_segments(not backward)  # type: ignore[attr-defined]
        return self._entries(scan_segments(held, None, None, backward), None, None)  # type: ignore[attr-defined]


@_logging_mutant("window-store-written-before-log-check", "a value the changelog refuses is written to the store first",
                 rules=("WS-24",))
class _StoreBeforeRecord(ChangeLoggingWindowBytesStore):
    """Writes the store, then builds the changelog record (Kafka's order): a value the log refuses is stored."""

    def put(self, key: bytes, value: bytes | None, window_start: int) -> None:
        seqnum = window_keys.next_seqnum(self.seqnum, self.retain_duplicates)
        self.inner.put(key, value, window_start)
        record = self._record(key, value, window_start, seqnum)
        self.seqnum = seqnum
        self.sink.append(record)


@_logging_mutant("window-changelog-context-timestamp", "timestamped window stores log the context's timestamp, not "
                 "the stored one", rules=("WS-23",))
class _ContextTimestampLogged(ChangeLoggingWindowBytesStore):
    """The timestamped layers log the record context's timestamp instead of the stored one."""

    def _record(self, key: bytes | None, value: bytes | None, window_start: int, seqnum: int) -> cl.ChangelogRecord:
        record = super()._record(key, value, window_start, seqnum)
        if self.store_type is StoreType.WINDOW:
            return record
        return dataclasses.replace(record, timestamp=self.context.codec_context().timestamp)


@_rocksdb_mutant("window-restore-unconverted", "a timestamped RocksDB window store restores changelog values without "
                 "prepending the record timestamp (and headers)", rules=("WS-25",))
class _RestoreUnconverted:
    """RocksDB restore writes each changelog value as is, without the type's converter (``[ts][value]``,
    ``[hsize][headers][ts][value]``): the port forgot ``StateManagerUtil.converterForStore`` for window stores."""

    def restore_records(self, records: Any) -> None:
        self.restore_batch([(r.key, r.value) for r in records])  # type: ignore[attr-defined]


@_memory_mutant("window-memory-restore-keeps-changelog-seqnum", "the in-memory store restores duplicates under the "
                "changelog seqnum, its own counter unmoved", rules=("WS-26", "WS-41"))
class _MemoryRestoreKeepsSeqnum(_WindowStoreAttributes):
    """The in-memory restore keeps the changelog key's seqnum as the inner key's, its counter unmoved."""

    def restore_batch(self, entries: Any) -> None:
        if not self.retain_duplicates:
            super().restore_batch(entries)  # type: ignore[misc]
            return
        for key, value in entries:
            changelog_seqnum = int.from_bytes(bytes(key)[-4:], "big")
            before, self.seqnum = self.seqnum, (changelog_seqnum - 1) & 0x7FFFFFFF
            super().restore_batch([(key, value)])  # type: ignore[misc]
            self.seqnum = before


@_rocksdb_mutant("window-restore-advances-seqnum", "a RocksDB restore advances the store's duplicate counter",
                 rules=("WS-41",))
class _RestoreAdvancesSeqnum(_WindowStoreAttributes):
    """RocksDB restore counts each restored record on the store's duplicate counter, as a put would."""

    def restore_batch(self, entries: Any) -> None:
        super().restore_batch(entries)  # type: ignore[misc]
        if self.retain_duplicates:
            restored = sum(1 for _key, value in entries if value is not None)
            self.seqnum = (self.seqnum + restored) & 0x7FFFFFFF


@_rocksdb_mutant("window-commit-newest-segment-only", "commit writes the staged rows and offsets of the newest "
                 "segment only", rules=("WS-28",))
class _CommitNewestSegmentOnly(_WindowStoreAttributes):
    """``commit`` reaches the newest segment only: the older ones keep their rows staged and get no offsets."""

    def commit(self, changelog_offsets: Any) -> None:
        newest = self.segments.all_segments()[-1:]
        offsets = {(tp.topic, tp.partition): o for tp, o in dict(changelog_offsets).items()}
        for segment in newest:
            segment.instance.commit(offsets, self._position)


@_rocksdb_mutant("window-position-not-merged", "a reopened RocksDB window store does not merge its segments' positions",
                 rules=("WS-29",))
class _PositionNotMerged(_WindowStoreAttributes):
    """The reopened store starts from an empty position: its segments' positions are not merged in."""

    def _open_existing(self) -> None:
        super()._open_existing()  # type: ignore[misc]
        self._position = {}


@_rocksdb_mutant("window-position-path-of-any-kind-ignored", "a <store>.position that is a directory is skipped, not "
                 "refused", rules=("WS-29", "KV-25"))
class _PositionPathOfAnyKindIgnored:
    """A ``<store>.position`` that is not a regular file is taken for no file (``File.isFile`` where Kafka's
    reader needs ``exists``): a directory in its place is skipped and the store opens (WS-29)."""

    @staticmethod
    def _legacy_position(task_dir: Path, name: str) -> Any:
        from kstate.stores.offsets import read_legacy_position

        if not (task_dir / f"{name}.position").is_file():
            return {}
        return read_legacy_position(task_dir, name)


@_rocksdb_mutant("window-close-newest-segment-only", "close writes the staged rows of the newest segment only",
                 rules=("WS-30",))
class _CloseNewestSegmentOnly(_WindowStoreAttributes):
    """``close`` writes the staged rows of the newest segment only; the older ones are abandoned."""

    def close(self) -> None:
        segments = self.segments.all_segments()
        for segment in segments[:-1]:
            segment.instance.simulate_crash()
        super().close()  # type: ignore[misc]


@_rocksdb_mutant("window-segments-not-reopened", "a reopened RocksDB window store does not open its segments on disk",
                 rules=("WS-31",))
class _SegmentsNotReopened(_WindowStoreAttributes):
    """Opening a RocksDB window store opens no existing segment: rows on disk are found only once written to."""

    def _open_existing(self) -> None:
        self._position = {}


@_rocksdb_mutant("window-open-checks-segments-one-by-one", "existing segments are opened one by one, each checked "
                 "only when it opens: a refused open has already opened (and written) the healthy segments",
                 rules=("WS-31",))
class _OpensBeforeChecking:
    """Kafka's ``openExisting`` ported literally: each segment opened in turn, the first bad one refusing the store
    after the healthy ones before it were opened (and given new MANIFEST, OPTIONS and LOG files)."""

    def _check_segment(self, path: Path) -> None:
        return None


@_rocksdb_mutant("window-stray-entry-stops-the-scan", "an entry of the segment directory that names no segment stops "
                 "the scan at open, as Kafka's swallowed error does: no segment is opened", rules=("LAY-12",))
class StrayEntryStopsTheScan:
    """Kafka's ``openExisting`` ported literally: a directory entry whose name does not parse throws inside the scan,
    the error is swallowed, and no segment is opened (the store answers nothing and claims no offset). A mixin for
    the window and the session stores."""

    segments: KeyValueSegments
    _position: Any

    def _open_existing(self) -> None:
        directory = self.segments.directory
        try:
            for entry in sorted(p.name for p in directory.iterdir()) if directory.is_dir() else ():
                parse_segment_name(self.segments.name, entry, self.segments.segment_interval)
        except KStateError:
            self._position = {}
            return
        super()._open_existing()  # type: ignore[misc]


@_rocksdb_mutant("window-deleted-segment-unnoticed", "a segment directory deleted outside the store goes unnoticed: "
                 "the store opens and still claims the committed offset that covers the lost rows", rules=("LAY-13",))
class _DeletedSegmentUnnoticed:
    """The segments found are opened as they are: a segment deleted outside the store goes unnoticed while the
    others still claim the committed offset (Kafka's ``openExisting`` checks nothing of the kind)."""

    def _check_listed_segments(self, found: Any) -> None:
        return None


@mutant("window-dups-changelog-compacted", "the changelog of a plain window store with duplicates keeps "
        "cleanup.policy compact,delete", FAMILY, rules=("WS-32",))
def _dups_changelog_compacted() -> dict[str, Handler]:
    def topic_config(payload: JsonDict) -> JsonDict:
        return call("changelog.topic_config", {**payload, "retain_duplicates": False})

    return {"changelog.topic_config": topic_config}


@_both_mutant("window-null-key-bound-empty", "a key-range fetch with a null bound answers nothing", rules=("WS-34",))
class _NullBoundsEmpty:
    """A null key bound answers nothing (the pre-KIP-763 store threw; this one returns empty)."""

    def fetch_keys(self, key_from: bytes | None, key_to: bytes | None, time_from: int, time_to: int,
                   backward: bool = False) -> Any:
        if key_from is None or key_to is None:
            return []
        return super().fetch_keys(key_from, key_to, time_from, time_to, backward)  # type: ignore[misc]


@_both_mutant("window-null-key-read-accepted", "a null key is not refused by fetch and fetch(key, from, to): they "
              "answer nothing", rules=("WS-35",))
class _NullKeyReadsAnswerNothing:
    """Reads take a null key as a key that is never found (an ``Objects.equals`` filter) instead of refusing it
    with ``NullKeyError``."""

    def fetch(self, key: bytes | None, time: int) -> bytes | None:
        return None if key is None else super().fetch(key, time)  # type: ignore[misc]

    def fetch_range(self, key: bytes | None, time_from: int, time_to: int, backward: bool = False) -> Any:
        if key is None:
            return []
        return super().fetch_range(key, time_from, time_to, backward)  # type: ignore[misc]


@_memory_mutant("window-memory-keeps-offsets", "the in-memory window store answers the offset it last committed",
                rules=("WS-36",))
class _MemoryManagesOffsets:
    """The in-memory store keeps the last committed offsets and answers them."""

    def commit(self, changelog_offsets: Any) -> None:
        super().commit(changelog_offsets)  # type: ignore[misc]
        self._committed = {(tp.topic, tp.partition): o for tp, o in dict(changelog_offsets).items()}

    def committed_offset(self, partition: Any) -> int | None:
        super().committed_offset(partition)  # type: ignore[misc]
        found: int | None = getattr(self, "_committed", {}).get((partition.topic, partition.partition))
        return found


@_rocksdb_mutant("window-stream-time-recovered", "a reopened RocksDB store takes its stream time from the rows on "
                 "disk, clamping reads at once", rules=("WS-42",))
class _StreamTimeRecovered(_WindowStoreAttributes):
    """A reopened RocksDB store recovers its stream time from the largest window start on disk."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        starts = [start for _key, start, _value in self.all()]  # type: ignore[attr-defined]
        if starts:
            self.observed_stream_time = max(starts)


@_both_mutant("window-size-zero-windows-answered", "all, fetchAll and the key-range fetch answer entries at window "
              "size 0 instead of refusing them as Kafka's TimeWindow does", rules=("WS-43",))
class _WindowsOfSizeZeroAnswered:
    """The windowed reads answer their entries at window size 0, as if ``TimeWindow`` took end == start."""

    def _windowed(self, entries: list[Any]) -> list[Any]:
        return entries


@_logging_mutant("window-log-seqnum-before-key-check", "a refused null-key put advances the change-logging layer's "
                 "seqnum", rules=("WS-24", "WS-35"))
class _SeqnumTakenBeforeKeyCheck(ChangeLoggingWindowBytesStore):
    """The layer takes its next seqnum before the record's key is checked, so a refused null-key put uses one up
    (what Kafka's ``ChangeLoggingWindowBytesStore.put`` does when the in-memory store dropped the put as expired)."""

    def put(self, key: bytes, value: bytes | None, window_start: int) -> None:
        self.seqnum = window_keys.next_seqnum(self.seqnum, self.retain_duplicates)
        record = self._record(key, value, window_start, self.seqnum)
        self.inner.put(key, value, window_start)
        self.sink.append(record)


# --- paired mutants (caught beside a model only: kstate conformance --model; mutants/paired_mutants.py) ---------

paired_mutant("paired-window-backward-all-forward", "a window store's backward all() answers the forward order",
              "window", ("WS-12",), {"window_store.all": changed_answer("window_store.all", lambda p, out: (
                  out if not p.get("backward") else {**out, "entries": out["entries"][::-1]}))})
