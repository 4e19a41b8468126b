"""Operations over KIP-1271 header-aware values (spec/header-values.md, HV-*)."""

from __future__ import annotations

from collections.abc import Callable

from kstate.codecs import header_values as hv
from kstate.codecs.primitives import read_varint, write_varint
from kstate.errors import CodecError
from kstate.ops import JsonDict, capture, headers_from_json, headers_to_json, op, tohex
from kstate.ops.inputs import require_hex, require_int

# --- leniency predicates: malformed bytes that Kafka accepts -----------------------------------------


def _headers_size_notes(data: bytes) -> tuple[list[str], int, int] | None:
    """Notes on the headersSize varint, the size and the offset after it; None if it does not decode."""
    try:
        size, pos = read_varint(data, 0)
    except CodecError:
        return None
    notes = [] if data[:pos] == write_varint(size) else ["non-canonical varint for headersSize"]
    return notes, size, pos


def _succeeds(compute: Callable[[], object]) -> bool:
    try:
        compute()
    except CodecError:
        return False
    return True


def _section_notes(data: bytes | None, *, static_helpers: bool) -> list[str]:
    if data is None:
        return []
    parsed = _headers_size_notes(data)
    if parsed is None:
        return []
    notes, size, pos = parsed
    if size < 0:
        if static_helpers:
            accepted = [name for name, ok in (("value", _succeeds(lambda: hv.raw_value_of(data))),
                                              ("timestamp", _succeeds(lambda: hv.timestamp_of_headers_value(data))))
                        if ok]
            if accepted:
                notes.append(f"negative headersSize {size}; Kafka's static {' and '.join(accepted)} helpers skip backwards")
    elif pos + size <= len(data):
        notes.extend(hv.header_bytes_leniencies(data[pos : pos + size]))
    return notes


def _lenient_header_bytes(payload: JsonDict) -> str | None:
    """HV-5: a negative count, trailing bytes, invalid UTF-8 or a non-canonical varint, accepted by Kafka."""
    return "; ".join(hv.header_bytes_leniencies(require_hex(payload, "bytes", None))) or None


def _lenient_value_timestamp_headers(payload: JsonDict) -> str | None:
    """HV-5 inside the header section, and HV-9's static helpers accepting a negative headersSize."""
    return "; ".join(_section_notes(require_hex(payload, "bytes", None), static_helpers=True)) or None


def _lenient_section(payload: JsonDict) -> str | None:
    """HV-5 inside the header section of a header-aware value."""
    return "; ".join(_section_notes(require_hex(payload, "bytes", None), static_helpers=False)) or None


def _lenient_raw_aggregation(payload: JsonDict) -> str | None:
    """HV-14: ``rawAggregation`` skips backwards over a negative headersSize."""
    data = require_hex(payload, "bytes", None)
    parsed = _headers_size_notes(data) if data else None
    if parsed is None or data is None or data[0] == 0:
        return None
    notes, size, _ = parsed
    if size < 0 and _succeeds(lambda: hv.raw_aggregation_of(data)):
        notes.append(f"negative headersSize {size} skipped backwards")
    return "; ".join(notes) or None


# --- header bytes ------------------------------------------------------------------------------------


def _headers_input(payload: JsonDict, field: str = "headers") -> list[tuple[str, bytes | None]] | None:
    return headers_from_json(payload.get(field), field)


@op("header_values.serialize_headers", rules=["HV-1", "HV-2", "HV-4"], java=["HeadersSerializer.serialize"])
def serialize_headers(payload: JsonDict) -> JsonDict:
    """Header bytes: empty for null or no headers, else count and headers in order."""
    return {"bytes": tohex(hv.encode_headers(_headers_input(payload)))}


@op(
    "header_values.deserialize_headers",
    rules=["HV-1", "HV-2", "HV-4", "HV-5", "HV-13"],
    java=["HeadersDeserializer.deserialize"],
    lenient=_lenient_header_bytes,
)
def deserialize_headers(payload: JsonDict) -> JsonDict:
    """Decode header bytes (without a size prefix) as Kafka does."""
    return {"headers": headers_to_json(hv.decode_headers(require_hex(payload, "bytes")))}


# --- ValueTimestampHeaders ------------------------------------------------------------------------------


@op("header_values.serialize", rules=["HV-6", "HV-7"], java=["ValueTimestampHeadersSerializer.serialize"])
def serialize(payload: JsonDict) -> JsonDict:
    """``[varint headersSize][header bytes][timestamp][value]``; a null value gives null."""
    data = hv.encode_value_timestamp_headers(require_hex(payload, "value"), require_int(payload, "timestamp"), _headers_input(payload))
    return {"bytes": tohex(data)}


def _vth_json(decoded: hv.ValueTimestampHeaders | None) -> JsonDict | None:
    if decoded is None:
        return None
    return {"value": tohex(decoded.value), "timestamp": decoded.timestamp, "headers": headers_to_json(decoded.headers)}


@op(
    "header_values.deserialize",
    rules=["HV-6", "HV-7", "HV-9", "HV-10", "HV-13", "HV-14"],
    java=["ValueTimestampHeadersDeserializer.deserialize"],
    lenient=_lenient_value_timestamp_headers,
)
def deserialize(payload: JsonDict) -> JsonDict:
    """The full decode and, separately, Kafka's static ``value``/``timestamp``/``headers`` helpers."""
    data = require_hex(payload, "bytes")
    return {
        "deserialize": capture(lambda: {"result": _vth_json(hv.decode_value_timestamp_headers(data))}),
        "static_value": capture(lambda: {"value": tohex(hv.raw_value_of(data))}),
        "static_timestamp": capture(lambda: {"timestamp": hv.timestamp_of_headers_value(data)}),
        "static_headers": capture(lambda: {"headers": headers_to_json(hv.headers_of(data))}),
    }


@op("header_values.deserialize_lazy", rules=["HV-6", "HV-10", "HV-13"], lenient=_lenient_section)
def deserialize_lazy(payload: JsonDict) -> JsonDict:
    """Decode value and timestamp without parsing the header bytes; ``headers`` is the later, separate parse."""
    decoded = hv.decode_value_timestamp_headers(require_hex(payload, "bytes"))
    if decoded is None:
        return {"result": None, "headers": None}
    result = {"value": tohex(decoded.value), "timestamp": decoded.timestamp, "raw_headers": tohex(decoded.raw_headers)}
    return {"result": result, "headers": capture(lambda: {"headers": headers_to_json(decoded.headers)})}


# --- AggregationWithHeaders (session stores) ------------------------------------------------------------


@op("header_values.serialize_aggregation", rules=["HV-11"])
def serialize_aggregation(payload: JsonDict) -> JsonDict:
    """``[varint headersSize][header bytes][aggregation]``; a null aggregation gives null."""
    return {"bytes": tohex(hv.encode_aggregation_with_headers(require_hex(payload, "aggregation"), _headers_input(payload)))}


@op("header_values.deserialize_aggregation", rules=["HV-11", "HV-13"], lenient=_lenient_section)
def deserialize_aggregation(payload: JsonDict) -> JsonDict:
    """Split an ``AggregationWithHeaders``; null gives a null result."""
    decoded = hv.decode_aggregation_with_headers(require_hex(payload, "bytes"))
    if decoded is None:
        return {"result": None}
    return {"result": {"aggregation": tohex(decoded.aggregation), "headers": headers_to_json(decoded.headers)}}


@op("header_values.raw_aggregation", rules=["HV-10", "HV-11", "HV-14"], lenient=_lenient_raw_aggregation)
def raw_aggregation(payload: JsonDict) -> JsonDict:
    """``AggregationWithHeadersDeserializer.rawAggregation``: the aggregation with header bytes skipped unparsed."""
    return {"aggregation": tohex(hv.raw_aggregation_of(require_hex(payload, "bytes")))}


# --- conversions ----------------------------------------------------------------------------------------


def _with_deserialized(data: bytes | None) -> JsonDict:
    out: JsonDict = {"bytes": tohex(data)}
    if data is not None:
        decoded = capture(lambda: {"v": _vth_json(hv.decode_value_timestamp_headers(data))})
        if "error" not in decoded:
            out["deserialized"] = decoded["v"]
    return out


@op("header_values.convert_to_header_format", rules=["HV-8"], java=["HeadersBytesStore.convertToHeaderFormat"])
def convert_to_header_format(payload: JsonDict) -> JsonDict:
    """Prepend ``00``; ``deserialized`` is present when the result decodes as a ``ValueTimestampHeaders``."""
    return _with_deserialized(hv.convert_to_header_format(require_hex(payload, "value_and_timestamp")))


@op("header_values.convert_from_plain_to_header_format", rules=["HV-8"])
def convert_from_plain_to_header_format(payload: JsonDict) -> JsonDict:
    """``00`` + ``FF``×8 + plain value; ``deserialized`` shows timestamp -1 and no headers."""
    return _with_deserialized(hv.convert_from_plain_to_header_format(require_hex(payload, "plain_value")))


@op("header_values.raw_value_to_headers_value", rules=["HV-12"])
def raw_value_to_headers_value(payload: JsonDict) -> JsonDict:
    """Restore of a timestamped KV or window store with headers from a changelog record."""
    headers = _headers_input(payload, "record_headers")
    value = hv.raw_value_to_headers_value(require_hex(payload, "record_value"), require_int(payload, "record_timestamp"), headers)
    return {"value": tohex(value), "timestamp": require_int(payload, "record_timestamp"), "headers": headers_to_json(headers)}


@op("header_values.raw_value_to_session_headers_value", rules=["HV-12"])
def raw_value_to_session_headers_value(payload: JsonDict) -> JsonDict:
    """Restore of a session store with headers from a changelog record (no timestamp in the value)."""
    headers = _headers_input(payload, "record_headers")
    value = hv.raw_value_to_session_headers_value(require_hex(payload, "record_value"), headers)
    return {"value": tohex(value), "headers": headers_to_json(headers)}

