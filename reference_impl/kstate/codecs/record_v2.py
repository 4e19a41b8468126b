"""The v2 record (``DefaultRecord``, magic 2) and its header section (spec/record-headers.md, HDR-7..HDR-15).

A record is ``[varint bodyLength]`` then the body: ``[int8 attributes][varlong timestampDelta]
[varint offsetDelta][varint keyLength | -1][key][varint valueLength | -1][value][varint headerCount]``
and per header ``[varint keyLength][key UTF-8][varint valueLength | -1][value]``. Every varint is
zig-zag. Decoders take the whole input, check each length against what remains before slicing, and
raise only :class:`DecodeError`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kstate.codecs.java_text import decode_utf8_java
from kstate.codecs.primitives import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    read_varint,
    read_varlong,
    take,
    to_int64,
    write_varint,
    write_varlong,
)
from kstate.codecs.record_headers import Header
from kstate.errors import DecodeError, EncodeError

RECORD_FORMAT = "record-v2"
HEADERS_FORMAT = "record-v2-headers"
NULL_LENGTH = -1
#: The only attributes value Kafka writes; no record-level attribute bit is in use (HDR-8).
ATTRIBUTES = 0

HeaderPair = tuple[str, bytes | None]
HeaderInput = Iterable[Header | HeaderPair]


@dataclass(frozen=True, slots=True)
class DecodedRecord:
    """One record as ``DefaultRecord.readFrom`` sees it.

    ``size_in_bytes`` is Kafka's ``sizeInBytes()``: the body plus the *minimal* size of its length
    varint, whatever the input used; ``bytes_consumed`` is where the record really ended (HDR-14).
    """

    size_in_bytes: int
    bytes_consumed: int
    attributes: int
    offset: int
    timestamp: int
    offset_delta: int
    timestamp_delta: int
    key: bytes | None
    value: bytes | None
    headers: list[HeaderPair]


# --- sizes ------------------------------------------------------------------------------------------


def size_of_varint(value: int) -> int:
    """Bytes of the zig-zag varint of a Java int (HDR-7)."""
    return len(write_varint(value))


def _header_key_bytes(key: object) -> bytes:
    if key is None:
        raise EncodeError(RECORD_FORMAT, "Invalid null header key found in headers")
    if not isinstance(key, str):
        raise EncodeError(RECORD_FORMAT, f"header key must be a string, got {type(key).__name__}")
    try:
        return key.encode("utf-8")
    except UnicodeEncodeError as exc:
        # Kafka writes '?' but sizes the record as if the surrogate took 3 or 4 bytes (HDR-15).
        raise EncodeError(RECORD_FORMAT, f"header key {key!r} holds an unpaired surrogate") from exc


def _pairs(headers: HeaderInput | None) -> list[tuple[bytes, bytes | None]]:
    if headers is None:
        raise EncodeError(RECORD_FORMAT, "Headers cannot be null")
    out: list[tuple[bytes, bytes | None]] = []
    for item in headers:
        key, value = (item.key, item.value) if isinstance(item, Header) else item
        if value is not None and not isinstance(value, (bytes, bytearray, memoryview)):
            raise EncodeError(RECORD_FORMAT, f"header value must be bytes or None, got {type(value).__name__}")
        out.append((_header_key_bytes(key), None if value is None else bytes(value)))
    return out


def _sized_field_length(length: int) -> int:
    return size_of_varint(NULL_LENGTH) if length < 0 else size_of_varint(length) + length


def _headers_size(pairs: list[tuple[bytes, bytes | None]]) -> int:
    size = size_of_varint(len(pairs))
    for key, value in pairs:
        size += _sized_field_length(len(key)) + _sized_field_length(NULL_LENGTH if value is None else len(value))
    return size


def _check_deltas(offset_delta: int, timestamp_delta: int) -> None:
    for name, value, lo, hi in (("offset delta", offset_delta, INT32_MIN, INT32_MAX),
                                ("timestamp delta", timestamp_delta, INT64_MIN, INT64_MAX)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise EncodeError(RECORD_FORMAT, f"{name} must be an int, got {type(value).__name__}")
        if not lo <= value <= hi:
            raise EncodeError(RECORD_FORMAT, f"{name} {value} is outside [{lo}, {hi}]")


def size_of_body(offset_delta: int, timestamp_delta: int, key_size: int, value_size: int,
                 headers: HeaderInput | None) -> int:
    """``DefaultRecord.sizeOfBodyInBytes``: the body, without the length prefix; a negative size is null (HDR-7)."""
    _check_deltas(offset_delta, timestamp_delta)
    return (1 + size_of_varint(offset_delta) + len(write_varlong(timestamp_delta))
            + _sized_field_length(key_size) + _sized_field_length(value_size) + _headers_size(_pairs(headers)))


def size_in_bytes(offset_delta: int, timestamp_delta: int, key_size: int, value_size: int,
                  headers: HeaderInput | None) -> int:
    """``DefaultRecord.sizeInBytes``: the body plus its varint length prefix (HDR-7)."""
    body = size_of_body(offset_delta, timestamp_delta, key_size, value_size, headers)
    return size_of_varint(body) + body


# --- encoding ---------------------------------------------------------------------------------------


def _sized_field(data: bytes | None) -> bytes:
    return write_varint(NULL_LENGTH) if data is None else write_varint(len(data)) + data


def _encode_pairs(pairs: list[tuple[bytes, bytes | None]]) -> bytes:
    out = bytearray(write_varint(len(pairs)))
    for key, value in pairs:
        out += _sized_field(key)
        out += _sized_field(value)
    return bytes(out)


def encode_record_headers(headers: HeaderInput | None) -> bytes:
    """The header section: count (``00`` when empty, never omitted) then each header in order (HDR-11, HDR-12)."""
    return _encode_pairs(_pairs(headers))


def write_record(offset_delta: int, timestamp_delta: int, key: bytes | None, value: bytes | None,
                 headers: HeaderInput | None) -> bytes:
    """``DefaultRecord.writeTo``: the length-prefixed v2 record (HDR-7..HDR-12)."""
    _check_deltas(offset_delta, timestamp_delta)
    for name, field in (("key", key), ("value", value)):
        if field is not None and not isinstance(field, (bytes, bytearray, memoryview)):
            raise EncodeError(RECORD_FORMAT, f"record {name} must be bytes or None, got {type(field).__name__}")
    body = (bytes([ATTRIBUTES]) + write_varlong(timestamp_delta) + write_varint(offset_delta)
            + _sized_field(None if key is None else bytes(key)) + _sized_field(None if value is None else bytes(value))
            + _encode_pairs(_pairs(headers)))
    if len(body) > INT32_MAX:
        raise EncodeError(RECORD_FORMAT, f"record body of {len(body)} bytes exceeds a Java int")
    return write_varint(len(body)) + body


# --- decoding ---------------------------------------------------------------------------------------


def _read_nullable(data: bytes, pos: int, fmt: str) -> tuple[bytes | None, int]:
    # Utils.readBytes: every negative length, not only -1, reads as null (HDR-13).
    length, pos = read_varint(data, pos)
    if length < 0:
        return None, pos
    return take(data, pos, length, fmt)


def _read_length(data: bytes, pos: int, fmt: str, what: str, too_long: str) -> tuple[int, int]:
    # A count or length read as a varint: refused before use when negative or larger than the bytes left.
    at = pos
    length, pos = read_varint(data, pos)
    if length < 0:
        raise DecodeError(fmt, f"negative {what} {length}", at)
    if length > len(data) - pos:
        raise DecodeError(fmt, f"{what} {length} {too_long} the {len(data) - pos} bytes left", at)
    return length, pos


def _read_headers(data: bytes, pos: int, fmt: str) -> tuple[list[HeaderPair], int]:
    count, pos = _read_length(data, pos, fmt, "header count", "is larger than")
    headers: list[HeaderPair] = []
    for _ in range(count):
        key_at = pos
        key_length, pos = read_varint(data, pos)
        if key_length < 0:
            raise DecodeError(fmt, f"negative header key length {key_length}", key_at)
        key_bytes, pos = take(data, pos, key_length, fmt)
        value, pos = _read_nullable(data, pos, fmt)
        headers.append((decode_utf8_java(key_bytes), value))
    return headers, pos


def decode_record_headers(data: bytes, offset: int = 0) -> tuple[list[HeaderPair], int]:
    """Read a header section at ``offset``; returns the headers in order and the offset after them (HDR-13)."""
    return _read_headers(data, offset, HEADERS_FORMAT)


def read_record(data: bytes, base_offset: int, base_timestamp: int, offset: int = 0) -> DecodedRecord:
    """``DefaultRecord.readFrom``: one record at ``offset``; bytes after it are left alone (HDR-7, HDR-13, HDR-14)."""
    start = offset
    body_length, pos = _read_length(data, offset, RECORD_FORMAT, "record length", "exceeds")
    body_end = pos + body_length
    # Fields are read inside the body only: one that would run past it is refused, as Kafka's final
    # size check refuses it after the fact.
    body = data[:body_end]
    if pos >= body_end:
        raise DecodeError(RECORD_FORMAT, "record body has no attributes byte", pos)
    attributes = body[pos]
    pos += 1
    timestamp_delta, pos = read_varlong(body, pos)
    offset_delta, pos = read_varint(body, pos)
    key, pos = _read_nullable(body, pos, RECORD_FORMAT)
    value, pos = _read_nullable(body, pos, RECORD_FORMAT)
    headers, pos = _read_headers(body, pos, RECORD_FORMAT)
    if pos != body_end:
        raise DecodeError(RECORD_FORMAT, f"{body_end - pos} bytes left in the record body after the headers", pos)
    return DecodedRecord(
        size_in_bytes=size_of_varint(body_length) + body_length,
        bytes_consumed=body_end - start,
        attributes=attributes,
        offset=to_int64(base_offset + offset_delta),
        timestamp=to_int64(base_timestamp + timestamp_delta),
        offset_delta=offset_delta,
        timestamp_delta=timestamp_delta,
        key=key,
        value=value,
        headers=headers,
    )
