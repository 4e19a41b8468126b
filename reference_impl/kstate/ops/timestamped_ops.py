"""Operations over KIP-258 timestamped values (spec/timestamped.md, TSKV-*)."""

from __future__ import annotations

from kstate.codecs import timestamped as t
from kstate.errors import CodecError
from kstate.ops import JsonDict, op, tohex, unhex, unhex_required


def _lenient_short_comparison(payload: JsonDict) -> str | None:
    """Kafka compares values shorter than the 8-byte timestamp by length alone (TSKV-4)."""
    old, new = unhex(payload.get("old")), unhex(payload.get("new"))
    short = [name for name, data in (("old", old), ("new", new)) if data is not None and len(data) < t.TIMESTAMP_SIZE]
    if not short:
        return None
    try:
        _compare(payload)
    except CodecError:
        return None
    return f"{' and '.join(short)} shorter than the 8-byte timestamp, yet compared without an error"


@op("timestamped.serialize", rules=["TSKV-1", "TSKV-2"], java=["ValueAndTimestampSerializer.serialize"])
def serialize(payload: JsonDict) -> JsonDict:
    """``[timestamp int64 BE][value]``; a null value gives null."""
    data = t.encode_value_and_timestamp(unhex(payload["value"]), payload["timestamp"])
    return {"bytes": tohex(data)}


@op("timestamped.deserialize", rules=["TSKV-1", "TSKV-3"], java=["ValueAndTimestampDeserializer.deserialize"])
def deserialize(payload: JsonDict) -> JsonDict:
    """Split ``[timestamp][value]``; null gives a null result, fewer than 8 bytes an error."""
    decoded = t.decode_value_and_timestamp(unhex(payload["bytes"]))
    if decoded is None:
        return {"result": None}
    value, timestamp = decoded
    return {"result": {"value": tohex(value), "timestamp": timestamp}}


@op("timestamped.raw_value", rules=["TSKV-3"])
def raw_value(payload: JsonDict) -> JsonDict:
    """``ValueAndTimestampDeserializer.rawValue``: the bytes after the timestamp."""
    return {"value": tohex(t.raw_value(unhex_required(payload["bytes"])))}


@op("timestamped.timestamp", rules=["TSKV-3"])
def timestamp(payload: JsonDict) -> JsonDict:
    """``ValueAndTimestampDeserializer.timestamp``: the first 8 bytes as an int64."""
    return {"timestamp": t.timestamp_of(unhex_required(payload["bytes"]))}


@op(
    "timestamped.convert_to_timestamped_format",
    rules=["TSKV-5"],
    java=["TimestampedBytesStore.convertToTimestampedFormat"],
)
def convert_to_timestamped_format(payload: JsonDict) -> JsonDict:
    """A legacy plain value with the -1 timestamp prefix; null stays null."""
    return {"bytes": tohex(t.convert_to_timestamped_format(unhex(payload["plain_value"])))}


@op(
    "timestamped.raw_value_to_timestamped_value",
    rules=["TSKV-6"],
    java=["RecordConverters.rawValueToTimestampedValue"],
)
def raw_value_to_timestamped_value(payload: JsonDict) -> JsonDict:
    """The restore conversion: the record timestamp is prepended; the record timestamp is unchanged."""
    value = t.raw_value_to_timestamped_value(unhex(payload["record_value"]), payload["record_timestamp"])
    return {"value": tohex(value), "timestamp": payload["record_timestamp"]}


def _compare(payload: JsonDict) -> bool:
    old, new = unhex(payload["old"]), unhex(payload["new"])
    same = payload.get("same_reference")
    if same is None:
        # A recorded vector cannot express Java identity: equal inputs stand for one array passed twice.
        same = payload["old"] == payload["new"]
    elif same and old != new:
        raise CodecError("value-and-timestamp", "same_reference is true but old and new differ")
    return t.values_are_same_and_time_is_increasing(old, new, same_reference=bool(same))


@op(
    "timestamped.values_are_same_and_time_is_increasing",
    rules=["TSKV-4"],
    java=["ValueAndTimestampSerializer.valuesAreSameAndTimeIsIncreasing"],
    lenient=_lenient_short_comparison,
)
def values_are_same_and_time_is_increasing(payload: JsonDict) -> JsonDict:
    """Whether a write may be skipped: same value bytes and a strictly later timestamp.

    ``same_reference`` (optional) is Java's ``old == new``; when absent, equal inputs count as one array.
    """
    return {"result": _compare(payload)}
