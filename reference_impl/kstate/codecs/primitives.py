"""Primitive encodings shared by every Kafka Streams format (spec/primitives.md, PRIM-*).

Fixed-width integers are big-endian two's complement; varints are Kafka's ``ByteUtils`` encodings.
Readers take ``(data, offset)`` and return ``(value, next_offset)`` so that composite decoders can
report the exact offset of a failure.
"""

from __future__ import annotations

import struct

from kstate.errors import DecodeError, EncodeError

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1
INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1

_INT64 = struct.Struct(">q")
#: ``struct`` packing of an int64 already known to be in range, for loops that check it themselves (PRIM-1).
pack_int64 = _INT64.pack
_INT32 = struct.Struct(">i")


def _check_range(fmt: str, value: int, lo: int, hi: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise EncodeError(fmt, f"expected an int, got {type(value).__name__}")
    if not lo <= value <= hi:
        raise EncodeError(fmt, f"{value} is outside [{lo}, {hi}]")


def bytes_of(fmt: str, what: str, value: object) -> bytes:
    """``value`` as bytes if it is bytes-like; anything else is an :class:`EncodeError` naming ``what``."""
    if type(value) is bytes:
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    raise EncodeError(fmt, f"{what} must be bytes, got {type(value).__name__}")


def encode_int64(value: int) -> bytes:
    """Eight bytes, big-endian two's complement (PRIM-1)."""
    if type(value) is int and INT64_MIN <= value <= INT64_MAX:  # the hot path: one check, no call
        return _INT64.pack(value)
    _check_range("int64", value, INT64_MIN, INT64_MAX)
    return _INT64.pack(value)


def encode_int32(value: int) -> bytes:
    """Four bytes, big-endian two's complement (PRIM-1)."""
    _check_range("int32", value, INT32_MIN, INT32_MAX)
    return _INT32.pack(value)


def read_int64(data: bytes, offset: int = 0, fmt: str = "int64") -> tuple[int, int]:
    """Read a big-endian int64 at ``offset`` (PRIM-1); ``fmt`` names the enclosing format in errors."""
    end = offset + 8
    if offset < 0 or end > len(data):
        raise DecodeError(fmt, f"need 8 bytes for an int64, {max(len(data) - offset, 0)} left", offset)
    return _INT64.unpack_from(data, offset)[0], end


def read_int32(data: bytes, offset: int = 0, fmt: str = "int32") -> tuple[int, int]:
    """Read a big-endian int32 at ``offset`` (PRIM-1)."""
    end = offset + 4
    if offset < 0 or end > len(data):
        raise DecodeError(fmt, f"need 4 bytes for an int32, {max(len(data) - offset, 0)} left", offset)
    return _INT32.unpack_from(data, offset)[0], end


def to_int32(value: int) -> int:
    """Wrap an arbitrary int to Java ``int`` (two's complement, 32 bits)."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def to_int64(value: int) -> int:
    """Wrap an arbitrary int to Java ``long`` (two's complement, 64 bits)."""
    value &= 0xFFFFFFFFFFFFFFFF
    return value - (1 << 64) if value & 0x8000000000000000 else value


# --- ordering -------------------------------------------------------------------------------------


def compare_unsigned(a: bytes, b: bytes) -> int:
    """Kafka's ``Bytes.BYTES_LEXICO_COMPARATOR``: unsigned lexicographic, a prefix sorts first (PRIM-2)."""
    return (a > b) - (a < b)


def increment(data: bytes) -> bytes:
    """``Bytes.increment``: add one to ``data`` as a big-endian unsigned number (PRIM-3).

    Raises :class:`EncodeError` where Kafka throws ``IndexOutOfBoundsException`` (empty or all-``FF``).
    """
    if not data.rstrip(b"\xff"):  # empty or all-FF (a C scan, not one Python step per byte)
        raise EncodeError("bytes-increment", "carry overflows an empty or all-0xFF array")
    as_int = int.from_bytes(data, "big") + 1
    return as_int.to_bytes(len(data), "big")


def increment_without_overflow(data: bytes) -> bytes | None:
    """``RocksDBStore.incrementWithoutOverflow``: like :func:`increment`, None meaning unbounded (PRIM-3)."""
    if not data.rstrip(b"\xff"):
        return None
    return (int.from_bytes(data, "big") + 1).to_bytes(len(data), "big")


def java_div(dividend: int, divisor: int) -> int:
    """Java ``long`` division, truncating toward zero (PRIM-4)."""
    if divisor == 0:
        raise EncodeError("segment-id", "division by zero")
    quotient = abs(dividend) // abs(divisor)
    quotient = quotient if (dividend >= 0) == (divisor > 0) else -quotient
    # Long.MIN_VALUE / -1 overflows in Java and wraps back to Long.MIN_VALUE.
    return quotient if quotient <= INT64_MAX else INT64_MIN


def segment_id(timestamp: int, segment_interval: int) -> int:
    """``AbstractSegments.segmentId``: ``timestamp / segmentInterval`` with Java truncation (PRIM-4)."""
    return java_div(timestamp, segment_interval)


# --- varints (ByteUtils) --------------------------------------------------------------------------


def _write_unsigned(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def write_unsigned_varint(value: int) -> bytes:
    """``ByteUtils.writeUnsignedVarint``: the int's 32-bit pattern as LEB128, 1 to 5 bytes (PRIM-5)."""
    _check_range("unsigned-varint", value, INT32_MIN, INT32_MAX)
    return _write_unsigned(value & 0xFFFFFFFF)


def write_unsigned_varlong(value: int) -> bytes:
    """``ByteUtils.writeUnsignedVarlong``: the long's 64-bit pattern as LEB128, 1 to 10 bytes (PRIM-5)."""
    _check_range("unsigned-varlong", value, INT64_MIN, INT64_MAX)
    return _write_unsigned(value & 0xFFFFFFFFFFFFFFFF)


_SINGLE_BYTE_VARINTS = tuple(bytes((((v << 1) ^ (v >> 31)) & 0xFFFFFFFF,)) for v in range(-64, 64))
#: ``write_varint(n)`` for ``0 <= n < 64`` (lengths and counts), for loops that cannot afford a call per item.
SMALL_VARINTS = _SINGLE_BYTE_VARINTS[64:]


def write_varint(value: int) -> bytes:
    """``ByteUtils.writeVarint``: zig-zag ``(v << 1) ^ (v >> 31)`` then LEB128 (PRIM-6)."""
    # Header counts and lengths are nearly always small: one table lookup instead of the loop.
    if type(value) is int and -64 <= value < 64:
        return _SINGLE_BYTE_VARINTS[value + 64]
    _check_range("varint", value, INT32_MIN, INT32_MAX)
    return _write_unsigned(((value << 1) ^ (value >> 31)) & 0xFFFFFFFF)


def write_varlong(value: int) -> bytes:
    """``ByteUtils.writeVarlong``: zig-zag ``(v << 1) ^ (v >> 63)`` then LEB128 (PRIM-6)."""
    _check_range("varlong", value, INT64_MIN, INT64_MAX)
    return _write_unsigned(((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)


def _read_unsigned(data: bytes, offset: int, fmt: str, max_shift: int, bits: int) -> tuple[int, int]:
    # Mirrors ByteUtils' loop: the last byte is shifted in whole and wrapped to the Java type, so
    # high bits of an over-long final byte are dropped silently (PRIM-7); a continuation past the
    # limit is an error.
    value = 0
    shift = 0
    pos = offset
    while True:
        if pos >= len(data):
            raise DecodeError(fmt, "truncated varint", pos)
        byte = data[pos]
        pos += 1
        if byte & 0x80 == 0:
            value |= byte << shift
            break
        value |= (byte & 0x7F) << shift
        shift += 7
        if shift > max_shift:
            raise DecodeError(fmt, f"varint does not end within {max_shift // 7 + 1} bytes", offset)
    return value & ((1 << bits) - 1), pos


def read_unsigned_varint(data: bytes, offset: int = 0) -> tuple[int, int]:
    """``ByteUtils.readUnsignedVarint``, returning the Java ``int`` (PRIM-5, PRIM-7)."""
    raw, pos = _read_unsigned(data, offset, "unsigned-varint", 28, 32)
    return to_int32(raw), pos


def read_unsigned_varlong(data: bytes, offset: int = 0) -> tuple[int, int]:
    """``ByteUtils.readUnsignedVarlong``, returning the Java ``long`` (PRIM-5, PRIM-7)."""
    raw, pos = _read_unsigned(data, offset, "unsigned-varlong", 63, 64)
    return to_int64(raw), pos


def read_varint(data: bytes, offset: int = 0) -> tuple[int, int]:
    """``ByteUtils.readVarint``: an unsigned varint, zig-zag decoded (PRIM-6)."""
    raw, pos = _read_unsigned(data, offset, "varint", 28, 32)
    return to_int32((raw >> 1) ^ -(raw & 1)), pos


def read_varlong(data: bytes, offset: int = 0) -> tuple[int, int]:
    """``ByteUtils.readVarlong``: an unsigned varlong, zig-zag decoded (PRIM-6)."""
    raw, pos = _read_unsigned(data, offset, "varlong", 63, 64)
    return to_int64((raw >> 1) ^ -(raw & 1)), pos


def take(data: bytes, offset: int, length: int, fmt: str) -> tuple[bytes, int]:
    """Slice ``length`` bytes at ``offset``, refusing lengths past the end before allocating (PRIM-8)."""
    if length < 0:
        raise DecodeError(fmt, f"negative length {length}", offset)
    end = offset + length
    if end > len(data):
        raise DecodeError(fmt, f"length {length} runs past the end ({len(data) - offset} bytes left)", offset)
    return data[offset:end], end
