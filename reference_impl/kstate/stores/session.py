"""Session bytes stores: Kafka's ``RocksDBSessionStore``, ``InMemorySessionStore`` and their KIP-1271 header-aware
variant (spec/session-store.md, SS-*).

A session is ``(key bytes, start, end)`` and its value is the aggregate's bytes: as given (``session``) or
``[varint hsize][headers][aggregation]`` (``session_with_headers``, SS-30). The RocksDB store keeps one database per
segment (``<task>/<store>/<store>.<segment start>``, SS-10) under the key ``[key][end][start]`` (SS-1); the segment
is chosen by the session END (SS-11). Expiry follows the observed stream time, the largest end written so far
(SS-12..SS-15). ``find_sessions`` answers the sessions overlapping ``[earliest_end, latest_start]``: end >=
earliest_end and start <= latest_start (SS-5), in Kafka's order (SS-6, SS-7).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from kstate.codecs import changelog as cl
from kstate.codecs import session_keys
from kstate.codecs.header_values import AggregationWithHeaders, decode_aggregation_with_headers
from kstate.codecs.position import merge_positions
from kstate.codecs.primitives import INT64_MAX, INT64_MIN, to_int64
from kstate.codecs.store_types import Family, StoreType
from kstate.errors import InvalidArgumentError, KStateError
from kstate.stores.api import (
    Backend,
    InvalidStateStoreError,
)
from kstate.stores.changelogging import ChangeLoggingStore
from kstate.stores.column_families import ColumnFamilyLayout, upgrade_mode_message
from kstate.stores.kv import INVALID_RANGE_WARNING
from kstate.stores.life import Op
from kstate.stores.offsets import read_legacy_position
from kstate.stores.segmented import RocksDBSegmentedBytesStore, SegmentedBytesStore, SegmentRows
from kstate.stores.segments import AbstractSegments, KeyValueSegments, MemorySegments
from kstate.stores.store_classes import OpenOption, StoreClasses
from kstate.stores.surface import (
    DEFAULT_ROCKSDB_OPTIONS,
    LOG,
    ClosesOnExit,
    InMemoryOffsets,
    RocksDBOptions,
    StoreState,
    check_bound,
    check_value,
    require_key,
)

#: ``ConsumerRecord.NO_TIMESTAMP``: the observed stream time of a store that has seen no write (SS-12).
NO_TIMESTAMP = -1
#: ``fetch(key)`` is ``findSessions(key, 0, Long.MAX_VALUE)`` (SS-8).
FETCH_ALL_EARLIEST_END = 0
FETCH_ALL_LATEST_START = INT64_MAX
#: A session key's suffix, ``[end int64][start int64]`` (SESS-1).
_TIMES = struct.Struct(">qq")
_SUFFIX_SIZE = _TIMES.size
#: The WARN of the in-memory store for a put into an expired segment (SS-14).
EXPIRED_WARNING = "Skipping record for expired segment."


class InvalidSessionWindowError(KStateError, ValueError):
    """A session window Kafka's ``SessionWindow`` refuses: a negative start, or an end before the start (SS-3)."""


class SessionRecord(NamedTuple):
    """One entry of a session iterator: Kafka's ``KeyValue<Windowed<Bytes>, byte[]>`` (a tuple: cheap to make)."""

    key: bytes
    start: int
    end: int
    value: bytes


def check_time(name: str, value: object) -> int:
    """A Java ``long`` argument, else :class:`InvalidArgumentError` naming it."""
    if isinstance(value, bool) or not isinstance(value, int) or not INT64_MIN <= value <= INT64_MAX:
        raise InvalidArgumentError(name, f"a Java long, got {value!r:.80}")
    return value


def check_session(key: bytes | None, start: object, end: object) -> tuple[bytes, int, int]:
    """The session Kafka's ``Windowed(key, SessionWindow(start, end))`` accepts (SS-2, SS-3): a non-null key,
    ``0 <= start <= end`` (``start == end`` is a session); anything else is refused before anything is written."""
    checked_key = require_key(key)
    start_ms, end_ms = check_time("start", start), check_time("end", end)
    if start_ms < 0:
        raise InvalidSessionWindowError("Window startMs time cannot be negative.")
    if end_ms < start_ms:
        raise InvalidSessionWindowError("Window endMs time cannot be smaller than window startMs time.")
    return checked_key, start_ms, end_ms


#: What :func:`check_value` and :func:`check_bound` say a session store's aggregates and range bounds are.
_AGGREGATE = "an aggregate is bytes or None"
_RANGE_KEY = "keys are bytes"


class SessionIterator(ClosesOnExit):
    """Kafka's ``KeyValueIterator<Windowed<Bytes>, byte[]>``: :class:`SessionRecord` entries, ``peek_next``, and
    ``close``; a read after close raises :class:`InvalidStateStoreError`."""

    def __init__(self, source: Iterator[SessionRecord], on_close: Callable[[SessionIterator], None] | None = None,
                 closed_message: str = "the session iterator is closed") -> None:
        # The bound ``__next__`` of the source: one call per entry on the hot path; swapped for a refusal at close.
        self._next: Callable[[], SessionRecord] = source.__next__
        # A generator source (the RocksDB scan) is closed with the iterator, which releases its cursors, and a
        # ``for`` loop may then read it directly; any other source (a materialised answer) is only ever read here.
        close_source: Callable[[], None] | None = getattr(source, "close", None)
        self._direct: Iterator[SessionRecord] | None = source if close_source is not None else None
        self._close_source = close_source
        self._peeked: SessionRecord | None = None
        self._on_close = on_close
        self._closed_message = closed_message
        self.is_closed = False

    def _refuse(self) -> SessionRecord:
        raise InvalidStateStoreError(self._closed_message)

    def __iter__(self) -> Iterator[SessionRecord]:
        # A ``for`` loop reads a generator source itself while nothing is peeked: no Python frame of this class per
        # entry (issue 35), as StoreIterator does (KV-12). ``next`` and ``peek_next`` keep this class's refusal
        # once closed; closing closes the source, so a loop whose body closes its iterator ends there.
        direct = self._direct
        if direct is None or self._peeked is not None:
            return self
        return direct

    def __next__(self) -> SessionRecord:
        peeked = self._peeked
        if peeked is None:
            return self._next()
        self._peeked = None
        return peeked

    def peek_next(self) -> SessionRecord | None:
        """The next entry without consuming it; None at the end."""
        if self._peeked is None:
            try:
                self._peeked = self._next()
            except StopIteration:
                return None
        return self._peeked

    def close(self) -> None:
        if self.is_closed:
            return
        self.is_closed = True
        self._next = self._refuse
        self._peeked = None
        self._direct = None
        close_source, self._close_source = self._close_source, None
        if close_source is not None:
            close_source()
        on_close, self._on_close = self._on_close, None
        if on_close is not None:
            on_close(self)



def empty_session_iterator() -> SessionIterator:
    return SessionIterator(iter(()))


def _warn_if_invalid_range(key_from: bytes | None, key_to: bytes | None) -> bool:
    """``from > to``: Kafka's WARN and an empty iterator (SS-9)."""
    if key_from is not None and key_to is not None and key_from > key_to:
        LOG.warning(INVALID_RANGE_WARNING)
        return True
    return False


class SessionStore(Protocol):
    """Kafka's ``SessionStore<Bytes, byte[]>`` as every session layer offers it (bytes stores, change logging)."""

    name: str

    def put(self, key: bytes, start: int, end: int, aggregate: bytes | None) -> None: ...
    def remove(self, key: bytes, start: int, end: int) -> None: ...
    def fetch_session(self, key: bytes, start: int, end: int) -> bytes | None: ...
    def find_sessions(self, key: bytes, earliest_end: int, latest_start: int, *,
                      backward: bool = False) -> SessionIterator: ...
    def find_sessions_range(self, key_from: bytes | None, key_to: bytes | None, earliest_end: int,
                            latest_start: int, *, backward: bool = False) -> SessionIterator: ...
    def fetch(self, key: bytes, *, backward: bool = False) -> SessionIterator: ...
    def fetch_range(self, key_from: bytes | None, key_to: bytes | None, *,
                    backward: bool = False) -> SessionIterator: ...


# --- the operations both backends share --------------------------------------------------------------------------


class SessionOperations(StoreState):
    """Kafka's ``SessionStore<Bytes, byte[]>`` surface over the backend hooks ``_put``, ``_remove``, ``_get``,
    ``_find`` (single key when ``single``) and ``_fetch_range`` (SS-2..SS-9)."""

    name: str
    backend: Backend
    store_type: StoreType = StoreType.SESSION

    def __init__(self, name: str, retention_ms: int) -> None:
        super().__init__(name)
        if isinstance(retention_ms, bool) or not isinstance(retention_ms, int) or retention_ms < 0:
            raise InvalidArgumentError("retention_ms", f"retentionPeriod cannot be negative, got {retention_ms!r:.80}")
        self.retention_ms = retention_ms
        #: The largest session end written (or restored) so far (SS-12).
        self.observed_stream_time = NO_TIMESTAMP
        #: Puts dropped because their segment had expired (Kafka's ``dropped-records`` sensor, SS-14).
        self.dropped_records = 0
        self._open = True

    # writes -------------------------------------------------------------------------------------------------------

    def put(self, key: bytes, start: int, end: int, aggregate: bytes | None) -> None:
        """``put(Windowed(key, SessionWindow(start, end)), aggregate)``; a None aggregate removes (SS-2, SS-4)."""
        checked_key, start_ms, end_ms = check_session(key, start, end)
        value = check_value(aggregate, _AGGREGATE)
        self._allow(Op.WRITE)
        self._put(checked_key, start_ms, end_ms, value)

    def remove(self, key: bytes, start: int, end: int) -> None:
        """``remove(Windowed(key, SessionWindow(start, end)))`` (SS-4)."""
        checked_key, start_ms, end_ms = check_session(key, start, end)
        self._allow(Op.WRITE)
        self._remove(checked_key, start_ms, end_ms)

    # reads --------------------------------------------------------------------------------------------------------

    def fetch_session(self, key: bytes, start: int, end: int) -> bytes | None:
        """``fetchSession(key, start, end)``: the aggregate of exactly that session, None if absent or expired (SS-16)."""
        checked_key = require_key(key)
        start_ms, end_ms = check_time("start", start), check_time("end", end)
        self._allow(Op.READ)
        return self._get(checked_key, start_ms, end_ms)

    def find_sessions(self, key: bytes, earliest_end: int, latest_start: int, *, backward: bool = False) -> SessionIterator:
        """``findSessions(key, earliestSessionEndTime, latestSessionStartTime)`` (and ``backwardFindSessions``):
        the sessions of ``key`` with end >= earliest_end and start <= latest_start (SS-5..SS-7)."""
        checked_key = require_key(key)
        # check_time's refusals, the usual Java longs checked inline (issue 35: the fixed cost of a read).
        if type(earliest_end) is not int or not INT64_MIN <= earliest_end <= INT64_MAX:
            check_time("earliest_end", earliest_end)
        if type(latest_start) is not int or not INT64_MIN <= latest_start <= INT64_MAX:
            check_time("latest_start", latest_start)
        self._allow(Op.READ)
        return self._find(checked_key, checked_key, earliest_end, latest_start, backward, True)

    def find_sessions_range(self, key_from: bytes | None, key_to: bytes | None, earliest_end: int, latest_start: int,
                            *, backward: bool = False) -> SessionIterator:
        """``findSessions(keyFrom, keyTo, earliestSessionEndTime, latestSessionStartTime)``: keys in ``[from, to]``
        (None = unbounded); ``from > to`` answers nothing with Kafka's WARN (SS-5..SS-7, SS-9)."""
        lower, upper = check_bound("key_from", key_from, _RANGE_KEY), check_bound("key_to", key_to, _RANGE_KEY)
        earliest, latest = check_time("earliest_end", earliest_end), check_time("latest_start", latest_start)
        self._allow(Op.READ)
        if _warn_if_invalid_range(lower, upper):
            return empty_session_iterator()
        return self._find(lower, upper, earliest, latest, backward, False)

    def fetch(self, key: bytes, *, backward: bool = False) -> SessionIterator:
        """``fetch(key)`` / ``backwardFetch(key)``: every live session of ``key`` (SS-8)."""
        return self.find_sessions(key, FETCH_ALL_EARLIEST_END, FETCH_ALL_LATEST_START, backward=backward)

    def fetch_range(self, key_from: bytes | None, key_to: bytes | None, *, backward: bool = False) -> SessionIterator:
        """``fetch(keyFrom, keyTo)`` / ``backwardFetch(keyFrom, keyTo)``: every live session of the keys (SS-8)."""
        lower, upper = check_bound("key_from", key_from, _RANGE_KEY), check_bound("key_to", key_to, _RANGE_KEY)
        self._allow(Op.READ)
        return self._fetch_range(lower, upper, backward)

    # hooks --------------------------------------------------------------------------------------------------------

    def _put(self, key: bytes, start: int, end: int, value: bytes | None) -> None:
        raise NotImplementedError

    def _remove(self, key: bytes, start: int, end: int) -> None:
        raise NotImplementedError

    def _get(self, key: bytes, start: int, end: int) -> bytes | None:
        raise NotImplementedError

    def _find(self, key_from: bytes | None, key_to: bytes | None, earliest_end: int, latest_start: int,
              backward: bool, single: bool) -> SessionIterator:
        raise NotImplementedError

    def _fetch_range(self, key_from: bytes | None, key_to: bytes | None, backward: bool) -> SessionIterator:
        raise NotImplementedError


# --- RocksDB -----------------------------------------------------------------------------------------------------


#: The column families of a header-aware session segment: ``sessionKeyValueWithHeaders``, upgraded lazily from
#: ``default`` with ``convertToHeaderFormat`` (SS-31, SS-32).
SESSION_WITH_HEADERS_LAYOUT = ColumnFamilyLayout(StoreType.SESSION_WITH_HEADERS, upgrade_mode_message)


class SessionSegmentsWithHeaders(KeyValueSegments):
    """Kafka's session segments with headers (``SessionSegmentWithHeaders``): each segment a database that migrates
    its own ``default`` family lazily into ``sessionKeyValueWithHeaders`` (SS-31, SS-32)."""

    LAYOUT = SESSION_WITH_HEADERS_LAYOUT


class RocksDBSessionStore(RocksDBSegmentedBytesStore, SessionOperations):
    """Kafka's ``RocksDBSessionStore`` over ``RocksDBSegmentedBytesStore`` with ``SessionKeySchema`` (SS-1, SS-10).

    ``RocksDBSessionStore(name, task_dir, retention_ms=...)`` opens the segments found in ``<task_dir>/<name>``;
    ``segment_interval_ms`` defaults to ``max(retention / 2, 60000)`` (SS-11). Each segment is a database with its
    own ``offsets`` family; writes are staged until :meth:`commit` or :meth:`close` (SS-20..SS-23).
    """

    backend = Backend.ROCKSDB
    store_type = StoreType.SESSION
    #: The segment manager: its ``LAYOUT`` is every segment's column families (SS-10, SS-31).
    SEGMENTS: type[KeyValueSegments] = KeyValueSegments
    SCHEMA = session_keys.PLAIN
    RESTORE_CHECKS_VALUES = True  # check_value(value, _AGGREGATE), SS-24

    def __init__(
        self,
        name: str,
        task_dir: str | Path,
        *,
        retention_ms: int,
        segment_interval_ms: int | None = None,
        options: RocksDBOptions = DEFAULT_ROCKSDB_OPTIONS,
    ) -> None:
        super().__init__(name, retention_ms)
        self._open = False
        self.task_dir = Path(task_dir)
        if segment_interval_ms is None:
            segment_interval_ms = session_keys.default_segment_interval(retention_ms)
        self.segment_interval_ms = segment_interval_ms
        self.changelog_partitions = options.partitions_for(self.task_dir, self.name)
        self.ignore_invalid_state = options.ignore_invalid_state
        # StoreQueryUtils.maybeMigrateExistingPositionFile, as AbstractRocksDBSegmentedBytesStore.init runs it for
        # the window store too: read before any segment opens (a bad file refuses the open with nothing changed),
        # merged into the segments' position (SS-21, OFF-18, OFF-22). Kafka merges the file and leaves it in place.
        legacy_position = read_legacy_position(self.task_dir, self.name) if options.migrate_legacy_files else {}
        self.segments = self.SEGMENTS(
            self.name, self.task_dir, retention_ms, segment_interval_ms, options=options,
            changelog_partitions=self.changelog_partitions)
        self._open_existing()
        self._position = merge_positions(self._position, legacy_position)
        self._iterators: set[SessionIterator] = set()
        self._open = True

    def persistent(self) -> bool:
        return True

    # hooks --------------------------------------------------------------------------------------------------------

    def _min_live_time(self) -> int:
        """``observedStreamTime - retentionPeriod + 1``: the earliest end a read still answers (SS-13, SS-16)."""
        # Java long arithmetic: at observed = Long.MAX with retention 0 this wraps to Long.MIN, as in Kafka.
        return to_int64(self.observed_stream_time - self.retention_ms + 1)

    def _put(self, key: bytes, start: int, end: int, value: bytes | None) -> None:
        """The row ``[key][end][start]`` put in the segment of its end (SS-1, SS-11, SS-12, SS-14)."""
        self._put_row(self.SCHEMA.to_store_key(key, start, end), end, value)

    def _remove(self, key: bytes, start: int, end: int) -> None:
        """``remove``: advances stream time; a session in no open segment is left alone (SS-4, SS-12)."""
        self._remove_row(self.SCHEMA.to_store_key(key, start, end), end)

    def _get(self, key: bytes, start: int, end: int) -> bytes | None:
        return self._get_row(self.SCHEMA.to_store_key(key, start, end), end)

    def _find(self, key_from: bytes | None, key_to: bytes | None, earliest_end: int, latest_start: int,
              backward: bool, single: bool) -> SessionIterator:
        """``AbstractRocksDBSegmentedBytesStore.fetch`` (:meth:`_fetch_rows`): segments from
        ``segmentId(actualFrom)`` up, byte order in each, filtered by ``SessionKeySchema.hasNextCondition``
        (SS-5, SS-6, SS-13)."""
        # upperRangeFixedSize builds SessionWindow(latest_start, MAX): a negative start is refused (SS-5).
        if single and latest_start < 0:
            raise InvalidSessionWindowError("Window startMs time cannot be negative.")
        # lowerRangeFixedSize / upperRangeFixedSize: sessions (0, max(0, from)) and (latest_start, MAX) (SESS-7).
        found = self._fetch_rows(key_from, key_to, earliest_end, latest_start, not backward, single)
        if found is None:
            return self._register(iter(()))
        actual_from, sources = found
        if single:
            assert key_from is not None
            return self._register(self._scan_key(sources, key_from, actual_from, latest_start))
        return self._register(self._scan(sources, key_from, key_to, actual_from, latest_start))

    def _fetch_range(self, key_from: bytes | None, key_to: bytes | None, backward: bool) -> SessionIterator:
        if _warn_if_invalid_range(key_from, key_to):
            return empty_session_iterator()
        return self._find(key_from, key_to, FETCH_ALL_EARLIEST_END, FETCH_ALL_LATEST_START, backward, False)

    @staticmethod
    def _scan(sources: SegmentRows, key_from: bytes | None, key_to: bytes | None, earliest_end: int,
              latest_start: int) -> Iterator[SessionRecord]:
        """``SegmentIterator`` with ``hasNextCondition``: key in range, end >= earliest_end, start <= latest_start."""
        # The hot loop of every read: the key split and the times read in place (SS-1), no decoded-key object.
        unpack_from = _TIMES.unpack_from
        new = tuple.__new__
        single = key_from is not None and key_from == key_to
        for _, source in sources:
            for store_key, value in source:
                key_end = len(store_key) - _SUFFIX_SIZE
                if key_end < 0:
                    session_keys.PLAIN.decode(store_key)  # raises the codec's DecodeError
                key = store_key[:key_end]
                if single:
                    if key != key_from:
                        continue
                elif (key_from is not None and key < key_from) or (key_to is not None and key > key_to):
                    continue
                end, start = unpack_from(store_key, key_end)
                if end >= earliest_end and start <= latest_start:
                    yield new(SessionRecord, (key, start, end, value))

    @staticmethod
    def _scan_key(sources: SegmentRows, key: bytes, earliest_end: int, latest_start: int) -> Iterator[SessionRecord]:
        """:meth:`_scan` for one key, the hot read path: every store key between ``[key][...]`` bounds starts with
        ``key``, so only its length tells ``key``'s sessions from a longer key's (SS-5).

        The bounds decide the end too: a row of ``key``'s length between ``[key][max(0, earliest_end)][0]`` and
        ``[key][Long.MAX][latest_start]`` has an end in ``[max(0, earliest_end), Long.MAX]`` (a negative end sorts
        after the upper bound), so only the start is checked, and not at all when ``latest_start`` is Long.MAX
        (``fetch``, SS-8): no comparison per row that the bounds have made (issue 35)."""
        unpack_from = _TIMES.unpack_from
        new = tuple.__new__
        key_end = len(key)
        size = key_end + _SUFFIX_SIZE
        if latest_start == INT64_MAX:
            for _, source in sources:
                for store_key, value in source:
                    if len(store_key) == size:
                        end, start = unpack_from(store_key, key_end)
                        yield new(SessionRecord, (key, start, end, value))
            return
        for _, source in sources:
            for store_key, value in source:
                if len(store_key) == size:
                    end, start = unpack_from(store_key, key_end)
                    if start <= latest_start:
                        yield new(SessionRecord, (key, start, end, value))

    def _register(self, source: Iterator[SessionRecord]) -> SessionIterator:
        iterator = SessionIterator(source, self._iterators.discard,
                                   f"RocksDB iterator for store {self.name} has closed")
        self._iterators.add(iterator)
        return iterator

    # restore ------------------------------------------------------------------------------------------------------

    def restore_batch(self, entries: Sequence[tuple[bytes, bytes | None]]) -> None:
        """``restoreAllInternal`` over :meth:`_restore_rows`: stream time advances to the batch's largest end first,
        then each record goes to its segment if live, else is skipped (SS-24, SS-25); every key is checked before
        anything is written."""
        self._allow(Op.RESTORE)
        self._restore_rows(entries, self._checked_restore_row)

    def _checked_restore_row(self, key: bytes, value: bytes | None) -> tuple[bytes, bytes | None, int]:
        """A session changelog record's row key, aggregate and end (SESS-1, SS-24)."""
        store_key = require_key(key)
        return store_key, check_value(value, _AGGREGATE), self.SCHEMA.decode(store_key).end


class RocksDBSessionStoreWithHeaders(RocksDBSessionStore):
    """Kafka's ``RocksDBSessionStoreWithHeaders``: values ``[varint hsize][headers][aggregation]`` in
    ``sessionKeyValueWithHeaders`` of every segment, upgraded lazily from ``default`` (SS-30..SS-32)."""

    store_type = StoreType.SESSION_WITH_HEADERS
    SEGMENTS = SessionSegmentsWithHeaders
    #: SessionSegmentsWithHeaders.getOrCreateSegmentIfLive deletes the expired segments after every lookup, also
    #: when the write is dropped (SS-15); KeyValueSegments only after a live one.
    CLEANS_UP_ON_EXPIRED_WRITE = True


# --- in memory ---------------------------------------------------------------------------------------------------

#: A key's end in an in-memory row (a key's 0x00 is written 0x00 0xFF), then its start, as ``Long.MAX - start``.
_KEY_END = b"\x00\x00"
_ESCAPED_ZERO = b"\x00\xff"
_START_DESCENDING = struct.Struct(">Q")
_MEMORY_SUFFIX_SIZE = len(_KEY_END) + _START_DESCENDING.size


def memory_row(key: bytes, start: int) -> bytes:
    """The in-memory row of a session in its end's segment: ``[key, 0x00 as 0x00 0xFF][0x00 0x00][Long.MAX - start]``.
    Its byte order is Kafka's ``endTimeMap`` order within one end: key ascending (a key before its extensions), then
    start DESCENDING (SS-7)."""
    return key.replace(b"\x00", _ESCAPED_ZERO) + _KEY_END + _START_DESCENDING.pack(INT64_MAX - start)


class InMemorySessionRanges:
    """The in-memory session layout as the rows' key schema: one segment per session end, and in it the rows of
    :func:`memory_row`, so a key range is the rows from ``[key_from][0x00 0x00]`` to ``[key_to][0x00 0x00][0xFF x8]``
    (SS-5, SS-7); a fetch reads every end from the clamped ``earliestSessionEndTime`` on (SS-17)."""

    suffix_size = _MEMORY_SUFFIX_SIZE
    #: ``findSessions`` with ``latestSessionStartTime`` below ``earliestSessionEndTime`` still reads (SS-5).
    empty_when_to_before_from = False

    def lower_range(self, key: bytes | None, time_from: int) -> bytes | None:
        return None if key is None else key.replace(b"\x00", _ESCAPED_ZERO) + _KEY_END

    def upper_range(self, key: bytes | None, time_to: int) -> bytes | None:
        return None if key is None else key.replace(b"\x00", _ESCAPED_ZERO) + _KEY_END + b"\xff" * 8

    def lower_range_fixed_size(self, key: bytes | None, time_from: int) -> bytes:
        return memory_row(require_key(key), INT64_MAX)

    def upper_range_fixed_size(self, key: bytes | None, time_to: int) -> bytes:
        return memory_row(require_key(key), 0)

    def segment_search_range(self, time_from: int, time_to: int) -> tuple[int, int]:
        return time_from, INT64_MAX


_MEMORY_RANGES = InMemorySessionRanges()


class InMemorySessionStore(InMemoryOffsets, SegmentedBytesStore[MemorySegments], SessionOperations):
    """Kafka's ``InMemorySessionStore`` (SS-17..SS-19; no offsets, :class:`InMemoryOffsets`), an adapter over the
    segmented rows: its ``endTime -> key -> startTime -> aggregate`` map is a
    :class:`~kstate.stores.segments.MemorySegments` of one segment per end, each a sorted map of :func:`memory_row`
    rows. ``segment_interval_ms`` is accepted for a common option set and not used."""

    backend = Backend.MEMORY
    store_type = StoreType.SESSION
    SCHEMA = _MEMORY_RANGES
    #: ``InMemorySessionStore.put`` updates the position after a dropped put too; its ``remove`` leaves the stream
    #: time alone (SS-14, SS-4).
    POSITION_ON_DROP = True
    STREAM_TIME_ON_REMOVE = False

    def __init__(self, name: str, *, retention_ms: int, segment_interval_ms: int | None = None) -> None:
        super().__init__(name, retention_ms)
        self.segments = MemorySegments(self.name, retention_ms)
        # Segments of one millisecond, expired at or below observed - retention (SS-14, SS-17).
        self._segment_interval = 1
        self._retention = retention_ms - 1

    def persistent(self) -> bool:
        return False

    def _min_live_time(self) -> int:
        """The first end a read answers: ``max(0, observed - retention + 1)`` as a Java long, as every read of
        Kafka's store first drops the ends below it (``removeExpiredSegments``, SS-17)."""
        return max(0, to_int64(self.observed_stream_time - self.retention_ms + 1))  # Java long wrap, as in Kafka

    def _put(self, key: bytes, start: int, end: int, value: bytes | None) -> None:
        """Expired ends (end <= observed - retention) are skipped with Kafka's WARN; a None value removes (SS-14,
        SS-17); the position advances either way."""
        self._put_row(memory_row(key, start), end, value)

    def _remove(self, key: bytes, start: int, end: int) -> None:
        self._remove_row(memory_row(key, start), end)

    def _get(self, key: bytes, start: int, end: int) -> bytes | None:
        if end <= self.observed_stream_time - self.retention_ms:
            return None
        return self._get_row(memory_row(key, start), end)

    def _find(self, key_from: bytes | None, key_to: bytes | None, earliest_end: int, latest_start: int,
              backward: bool, single: bool) -> SessionIterator:
        """By end, then key, then start DESCENDING; backward reverses all three (SS-7)."""
        found = self._fetch_rows(key_from, key_to, earliest_end, latest_start, not backward, False)
        records = [] if found is None else self._records(found[1], latest_start)
        return SessionIterator(iter(records), closed_message=f"Iterator for store {self.name} has already been closed.")

    def _fetch_range(self, key_from: bytes | None, key_to: bytes | None, backward: bool) -> SessionIterator:
        """``fetch(keyFrom, keyTo)`` without the ``from > to`` check: Java's ``subMap`` throws when any end time is
        held (SS-9)."""
        if key_from is not None and key_to is not None and key_from > key_to and self._holds_sessions():
            raise InvalidArgumentError("key_from", "inconsistent range: key_from is after key_to")
        return self._find(key_from, key_to, FETCH_ALL_EARLIEST_END, FETCH_ALL_LATEST_START, backward, False)

    def _holds_sessions(self) -> bool:
        """Whether an end a read answers holds a session (Kafka's ``endTimeMap`` is not empty, SS-9)."""
        floor = self._min_live_time()
        return any(s.id >= floor and s.accessor.keys for s in self.segments.all_segments())

    @staticmethod
    def _records(sources: SegmentRows, latest_start: int) -> list[SessionRecord]:
        """The rows read back as sessions, those starting after ``latest_start`` skipped (SS-5)."""
        unpack_from = _START_DESCENDING.unpack_from
        out: list[SessionRecord] = []
        for segment, rows in sources:
            end = segment.id
            for row, value in rows:
                key_end = len(row) - _MEMORY_SUFFIX_SIZE
                start = INT64_MAX - unpack_from(row, key_end + len(_KEY_END))[0]
                if start <= latest_start:
                    out.append(SessionRecord(row[:key_end].replace(_ESCAPED_ZERO, b"\x00"), start, end, value))
        return out

    def restore_batch(self, entries: Sequence[tuple[bytes, bytes | None]]) -> None:
        """Each record parsed with ``SessionKeySchema.from`` and put, as Kafka's restore callback does (SS-24);
        every record is checked before anything is written."""
        self._allow(Op.RESTORE)
        checked = []
        for key, value in entries:
            session = session_keys.PLAIN.decode(require_key(key))
            checked.append((check_session(session.key, session.start, session.end), check_value(value, _AGGREGATE)))
        for (key, start, end), value in checked:
            self._put(key, start, end, value)

    def close(self) -> None:
        """Clear the maps and mark the store closed (SS-19)."""
        self._open = False
        self.segments.close()

    def simulate_crash(self) -> None:
        """A killed process loses an in-memory store entirely."""
        self.close()


class InMemorySessionStoreWithHeaders(InMemorySessionStore):
    """The in-memory header-aware session store: values held as ``[varint hsize][headers][aggregation]`` (SS-30)."""

    store_type = StoreType.SESSION_WITH_HEADERS


# --- change logging ----------------------------------------------------------------------------------------------

SessionBytesStore = RocksDBSessionStore | InMemorySessionStore


# --- typed read view of the header-aware store --------------------------------------------------------------------


@dataclass(frozen=True)
class SessionWithHeaders:
    """One session of :class:`ReadOnlySessionStoreWithHeaders`: the key, the window and the decoded value."""

    key: bytes
    start: int
    end: int
    value: AggregationWithHeaders


class ReadOnlySessionStoreWithHeaders:
    """Kafka's ``ReadOnlySessionStoreWithHeaders`` with byte keys: the reads of a header-aware session store, values
    decoded as :class:`AggregationWithHeaders` whose headers are parsed only when read (SS-30, HV-10)."""

    def __init__(self, inner: SessionStore) -> None:
        self.inner = inner

    @staticmethod
    def _decoded(iterator: SessionIterator) -> list[SessionWithHeaders]:
        with iterator:
            return [SessionWithHeaders(r.key, r.start, r.end, _decode(r.value)) for r in iterator]

    def fetch_session(self, key: bytes, start: int, end: int) -> AggregationWithHeaders | None:
        stored = self.inner.fetch_session(key, start, end)
        return None if stored is None else _decode(stored)

    def find_sessions(self, key: bytes, earliest_end: int, latest_start: int, *,
                      backward: bool = False) -> list[SessionWithHeaders]:
        return self._decoded(self.inner.find_sessions(key, earliest_end, latest_start, backward=backward))

    def find_sessions_range(self, key_from: bytes | None, key_to: bytes | None, earliest_end: int, latest_start: int,
                            *, backward: bool = False) -> list[SessionWithHeaders]:
        return self._decoded(self.inner.find_sessions_range(key_from, key_to, earliest_end, latest_start,
                                                            backward=backward))

    def fetch(self, key: bytes, *, backward: bool = False) -> list[SessionWithHeaders]:
        return self._decoded(self.inner.fetch(key, backward=backward))

    def fetch_range(self, key_from: bytes | None, key_to: bytes | None, *,
                    backward: bool = False) -> list[SessionWithHeaders]:
        return self._decoded(self.inner.fetch_range(key_from, key_to, backward=backward))


def _decode(stored: bytes) -> AggregationWithHeaders:
    decoded = decode_aggregation_with_headers(stored)
    assert decoded is not None  # only None decodes to None
    return decoded


# --- the change-logging layer -------------------------------------------------------------------------------------


class ChangeLoggingSessionBytesStore(ChangeLoggingStore[SessionBytesStore]):
    """Kafka's ``ChangeLoggingSessionBytesStore`` (and ``...WithHeaders``): ``put`` and ``remove`` also send
    ``(SessionKeySchema.toBinary(session), raw aggregate or null)`` at the context timestamp, with the stored
    headers for the header-aware type (SS-26..SS-29). The record is built first: a write it would refuse
    changes nothing."""

    def _record(self, key: bytes, start: int, end: int, value: bytes | None) -> cl.ChangelogRecord:
        return cl.segmented_put_record(self.store_type, key, start, end, value, self.context.codec_context(),
                                       family=Family.SESSION)

    def put(self, key: bytes, start: int, end: int, aggregate: bytes | None) -> None:
        checked_key, start_ms, end_ms = check_session(key, start, end)
        value = check_value(aggregate, _AGGREGATE)
        record = self._record(checked_key, start_ms, end_ms, value)
        self.inner.put(checked_key, start_ms, end_ms, value)
        self.sink.append(record)

    def remove(self, key: bytes, start: int, end: int) -> None:
        checked_key, start_ms, end_ms = check_session(key, start, end)
        record = self._record(checked_key, start_ms, end_ms, None)
        self.inner.remove(checked_key, start_ms, end_ms)
        self.sink.append(record)

    # reads go to the store beneath ------------------------------------------------------------------------------

    def fetch_session(self, key: bytes, start: int, end: int) -> bytes | None:
        return self.inner.fetch_session(key, start, end)

    def find_sessions(self, key: bytes, earliest_end: int, latest_start: int, *, backward: bool = False) -> SessionIterator:
        return self.inner.find_sessions(key, earliest_end, latest_start, backward=backward)

    def find_sessions_range(self, key_from: bytes | None, key_to: bytes | None, earliest_end: int, latest_start: int,
                            *, backward: bool = False) -> SessionIterator:
        return self.inner.find_sessions_range(key_from, key_to, earliest_end, latest_start, backward=backward)

    def fetch(self, key: bytes, *, backward: bool = False) -> SessionIterator:
        return self.inner.fetch(key, backward=backward)

    def fetch_range(self, key_from: bytes | None, key_to: bytes | None, *, backward: bool = False) -> SessionIterator:
        return self.inner.fetch_range(key_from, key_to, backward=backward)

    def segment_rows(self) -> dict[str, dict[str, list[tuple[bytes, bytes]]]]:
        if not isinstance(self.inner, RocksDBSessionStore):
            raise InvalidStateStoreError("an in-memory store has no segments")
        return self.inner.segment_rows()

    def simulate_crash(self) -> None:
        self.inner.simulate_crash()


# --- what kstate.stores.families collects for the family (issue 33) ------------------------------------------------

#: A session store's options: its retention (required) and segment interval (default max(retention / 2, 60000)).
SESSION_OPTIONS = (OpenOption("retention_ms", int, required=True), OpenOption("segment_interval_ms", int))


def family_store_classes() -> Mapping[StoreType, StoreClasses]:
    """The classes of each session type (SS-*): ``Stores.persistentSessionStore(name, retention)`` /
    ``inMemorySessionStore``."""
    return {
        StoreType.SESSION: StoreClasses(RocksDBSessionStore, InMemorySessionStore, ChangeLoggingSessionBytesStore,
                                        options=SESSION_OPTIONS),
        StoreType.SESSION_WITH_HEADERS: StoreClasses(RocksDBSessionStoreWithHeaders, InMemorySessionStoreWithHeaders,
                                                     ChangeLoggingSessionBytesStore, options=SESSION_OPTIONS),
    }


def family_segment_managers() -> Mapping[StoreType, type[AbstractSegments[Any]]]:
    """One database per segment; the header-aware type's segments upgrade their own ``default`` (SS-10, SS-31)."""
    return {StoreType.SESSION: KeyValueSegments, StoreType.SESSION_WITH_HEADERS: SessionSegmentsWithHeaders}
