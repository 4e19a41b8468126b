"""Operations over store-managed offsets, ``PositionSerde`` and checkpoint files (spec/offsets.md).

A position is ``[[topic, [[partition, offset], ...]], ...]`` (input order is iteration order; decoded
positions come back canonical: topics in Java String order, partitions ascending). An offsets column
family image is ``[[key hex, value hex], ...]``, returned sorted by key bytes as RocksDB stores it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kstate.codecs import offsets as o
from kstate.codecs import position as pos
from kstate.errors import EncodeError, KStateError
from kstate.ops import JsonDict, capture, error_of, op, tohex, unhex, unhex_required

# --- JSON shapes ------------------------------------------------------------------------------------


def position_from_json(value: Any) -> pos.Position:
    """``[[topic, [[partition, offset], ...]], ...]`` to a Position; a mapping is accepted too."""
    if value is None:
        raise EncodeError(pos.FORMAT, "a position is required")
    if isinstance(value, Mapping):
        return pos.to_position({t: {int(p): v for p, v in parts.items()} for t, parts in value.items()})
    return pos.to_position([(t, [(p, v) for p, v in parts]) for t, parts in value])


def position_to_json(value: pos.PositionInput) -> list[list[Any]]:
    """A Position in canonical order, as JSON."""
    return [[topic, [[p, v] for p, v in parts]] for topic, parts in pos.sorted_position(value)]


def _utf16(text: str) -> bytes:
    return text.encode("utf-16-be", "surrogatepass")


def sorted_entries(offsets: Mapping[o.TopicPartition, int | None]) -> list[list[Any]]:
    """Checkpoint entries sorted by topic (Java String order) then partition, as the vectors list them."""
    return [[t, p, v] for (t, p), v in sorted(offsets.items(), key=lambda item: (_utf16(item[0][0]), item[0][1]))]


def cf_from_json(value: Any) -> o.OffsetsCF:
    out: o.OffsetsCF = {}
    for key, val in value or []:
        out[unhex_required(key, o.CF_FORMAT)] = unhex_required(val, o.CF_FORMAT)
    return out


def cf_to_json(cf: Mapping[bytes, bytes]) -> list[list[str | None]]:
    return [[tohex(k), tohex(v)] for k, v in sorted(cf.items())]


def _offsets_map(value: Any) -> dict[o.TopicPartition, int | None]:
    out: dict[o.TopicPartition, int | None] = {}
    for topic, partition, offset in value or []:
        out[(topic, partition)] = offset
    return out


# --- OffsetCheckpoint -------------------------------------------------------------------------------


@op(
    "checkpoint.write",
    rules=["OFF-13", "OFF-14", "OFF-15", "OFF-16"],
    java=["OffsetCheckpoint.write"],
)
def checkpoint_write(payload: JsonDict) -> JsonDict:
    """``OffsetCheckpoint.write`` then ``read``: whether a file exists, its bytes and text, and what reads back."""
    try:
        data = o.write_checkpoint_text([tuple(e) for e in payload["entries_in_map_order"]])
    except KStateError as exc:
        return {**error_of(exc), "file_exists": False}
    if data is None:
        return {"file_exists": False, "file": None, "file_text": None, "read_back": {"entries": []}}
    return {
        "file_exists": True,
        "file": data.hex(),
        "file_text": data.decode("utf-8"),
        "read_back": capture(lambda: {"entries": sorted_entries(o.read_checkpoint_text(data))}),
    }


def _checkpoint_leniency(payload: JsonDict) -> str | None:
    try:
        data = unhex(payload.get("file"))
    except KStateError:
        return None
    notes = o.checkpoint_text_leniencies(data)
    return "; ".join(notes) if notes else None


@op(
    "checkpoint.read",
    rules=["OFF-16", "OFF-17", "OFF-21"],
    java=["OffsetCheckpoint.read"],
    lenient=_checkpoint_leniency,
)
def checkpoint_read(payload: JsonDict) -> JsonDict:
    """``OffsetCheckpoint.read`` of ``file`` (null: no file); entries sorted, -4 kept as written."""
    data = unhex(payload.get("file"), o.CHECKPOINT_FORMAT)
    return {"entries": sorted_entries(o.read_checkpoint_text(data))}


@op("checkpoint.write_downgrade", rules=["OFF-20", "OFF-14"])
def checkpoint_write_downgrade(payload: JsonDict) -> JsonDict:
    """The ``.checkpoint`` written for a downgrade: committed offsets in order, null as -4; empty means no file."""
    entries = [(t, p, v) for (t, p), v in o.downgrade_checkpoint_offsets(_offsets_map(payload["committed"])).items()]
    return {"file": tohex(o.write_checkpoint_text(entries))}


# --- PositionSerde ----------------------------------------------------------------------------------


@op("position.serialize", rules=["OFF-8", "OFF-9"])
def position_serialize(payload: JsonDict) -> JsonDict:
    """``PositionSerde.serialize(position).array()``, zero padding included, topics and partitions in input order."""
    return {"bytes": pos.encode_position(position_from_json(payload["position"])).hex()}


@op("position.deserialize", rules=["OFF-8", "OFF-10", "OFF-12"])
def position_deserialize(payload: JsonDict) -> JsonDict:
    """``PositionSerde.deserialize``: the position (canonical order) and the bytes it used; the rest is ignored."""
    decoded, used = pos.decode_position(unhex_required(payload["bytes"], pos.FORMAT))
    return {"position": position_to_json(decoded), "bytes_consumed": used}


@op("position.merge", rules=["OFF-11", "OFF-12"])
def position_merge(payload: JsonDict) -> JsonDict:
    """``Position.merge``: per partition the larger offset."""
    merged = pos.merge_positions(position_from_json(payload["base"]), position_from_json(payload["other"]))
    return {"position": position_to_json(merged)}


@op("position.to_checkpoint", rules=["OFF-18"])
def position_to_checkpoint(payload: JsonDict) -> JsonDict:
    """The ``<store>.position`` file of a position (entries in input order); an empty position writes no file."""
    entries = o.position_to_checkpoint(position_from_json(payload["position"]))
    return {"file": tohex(o.write_checkpoint_text(entries))}


@op("position.from_checkpoint", rules=["OFF-18", "OFF-16"])
def position_from_checkpoint(payload: JsonDict) -> JsonDict:
    """A ``<store>.position`` file read back as a position (null file: empty)."""
    offsets = o.read_checkpoint_text(unhex(payload.get("file"), o.CHECKPOINT_FORMAT))
    return {"position": position_to_json(o.position_from_checkpoint(offsets))}


# --- offsets column family ---------------------------------------------------------------------------


@op("offsets.encode_entry", rules=["OFF-1", "OFF-2", "OFF-3", "OFF-9"])
def offsets_encode_entry(payload: JsonDict) -> JsonDict:
    """One offsets-CF entry: ``{"status": "open"|"closed"}``, ``{"position": ...}`` or ``{"topic", "partition", "offset"}``."""
    if "status" in payload:
        status = payload["status"]
        if status not in ("open", "closed"):
            raise EncodeError(o.CF_FORMAT, f"status must be 'open' or 'closed', got {status!r}")
        return {"key": o.STATUS_KEY.hex(), "value": o.encode_status(status == "open").hex()}
    if "position" in payload:
        return {"key": o.POSITION_KEY.hex(), "value": pos.encode_position(position_from_json(payload["position"])).hex()}
    key = o.topic_partition_key(payload["topic"], payload["partition"])
    offset = payload.get("offset")
    return {"key": key.hex(), "value": None if offset is None else o.encode_offset_value(offset).hex()}


@op("offsets.decode_entry", rules=["OFF-2", "OFF-3", "OFF-10"])
def offsets_decode_entry(payload: JsonDict) -> JsonDict:
    """Classify one offsets-CF entry; a committed offset's key is reported as text (``<topic>-<partition>``)."""
    decoded = o.decode_entry(unhex_required(payload["key"], o.CF_FORMAT), unhex_required(payload["value"], o.CF_FORMAT))
    if decoded["kind"] == "position":
        position = decoded["position"]
        assert isinstance(position, dict)
        return {"kind": "position", "position": position_to_json(position), "bytes_consumed": decoded["bytes_consumed"]}
    return dict(decoded)


@op("offsets.commit", rules=["OFF-4"])
def offsets_commit(payload: JsonDict) -> JsonDict:
    """``commit(Map)`` on a column family image: offsets ``[[topic, partition, offset|null], ...]``; empty wipes."""
    return {"cf": cf_to_json(o.commit_offsets(cf_from_json(payload["cf"]), _offsets_map(payload["offsets"])))}


@op("offsets.commit_position", rules=["OFF-5", "OFF-9"])
def offsets_commit_position(payload: JsonDict) -> JsonDict:
    """``commit(Position)`` on a column family image."""
    return {"cf": cf_to_json(o.commit_position(cf_from_json(payload["cf"]), position_from_json(payload["position"])))}


@op("offsets.open", rules=["OFF-6"])
def offsets_open(payload: JsonDict) -> JsonDict:
    """``open``: the image after open and the loaded position; an OPEN status is refused (unclean shutdown)."""
    cf, position = o.open_offsets(cf_from_json(payload["cf"]), bool(payload.get("ignore_invalid_state", False)))
    return {"cf": cf_to_json(cf), "position": position_to_json(position)}


@op("offsets.close", rules=["OFF-7"])
def offsets_close(payload: JsonDict) -> JsonDict:
    """``close``: CLOSED is written only when ``opened``."""
    return {"cf": cf_to_json(o.close_offsets(cf_from_json(payload["cf"]), bool(payload["opened"])))}


@op("offsets.committed_offset", rules=["OFF-2", "OFF-3"])
def offsets_committed_offset(payload: JsonDict) -> JsonDict:
    """``committedOffset(tp)`` on a column family image (null when absent)."""
    return {"offset": o.committed_offset(cf_from_json(payload["cf"]), payload["topic"], payload["partition"])}


@op("offsets.migrate_checkpoint", rules=["OFF-19"])
def offsets_migrate_checkpoint(payload: JsonDict) -> JsonDict:
    """``migrateLegacyOffsets`` for one store: its ``.checkpoint`` entries (file bytes, null: none) into the image."""
    checkpoint = o.read_checkpoint_text(unhex(payload.get("checkpoint"), o.CHECKPOINT_FORMAT))
    known = {tp: v for tp, v in checkpoint.items() if v is not None}
    partitions = [(t, p) for t, p in payload["changelog_partitions"]]
    return {"cf": cf_to_json(o.migrate_checkpoint_offsets(cf_from_json(payload["cf"]), known, partitions))}


@op("offsets.migrate_position_file", rules=["OFF-22"], level="tentative")
def offsets_migrate_position_file(payload: JsonDict) -> JsonDict:
    """A ``<store>.position`` file (bytes; null: none) merged into the image's ``position`` entry."""
    data = unhex(payload.get("file"), o.CHECKPOINT_FORMAT)
    cf = cf_from_json(payload["cf"])
    if data is not None:
        cf = o.migrate_position_file(cf, o.position_from_checkpoint(o.read_checkpoint_text(data)))
    return {"cf": cf_to_json(cf)}
