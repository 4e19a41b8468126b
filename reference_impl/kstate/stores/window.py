"""Window stores: Kafka's ``RocksDBWindowStore`` over ``RocksDBSegmentedBytesStore`` (spec/window-store.md, WS-*).

A window store keeps byte values by ``(key, window start)``. On RocksDB every record is the row
``[key][window start int64][seqnum int32]`` (WIN-1, WS-3) in the database of its segment,
``<task>/<store>/<store>.<segment start>`` (WS-5); the three types differ in their values (plain,
``[ts][value]``, ``[hsize][headers][ts][value]``, WS-21) and their segments' column families (WS-27).
What a store answers is materialised: ``fetch_range`` gives ``(window start, value)`` pairs, the other
scans ``(key, window start, value)`` triples, each in Kafka's order (WS-11 to WS-15).

The in-memory store is :mod:`kstate.stores.window_memory`; the change-logging layer
:class:`kstate.stores.changelogging.ChangeLoggingWindowBytesStore`.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from kstate.codecs import changelog as cl
from kstate.codecs import window_keys
from kstate.codecs.key_schemas import check_long
from kstate.codecs.position import Position, merge_positions
from kstate.codecs.primitives import INT32_MAX, INT64_MAX, INT64_MIN
from kstate.codecs.store_types import STORE_TYPES, RestoreConversion, StoreType
from kstate.errors import DecodeError, EncodeError, InvalidArgumentError, NullKeyError
from kstate.stores.api import Backend, StateStore
from kstate.stores.life import Op
from kstate.stores.offsets import read_legacy_position
from kstate.stores.segmented import RocksDBSegmentedBytesStore
from kstate.stores.segments import (
    AbstractSegments,
    KeyValueSegments,
    TimestampedSegments,
    TimestampedSegmentsWithHeaders,
)
from kstate.stores.store_classes import OpenOption, StoreClasses
from kstate.stores.surface import (
    DEFAULT_ROCKSDB_OPTIONS,
    LOG,
    RocksDBOptions,
    StoreState,
    check_bound,
    check_value,
    require_key,
)

SCHEMA = window_keys.PLAIN
#: The row key's suffix ``[window start int64][seqnum int32]`` (WIN-1) and its window start (WIN-4).
_ROW_SUFFIX = struct.Struct(">qi")
_START = struct.Struct(">q")
#: ``ConsumerRecord.NO_TIMESTAMP``: the observed stream time of a store that has seen no put (WS-6).
NO_TIMESTAMP = -1
FMT = "window-store"

#: ``(window start, value)`` of a single-key fetch.
TimedValue = tuple[int, bytes]
#: ``(key, window start, value)`` of a multi-key fetch.
WindowedEntry = tuple[bytes, int, bytes]


@runtime_checkable
class WindowBytesStore(StateStore, Protocol):
    """Kafka's ``WindowStore<Bytes, byte[]>``, values in the type's layout (WS-1, WS-10 to WS-15)."""

    store_type: StoreType
    retain_duplicates: bool

    def put(self, key: bytes, value: bytes | None, window_start: int) -> None: ...
    def fetch(self, key: bytes, time: int) -> bytes | None: ...
    def fetch_range(self, key: bytes, time_from: int, time_to: int, backward: bool = False) -> list[TimedValue]: ...
    def fetch_keys(self, key_from: bytes | None, key_to: bytes | None, time_from: int, time_to: int,
                   backward: bool = False) -> list[WindowedEntry]: ...
    def fetch_all(self, time_from: int, time_to: int, backward: bool = False) -> list[WindowedEntry]: ...
    def all(self, backward: bool = False) -> list[WindowedEntry]: ...
    def restore_records(self, records: Sequence[cl.ChangelogRecord]) -> None: ...


# --- argument checks shared by both backends --------------------------------------------------------------------


def check_time(name: str, value: object) -> int:
    """A Java ``long`` time argument, else :class:`InvalidArgumentError` naming ``name`` (WS-35)."""
    try:
        check_long(FMT, name, value, EncodeError)  # type: ignore[arg-type]
    except EncodeError as exc:
        raise InvalidArgumentError(name, exc.reason) from None
    return value  # type: ignore[return-value]


def check_options(retention_ms: object, window_size_ms: object, retain_duplicates: object,
                  segment_interval_ms: object) -> int:
    """``Stores.persistentWindowStore``'s checks; answers the segment interval, defaulted to
    ``max(retention / 2, 60000)`` (WS-2, WIN-16). Every refusal is an :class:`InvalidArgumentError`."""
    for name, value in (("retention_ms", retention_ms), ("window_size_ms", window_size_ms)):
        check_time(name, value)
    if segment_interval_ms is not None:
        check_time("segment_interval_ms", segment_interval_ms)
    if not isinstance(retain_duplicates, bool):
        raise InvalidArgumentError("retain_duplicates", f"expected a bool, got {retain_duplicates!r:.80}")
    assert isinstance(retention_ms, int) and isinstance(window_size_ms, int)
    if retention_ms < 0:
        raise InvalidArgumentError("retention_ms", "retention period cannot be negative")
    try:
        return window_keys.validate_store_params(
            retention_ms, window_size_ms, segment_interval_ms)  # type: ignore[arg-type]
    except EncodeError as exc:
        argument = "segment_interval_ms" if "segment" in exc.reason else "window_size_ms"
        raise InvalidArgumentError(argument, exc.reason) from None


class WindowStoreBase(StoreState):
    """What both backends share: options, the observed stream time, the seqnum, the position (WS-2, WS-4, WS-6,
    WS-29)."""

    store_type: StoreType = StoreType.WINDOW
    backend: Backend

    def __init__(self, name: str, retention_ms: int, window_size_ms: int, retain_duplicates: bool,
                 segment_interval_ms: int | None) -> None:
        super().__init__(name)
        self.segment_interval = check_options(retention_ms, window_size_ms, retain_duplicates, segment_interval_ms)
        self.retention_period = retention_ms
        self.window_size = window_size_ms
        self.retain_duplicates = retain_duplicates
        #: The largest window start any put (or restore batch) named; -1 until then, and after a restart (WS-6).
        self.observed_stream_time = NO_TIMESTAMP
        #: The store's own duplicate counter, in memory only (WS-4).
        self.seqnum = 0
        #: Puts dropped because their window had expired (Kafka's ``dropped-records`` sensor, WS-38).
        self.dropped_records = 0
        self._open = True

    # shared steps -----------------------------------------------------------------------------------------------

    def _next_seqnum(self) -> int:
        """``maybeUpdateSeqnumForDups``: ``(seqnum + 1) & 0x7FFFFFFF`` with duplicates, else unchanged (WS-4)."""
        self.seqnum = window_keys.next_seqnum(self.seqnum, self.retain_duplicates)
        return self.seqnum

    def _earliest_live(self) -> int:
        """``observedStreamTime - retentionPeriod + 1``: the first time a read still answers (WS-10, WS-11)."""
        return self.observed_stream_time - self.retention_period + 1

    @staticmethod
    def _checked_put(key: bytes, value: bytes | None, window_start: int) -> tuple[bytes, bytes | None, int]:
        return require_key(key), check_value(value), check_time("window_start", window_start)

    @staticmethod
    def _checked_range(time_from: int, time_to: int) -> None:
        check_time("time_from", time_from)
        check_time("time_to", time_to)

    def persistent(self) -> bool:
        return self.backend is Backend.ROCKSDB

    # the surface both backends share: arguments checked, the life table asked, then the backend's hook ------------

    def put(self, key: bytes, value: bytes | None, window_start: int) -> None:
        """``put(key, value, windowStartTimestamp)``: the arguments checked (WS-35), then the backend's put (WS-4,
        WS-6..WS-9, WS-16, WS-17)."""
        if type(key) is not bytes or (value is not None and type(value) is not bytes) or type(window_start) is not int \
                or not INT64_MIN <= window_start <= INT64_MAX:
            key, value, window_start = self._checked_put(key, value, window_start)
        if not self._open:
            self._allow(Op.WRITE)
        self._put(key, value, window_start)

    def fetch(self, key: bytes, time: int) -> bytes | None:
        """``fetch(key, time)`` (WS-10, WS-19)."""
        key = require_key(key)
        check_time("time", time)
        self._allow(Op.READ)
        return self._get(key, time)

    def fetch_range(self, key: bytes, time_from: int, time_to: int, backward: bool = False) -> list[TimedValue]:
        """``fetch``/``backwardFetch(key, from, to)``: ``(window start, value)`` of ``key``, ``from`` clamped to the
        earliest live time (WS-11, WS-12, WS-18)."""
        key = require_key(key)
        if type(time_from) is not int or type(time_to) is not int or not INT64_MIN <= time_from <= INT64_MAX \
                or not INT64_MIN <= time_to <= INT64_MAX:
            self._checked_range(time_from, time_to)  # raises WS-35's refusal: the hot path checks inline
        self._allow(Op.READ)
        return self._fetch_key(key, time_from, time_to, backward)

    def fetch_keys(self, key_from: bytes | None, key_to: bytes | None, time_from: int, time_to: int,
                   backward: bool = False) -> list[WindowedEntry]:
        """``fetch``/``backwardFetch(keyFrom, keyTo, from, to)``: null bounds unbounded, ``keyFrom > keyTo`` empty
        with Kafka's WARN (WS-13, WS-18, WS-34)."""
        key_from, key_to = check_bound("key_from", key_from), check_bound("key_to", key_to)
        self._checked_range(time_from, time_to)
        self._allow(Op.READ)
        if key_from is not None and key_to is not None and key_from > key_to:
            LOG.warning("Returning empty iterator for fetch with invalid key range: from > to.")
            return []
        return self._windowed(self._scan(key_from, key_to, time_from, time_to, not backward))

    def fetch_all(self, time_from: int, time_to: int, backward: bool = False) -> list[WindowedEntry]:
        """``fetchAll``/``backwardFetchAll(from, to)`` (WS-14, WS-18)."""
        if type(time_from) is not int or type(time_to) is not int or not INT64_MIN <= time_from <= INT64_MAX \
                or not INT64_MIN <= time_to <= INT64_MAX:
            self._checked_range(time_from, time_to)  # raises WS-35's refusal
        self._allow(Op.READ)
        return self._windowed(self._scan(None, None, time_from, time_to, not backward))

    def all(self, backward: bool = False) -> list[WindowedEntry]:
        """``all``/``backwardAll``: every live window (WS-15, WS-20)."""
        self._allow(Op.READ)
        return self._windowed(self._all(not backward))

    def restore_records(self, records: Sequence[cl.ChangelogRecord]) -> None:
        """One restore batch: values converted for the type (WS-25, WS-26), then :meth:`restore_batch`."""
        if STORE_TYPES[self.store_type].restore is RestoreConversion.IDENTITY:
            self.restore_batch([(r.key, r.value) for r in records])
        else:
            self.restore_batch(cl.restore_entries(self.store_type, [(r.key, r.value, r.timestamp, r.headers)
                                                                    for r in records]))

    def restore_batch(self, entries: Sequence[tuple[bytes, bytes | None]]) -> None:
        """One batch of changelog entries ``([key][start][seqnum], stored value)`` restored (WS-25, WS-26)."""
        self._allow(Op.RESTORE)
        self._restore(entries)

    # the backend's hooks: arguments checked, the store open -----------------------------------------------------

    def _put(self, key: bytes, value: bytes | None, window_start: int) -> None:
        raise NotImplementedError

    def _get(self, key: bytes, time: int) -> bytes | None:
        raise NotImplementedError

    def _fetch_key(self, key: bytes, time_from: int, time_to: int, backward: bool) -> list[TimedValue]:
        raise NotImplementedError

    def _scan(self, key_from: bytes | None, key_to: bytes | None, time_from: int, time_to: int,
              forward: bool) -> list[WindowedEntry]:
        raise NotImplementedError

    def _all(self, forward: bool) -> list[WindowedEntry]:
        raise NotImplementedError

    def _restore(self, entries: Sequence[tuple[bytes, bytes | None]]) -> None:
        raise NotImplementedError

    def _windowed(self, entries: list[WindowedEntry]) -> list[WindowedEntry]:
        """An answer of windows, refused when it holds one whose end equals its start: Kafka's windowed iterators
        build ``TimeWindow(start, start + size)``, the end truncated to Long.MAX_VALUE when the sum overflows, and
        its constructor refuses end == start: every window at size 0 (WS-43), the one at start Long.MAX_VALUE at
        any size (WIN-9)."""
        if not entries:
            return entries
        if self.window_size == 0:
            raise InvalidArgumentError(
                "window_size_ms", "a window of size 0 cannot be answered (TimeWindow refuses end == start)")
        if any(start == INT64_MAX for _key, start, _value in entries):
            raise InvalidArgumentError(
                "window_start", "the window at start Long.MAX_VALUE ends at Long.MAX_VALUE once its end is truncated, "
                "and TimeWindow refuses end == start (WIN-9)")
        return entries


# --- RocksDB -------------------------------------------------------------------------------------------------------


class RocksDBWindowStore(RocksDBSegmentedBytesStore, WindowStoreBase):
    """Kafka's ``RocksDBWindowStore`` over ``RocksDBSegmentedBytesStore`` with ``WindowKeySchema`` (WS-1..WS-15).

    One :class:`~kstate.stores.rocksdb_instance.RocksDBInstance` per segment under ``<task_dir>/<name>/``
    (WS-5), its column families those of ``SEGMENTS`` (WS-27), its own ``offsets`` family (WS-28). Writes are
    staged until :meth:`commit` or :meth:`close`.
    """

    backend = Backend.ROCKSDB
    store_type = StoreType.WINDOW
    #: The segment manager of this type: Kafka's ``KeyValueSegments`` / ``TimestampedSegments`` / ... (WS-27).
    SEGMENTS: type[KeyValueSegments] = KeyValueSegments
    SCHEMA = window_keys.PLAIN

    def __init__(self, name: str, task_dir: str | Path, *, retention_ms: int, window_size_ms: int,
                 retain_duplicates: bool = False, segment_interval_ms: int | None = None,
                 options: RocksDBOptions = DEFAULT_ROCKSDB_OPTIONS) -> None:
        super().__init__(name, retention_ms, window_size_ms, retain_duplicates, segment_interval_ms)
        self.task_dir = Path(task_dir)
        # StoreQueryUtils.maybeMigrateExistingPositionFile: read before any segment opens, so a bad file refuses
        # the open with nothing changed (WS-29). Kafka merges the file and leaves it in place.
        legacy_position = self._legacy_position(self.task_dir, self.name) if options.migrate_legacy_files else {}
        self.path = self.task_dir / self.name
        self.segments = self.SEGMENTS(
            self.name, self.task_dir, self.retention_period, self.segment_interval, options=options,
            changelog_partitions=options.partitions_for(self.task_dir, self.name))
        self._open_existing()
        self._position = merge_positions(self._position, legacy_position)
        self._open = True

    def _min_live_time(self) -> int:
        return self._earliest_live()

    @staticmethod
    def _legacy_position(task_dir: Path, name: str) -> Position:
        """The task's pre-4.3 ``<store>.position`` file, or an empty position; one that is not a regular file or
        cannot be read is refused as a key-value store's open refuses it (WS-29, KV-25)."""
        return read_legacy_position(task_dir, name)

    # the hooks: rows over the segmented store ---------------------------------------------------------------------

    def _put(self, key: bytes, value: bytes | None, window_start: int) -> None:
        """``RocksDBWindowStore.put``: a null value with duplicates is a no-op (WS-4, WS-9); otherwise the row
        ``[key][start][seqnum]`` (WS-3) goes to its segment if live, else is dropped (WS-7)."""
        if self.retain_duplicates:
            if value is None:
                return
            self.seqnum = seqnum = (self.seqnum + 1) & INT32_MAX  # WIN-6
        else:
            seqnum = 0
        # WIN-1: the row key, packed directly (the arguments are checked).
        self._put_row(key + _ROW_SUFFIX.pack(window_start, seqnum), window_start, value)

    def _get(self, key: bytes, time: int) -> bytes | None:
        """``fetch(key, time)``: the row of the store's *current* seqnum; null once expired (WS-10)."""
        return self._get_row(SCHEMA.to_store_key(key, time, self.seqnum), time)

    def _fetch_key(self, key: bytes, time_from: int, time_to: int, backward: bool) -> list[TimedValue]:
        """``fetch(key, from, to)`` over :meth:`_fetch_rows`: segment by segment, by window start then seqnum (WS-11,
        WS-12). A row is the key's when it is ``len(key) + 12`` bytes starting with the key (WIN-4), so a longer key
        sharing the prefix is skipped as ``hasNextCondition`` skips it (WS-11)."""
        # WIN-10: lowerRangeFixedSize (start max(0, from), seqnum 0) and upperRangeFixedSize (seqnum Integer.MAX).
        found = self._fetch_rows(key, key, time_from, time_to, not backward, True)
        out: list[TimedValue] = []
        if found is None:
            return out
        time_from, sources = found
        key_length = len(key)
        row_length = key_length + window_keys.SUFFIX_SIZE
        unpack_start = _START.unpack_from
        # Every row between two bounds that start with ``key`` starts with ``key``; with both times >= 0 (the bounds
        # ``[key][time_from][0]`` to ``[key][time_to][MAX]``) every row of the key's length in bounds has its start
        # in [time_from, time_to], a negative start sorting after ``upper``: then the rows need no other check
        # (issue 35), else each is checked as WS-11 says.
        if time_from >= 0 and time_to >= 0:
            for _, source in sources:
                out += [(unpack_start(store_key, key_length)[0], value) for store_key, value in source
                        if len(store_key) == row_length]
            return out
        for _, source in sources:
            for store_key, value in source:
                if len(store_key) == row_length and store_key.startswith(key):
                    start = unpack_start(store_key, key_length)[0]
                    if time_from <= start <= time_to:
                        out.append((start, value))
        return out

    def _all(self, forward: bool) -> list[WindowedEntry]:
        """``all``/``backwardAll``: every live row from ``max(0, earliest live)`` on (WS-15)."""
        return self._scan(None, None, 0, INT64_MAX, forward)

    def _scan(self, key_from: bytes | None, key_to: bytes | None, time_from: int, time_to: int,
              forward: bool) -> list[WindowedEntry]:
        """``SegmentIterator`` with ``WindowKeySchema.hasNextCondition`` over :meth:`_fetch_rows`: rows kept whose
        key and window start are in range (WS-11, WS-13). Rows are split as WIN-4 reads them: the key before the
        last 12 bytes."""
        out: list[WindowedEntry] = []
        found = self._fetch_rows(key_from, key_to, time_from, time_to, forward, False)
        if found is None:
            return out
        time_from, sources = found
        unpack_start = _START.unpack_from
        suffix_size = window_keys.SUFFIX_SIZE
        # fetchAll and all (WS-14, WS-15): every key is in range, so a row is kept by its start alone.
        every_key = key_from is None and key_to is None
        for segment, source in sources:
            for store_key, value in source:
                key_end = len(store_key) - suffix_size
                if key_end < 0:
                    raise DecodeError(FMT, f"a row key of segment {segment.name} is shorter than 12 bytes", 0)
                start = unpack_start(store_key, key_end)[0]
                if time_from <= start <= time_to:
                    key = store_key[:key_end]
                    if every_key or ((key_from is None or key >= key_from) and (key_to is None or key <= key_to)):
                        out.append((key, start, value))
        return out

    # restore ------------------------------------------------------------------------------------------------------

    def _restore(self, entries: Sequence[tuple[bytes, bytes | None]]) -> None:
        """``restoreAllInternal`` over :meth:`_restore_rows`, each changelog key ``[key][start][seqnum]`` (WS-25)."""
        self._restore_rows(entries, _checked_restore_row)


def _checked_restore_row(key: bytes, value: bytes | None) -> tuple[bytes, bytes | None, int]:
    """A window changelog record's row key, value and window start (WIN-4, WS-25)."""
    if type(key) is not bytes:
        if key is None:
            raise NullKeyError("key cannot be null")
        key = bytes(key)
    key_end = len(key) - window_keys.SUFFIX_SIZE
    if key_end < 0:
        raise DecodeError(FMT, f"a window changelog key needs at least 12 bytes, got {len(key)}", 0)
    return key, value, _START.unpack_from(key, key_end)[0]


class RocksDBTimestampedWindowStore(RocksDBWindowStore):
    """Kafka's ``RocksDBTimestampedWindowStore``: values ``[ts][value]``; each segment a timestamped database
    upgrading its own ``default`` family lazily (WS-21, WS-27)."""

    store_type = StoreType.TIMESTAMPED_WINDOW
    SEGMENTS = TimestampedSegments


class RocksDBTimestampedWindowStoreWithHeaders(RocksDBWindowStore):
    """KIP-1271's header-aware timestamped window store: values ``[hsize][headers][ts][value]`` in
    ``keyValueWithTimestampAndHeaders``, every segment upgrading from a timestamped or plain one (WS-21, WS-27)."""

    store_type = StoreType.TIMESTAMPED_WINDOW_WITH_HEADERS
    SEGMENTS = TimestampedSegmentsWithHeaders


# --- what kstate.stores.families collects for the family (issue 33) ------------------------------------------------

#: The options of the window types, as ``Stores.persistentWindowStore`` takes them (WS-2): retention and window
#: size required, duplicates off unless asked for, the segment interval defaulted to ``max(retention / 2, 60000)``.
WINDOW_OPTIONS = (
    OpenOption("retention_ms", int, required=True),
    OpenOption("window_size_ms", int, required=True),
    OpenOption("retain_duplicates", bool),
    OpenOption("segment_interval_ms", int),
)


def family_store_classes() -> Mapping[StoreType, StoreClasses]:
    """The classes of each window type (WS-2); the in-memory stores and the change-logging layer imported here, as
    they import this module."""
    from kstate.stores.changelogging import ChangeLoggingWindowBytesStore
    from kstate.stores.window_memory import (
        InMemoryTimestampedWindowStore,
        InMemoryTimestampedWindowStoreWithHeaders,
        InMemoryWindowStore,
    )

    return {
        StoreType.WINDOW: StoreClasses(RocksDBWindowStore, InMemoryWindowStore, ChangeLoggingWindowBytesStore,
                                       options=WINDOW_OPTIONS),
        StoreType.TIMESTAMPED_WINDOW: StoreClasses(RocksDBTimestampedWindowStore, InMemoryTimestampedWindowStore,
                                                   ChangeLoggingWindowBytesStore, options=WINDOW_OPTIONS),
        StoreType.TIMESTAMPED_WINDOW_WITH_HEADERS: StoreClasses(
            RocksDBTimestampedWindowStoreWithHeaders, InMemoryTimestampedWindowStoreWithHeaders,
            ChangeLoggingWindowBytesStore, options=WINDOW_OPTIONS),
    }


def family_segment_managers() -> Mapping[StoreType, type[AbstractSegments[Any]]]:
    """One database per segment, of the type's column families (LAY-3, WS-21, WS-27)."""
    return {StoreType.WINDOW: KeyValueSegments, StoreType.TIMESTAMPED_WINDOW: TimestampedSegments,
            StoreType.TIMESTAMPED_WINDOW_WITH_HEADERS: TimestampedSegmentsWithHeaders}

__all__ = [
    "NO_TIMESTAMP",
    "WINDOW_OPTIONS",
    "RocksDBTimestampedWindowStore",
    "RocksDBTimestampedWindowStoreWithHeaders",
    "RocksDBWindowStore",
    "TimedValue",
    "WindowBytesStore",
    "WindowStoreBase",
    "WindowedEntry",
    "check_options",
    "check_time",
    "family_segment_managers",
    "family_store_classes",
]
