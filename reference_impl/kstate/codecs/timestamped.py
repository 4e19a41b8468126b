"""KIP-258 timestamped values: ``[timestamp int64 BE][raw value]`` (spec/timestamped.md, TSKV-*).

``ValueAndTimestampSerializer``/``Deserializer``, ``TimestampedBytesStore.convertToTimestampedFormat``
and ``RecordConverters.rawValueToTimestampedValue``. A null value is a null (a delete), never 8 bytes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kstate.codecs.primitives import INT64_MAX, INT64_MIN, bytes_of, encode_int64, pack_int64, read_int64
from kstate.errors import DecodeError

FORMAT = "value-and-timestamp"
TIMESTAMP_SIZE = 8
#: ``ConsumerRecord.NO_TIMESTAMP``: the timestamp given to legacy values without one (TSKV-5).
NO_TIMESTAMP = -1


def encode_value_and_timestamp(value: bytes | None, timestamp: int) -> bytes | None:
    """``[timestamp][value]``; a null value gives null, an empty value gives the 8 timestamp bytes (TSKV-1, TSKV-2)."""
    if value is None:
        return None
    return encode_int64(timestamp) + bytes_of(FORMAT, "the value", value)


def _require_timestamp(data: bytes) -> None:
    if len(data) < TIMESTAMP_SIZE:
        # Kafka: IndexOutOfBoundsException from ByteBuffer.put(src, 0, 8).
        raise DecodeError(FORMAT, f"need {TIMESTAMP_SIZE} timestamp bytes, got {len(data)}", 0)


def decode_value_and_timestamp(data: bytes | None) -> tuple[bytes, int] | None:
    """``(raw value, timestamp)``, or None for null; fewer than 8 bytes is refused (TSKV-1, TSKV-3)."""
    if data is None:
        return None
    _require_timestamp(data)
    return bytes(data[TIMESTAMP_SIZE:]), read_int64(data, 0, FORMAT)[0]


def raw_value(data: bytes) -> bytes:
    """``ValueAndTimestampDeserializer.rawValue``: the bytes after the timestamp (TSKV-3)."""
    _require_timestamp(data)
    return bytes(data[TIMESTAMP_SIZE:])


def timestamp_of(data: bytes) -> int:
    """``ValueAndTimestampDeserializer.timestamp``: the first 8 bytes as a big-endian int64 (TSKV-3)."""
    _require_timestamp(data)
    return read_int64(data, 0, FORMAT)[0]


def convert_to_timestamped_format(plain: bytes | None) -> bytes | None:
    """``TimestampedBytesStore.convertToTimestampedFormat``: ``FF``×8 (timestamp -1) + plain value (TSKV-5)."""
    return encode_value_and_timestamp(plain, NO_TIMESTAMP)


def raw_value_to_timestamped_value(record_value: bytes | None, record_timestamp: int) -> bytes | None:
    """``RecordConverters.rawValueToTimestampedValue``: the changelog record's timestamp is prepended (TSKV-6)."""
    return encode_value_and_timestamp(record_value, record_timestamp)


def raw_rows_to_timestamped_values(
    rows: Iterable[tuple[bytes, bytes | None, int, Any]],
) -> list[tuple[bytes, bytes | None]]:
    """``(key, value, timestamp, _)`` changelog rows to ``(key, rawValueToTimestampedValue)`` entries (TSKV-6).

    The bytes of :func:`raw_value_to_timestamped_value` per row, in one pass: restore converts whole batches.
    """
    pack = pack_int64
    checked = raw_value_to_timestamped_value  # anything but an int64 and bytes: it converts or names the problem
    return [(key, None if value is None else pack(timestamp) + value
             if type(timestamp) is int and type(value) is bytes and INT64_MIN <= timestamp <= INT64_MAX
             else checked(value, timestamp))
            for key, value, timestamp, _headers in rows]


def values_are_same_and_time_is_increasing(
    old: bytes | None, new: bytes | None, *, same_reference: bool | None = None
) -> bool:
    """``ValueAndTimestampSerializer.valuesAreSameAndTimeIsIncreasing`` (TSKV-4).

    ``same_reference`` stands for Java's ``old == new`` identity test; by default ``old is new``.
    """
    if same_reference is None:
        same_reference = old is new
    if same_reference or (old is None and new is None):
        # Java's ``old == new``; two nulls are always the same reference.
        return True
    if old is None or new is None:
        return False
    if len(old) != len(new):
        # Checked before any timestamp is read, so values shorter than 8 bytes pass here in Kafka too.
        return False
    _require_timestamp(old)
    if read_int64(new, 0, FORMAT)[0] <= read_int64(old, 0, FORMAT)[0]:
        return False
    return old[TIMESTAMP_SIZE:] == new[TIMESTAMP_SIZE:]
