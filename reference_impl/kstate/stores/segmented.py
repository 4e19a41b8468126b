"""The segmented bytes store window and session stores share: Kafka's ``AbstractRocksDBSegmentedBytesStore``
(spec/window-store.md WS-28..WS-31, spec/session-store.md SS-10, SS-20..SS-23).

A window or a session store keeps one RocksDB database per segment under ``<task>/<store>/`` (LAY-3), managed by
a :class:`~kstate.stores.segments.KeyValueSegments`. What does not depend on the key schema lives here, once:
opening what a restart finds (every segment checked before any is opened, SS-20, WS-31; none lost while an
offset claims it, LAY-13), the position merged from the segments (WS-29, SS-21), the KIP-1035 offsets of
:class:`SegmentedStoreOffsets` (WS-28, SS-23), the segments' rows for dumps, and close and crash (WS-30, SS-21,
SS-22). The key schema's operations stay in the adapters, :class:`~kstate.stores.window.RocksDBWindowStore` and
:class:`~kstate.stores.session.RocksDBSessionStore`.
"""

from __future__ import annotations

from pathlib import Path

from kstate.codecs.position import Position
from kstate.stores.segments import FoundSegment, KeyValueSegments, SegmentedStoreOffsets


class RocksDBSegmentedBytesStore(SegmentedStoreOffsets):
    """The segment life of a window or session store: open-existing, offsets, dumps, close and crash (WS-28..WS-31,
    SS-20..SS-23). The adapter sets ``segments`` and ``observed_stream_time`` before :meth:`_open_existing`."""

    name: str
    segments: KeyValueSegments
    observed_stream_time: int
    _position: Position

    # opening ------------------------------------------------------------------------------------------------------

    def _open_existing(self) -> None:
        """``openExisting`` at the restarted stream time: every segment on disk is checked, then opened (SS-20,
        WS-31); the store's position is the merge of theirs (WS-29, SS-21)."""
        self.segments.open_existing(self.observed_stream_time, self._check_segment, self._check_listed_segments)
        self._position = self.segments.position()

    def _check_segment(self, path: Path) -> None:
        """The refusals of one existing segment that need no write (KV-24, KV-52, KV-57, UPG-1; SS-20, WS-31)."""
        self.segments.check_existing_segment(path)

    def _check_listed_segments(self, found: list[FoundSegment]) -> None:
        """A segment the others list is gone while a committed offset claims it: refused (LAY-13)."""
        self.segments.check_listed_segments(found)

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
        self._check_open()
        return {s.name: s.instance.column_family_rows() for s in self.segments.all_segments()}

    # closing --------------------------------------------------------------------------------------------------------

    def _close_database(self) -> None:
        """Every segment writes its staged rows, the store's position and status CLOSED, then is released (WS-30,
        SS-21); the segment lists first (LAY-13)."""
        try:
            try:
                self.segments.write_segment_lists()
            finally:
                for segment in self.segments.all_segments():
                    segment.instance.close(self._position)
        finally:
            self.segments.close()

    def _abandon_database(self) -> None:
        """Every segment abandoned as a killed process would: staged rows lost, status left OPEN (WS-30, SS-22)."""
        for segment in self.segments.all_segments():
            segment.instance.simulate_crash()
        self.segments.close()


__all__ = ["RocksDBSegmentedBytesStore"]
