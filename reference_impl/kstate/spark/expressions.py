"""Restore's conversions of a changelog record (CL-9 to CL-11) as Spark column expressions, so that the oracle's
plans compute stored values in the JVM, batch by batch, with no Python per row.

The byte layouts are those of :mod:`kstate.codecs.header_values`: header bytes are a varint count and, per header,
a varint key length, the key's UTF-8 bytes and a varint value length (-1 for null) and the value (HV-1, HV-2); the
header-aware values put the header bytes' varint size before them (HV-6, HV-12). Varints are Kafka's zig-zag
``ByteUtils.writeVarint`` (PRIM-6).
"""

from __future__ import annotations

from typing import Any

from kstate.codecs.store_types import RestoreConversion

#: A varint of a 32-bit length never needs more than five 7-bit groups.
_MAX_VARINT_GROUPS = 5


def byte_of(number: Any) -> Any:
    """A column of integers from 0 to 255 as one-byte binaries."""
    from pyspark.sql import functions as F

    return F.unhex(F.lpad(F.hex(number), 2, "0"))


def timestamp_bytes(timestamp: Any) -> Any:
    """A long column as its 8 big-endian two's-complement bytes: ``hex`` of a negative long is already 16 digits."""
    from pyspark.sql import functions as F

    return F.unhex(F.lpad(F.hex(timestamp), 16, "0"))


def varint(number: Any) -> Any:
    """A column of lengths (at least -1, below 2**31) as Kafka's zig-zag varints (PRIM-6): 7 bits a byte, low
    group first, the high bit set on all but the last byte."""
    from pyspark.sql import functions as F

    value = number.cast("long")
    zigzag = F.when(value >= 0, value * 2).otherwise(value * -2 - 1)

    def groups(count: int) -> Any:
        parts = []
        for index in range(count):
            group = F.shiftright(zigzag, 7 * index).bitwiseAND(127)
            parts.append(byte_of(group if index == count - 1 else group.bitwiseOR(128)))
        return F.concat(*parts)

    encoded = F.when(zigzag < 2**7, groups(1))
    for count in range(2, _MAX_VARINT_GROUPS):
        encoded = encoded.when(zigzag < 2 ** (7 * count), groups(count))
    return encoded.otherwise(groups(_MAX_VARINT_GROUPS))


def header_bytes(headers: Any) -> Any:
    """``HeadersSerializer.serialize`` of an ``array<struct<key:string, value:binary>>`` column: empty for no
    headers, else the count and each header in order (HV-1, HV-2). Keys are UTF-8 already (Spark strings)."""
    from pyspark.sql import functions as F

    def one(header: Any) -> Any:
        key = header["key"].cast("binary")
        value = header["value"]
        value_part = F.when(value.isNull(), F.lit(b"\x01")).otherwise(F.concat(varint(F.octet_length(value)), value))
        return F.concat(varint(F.octet_length(key)), key, value_part)

    encoded = F.aggregate(F.transform(headers, one), F.lit(b""), lambda joined, part: F.concat(joined, part))
    count = F.coalesce(F.size(headers), F.lit(0))
    return F.when(headers.isNull() | (count <= 0), F.lit(b"")).otherwise(F.concat(varint(count), encoded))


def with_header_size(encoded: Any) -> Any:
    """``[varint size][header bytes]``: how the header-aware values begin (HV-6, HV-12)."""
    from pyspark.sql import functions as F

    return F.concat(varint(F.octet_length(encoded)), encoded)


def restore_expression(conversion: RestoreConversion, value: Any, timestamp: Any, encoded_headers: Any) -> Any:
    """The stored value restore writes for a record (``StateManagerUtil.converterForStore``, CL-9 to CL-11).

    ``encoded_headers`` is a column of :func:`header_bytes` computed beforehand: a varint names its input a dozen
    times, so an inlined header expression would be copied into every reference.
    """
    from pyspark.sql import functions as F

    if conversion is RestoreConversion.IDENTITY:
        return value
    if conversion is RestoreConversion.TIMESTAMPED:
        return F.concat(timestamp_bytes(timestamp), value)
    if conversion is RestoreConversion.TIMESTAMPED_WITH_HEADERS:
        return F.concat(with_header_size(encoded_headers), timestamp_bytes(timestamp), value)
    if conversion is RestoreConversion.AGGREGATION_WITH_HEADERS:
        return F.concat(with_header_size(encoded_headers), value)
    raise ValueError(f"no Spark expression for the restore conversion {conversion.value}")
