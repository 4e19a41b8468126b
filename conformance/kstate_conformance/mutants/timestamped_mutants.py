"""Mutants of KIP-258 timestamped values: realistic ways to get the 8-byte prefix wrong."""

from __future__ import annotations

import struct

from kstate.ops import JsonDict
from kstate_conformance.adapter import Handler
from kstate_conformance.mutants import mutant

FAMILY = "timestamped"


def _unhex(value: str | None) -> bytes | None:
    return None if value is None else bytes.fromhex(value)


def _hex(value: bytes | None) -> str | None:
    return None if value is None else value.hex()


@mutant("timestamped-little-endian", "timestamps written and read little-endian (struct '<q')", FAMILY, rules=("TSKV-1",))
def _little_endian() -> dict[str, Handler]:
    def encode(value: bytes | None, ts: int) -> bytes | None:
        return None if value is None else struct.pack("<q", ts) + value

    def serialize(payload: JsonDict) -> JsonDict:
        return {"bytes": _hex(encode(_unhex(payload["value"]), payload["timestamp"]))}

    def deserialize(payload: JsonDict) -> JsonDict:
        data = _unhex(payload["bytes"])
        if data is None:
            return {"result": None}
        if len(data) < 8:
            return {"error": {"reason": "short"}}
        return {"result": {"value": data[8:].hex(), "timestamp": struct.unpack("<q", data[:8])[0]}}

    def restore(payload: JsonDict) -> JsonDict:
        value = encode(_unhex(payload["record_value"]), payload["record_timestamp"])
        return {"value": _hex(value), "timestamp": payload["record_timestamp"]}

    return {"timestamped.serialize": serialize, "timestamped.deserialize": deserialize,
            "timestamped.raw_value_to_timestamped_value": restore}


@mutant("timestamped-legacy-timestamp-zero", "legacy plain values converted with timestamp 0 instead of -1", FAMILY, rules=("TSKV-5",))
def _legacy_zero() -> dict[str, Handler]:
    def convert(payload: JsonDict) -> JsonDict:
        plain = _unhex(payload["plain_value"])
        return {"bytes": _hex(None if plain is None else bytes(8) + plain)}

    return {"timestamped.convert_to_timestamped_format": convert}


@mutant("timestamped-empty-is-null", "an empty value serialized as null (a delete) like a null value", FAMILY, rules=("TSKV-2",))
def _empty_is_null() -> dict[str, Handler]:
    def serialize(payload: JsonDict) -> JsonDict:
        value = _unhex(payload["value"])
        if not value:
            return {"bytes": None}
        return {"bytes": (struct.pack(">q", payload["timestamp"]) + value).hex()}

    return {"timestamped.serialize": serialize}


@mutant("timestamped-equal-time-is-increasing", "valuesAreSameAndTimeIsIncreasing with >= instead of >", FAMILY, rules=("TSKV-4",))
def _equal_time_increasing() -> dict[str, Handler]:
    def compare(payload: JsonDict) -> JsonDict:
        old, new = _unhex(payload["old"]), _unhex(payload["new"])
        same = payload.get("same_reference", payload["old"] == payload["new"])
        if same or (old is None and new is None):
            return {"result": True}
        if old is None or new is None or len(old) != len(new):
            return {"result": False}
        if len(old) < 8:
            return {"error": {"reason": "short"}}
        increasing = struct.unpack(">q", new[:8])[0] >= struct.unpack(">q", old[:8])[0]
        return {"result": increasing and old[8:] == new[8:]}

    return {"timestamped.values_are_same_and_time_is_increasing": compare}


@mutant("timestamped-tombstone-restored-as-value", "restore turns a null changelog value into 8 timestamp bytes", FAMILY, rules=("TSKV-6", "CL-10"))
def _tombstone_restored() -> dict[str, Handler]:
    def restore(payload: JsonDict) -> JsonDict:
        value = _unhex(payload["record_value"]) or b""
        return {"value": (struct.pack(">q", payload["record_timestamp"]) + value).hex(),
                "timestamp": payload["record_timestamp"]}

    return {"timestamped.raw_value_to_timestamped_value": restore}


@mutant("timestamped-short-input-zero-padded", "values shorter than 8 bytes decoded with a zero-padded timestamp", FAMILY, rules=("TSKV-3",))
def _short_padded() -> dict[str, Handler]:
    def deserialize(payload: JsonDict) -> JsonDict:
        data = _unhex(payload["bytes"])
        if data is None:
            return {"result": None}
        padded = data.rjust(8, b"\x00") if len(data) < 8 else data
        return {"result": {"value": padded[8:].hex(), "timestamp": struct.unpack(">q", padded[:8])[0]}}

    return {"timestamped.deserialize": deserialize}
