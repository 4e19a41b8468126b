"""Session store keys: the plain, time-first and key-first schemas and their range bounds (spec/session-keys.md, SESS-*).

The session key puts the window END before the start. Every function is pure; input shorter than a
schema's fixed part raises :class:`DecodeError`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from kstate.codecs.primitives import INT64_MAX, INT64_MIN, encode_int64, java_div, read_int64, segment_id
from kstate.codecs.window_keys import (
    KEY_FIRST_PREFIX,
    MIN_SEGMENT_INTERVAL_DEFAULT,
    PREFIX_SIZE,
    TIME_FIRST_PREFIX,
    TIMESTAMP_SIZE,
    ordered_lower_range,
    ordered_upper_range,
)
from kstate.errors import CodecError, DecodeError, EncodeError, NullKeyError

# Window and session keys share the one-byte schema prefixes (WIN-2, WIN-3, SESS-2, SESS-3).
SUFFIX_SIZE = 2 * TIMESTAMP_SIZE

FMT = "session-key"


class SessionSchema(Enum):
    """The three store-key layouts of session stores (SESS-1, SESS-2, SESS-3)."""

    PLAIN = "key_schema"
    TIME_FIRST = "time_first"
    KEY_FIRST = "key_first"


@dataclass(frozen=True)
class SessionStoreKey:
    """A decoded session key: serialized record key, window start and window end (not yet validated)."""

    key: bytes
    start: int
    end: int


def validate_session_window(start: int, end: int, *, error: type[CodecError] = DecodeError) -> None:
    """``SessionWindow``'s checks: start >= 0 and end >= start; start == end is a valid session (SESS-4)."""
    if start < 0:
        raise error("window", "window start cannot be negative")
    if end < start:
        raise error("window", "window end cannot be smaller than window start")


def to_binary(schema: SessionSchema, key: bytes | None, start: int, end: int) -> bytes:
    """``toBinary(key, start, end)`` of ``schema``, end first (SESS-1..3, SESS-5, SESS-6).

    The window is not validated, as in Kafka. Only the time-first schema accepts a null key.
    """
    times = _encode_long("end", end) + _encode_long("start", start)
    if schema is SessionSchema.TIME_FIRST:
        return bytes([TIME_FIRST_PREFIX]) + times + (key or b"")
    if key is None:
        raise NullKeyError("session key: the serialized key is null")
    if schema is SessionSchema.PLAIN:
        return key + times
    return bytes([KEY_FIRST_PREFIX]) + key + times


def min_key_length(schema: SessionSchema) -> int:
    """The fixed part of a session key: 16 bytes, 17 for the prefixed schemas (SESS-4)."""
    return SUFFIX_SIZE if schema is SessionSchema.PLAIN else PREFIX_SIZE + SUFFIX_SIZE


def decode(schema: SessionSchema, data: bytes) -> SessionStoreKey:
    """Split a session key into key bytes, start and end (SESS-4); the window is not validated here."""
    need = min_key_length(schema)
    if len(data) < need:
        raise DecodeError(FMT, f"a {schema.value} session key needs at least {need} bytes, got {len(data)}", 0)
    if schema is SessionSchema.TIME_FIRST:
        end, pos = read_int64(data, PREFIX_SIZE, FMT)
        start, pos = read_int64(data, pos, FMT)
        return SessionStoreKey(data[pos:], start, end)
    end, pos = read_int64(data, len(data) - SUFFIX_SIZE, FMT)
    start, _ = read_int64(data, pos, FMT)
    key_start = 0 if schema is SessionSchema.PLAIN else PREFIX_SIZE
    return SessionStoreKey(data[key_start : len(data) - SUFFIX_SIZE], start, end)


def extract_window(schema: SessionSchema, data: bytes) -> tuple[int, int]:
    """``extractWindow``: the validated session window ``(start, end)`` of a key (SESS-4)."""
    decoded = decode(schema, data)
    validate_session_window(decoded.start, decoded.end)
    return decoded.start, decoded.end


def to_binary_windowed(schema: SessionSchema, key: bytes | None, start: int, end: int) -> bytes:
    """``toBinary(Windowed, Serializer)``: the ``SessionWindow`` is built (and validated) first (SESS-10)."""
    _check_long("start", start, EncodeError)
    _check_long("end", end, EncodeError)
    validate_session_window(start, end, error=EncodeError)
    return to_binary(schema, key, start, end)


def extract_window_bytes_from_non_prefix_session_key(data: bytes) -> bytes:
    """Time-first ``extractWindowBytesFromNonPrefixSessionKey``: ``[key][end][start]`` to ``[00][end][start][key]`` (SESS-9)."""
    if len(data) < SUFFIX_SIZE:
        raise DecodeError(FMT, f"a plain session key needs at least {SUFFIX_SIZE} bytes, got {len(data)}", 0)
    key_end = len(data) - SUFFIX_SIZE
    return bytes([TIME_FIRST_PREFIX]) + data[key_end:] + data[:key_end]


def prefix_non_prefix_session_key(data: bytes) -> bytes:
    """Key-first ``prefixNonPrefixSessionKey``: prepend 0x01; Kafka accepts any bytes (SESS-9)."""
    return bytes([KEY_FIRST_PREFIX]) + data


# --- segments ---------------------------------------------------------------------------------------


def default_segment_interval(retention: int) -> int:
    """``RocksDbSessionBytesStoreSupplier.segmentIntervalMs``: ``max(retention / 2, 60000)`` (SESS-11)."""
    _check_long("retention", retention, EncodeError)
    if retention < 0:
        raise EncodeError("session-store", "retention period cannot be negative")
    return max(java_div(retention, 2), MIN_SEGMENT_INTERVAL_DEFAULT)


def key_segment_id(schema: SessionSchema, data: bytes, segment_interval: int) -> int:
    """The segment of a session key: its END / interval with Java truncation (SESS-11)."""
    if segment_interval < 1:
        raise EncodeError("session-store", "segment interval cannot be zero or negative")
    return segment_id(decode(schema, data).end, segment_interval)


# --- range bounds -----------------------------------------------------------------------------------


def lower_range(schema: SessionSchema, key: bytes | None, time_from: int) -> bytes | None:
    """``lowerRange`` of ``schema`` (SESS-7); None stands for Kafka's null (no bound)."""
    _check_long("from", time_from, EncodeError)
    if schema is SessionSchema.TIME_FIRST:
        if key is None:
            return bytes([TIME_FIRST_PREFIX]) + encode_int64(time_from)
        return bytes([TIME_FIRST_PREFIX]) + encode_int64(time_from) + encode_int64(0) + key
    plain = None if key is None else ordered_lower_range(key, bytes(SUFFIX_SIZE))
    return plain if schema is SessionSchema.PLAIN else _wrap_key_first(plain, upper=False)


def upper_range(schema: SessionSchema, key: bytes | None, time_to: int) -> bytes | None:
    """``upperRange`` of ``schema`` (SESS-7, SESS-8); None stands for Kafka's null (no bound)."""
    _check_long("to", time_to, EncodeError)
    max_suffix = encode_int64(INT64_MAX) + encode_int64(time_to)
    if schema is SessionSchema.TIME_FIRST:
        if key is None:
            return bytes([TIME_FIRST_PREFIX + 1])
        return bytes([TIME_FIRST_PREFIX]) + max_suffix + key
    plain = None if key is None else ordered_upper_range(key, max_suffix)
    return plain if schema is SessionSchema.PLAIN else _wrap_key_first(plain, upper=True)


def lower_range_fixed_size(schema: SessionSchema, key: bytes | None, time_from: int) -> bytes:
    """``lowerRangeFixedSize``: the key of session (0, max(0, from)) (SESS-7)."""
    _check_long("from", time_from, EncodeError)
    return to_binary(schema, key, 0, max(0, time_from))


def upper_range_fixed_size(schema: SessionSchema, key: bytes | None, time_to: int) -> bytes:
    """``upperRangeFixedSize``: the key of session (to, Long.MAX) (SESS-7).

    The plain and key-first schemas build a ``SessionWindow(to, MAX)`` first, so a negative ``to`` is
    refused; the time-first schema writes the bytes without that check.
    """
    _check_long("to", time_to, EncodeError)
    if schema is not SessionSchema.TIME_FIRST:
        validate_session_window(time_to, INT64_MAX, error=EncodeError)
    return to_binary(schema, key, time_to, INT64_MAX)


def _wrap_key_first(plain: bytes | None, *, upper: bool) -> bytes:
    # A null plain bound still needs the prefix: lower scans from 0x01, upper stops before 0x02.
    if plain is None:
        return bytes([KEY_FIRST_PREFIX + 1 if upper else KEY_FIRST_PREFIX])
    return bytes([KEY_FIRST_PREFIX]) + plain


def _check_long(name: str, value: int, error: type[CodecError]) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not INT64_MIN <= value <= INT64_MAX:
        raise error(FMT, f"{name} must be a Java long, got {value!r}")


def _encode_long(name: str, value: int) -> bytes:
    _check_long(name, value, EncodeError)
    return encode_int64(value)
