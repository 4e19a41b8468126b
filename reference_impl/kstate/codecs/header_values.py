"""KIP-1271 header-aware values (spec/header-values.md, HV-*).

Header bytes: nothing at all for no headers; otherwise ``[varint count]`` then, per header,
``[varint keyLen][key UTF-8][varint valueLen | -1][value]`` with zig-zag varints, byte-identical to
the header section of a v2 ``DefaultRecord``. A stored value puts the headers first:
``ValueTimestampHeaders`` = ``[varint headersSize][header bytes][timestamp int64 BE][value]`` and
``AggregationWithHeaders`` = ``[varint headersSize][header bytes][aggregation]``. Header bytes are
decoded lazily: reading a value or a timestamp never parses them.

Decoders mirror Kafka's leniency by default (a negative count means no headers, trailing bytes are
ignored, invalid UTF-8 in a key is replaced as the JDK does); :func:`header_bytes_leniencies` names
what Kafka accepted, and ``strict=True`` refuses it.
"""

from __future__ import annotations

from collections.abc import Iterable

from kstate.codecs.java_text import decode_utf8_java, encode_utf8_java
from kstate.codecs.primitives import (
    INT64_MAX,
    INT64_MIN,
    SMALL_VARINTS,
    bytes_of,
    encode_int64,
    pack_int64,
    read_int64,
    read_varint,
    take,
    write_varint,
)
from kstate.codecs.record_headers import Header
from kstate.errors import DecodeError, EncodeError

HEADERS_FORMAT = "header-bytes"
VTH_FORMAT = "value-timestamp-headers"
AGG_FORMAT = "aggregation-with-headers"
NO_TIMESTAMP = -1
#: The one-byte prefix meaning "headersSize 0, no header bytes" (HV-8).
EMPTY_HEADERS_PREFIX = b"\x00"

HeaderList = list[tuple[str, bytes | None]]
HeaderInput = Iterable[Header | tuple[str, bytes | None]] | None


# --- header bytes ---------------------------------------------------------------------------------


def _pairs(headers: HeaderInput) -> HeaderList:
    if headers is None:
        return []
    out: HeaderList = []
    for item in headers:
        if isinstance(item, Header):
            key, value = item.key, item.value
        elif isinstance(item, (tuple, list)) and len(item) == 2:
            key, value = item
        else:
            raise EncodeError(HEADERS_FORMAT, f"a header is a (key, value) pair, got {type(item).__name__}")
        if key is None:
            raise EncodeError(HEADERS_FORMAT, "null header key")
        if value is not None and not isinstance(value, (bytes, bytearray, memoryview)):
            raise EncodeError(HEADERS_FORMAT, f"header value must be bytes or None, got {type(value).__name__}")
        out.append((key, None if value is None else bytes(value)))
    return out


def _encode_checked(headers: HeaderInput) -> bytes:
    pairs = _pairs(headers)
    if not pairs:
        return b""
    out = bytearray(write_varint(len(pairs)))
    for key, value in pairs:
        key_bytes = encode_utf8_java(key)
        out += write_varint(len(key_bytes))
        out += key_bytes
        if value is None:
            out += write_varint(-1)
        else:
            out += write_varint(len(value))
            out += value
    return bytes(out)


_NULL_VALUE_LENGTH = write_varint(-1)
_ONE_HEADER = write_varint(1)
#: Header key -> ``[varint keyLen][key UTF-8]``: changelog headers reuse a handful of keys.
_KEY_BYTES: dict[str, bytes] = {}
_KEY_BYTES_LIMIT = 1024


def _encoded_key(key: str) -> bytes:
    key_bytes = encode_utf8_java(key)
    encoded = write_varint(len(key_bytes)) + key_bytes
    if len(_KEY_BYTES) < _KEY_BYTES_LIMIT:
        _KEY_BYTES[key] = encoded
    return encoded


def _encode_pairs_fast(headers: list[tuple[str, bytes | None]] | tuple[tuple[str, bytes | None], ...]) -> bytes | None:
    """The bytes of ``(str, bytes | None)`` pairs, or None if any item needs :func:`_encode_checked`."""
    parts = [write_varint(len(headers))]
    append = parts.append
    keys = _KEY_BYTES
    short = SMALL_VARINTS
    try:
        for key, value in headers:
            if type(key) is not str:
                return None
            append(keys.get(key) or _encoded_key(key))
            if value is None:
                append(_NULL_VALUE_LENGTH)
            elif type(value) is bytes:
                size = len(value)
                append(short[size] if size < 64 else write_varint(size))
                append(value)
            else:
                return None
    except (TypeError, ValueError):  # not a pair: the checked path names the problem
        return None
    return b"".join(parts)


def encode_headers(headers: HeaderInput) -> bytes:
    """``HeadersSerializer.serialize``: empty for null or no headers, else count + headers in order (HV-1, HV-2)."""
    if not headers:
        return b""
    if type(headers) is list or type(headers) is tuple:
        # Restore converts every changelog record: plain pairs skip the per-item checks and copies.
        fast = _encode_pairs_fast(headers)
        if fast is not None:
            return fast
    return _encode_checked(headers)


def _read_varint_noting(data: bytes, pos: int, what: str, notes: list[str] | None) -> tuple[int, int]:
    value, end = read_varint(data, pos)
    if notes is not None and data[pos:end] != write_varint(value):
        notes.append(f"non-canonical varint for the {what} at byte {pos}")
    return value, end


def _parse_headers(data: bytes, notes: list[str] | None) -> HeaderList:
    # Mirrors HeadersDeserializer: every length is checked against the input before slicing (PRIM-8).
    if not data:
        return []
    count, pos = _read_varint_noting(data, 0, "header count", notes)
    if count < 0 and notes is not None:
        notes.append(f"negative header count {count} read as no headers")
    headers: HeaderList = []
    for _ in range(count):
        key_start = pos
        key_length, pos = _read_varint_noting(data, pos, "header key length", notes)
        if key_length < 0:
            raise DecodeError(HEADERS_FORMAT, f"negative header key length {key_length}", key_start)
        key_bytes, pos = take(data, pos, key_length, HEADERS_FORMAT)
        key = decode_utf8_java(key_bytes)
        if notes is not None and key.encode("utf-8", "surrogatepass") != key_bytes:
            notes.append(f"invalid UTF-8 in the header key at byte {pos - key_length} replaced by U+FFFD")
        value_start = pos
        value_length, pos = _read_varint_noting(data, pos, "header value length", notes)
        value: bytes | None
        if value_length == -1:
            value = None
        elif value_length < 0:
            raise DecodeError(HEADERS_FORMAT, f"negative header value length {value_length}", value_start)
        else:
            value, pos = take(data, pos, value_length, HEADERS_FORMAT)
        headers.append((key, value))
    if pos < len(data) and notes is not None:
        notes.append(f"{len(data) - pos} trailing bytes after the headers ignored")
    return headers


def decode_headers(data: bytes | None, *, strict: bool = False) -> HeaderList:
    """``HeadersDeserializer.deserialize``: the headers in order, null values kept (HV-1, HV-2, HV-5).

    By default Kafka's leniency is reproduced (HV-5); ``strict`` refuses whatever Kafka merely tolerates.
    """
    if data is None:
        return []
    if not strict:
        return _parse_headers(data, None)
    notes: list[str] = []
    headers = _parse_headers(data, notes)
    if notes:
        raise DecodeError(HEADERS_FORMAT, "; ".join(notes))
    return headers


def header_bytes_leniencies(data: bytes | None) -> list[str]:
    """What in ``data`` Kafka accepts although no Kafka writer produces it; empty if canonical or refused."""
    notes: list[str] = []
    try:
        _parse_headers(data or b"", notes)
    except DecodeError:
        return []
    return notes


def _with_headers_prefix(header_bytes: bytes) -> bytes:
    return write_varint(len(header_bytes)) + header_bytes


# --- ValueTimestampHeaders --------------------------------------------------------------------------


class _LazyHeaders:
    """Raw header bytes decoded on first access to :attr:`headers`, once (HV-10)."""

    __slots__ = ("_decoded", "raw_headers")

    def __init__(self, raw_headers: bytes) -> None:
        self.raw_headers = raw_headers
        self._decoded: HeaderList | None = None

    @property
    def headers(self) -> HeaderList:
        """The decoded headers; a malformed header section raises :class:`DecodeError` here, not earlier."""
        if self._decoded is None:
            self._decoded = decode_headers(self.raw_headers)
        return list(self._decoded)

    @property
    def headers_decoded(self) -> bool:
        """Whether the header bytes have been parsed (the lazy-decoding probe of HV-10)."""
        return self._decoded is not None


class ValueTimestampHeaders(_LazyHeaders):
    """A decoded ``[headersSize][header bytes][timestamp][value]``; headers are parsed lazily (HV-6, HV-10)."""

    __slots__ = ("timestamp", "value")

    def __init__(self, value: bytes, timestamp: int, raw_headers: bytes = b"") -> None:
        super().__init__(raw_headers)
        self.value = value
        self.timestamp = timestamp

    @classmethod
    def make(cls, value: bytes, timestamp: int, headers: HeaderInput = None) -> ValueTimestampHeaders:
        """From decoded headers, as ``ValueTimestampHeaders.make`` (null headers are no headers)."""
        return cls(value, timestamp, encode_headers(headers))

    def to_bytes(self) -> bytes:
        return _with_headers_prefix(self.raw_headers) + encode_int64(self.timestamp) + self.value

    def __eq__(self, other: object) -> bool:
        # As ValueTimestampHeaders.equals: value, timestamp and the decoded headers.
        if not isinstance(other, ValueTimestampHeaders):
            return NotImplemented
        return (self.value, self.timestamp, self.headers) == (other.value, other.timestamp, other.headers)

    def __hash__(self) -> int:
        return hash((self.value, self.timestamp, tuple(self.headers)))

    def __repr__(self) -> str:
        shown = self.headers if self.headers_decoded else f"<{len(self.raw_headers)} raw bytes>"
        return f"ValueTimestampHeaders(value={self.value!r}, timestamp={self.timestamp}, headers={shown})"


def encode_value_timestamp_headers(value: bytes | None, timestamp: int, headers: HeaderInput) -> bytes | None:
    """``ValueTimestampHeadersSerializer.serialize``: headers first, then timestamp, then value; null stays null (HV-6, HV-7)."""
    if value is None:
        return None
    return (_with_headers_prefix(encode_headers(headers)) + encode_int64(timestamp)
            + bytes_of(VTH_FORMAT, "the value", value))


def _read_headers_size(data: bytes) -> tuple[int, int]:
    return read_varint(data, 0)


def decode_value_timestamp_headers(data: bytes | None) -> ValueTimestampHeaders | None:
    """``ValueTimestampHeadersDeserializer.deserialize``; header bytes are sliced, not parsed (HV-6, HV-10)."""
    if data is None:
        return None
    size, pos = _read_headers_size(data)
    raw_headers, pos = take(data, pos, size, VTH_FORMAT)
    timestamp, pos = read_int64(data, pos, VTH_FORMAT)
    return ValueTimestampHeaders(bytes(data[pos:]), timestamp, raw_headers)


def _skip_to(data: bytes, position: int, what: str) -> int:
    # ByteBuffer.position(n) accepts 0..limit: a negative headersSize moves backwards, as in Kafka.
    if position < 0 or position > len(data):
        raise DecodeError(VTH_FORMAT, f"{what} position {position} outside 0..{len(data)}", 0)
    return position


def raw_value_of(data: bytes | None, *, strict: bool = False) -> bytes | None:
    """``ValueTimestampHeadersDeserializer.value``: skips header bytes and timestamp unparsed (HV-9, HV-10)."""
    if data is None:
        return None
    size, pos = _read_headers_size(data)
    if strict and size < 0:
        raise DecodeError(VTH_FORMAT, f"negative headersSize {size}", 0)
    return bytes(data[_skip_to(data, pos + size + 8, "value") :])


def timestamp_of_headers_value(data: bytes | None, *, strict: bool = False) -> int:
    """``ValueTimestampHeadersDeserializer.timestamp``: skips header bytes unparsed (HV-9, HV-10)."""
    if data is None:
        raise DecodeError(VTH_FORMAT, "null value has no timestamp")
    size, pos = _read_headers_size(data)
    if strict and size < 0:
        raise DecodeError(VTH_FORMAT, f"negative headersSize {size}", 0)
    return read_int64(data, _skip_to(data, pos + size, "timestamp"), VTH_FORMAT)[0]


def raw_headers_of(data: bytes | None) -> bytes | None:
    """The header bytes of a header-aware value, unparsed; a negative or overlong size is refused (HV-9)."""
    if data is None:
        return None
    size, pos = _read_headers_size(data)
    return take(data, pos, size, VTH_FORMAT)[0]


def headers_of(data: bytes | None) -> HeaderList | None:
    """``ValueTimestampHeadersDeserializer.headers``: the decoded headers, without reading the timestamp (HV-9)."""
    raw = raw_headers_of(data)
    return None if raw is None else decode_headers(raw)


# --- AggregationWithHeaders --------------------------------------------------------------------------


class AggregationWithHeaders(_LazyHeaders):
    """A decoded ``[headersSize][header bytes][aggregation]`` (HV-11)."""

    __slots__ = ("aggregation",)

    def __init__(self, aggregation: bytes, raw_headers: bytes = b"") -> None:
        super().__init__(raw_headers)
        self.aggregation = aggregation

    def to_bytes(self) -> bytes:
        return _with_headers_prefix(self.raw_headers) + self.aggregation

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AggregationWithHeaders):
            return NotImplemented
        return (self.aggregation, self.headers) == (other.aggregation, other.headers)

    def __hash__(self) -> int:
        return hash((self.aggregation, tuple(self.headers)))


def encode_aggregation_with_headers(aggregation: bytes | None, headers: HeaderInput) -> bytes | None:
    """``AggregationWithHeadersSerializer.serialize``: headers then aggregation, no timestamp (HV-11)."""
    if aggregation is None:
        return None
    return _with_headers_prefix(encode_headers(headers)) + bytes_of(AGG_FORMAT, "the aggregation", aggregation)


def decode_aggregation_with_headers(data: bytes | None) -> AggregationWithHeaders | None:
    """``AggregationWithHeadersDeserializer.deserialize``: the rest after the header bytes is the aggregation (HV-11)."""
    if data is None:
        return None
    size, pos = _read_headers_size(data)
    raw_headers, pos = take(data, pos, size, AGG_FORMAT)
    return AggregationWithHeaders(bytes(data[pos:]), raw_headers)


def raw_aggregation_of(data: bytes | None) -> bytes | None:
    """``AggregationWithHeadersDeserializer.rawAggregation``: the aggregation, header bytes skipped unparsed (HV-11)."""
    if data is None:
        return None
    if not data:
        raise DecodeError(AGG_FORMAT, "empty input has no headersSize", 0)
    size, pos = _read_headers_size(data)
    start = pos + size
    if start < 0 or start > len(data):
        raise DecodeError(AGG_FORMAT, f"aggregation position {start} outside 0..{len(data)}", 0)
    return bytes(data[start:])


# --- conversions ------------------------------------------------------------------------------------


def convert_to_header_format(data: bytes | None) -> bytes | None:
    """``HeadersBytesStore.convertToHeaderFormat``: prepend ``00`` (headersSize 0) to any legacy payload (HV-8)."""
    if data is None:
        return None
    return EMPTY_HEADERS_PREFIX + bytes(data)


def convert_from_plain_to_header_format(data: bytes | None) -> bytes | None:
    """``HeadersBytesStore.convertFromPlainToHeaderFormat``: ``00`` + ``FF``×8 (timestamp -1) + plain value (HV-8)."""
    if data is None:
        return None
    return EMPTY_HEADERS_PREFIX + encode_int64(NO_TIMESTAMP) + bytes(data)


def raw_value_to_headers_value(record_value: bytes | None, record_timestamp: int, record_headers: HeaderInput) -> bytes | None:
    """``RecordConverters.rawValueToHeadersValue``: every record header, the record timestamp, the value (HV-12)."""
    return encode_value_timestamp_headers(record_value, record_timestamp, record_headers)


def raw_rows_to_headers_values(
    rows: Iterable[tuple[bytes, bytes | None, int, HeaderInput]],
) -> list[tuple[bytes, bytes | None]]:
    """``(key, value, timestamp, headers)`` changelog rows to ``(key, rawValueToHeadersValue)`` entries (HV-12).

    The same bytes as :func:`raw_value_to_headers_value` per row, in one loop: restore converts whole batches.
    """
    out: list[tuple[bytes, bytes | None]] = []
    append = out.append
    short = SMALL_VARINTS
    pack = pack_int64
    keys = _KEY_BYTES
    for key, value, timestamp, headers in rows:
        if type(value) is bytes and type(timestamp) is int and INT64_MIN <= timestamp <= INT64_MAX:
            if not headers:
                append((key, EMPTY_HEADERS_PREFIX + pack(timestamp) + value))
                continue
            if type(headers) is list or type(headers) is tuple:
                if len(headers) == 1 and type(headers[0]) is tuple and len(headers[0]) == 2:
                    # A lone header skips the general encoder's part list and second join (HV-1, HV-2).
                    header_key, header_value = headers[0]
                    if type(header_key) is str and type(header_value) is bytes:
                        key_bytes = keys.get(header_key) or _encoded_key(header_key)
                        length = len(header_value)
                        length_bytes = short[length] if length < 64 else write_varint(length)
                        size = 1 + len(key_bytes) + len(length_bytes) + length
                        append((key, b"".join((short[size] if size < 64 else write_varint(size), _ONE_HEADER,
                                               key_bytes, length_bytes, header_value, pack(timestamp), value))))
                        continue
                header_bytes = _encode_pairs_fast(headers)
                if header_bytes is not None:
                    size = len(header_bytes)
                    append((key, b"".join((short[size] if size < 64 else write_varint(size), header_bytes,
                                           pack(timestamp), value))))
                    continue
        append((key, raw_value_to_headers_value(value, timestamp, headers)))  # the checked path
    return out


def raw_value_to_session_headers_value(record_value: bytes | None, record_headers: HeaderInput) -> bytes | None:
    """``RecordConverters.rawValueToSessionHeadersValue``: every record header, then the aggregation (HV-12)."""
    return encode_aggregation_with_headers(record_value, record_headers)
