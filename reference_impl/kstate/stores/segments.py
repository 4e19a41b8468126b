"""Segment managers of segmented stores: Kafka's ``AbstractSegments`` and its kinds (LAY-3, WIN-15, SESS-11, VER-1, VER-2).

A record of a segmented store is filed under ``segmentId = timestamp / segmentInterval`` (Java truncation,
PRIM-4), and a segment is named ``<store>.<segmentId * segmentInterval>``
(:func:`kstate.codecs.segments.segment_name`). A segment is live while its id is at least
``segmentId(streamTime - retention)``; earlier ones are dropped (WIN-16, VER-30).

- :class:`KeyValueSegments` and :class:`TimestampedSegments` (window and session stores): one
  :class:`~kstate.stores.rocksdb_instance.RocksDBInstance` per segment in ``<task>/<store>/<store>.<start>``
  (LAY-3), each with its own ``offsets`` family (LAY-6); existing segments are opened at restart, the directory
  read by :func:`scan_segment_directory` (LAY-12), every segment checked before any opens (SS-20, WS-31), and a
  segment lost while an offset claims it refused through the segment lists (LAY-13).
- :class:`LogicalKeyValueSegments` (versioned stores): one database at ``<task>/rocksdb/<store>`` (VER-1) whose
  segments are 8-byte key prefixes; the reserved segment -1 holds the latest values and never expires (VER-2).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from kstate.codecs import segments as seg
from kstate.codecs.layout import ROCKSDB_DIR, SEGMENT_LIST_SIDECAR
from kstate.codecs.position import Position, merge_positions
from kstate.codecs.primitives import encode_int64, increment, segment_id
from kstate.codecs.versioned import LATEST_VALUE_SEGMENT_ID, latest_value_store_name
from kstate.errors import InvalidArgumentError, KStateError, StateFileError
from kstate.storage_files import read_state_file, write_state_file
from kstate.stores.api import StoreCorruptedError, TopicPartition
from kstate.stores.column_families import (
    KEY_VALUE_LAYOUT,
    TIMESTAMPED_LAYOUT,
    TIMESTAMPED_WITH_HEADERS_LAYOUT,
    Accessor,
    ColumnFamilyLayout,
)
from kstate.stores.engine import (
    DEFAULT_CF,
    Engine,
    RocksDBEngine,
    _SortedMap,
    check_directory,
    rocksdb_directory_state,
    storage_error,
)
from kstate.stores.life import LifeState, Op, OpClass, answer
from kstate.stores.offsets import has_committed_offsets, read_offsets_image
from kstate.stores.rocksdb_instance import ExistingDatabaseChecks, RocksDBInstance
from kstate.stores.surface import (
    DEFAULT_ROCKSDB_OPTIONS,
    LOG,
    CodecTopicPartition,
    RocksDBOptions,
    check_changelog_offsets,
    to_codec_tp,
    validate_store_name,
)


class Segment(ABC):
    """One segment: its id, its name, whether it is open, and how it is dropped once expired."""

    def __init__(self, segment_id_: int, name: str) -> None:
        self.id = segment_id_
        self.name = name

    @property
    @abstractmethod
    def is_open(self) -> bool: ...

    @abstractmethod
    def close(self) -> None: ...

    @abstractmethod
    def destroy(self) -> None:
        """Drop the segment's data (the segment is closed first)."""


S = TypeVar("S", bound=Segment)


class AbstractSegments(ABC, Generic[S]):
    """Kafka's ``AbstractSegments``: the segments of one store by id, the live-segment rule and expiry.

    ``retention_period`` is the store's retention (window, session) or history retention (versioned);
    ``segment_interval`` is at least 1.
    """

    def __init__(self, name: str, retention_period: int, segment_interval: int) -> None:
        if isinstance(retention_period, bool) or not isinstance(retention_period, int) or retention_period < 0:
            raise InvalidArgumentError("retention_period", f"a retention is a non-negative int, got {retention_period!r}")
        if isinstance(segment_interval, bool) or not isinstance(segment_interval, int) or segment_interval < 1:
            raise InvalidArgumentError("segment_interval", f"a segment interval is an int >= 1, got {segment_interval!r}")
        self.name = validate_store_name(name)
        self.retention_period = retention_period
        self.segment_interval = segment_interval
        self._segments: dict[int, S] = {}

    # ids and names ---------------------------------------------------------------------------------------------

    def segment_id(self, timestamp: int) -> int:
        """``timestamp / segmentInterval`` with Java truncation (PRIM-4)."""
        return segment_id(timestamp, self.segment_interval)

    def segment_name(self, segment_id_: int) -> str:
        """``<store>.<segmentId * segmentInterval>`` (LAY-3, VER-2)."""
        return seg.segment_name(self.name, segment_id_, self.segment_interval)

    def min_live_segment_id(self, stream_time: int) -> int:
        """The earliest live segment: ``segmentId(streamTime - retention)`` (WIN-16, VER-30)."""
        return self.segment_id(stream_time - self.retention_period)

    # segments ----------------------------------------------------------------------------------------------------

    @abstractmethod
    def get_or_create_segment(self, segment_id_: int) -> S:
        """The segment ``segment_id_``, opened or created if this manager does not hold it yet."""

    @abstractmethod
    def open_existing(self, stream_time: int) -> None:
        """Open what a restart finds (Kafka's ``openExisting``), then drop what has expired by ``stream_time``."""

    def segment_for_timestamp(self, timestamp: int) -> S | None:
        return self._segments.get(self.segment_id(timestamp))

    def segment_by_id(self, segment_id_: int) -> S | None:
        """The segment ``segment_id_`` if this manager holds it (nothing is created)."""
        return self._segments.get(segment_id_)

    def get_or_create_segment_if_live(self, segment_id_: int, stream_time: int) -> S | None:
        """The segment if it is live at ``stream_time`` (created if need be), else None (WIN-16, VER-30)."""
        return self.get_or_create_segment(segment_id_) if segment_id_ >= self.min_live_segment_id(stream_time) else None

    def segments(self, time_from: int, time_to: int, forward: bool = True) -> list[S]:
        """The open segments from ``segmentId(time_from)`` to ``segmentId(time_to)`` inclusive, oldest first when
        ``forward`` (WIN-15), newest first otherwise."""
        interval = self.segment_interval
        # PRIM-4's truncation is floor division for a time >= 0 (every read's usual case: no call per bound).
        low = time_from // interval if time_from >= 0 else segment_id(time_from, interval)
        high = time_to // interval if time_to >= 0 else segment_id(time_to, interval)
        held = self._segments
        if low == high:  # a read within one segment (the usual fetch): one lookup, no list of ids to sort
            one = held.get(low)
            return [one] if one is not None and one.is_open else []
        ids = [i for i in held if low <= i <= high]
        ids.sort(reverse=not forward)
        return [s for s in map(held.__getitem__, ids) if s.is_open]

    def all_segments(self, forward: bool = True) -> list[S]:
        """Every open segment, oldest first when ``forward``."""
        return [s for s in (self._segments[i] for i in sorted(self._segments, reverse=not forward)) if s.is_open]

    def segment_ids(self) -> list[int]:
        """The ids of the segments this manager holds, ascending."""
        return sorted(self._segments)

    def cleanup_expired_segments(self, stream_time: int) -> None:
        """Close and destroy every segment below the earliest live one (WIN-16, VER-30)."""
        bound = self.min_live_segment_id(stream_time)
        for expired in sorted(i for i in self._segments if i < bound):
            segment = self._segments.pop(expired)
            segment.close()
            try:
                segment.destroy()
            except (OSError, KStateError) as exc:
                LOG.error("Error destroying %s: %s", segment.name, exc)

    def close(self) -> None:
        """Close every segment, each even when one before it failed (a full disk); the first failure raised."""
        failure: KStateError | None = None
        for segment in self._segments.values():
            try:
                segment.close()
            except KStateError as exc:
                failure = failure or exc
        self._segments.clear()
        if failure is not None:
            raise failure


# --- segments in memory ------------------------------------------------------------------------------------------


class MemoryRows(_SortedMap):
    """One in-memory segment's rows, in key order: Python's bytes order is the unsigned lexicographic order of
    Kafka's ``ConcurrentSkipListMap<Bytes, byte[]>`` (PRIM-2). The accessor the segmented rows write and scan."""

    __slots__ = ()

    def get(self, key: bytes) -> bytes | None:
        return self.data.get(key)

    def put(self, key: bytes, value: bytes | None) -> None:
        """A None value removes the row, as the segmented stores' tombstones do (WS-9, SS-4)."""
        if value is None:
            self.delete(key)
        else:
            super().put(key, value)

    def put_all(self, rows: Mapping[bytes, bytes | None]) -> None:
        for key, value in rows.items():
            self.put(key, value)

    def scan(self, lower: bytes | None, upper: bytes | None, lower_inclusive: bool, upper_inclusive: bool,
             reverse: bool) -> tuple[Iterator[tuple[bytes, bytes]], list[Any]]:
        """The rows between the bounds, their keys copied; no cursor to close. The values are read as the rows are:
        the in-memory stores read every row before they answer (their reads answer lists), so nothing is written
        in between, and no (key, value) pair is built per row beyond the one ``zip`` reuses."""
        keys = self.key_slice(lower, upper, lower_inclusive, upper_inclusive)
        if reverse:
            keys.reverse()
        return zip(keys, map(self.data.__getitem__, keys), strict=True), []


class MemorySegment(Segment):
    """One segment of an in-memory store: a sorted map of its rows, gone with the store (WS-36)."""

    def __init__(self, segment_id_: int, name: str) -> None:
        super().__init__(segment_id_, name)
        self.accessor = MemoryRows()
        self._held = True

    @property
    def is_open(self) -> bool:
        return self._held

    def close(self) -> None:
        self._held = False

    def destroy(self) -> None:
        self.close()
        self.accessor = MemoryRows()


class MemorySegments(AbstractSegments[MemorySegment]):
    """Kafka's in-memory maps, ``InMemoryWindowStore``'s ``window start -> (key -> value)`` and
    ``InMemorySessionStore``'s ``end -> key -> start -> aggregate``, as segments of one millisecond (WS-16, WS-17,
    SS-17): a time is live while it is above ``observedStreamTime - retentionPeriod``, and every write first forgets
    the times below ``max(0, observedStreamTime - retentionPeriod + 1)`` (``removeExpiredSegments``)."""

    def __init__(self, name: str, retention_period: int) -> None:
        super().__init__(name, retention_period, 1)

    def min_live_segment_id(self, stream_time: int) -> int:
        """The first live window start: ``observedStreamTime - retentionPeriod + 1`` (a put at or below
        ``observedStreamTime - retentionPeriod`` is dropped, WS-17)."""
        return stream_time - self.retention_period + 1

    def get_or_create_segment(self, segment_id_: int) -> MemorySegment:
        segment = self._segments.get(segment_id_)
        if segment is None:
            segment = self._segments[segment_id_] = MemorySegment(segment_id_, self.segment_name(segment_id_))
        return segment

    def open_existing(self, stream_time: int) -> None:
        """Nothing to reopen: an in-memory store starts empty (WS-36)."""

    def get_or_create_segment_if_live(self, segment_id_: int, stream_time: int) -> MemorySegment | None:
        """``removeExpiredSegments`` first, as ``InMemoryWindowStore.put`` does, then the window if live (WS-17)."""
        self.cleanup_expired_segments(stream_time)
        return super().get_or_create_segment_if_live(segment_id_, stream_time)

    def cleanup_expired_segments(self, stream_time: int) -> None:
        """Forget every window below ``max(0, observedStreamTime - retentionPeriod + 1)`` (WS-17): a negative window
        start is forgotten at once, whatever the retention (WS-39)."""
        bound = max(0, self.min_live_segment_id(stream_time))
        for expired in [i for i in self._segments if i < bound]:
            self._segments.pop(expired).destroy()


# --- the segment directory of a window or session store ------------------------------------------------------


@dataclass(frozen=True)
class FoundSegment:
    """An entry of a store's segment directory that names a segment: its name, its id, the name it is renamed to."""

    entry: str
    segment_id: int
    rename_to: str | None = None


def scan_segment_directory(directory: Path, store_name: str, segment_interval: int) -> list[FoundSegment]:
    """The segments in ``directory``, in id order, each name read as Kafka's ``segmentIdFromSegmentName`` (LAY-3).

    The one reader of a segment directory (LAY-12): an entry whose name is no segment name (``junk``,
    ``<store>.notanumber``, an undated ``-`` name) and a negative id are skipped with a WARN, and never stop the
    scan. An entry with an id that is not a directory, or that the store would not open under its own name (two
    entries of one segment, a name that is not ``<store>.<start>`` once renamed, e.g. written with another
    interval), is refused with a typed error: its data would otherwise be silently ignored (KV-25).
    """
    try:
        entries = sorted(entry.name for entry in directory.iterdir())
    except OSError as exc:
        raise storage_error(store_name, f"listing the segments directory {directory}", exc) from exc
    by_id: dict[int, FoundSegment] = {}
    for entry in entries:
        try:
            parsed = seg.parse_segment_name(store_name, entry, segment_interval)
        except KStateError as exc:
            LOG.warning("Skipping entry %s of the segments directory of store %s: %s", entry, store_name, exc)
            continue
        if parsed.segment_id < 0:
            LOG.warning("Skipping entry %s of the segments directory of store %s: no segment id >= 0",
                        entry, store_name)
            continue
        check_directory(directory / entry, store_name, "segment directory")
        canonical = seg.segment_name(store_name, parsed.segment_id, segment_interval)
        if (parsed.rename_to or entry) != canonical:
            raise StoreCorruptedError(
                store_name, f"Error opening store {store_name}: the entry {entry} of {directory} names segment "
                f"{parsed.segment_id}, whose directory is {canonical}: written with another segment interval?")
        earlier = by_id.get(parsed.segment_id)
        if earlier is not None:
            raise StoreCorruptedError(
                store_name, f"Error opening store {store_name}: the entries {earlier.entry} and {entry} of "
                f"{directory} both name segment {parsed.segment_id} ({canonical})")
        by_id[parsed.segment_id] = FoundSegment(entry, parsed.segment_id, parsed.rename_to)
    return [by_id[i] for i in sorted(by_id)]


def read_segment_list(segment_dir: Path, store_name: str) -> list[str]:
    """The segment names listed in ``segment_dir`` (LAY-13); none when it holds no list (a store written before
    the lists, or by another implementation). Read by :func:`kstate.storage_files.read_state_file`: a list that is
    a link, a FIFO or a directory, or one over the cap, refuses the open typed, so no later close fails (LAY-15)."""
    path = segment_dir / SEGMENT_LIST_SIDECAR
    try:
        data = read_state_file(path)
    except StateFileError as exc:
        raise storage_error(store_name, f"reading the segment list {path}", exc) from exc
    if data is None:
        return []
    try:
        return data.decode("utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise StoreCorruptedError(store_name, f"Error opening store {store_name}: the segment list {path} is not "
                                              f"UTF-8: {exc}") from exc


def write_segment_list(segment_dir: Path, store_name: str, text: bytes) -> None:
    """Replace the segment list of ``segment_dir`` at once (a reader sees the old list or the new, LAY-13), by
    :func:`kstate.storage_files.write_state_file`: nothing planted in the directory is written through (LAY-15)."""
    path = segment_dir / SEGMENT_LIST_SIDECAR
    try:
        write_state_file(path, text)
    except StateFileError as exc:
        raise storage_error(store_name, f"writing the segment list {path}", exc) from exc


def _holds_committed_offsets(segment_dir: Path) -> bool:
    """Whether the segment database at ``segment_dir`` holds a committed changelog offset (read-only, LAY-13)."""
    if not rocksdb_directory_state(segment_dir, segment_dir.name):
        return False
    reader = RocksDBEngine(segment_dir, store_name=segment_dir.name, read_only=True)
    try:
        return has_committed_offsets(read_offsets_image(reader))
    finally:
        reader.close()


def _rename(store_name: str, source: Path, target: Path) -> None:
    """``renameSegmentFile``: a legacy segment name to the ``.`` form (LAY-3); a failure is a typed error."""
    try:
        os.rename(source, target)
    except OSError as exc:
        raise storage_error(store_name, f"renaming the segment {source} to {target.name}", exc) from exc


# --- one RocksDB per segment ------------------------------------------------------------------------------------


class KeyValueSegment(Segment):
    """Kafka's ``KeyValueSegment``: one RocksDB database, ``<task>/<store>/<segment name>`` (LAY-3)."""

    def __init__(self, segment_id_: int, name: str, instance: RocksDBInstance) -> None:
        super().__init__(segment_id_, name)
        self.instance = instance

    @property
    def is_open(self) -> bool:
        return self.instance.is_open

    @property
    def accessor(self) -> Accessor:
        """The segment's data column families (the key-value operations of the store go through it)."""
        return self.instance.accessor

    def close(self) -> None:
        self.instance.close(self.instance.position)

    def destroy(self) -> None:
        """Delete the segment's directory (Kafka's ``Utils.delete(dbDir)``)."""
        self.close()
        if self.instance.path is not None:
            shutil.rmtree(self.instance.path, ignore_errors=True)


class KeyValueSegments(AbstractSegments[KeyValueSegment]):
    """Kafka's ``KeyValueSegments``: plain window and session stores, one RocksDB per segment (LAY-3).

    The segments live in ``<task_dir>/<name>/``; each is a database planned by ``LAYOUT`` with its own
    ``offsets`` family (LAY-6) unless ``manage_offsets`` is False. ``changelog_partitions`` are the store's.
    """

    #: The column families of every segment (LAY-5): the plain key-value layout.
    LAYOUT: ColumnFamilyLayout = KEY_VALUE_LAYOUT

    def __init__(
        self,
        name: str,
        task_dir: str | Path,
        retention_period: int,
        segment_interval: int,
        *,
        options: RocksDBOptions = DEFAULT_ROCKSDB_OPTIONS,
        changelog_partitions: Iterable[TopicPartition] = (),
    ) -> None:
        super().__init__(name, retention_period, segment_interval)
        self.task_dir = Path(task_dir)
        self.directory = self.task_dir / self.name
        self.options = options
        self.manage_offsets = options.manage_offsets
        self.changelog_partitions = tuple(changelog_partitions)
        self.ignore_invalid_state = options.ignore_invalid_state
        #: The segment names last written to the segment lists (LAY-13), and the ids of the segments holding them.
        self._listed: tuple[str, ...] | None = None
        self._listed_in: set[int] = set()

    def get_or_create_segment(self, segment_id_: int) -> KeyValueSegment:
        existing = self._segments.get(segment_id_)
        if existing is not None:
            return existing
        name = self.segment_name(segment_id_)
        instance = RocksDBInstance(
            name,
            self.directory / name,
            self.LAYOUT,
            checked_directories=((self.task_dir, "task directory"), (self.directory, "segments directory")),
            options=self.options,
            changelog_partitions=self.changelog_partitions,
        )
        segment = KeyValueSegment(segment_id_, name, instance)
        self._segments[segment_id_] = segment
        return segment

    def get_or_create_segment_if_live(self, segment_id_: int, stream_time: int) -> KeyValueSegment | None:
        """As for every manager, then the segments expired by ``stream_time`` are dropped (WIN-16)."""
        segment = super().get_or_create_segment_if_live(segment_id_, stream_time)
        self.cleanup_expired_segments(stream_time)
        return segment

    def check_existing_segment(self, path: Path) -> None:
        """The refusals of one existing segment that need no write, as its own open decides them: lost RocksDB
        metadata (KV-24), unknown column families (UPG-1), an offsets status other than CLOSED (KV-52), damaged
        offsets or offsets ahead of data (KV-57)."""
        if rocksdb_directory_state(path, path.name):
            ExistingDatabaseChecks(path.name, path, self.LAYOUT, self.manage_offsets).check_existing(
                self.ignore_invalid_state)

    def open_existing(self, stream_time: int, check: Callable[[Path], None] | None = None,
                      check_listed: Callable[[list[FoundSegment]], None] | None = None) -> None:
        """Open what a restart finds (WS-31, SS-10), then drop what has expired by ``stream_time``.

        The directory is read by :func:`scan_segment_directory` (entries that name no segment are skipped and
        logged, LAY-12); every segment found is checked by ``check`` (default :meth:`check_existing_segment`),
        and the segments they list by ``check_listed`` (default :meth:`check_listed_segments`, LAY-13), before any
        is renamed or opened, so a refused open changes nothing (SS-20, WS-31); the segments are then
        opened in id order, and all closed again if one still fails. Kafka (4.3.1, 4.4.0) opens the
        segments one by one and refuses at the first that fails, after opening the older ones.
        """
        for directory, what in ((self.task_dir, "task directory"), (self.directory, "segments directory")):
            check_directory(directory, self.name, what)
        if not self.directory.exists():
            try:
                self.directory.mkdir(parents=True)
            except OSError as exc:
                raise storage_error(self.name, f"creating the segments directory {self.directory}", exc) from exc
            return
        found = scan_segment_directory(self.directory, self.name, self.segment_interval)
        check = self.check_existing_segment if check is None else check
        for segment in found:
            check(self.directory / segment.entry)
        (self.check_listed_segments if check_listed is None else check_listed)(found)
        try:
            for segment in found:
                if segment.rename_to is not None:
                    _rename(self.name, self.directory / segment.entry, self.directory / segment.rename_to)
            for segment in found:
                self.get_or_create_segment(segment.segment_id)
        except BaseException:
            self.close()
            raise
        self.cleanup_expired_segments(stream_time)

    def check_listed_segments(self, found: list[FoundSegment]) -> None:
        """Refuse a store that lost a segment it still claims offsets for (LAY-13): a segment named in the segment
        list of a segment found, but not found itself, while a segment found holds a committed changelog offset."""
        present = {seg.segment_name(self.name, s.segment_id, self.segment_interval): s for s in found}
        listed: set[str] = set()
        for segment in present.values():
            listed.update(read_segment_list(self.directory / segment.entry, self.name))
        missing = sorted(listed - set(present))
        if not missing:
            return
        for segment in present.values():
            if _holds_committed_offsets(self.directory / segment.entry):
                raise StoreCorruptedError(
                    self.name, f"Error opening store {self.name} at location {self.directory}: the segment "
                    f"{', '.join(missing[:5])} is missing, but segment {segment.entry} still holds committed "
                    "changelog offsets, which would claim its lost rows: refused (wipe the store and restore it)")
        LOG.warning("Store %s lost the segment %s; no committed offset claims it", self.name, ", ".join(missing))

    def write_segment_lists(self, below: int | None = None) -> None:
        """Write the names of the segments held (those below ``below`` left out) into each of them that does not
        hold that list yet (LAY-13); nothing without an ``offsets`` family to stand behind."""
        if not self.manage_offsets:
            return
        kept = [i for i in sorted(self._segments) if below is None or i >= below]
        names = tuple(self._segments[i].name for i in kept)
        if names != self._listed:
            self._listed, self._listed_in = names, set()
        text = "".join(f"{name}\n" for name in names).encode()
        for segment_id_ in kept:
            segment = self._segments[segment_id_]
            if segment_id_ in self._listed_in or not segment.is_open or segment.instance.path is None:
                continue
            write_segment_list(segment.instance.path, self.name, text)
            self._listed_in.add(segment_id_)

    def cleanup_expired_segments(self, stream_time: int) -> None:
        """Drop the expired segments (WIN-16); the survivors' lists are written first, so a crash in between leaves a
        segment unlisted, never a dropped one listed (LAY-13)."""
        bound = self.min_live_segment_id(stream_time)
        if self.manage_offsets and any(i < bound for i in self._segments):
            self.write_segment_lists(below=bound)
        super().cleanup_expired_segments(stream_time)

    def position(self) -> Position:
        """The store's position: the merge of its segments' positions (per partition the larger offset)."""
        merged: Position = {}
        for segment in self._segments.values():
            merged = merge_positions(merged, segment.instance.position)
        return merged

    def commit(self, offsets: Mapping[CodecTopicPartition, int | None], position: Position) -> None:
        """Commit every open segment, after the segment lists (LAY-13): the data first, the offsets last (OFF-23).

        Every segment with staged writes but the newest writes them alone; then the newest writes its own with
        ``offsets`` and ``position`` in one batch, and only then does every other segment take them (LAY-6). A
        write that fails, wherever it fails, leaves no segment claiming an offset whose records a segment lacks:
        the segments whose offsets went ahead have every segment's data behind them."""
        self.write_segment_lists()
        segments = self.all_segments()
        staged = [segment for segment in segments if segment.instance.has_staged_writes()]
        last = staged[-1] if staged else None
        for segment in staged[:-1]:
            segment.instance.write_staged()
        if last is not None:
            last.instance.commit(offsets, position)
        for segment in segments:
            if segment is not last:
                segment.instance.commit(offsets, position)

    def flush(self) -> None:
        for segment in self._segments.values():
            segment.instance.flush(segment.instance.position)


class TimestampedSegments(KeyValueSegments):
    """Kafka's ``TimestampedSegments``: timestamped window stores, each segment a timestamped database that
    migrates its own ``default`` family lazily (LAY-5, KV-30)."""

    LAYOUT = TIMESTAMPED_LAYOUT


class TimestampedSegmentsWithHeaders(KeyValueSegments):
    """KIP-1271's ``TimestampedSegmentsWithHeaders``: header-aware timestamped window stores, each segment a
    ``keyValueWithTimestampAndHeaders`` database upgrading lazily from a timestamped or plain one (LAY-8, WS-27)."""

    LAYOUT = TIMESTAMPED_WITH_HEADERS_LAYOUT


# --- logical segments in one database ------------------------------------------------------------------------------


@dataclass
class PendingCommit:
    """The commits of a restore not written yet (OFF-23), as one: whether one of them wiped the offsets, the
    offsets put or deleted (None) since, and the last position (OFF-4, OFF-5)."""

    wipe: bool = False
    offsets: dict[CodecTopicPartition, int | None] = field(default_factory=dict)
    position: Position = field(default_factory=dict)

    def add(self, offsets: Mapping[CodecTopicPartition, int | None], position: Position) -> None:
        """One more commit: an empty map wipes what came before it (OFF-4)."""
        if not offsets:
            self.wipe, self.offsets = True, {}
        else:
            self.offsets.update(offsets)
        self.position = dict(position)

    def write(self, segments: KeyValueSegments) -> None:
        """Commit them to ``segments`` in the order of OFF-23: the wipe, then the offsets."""
        if self.wipe:
            segments.commit({}, self.position)
        if self.offsets or not self.wipe:
            segments.commit(self.offsets, self.position)


class SegmentedStoreOffsets:
    """KIP-1035 for a store kept in segment databases (session and window stores): each segment commits and
    flushes in its own batch; the committed offset is the newest segment's (SS-21, SS-22, SS-23, WS-28)."""

    segments: KeyValueSegments
    _position: Position
    _allow: Callable[[OpClass], None]

    _restore_stack: contextlib.ExitStack | None
    _restore_commit: PendingCommit | None

    def commit(self, changelog_offsets: Mapping[TopicPartition, int | None]) -> None:
        """Every open segment writes its staged rows, the store's position and ``changelog_offsets``, the data
        of every segment before the offsets of any (SS-21, SS-22, WS-28, OFF-23). Within a restore the rows
        are written now and the offsets when the restore's flushes returned (RST-8, OFF-23)."""
        offsets = check_changelog_offsets(changelog_offsets)
        self._allow(Op.COMMIT)
        if self._restore_stack is not None:
            for segment in self.segments.all_segments():
                segment.instance.write_staged()
            pending = self._restore_commit or PendingCommit()
            pending.add(offsets, self._position)
            self._restore_commit = pending
            return
        self.segments.commit(offsets, self._position)

    def flush(self) -> None:
        """Write every segment's staged rows and the position, committed offsets untouched."""
        self._allow(Op.COMMIT)
        for segment in self.segments.all_segments():
            segment.instance.flush(self._position)

    def committed_offset(self, partition: TopicPartition) -> int | None:
        """``AbstractSegments.committedOffset``: the offset of the newest segment that holds one for ``partition``
        (a segment created since the last commit holds none), None if none does (SS-23, WS-28)."""
        tp = to_codec_tp(partition, "partition")
        self._allow(Op.OFFSETS)
        pending = self._restore_commit
        if pending is not None and (pending.wipe or tp in pending.offsets):
            return pending.offsets.get(tp)  # the restore's commits, written when the restore ends
        for segment in self.segments.all_segments(forward=False):
            offset = segment.instance.committed_offset(tp)
            if offset is not None:
                return offset
        return None


class LogicalKeyValueSegment(Segment):
    """Kafka's ``LogicalKeyValueSegment``: the keys of one segment are ``[segmentId int64][key]`` in a shared
    database (VER-1)."""

    def __init__(self, segment_id_: int, name: str, physical: RocksDBInstance) -> None:
        super().__init__(segment_id_, name)
        self.physical = physical
        self.prefix = encode_int64(segment_id_)
        self._open = True

    @property
    def is_open(self) -> bool:
        return self._open and self.physical.is_open

    def key(self, key: bytes) -> bytes:
        """The physical key of ``key`` in this segment (VER-1)."""
        return self.prefix + key

    def close(self) -> None:
        self._open = False

    def destroy(self) -> None:
        """Delete every key with this segment's prefix (``deleteRange(prefix, prefix)``, VER-2); staged until the
        next commit."""
        accessor = self.physical.accessor
        source, cursors = accessor.scan(self.prefix, increment(self.prefix), True, False, False)
        try:
            doomed = [key for key, _ in source]
        finally:
            for cursor in cursors:
                cursor.close()
        accessor.put_all(dict.fromkeys(doomed))


_NEGATIVE_ID_CREATED = (
    "Negative segment IDs are reserved for reserved segments, and should be created through "
    "createReservedSegment() instead"
)
_NEGATIVE_ID_NAMED = (
    "Negative segment IDs are reserved for reserved segments, which have custom names that should not be "
    "accessed from this method"
)


#: The key prefix of a logical segment's rows: its id as an int64 (VER-1).
_SEGMENT_PREFIX_LENGTH = 8
_RESERVED_START = b"\x80" + bytes(7)


def scan_segment_ids(first_key_in: Callable[[bytes, bytes], bytes | None], store: str) -> list[int]:
    """The regular segment ids (>= 0) with rows, ascending: ``first_key_in(lower, upper)`` answers the first key
    with ``lower <= key < upper``, or None. Each seek starts past the last id found, so the scan ends; a key too
    short to hold a segment id (found there, or sorting before segment 0) is a :class:`StoreCorruptedError`: such
    a key once made the scan find itself for ever (issue 25; VS-14)."""
    found: list[int] = []
    lower = encode_int64(0)
    # Only a key shorter than 8 bytes, all zero, sorts before segment 0.
    key = first_key_in(b"", lower)
    if key is None:
        key = first_key_in(lower, _RESERVED_START)
    while key is not None:
        if len(key) < _SEGMENT_PREFIX_LENGTH:
            raise StoreCorruptedError(
                store, f"Error opening store {store}: the row key {key.hex()!r} is shorter than the "
                f"{_SEGMENT_PREFIX_LENGTH}-byte segment id every versioned store row starts with")
        segment_id_ = int.from_bytes(key[:_SEGMENT_PREFIX_LENGTH], "big", signed=True)
        found.append(segment_id_)
        lower = encode_int64(segment_id_ + 1)  # below INT64_MAX: the keys scanned are below _RESERVED_START
        key = first_key_in(lower, _RESERVED_START)
    return found


def _first_key_of(engine: Engine, cf: str) -> Callable[[bytes, bytes], bytes | None]:
    def first_key_in(lower: bytes, upper: bytes) -> bytes | None:
        cursor = engine.iterate(cf, lower, upper, upper_inclusive=False)
        try:
            first = next(cursor, None)
        finally:
            cursor.close()
        return None if first is None else first[0]

    return first_key_in


class _LogicalSegmentsDatabase(RocksDBInstance):
    """The one database of a versioned store: its open also refuses rows no segment can hold, checked with the
    other refusals, on the read-only pass, before anything is written (VS-14, KV-23)."""

    def _refuse_unopenable(self, engine: Engine, ignore_invalid_state: bool) -> None:
        super()._refuse_unopenable(engine, ignore_invalid_state)
        if engine.has_column_family(DEFAULT_CF):
            scan_segment_ids(_first_key_of(engine, DEFAULT_CF), self.name)


class LogicalKeyValueSegments(AbstractSegments[LogicalKeyValueSegment]):
    """Kafka's ``LogicalKeyValueSegments``: versioned stores, every segment a key prefix of one database at
    ``<task>/rocksdb/<name>`` (VER-1). Regular segments have ids >= 0 and expire; reserved segments (the
    latest-value store, id -1, VER-2) have negative ids, their own names, and never expire.

    :meth:`open_existing` opens the database and registers again every regular segment that has rows in it
    (VS-14: Kafka's ``openExisting`` opens the database only, so a segment on disk stays unknown after a restart
    until a put creates it again; the reference decides to find them, see spec/versioned-store.md).
    """

    def __init__(
        self,
        name: str,
        task_dir: str | Path | None,
        retention_period: int,
        segment_interval: int,
        *,
        options: RocksDBOptions = DEFAULT_ROCKSDB_OPTIONS,
        changelog_partitions: Iterable[TopicPartition] = (),
        engine: Engine | None = None,
    ) -> None:
        super().__init__(name, retention_period, segment_interval)
        if task_dir is None and engine is None:
            raise InvalidArgumentError("task_dir", "a RocksDB store needs a task directory or an engine")
        self.task_dir = Path(task_dir) if task_dir is not None else None
        self.path = self.task_dir / ROCKSDB_DIR / self.name if self.task_dir is not None else None
        self.options = options
        self.manage_offsets = options.manage_offsets
        self.changelog_partitions = tuple(changelog_partitions)
        self.ignore_invalid_state = options.ignore_invalid_state
        self._engine = engine
        self._physical: RocksDBInstance | None = None
        self._reserved: dict[int, LogicalKeyValueSegment] = {}

    @property
    def physical(self) -> RocksDBInstance:
        """The one database of every segment; open once :meth:`open_existing` has run."""
        if self._physical is None:
            raise answer(LifeState.CLOSED, Op.READ).refusal(self.name)
        return self._physical

    def segment_name(self, segment_id_: int) -> str:
        if segment_id_ < 0:
            raise InvalidArgumentError("segment_id", _NEGATIVE_ID_NAMED)
        return super().segment_name(segment_id_)

    def open_existing(self, stream_time: int) -> None:
        """Open the physical database (LAY-2, VER-1) with the plain key-value layout and its offsets family, register
        the segments found in it (VS-14), then drop those expired by ``stream_time``."""
        checked = (
            ((self.task_dir, "task directory"), (self.task_dir / ROCKSDB_DIR, "rocksdb directory"))
            if self.task_dir is not None
            else ()
        )
        self._physical = _LogicalSegmentsDatabase(
            self.name,
            self.path,
            KEY_VALUE_LAYOUT,
            checked_directories=checked,
            options=self.options,
            changelog_partitions=self.changelog_partitions,
            engine=self._engine,
        )
        for segment_id_ in self.segment_ids_on_disk():
            self.get_or_create_segment(segment_id_)
        self.cleanup_expired_segments(stream_time)

    def segment_ids_on_disk(self) -> list[int]:
        """The regular segment ids (>= 0) that have rows in the database, ascending (VS-14): one short seek per
        segment, each scan starting at the next id's prefix; reserved (negative) ids sort after them."""
        accessor = self.physical.accessor

        def first_key_in(lower: bytes, upper: bytes) -> bytes | None:
            source, cursors = accessor.scan(lower, upper, True, False, False)
            try:
                first = next(iter(source), None)
            finally:
                for cursor in cursors:
                    cursor.close()
            return None if first is None else first[0]

        return scan_segment_ids(first_key_in, self.name)

    def get_or_create_segment(self, segment_id_: int) -> LogicalKeyValueSegment:
        existing = self._segments.get(segment_id_)
        if existing is not None:
            return existing
        if segment_id_ < 0:
            raise InvalidArgumentError("segment_id", _NEGATIVE_ID_CREATED)
        segment = LogicalKeyValueSegment(segment_id_, self.segment_name(segment_id_), self.physical)
        self._segments[segment_id_] = segment
        return segment

    def create_reserved_segment(self, segment_id_: int, name: str) -> LogicalKeyValueSegment:
        """A segment with a negative id and its own name, outside expiry and the segment listings (VER-2)."""
        if segment_id_ >= 0:
            raise InvalidArgumentError("segment_id", "segmentId for a reserved segment must be negative")
        if segment_id_ in self._reserved:
            raise InvalidArgumentError("segment_id", "LogicalKeyValueSegment already exists.")
        segment = LogicalKeyValueSegment(segment_id_, name, self.physical)
        self._reserved[segment_id_] = segment
        return segment

    def latest_value_segment(self) -> LogicalKeyValueSegment:
        """The reserved latest-value store: id -1, prefix ``FF×8``, named ``<store>.latestValues`` (VER-2)."""
        existing = self._reserved.get(LATEST_VALUE_SEGMENT_ID)
        if existing is not None:
            return existing
        return self.create_reserved_segment(LATEST_VALUE_SEGMENT_ID, latest_value_store_name(self.name))

    def reserved_segment(self, segment_id_: int) -> LogicalKeyValueSegment | None:
        return self._reserved.get(segment_id_)

    def position(self) -> Position:
        """The store's position: the one database's."""
        return self.physical.position

    def commit(self, offsets: Mapping[CodecTopicPartition, int | None], position: Position) -> None:
        self.physical.commit(offsets, position)

    def flush(self) -> None:
        self.physical.flush(self.physical.position)

    def close(self, position: Position | None = None) -> None:
        """Close the logical segments, regular and reserved, then the database, writing ``position`` (default: the
        position as last written)."""
        self._close_logical()
        if self._physical is not None:
            self._physical.close(self._physical.position if position is None else position)

    def simulate_crash(self) -> None:
        """Abandon the database as a killed process would: staged writes are lost (KV-52)."""
        self._close_logical()
        if self._physical is not None:
            self._physical.simulate_crash()

    def _close_logical(self) -> None:
        super().close()
        for segment in self._reserved.values():
            segment.close()
        self._reserved.clear()
