"""Position bytes compared up to the order of their topics and partitions (OFF-8: a position is written in its
map's iteration order, which Kafka's ``ConcurrentHashMap`` makes a hash order, so no order is required)."""

from __future__ import annotations


def position_bytes_in_canonical_order(data: bytes) -> bytes:
    """``data`` with its position's topics and each topic's partitions sorted, the bytes after the position
    (OFF-9's zero padding) kept as they are; bytes that do not parse as a version-0 position are returned as they
    are, so that they still differ from any valid expectation."""
    try:
        topics, end = _parse(data)
    except (IndexError, ValueError):
        return data
    out = b"\x00" + len(topics).to_bytes(4, "big")
    for raw, partitions in sorted(topics):
        out += len(raw).to_bytes(4, "big") + raw + len(partitions).to_bytes(4, "big")
        for partition, offset in sorted(partitions):
            out += partition + offset
    return out + data[end:]


def _parse(data: bytes) -> tuple[list[tuple[bytes, list[tuple[bytes, bytes]]]], int]:
    if not data or data[0] != 0:
        raise ValueError("not a version-0 position")
    at = 5
    topics: list[tuple[bytes, list[tuple[bytes, bytes]]]] = []
    for _ in range(_int32(data, 1)):
        size = _int32(data, at)
        raw = data[at + 4:at + 4 + size]
        if size < 0 or len(raw) != size:
            raise ValueError("topic cut short")
        at += 4 + size
        partitions: list[tuple[bytes, bytes]] = []
        for _ in range(_int32(data, at)):
            if at + 4 + 12 > len(data):
                raise ValueError("partition cut short")
            partitions.append((data[at + 4:at + 8], data[at + 8:at + 16]))
            at += 12
        at += 4
        topics.append((raw, partitions))
    return topics, at


def _int32(data: bytes, at: int) -> int:
    if at + 4 > len(data):
        raise IndexError("int32 cut short")
    value = int.from_bytes(data[at:at + 4], "big", signed=True)
    if value < 0:
        raise ValueError("negative count")
    return value


def comparable_output(op: str, output: object) -> object:
    """An operation's output as the golden cases compare it: ``position.serialize`` bytes in canonical order (OFF-8),
    every other output as it is."""
    if op != "position.serialize" or not isinstance(output, dict) or not isinstance(output.get("bytes"), str):
        return output
    try:
        data = bytes.fromhex(output["bytes"])
    except ValueError:
        return output
    return {**output, "bytes": position_bytes_in_canonical_order(data).hex()}
