"""The suite's own model of the small wire pieces: varints, big-endian int64 and header bytes.

Written from the spec (PRIM-1, PRIM-5, PRIM-6, HV-1, HV-2, HDR-1), never imported from the implementation
under test, so that the models and tests built on it can catch that implementation's bugs.
"""

from __future__ import annotations

from collections.abc import Sequence

HeaderPairs = Sequence[tuple[str, "bytes | None"]]

INT32_MASK = 0xFFFFFFFF
INT64_MASK = 0xFFFFFFFFFFFFFFFF


def unsigned_varint(value: int) -> bytes:
    """A non-negative number as LEB128: seven-bit groups, low first, the top bit set on all but the last (PRIM-5)."""
    if value < 0:
        raise ValueError(f"LEB128 writes non-negative numbers, not {value}")
    groups = [value & 0x7F]
    while value > 0x7F:
        value >>= 7
        groups.append(value & 0x7F)
    return bytes(group | 0x80 for group in groups[:-1]) + bytes(groups[-1:])


def zigzag_varint(value: int) -> bytes:
    """A Java int as a zig-zag varint (``ByteUtils.writeVarint``, PRIM-6)."""
    return unsigned_varint(((value << 1) ^ (value >> 31)) & INT32_MASK)


def zigzag_varlong(value: int) -> bytes:
    """A Java long as a zig-zag varlong (``ByteUtils.writeVarlong``, PRIM-6)."""
    return unsigned_varint(((value << 1) ^ (value >> 63)) & INT64_MASK)


def read_zigzag_varint(data: bytes, pos: int) -> tuple[int, int]:
    """The zig-zag varint at ``pos`` and the position after it."""
    u = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        u |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (u >> 1) ^ -(u & 1), pos
        shift += 7


def int64(value: int) -> bytes:
    """Eight bytes, big-endian two's complement (PRIM-1)."""
    return value.to_bytes(8, "big", signed=True)


def sized(data: bytes | None, null_length: int = -1) -> bytes:
    """``data`` after its length as a zig-zag varint; ``None`` as ``null_length`` alone."""
    return zigzag_varint(null_length) if data is None else zigzag_varint(len(data)) + data


def header_section(headers: HeaderPairs, count: int | None = None) -> bytes:
    """A record's headers: the count (``len(headers)`` unless given), then each key and value sized (HDR-1)."""
    body = zigzag_varint(len(headers) if count is None else count)
    for key, value in headers:
        body += sized(key.encode("utf-8")) + sized(value)
    return body


def header_bytes(headers: HeaderPairs) -> bytes:
    """KIP-1271 header bytes: nothing for no headers, else the record's header section (HV-1, HV-2)."""
    return header_section(headers) if headers else b""


def decode_header_bytes(data: bytes) -> tuple[tuple[str, bytes | None], ...]:
    """The header pairs of well-formed KIP-1271 header bytes, in order."""
    if not data:
        return ()
    count, pos = read_zigzag_varint(data, 0)
    headers: list[tuple[str, bytes | None]] = []
    for _ in range(count):
        key_length, pos = read_zigzag_varint(data, pos)
        key = data[pos : pos + key_length].decode("utf-8")
        pos += key_length
        value_length, pos = read_zigzag_varint(data, pos)
        if value_length < 0:
            headers.append((key, None))
        else:
            headers.append((key, data[pos : pos + value_length]))
            pos += value_length
    return tuple(headers)
