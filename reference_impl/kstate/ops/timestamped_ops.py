"""Operations over KIP-258 timestamped values (spec/timestamped.md, TSKV-*)."""

from __future__ import annotations

from kstate.codecs import timestamped as t
from kstate.errors import KStateError
from kstate.ops import VECTOR_INPUTS, JsonDict, op, tohex, unhex
from kstate.ops.fields import Output, Request, bool_field, hex_field, int_field, parse_request
from kstate.ops.inputs import InputError

#: Stored bytes that must be there to be read (a null is refused).
_BYTES = hex_field("bytes", nullable=False, type="hex")
#: The comparison's inputs, declared once for the operation and for its leniency check.
_COMPARE_FIELDS = (hex_field("old"), hex_field("new"),
                   bool_field("same_reference", "Java's old == new; when left out, two byte strings are two arrays",
                              default=None))


def _lenient_short_comparison(payload: JsonDict) -> str | None:
    """Kafka compares values shorter than the 8-byte timestamp by length alone (TSKV-4)."""
    old, new = unhex(payload.get("old")), unhex(payload.get("new"))
    short = [name for name, data in (("old", old), ("new", new)) if data is not None and len(data) < t.TIMESTAMP_SIZE]
    if not short:
        return None
    try:
        _compare(payload)
    except KStateError:
        return None
    return f"{' and '.join(short)} shorter than the 8-byte timestamp, yet compared without an error"


@op("timestamped.serialize", rules=["TSKV-1", "TSKV-2"], java=["ValueAndTimestampSerializer.serialize"],
    inputs=[hex_field("value"), int_field("timestamp")], outputs=[Output("bytes", "hex | null")])
def serialize(request: Request) -> JsonDict:
    """``[timestamp int64 BE][value]``; a null value gives null."""
    data = t.encode_value_and_timestamp(request.value, request.timestamp)
    return {"bytes": tohex(data)}


@op("timestamped.deserialize", rules=["TSKV-1", "TSKV-3"], java=["ValueAndTimestampDeserializer.deserialize"],
    inputs=[hex_field("bytes")], outputs=[Output("result", "{timestamp: int, value: hex} | null")])
def deserialize(request: Request) -> JsonDict:
    """Split ``[timestamp][value]``; null gives a null result, fewer than 8 bytes an error."""
    decoded = t.decode_value_and_timestamp(request.bytes)
    if decoded is None:
        return {"result": None}
    value, timestamp = decoded
    return {"result": {"value": tohex(value), "timestamp": timestamp}}


@op("timestamped.raw_value", rules=["TSKV-3"], inputs=[_BYTES], outputs=[Output("value", "hex")])
def raw_value(request: Request) -> JsonDict:
    """``ValueAndTimestampDeserializer.rawValue``: the bytes after the timestamp."""
    return {"value": tohex(t.raw_value(request.bytes))}


@op("timestamped.timestamp", rules=["TSKV-3"], inputs=[_BYTES], outputs=[Output("timestamp", "int")])
def timestamp(request: Request) -> JsonDict:
    """``ValueAndTimestampDeserializer.timestamp``: the first 8 bytes as an int64."""
    return {"timestamp": t.timestamp_of(request.bytes)}


@op(
    "timestamped.convert_to_timestamped_format",
    rules=["TSKV-5"],
    java=["TimestampedBytesStore.convertToTimestampedFormat"],
    inputs=[hex_field("plain_value")],
    outputs=[Output("bytes", "hex | null")],
)
def convert_to_timestamped_format(request: Request) -> JsonDict:
    """A legacy plain value with the -1 timestamp prefix; null stays null."""
    return {"bytes": tohex(t.convert_to_timestamped_format(request.plain_value))}


@op(
    "timestamped.raw_value_to_timestamped_value",
    rules=["TSKV-6"],
    java=["RecordConverters.rawValueToTimestampedValue"],
    inputs=[int_field("record_timestamp"), hex_field("record_value")],
    outputs=[Output("value", "hex | null"), Output("timestamp", "int")],
)
def raw_value_to_timestamped_value(request: Request) -> JsonDict:
    """The restore conversion: the record timestamp is prepended; the record timestamp is unchanged."""
    record_timestamp = request.record_timestamp
    value = t.raw_value_to_timestamped_value(request.record_value, record_timestamp)
    return {"value": tohex(value), "timestamp": record_timestamp}


def _compare(payload: JsonDict) -> bool:
    return _compare_request(parse_request(_COMPARE_FIELDS, payload))


def _compare_request(request: Request) -> bool:
    old, new = request.old, request.new
    # Two byte strings are two arrays unless the input says they are one; two nulls are always one (TSKV-4).
    same = bool(request.same_reference)
    if same and old != new:
        raise InputError("same_reference", "true, but old and new differ")
    return t.values_are_same_and_time_is_increasing(old, new, same_reference=same)


def _recorded_comparison(payload: JsonDict) -> JsonDict:
    """A recorded vector with byte-equal non-null ``old`` and ``new`` passed one array twice (TSKV-4 step 1).

    The vector files cannot express identity; the recorder's equal-input case shows it: Kafka answered
    true at an equal timestamp, which step 4 refuses for two distinct arrays.
    """
    if "same_reference" not in payload and payload.get("old") is not None and payload.get("old") == payload.get("new"):
        return {**payload, "same_reference": True}
    return payload


VECTOR_INPUTS["ValueAndTimestampSerializer.valuesAreSameAndTimeIsIncreasing"] = _recorded_comparison


@op(
    "timestamped.values_are_same_and_time_is_increasing",
    rules=["TSKV-4"],
    java=["ValueAndTimestampSerializer.valuesAreSameAndTimeIsIncreasing"],
    lenient=_lenient_short_comparison,
    inputs=_COMPARE_FIELDS,
    outputs=[Output("result", "bool")],
)
def values_are_same_and_time_is_increasing(request: Request) -> JsonDict:
    """Whether a write may be skipped: same value bytes and a strictly later timestamp.

    ``same_reference`` (optional) is Java's ``old == new``; when absent, two byte strings are two arrays.
    """
    return {"result": _compare_request(request)}
