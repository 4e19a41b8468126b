"""Store-managed offsets and their legacy text files (spec/offsets.md, OFF-*).

Two encodings live here. The KIP-1035 ``offsets`` column family: UTF-8 keys ``status``,
``position`` and ``<topic>-<partition>``, with 8-byte big-endian values (the position entry holds
``PositionSerde`` bytes). And the ``OffsetCheckpoint`` text file used by ``.checkpoint`` and
``<store>.position``, read with Java's exact parsing rules (``BufferedReader.readLine``,
``Pattern.split("\\s+")``, ``Integer.parseInt``/``Long.parseLong``).

The column-family functions work on an in-memory image of the family (``dict[bytes, bytes]``) and
return the new image; a store applies the difference in the same write batch as its data.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping

from kstate.codecs.java_text import decode_utf8_java, encode_utf8_java
from kstate.codecs.position import (
    Position,
    PositionInput,
    decode_position,
    encode_position,
    merge_positions,
    to_position,
)
from kstate.codecs.primitives import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN, encode_int64, read_int64
from kstate.errors import DecodeError, EncodeError, KStateError

CF_FORMAT = "offsets-cf"
CHECKPOINT_FORMAT = "offset-checkpoint"

OFFSETS_COLUMN_FAMILY = "offsets"
STATUS_KEY = b"status"
POSITION_KEY = b"position"
STATUS_OPEN = 1
STATUS_CLOSED = 0
#: ``OffsetCheckpoint.OFFSET_UNKNOWN``: a logged store whose changelog offset is unknown (OFF-14).
OFFSET_UNKNOWN = -4
CHECKPOINT_VERSION = 0

TopicPartition = tuple[str, int]
OffsetsCF = dict[bytes, bytes]


class UncleanShutdownError(KStateError):
    """``open`` found the status still OPEN: the store was not closed cleanly (OFF-6)."""


# --- Java number parsing --------------------------------------------------------------------------


def _java_parse(text: str, lo: int, hi: int, what: str, fmt: str) -> int:
    # Integer.parseInt / Long.parseLong: an optional sign, then one or more decimal digits of any
    # script (Character.digit), each a single UTF-16 unit; no spaces, no underscores, no overflow.
    if not text:
        raise DecodeError(fmt, f"{what}: empty number")
    sign = 1
    digits = text
    if text[0] in "+-":
        sign = -1 if text[0] == "-" else 1
        digits = text[1:]
        if not digits:
            raise DecodeError(fmt, f"{what}: sign without digits in {text!r}")
    value = 0
    for char in digits:
        digit = unicodedata.decimal(char, -1) if ord(char) <= 0xFFFF else -1
        if digit < 0:
            raise DecodeError(fmt, f"{what}: {text!r} is not a decimal number")
        value = value * 10 + digit
        if value > hi + 1:  # stop early on huge inputs; the exact bound is checked below
            break
    value *= sign
    if not lo <= value <= hi:
        raise DecodeError(fmt, f"{what}: {text!r} is out of range")
    return value


def parse_java_int(text: str, what: str = "int", fmt: str = CHECKPOINT_FORMAT) -> int:
    """``Integer.parseInt(text)``; a refusal (``NumberFormatException``) is a :class:`DecodeError` (OFF-16)."""
    return _java_parse(text, INT32_MIN, INT32_MAX, what, fmt)


def parse_java_long(text: str, what: str = "long", fmt: str = CHECKPOINT_FORMAT) -> int:
    """``Long.parseLong(text)``; a refusal (``NumberFormatException``) is a :class:`DecodeError` (OFF-16)."""
    return _java_parse(text, INT64_MIN, INT64_MAX, what, fmt)


# --- offsets column family ------------------------------------------------------------------------


def topic_partition_key(topic: str, partition: int) -> bytes:
    """The offsets-CF key of a changelog partition: ``TopicPartition.toString()`` as UTF-8 (OFF-2)."""
    if not isinstance(topic, str):
        raise EncodeError(CF_FORMAT, "topic must be a string")
    _check_range(partition, INT32_MIN, INT32_MAX, "partition", CF_FORMAT)
    return encode_utf8_java(f"{topic}-{partition}")


def encode_offset_value(offset: int) -> bytes:
    """A committed offset: ``LongSerializer``, 8 bytes big-endian (OFF-3)."""
    _check_range(offset, INT64_MIN, INT64_MAX, "offset", CF_FORMAT)
    return encode_int64(offset)


def decode_offset_value(data: bytes) -> int:
    """``LongDeserializer``: exactly 8 bytes, anything else is refused (OFF-3)."""
    if len(data) != 8:
        raise DecodeError(CF_FORMAT, f"a long value needs exactly 8 bytes, got {len(data)}", 0)
    return read_int64(data, 0, CF_FORMAT)[0]


def encode_status(open_: bool) -> bytes:
    """The ``status`` value: 1 (OPEN) or 0 (CLOSED) as an 8-byte long (OFF-3)."""
    return encode_int64(STATUS_OPEN if open_ else STATUS_CLOSED)


def decode_entry(key: bytes, value: bytes) -> dict[str, object]:
    """Classify one offsets-CF entry: status, position or a committed offset (OFF-2, OFF-3, OFF-8)."""
    if key == STATUS_KEY:
        status = decode_offset_value(value)
        name = {STATUS_OPEN: "open", STATUS_CLOSED: "closed"}.get(status, "unknown")
        return {"kind": "status", "status": name, "value": status}
    if key == POSITION_KEY:
        position, used = decode_position(value)
        return {"kind": "position", "position": position, "bytes_consumed": used}
    # Kafka never parses these keys back (it looks them up by TopicPartition.toString()), so the
    # text is reported as is: "t--1" would be ambiguous between ("t-", 1) and ("t", -1).
    return {"kind": "offset", "topic_partition": decode_utf8_java(key), "offset": decode_offset_value(value)}


def commit_offsets(cf: Mapping[bytes, bytes], offsets: Mapping[TopicPartition, int | None]) -> OffsetsCF:
    """``commit(Map)``: an empty map deletes every key but ``status``; a None offset deletes that key (OFF-4)."""
    if not offsets:
        return {k: v for k, v in cf.items() if k == STATUS_KEY}
    out = dict(cf)
    for (topic, partition), offset in offsets.items():
        key = topic_partition_key(topic, partition)
        if offset is None:
            out.pop(key, None)
        else:
            out[key] = encode_offset_value(offset)
    return out


def commit_position(cf: Mapping[bytes, bytes], position: PositionInput) -> OffsetsCF:
    """``commit(Position)``: the ``position`` key holds the zero-padded ``PositionSerde`` bytes (OFF-5)."""
    out = dict(cf)
    out[POSITION_KEY] = encode_position(position)
    return out


def open_offsets(cf: Mapping[bytes, bytes], ignore_invalid_state: bool = False) -> tuple[OffsetsCF, Position]:
    """``open``: absent or CLOSED status becomes OPEN and the position is loaded; OPEN is an unclean shutdown (OFF-6)."""
    status = cf.get(STATUS_KEY)
    # Kafka compares the raw bytes with CLOSED; any other present value, garbage included, is refused.
    if not ignore_invalid_state and status is not None and status != encode_status(False):
        raise UncleanShutdownError("Invalid state during store open. Expected state to be either empty or closed")
    out = dict(cf)
    out[STATUS_KEY] = encode_status(True)
    raw_position = out.get(POSITION_KEY)
    position = decode_position(raw_position)[0] if raw_position is not None else {}
    return out, position


def close_offsets(cf: Mapping[bytes, bytes], opened: bool) -> OffsetsCF:
    """``close``: CLOSED is written only when this instance opened the store (OFF-7)."""
    out = dict(cf)
    if opened:
        out[STATUS_KEY] = encode_status(False)
    return out


def committed_offset_problem(offset: int) -> str | None:
    """Why ``offset`` cannot be a committed changelog offset, None if it can (OFF-24): an offset is >= 0, -4 is
    ``OFFSET_UNKNOWN`` (Kafka 4.4 commits it for a logged store with no offset yet, and reads it as none) and -1
    restores from offset 0; any other negative value is no offset (Kafka's task would seek to it and fail)."""
    if offset >= -1 or offset == OFFSET_UNKNOWN:
        return None
    return (f"committed changelog offset {offset} is negative and neither -1 nor -4 (OFFSET_UNKNOWN): no "
            "changelog offset (a restore would seek to a negative offset)")


def restore_start_offset(committed: int | None) -> int:
    """The changelog offset a restore starts from (OFF-24): ``committed + 1``; from 0 when there is none, it is
    -4 (``OFFSET_UNKNOWN``, Kafka 4.4's ``changelogOffsetFromCommittedOffset`` reads it as null) or -1."""
    if committed is None or committed < 0:
        return 0
    return committed + 1


def committed_offset(cf: Mapping[bytes, bytes], topic: str, partition: int) -> int | None:
    """``committedOffset(tp)``: the stored long, or None when absent (OFF-3)."""
    raw = cf.get(topic_partition_key(topic, partition))
    return None if raw is None else decode_offset_value(raw)


def migrate_checkpoint_offsets(
    cf: Mapping[bytes, bytes], checkpoint: Mapping[TopicPartition, int], changelog_partitions: Iterable[TopicPartition]
) -> OffsetsCF:
    """``migrateLegacyOffsets``: this store's ``.checkpoint`` entries, -4 skipped, committed as one map (OFF-19)."""
    wanted = set(changelog_partitions)
    offsets = {tp: off for tp, off in checkpoint.items() if tp in wanted and off != OFFSET_UNKNOWN}
    # Nothing to migrate means no commit at all: an empty commit would wipe the family (OFF-4).
    return commit_offsets(cf, offsets) if offsets else dict(cf)


def migrate_position_file(cf: Mapping[bytes, bytes], file_position: PositionInput) -> OffsetsCF:
    """A ``<store>.position`` file merged into the ``position`` entry; the caller deletes the file (OFF-22)."""
    raw = cf.get(POSITION_KEY)
    stored = decode_position(raw)[0] if raw is not None else {}
    return commit_position(cf, merge_positions(stored, file_position))


def downgrade_checkpoint_offsets(committed: Mapping[TopicPartition, int | None]) -> dict[TopicPartition, int]:
    """``maybeDowngradeOffsets``: the offsets a pre-4.3 ``.checkpoint`` gets, null written as -4 (OFF-20)."""
    return {tp: OFFSET_UNKNOWN if offset is None else offset for tp, offset in committed.items()}


# --- OffsetCheckpoint text ------------------------------------------------------------------------

_JAVA_WHITESPACE = "[ \t\n\x0b\x0c\r]"
_WHITESPACE_RUN = re.compile(_JAVA_WHITESPACE + "+")


def _check_range(value: object, lo: int, hi: int, what: str, fmt: str) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
        raise EncodeError(fmt, f"{what} {value!r} is not an int in [{lo}, {hi}]")


def _is_valid_checkpoint_offset(offset: int) -> bool:
    return offset >= 0 or offset == OFFSET_UNKNOWN


def checkpoint_entries(entries: Iterable[tuple[str, int, int | None]]) -> dict[TopicPartition, int]:
    """The ``Map<TopicPartition, Long>`` behind a list of ``(topic, partition, offset)`` in iteration order.

    A repeated topic-partition is refused (a Java map cannot hold one); a None offset is refused as
    ``OffsetCheckpoint.write`` refuses it (unboxing a null ``Long``); callers convert None to -4 first.
    """
    out: dict[TopicPartition, int] = {}
    for topic, partition, offset in entries:
        if not isinstance(topic, str):
            raise EncodeError(CHECKPOINT_FORMAT, "topic must be a string")
        _check_range(partition, INT32_MIN, INT32_MAX, "partition", CHECKPOINT_FORMAT)
        if offset is None:
            raise EncodeError(CHECKPOINT_FORMAT, f"null offset for {topic}-{partition}")
        _check_range(offset, INT64_MIN, INT64_MAX, "offset", CHECKPOINT_FORMAT)
        if (topic, partition) in out:
            raise EncodeError(CHECKPOINT_FORMAT, f"{topic}-{partition} given twice; a checkpoint is a map")
        out[(topic, partition)] = offset
    return out


def write_checkpoint_text(entries: Iterable[tuple[str, int, int | None]] | Mapping[TopicPartition, int]) -> bytes | None:
    """``OffsetCheckpoint.write``'s file bytes, or None for an empty map (no file) (OFF-13 to OFF-15).

    A negative offset other than -4 is refused (Kafka: ``IllegalStateException``, no file written).
    """
    if isinstance(entries, Mapping):
        entries = [(t, p, o) for (t, p), o in entries.items()]
    offsets = checkpoint_entries(entries)
    if not offsets:
        return None
    out = bytearray(f"{CHECKPOINT_VERSION}\n{len(offsets)}\n".encode("ascii"))
    for (topic, partition), offset in offsets.items():
        if not _is_valid_checkpoint_offset(offset):
            raise EncodeError(CHECKPOINT_FORMAT, "Attempted to write a negative offset to the checkpoint file")
        # Java's writer replaces an unpaired surrogate with '?', as String.getBytes does.
        out += encode_utf8_java(topic) + f" {partition} {offset}\n".encode("ascii")
    return bytes(out)


def _java_lines(text: str) -> list[str]:
    # BufferedReader.readLine: a line ends at \n, \r or \r\n; a final line without one still counts.
    # str.splitlines would also split at VT, FF, FS, GS, RS, NEL, U+2028 and U+2029.
    lines = re.split("\r\n|\r|\n", text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def java_whitespace_split(line: str) -> list[str]:
    """``Pattern.compile("\\\\s+").split(line)``: a leading empty field is kept, trailing ones dropped (OFF-16)."""
    if not _WHITESPACE_RUN.search(line):
        return [line]
    pieces = _WHITESPACE_RUN.split(line)
    while pieces and pieces[-1] == "":
        pieces.pop()
    return pieces


def _decode_checkpoint_text(data: bytes) -> str:
    # Files.newBufferedReader uses a decoder that reports malformed input (MalformedInputException).
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DecodeError(CHECKPOINT_FORMAT, f"not valid UTF-8: {exc.reason}", exc.start) from exc


def read_checkpoint_text(data: bytes | None, *, unknown_as_none: bool = False) -> dict[TopicPartition, int | None]:
    """``OffsetCheckpoint.read`` of the file bytes (None: no file, an empty map) (OFF-16 to OFF-18).

    Offsets are returned as written, -4 included, as Kafka's reader does; ``unknown_as_none`` applies
    the conversion Kafka's callers make (-4 becomes None).
    """
    if data is None:
        return {}
    lines = _java_lines(_decode_checkpoint_text(data))
    if not lines:
        raise DecodeError(CHECKPOINT_FORMAT, "File ended prematurely.")
    version = parse_java_int(lines[0], "version")
    if version != CHECKPOINT_VERSION:
        raise DecodeError(CHECKPOINT_FORMAT, f"Unknown offset checkpoint version: {version}")
    if len(lines) < 2:
        raise DecodeError(CHECKPOINT_FORMAT, "File ended prematurely.")
    expected = parse_java_int(lines[1], "entry count")
    offsets: dict[TopicPartition, int | None] = {}
    for line in lines[2:]:
        pieces = java_whitespace_split(line)
        if len(pieces) != 3:
            raise DecodeError(CHECKPOINT_FORMAT, f"Malformed line in offset checkpoint file: '{line}'.")
        topic = pieces[0]
        partition = parse_java_int(pieces[1], "partition")
        offset = parse_java_long(pieces[2], "offset")
        if _is_valid_checkpoint_offset(offset):
            offsets[(topic, partition)] = None if unknown_as_none and offset == OFFSET_UNKNOWN else offset
        else:
            expected -= 1  # Kafka skips the entry with a WARN and expects one fewer
    if len(offsets) != expected:
        raise DecodeError(CHECKPOINT_FORMAT, f"Expected {expected} entries but found only {len(offsets)}")
    return offsets


_CANONICAL_ENTRY = re.compile(r"[^ \t\n\x0b\x0c\r]* (0|-?[1-9][0-9]*) (0|[1-9][0-9]*|-4)")
_CANONICAL_COUNT = re.compile(r"0|[1-9][0-9]*")


def checkpoint_text_leniencies(data: bytes | None) -> list[str]:
    """What Kafka accepted in a file that ``OffsetCheckpoint.write`` could not have produced (OFF-17).

    Empty when the file is refused, missing, or exactly what a writer produces.
    """
    if data is None:
        return []
    try:
        read_checkpoint_text(data)
    except KStateError:
        return []
    text = data.decode("utf-8")
    notes: list[str] = []
    if "\r" in text:
        notes.append("carriage-return line endings accepted")
    if not text.endswith(("\n", "\r")):
        notes.append("missing final line terminator accepted")
    lines = _java_lines(text)
    if lines[0] != "0":
        notes.append(f"version written as {lines[0]!r}")
    if not _CANONICAL_COUNT.fullmatch(lines[1]):
        notes.append(f"entry count written as {lines[1]!r}")
    entry_lines = lines[2:]
    if any(not _CANONICAL_ENTRY.fullmatch(line) for line in entry_lines):
        notes.append("entry line not in written form (whitespace, sign, digits or a skipped negative offset)")
    if parse_java_int(lines[1]) != len(entry_lines):
        notes.append("entry count differs from the number of lines (skipped negative offsets)")
    return notes


def position_from_checkpoint(offsets: Mapping[TopicPartition, int | None]) -> Position:
    """``topicPartitionMapToPosition``: the ``<store>.position`` file read back as a Position (OFF-18)."""
    position: Position = {}
    for (topic, partition), offset in offsets.items():
        if offset is not None:
            position.setdefault(topic, {})[partition] = offset
    return position


def position_to_checkpoint(position: PositionInput) -> dict[TopicPartition, int]:
    """``positionToTopicPartitionMap``: a Position as ``<store>.position`` entries; empty topics vanish (OFF-18)."""
    return {(t, p): o for t, partitions in to_position(position).items() for p, o in partitions.items()}
