"""Kafka's ``InMemoryWindowStore`` (spec/window-store.md, WS-16 to WS-20, WS-26, WS-36), an adapter over the
segmented rows of :class:`~kstate.stores.segmented.SegmentedBytesStore`, as the RocksDB window store is.

Kafka's map window start -> (key -> value) is a :class:`~kstate.stores.segments.MemorySegments`: one segment per
window start, each a sorted map of its keys; with duplicates the row key is ``[key][seqnum int32]`` (WS-16).
Expiry is per window start, not per segment: a put at or below ``observed - retention`` is dropped, and the windows
below ``max(0, observed - retention + 1)`` are forgotten (WS-17). Scans go window start first, then key bytes
(WS-18): the segments' order, then the rows' order. Nothing is persistent and no offsets are managed (WS-36).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from kstate.codecs.primitives import INT32_MAX, INT64_MAX, INT64_MIN, encode_int32
from kstate.codecs.store_types import StoreType
from kstate.errors import NullKeyError
from kstate.stores.api import Backend, TopicPartition
from kstate.stores.life import Op
from kstate.stores.segmented import EXPIRED_WARNING, SegmentedBytesStore, SegmentRows
from kstate.stores.segments import MemorySegments
from kstate.stores.surface import LOG, check_changelog_offsets, to_codec_tp
from kstate.stores.window import (
    SCHEMA,
    TimedValue,
    WindowedEntry,
    WindowStoreBase,
)

SEQNUM_SIZE = 4


def _wrap_for_dups(key: bytes, seqnum: int) -> bytes:
    """``wrapForDups``: ``[key][seqnum int32]`` (WS-16)."""
    return key + encode_int32(seqnum)


class InMemoryRanges:
    """The bounds ``InMemoryWindowStore`` reads each window's map between, the in-memory store's key schema: the
    key itself, or ``[key][seqnum 0]`` to ``[key][Integer.MAX]`` with duplicates (WS-16, WS-18); its segments are
    window starts, so a fetch searches exactly ``[from, to]``."""

    #: No row suffix holds the window start: the segment is the window (restore goes through ``put``, WS-26).
    suffix_size = 0
    #: ``fetch`` answers nothing when ``to`` is below the clamped ``from`` (WS-18).
    empty_when_to_before_from = True

    def __init__(self, duplicates: bool) -> None:
        self.duplicates = duplicates

    def lower_range(self, key: bytes | None, time_from: int) -> bytes | None:
        return key if key is None or not self.duplicates else _wrap_for_dups(key, 0)

    def upper_range(self, key: bytes | None, time_to: int) -> bytes | None:
        return key if key is None or not self.duplicates else _wrap_for_dups(key, INT32_MAX)

    def lower_range_fixed_size(self, key: bytes | None, time_from: int) -> bytes:
        if key is None:
            raise NullKeyError("key cannot be null")
        return key if not self.duplicates else _wrap_for_dups(key, 0)

    def upper_range_fixed_size(self, key: bytes | None, time_to: int) -> bytes:
        if key is None:
            raise NullKeyError("key cannot be null")
        return key if not self.duplicates else _wrap_for_dups(key, INT32_MAX)

    def segment_search_range(self, time_from: int, time_to: int) -> tuple[int, int]:
        return time_from, time_to


_PLAIN_RANGES = InMemoryRanges(False)
_DUPLICATE_RANGES = InMemoryRanges(True)


class InMemoryWindowStore(SegmentedBytesStore[MemorySegments], WindowStoreBase):
    """Kafka's ``InMemoryWindowStore`` (WS-16..WS-20); ``segment_interval_ms`` is accepted and unused, as the
    in-memory supplier has no segments (WS-37)."""

    backend = Backend.MEMORY
    store_type = StoreType.WINDOW
    #: ``InMemoryWindowStore.put`` updates the position after a dropped put too (WS-17).
    POSITION_ON_DROP = True

    def __init__(
        self,
        name: str,
        *,
        retention_ms: int,
        window_size_ms: int,
        retain_duplicates: bool = False,
        segment_interval_ms: int | None = None,
    ) -> None:
        super().__init__(name, retention_ms, window_size_ms, retain_duplicates, segment_interval_ms)
        self.segments = MemorySegments(self.name, retention_ms)
        self.SCHEMA = _DUPLICATE_RANGES if retain_duplicates else _PLAIN_RANGES
        # Segments of one millisecond, expired below observed - retention + 1: the rows' rule for a segment
        # expired below ``observed - _retention`` (WS-17).
        self._segment_interval = 1
        self._retention = retention_ms - 1

    def _min_live_time(self) -> int:
        """The first window start a read answers: ``max(0, observed - retention + 1)``, as every read of Kafka's
        store first forgets the windows below it (WS-17, WS-39)."""
        earliest = self._earliest_live()
        return earliest if earliest > 0 else 0

    # the hooks: rows over the segmented store ---------------------------------------------------------------------

    def _put(self, key: bytes, value: bytes | None, window_start: int) -> None:
        """``InMemoryWindowStore.put`` (WS-4, WS-9, WS-16, WS-17): expired windows dropped, a null value with
        duplicates ignored, else a null value removes the key's entry of that window; the seqnum moves only for a
        live put of a value (``maybeUpdateSeqnumForDups`` after the expiry check)."""
        if not self.retain_duplicates:
            self._put_row(key, window_start, value)
        elif value is not None:
            live = window_start > max(self.observed_stream_time, window_start) - self.retention_period
            # An expired put is dropped by the rows whatever its key; only a live one takes a seqnum.
            self._put_row(_wrap_for_dups(key, self._next_seqnum()) if live else key, window_start, value)
        else:
            # With duplicates a null value deletes nothing; the put still moves stream time, counts a drop and
            # moves the position (WS-9, WS-17).
            if window_start > self.observed_stream_time:
                self.observed_stream_time = window_start
            if window_start <= self.observed_stream_time - self.retention_period:
                self.dropped_records += 1
                LOG.warning(EXPIRED_WARNING)
            self._update_position()

    def _get(self, key: bytes, time: int) -> bytes | None:
        """``fetch(key, time)``: the entry under the plain key, so a store with duplicates answers null (WS-19)."""
        return self._get_row(key, time)

    def _fetch_key(self, key: bytes, time_from: int, time_to: int, backward: bool) -> list[TimedValue]:
        """``fetch(key, from, to)``: window starts from the clamped ``from`` (WS-11, WS-18)."""
        return [(start, value) for _key, start, value in self._scan(key, key, time_from, time_to, not backward)]

    def _scan(self, key_from: bytes | None, key_to: bytes | None, time_from: int, time_to: int,
              forward: bool) -> list[WindowedEntry]:
        """The windows from the clamped ``from`` to ``to``, window start first, then key (WS-13, WS-14, WS-18)."""
        found = self._fetch_rows(key_from, key_to, time_from, time_to, forward, False)
        return [] if found is None else self._entries(found[1], key_from, key_to)

    def _all(self, forward: bool) -> list[WindowedEntry]:
        """``all``/``backwardAll``: every window start above ``observed - retention`` (WS-20)."""
        return self._scan(None, None, INT64_MIN, INT64_MAX, forward)

    def _entries(self, sources: SegmentRows, key_from: bytes | None, key_to: bytes | None) -> list[WindowedEntry]:
        """``InMemoryWindowStoreIteratorWrapper``: per window start, the keys in ``[keyFrom, keyTo]`` (with
        duplicates the rows between the wrapped bounds, unwrapped and checked again) (WS-16, WS-18)."""
        out: list[WindowedEntry] = []
        if not self.retain_duplicates:
            for segment, rows in sources:
                start = segment.id
                out += [(key, start, value) for key, value in rows]
            return out
        for segment, rows in sources:
            start = segment.id
            for inner_key, value in rows:
                key = inner_key[:-SEQNUM_SIZE]
                if (key_from is not None and key < key_from) or (key_to is not None and key > key_to):
                    continue
                out.append((key, start, value))
        return out

    def _restore(self, entries: Sequence[tuple[bytes, bytes | None]]) -> None:
        """The restore callback: each changelog key split into key and window start, its seqnum dropped, then
        ``put`` (a fresh local seqnum with duplicates) (WS-26). Keys are checked before anything changes."""
        parsed = []
        for key, value in entries:
            if key is None:
                raise NullKeyError("key cannot be null")
            decoded = SCHEMA.decode(bytes(key))
            parsed.append((decoded.key, value, decoded.timestamp))
        # No record is being processed while restoring: the puts leave the position alone.
        context, self._record_context = self._record_context, None
        try:
            for key, value, start in parsed:
                self.put(key, value, start)
        finally:
            self._record_context = context

    # life-cycle -----------------------------------------------------------------------------------------------------

    def manages_offsets(self) -> bool:
        return False

    def commit(self, changelog_offsets: Mapping[TopicPartition, int | None]) -> None:
        check_changelog_offsets(changelog_offsets)
        self._allow(Op.COMMIT)

    def committed_offset(self, partition: TopicPartition) -> int | None:
        to_codec_tp(partition, "partition")
        self._allow(Op.OFFSETS)
        return None

    def flush(self) -> None:
        self._allow(Op.COMMIT)

    def close(self) -> None:
        """``close``: the data is cleared (WS-36)."""
        self.segments.close()
        self._open = False

    def simulate_crash(self) -> None:
        """A killed process loses an in-memory store as a closed one does (WS-36)."""
        self.close()

    def window_starts(self) -> Iterable[int]:
        """The window starts held that a read can answer, ascending (tests): a negative one Kafka forgets at the
        next operation is held here until the next write's expiry pass (WS-17, WS-39)."""
        floor = self._min_live_time()
        return tuple(s.id for s in self.segments.all_segments() if s.id >= floor and s.accessor.keys)


class InMemoryTimestampedWindowStore(InMemoryWindowStore):
    """The in-memory timestamped window store: values held as ``[ts][value]`` (WS-21)."""

    store_type = StoreType.TIMESTAMPED_WINDOW


class InMemoryTimestampedWindowStoreWithHeaders(InMemoryWindowStore):
    """The in-memory header-aware window store: values held as ``[hsize][headers][ts][value]`` (WS-21)."""

    store_type = StoreType.TIMESTAMPED_WINDOW_WITH_HEADERS


__all__ = ["InMemoryTimestampedWindowStore", "InMemoryTimestampedWindowStoreWithHeaders", "InMemoryWindowStore"]
