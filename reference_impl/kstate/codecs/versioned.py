"""KIP-889 versioned key-value store formats (spec/versioned.md, VER-*).

One physical store holds every logical segment as an 8-byte key prefix; the latest-value store is
the reserved segment -1. Latest-value rows are ``[validFrom][value]``; segment rows pack every
version of one key in one segment (:class:`SegmentValue`). Also the segment placement and store
configuration arithmetic, and :class:`KeyVersions`, the per-key put/get/delete procedure over rows.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import MutableMapping
from dataclasses import dataclass, field

from kstate.codecs import segments
from kstate.codecs.primitives import (
    INT64_MAX,
    INT64_MIN,
    encode_int32,
    encode_int64,
    java_div,
    read_int64,
    segment_id,
)
from kstate.errors import CodecError, DecodeError, EncodeError

LOG = logging.getLogger(__name__)
# A library logs Kafka's WARNs but leaves where they go to the application.
LOG.addHandler(logging.NullHandler())

LATEST_VALUE_SEGMENT_ID = -1
LATEST_VALUE_PREFIX = b"\xff" * 8
PUT_RETURN_CODE_NOT_PUT = INT64_MIN
PUT_RETURN_CODE_VALID_TO_UNDEFINED = -1
NO_TIMESTAMP = -1

FMT_LATEST = "versioned-latest-value"
FMT_SEGMENT = "versioned-segment-value"
FMT_KEY = "versioned-segment-key"
FMT_CONFIG = "versioned-store-config"

_TIMESTAMP_SIZE = 8
_VALUE_SIZE_SIZE = 4
_ENTRY_SIZE = _TIMESTAMP_SIZE + _VALUE_SIZE_SIZE
_HEADER_SIZE = 2 * _TIMESTAMP_SIZE
_INDEX_ENTRY = struct.Struct(">qi")
_TOMBSTONE_SIZE = -1
# Kafka seeds its index walks with -1 as "no timestamp yet"; a row whose min_timestamp is -1 makes
# the walk stop before it starts (VER-13).
_WALK_SENTINEL = -1


class SegmentStateError(CodecError):
    """A :class:`SegmentValue` call whose precondition fails (Kafka's IllegalArgument/IllegalState)."""

    def __init__(self, reason: str) -> None:
        super().__init__(FMT_SEGMENT, reason)


# --- latest-value rows (VER-3) -----------------------------------------------------------------------


def encode_latest_value(value: bytes | None, timestamp: int) -> bytes:
    """``LatestValueFormatter.from``: ``[timestamp int64][value]``; a tombstone is refused (VER-3)."""
    if value is None:
        raise EncodeError(FMT_LATEST, "cannot store a tombstone in the latest-value store")
    return encode_int64(timestamp) + bytes(value)


def decode_latest_value(data: bytes) -> tuple[bytes, int]:
    """``LatestValueFormatter.value`` and ``timestamp``: ``(value, timestamp)`` (VER-3)."""
    timestamp, end = read_int64(data, 0, FMT_LATEST)
    return bytes(data[end:]), timestamp


# --- keys, names and placement (VER-1, VER-2, VER-22) --------------------------------------------


def segment_key(segment_id_: int, key: bytes) -> bytes:
    """The physical key ``[segmentId int64 BE][raw key]`` (VER-1)."""
    return encode_int64(segment_id_) + bytes(key)


def latest_value_key(key: bytes) -> bytes:
    """The physical key of ``key`` in the latest-value store, prefix ``FF`` x 8 (VER-2)."""
    return segment_key(LATEST_VALUE_SEGMENT_ID, key)


def split_segment_key(data: bytes) -> tuple[int, bytes]:
    """Split a physical key into ``(segment id, raw key)`` (VER-1)."""
    sid, end = read_int64(data, 0, FMT_KEY)
    return sid, bytes(data[end:])


def latest_value_store_name(store_name: str) -> str:
    """The logical name of the latest-value store, ``<store>.latestValues`` (VER-2)."""
    return f"{store_name}.latestValues"


def segment_name(store_name: str, segment_id_: int, segment_interval: int) -> str:
    """The logical name of a regular segment, ``<store>.<segmentId * segmentInterval>`` (VER-2)."""
    if segment_id_ < 0:
        raise EncodeError(FMT_KEY, f"segment id {segment_id_} is reserved and has no regular name")
    return segments.segment_name(store_name, segment_id_, segment_interval)


def version_segment_id(valid_from: int, valid_to: int | None, is_tombstone: bool, segment_interval: int) -> int:
    """Where one version lives: -1 for a live latest value, else the segment of its validTo (VER-22).

    ``valid_to`` None means the version is the latest; a latest tombstone is filed by its own
    timestamp (a degenerate row).
    """
    _check_interval(segment_interval)
    if valid_to is None:
        return segment_id(valid_from, segment_interval) if is_tombstone else LATEST_VALUE_SEGMENT_ID
    return segment_id(valid_to, segment_interval)


def default_segment_interval(history_retention: int) -> int:
    """``RocksDbVersionedKeyValueBytesStoreSupplier.defaultSegmentInterval`` (VER-23)."""
    if history_retention <= 60_000:
        return max(java_div(history_retention, 3), 2_000)
    if history_retention <= 300_000:
        return max(java_div(history_retention, 5), 20_000)
    if history_retention <= 3_600_000:
        return max(java_div(history_retention, 12), 60_000)
    return max(java_div(history_retention, 24), 300_000)


@dataclass(frozen=True)
class StoreConfig:
    """A validated versioned store configuration; grace period equals history retention (VER-24)."""

    history_retention: int
    segment_interval: int

    @property
    def grace_period(self) -> int:
        return self.history_retention


def store_config(history_retention: int, segment_interval: int | None = None) -> StoreConfig:
    """``Stores.persistentVersionedKeyValueStore`` validation and defaults (VER-23, VER-24)."""
    if not isinstance(history_retention, int) or not INT64_MIN <= history_retention <= INT64_MAX:
        raise EncodeError(FMT_CONFIG, "historyRetention must be a long")
    if history_retention < 0:
        raise EncodeError(FMT_CONFIG, "historyRetention cannot be negative")
    if segment_interval is None:
        return StoreConfig(history_retention, default_segment_interval(history_retention))
    _check_interval(segment_interval)
    return StoreConfig(history_retention, segment_interval)


def _check_interval(segment_interval: int) -> None:
    if not isinstance(segment_interval, int) or segment_interval < 1 or segment_interval > INT64_MAX:
        raise EncodeError(FMT_CONFIG, "segmentInterval cannot be zero or negative")


# --- segment rows (VER-4 .. VER-21) ------------------------------------------------------------------


def segment_next_timestamp(row: bytes) -> int:
    """``next_timestamp`` of a segment row: the validTo of its newest version (VER-4)."""
    return read_int64(row, 0, FMT_SEGMENT)[0]


def segment_min_timestamp(row: bytes) -> int:
    """``min_timestamp`` of a segment row: the validFrom of its oldest version (VER-4)."""
    return read_int64(row, _TIMESTAMP_SIZE, FMT_SEGMENT)[0]


@dataclass(frozen=True)
class SegmentSearchResult:
    """One version of a row: its index (0 = newest), validity interval and value (None = tombstone)."""

    index: int
    valid_from: int
    valid_to: int
    value: bytes | None = None


@dataclass(frozen=True)
class _Entry:
    valid_from: int
    value_size: int
    cumulative_size: int  # value bytes of this entry and every newer one


class SegmentValue:
    """A segment row, read lazily and edited in place exactly as Kafka's formatter does (VER-4..VER-21).

    Like Kafka, it remembers how far ``find`` (or an edit) has read the index: ``insert`` and
    ``update_record`` may only touch indexes read so far (VER-20).
    """

    def __init__(self, row: bytes) -> None:
        self._row = bytes(row)
        self._next = segment_next_timestamp(self._row)
        self._min = segment_min_timestamp(self._row)
        self._degenerate = self._next == self._min
        self._entries: list[_Entry] = []

    # -- construction and access ------------------------------------------------------------------

    @staticmethod
    def stored_value(value: bytes | None) -> tuple[bytes, int]:
        """The value bytes and index size of a value: a tombstone is ``b""`` with size -1 (VER-8)."""
        if value is None:
            return b"", _TOMBSTONE_SIZE
        data = bytes(value)
        encode_int32(len(data))  # refuses a value too large for the int32 size field
        return data, len(data)


    @classmethod
    def deserialize(cls, row: bytes) -> SegmentValue:
        """Wrap a stored row; only the 16-byte header is read now (VER-21)."""
        return cls(row)

    @classmethod
    def new_segment_value_with_record(cls, value: bytes | None, valid_from: int, valid_to: int) -> SegmentValue:
        """A row holding one version; ``valid_from == valid_to`` with a tombstone is degenerate (VER-10, VER-14)."""
        created = cls.__new__(cls)
        created._initialize_with_record(value, valid_from, valid_to)
        return created

    def serialize(self) -> bytes:
        """The row bytes (VER-21)."""
        return self._row

    @property
    def next_timestamp(self) -> int:
        return self._next

    @property
    def min_timestamp(self) -> int:
        return self._min

    @property
    def is_degenerate(self) -> bool:
        """Kafka's flag, set when the row is created or read, not recomputed by later edits (VER-10)."""
        return self._degenerate

    # -- reading ----------------------------------------------------------------------------------

    def _read_entry(self, index: int, cumulative_before: int) -> _Entry:
        """Read index entry ``index`` from the row, refusing anything the row cannot hold (VER-9)."""
        position = _HEADER_SIZE + index * _ENTRY_SIZE
        if position + _ENTRY_SIZE > len(self._row):
            raise DecodeError(FMT_SEGMENT, "the index runs past the end of the row before reaching min_timestamp",
                              position)
        valid_from, size = _INDEX_ENTRY.unpack_from(self._row, position)  # bounds checked above
        after = position + _ENTRY_SIZE
        if size < _TOMBSTONE_SIZE:
            raise DecodeError(FMT_SEGMENT, f"value size {size} is neither -1 (tombstone) nor a length", position + 8)
        cumulative = cumulative_before + max(size, 0)
        if cumulative > len(self._row) - after:
            raise DecodeError(FMT_SEGMENT, f"value sizes ({cumulative} bytes) do not fit in the "
                              f"{len(self._row) - after} bytes after the index entries read", position + 8)
        return _Entry(valid_from, size, cumulative)

    def _value_at(self, entry: _Entry) -> bytes | None:
        if entry.value_size < 0:
            return None
        start = len(self._row) - entry.cumulative_size
        return self._row[start:start + entry.value_size]

    def find(self, timestamp: int, include_value: bool) -> SegmentSearchResult:
        """The newest version with validFrom <= ``timestamp``; needs ``min <= timestamp < next`` (VER-11)."""
        if timestamp < self._min:
            raise SegmentStateError("Timestamp is too small to be found in this segment.")
        if timestamp >= self._next:
            raise SegmentStateError("Timestamp is too large to be found in this segment.")
        valid_to = self._next
        current = _WALK_SENTINEL
        index = 0
        while current != self._min:
            if index < len(self._entries):
                entry = self._entries[index]
            else:
                before = self._entries[-1].cumulative_size if self._entries else 0
                entry = self._read_entry(index, before)
                self._entries.append(entry)
            current = entry.valid_from
            if current <= timestamp:
                value = self._value_at(entry) if include_value else None
                return SegmentSearchResult(index, current, valid_to, value)
            valid_to = current
            index += 1
        raise SegmentStateError("Search in segment expected to find result but did not.")

    def _walk(self, kafka_sentinel: bool = True) -> list[tuple[_Entry, int]]:
        """Every index entry with its validTo, read from the bytes, newest first (VER-5, VER-7).

        With ``kafka_sentinel`` the walk stops at once on a row whose min_timestamp is -1, as Kafka's does (VER-13).
        """
        out: list[tuple[_Entry, int]] = []
        valid_to = self._next
        current = _WALK_SENTINEL
        cumulative = 0
        index = 0
        while current != self._min or (not kafka_sentinel and not out):
            entry = self._read_entry(index, cumulative)
            out.append((entry, valid_to))
            current = entry.valid_from
            cumulative = entry.cumulative_size
            valid_to = current
            index += 1
        return out

    def find_all(self, from_time: int, to_time: int) -> list[SegmentSearchResult]:
        """Non-tombstone versions with validFrom <= ``to_time`` and validTo > ``from_time``, newest first (VER-12)."""
        results: list[SegmentSearchResult] = []
        for index, (entry, valid_to) in enumerate(self._walk()):
            if entry.value_size >= 0 and entry.valid_from <= to_time and valid_to > from_time:
                results.append(SegmentSearchResult(index, entry.valid_from, valid_to, self._value_at(entry)))
        return results

    def versions(self) -> list[SegmentSearchResult]:
        """Every version of the row, tombstones included, newest first; a full checked read (VER-5..VER-9).

        Unlike ``find``, it also refuses a row whose values do not exactly fill the bytes after the index.
        """
        walked = self._walk(kafka_sentinel=False)
        values_start = _HEADER_SIZE + _ENTRY_SIZE * len(walked)
        if walked[-1][0].cumulative_size != len(self._row) - values_start:
            raise DecodeError(FMT_SEGMENT, f"the values ({walked[-1][0].cumulative_size} bytes) do not fill the "
                              f"{len(self._row) - values_start} bytes after the index", values_start)
        return [SegmentSearchResult(i, e.valid_from, to, self._value_at(e)) for i, (e, to) in enumerate(walked)]

    # -- editing ----------------------------------------------------------------------------------

    def insert_as_latest(self, valid_from: int, valid_to: int, value: bytes | None) -> None:
        """Add a version on top; a gap after ``next`` becomes a tombstone; older overlap is truncated (VER-15, VER-16)."""
        _check_timestamps(valid_from, valid_to)
        stored = self.stored_value(value)
        if valid_from < self._next:
            LOG.warning("Detected inconsistency among versioned store segments; truncating the row to %d.", valid_from)
            self._truncate_to(valid_from)
        if self._next == valid_from:
            if self._degenerate:
                self._initialize_with_record(value, valid_from, valid_to)
            else:
                self._do_insert(valid_from, stored, 0)
        else:
            if self._degenerate:
                self._initialize_with_record(None, self._next, valid_from)
            else:
                self._do_insert(self._next, self.stored_value(None), 0)
            self._do_insert(valid_from, stored, 0)
        self._next = valid_to
        self._row = encode_int64(valid_to) + self._row[_TIMESTAMP_SIZE:]

    def insert_as_earliest(self, timestamp: int, value: bytes | None) -> None:
        """Add a version below the oldest; the caller guarantees ``timestamp < min`` (VER-17)."""
        _check_timestamps(timestamp)
        stored = self.stored_value(value)
        if self._degenerate:
            self._initialize_with_record(value, timestamp, self._next)
        else:
            last = self.find(self._min, False).index
            self._do_insert(timestamp, stored, last + 1)

    def insert(self, timestamp: int, value: bytes | None, index: int) -> None:
        """Insert a version at ``index``, which ``find`` must have reached (VER-18, VER-20)."""
        _check_timestamps(timestamp)
        if index > len(self._entries) - 1:
            raise SegmentStateError("Must invoke find() to deserialize record before insert() at specific index.")
        self._do_insert(timestamp, self.stored_value(value), index)

    def update_record(self, timestamp: int, value: bytes | None, index: int) -> None:
        """Replace the validFrom and value of version ``index``, which ``find`` must have reached (VER-19, VER-20)."""
        _check_timestamps(timestamp)
        if index > len(self._entries) - 1 or index < 0:
            raise SegmentStateError("Must invoke find() to deserialize record before updateRecord().")
        data, size = self.stored_value(value)
        old = self._entries[index]
        old_size = max(old.value_size, 0)
        becomes_min = old.valid_from == self._min
        del self._entries[index:]
        self._entries.append(_Entry(timestamp, size, old.cumulative_size - old_size + len(data)))
        position = _HEADER_SIZE + index * _ENTRY_SIZE
        row = self._row
        values_start = len(row) - old.cumulative_size  # where this version's value starts
        self._row = (row[:position] + encode_int64(timestamp) + encode_int32(size)
                     + row[position + _ENTRY_SIZE:values_start] + data + row[values_start + old_size:])
        if becomes_min:
            self._set_min(timestamp)

    def _do_insert(self, timestamp: int, stored: tuple[bytes, int], index: int) -> None:
        data, size = stored
        if index > len(self._entries):
            raise SegmentStateError("Must invoke find() to deserialize record before insert() at specific index.")
        if self._degenerate or index < 0:
            raise SegmentStateError("Cannot insert at negative index or into degenerate segment.")
        becomes_min = index > 0 and self._entries[index - 1].valid_from == self._min
        del self._entries[index:]
        newer_values = self._entries[-1].cumulative_size if self._entries else 0
        self._entries.append(_Entry(timestamp, size, newer_values + len(data)))
        position = _HEADER_SIZE + index * _ENTRY_SIZE
        row = self._row
        split = len(row) - newer_values  # values of newer versions follow the new value
        self._row = (row[:position] + encode_int64(timestamp) + encode_int32(size)
                     + row[position:split] + data + row[split:])
        if becomes_min:
            self._set_min(timestamp)

    def _set_min(self, timestamp: int) -> None:
        self._min = timestamp
        self._row = self._row[:_TIMESTAMP_SIZE] + encode_int64(timestamp) + self._row[_HEADER_SIZE:]

    def _initialize_with_record(self, value: bytes | None, valid_from: int, valid_to: int) -> None:
        _check_timestamps(valid_from, valid_to)
        data, size = self.stored_value(value)
        self._next = valid_to
        self._min = valid_from
        self._row = encode_int64(valid_to) + encode_int64(valid_from) + encode_int64(valid_from) + encode_int32(size) + data
        self._degenerate = valid_to == valid_from
        self._entries = []

    def _truncate_to(self, timestamp: int) -> None:
        """Drop versions at or after ``timestamp`` and cut the one spanning it; ``next`` becomes it (VER-16)."""
        if timestamp <= self._min:
            total = self.find(self._min, False).index + 1
            if not (timestamp == self._min and total == 1):
                LOG.warning("Versioned store inconsistency affects %d record versions (expected 1).", total)
            self._initialize_with_record(None, timestamp, timestamp)
            return
        found = self.find(timestamp, False)
        dropped = found.index + (1 if found.valid_from == timestamp else 0)
        if not (dropped == 1 and found.index == 0):
            LOG.warning("Versioned store inconsistency affects %d record versions (expected 1).", dropped)
        if dropped == 0:
            self._next = timestamp
            self._row = encode_int64(timestamp) + self._row[_TIMESTAMP_SIZE:]
            return
        values_dropped = self._entries[dropped - 1].cumulative_size
        index_dropped = _ENTRY_SIZE * dropped
        kept_end = len(self._row) - values_dropped
        self._row = (encode_int64(timestamp) + encode_int64(self._min)
                     + self._row[_HEADER_SIZE + index_dropped:kept_end])
        self._next = timestamp
        self._entries = []


def _check_timestamps(*timestamps: int) -> None:
    for ts in timestamps:
        if not isinstance(ts, int) or isinstance(ts, bool) or not INT64_MIN <= ts <= INT64_MAX:
            raise EncodeError(FMT_SEGMENT, f"timestamp {ts!r} is not a long")


def new_segment_value_with_record(value: bytes | None, valid_from: int, valid_to: int) -> SegmentValue:
    """``RocksDBVersionedStoreSegmentValueFormatter.newSegmentValueWithRecord`` (VER-14)."""
    return SegmentValue.new_segment_value_with_record(value, valid_from, valid_to)


def deserialize_segment_value(row: bytes) -> SegmentValue:
    """``RocksDBVersionedStoreSegmentValueFormatter.deserialize`` (VER-21)."""
    return SegmentValue.deserialize(row)


# --- the per-key store procedure (VER-25 .. VER-33) --------------------------------------------------


@dataclass(frozen=True)
class VersionedRecord:
    """A version returned by a get: value (never None), validFrom, and validTo (None = latest)."""

    value: bytes
    timestamp: int
    valid_to: int | None = None


@dataclass
class KeyVersions:
    """Every physical row of one key in a running ``RocksDBVersionedStore``, and its put/get/delete.

    ``latest`` is the latest-value row; ``segments`` maps live segment ids to this key's row there. A
    store passes a mapping over its database: iterating it lists the store's segments (a segment where the
    key has no row answers None to ``get``, and is skipped as Kafka skips it). Rows of other keys never
    influence one key, so this is the store's behaviour per key (VER-25..33).
    """

    config: StoreConfig
    observed_stream_time: int = NO_TIMESTAMP
    latest: bytes | None = None
    segments: MutableMapping[int, bytes] = field(default_factory=dict)

    def physical_rows(self, key: bytes) -> list[tuple[bytes, bytes]]:
        """``(physical key, row)`` pairs in store order (VER-1, VER-2)."""
        rows = [(segment_key(sid, key), row) for sid, row in self.segments.items()]
        if self.latest is not None:
            rows.append((latest_value_key(key), self.latest))
        return sorted(rows)

    # -- reads ------------------------------------------------------------------------------------

    def get(self) -> VersionedRecord | None:
        """``get(key)``: the latest-value store only (VER-31)."""
        if self.latest is None:
            return None
        value, ts = decode_latest_value(self.latest)
        return VersionedRecord(value, ts)

    def get_as_of(self, as_of: int) -> VersionedRecord | None:
        """``get(key, asOf)`` (VER-32)."""
        latest = self.get()
        if latest is not None and latest.timestamp <= as_of:
            return latest
        if as_of < self.observed_stream_time - self.config.history_retention:
            LOG.warning("Returning null for expired get.")
            return None
        for sid in self._segments_from(as_of):
            row = self.segments.get(sid)
            if row is None:
                continue
            if segment_next_timestamp(row) <= as_of:
                return None
            if segment_min_timestamp(row) > as_of:
                continue
            found = SegmentValue.deserialize(row).find(as_of, True)
            if found.value is None:
                return None
            return VersionedRecord(found.value, found.valid_from, found.valid_to)
        return None

    def _segments_from(self, timestamp: int) -> list[int]:
        """Live segment ids from ``segmentId(timestamp)`` upward, newest first (AbstractSegments.segments)."""
        low = segment_id(timestamp, self.config.segment_interval)
        return sorted((sid for sid in self.segments if sid >= low), reverse=True)

    # -- writes -----------------------------------------------------------------------------------

    def put(self, value: bytes | None, timestamp: int) -> int:
        """``put(key, value, ts)``: validTo of the new version, -1 if latest, MIN if expired (VER-26, VER-27)."""
        _check_timestamps(timestamp)
        if timestamp < self.observed_stream_time - self.config.grace_period:
            LOG.warning("Skipping record for expired put.")
            return PUT_RETURN_CODE_NOT_PUT
        self.observed_stream_time = max(self.observed_stream_time, timestamp)
        return self._do_put(value, timestamp)

    def apply_put(self, value: bytes | None, timestamp: int) -> int:
        """Kafka's ``doPut`` alone: no grace check, ``observed_stream_time`` used as given (restore passes the
        end-of-batch stream time, VER-34)."""
        _check_timestamps(timestamp)
        return self._do_put(value, timestamp)

    def delete(self, timestamp: int) -> VersionedRecord | None:
        """``delete(key, ts)``: ``get(key, ts)`` then a tombstone put; None if expired (VER-33)."""
        _check_timestamps(timestamp)
        if timestamp < self.observed_stream_time - self.config.grace_period:
            LOG.warning("Skipping record for expired delete.")
            return None
        existing = self.get_as_of(timestamp)
        self.observed_stream_time = max(self.observed_stream_time, timestamp)
        self._do_put(None, timestamp)
        return existing

    def _min_live_segment(self) -> int:
        return segment_id(self.observed_stream_time - self.config.history_retention, self.config.segment_interval)

    def _live_segment(self, sid: int) -> bool:
        """``getOrCreateSegmentIfLive``: False when expired; a live negative id is refused (VER-30)."""
        if sid < self._min_live_segment():
            return False
        if sid < 0:
            raise EncodeError(FMT_KEY, f"segment id {sid} (from a negative timestamp) is reserved")
        return True

    def _do_put(self, value: bytes | None, timestamp: int) -> int:
        min_live = self._min_live_segment()
        for sid in [s for s in self.segments if s < min_live]:
            del self.segments[sid]  # cleanupExpiredSegments (VER-30)
        complete, found = self._put_to_latest(value, timestamp)
        if not complete:
            complete, found = self._put_to_segments(value, timestamp, found)
        if not complete:
            found = self._finish_put(value, timestamp, found)
        # NOT_PUT and the "no later version" sentinel are both Long.MIN_VALUE (VER-27).
        return PUT_RETURN_CODE_VALID_TO_UNDEFINED if found == INT64_MIN else found

    def _put_to_latest(self, value: bytes | None, timestamp: int) -> tuple[bool, int]:
        if self.latest is None:
            return False, INT64_MIN
        old_value, old_ts = decode_latest_value(self.latest)
        if timestamp < old_ts:
            return False, old_ts
        if timestamp > old_ts:
            # The old latest moves into a segment before the latest store changes (VER-28).
            sid = segment_id(timestamp, self.config.segment_interval)
            if self._live_segment(sid):
                self._insert_as_latest(sid, old_ts, timestamp, old_value)
        self.latest = None if value is None else encode_latest_value(value, timestamp)
        return True, INT64_MIN

    def _insert_as_latest(self, sid: int, valid_from: int, valid_to: int, value: bytes | None) -> None:
        row = self.segments.get(sid)
        if row is None:
            self.segments[sid] = new_segment_value_with_record(value, valid_from, valid_to).serialize()
        else:
            edited = SegmentValue.deserialize(row)
            edited.insert_as_latest(valid_from, valid_to, value)
            self.segments[sid] = edited.serialize()

    def _put_to_segments(self, value: bytes | None, timestamp: int, found: int) -> tuple[bool, int]:
        for sid in self._segments_from(timestamp):
            row = self.segments.get(sid)
            if row is None:
                continue
            if segment_next_timestamp(row) <= timestamp:
                return False, found
            row_min = segment_min_timestamp(row)
            if row_min <= timestamp:
                return True, self._put_to_segment(sid, row, value, timestamp)
            if row_min < self.observed_stream_time - self.config.history_retention:
                return True, PUT_RETURN_CODE_NOT_PUT
            found = row_min
        return False, found

    def _put_to_segment(self, sid: int, row: bytes, value: bytes | None, timestamp: int) -> int:
        """An out-of-order put inside a row: replace, split into an older segment, or insert (VER-29)."""
        own_sid = segment_id(timestamp, self.config.segment_interval)
        older_needed = own_sid != sid
        edited = SegmentValue.deserialize(row)
        found = edited.find(timestamp, older_needed)
        if found.valid_from == timestamp:
            edited.update_record(timestamp, value, found.index)
        elif older_needed:
            if self._live_segment(own_sid):
                self._insert_as_latest(own_sid, found.valid_from, timestamp, found.value)
            edited.update_record(timestamp, value, found.index)
        else:
            edited.insert(timestamp, value, found.index)
        self.segments[sid] = edited.serialize()
        return found.valid_to

    def _finish_put(self, value: bytes | None, timestamp: int, found: int) -> int:
        if found == INT64_MIN and value is not None:
            self.latest = encode_latest_value(value, timestamp)
            return found
        # A tombstone is never a latest value: with nothing later it goes to the segment of its own timestamp, a
        # degenerate one (valid from and to its timestamp) where the key has none there (VER-10, VER-22); any other
        # version goes to the segment of the validTo it was found.
        valid_to = timestamp if found == INT64_MIN else found
        sid = segment_id(valid_to, self.config.segment_interval)
        if not self._live_segment(sid):
            return PUT_RETURN_CODE_NOT_PUT
        row = self.segments.get(sid)
        if row is None:
            self.segments[sid] = new_segment_value_with_record(value, timestamp, valid_to).serialize()
        elif found == INT64_MIN:
            if segment_next_timestamp(row) != timestamp:  # equal: the segment already ends in this tombstone
                self._insert_as_latest(sid, segment_next_timestamp(row), timestamp, None)
        elif segment_next_timestamp(row) <= timestamp:
            self._insert_as_latest(sid, timestamp, found, value)
        else:
            edited = SegmentValue.deserialize(row)
            edited.insert_as_earliest(timestamp, value)
            self.segments[sid] = edited.serialize()
        return found
