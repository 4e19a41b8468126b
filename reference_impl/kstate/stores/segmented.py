"""The segmented bytes store window and session stores share: Kafka's ``AbstractRocksDBSegmentedBytesStore``
(spec/window-store.md WS-28..WS-31, spec/session-store.md SS-10, SS-20..SS-23).

A window or a session store keeps one RocksDB database per segment under ``<task>/<store>/`` (LAY-3), managed by
a :class:`~kstate.stores.segments.KeyValueSegments`. What does not depend on the key schema lives here, once:
opening what a restart finds (every segment checked before any is opened, SS-20, WS-31; none lost while an
offset claims it, LAY-13), the position merged from the segments (WS-29, SS-21), the live segment of a write
(WS-7, WS-8, SS-12, SS-14), restore mode in every segment (RST-8), the KIP-1035 offsets of
:class:`SegmentedStoreOffsets` (WS-28, SS-23), the segments' rows for dumps, and close and crash with the open
iterators (WS-30, SS-21, SS-22).

The rows are written once here too, over the adapter's ``SCHEMA`` (a :class:`~kstate.codecs.key_schemas.KeySchema`),
as Kafka writes them once over its ``KeySchema``: :meth:`~RocksDBSegmentedBytesStore._put_row` (WS-6..WS-8,
SS-12, SS-14), :meth:`~RocksDBSegmentedBytesStore._remove_row` (SS-4), :meth:`~RocksDBSegmentedBytesStore._get_row`
(WS-10, SS-16), :meth:`~RocksDBSegmentedBytesStore._fetch_rows` (the schema's ranges and ``segmentsToSearch``,
WS-11..WS-15, SS-5..SS-8) and :meth:`~RocksDBSegmentedBytesStore._restore_rows` (WS-25, SS-24, SS-25). The adapters, each segmented family's
RocksDB store in the family's own module, check the arguments, build the row key and turn the scanned rows into the
family's entries.
"""

from __future__ import annotations

import contextlib
import struct
from collections.abc import Callable, Collection, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from kstate.codecs.key_schemas import KeySchema
from kstate.codecs.position import Position, merge_positions
from kstate.codecs.primitives import java_div
from kstate.errors import KStateError
from kstate.stores.api import RecordContext, TopicPartition
from kstate.stores.life import Op
from kstate.stores.offsets import read_checkpoint_entries, remove_checkpoint_entries, write_downgrade_checkpoint
from kstate.stores.segments import (
    AbstractSegments,
    FoundSegment,
    KeyValueSegment,
    KeyValueSegments,
    PendingCommit,
    SegmentedStoreOffsets,
)
from kstate.stores.surface import LOG, ClosesItsIterators

#: Kafka's WARN for a put into an expired segment (WS-7, SS-14).
EXPIRED_WARNING = "Skipping record for expired segment."
#: The segment timestamp at the head of a plain layout's suffix (WIN-4, SESS-1).
_SEGMENT_TIME = struct.Struct(">q")
#: A segment's rows as a scan answers them: each segment with its rows in range, in the scan's order.
SegmentRows = Iterator[tuple[Any, Iterable[tuple[bytes, bytes]]]]


def scan_segments(segments: Iterable[Any], lower: bytes | None, upper: bytes | None, backward: bool) -> SegmentRows:
    """The scan loop of ``SegmentIterator``: each segment in turn with its rows in ``[lower, upper]`` (both
    inclusive, None unbounded), in byte order or reversed; each segment's cursors are closed before the next opens,
    or when the reader stops. The key schema's adapter splits and filters the rows (WS-11, WS-13, SS-5, SS-6)."""
    for segment in segments:
        source, cursors = segment.accessor.scan(lower, upper, True, True, backward)
        try:
            yield segment, source
        finally:
            for cursor in cursors:
                cursor.close()


class RowRanges(Protocol):
    """What the rows ask of a key schema (Kafka's ``KeySchema``): the bounds of a fetch, its segments, and the
    plain layouts' suffix (WIN-10, WIN-11, WIN-15, SESS-7, SESS-8, SESS-11). Every
    :class:`~kstate.codecs.key_schemas.KeySchema` is one; so is each in-memory layout of ``window_memory``."""

    suffix_size: int
    empty_when_to_before_from: bool

    def lower_range(self, key: bytes | None, time_from: int) -> bytes | None: ...

    def upper_range(self, key: bytes | None, time_to: int) -> bytes | None: ...

    def lower_range_fixed_size(self, key: bytes | None, time_from: int) -> bytes: ...

    def upper_range_fixed_size(self, key: bytes | None, time_to: int) -> bytes: ...

    def segment_search_range(self, time_from: int, time_to: int) -> tuple[int, int]: ...


#: The segment manager of a segmented store: RocksDB databases (KeyValueSegments) or in-memory maps (MemorySegments).
SegmentsT = TypeVar("SegmentsT", bound=AbstractSegments[Any])


class SegmentedBytesStore(Generic[SegmentsT]):
    """The rows of a segmented store, on either engine: the live segment, put, remove, get, fetch and restore over
    the adapter's ``SCHEMA`` and its segment manager's segments (WS-6..WS-15, WS-25, SS-4..SS-8, SS-12..SS-16,
    SS-24). The adapter sets ``segments``, ``_segment_interval`` and ``_retention`` (the time below which a
    segment has expired: ``observedStreamTime - _retention``), and names the earliest time a read still answers
    (``_min_live_time``)."""

    name: str
    segments: SegmentsT
    observed_stream_time: int
    _segment_interval: int
    _retention: int
    #: Puts dropped because their segment had expired (Kafka's ``dropped-records`` sensor, WS-38, SS-14).
    dropped_records: int
    _position: Position
    #: The family's key schema: row keys, the ranges and the segments of a fetch (WIN-1, SESS-1).
    SCHEMA: RowRanges
    #: The restore in progress (None: none), and the segments that entered its restore mode (RST-8).
    _restore_stack: contextlib.ExitStack | None = None
    _restore_entered: frozenset[str] | set[str] = frozenset()
    #: The earliest live segment id when expired segments were last deleted (None: not since open).
    _expired_below: int | None = None
    #: Whether a write into an expired segment still deletes the expired segments: Kafka's
    #: SessionSegmentsWithHeaders.getOrCreateSegmentIfLive cleans up after every lookup, live or not (SS-15).
    CLEANS_UP_ON_EXPIRED_WRITE = False
    #: Whether a dropped put still advances the position: Kafka's InMemoryWindowStore.put and
    #: InMemorySessionStore.put update it after the drop too (WS-17, SS-14); the RocksDB stores only with a written
    #: row.
    POSITION_ON_DROP = False
    #: Whether a remove advances stream time: Kafka's segmented bytes store's does (SS-4, SS-12);
    #: InMemorySessionStore.remove does not.
    STREAM_TIME_ON_REMOVE = True
    #: Whether a restored record's value is checked (bytes or None) as the adapter's ``checked`` checks it.
    RESTORE_CHECKS_VALUES = False
    #: The segment of the last put (id -1: none), the stream time it was found live at, and its row writer: a put
    #: into it at that same stream time, or at the same earliest live segment, needs no expiry pass (WS-7, WS-8,
    #: SS-12 decide the same).
    _last_segment_id = -1
    _last_segment_time = -1
    _last_segment_put: Callable[[bytes, bytes | None], None]

    if TYPE_CHECKING:  # the adapter's, and its StoreState's
        _record_context: RecordContext | None

        def _min_live_time(self) -> int:
            """``observedStreamTime - retentionPeriod + 1``: the earliest time a read still answers (WS-10, SS-13)."""

        def _update_position(self) -> None: ...

    # the live segment -----------------------------------------------------------------------------------------------

    def _live_segment(self, timestamp: int) -> Any:
        """``getOrCreateSegmentIfLive(segmentId(timestamp), T)``: None when expired; expired segments are deleted
        whenever the earliest live segment moves (WS-7, WS-8, SS-12, SS-14), after a dropped write too where the
        segment manager does so (SS-15). A segment already held at an unchanged
        earliest live segment is answered without the expiry pass, which would find nothing to delete."""
        segments = self.segments
        interval = segments.segment_interval
        segment_id = timestamp // interval if timestamp >= 0 else java_div(timestamp, interval)
        floor = self.observed_stream_time - self._retention
        min_live = floor // interval if floor >= 0 else java_div(floor, interval)
        if segment_id < min_live:
            if self.CLEANS_UP_ON_EXPIRED_WRITE and min_live != self._expired_below:
                segments.cleanup_expired_segments(self.observed_stream_time)
                self._expired_below = min_live
            return None
        if min_live == self._expired_below:
            segment = segments.segment_by_id(segment_id)
            if segment is not None:
                return segment
        segment = segments.get_or_create_segment_if_live(segment_id, self.observed_stream_time)
        self._expired_below = min_live
        return segment

    # the rows: put, remove, get, fetch, restore ---------------------------------------------------------------------

    def _put_row(self, store_key: bytes, timestamp: int, value: bytes | None) -> None:
        """``AbstractRocksDBSegmentedBytesStore.put`` of the row ``store_key`` whose segment timestamp is
        ``timestamp``: stream time advanced, then the row written to its segment if live, else dropped with Kafka's
        WARN (WS-6, WS-7, WS-8, WS-29, SS-12, SS-14); the position advances with a written row."""
        stream_time = self.observed_stream_time
        if timestamp > stream_time:
            self.observed_stream_time = stream_time = timestamp
        # The hot path: the segment of the previous put, still live, and no expired segment to delete (the stream
        # time unchanged since, or the earliest live segment unchanged); never while restoring (RST-8).
        if timestamp >= 0 and self._restore_stack is None:
            interval = self._segment_interval
            if timestamp // interval == self._last_segment_id:
                if stream_time != self._last_segment_time:
                    floor = stream_time - self._retention
                    min_live = floor // interval if floor >= 0 else -(-floor // interval)  # Java truncation
                    if min_live != self._expired_below or self._last_segment_id < min_live:
                        self._put_in_live_segment(store_key, timestamp, value)
                        return
                    self._last_segment_time = stream_time
                if self._record_context is not None:
                    self._update_position()
                self._last_segment_put(store_key, value)
                return
        self._put_in_live_segment(store_key, timestamp, value)

    def _put_in_live_segment(self, store_key: bytes, timestamp: int, value: bytes | None) -> None:
        """:meth:`_put_row` past its hot path: ``getOrCreateSegmentIfLive`` (WS-7, WS-8, SS-14, SS-15)."""
        segment = self._live_segment(timestamp)
        if segment is None:
            self.dropped_records += 1
            LOG.warning(EXPIRED_WARNING)
            if self.POSITION_ON_DROP and self._record_context is not None:
                self._update_position()
            return
        if timestamp >= 0:
            self._last_segment_id, self._last_segment_put = timestamp // self._segment_interval, segment.accessor.put
            self._last_segment_time = self.observed_stream_time
        if self._record_context is not None:
            self._update_position()
        if self._restore_stack is not None:
            self._enter_restore_mode(segment)
        segment.accessor.put(store_key, value)

    def _remove_row(self, store_key: bytes, timestamp: int) -> None:
        """``AbstractRocksDBSegmentedBytesStore.remove``: stream time advanced; a row in no open segment is left
        alone, expired or not (SS-4, SS-12)."""
        if timestamp > self.observed_stream_time and self.STREAM_TIME_ON_REMOVE:
            self.observed_stream_time = timestamp
        segment = self.segments.segment_for_timestamp(timestamp)
        if segment is not None:
            segment.accessor.put(store_key, None)

    def _get_row(self, store_key: bytes, timestamp: int) -> bytes | None:
        """``AbstractRocksDBSegmentedBytesStore.get``: null once ``timestamp`` has expired or its segment is not
        held (WS-10, SS-16)."""
        if timestamp < self._min_live_time():
            return None
        segment = self.segments.segment_for_timestamp(timestamp)
        if segment is None or not segment.is_open:
            return None
        value: bytes | None = segment.accessor.get(store_key)
        return value

    def _fetch_rows(self, key_from: bytes | None, key_to: bytes | None, time_from: int, time_to: int, forward: bool,
                    single: bool) -> tuple[int, SegmentRows] | None:
        """``AbstractRocksDBSegmentedBytesStore.fetch``: ``from`` clamped to the earliest live time, the schema's
        ranges (``lowerRangeFixedSize``/``upperRangeFixedSize`` of one key when ``single``, else ``lowerRange``/
        ``upperRange``, a None key unbounded) over the segments of its ``segmentsToSearch``, oldest first when
        ``forward`` (WS-11..WS-15, SS-5..SS-8). Answers the clamped ``from`` and the segments' rows, for the
        adapter's ``hasNextCondition``; None when nothing can match (the window schema's ``to < from``, or an
        inverted range, which ``RocksDBStore.range`` answers with an empty iterator)."""
        min_live = self._min_live_time()
        actual_from = time_from if time_from > min_live else min_live
        schema = self.SCHEMA
        if time_to < actual_from and schema.empty_when_to_before_from:
            return None
        lower: bytes | None
        upper: bytes | None
        if single:
            lower = schema.lower_range_fixed_size(key_from, actual_from)
            upper = schema.upper_range_fixed_size(key_from, time_to)
        else:
            lower = None if key_from is None else schema.lower_range(key_from, actual_from)
            upper = None if key_to is None else schema.upper_range(key_to, time_to)
        if lower is not None and upper is not None and lower > upper:
            return None
        search_from, search_to = schema.segment_search_range(actual_from, time_to)
        return actual_from, scan_segments(self.segments.segments(search_from, search_to, forward), lower, upper,
                                          not forward)

    def _restore_rows(self, entries: Iterable[tuple[bytes, bytes | None]],
                      checked: Callable[[bytes, bytes | None], tuple[bytes, bytes | None, int]]) -> None:
        """``restoreAllInternal`` of the adapter's plain ``SCHEMA``: every record checked first (``checked`` answers
        the row key, value and segment timestamp of a record that is not bytes long enough, or raises: nothing
        changes), stream time advanced to the batch's largest timestamp, then each
        row staged in its segment if live, expired ones skipped (WS-25, SS-24, SS-25).

        Kafka asks ``getOrCreateSegmentIfLive`` once per record at the same stream time; the answer depends on the
        segment id only, so it is asked once per segment of the batch, in the order the batch first names them."""
        interval = self._segment_interval
        latest = self.observed_stream_time
        by_segment: dict[int, dict[bytes, bytes | None]] = {}
        # The plain layouts' segment timestamp is their suffix's first long (WIN-4, SESS-1): read in place for a
        # record of bytes long enough, the hot loop of a restore; any other record goes through ``checked``.
        suffix_size = self.SCHEMA.suffix_size
        unpack_time = _SEGMENT_TIME.unpack_from
        any_value = not self.RESTORE_CHECKS_VALUES
        for key, value in entries:
            if type(key) is bytes and (key_end := len(key) - suffix_size) >= 0 \
                    and (any_value or value is None or type(value) is bytes):
                timestamp = unpack_time(key, key_end)[0]
            else:
                key, value, timestamp = checked(key, value)
            if timestamp > latest:
                latest = timestamp
            segment_id = timestamp // interval if timestamp >= 0 else java_div(timestamp, interval)
            rows = by_segment.get(segment_id)
            if rows is None:
                rows = by_segment[segment_id] = {}
            rows[key] = value
        self.observed_stream_time = latest
        live = {segment_id: self._live_segment(segment_id * interval if segment_id >= 0
                                               else _first_time(segment_id, interval))
                for segment_id in by_segment}
        for segment_id, rows in by_segment.items():
            segment = live[segment_id]
            if segment is not None and segment.is_open:
                self._enter_restore_mode(segment)
                segment.accessor.put_all(rows)

    def _enter_restore_mode(self, segment: KeyValueSegment) -> None:
        """``segment`` joins the restore in progress, if any (RST-8)."""
        stack = self._restore_stack
        if stack is not None and segment.name not in self._restore_entered:
            assert isinstance(self._restore_entered, set)
            self._restore_entered.add(segment.name)
            stack.enter_context(segment.instance.restoring())



class RocksDBSegmentedBytesStore(SegmentedBytesStore[KeyValueSegments], ClosesItsIterators, SegmentedStoreOffsets):
    """The segment life of a window or session store on RocksDB: open-existing, restore mode, offsets, dumps, close
    and crash (WS-28..WS-31, SS-20..SS-23, RST-8). The adapter sets ``segments`` and ``observed_stream_time`` before
    :meth:`_open_existing`, and names its plain ``SCHEMA``."""

    SCHEMA: KeySchema[Any]
    #: The open iterators a close closes (KV-12); a store whose reads answer lists keeps none.
    _iterators: Collection[Any] = ()
    #: The offsets and position of the restore's last commit, written when its flushes returned (OFF-23).
    _restore_commit: PendingCommit | None = None

    # opening ------------------------------------------------------------------------------------------------------

    def _open_existing(self) -> None:
        """``openExisting`` at the restarted stream time: every segment on disk is checked, then opened (SS-20,
        WS-31); the store's position is the merge of theirs (WS-29, SS-21)."""
        segments = self.segments
        migrate = segments.manage_offsets and segments.options.migrate_legacy_files and segments.task_dir.is_dir()
        # KV-55 for every family: the task's .checkpoint is read before anything opens (a refusal changes nothing).
        legacy = read_checkpoint_entries(segments.task_dir, self.name, segments.changelog_partitions) if migrate else {}
        segments.open_existing(self.observed_stream_time, self._check_segment, self._check_listed_segments)
        self._segment_interval = segments.segment_interval
        self._retention = segments.retention_period
        self._position = segments.position()
        if legacy and any(True for _ in segments.all_segments()):  # no segment, nowhere to keep them: left in the file
            try:
                segments.commit(legacy, self._position)
            except BaseException:
                segments.close()
                raise
            remove_checkpoint_entries(segments.task_dir, self.name, legacy)  # only once the segments hold them

    def _check_segment(self, path: Path) -> None:
        """The refusals of one existing segment that need no write (KV-24, KV-52, KV-57, UPG-1; SS-20, WS-31)."""
        self.segments.check_existing_segment(path)

    def _check_listed_segments(self, found: list[FoundSegment]) -> None:
        """A segment the others list is gone while a committed offset claims it: refused (LAY-13)."""
        self.segments.check_listed_segments(found)

    # restore mode ---------------------------------------------------------------------------------------------------

    def restoring(self) -> contextlib.AbstractContextManager[None]:
        """Restore mode in every segment, those a restore creates included: no WAL, one flush at the end (RST-8)."""
        self._allow(Op.RESTORE)
        return self._restore_mode()

    @contextlib.contextmanager
    def _restore_mode(self) -> Iterator[None]:
        """The segments' restore mode; the offsets of the restore's commits are written only once every
        segment's flush at its end returned, the WAL on again (OFF-23: one database's atomic flush, RST-8,
        cannot keep one segment's offsets from reaching disk before another segment's data)."""
        self._restore_commit = None
        with contextlib.ExitStack() as stack:
            self._restore_stack = stack
            self._restore_entered = set()
            for segment in self.segments.all_segments():
                self._enter_restore_mode(segment)
            try:
                yield
            finally:
                self._restore_stack = None
        pending, self._restore_commit = self._restore_commit, None
        if pending is not None:
            # Written as restore writes, and flushed again: the restore ends with no memtable entry (RST-8).
            with contextlib.ExitStack() as stack:
                for segment in self.segments.all_segments():
                    stack.enter_context(segment.instance.restoring())
                pending.write(self.segments)

    # state ----------------------------------------------------------------------------------------------------------

    def manages_offsets(self) -> bool:
        """True when each segment keeps its offsets in its ``offsets`` family (WS-28, SS-21)."""
        return self.segments.manage_offsets

    def segment_names(self) -> list[str]:
        """The names of the open segments, oldest first (``<store>.<segment start>``, LAY-3)."""
        return [s.name for s in self.segments.all_segments()]

    def segment_modes(self) -> dict[str, str]:
        """Each open segment's column-family mode: ``regular``, or ``upgrade`` while a legacy family holds data
        (WS-27, SS-32)."""
        return {s.name: s.instance.mode for s in self.segments.all_segments()}

    def segment_rows(self) -> dict[str, dict[str, list[tuple[bytes, bytes]]]]:
        """Every open segment's column families and rows, staged writes included, by segment name (LAY-3)."""
        self._allow(Op.READ)
        return {s.name: s.instance.column_family_rows() for s in self.segments.all_segments()}

    def segment_committed_offsets(self) -> dict[str, dict[TopicPartition, int]]:
        """Each open segment's committed offsets, by segment name (WS-28, SS-23)."""
        return {s.name: {TopicPartition(t, p): o for (t, p), o in s.instance.committed_offsets().items()}
                for s in self.segments.all_segments()}

    def segment_positions(self) -> dict[str, Position]:
        """Each open segment's position as last written (WS-29, SS-21)."""
        return {s.name: s.instance.position for s in self.segments.all_segments()}

    def merged_position(self) -> Position:
        """The merge of the segments' written positions (WS-29, SS-21)."""
        merged: Position = {}
        for segment in self.segments.all_segments():
            merged = merge_positions(merged, segment.instance.position)
        return merged

    # closing --------------------------------------------------------------------------------------------------------

    def close_for_downgrade(self) -> None:
        """Close for a downgrade below 4.3 (OFF-20, UPG-4): the store's committed offsets, noted while it is open
        (-4 for a partition with none, OFF-14), are merged into the task's ``.checkpoint`` once every segment has
        closed, as Kafka's task writes it after closing its stores (``LegacyCheckpointingStateStore``)."""
        self._allow(Op.DOWNGRADE)
        segments = self.segments
        offsets = {(tp.topic, tp.partition): self.committed_offset(tp) for tp in segments.changelog_partitions} \
            if segments.manage_offsets else {}
        self.close()
        if offsets:
            write_downgrade_checkpoint(segments.task_dir, self.name, offsets)

    def _close_database(self) -> None:
        """Every segment writes its staged rows, the store's position and status CLOSED, then is released (WS-30,
        SS-21); the segment lists first (LAY-13). A write that fails (a full disk) does not stop the others: every
        segment is released, its LOCK with it, and the first failure is raised, typed (OFF-23). No offset is
        written at close, so none goes ahead of the data; a segment whose close failed stays OPEN (KV-52)."""
        failures: list[BaseException] = []
        try:
            self.segments.write_segment_lists()
        except KStateError as exc:
            failures.append(exc)
        for segment in self.segments.all_segments():
            try:
                segment.instance.close(self._position)
            except KStateError as exc:
                failures.append(exc)
        try:
            self.segments.close()
        except KStateError as exc:
            failures.append(exc)
        if failures:
            raise failures[0]

    def _abandon_database(self) -> None:
        """Every segment abandoned as a killed process would: staged rows lost, status left OPEN (WS-30, SS-22)."""
        for segment in self.segments.all_segments():
            segment.instance.simulate_crash()
        self.segments.close()


def _first_time(segment_id: int, interval: int) -> int:
    """A time whose segment is ``segment_id`` when that id is negative (Java truncation: ``id * I - I + 1``)."""
    return segment_id * interval - interval + 1


__all__ = ["EXPIRED_WARNING", "RocksDBSegmentedBytesStore", "RowRanges", "SegmentRows", "SegmentedBytesStore",
           "scan_segments"]
