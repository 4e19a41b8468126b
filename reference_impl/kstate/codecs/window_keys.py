"""Window store keys: the plain, time-first and key-first schemas and their range bounds (spec/window-keys.md, WIN-*).

Every function is pure. The three layouts are :class:`WindowSchema` objects (:data:`SCHEMAS`) over the shared
layouts of :mod:`kstate.codecs.key_schemas`; input shorter than a layout's fixed part raises :class:`DecodeError`.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from kstate.codecs.key_schemas import (
    KEY_FIRST_PREFIX,
    TIME_FIRST_BYTE,
    TIME_FIRST_PREFIX,
    TIMESTAMP_SIZE,
    KeyFirstLayout,
    KeySchemaBase,
    PlainLayout,
    SegmentReading,
    TimeFirstLayout,
    check_int,
    check_long,
    encode_int,
    encode_long,
    segment_interval_for_retention,
    validate_window_bounds,
)
from kstate.codecs.primitives import INT32_MAX, INT64_MAX, INT64_MIN, encode_int32, encode_int64, read_int64, to_int64
from kstate.errors import CodecError, DecodeError, EncodeError, NullKeyError

SEQNUM_SIZE = 4
SUFFIX_SIZE = TIMESTAMP_SIZE + SEQNUM_SIZE

FMT = "window-key"
_SUFFIX = struct.Struct(">qi")


@dataclass(frozen=True)
class WindowStoreKey:
    """A decoded window store key: the serialized record key, the window start and the seqnum."""

    key: bytes
    timestamp: int
    seqnum: int


@dataclass(frozen=True)
class TimeWindow:
    """A validated ``TimeWindow``: ``0 <= start < end`` (WIN-8)."""

    start: int
    end: int


# --- window validation ------------------------------------------------------------------------------


def validate_window(start: int, end: int, *, time_window: bool, error: type[CodecError] = DecodeError) -> None:
    """``Window``'s checks (start >= 0, end >= start) and, for a ``TimeWindow``, end > start (WIN-8)."""
    validate_window_bounds(start, end, error)
    if time_window and end == start:
        raise error("window", "a time window's end must be greater than its start")


def time_window_for_size(start: int, window_size: int, *, error: type[CodecError] = DecodeError) -> TimeWindow:
    """``timeWindowForSize``: end = start + size in Java ``long``, a negative sum becoming Long.MAX (WIN-9)."""
    check_long(FMT, "window start", start, error)
    check_long(FMT, "window size", window_size, error)
    end = to_int64(start + window_size)
    if end < 0:
        end = INT64_MAX
    validate_window(start, end, time_window=True, error=error)
    return TimeWindow(start, end)


# --- store keys -------------------------------------------------------------------------------------


class WindowSchema(KeySchemaBase[WindowStoreKey]):
    """A window store-key layout: the suffix ``[start int64][seqnum int32]`` (WIN-1..4, WIN-10, WIN-15)."""

    family = "window"
    fmt = FMT
    noun = "store key"
    suffix_size = SUFFIX_SIZE
    time_first_head = TIMESTAMP_SIZE
    store_fmt = "window-store"

    def to_store_key(self, key: bytes | None, timestamp: int, seqnum: int) -> bytes:
        """``toStoreKeyBinary`` (WIN-1..3); a null key is refused as Kafka does (WIN-7)."""
        if key is None:
            raise NullKeyError("window store key: the serialized key is null")
        return self.assemble(key, encode_long(FMT, "timestamp", timestamp) + encode_int(FMT, "seqnum", seqnum))

    def decode(self, data: bytes) -> WindowStoreKey:
        """Key bytes, window start and seqnum (WIN-4); the prefix byte is not checked."""
        key, suffix = self.split(data)
        timestamp, seqnum = _SUFFIX.unpack(suffix)
        return WindowStoreKey(key, timestamp, seqnum)

    def shown(self, data: bytes) -> tuple[bytes, dict[str, Any]]:
        """The record key, ``window`` (its start) and the seqnum, as ``kstate inspect --dump`` shows a row (WIN-1..3)."""
        decoded = self.decode(data)
        return decoded.key, {"window": {"start": decoded.timestamp}, "seqnum": decoded.seqnum}

    def segment_timestamp(self, data: bytes) -> int:
        """The window start (WIN-4, WIN-15)."""
        return self.decode(data).timestamp

    def extract_store_window(self, data: bytes, window_size: int) -> TimeWindow:
        """``extractStoreWindow``: the time window of a store key for a fixed window size (WIN-9)."""
        return time_window_for_size(self.segment_timestamp(data), window_size)

    empty_when_to_before_from = True

    def max_suffix(self, time_to: int) -> bytes:
        return encode_int64(time_to) + encode_int32(INT32_MAX)

    def segment_readings(self) -> tuple[SegmentReading, ...]:
        """A segment's keys read as the plain layout, or as a time-ordered store's two (WIN-1..3, WIN-15)."""
        return _READINGS

    def segment_search_range(self, time_from: int, time_to: int) -> tuple[int, int]:
        """``WindowKeySchema.segmentsToSearch``: the segments of ``[from, to]`` (WIN-15)."""
        return time_from, time_to

    def lower_range_fixed_size(self, key: bytes | None, time_from: int) -> bytes:
        """The store key of (key, max(0, from), seqnum 0) (WIN-10)."""
        if type(key) is bytes and type(time_from) is int and INT64_MIN <= time_from <= INT64_MAX:
            return self.assemble(key, _SUFFIX.pack(max(0, time_from), 0))  # the checks below, passed
        self.require_long("from", time_from)
        return self.to_store_key(key, max(0, time_from), 0)

    def upper_range_fixed_size(self, key: bytes | None, time_to: int) -> bytes:
        """The store key of (key, to, seqnum Integer.MAX) (WIN-10)."""
        if type(key) is bytes and type(time_to) is int and INT64_MIN <= time_to <= INT64_MAX:
            return self.assemble(key, _SUFFIX.pack(time_to, INT32_MAX))  # to_store_key's checks, passed
        return self.to_store_key(key, time_to, INT32_MAX)


class WindowKeySchema(PlainLayout[WindowStoreKey], WindowSchema):
    """``WindowKeySchema``: ``[key][start][seqnum]`` (WIN-1)."""

    layout_rule = "WIN-1"


class TimeFirstWindowKeySchema(TimeFirstLayout[WindowStoreKey], WindowSchema):
    """``TimeFirstWindowKeySchema``: ``[00][start][key][seqnum]`` (WIN-2)."""

    layout_rule = "WIN-2"

    def lower_range(self, key: bytes | None, time_from: int) -> bytes | None:
        """``[00][from][key]``; a null key only drops the key (WIN-10)."""
        self.require_long("from", time_from)
        return TIME_FIRST_BYTE + encode_int64(time_from) + (key or b"")

    def upper_range(self, key: bytes | None, time_to: int) -> bytes | None:
        """``[00][to][ff for every key byte][Integer.MAX]``; a null key scans to the key-first prefix (WIN-10)."""
        self.require_long("to", time_to)
        if key is None:
            return bytes([TIME_FIRST_PREFIX + 1])
        return TIME_FIRST_BYTE + encode_int64(time_to) + b"\xff" * len(key) + encode_int32(INT32_MAX)


class KeyFirstWindowKeySchema(KeyFirstLayout[WindowStoreKey], WindowSchema):
    """``KeyFirstWindowKeySchema``: ``[01][key][start][seqnum]`` (WIN-3)."""

    layout_rule = "WIN-3"


PLAIN, TIME_FIRST, KEY_FIRST = WindowKeySchema(), TimeFirstWindowKeySchema(), KeyFirstWindowKeySchema()
#: Every window layout, in the order operations and fixtures list them.
SCHEMAS: tuple[WindowSchema, ...] = (PLAIN, TIME_FIRST, KEY_FIRST)


def window_schema(key: bytes) -> WindowSchema:
    """Time-ordered window stores keep time-first base rows and key-first index rows in one database (WIN-2, WIN-3)."""
    if key[:1] == bytes([KEY_FIRST_PREFIX]):
        return KEY_FIRST
    return TIME_FIRST


#: A plain time-ordered window store (LAY-5 counts it as a plain window store); detection reports it by this name.
TIME_ORDERED = "time_ordered_window"


def _plausible_plain_window(key: bytes, low: int, high: int | None) -> bool:
    """Whether ``key`` reads as ``[key][ts][seqnum]`` with its window start in ``[low, high)`` (WIN-4)."""
    if len(key) < SUFFIX_SIZE:
        return False
    ts = PLAIN.decode(key).timestamp
    return ts >= low and (high is None or ts < high)


def _plausible_time_ordered_window(key: bytes, low: int, high: int | None) -> bool:
    """Whether ``key`` reads as a time-ordered store's base or index row with its start in ``[low, high)``."""
    if len(key) < TIME_FIRST.min_key_length or key[0] not in (TIME_FIRST_PREFIX, KEY_FIRST_PREFIX):
        return False
    ts = window_schema(key).decode(key).timestamp
    return ts >= low and (high is None or ts < high)


_READINGS = (
    SegmentReading("window", "window", "[key][ts][seqnum]", _plausible_plain_window),
    SegmentReading(TIME_ORDERED, "time-ordered window", "[00][ts][key][seqnum] or [01][key][ts][seqnum]",
                   _plausible_time_ordered_window),
)


def is_time_first_schema_key(data: bytes) -> bool:
    """``isTimeFirstSchemaKey``: a non-empty key whose first byte is the time-first prefix 0x00 (WIN-2)."""
    return len(data) > 0 and data[0] == TIME_FIRST_PREFIX


# --- pipe serde (repartition / changelog of windowed keys) ------------------------------------------


def to_binary(key: bytes | None, window_start: int) -> bytes:
    """``WindowKeySchema.toBinary``: ``[key][start int64]``, no seqnum (WIN-5)."""
    if key is None:
        raise NullKeyError("windowed key: the serialized key is null")
    return key + encode_long(FMT, "window start", window_start)


def from_binary(data: bytes, window_size: int) -> tuple[bytes, TimeWindow]:
    """``WindowKeySchema.from``: key and time window of a pipe-serde key (WIN-5, WIN-9)."""
    if len(data) < TIMESTAMP_SIZE:
        raise DecodeError(FMT, f"a windowed key needs at least {TIMESTAMP_SIZE} bytes, got {len(data)}", 0)
    start, _ = read_int64(data, len(data) - TIMESTAMP_SIZE, FMT)
    return data[: len(data) - TIMESTAMP_SIZE], time_window_for_size(start, window_size)


# --- seqnums and segments ---------------------------------------------------------------------------


def next_seqnum(seqnum: int, retain_duplicates: bool) -> int:
    """The seqnum a put uses: unchanged without duplicates, else ``(seqnum + 1) & 0x7FFFFFFF`` (WIN-6)."""
    check_int(FMT, "seqnum", seqnum, EncodeError)
    return (seqnum + 1) & INT32_MAX if retain_duplicates else seqnum


def default_segment_interval(retention: int) -> int:
    """``Stores.persistentWindowStore``'s default: ``max(retention / 2, 60000)`` (WIN-16)."""
    return segment_interval_for_retention(FMT, "window-store", retention)


def validate_store_params(retention: int, window_size: int, segment_interval: int | None) -> int:
    """The persistent window store's parameter checks; returns the segment interval in use (WIN-16)."""
    interval = default_segment_interval(retention) if segment_interval is None else segment_interval
    check_long(FMT, "window size", window_size, EncodeError)
    check_long(FMT, "segment interval", interval, EncodeError)
    if window_size < 0:
        raise EncodeError("window-store", "window size cannot be negative")
    if interval < 1:
        raise EncodeError("window-store", "segment interval cannot be zero or negative")
    if window_size > retention:
        raise EncodeError("window-store", "retention period must be no smaller than the window size")
    return interval

