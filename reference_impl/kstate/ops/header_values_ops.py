"""Operations over KIP-1271 header-aware values (spec/header-values.md, HV-*)."""

from __future__ import annotations

from collections.abc import Callable

from kstate.codecs import header_values as hv
from kstate.codecs.primitives import read_varint, write_varint
from kstate.errors import CodecError
from kstate.ops import JsonDict, capture, headers_to_json, op, tohex
from kstate.ops.fields import Output, Request, headers_field, hex_field, int_field
from kstate.ops.inputs import require_hex

#: The stored bytes every decode reads (null is a Java null the decode answers).
_BYTES = hex_field("bytes")
_HEADERS = headers_field()
_RECORD_HEADERS = headers_field("record_headers", type="list[[string, hex | null]]")
_PAIRS = "list[[string, hex | null]]"
#: A conversion's answer: the bytes, and their decode where they decode as a ValueTimestampHeaders.
_CONVERTED = (Output("bytes", "hex | null"),
              Output("deserialized", "{headers: list, timestamp: int, value: hex}", optional=True))

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


@op("header_values.serialize_headers", rules=["HV-1", "HV-2", "HV-4"], java=["HeadersSerializer.serialize"],
    inputs=[_HEADERS], outputs=[Output("bytes", "hex")])
def serialize_headers(request: Request) -> JsonDict:
    """Header bytes: empty for null or no headers, else count and headers in order."""
    return {"bytes": tohex(hv.encode_headers(request.headers))}


@op(
    "header_values.deserialize_headers",
    rules=["HV-1", "HV-2", "HV-4", "HV-5", "HV-13"],
    java=["HeadersDeserializer.deserialize"],
    lenient=_lenient_header_bytes,
    inputs=[_BYTES],
    outputs=[Output("headers", _PAIRS)],
)
def deserialize_headers(request: Request) -> JsonDict:
    """Decode header bytes (without a size prefix) as Kafka does."""
    return {"headers": headers_to_json(hv.decode_headers(request.bytes))}


# --- ValueTimestampHeaders ------------------------------------------------------------------------------


@op("header_values.serialize", rules=["HV-6", "HV-7"], java=["ValueTimestampHeadersSerializer.serialize"],
    inputs=[hex_field("value"), int_field("timestamp"), _HEADERS], outputs=[Output("bytes", "hex | null")])
def serialize(request: Request) -> JsonDict:
    """``[varint headersSize][header bytes][timestamp][value]``; a null value gives null."""
    data = hv.encode_value_timestamp_headers(request.value, request.timestamp, request.headers)
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
    inputs=[_BYTES],
    outputs=[Output("deserialize", f"{{result: {{headers: {_PAIRS}, timestamp: int, value: hex}} | null}} | error"),
             Output("static_value", "{value: hex | null} | error"),
             Output("static_timestamp", "{timestamp: int} | error"),
             Output("static_headers", f"{{headers: {_PAIRS} | null}} | error")],
)
def deserialize(request: Request) -> JsonDict:
    """The full decode and, separately, Kafka's static ``value``/``timestamp``/``headers`` helpers."""
    data = request.bytes
    return {
        "deserialize": capture(lambda: {"result": _vth_json(hv.decode_value_timestamp_headers(data))}),
        "static_value": capture(lambda: {"value": tohex(hv.raw_value_of(data))}),
        "static_timestamp": capture(lambda: {"timestamp": hv.timestamp_of_headers_value(data)}),
        "static_headers": capture(lambda: {"headers": headers_to_json(hv.headers_of(data))}),
    }


@op("header_values.deserialize_lazy", rules=["HV-6", "HV-10", "HV-13"], lenient=_lenient_section,
    inputs=[_BYTES],
    outputs=[Output("result", "{raw_headers: hex, timestamp: int, value: hex} | null"),
             Output("headers", f"{{headers: {_PAIRS}}} | error | null", "the later, separate parse of raw_headers")])
def deserialize_lazy(request: Request) -> JsonDict:
    """Decode value and timestamp without parsing the header bytes; ``headers`` is the later, separate parse."""
    decoded = hv.decode_value_timestamp_headers(request.bytes)
    if decoded is None:
        return {"result": None, "headers": None}
    result = {"value": tohex(decoded.value), "timestamp": decoded.timestamp, "raw_headers": tohex(decoded.raw_headers)}
    return {"result": result, "headers": capture(lambda: {"headers": headers_to_json(decoded.headers)})}


# --- AggregationWithHeaders (session stores) ------------------------------------------------------------


@op("header_values.serialize_aggregation", rules=["HV-11"], inputs=[hex_field("aggregation"), _HEADERS],
    outputs=[Output("bytes", "hex | null")])
def serialize_aggregation(request: Request) -> JsonDict:
    """``[varint headersSize][header bytes][aggregation]``; a null aggregation gives null."""
    return {"bytes": tohex(hv.encode_aggregation_with_headers(request.aggregation, request.headers))}


@op("header_values.deserialize_aggregation", rules=["HV-11", "HV-13"], lenient=_lenient_section, inputs=[_BYTES],
    outputs=[Output("result", f"{{aggregation: hex, headers: {_PAIRS}}} | null")])
def deserialize_aggregation(request: Request) -> JsonDict:
    """Split an ``AggregationWithHeaders``; null gives a null result."""
    decoded = hv.decode_aggregation_with_headers(request.bytes)
    if decoded is None:
        return {"result": None}
    return {"result": {"aggregation": tohex(decoded.aggregation), "headers": headers_to_json(decoded.headers)}}


@op("header_values.raw_aggregation", rules=["HV-10", "HV-11", "HV-14"], lenient=_lenient_raw_aggregation,
    inputs=[_BYTES], outputs=[Output("aggregation", "hex | null")])
def raw_aggregation(request: Request) -> JsonDict:
    """``AggregationWithHeadersDeserializer.rawAggregation``: the aggregation with header bytes skipped unparsed."""
    return {"aggregation": tohex(hv.raw_aggregation_of(request.bytes))}


# --- conversions ----------------------------------------------------------------------------------------


def _with_deserialized(data: bytes | None) -> JsonDict:
    out: JsonDict = {"bytes": tohex(data)}
    if data is not None:
        decoded = capture(lambda: {"v": _vth_json(hv.decode_value_timestamp_headers(data))})
        if "error" not in decoded:
            out["deserialized"] = decoded["v"]
    return out


@op("header_values.convert_to_header_format", rules=["HV-8"], java=["HeadersBytesStore.convertToHeaderFormat"],
    inputs=[hex_field("value_and_timestamp")], outputs=_CONVERTED)
def convert_to_header_format(request: Request) -> JsonDict:
    """Prepend ``00``; ``deserialized`` is present when the result decodes as a ``ValueTimestampHeaders``."""
    return _with_deserialized(hv.convert_to_header_format(request.value_and_timestamp))


@op("header_values.convert_from_plain_to_header_format", rules=["HV-8"], inputs=[hex_field("plain_value")],
    outputs=_CONVERTED)
def convert_from_plain_to_header_format(request: Request) -> JsonDict:
    """``00`` + ``FF``×8 + plain value; ``deserialized`` shows timestamp -1 and no headers."""
    return _with_deserialized(hv.convert_from_plain_to_header_format(request.plain_value))


@op("header_values.raw_value_to_headers_value", rules=["HV-12"],
    inputs=[_RECORD_HEADERS, hex_field("record_value"), int_field("record_timestamp")],
    outputs=[Output("value", "hex | null"), Output("timestamp", "int"), Output("headers", _PAIRS)])
def raw_value_to_headers_value(request: Request) -> JsonDict:
    """Restore of a timestamped KV or window store with headers from a changelog record."""
    headers = request.record_headers
    value = hv.raw_value_to_headers_value(request.record_value, request.record_timestamp, headers)
    return {"value": tohex(value), "timestamp": request.record_timestamp, "headers": headers_to_json(headers)}


@op("header_values.raw_value_to_session_headers_value", rules=["HV-12"],
    inputs=[_RECORD_HEADERS, hex_field("record_value")],
    outputs=[Output("value", "hex | null"), Output("headers", _PAIRS)])
def raw_value_to_session_headers_value(request: Request) -> JsonDict:
    """Restore of a session store with headers from a changelog record (no timestamp in the value)."""
    headers = request.record_headers
    value = hv.raw_value_to_session_headers_value(request.record_value, headers)
    return {"value": tohex(value), "headers": headers_to_json(headers)}

