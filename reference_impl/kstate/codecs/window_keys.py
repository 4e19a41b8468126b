"""Window store keys: the plain, time-first and key-first schemas and their range bounds (spec/window-keys.md, WIN-*).

Every function is pure. Store keys are decoded from the end (plain, key-first) or from fixed offsets
after a one-byte prefix (time-first); input shorter than the fixed part raises :class:`DecodeError`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from kstate.codecs.primitives import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    encode_int32,
    encode_int64,
    java_div,
    read_int32,
    read_int64,
    segment_id,
    to_int64,
)
from kstate.errors import CodecError, DecodeError, EncodeError, NullKeyError

TIMESTAMP_SIZE = 8
SEQNUM_SIZE = 4
SUFFIX_SIZE = TIMESTAMP_SIZE + SEQNUM_SIZE
PREFIX_SIZE = 1
TIME_FIRST_PREFIX = 0x00
KEY_FIRST_PREFIX = 0x01
MIN_SEGMENT_INTERVAL_DEFAULT = 60_000

FMT = "window-key"


class WindowSchema(Enum):
    """The three store-key layouts of window stores (WIN-1, WIN-2, WIN-3)."""

    PLAIN = "key_schema"
    TIME_FIRST = "time_first"
    KEY_FIRST = "key_first"


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
    if start < 0:
        raise error("window", "window start cannot be negative")
    if end < start:
        raise error("window", "window end cannot be smaller than window start")
    if time_window and end == start:
        raise error("window", "a time window's end must be greater than its start")


def time_window_for_size(start: int, window_size: int, *, error: type[CodecError] = DecodeError) -> TimeWindow:
    """``timeWindowForSize``: end = start + size in Java ``long``, a negative sum becoming Long.MAX (WIN-9)."""
    _check_long("window start", start, error)
    _check_long("window size", window_size, error)
    end = to_int64(start + window_size)
    if end < 0:
        end = INT64_MAX
    validate_window(start, end, time_window=True, error=error)
    return TimeWindow(start, end)


# --- store keys -------------------------------------------------------------------------------------


def to_store_key_binary(schema: WindowSchema, key: bytes | None, timestamp: int, seqnum: int) -> bytes:
    """``toStoreKeyBinary`` of ``schema`` (WIN-1, WIN-2, WIN-3); a null key is refused as Kafka does."""
    if key is None:
        raise NullKeyError("window store key: the serialized key is null")
    ts = _encode_long("timestamp", timestamp)
    seq = _encode_int("seqnum", seqnum)
    if schema is WindowSchema.PLAIN:
        return key + ts + seq
    if schema is WindowSchema.TIME_FIRST:
        return bytes([TIME_FIRST_PREFIX]) + ts + key + seq
    return bytes([KEY_FIRST_PREFIX]) + key + ts + seq


def min_store_key_length(schema: WindowSchema) -> int:
    """The fixed part every store key of ``schema`` has: 12 bytes, plus the prefix for prefixed schemas."""
    return SUFFIX_SIZE if schema is WindowSchema.PLAIN else PREFIX_SIZE + SUFFIX_SIZE


def decode_store_key(schema: WindowSchema, data: bytes) -> WindowStoreKey:
    """Split a store key into key bytes, window start and seqnum (WIN-4); the prefix byte is not checked."""
    need = min_store_key_length(schema)
    if len(data) < need:
        raise DecodeError(FMT, f"a {schema.value} store key needs at least {need} bytes, got {len(data)}", 0)
    seqnum, _ = read_int32(data, len(data) - SEQNUM_SIZE, FMT)
    if schema is WindowSchema.TIME_FIRST:
        timestamp, key_start = read_int64(data, PREFIX_SIZE, FMT)
        return WindowStoreKey(data[key_start : len(data) - SEQNUM_SIZE], timestamp, seqnum)
    timestamp, _ = read_int64(data, len(data) - SUFFIX_SIZE, FMT)
    key_start = 0 if schema is WindowSchema.PLAIN else PREFIX_SIZE
    return WindowStoreKey(data[key_start : len(data) - SUFFIX_SIZE], timestamp, seqnum)


def extract_store_timestamp(schema: WindowSchema, data: bytes) -> int:
    """The window start of a store key: the schema's segment timestamp (WIN-4, WIN-15)."""
    return decode_store_key(schema, data).timestamp


def extract_store_window(schema: WindowSchema, data: bytes, window_size: int) -> TimeWindow:
    """``extractStoreWindow``: the time window of a store key for a fixed window size (WIN-9)."""
    return time_window_for_size(extract_store_timestamp(schema, data), window_size)


def is_time_first_schema_key(data: bytes) -> bool:
    """``isTimeFirstSchemaKey``: a non-empty key whose first byte is the time-first prefix 0x00 (WIN-2)."""
    return len(data) > 0 and data[0] == TIME_FIRST_PREFIX


def from_non_prefix_window_key(schema: WindowSchema, data: bytes) -> bytes:
    """``fromNonPrefixWindowKey``: a plain store key rewritten in ``schema``'s prefixed layout (WIN-12).

    Key-first only prepends 0x01 and accepts any bytes, as Kafka does; time-first needs the 12-byte suffix.
    """
    if schema is WindowSchema.KEY_FIRST:
        return bytes([KEY_FIRST_PREFIX]) + data
    if schema is WindowSchema.PLAIN:
        raise EncodeError(FMT, "the plain schema has no prefixed form")
    if len(data) < SUFFIX_SIZE:
        raise DecodeError(FMT, f"a plain store key needs at least {SUFFIX_SIZE} bytes, got {len(data)}", 0)
    key_end = len(data) - SUFFIX_SIZE
    timestamp = data[key_end : key_end + TIMESTAMP_SIZE]
    seqnum = data[len(data) - SEQNUM_SIZE :]
    return bytes([TIME_FIRST_PREFIX]) + timestamp + data[:key_end] + seqnum


# --- pipe serde (repartition / changelog of windowed keys) ------------------------------------------


def to_binary(key: bytes | None, window_start: int) -> bytes:
    """``WindowKeySchema.toBinary``: ``[key][start int64]``, no seqnum (WIN-5)."""
    if key is None:
        raise NullKeyError("windowed key: the serialized key is null")
    return key + _encode_long("window start", window_start)


def from_binary(data: bytes, window_size: int) -> tuple[bytes, TimeWindow]:
    """``WindowKeySchema.from``: key and time window of a pipe-serde key (WIN-5, WIN-9)."""
    if len(data) < TIMESTAMP_SIZE:
        raise DecodeError(FMT, f"a windowed key needs at least {TIMESTAMP_SIZE} bytes, got {len(data)}", 0)
    start, _ = read_int64(data, len(data) - TIMESTAMP_SIZE, FMT)
    return data[: len(data) - TIMESTAMP_SIZE], time_window_for_size(start, window_size)


# --- seqnums and segments ---------------------------------------------------------------------------


def next_seqnum(seqnum: int, retain_duplicates: bool) -> int:
    """The seqnum a put uses: unchanged without duplicates, else ``(seqnum + 1) & 0x7FFFFFFF`` (WIN-6)."""
    _check_int("seqnum", seqnum, EncodeError)
    return (seqnum + 1) & INT32_MAX if retain_duplicates else seqnum


def default_segment_interval(retention: int) -> int:
    """``Stores.persistentWindowStore``'s default: ``max(retention / 2, 60000)`` (WIN-16)."""
    _check_long("retention", retention, EncodeError)
    if retention < 0:
        raise EncodeError("window-store", "retention period cannot be negative")
    return max(java_div(retention, 2), MIN_SEGMENT_INTERVAL_DEFAULT)


def validate_store_params(retention: int, window_size: int, segment_interval: int | None) -> int:
    """The persistent window store's parameter checks; returns the segment interval in use (WIN-16)."""
    interval = default_segment_interval(retention) if segment_interval is None else segment_interval
    _check_long("window size", window_size, EncodeError)
    _check_long("segment interval", interval, EncodeError)
    if window_size < 0:
        raise EncodeError("window-store", "window size cannot be negative")
    if interval < 1:
        raise EncodeError("window-store", "segment interval cannot be zero or negative")
    if window_size > retention:
        raise EncodeError("window-store", "retention period must be no smaller than the window size")
    return interval


def store_key_segment_id(schema: WindowSchema, data: bytes, segment_interval: int) -> int:
    """The segment of a store key: window start / interval with Java truncation (WIN-15)."""
    if segment_interval < 1:
        raise EncodeError("window-store", "segment interval cannot be zero or negative")
    return segment_id(extract_store_timestamp(schema, data), segment_interval)


# --- range bounds -----------------------------------------------------------------------------------


def ordered_upper_range(key: bytes, max_suffix: bytes) -> bytes:
    """``OrderedBytes.upperRange`` (WIN-11): the first key byte, then key bytes while >= max_suffix[0]."""
    first_suffix_byte = max_suffix[0]
    kept = 0
    while kept < len(key) and (kept < 1 or key[kept] >= first_suffix_byte):
        kept += 1
    return key[:kept] + max_suffix


def ordered_lower_range(key: bytes, min_suffix: bytes) -> bytes:
    """``OrderedBytes.lowerRange``: the whole key followed by the minimal suffix (WIN-10)."""
    return key + min_suffix


def lower_range(schema: WindowSchema, key: bytes | None, time_from: int) -> bytes | None:
    """``lowerRange`` of ``schema`` (WIN-10); None stands for Kafka's null (no bound)."""
    _check_long("from", time_from, EncodeError)
    if schema is WindowSchema.TIME_FIRST:
        return bytes([TIME_FIRST_PREFIX]) + encode_int64(time_from) + (key or b"")
    plain = None if key is None else ordered_lower_range(key, bytes(SUFFIX_SIZE))
    return plain if schema is WindowSchema.PLAIN else _wrap_key_first(plain, upper=False)


def upper_range(schema: WindowSchema, key: bytes | None, time_to: int) -> bytes | None:
    """``upperRange`` of ``schema`` (WIN-10, WIN-11); None stands for Kafka's null (no bound)."""
    _check_long("to", time_to, EncodeError)
    if schema is WindowSchema.TIME_FIRST:
        if key is None:
            return bytes([TIME_FIRST_PREFIX + 1])
        return bytes([TIME_FIRST_PREFIX]) + encode_int64(time_to) + b"\xff" * len(key) + encode_int32(INT32_MAX)
    max_suffix = encode_int64(time_to) + encode_int32(INT32_MAX)
    plain = None if key is None else ordered_upper_range(key, max_suffix)
    return plain if schema is WindowSchema.PLAIN else _wrap_key_first(plain, upper=True)


def lower_range_fixed_size(schema: WindowSchema, key: bytes | None, time_from: int) -> bytes:
    """``lowerRangeFixedSize``: the store key of (key, max(0, from), seqnum 0) (WIN-10)."""
    _check_long("from", time_from, EncodeError)
    return to_store_key_binary(schema, key, max(0, time_from), 0)


def upper_range_fixed_size(schema: WindowSchema, key: bytes | None, time_to: int) -> bytes:
    """``upperRangeFixedSize``: the store key of (key, to, seqnum Integer.MAX) (WIN-10)."""
    return to_store_key_binary(schema, key, time_to, INT32_MAX)


def _wrap_key_first(plain: bytes | None, *, upper: bool) -> bytes:
    # A null plain bound still needs the prefix: lower scans from 0x01, upper stops before 0x02.
    if plain is None:
        return bytes([KEY_FIRST_PREFIX + 1 if upper else KEY_FIRST_PREFIX])
    return bytes([KEY_FIRST_PREFIX]) + plain


# --- argument checks --------------------------------------------------------------------------------


def _check_long(name: str, value: int, error: type[CodecError]) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not INT64_MIN <= value <= INT64_MAX:
        raise error(FMT, f"{name} must be a Java long, got {value!r}")


def _check_int(name: str, value: int, error: type[CodecError]) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not INT32_MIN <= value <= INT32_MAX:
        raise error(FMT, f"{name} must be a Java int, got {value!r}")


def _encode_long(name: str, value: int) -> bytes:
    _check_long(name, value, EncodeError)
    return encode_int64(value)


def _encode_int(name: str, value: int) -> bytes:
    _check_int(name, value, EncodeError)
    return encode_int32(value)
