"""Mutants of store-managed offsets, PositionSerde and checkpoint files."""

from __future__ import annotations

from kstate.codecs.store_types import StoreType, UnknownStoreTypeError, info
from kstate.ops import JsonDict, call
from kstate_conformance.adapter import Handler
from kstate_conformance.mutants import alters, mutant, replaces


def _position_without_padding(payload: JsonDict) -> str:
    out = bytearray(b"\x00")
    topics = payload["position"]
    out += len(topics).to_bytes(4, "big")
    for topic, partitions in topics:
        raw = topic.encode("utf-8")
        out += len(raw).to_bytes(4, "big") + raw + len(partitions).to_bytes(4, "big")
        for partition, offset in partitions:
            out += partition.to_bytes(4, "big", signed=True) + offset.to_bytes(8, "big", signed=True)
    return out.hex()


@mutant("position-unpadded", "PositionSerde writes only the meaningful bytes (ByteBuffer sized in bytes, not bits)", "offsets", rules=("OFF-9",))
def _position_unpadded() -> dict[str, Handler]:
    def serialize(payload: JsonDict) -> JsonDict:
        return {"bytes": _position_without_padding(payload)}

    def encode_entry(payload: JsonDict) -> JsonDict:
        if "position" in payload:
            return {"key": b"position".hex(), "value": _position_without_padding(payload)}
        return call("offsets.encode_entry", payload)

    return {"position.serialize": serialize, "offsets.encode_entry": encode_entry}


@mutant("checkpoint-unknown-as-minus-one", "the checkpoint writer stores an unknown offset as -1 instead of -4", "offsets", rules=("OFF-14",))
@replaces("checkpoint.write")
def _unknown_as_minus_one(payload: JsonDict) -> JsonDict:
    entries = [[t, p, -1 if o == -4 else o] for t, p, o in payload["entries_in_map_order"]]
    if any(o is not None and o < 0 and o != -1 for _, _, o in entries):
        return call("checkpoint.write", payload)
    text = f"0\n{len(entries)}\n" + "".join(f"{t} {p} {o}\n" for t, p, o in entries) if entries else None
    if text is None:
        return call("checkpoint.write", payload)
    data = text.encode("utf-8")
    return {"file_exists": True, "file": data.hex(), "file_text": text,
            "read_back": call("checkpoint.read", {"file": data.hex()})}


@mutant("checkpoint-ignores-count", "the checkpoint reader trusts the lines and never checks the entry count", "offsets", rules=("OFF-17",))
@replaces("checkpoint.read")
def _ignores_count(payload: JsonDict) -> JsonDict:
    data = payload.get("file")
    out = call("checkpoint.read", payload)
    if "error" not in out or data is None:
        return out
    lines = bytes.fromhex(data).decode("utf-8", "replace").split("\n")
    if len(lines) < 2:
        return out
    fixed = "\n".join([lines[0], str(sum(1 for line in lines[2:] if line)), *lines[2:]])
    return call("checkpoint.read", {"file": fixed.encode("utf-8").hex()})


@mutant("checkpoint-python-split", "the checkpoint reader splits lines with Python's str.split() (Unicode whitespace, no empty field)",
        "offsets", rules=("OFF-16",))
@replaces("checkpoint.read")
def _python_split(payload: JsonDict) -> JsonDict:
    data = payload.get("file")
    if data is None:
        return {"entries": []}
    try:
        lines = bytes.fromhex(data).decode("utf-8").splitlines()
        if int(lines[0]) != 0:
            raise ValueError("version")
        expected = int(lines[1])
        entries: dict[tuple[str, int], int] = {}
        for line in lines[2:]:
            topic, partition, offset = line.split()
            if int(offset) >= 0 or int(offset) == -4:
                entries[(topic, int(partition))] = int(offset)
            else:
                expected -= 1
        if len(entries) != expected:
            raise ValueError("count")
    except (ValueError, IndexError, UnicodeDecodeError):
        return {"error": {"type": "ValueError"}}
    ordered = sorted(entries.items(), key=lambda kv: (kv[0][0].encode("utf-16-be", "surrogatepass"), kv[0][1]))
    return {"entries": [[t, p, o] for (t, p), o in ordered]}


@mutant("empty-commit-keeps-offsets", "commit with an empty map writes nothing instead of wiping the committed offsets", "offsets", rules=("OFF-4",))
@replaces("offsets.commit")
def _empty_commit_noop(payload: JsonDict) -> JsonDict:
    if not payload["offsets"]:
        return {"cf": sorted(payload["cf"], key=lambda kv: bytes.fromhex(kv[0]))}
    return call("offsets.commit", payload)


@mutant("open-ignores-unclean-status", "open overwrites an OPEN status instead of reporting an unclean shutdown", "offsets", rules=("OFF-6",))
@replaces("offsets.open")
def _open_ignores_status(payload: JsonDict) -> JsonDict:
    return call("offsets.open", {**payload, "ignore_invalid_state": True})




@mutant("offset-key-dotted", "offset keys written as <topic>.<partition> instead of TopicPartition.toString()",
        "offsets", rules=("OFF-2",))
@alters("offsets.encode_entry")
def _offset_key_dotted(payload: JsonDict, out: JsonDict) -> JsonDict:
    if "topic" in payload and "error" not in out:
        out["key"] = f"{payload['topic']}.{payload['partition']}".encode("utf-8", "surrogatepass").hex()
    return out


@mutant("offset-value-little-endian", "offset and status values written as little-endian longs", "offsets",
        rules=("OFF-3",))
@alters("offsets.encode_entry")
def _offset_value_little_endian(payload: JsonDict, out: JsonDict) -> JsonDict:
    if "position" not in payload and "error" not in out:
        out["value"] = bytes.fromhex(out["value"])[::-1].hex()
    return out


@mutant("position-version-one", "PositionSerde writes version byte 1", "offsets", rules=("OFF-8",))
@alters("position.serialize")
def _position_version_one(payload: JsonDict, out: JsonDict) -> JsonDict:
    return out if "error" in out else {"bytes": "01" + out["bytes"][2:]}


@mutant("position-strict-length", "PositionSerde refuses bytes after the last partition (the zero padding)", "offsets",
        rules=("OFF-10",))
@alters("position.deserialize")
def _position_strict_length(payload: JsonDict, out: JsonDict) -> JsonDict:
    if "error" not in out and out["bytes_consumed"] * 2 < len(payload["bytes"]):
        return {"error": {"type": "DecodeError", "message": "trailing bytes after the position"}}
    return out


@mutant("position-merge-other-wins", "Position.merge takes the other position's offset, not the larger", "offsets",
        rules=("OFF-11",))
@replaces("position.merge")
def _position_merge_other_wins(payload: JsonDict) -> JsonDict:
    merged: dict[str, dict[int, int]] = {}
    for topic, partitions in [*payload["base"], *payload["other"]]:
        merged.setdefault(topic, {}).update({p: o for p, o in partitions})
    out = call("position.merge", {"base": [[t, sorted(ps.items())] for t, ps in merged.items()], "other": []})
    return out


@mutant("checkpoint-no-final-newline", "the checkpoint's lines joined with newlines, the last one unterminated",
        "offsets", rules=("OFF-13",))
@alters("checkpoint.write")
def _checkpoint_no_final_newline(payload: JsonDict, out: JsonDict) -> JsonDict:
    if out.get("file_exists") and out.get("file_text", "").endswith("\n"):
        text = out["file_text"][:-1]
        out = {**out, "file": text.encode("utf-8").hex(), "file_text": text}
    return out


@mutant("checkpoint-empty-map-writes-file", "writing an empty map writes a file holding 0 entries instead of deleting",
        "offsets", rules=("OFF-15",))
@replaces("checkpoint.write")
def _checkpoint_empty_map_writes_file(payload: JsonDict) -> JsonDict:
    if not payload.get("entries_in_map_order"):
        data = b"0\n0\n"
        return {"file_exists": True, "file": data.hex(), "file_text": data.decode(),
                "read_back": call("checkpoint.read", {"file": data.hex()})}
    return call("checkpoint.write", payload)


@mutant("position-file-as-position-bytes", "<store>.position holds PositionSerde bytes, not checkpoint text", "offsets",
        rules=("OFF-18",))
@replaces("position.to_checkpoint")
def _position_file_as_position_bytes(payload: JsonDict) -> JsonDict:
    if not payload.get("position"):
        return call("position.to_checkpoint", payload)
    return {"file": call("position.serialize", payload)["bytes"]}


def _segmented(name: object) -> bool:
    """Whether ``name`` is a store type of a family with a database per segment (the table's ``single_database``)."""
    try:
        return not info(StoreType.parse(str(name))).single_database
    except UnknownStoreTypeError:
        return False


@mutant("segments-without-offsets", "segment databases of window and session stores get no offsets family", "offsets",
        rules=("OFF-1", "LAY-6"))
@alters("layout.column_families")
def _segments_without_offsets(payload: JsonDict, out: JsonDict) -> JsonDict:
    if _segmented(payload.get("store_type")) and "open" in out:
        out["open"] = [cf for cf in out["open"] if cf != "offsets"]
    return out


@mutant("position-drops-empty-topics", "a decoded position leaves out topics with no partitions", "offsets",
        rules=("OFF-12",))
@alters("position.deserialize")
def _position_drops_empty_topics(payload: JsonDict, out: JsonDict) -> JsonDict:
    if "position" in out:
        out["position"] = [[topic, partitions] for topic, partitions in out["position"] if partitions]
    return out
