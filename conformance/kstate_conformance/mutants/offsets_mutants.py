"""Mutants of store-managed offsets, PositionSerde and checkpoint files."""

from __future__ import annotations

from kstate.ops import JsonDict, call
from kstate_conformance.adapter import Handler
from kstate_conformance.mutants import mutant


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
def _unknown_as_minus_one() -> dict[str, Handler]:
    def write(payload: JsonDict) -> JsonDict:
        entries = [[t, p, -1 if o == -4 else o] for t, p, o in payload["entries_in_map_order"]]
        if any(o is not None and o < 0 and o != -1 for _, _, o in entries):
            return call("checkpoint.write", payload)
        text = f"0\n{len(entries)}\n" + "".join(f"{t} {p} {o}\n" for t, p, o in entries) if entries else None
        if text is None:
            return call("checkpoint.write", payload)
        data = text.encode("utf-8")
        return {"file_exists": True, "file": data.hex(), "file_text": text,
                "read_back": call("checkpoint.read", {"file": data.hex()})}

    return {"checkpoint.write": write}


@mutant("checkpoint-ignores-count", "the checkpoint reader trusts the lines and never checks the entry count", "offsets", rules=("OFF-17",))
def _ignores_count() -> dict[str, Handler]:
    def read(payload: JsonDict) -> JsonDict:
        data = payload.get("file")
        out = call("checkpoint.read", payload)
        if "error" not in out or data is None:
            return out
        lines = bytes.fromhex(data).decode("utf-8", "replace").split("\n")
        if len(lines) < 2:
            return out
        fixed = "\n".join([lines[0], str(sum(1 for line in lines[2:] if line)), *lines[2:]])
        return call("checkpoint.read", {"file": fixed.encode("utf-8").hex()})

    return {"checkpoint.read": read}


@mutant("checkpoint-python-split", "the checkpoint reader splits lines with Python's str.split() (Unicode whitespace, no empty field)",
        "offsets", rules=("OFF-16",))
def _python_split() -> dict[str, Handler]:
    def read(payload: JsonDict) -> JsonDict:
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

    return {"checkpoint.read": read}


@mutant("empty-commit-keeps-offsets", "commit with an empty map writes nothing instead of wiping the committed offsets", "offsets", rules=("OFF-4",))
def _empty_commit_noop() -> dict[str, Handler]:
    def commit(payload: JsonDict) -> JsonDict:
        if not payload["offsets"]:
            return {"cf": sorted(payload["cf"], key=lambda kv: bytes.fromhex(kv[0]))}
        return call("offsets.commit", payload)

    return {"offsets.commit": commit}


@mutant("open-ignores-unclean-status", "open overwrites an OPEN status instead of reporting an unclean shutdown", "offsets", rules=("OFF-6",))
def _open_ignores_status() -> dict[str, Handler]:
    def open_(payload: JsonDict) -> JsonDict:
        return call("offsets.open", {**payload, "ignore_invalid_state": True})

    return {"offsets.open": open_}


