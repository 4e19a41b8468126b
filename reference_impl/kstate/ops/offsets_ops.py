"""Operations over store-managed offsets, ``PositionSerde`` and checkpoint files (spec/offsets.md).

A position is ``[[topic, [[partition, offset], ...]], ...]`` (input order is iteration order; decoded
positions come back canonical: topics in Java String order, partitions ascending). An offsets column
family image is ``[[key hex, value hex], ...]``, returned sorted by key bytes as RocksDB stores it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from kstate.codecs import offsets as o
from kstate.codecs import position as pos
from kstate.errors import EncodeError, KStateError
from kstate.ops import JsonDict, capture, error_of, op, tohex
from kstate.ops.fields import (
    Field,
    Output,
    Request,
    bool_field,
    deferred,
    hex_field,
    int_field,
    nullable_hex,
    str_field,
)
from kstate.ops.inputs import (
    InputError,
    as_hex,
    as_int,
    as_list,
    as_object,
    as_str,
    as_tuple,
    field,
    require_hex,
    require_list,
)

# --- JSON shapes ------------------------------------------------------------------------------------


def position_from_json(value: Any, where: str = "position") -> pos.Position:
    """``[[topic, [[partition, offset], ...]], ...]`` to a Position; a mapping is accepted too."""
    if value is None:
        raise EncodeError(pos.FORMAT, "a position is required")
    if isinstance(value, Mapping):
        return pos.to_position({
            as_str(t, f"{where}.{t}"): {
                _mapping_partition(p, f"{where}.{t}.{p}"): as_int(v, f"{where}.{t}.{p}")
                for p, v in as_object(parts, f"{where}.{t}").items()
            }
            for t, parts in value.items()
        })
    topics = []
    for i, item in enumerate(as_list(value, where)):
        topic, parts = as_tuple(item, 2, f"{where}[{i}]")
        partitions = []
        for j, entry in enumerate(as_list(parts, f"{where}[{i}][1]")):
            partition, offset = as_tuple(entry, 2, f"{where}[{i}][1][{j}]")
            partitions.append((as_int(partition, f"{where}[{i}][1][{j}][0]"), as_int(offset, f"{where}[{i}][1][{j}][1]")))
        topics.append((as_str(topic, f"{where}[{i}][0]"), partitions))
    return pos.to_position(topics)


def _mapping_partition(key: Any, where: str) -> int:
    try:
        return int(key)
    except (TypeError, ValueError) as exc:
        raise InputError(where, f"a partition key must be an integer, got {key!r}") from exc


def position_to_json(value: pos.PositionInput) -> list[list[Any]]:
    """A Position in canonical order, as JSON."""
    return [[topic, [[p, v] for p, v in parts]] for topic, parts in pos.sorted_position(value)]


def _utf16(text: str) -> bytes:
    return text.encode("utf-16-be", "surrogatepass")


def sorted_entries(offsets: Mapping[o.TopicPartition, int | None]) -> list[list[Any]]:
    """Checkpoint entries sorted by topic (Java String order) then partition, as the vectors list them."""
    return [[t, p, v] for (t, p), v in sorted(offsets.items(), key=lambda item: (_utf16(item[0][0]), item[0][1]))]


def cf_from_json(value: Any, where: str = "cf") -> o.OffsetsCF:
    """``[[key hex, value hex], ...]`` to a column family image; null is an empty family."""
    out: o.OffsetsCF = {}
    for i, item in enumerate(as_list(value, where, nullable=True) or []):
        key, val = as_tuple(item, 2, f"{where}[{i}]")
        key_bytes = as_hex(key, f"{where}[{i}][0]", nullable=False)
        out[key_bytes] = as_hex(val, f"{where}[{i}][1]", nullable=False)
    return out


def cf_to_json(cf: Mapping[bytes, bytes]) -> list[list[str | None]]:
    return [[tohex(k), tohex(v)] for k, v in sorted(cf.items())]


def _entries_json(payload: JsonDict, name: str) -> list[tuple[Any, Any, Any]]:
    """``[[topic, partition, offset-or-null], ...]``: shapes and JSON types checked; ranges are the codec's."""
    out: list[tuple[Any, Any, Any]] = []
    for i, item in enumerate(require_list(payload, name)):
        topic, partition, offset = as_tuple(item, 3, f"{name}[{i}]")
        out.append((as_str(topic, f"{name}[{i}][0]"), as_int(partition, f"{name}[{i}][1]"),
                    as_int(offset, f"{name}[{i}][2]", nullable=True)))
    return out


def _offsets_map(payload: JsonDict, name: str) -> dict[o.TopicPartition, int | None]:
    out: dict[o.TopicPartition, int | None] = {}
    for topic, partition, offset in _entries_json(payload, name):
        out[(topic, partition)] = offset
    return out


def _partitions(payload: JsonDict, name: str) -> list[o.TopicPartition]:
    out: list[o.TopicPartition] = []
    for i, item in enumerate(require_list(payload, name)):
        topic, partition = as_tuple(item, 2, f"{name}[{i}]")
        out.append((as_str(topic, f"{name}[{i}][0]"), as_int(partition, f"{name}[{i}][1]")))
    return out


# --- declared input fields (OPS-2, OPS-3) -----------------------------------------------------------
# Each reader is the hand parsing these operations did, so a bad field is refused by the same error, naming it.

_POSITION_TYPE = "list[[string, list[[int, int]]]]"


def _position_field(name: str, doc: str = "") -> Field:
    """A required position (:func:`position_from_json`; a mapping is accepted too)."""
    return Field(name, _POSITION_TYPE, doc, read=lambda payload, n, _default: position_from_json(field(payload, n), n))


def _entries_field(name: str, doc: str = "") -> Field:
    return Field(name, "list[[string, int, int | null]]", doc, read=lambda payload, n, _default: _entries_json(payload, n))


def _offsets_field(name: str, doc: str = "") -> Field:
    return Field(name, "list[[string, int, int | null]]", doc, read=lambda payload, n, _default: _offsets_map(payload, n))


#: The column family image ``[[key hex, value hex], ...]``; required, ``null`` is an empty family.
_CF = Field("cf", "list[[hex, hex]] | null", "the offsets column family image",
            read=lambda payload, n, _default: cf_from_json(field(payload, n), n))
_CF_OUT = Output("cf", "list[[hex, hex]]", "the image, sorted by key bytes")
_POSITION_OUT = Output("position", _POSITION_TYPE, "canonical order")
_FILE = nullable_hex("file", "the file's bytes (null: no file)")
_FILE_OUT = Output("file", "hex | null", "null: no file")
_ENTRIES_OUT = Output("entries", "list[[string, int, int]]", "sorted by topic, then partition")


# --- OffsetCheckpoint -------------------------------------------------------------------------------


@op(
    "checkpoint.write",
    rules=["OFF-13", "OFF-14", "OFF-15", "OFF-16"],
    java=["OffsetCheckpoint.write"],
    inputs=[_entries_field("entries_in_map_order", "the map's entries in its iteration order")],
    outputs=[Output("file_exists", "bool"), Output("file", "hex", optional=True), Output("file_text", "string", optional=True),
             Output("read_back", "{entries: list} | error", "what reading the file back gives", optional=True)],
)
def checkpoint_write(request: Request) -> JsonDict:
    """``OffsetCheckpoint.write`` then ``read``: whether a file exists, its bytes and text, and what reads back.

    An empty map leaves no file (OFF-15): the output says so and has no ``file`` or ``file_text``, as a
    refused write has none; reading back the missing file gives an empty map.
    """
    try:
        data = o.write_checkpoint_text(request.entries_in_map_order)
    except KStateError as exc:
        return {**error_of(exc), "file_exists": False}
    if data is None:
        return {"file_exists": False, "read_back": {"entries": []}}
    return {
        "file_exists": True,
        "file": data.hex(),
        "file_text": data.decode("utf-8"),
        "read_back": capture(lambda: {"entries": sorted_entries(o.read_checkpoint_text(data))}),
    }


def _checkpoint_leniency(payload: JsonDict) -> str | None:
    try:
        data = require_hex(payload, "file", None)
    except KStateError:
        return None
    notes = o.checkpoint_text_leniencies(data)
    return "; ".join(notes) if notes else None


@op(
    "checkpoint.read",
    rules=["OFF-16", "OFF-17", "OFF-21"],
    java=["OffsetCheckpoint.read"],
    lenient=_checkpoint_leniency,
    inputs=[_FILE],
    outputs=[_ENTRIES_OUT],
)
def checkpoint_read(request: Request) -> JsonDict:
    """``OffsetCheckpoint.read`` of ``file`` (null: no file); entries sorted, -4 kept as written."""
    return {"entries": sorted_entries(o.read_checkpoint_text(request.file))}


@op("checkpoint.write_downgrade", rules=["OFF-20", "OFF-14"],
    inputs=[_offsets_field("committed", "the committed offsets, null: unknown")], outputs=[_FILE_OUT])
def checkpoint_write_downgrade(request: Request) -> JsonDict:
    """The ``.checkpoint`` written for a downgrade: committed offsets in order, null as -4; empty means no file."""
    entries = [(t, p, v) for (t, p), v in o.downgrade_checkpoint_offsets(request.committed).items()]
    return {"file": tohex(o.write_checkpoint_text(entries))}


# --- PositionSerde ----------------------------------------------------------------------------------


@op("position.serialize", rules=["OFF-8", "OFF-9"], inputs=[_position_field("position", "in iteration order")],
    outputs=[Output("bytes", "hex")])
def position_serialize(request: Request) -> JsonDict:
    """``PositionSerde.serialize(position).array()``, zero padding included, topics and partitions in input order."""
    return {"bytes": pos.encode_position(request.position).hex()}


@op("position.deserialize", rules=["OFF-8", "OFF-10", "OFF-12"], inputs=[hex_field("bytes", nullable=False, type="hex")],
    outputs=[_POSITION_OUT, Output("bytes_consumed", "int")])
def position_deserialize(request: Request) -> JsonDict:
    """``PositionSerde.deserialize``: the position (canonical order) and the bytes it used; the rest is ignored."""
    decoded, used = pos.decode_position(request.bytes)
    return {"position": position_to_json(decoded), "bytes_consumed": used}


@op("position.merge", rules=["OFF-11", "OFF-12"], inputs=[_position_field("base"), _position_field("other")],
    outputs=[_POSITION_OUT])
def position_merge(request: Request) -> JsonDict:
    """``Position.merge``: per partition the larger offset."""
    return {"position": position_to_json(pos.merge_positions(request.base, request.other))}


@op("position.to_checkpoint", rules=["OFF-18"], inputs=[_position_field("position", "in iteration order")],
    outputs=[_FILE_OUT])
def position_to_checkpoint(request: Request) -> JsonDict:
    """The ``<store>.position`` file of a position (entries in input order); an empty position writes no file."""
    return {"file": tohex(o.write_checkpoint_text(o.position_to_checkpoint(request.position)))}


@op("position.from_checkpoint", rules=["OFF-18", "OFF-16"], inputs=[_FILE], outputs=[_POSITION_OUT])
def position_from_checkpoint(request: Request) -> JsonDict:
    """A ``<store>.position`` file read back as a position (null file: empty)."""
    return {"position": position_to_json(o.position_from_checkpoint(o.read_checkpoint_text(request.file)))}


# --- offsets column family ---------------------------------------------------------------------------


#: The forms of an offsets-CF entry (OFF-1 to OFF-3): the first field present picks the form, so each is read then.
_STATUS = deferred(replace(str_field("status", "\"open\" or \"closed\": the status entry"), optional=True))
_ENTRY_POSITION = deferred(replace(_position_field("position", "the position entry"), optional=True))
_TOPIC = str_field("topic")
_PARTITION = int_field("partition")
_ENTRY_OFFSET = deferred(int_field("offset", "a committed offset entry, with topic and partition (null: a tombstone)", None))


@op("offsets.encode_entry", rules=["OFF-1", "OFF-2", "OFF-3", "OFF-9"],
    inputs=[_STATUS, _ENTRY_POSITION, deferred(replace(_TOPIC, optional=True)), deferred(replace(_PARTITION, optional=True)),
            _ENTRY_OFFSET],
    outputs=[Output("key", "hex"), Output("value", "hex | null")])
def offsets_encode_entry(request: Request) -> JsonDict:
    """One offsets-CF entry: ``{"status": "open"|"closed"}``, ``{"position": ...}`` or ``{"topic", "partition", "offset"}``."""
    payload = request.payload
    if "status" in payload:
        status = _STATUS.parse(payload)
        if status not in ("open", "closed"):
            raise EncodeError(o.CF_FORMAT, f"status must be 'open' or 'closed', got {status!r}")
        return {"key": o.STATUS_KEY.hex(), "value": o.encode_status(status == "open").hex()}
    if "position" in payload:
        return {"key": o.POSITION_KEY.hex(), "value": pos.encode_position(_ENTRY_POSITION.parse(payload)).hex()}
    key = o.topic_partition_key(_TOPIC.parse(payload), _PARTITION.parse(payload))
    offset = _ENTRY_OFFSET.parse(payload)
    return {"key": key.hex(), "value": None if offset is None else o.encode_offset_value(offset).hex()}


@op("offsets.decode_entry", rules=["OFF-2", "OFF-3", "OFF-10"],
    inputs=[hex_field("key", nullable=False, type="hex"), hex_field("value", nullable=False, type="hex")],
    outputs=[Output("kind", "string", "status, position or offset"), Output("status", "string", optional=True),
             Output("value", "int", "the status byte", optional=True), Output("position", _POSITION_TYPE, optional=True),
             Output("bytes_consumed", "int", optional=True),
             Output("topic_partition", "string", "<topic>-<partition>", optional=True),
             Output("offset", "int", optional=True)])
def offsets_decode_entry(request: Request) -> JsonDict:
    """Classify one offsets-CF entry; a committed offset's key is reported as text (``<topic>-<partition>``)."""
    decoded = o.decode_entry(request.key, request.value)
    if decoded["kind"] == "position":
        position = decoded["position"]
        assert isinstance(position, dict)
        return {"kind": "position", "position": position_to_json(position), "bytes_consumed": decoded["bytes_consumed"]}
    return dict(decoded)


@op("offsets.commit", rules=["OFF-4"], inputs=[_CF, _offsets_field("offsets", "null offset: unknown")], outputs=[_CF_OUT])
def offsets_commit(request: Request) -> JsonDict:
    """``commit(Map)`` on a column family image: offsets ``[[topic, partition, offset|null], ...]``; empty wipes."""
    return {"cf": cf_to_json(o.commit_offsets(request.cf, request.offsets))}


@op("offsets.commit_position", rules=["OFF-5", "OFF-9"], inputs=[_CF, _position_field("position")], outputs=[_CF_OUT])
def offsets_commit_position(request: Request) -> JsonDict:
    """``commit(Position)`` on a column family image."""
    return {"cf": cf_to_json(o.commit_position(request.cf, request.position))}


@op("offsets.open", rules=["OFF-6"], inputs=[_CF, bool_field("ignore_invalid_state", default=False)],
    outputs=[_CF_OUT, _POSITION_OUT])
def offsets_open(request: Request) -> JsonDict:
    """``open``: the image after open and the loaded position; an OPEN status is refused (unclean shutdown)."""
    cf, position = o.open_offsets(request.cf, request.ignore_invalid_state)
    return {"cf": cf_to_json(cf), "position": position_to_json(position)}


@op("offsets.close", rules=["OFF-7"], inputs=[_CF, bool_field("opened")], outputs=[_CF_OUT])
def offsets_close(request: Request) -> JsonDict:
    """``close``: CLOSED is written only when ``opened``."""
    return {"cf": cf_to_json(o.close_offsets(request.cf, request.opened))}


@op("offsets.committed_offset", rules=["OFF-2", "OFF-3"], inputs=[_CF, _TOPIC, _PARTITION],
    outputs=[Output("offset", "int | null")])
def offsets_committed_offset(request: Request) -> JsonDict:
    """``committedOffset(tp)`` on a column family image (null when absent)."""
    return {"offset": o.committed_offset(request.cf, request.topic, request.partition)}


#: Read (the file parsed, OFF-16) before the other fields, as Kafka reads the file first.
_LEGACY_CHECKPOINT = Field("checkpoint", "hex | null", "the store's .checkpoint file (null: none)",
                           read=lambda payload, n, _default: o.read_checkpoint_text(require_hex(payload, n, None)))


@op("offsets.migrate_checkpoint", rules=["OFF-19"],
    inputs=[_LEGACY_CHECKPOINT,
            Field("changelog_partitions", "list[[string, int]]", read=lambda payload, n, _default: _partitions(payload, n)),
            _CF],
    outputs=[_CF_OUT])
def offsets_migrate_checkpoint(request: Request) -> JsonDict:
    """``migrateLegacyOffsets`` for one store: its ``.checkpoint`` entries (file bytes, null: none) into the image."""
    known = {tp: v for tp, v in request.checkpoint.items() if v is not None}
    return {"cf": cf_to_json(o.migrate_checkpoint_offsets(request.cf, known, request.changelog_partitions))}


@op("offsets.migrate_position_file", rules=["OFF-22"], level="tentative", inputs=[_FILE, _CF], outputs=[_CF_OUT])
def offsets_migrate_position_file(request: Request) -> JsonDict:
    """A ``<store>.position`` file (bytes; null: none) merged into the image's ``position`` entry."""
    cf = request.cf
    if request.file is not None:
        cf = o.migrate_position_file(cf, o.position_from_checkpoint(o.read_checkpoint_text(request.file)))
    return {"cf": cf_to_json(cf)}
