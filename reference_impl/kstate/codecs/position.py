"""``PositionSerde``: the IQ position vector as bytes (spec/offsets.md, OFF-8 to OFF-11).

Layout: ``[version int8 = 0][nTopics int32]`` then per topic ``[len int32][topic UTF-8][nPartitions int32]``
and per partition ``[partition int32][offset int64]``. Kafka sizes the buffer from *bit* counts
(``Byte.SIZE``, ``Integer.SIZE``, ``Long.SIZE``) and every caller takes the whole backing array, so
the bytes written are the meaningful prefix followed by zeros up to that oversized capacity.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kstate.codecs.java_text import decode_utf8_java, encode_utf8_java
from kstate.codecs.primitives import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    encode_int32,
    encode_int64,
    read_int32,
    read_int64,
    take,
)
from kstate.errors import DecodeError, EncodeError

FORMAT = "position"
VERSION = 0

#: topic -> partition -> offset; dict order stands for Java's (non-canonical) iteration order.
Position = dict[str, dict[int, int]]
PositionInput = Mapping[str, Mapping[int, int]] | Iterable[tuple[str, Iterable[tuple[int, int]]]]

# The bit sizes Kafka adds up where byte sizes were meant (OFF-9).
_BYTE_BITS = 8
_INT_BITS = 32
_LONG_BITS = 64
# Smallest encodings, used to refuse counts the remaining bytes cannot hold before allocating.
_MIN_TOPIC_BYTES = 4 + 4
_PARTITION_BYTES = 4 + 8


def to_position(position: PositionInput) -> Position:
    """Normalise a mapping or ``[(topic, [(partition, offset), ...]), ...]``; duplicates are refused (OFF-8)."""
    items = position.items() if isinstance(position, Mapping) else position
    out: Position = {}
    for topic, partitions in items:
        if not isinstance(topic, str):
            raise EncodeError(FORMAT, f"topic must be a string, got {type(topic).__name__}")
        if topic in out:
            raise EncodeError(FORMAT, f"topic {topic!r} given twice; a Position is a map")
        pairs = partitions.items() if isinstance(partitions, Mapping) else partitions
        offsets: dict[int, int] = {}
        for partition, offset in pairs:
            _check_int(partition, INT32_MIN, INT32_MAX, "partition")
            _check_int(offset, INT64_MIN, INT64_MAX, "offset")
            if partition in offsets:
                raise EncodeError(FORMAT, f"partition {partition} of {topic!r} given twice")
            offsets[partition] = offset
        out[topic] = offsets
    return out


def _check_int(value: object, lo: int, hi: int, what: str) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
        raise EncodeError(FORMAT, f"{what} {value!r} is not an int in [{lo}, {hi}]")


def kafka_capacity(position: PositionInput) -> int:
    """The buffer size ``PositionSerde.serialize`` allocates: bit counts summed as if bytes (OFF-9)."""
    normalised = to_position(position)
    size = _BYTE_BITS + _INT_BITS
    for topic, partitions in normalised.items():
        size += _INT_BITS + len(encode_utf8_java(topic)) + _INT_BITS + (_INT_BITS + _LONG_BITS) * len(partitions)
    return size


def meaningful_bytes(position: PositionInput) -> bytes:
    """The version byte, counts, topics and pairs, without Kafka's zero padding (OFF-8)."""
    normalised = to_position(position)
    out = bytearray([VERSION])
    out += encode_int32(len(normalised))
    for topic, partitions in normalised.items():
        topic_bytes = encode_utf8_java(topic)
        out += encode_int32(len(topic_bytes))
        out += topic_bytes
        out += encode_int32(len(partitions))
        for partition, offset in partitions.items():
            out += encode_int32(partition)
            out += encode_int64(offset)
    return bytes(out)


def encode_position(position: PositionInput) -> bytes:
    """``PositionSerde.serialize(p).array()``: the meaningful bytes zero-padded to Kafka's capacity (OFF-8, OFF-9)."""
    body = meaningful_bytes(position)
    return body + bytes(kafka_capacity(position) - len(body))


def decode_position(data: bytes) -> tuple[Position, int]:
    """``PositionSerde.deserialize``: the position and the bytes it used; trailing bytes are ignored (OFF-10).

    Counts are checked against the bytes left before anything is allocated; a negative count or an
    unknown version is refused, as Kafka refuses them (``IllegalArgumentException``).
    """
    if not data:
        raise DecodeError(FORMAT, "empty input has no version byte", 0)
    version = data[0]
    if version != VERSION:
        raise DecodeError(FORMAT, f"unknown version {version - 256 if version > 127 else version}", 0)
    topic_count, pos = read_int32(data, 1, FORMAT)
    _check_count(topic_count, len(data) - pos, _MIN_TOPIC_BYTES, "topic", 1)
    position: Position = {}
    for _ in range(topic_count):
        name_length, after_length = read_int32(data, pos, FORMAT)
        name_bytes, pos = take(data, after_length, name_length, FORMAT)
        topic = decode_utf8_java(name_bytes)
        pair_count, after_count = read_int32(data, pos, FORMAT)
        _check_count(pair_count, len(data) - after_count, _PARTITION_BYTES, "partition", pos)
        pos = after_count
        partitions: dict[int, int] = {}
        for _ in range(pair_count):
            partition, pos = read_int32(data, pos, FORMAT)
            offset, pos = read_int64(data, pos, FORMAT)
            partitions[partition] = offset  # a repeated partition overwrites, as HashMap.put does
        position[topic] = partitions  # a repeated topic replaces the earlier one, as HashMap.put does
    return position, pos


def _check_count(count: int, remaining: int, unit: int, what: str, offset: int) -> None:
    if count < 0:
        raise DecodeError(FORMAT, f"negative {what} count {count}", offset)
    if count > remaining // unit:
        raise DecodeError(FORMAT, f"{count} {what}s cannot fit in the {remaining} bytes left", offset)


def merge_positions(base: PositionInput, other: PositionInput) -> Position:
    """``Position.merge``: per partition the larger offset wins; topics of ``other`` are added (OFF-11)."""
    merged = {topic: dict(partitions) for topic, partitions in to_position(base).items()}
    for topic, partitions in to_position(other).items():
        target = merged.setdefault(topic, {})
        for partition, offset in partitions.items():
            if partition not in target or target[partition] < offset:
                target[partition] = offset
    return merged


def _utf16_order(text: str) -> bytes:
    # Java compares Strings by UTF-16 code unit; big-endian UTF-16 bytes sort the same way.
    return text.encode("utf-16-be", "surrogatepass")


def sorted_position(position: PositionInput) -> list[tuple[str, list[tuple[int, int]]]]:
    """A canonical form for comparison: topics in Java String order, partitions ascending (OFF-10)."""
    normalised = to_position(position)
    return [(topic, sorted(normalised[topic].items())) for topic in sorted(normalised, key=_utf16_order)]
