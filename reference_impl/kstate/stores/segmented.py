"""The segmented bytes store window and session stores share: Kafka's ``AbstractRocksDBSegmentedBytesStore``
(spec/window-store.md WS-28..WS-31, spec/session-store.md SS-10, SS-20..SS-23).

A window or a session store keeps one RocksDB database per segment under ``<task>/<store>/`` (LAY-3), managed by
a :class:`~kstate.stores.segments.KeyValueSegments`. What does not depend on the key schema lives here, once:
opening what a restart finds (every segment checked before any is opened, SS-20, WS-31; none lost while an
offset claims it, LAY-13), the position merged from the segments (WS-29, SS-21), the live segment of a write
(WS-7, WS-8, SS-12, SS-14), restore mode in every segment (RST-8), the KIP-1035 offsets of
:class:`SegmentedStoreOffsets` (WS-28, SS-23), the segments' rows for dumps, and close and crash with the open
iterators (WS-30, SS-21, SS-22). The key schema's operations stay in the adapters,
:class:`~kstate.stores.window.RocksDBWindowStore` and :class:`~kstate.stores.session.RocksDBSessionStore`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection, Iterable, Iterator
from pathlib import Path
from typing import Any

from kstate.codecs.position import Position, merge_positions
from kstate.codecs.primitives import java_div
from kstate.errors import KStateError
from kstate.stores.api import TopicPartition
from kstate.stores.life import Op
from kstate.stores.offsets import read_checkpoint_entries, remove_checkpoint_entries
from kstate.stores.segments import (
    FoundSegment,
    KeyValueSegment,
    KeyValueSegments,
    PendingCommit,
    SegmentedStoreOffsets,
)
from kstate.stores.surface import ClosesItsIterators


def scan_segments(segments: Iterable[KeyValueSegment], lower: bytes | None, upper: bytes | None,
                  backward: bool) -> Iterator[tuple[KeyValueSegment, Iterable[tuple[bytes, bytes]]]]:
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


class RocksDBSegmentedBytesStore(ClosesItsIterators, SegmentedStoreOffsets):
    """The segment life of a window or session store: open-existing, the live segment, restore mode, offsets,
    dumps, close and crash (WS-7, WS-8, WS-28..WS-31, SS-12, SS-14, SS-20..SS-23, RST-8). The adapter sets
    ``segments`` and ``observed_stream_time`` before :meth:`_open_existing`."""

    name: str
    segments: KeyValueSegments
    observed_stream_time: int
    _position: Position
    #: The open iterators a close closes (KV-12); a store whose reads answer lists keeps none.
    _iterators: Collection[Any] = ()
    #: The restore in progress (None: none), and the segments that entered its restore mode (RST-8).
    _restore_stack: contextlib.ExitStack | None = None
    _restore_entered: frozenset[str] | set[str] = frozenset()
    #: The offsets and position of the restore's last commit, written when its flushes returned (OFF-23).
    _restore_commit: PendingCommit | None = None
    #: The earliest live segment id when expired segments were last deleted (None: not since open).
    _expired_below: int | None = None
    #: Whether a write into an expired segment still deletes the expired segments: Kafka's
    #: SessionSegmentsWithHeaders.getOrCreateSegmentIfLive cleans up after every lookup, live or not (SS-15).
    CLEANS_UP_ON_EXPIRED_WRITE = False

    # opening ------------------------------------------------------------------------------------------------------

    def _open_existing(self) -> None:
        """``openExisting`` at the restarted stream time: every segment on disk is checked, then opened (SS-20,
        WS-31); the store's position is the merge of theirs (WS-29, SS-21)."""
        segments = self.segments
        migrate = segments.manage_offsets and segments.options.migrate_legacy_files and segments.task_dir.is_dir()
        # KV-55 for every family: the task's .checkpoint is read before anything opens (a refusal changes nothing).
        legacy = read_checkpoint_entries(segments.task_dir, self.name, segments.changelog_partitions) if migrate else {}
        segments.open_existing(self.observed_stream_time, self._check_segment, self._check_listed_segments)
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

    # the live segment -----------------------------------------------------------------------------------------------

    def _live_segment(self, timestamp: int) -> KeyValueSegment | None:
        """``getOrCreateSegmentIfLive(segmentId(timestamp), T)``: None when expired; expired segments are deleted
        whenever the earliest live segment moves (WS-7, WS-8, SS-12, SS-14), after a dropped write too where the
        segment manager does so (SS-15). A segment already held at an unchanged
        earliest live segment is answered without the expiry pass, which would find nothing to delete."""
        segments = self.segments
        interval = segments.segment_interval
        segment_id = timestamp // interval if timestamp >= 0 else java_div(timestamp, interval)
        floor = self.observed_stream_time - segments.retention_period
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

    def _enter_restore_mode(self, segment: KeyValueSegment) -> None:
        """``segment`` joins the restore in progress, if any (RST-8)."""
        stack = self._restore_stack
        if stack is not None and segment.name not in self._restore_entered:
            assert isinstance(self._restore_entered, set)
            self._restore_entered.add(segment.name)
            stack.enter_context(segment.instance.restoring())

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


__all__ = ["RocksDBSegmentedBytesStore", "scan_segments"]
