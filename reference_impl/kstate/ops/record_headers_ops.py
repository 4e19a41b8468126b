"""Operations over KIP-82 headers and the v2 record (spec/record-headers.md, HDR-*)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from kstate.codecs import record_v2 as rv2
from kstate.codecs.primitives import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN, read_varint, read_varlong
from kstate.codecs.record_headers import Header, Headers
from kstate.errors import CodecError, DecodeError
from kstate.ops import JsonDict, capture, op, tohex, unhex, unhex_required
from kstate.ops.fields import Field, Output, Request, hex_field

#: The batch base offset and base timestamp ``record_v2.write`` decodes its record with, as the vectors do.
CHECK_BASE_OFFSET = 1000
CHECK_BASE_TIMESTAMP = 5000

HeaderPair = tuple[Any, bytes | None]


def _headers_input(value: Any, fmt: str) -> list[HeaderPair] | None:
    # Unlike ops.headers_from_json, a null key stays null so that the codec can refuse it (HDR-2).
    if value is None:
        return None
    if not isinstance(value, list):
        raise CodecError(fmt, f"headers must be a list of [key, value] pairs, got {type(value).__name__}")
    pairs: list[HeaderPair] = []
    for item in value:
        if not isinstance(item, (list, tuple)) or len(item) != 2:
            raise CodecError(fmt, f"a header must be a [key, value] pair, got {item!r}")
        pairs.append((item[0], unhex(item[1], fmt)))
    return pairs


def _headers_output(pairs: list[tuple[str, bytes | None]]) -> list[list[Any]]:
    return [[key, tohex(value)] for key, value in pairs]


def _java_long(payload: JsonDict, name: str, fmt: str) -> int:
    value = payload.get(name)
    if not isinstance(value, int) or isinstance(value, bool) or not INT64_MIN <= value <= INT64_MAX:
        raise CodecError(fmt, f"{name} must be a Java long, got {value!r}")
    return value


def _java_int(payload: JsonDict, name: str, fmt: str) -> int:
    value = payload.get(name)
    if not isinstance(value, int) or isinstance(value, bool) or not INT32_MIN <= value <= INT32_MAX:
        raise CodecError(fmt, f"{name} must be a Java int, got {value!r}")
    return value


# --- the declared fields: the codec refuses a bad one with its own typed error (CodecError of its format) ------


def _headers_field(fmt: str) -> Field:
    """Header pairs whose key may be null, for the codec to refuse (HDR-2)."""
    return Field("headers", "list[[string | null, hex | null]] | null", "a null key is the codec's to refuse",
                 read=lambda payload, name, _default: _headers_input(payload.get(name), fmt))


def _bytes_field(fmt: str) -> Field:
    return Field("bytes", "hex", read=lambda payload, name, _default: unhex_required(payload.get(name), fmt))


def _long_field(name: str) -> Field:
    return Field(name, "int", "a Java long",
                 read=lambda payload, field_name, _default: _java_long(payload, field_name, rv2.RECORD_FORMAT))


def _int_field(name: str) -> Field:
    return Field(name, "int", "a Java int; negative is null",
                 read=lambda payload, field_name, _default: _java_int(payload, field_name, rv2.RECORD_FORMAT))


#: Deltas the codec checks itself (type and range), refusing with its typed error (HDR-9): passed on as sent.
_DELTAS = (Field("offset_delta", "int", "checked by the codec"), Field("timestamp_delta", "int", "checked by the codec"))
_HEADER_PAIRS = "list[[string, hex | null]]"


def _decoded_json(record: rv2.DecodedRecord, base_offset: int, base_timestamp: int) -> JsonDict:
    return {
        "base_offset": base_offset,
        "base_timestamp": base_timestamp,
        "offset": record.offset,
        "timestamp": record.timestamp,
        "key": tohex(record.key),
        "value": tohex(record.value),
        "headers": _headers_output(record.headers),
    }


# --- v2 record ------------------------------------------------------------------------------------------


@op("record_v2.write", rules=["HDR-3", "HDR-7", "HDR-8", "HDR-9", "HDR-10", "HDR-11", "HDR-12", "HDR-13"],
    java=["DefaultRecord.writeTo"],
    inputs=[*_DELTAS, hex_field("key", default=None), hex_field("value", default=None),
            _headers_field(rv2.RECORD_FORMAT)],
    outputs=[Output("record", "hex"), Output("size_in_bytes", "int"), Output("headers_section", "hex"),
             Output("decoded", "{base_offset: int, base_timestamp: int, headers: list[[string, hex | null]], key: hex "
                               "| null, offset: int, timestamp: int, value: hex | null} | error",
                    "the record read back with base offset 1000 and base timestamp 5000")])
def write(request: Request) -> JsonDict:
    """``DefaultRecord.writeTo`` and, as a check, ``readFrom`` with base offset 1000 and base timestamp 5000."""
    record = rv2.write_record(request.offset_delta, request.timestamp_delta, request.key, request.value,
                              request.headers)
    headers_at = _headers_section_start(record)
    decoded = capture(lambda: _decoded_json(
        rv2.read_record(record, CHECK_BASE_OFFSET, CHECK_BASE_TIMESTAMP), CHECK_BASE_OFFSET, CHECK_BASE_TIMESTAMP))
    return {
        "record": record.hex(),
        "size_in_bytes": len(record),
        "headers_section": record[headers_at:].hex(),
        "decoded": decoded,
    }


def _headers_section_start(record: bytes) -> int:
    # Walk the fields before the header count of a record this module has just written.
    pos = read_varint(record, 0)[1] + 1
    pos = read_varlong(record, pos)[1]
    pos = read_varint(record, pos)[1]
    for _ in range(2):
        length, pos = read_varint(record, pos)
        pos += max(length, 0)
    return pos


def _lenient_record(payload: JsonDict) -> str | None:
    """What Kafka's ``readFrom`` accepts in ``bytes`` although its ``writeTo`` never writes it (HDR-14)."""
    try:
        data = bytes.fromhex(payload.get("bytes") or "")
        record = rv2.read_record(data, 0, 0)
    except (ValueError, DecodeError):
        return None
    canonical = rv2.write_record(record.offset_delta, record.timestamp_delta, record.key, record.value, record.headers)
    if record.attributes != rv2.ATTRIBUTES:
        return f"attributes {record.attributes:#04x} ignored"
    if data[: record.bytes_consumed] != canonical:
        return "non-canonical encoding accepted (a length below -1 read as null, a non-minimal varint, or invalid UTF-8 in a header key)"
    return None


@op("record_v2.read", rules=["HDR-3", "HDR-7", "HDR-9", "HDR-10", "HDR-13", "HDR-14"], lenient=_lenient_record,
    inputs=[_bytes_field(rv2.RECORD_FORMAT), _long_field("base_offset"), _long_field("base_timestamp")],
    outputs=[Output("base_offset", "int"), Output("base_timestamp", "int"), Output("offset", "int"),
             Output("timestamp", "int"), Output("key", "hex | null"), Output("value", "hex | null"),
             Output("headers", _HEADER_PAIRS), Output("attributes", "int"), Output("size_in_bytes", "int"),
             Output("bytes_consumed", "int")])
def read(request: Request) -> JsonDict:
    """``DefaultRecord.readFrom``: one record from the start of ``bytes``; later bytes are not read."""
    base_offset, base_timestamp = request.base_offset, request.base_timestamp
    record = rv2.read_record(request.bytes, base_offset, base_timestamp)
    return {
        **_decoded_json(record, base_offset, base_timestamp),
        "attributes": record.attributes,
        "size_in_bytes": record.size_in_bytes,
        "bytes_consumed": record.bytes_consumed,
    }


@op("record_v2.size", rules=["HDR-7", "HDR-9", "HDR-10"],
    inputs=[*_DELTAS, _int_field("key_size"), _int_field("value_size"), _headers_field(rv2.RECORD_FORMAT)],
    outputs=[Output("size_in_bytes", "int"), Output("size_of_body_in_bytes", "int")])
def size(request: Request) -> JsonDict:
    """``DefaultRecord.sizeInBytes`` and ``sizeOfBodyInBytes`` from key and value sizes (negative = null)."""
    args = (request.offset_delta, request.timestamp_delta, request.key_size, request.value_size, request.headers)
    return {"size_in_bytes": rv2.size_in_bytes(*args), "size_of_body_in_bytes": rv2.size_of_body(*args)}


@op("record_v2.write_headers", rules=["HDR-1", "HDR-3", "HDR-11", "HDR-12"],
    inputs=[_headers_field(rv2.HEADERS_FORMAT)], outputs=[Output("bytes", "hex")])
def write_headers(request: Request) -> JsonDict:
    """The header section of a v2 record: count, then each header in order."""
    return {"bytes": rv2.encode_record_headers(request.headers).hex()}


@op("record_v2.read_headers", rules=["HDR-1", "HDR-3", "HDR-13"], inputs=[_bytes_field(rv2.HEADERS_FORMAT)],
    outputs=[Output("headers", _HEADER_PAIRS), Output("bytes_consumed", "int")])
def read_headers(request: Request) -> JsonDict:
    """Read a header section from the start of ``bytes``; ``bytes_consumed`` says where it ended."""
    headers, end = rv2.decode_record_headers(request.bytes)
    return {"headers": _headers_output(headers), "bytes_consumed": end}


# --- KIP-82 semantics ------------------------------------------------------------------------------------

SEMANTICS_FORMAT = "headers-semantics"


def _header_json(header: Header | None) -> list[Any] | None:
    return None if header is None else [header.key, tohex(header.value)]


STEP_OPS = ("add", "remove", "last_header", "headers", "set_read_only", "to_list", "equals")
KEYED_STEPS = ("add", "remove", "last_header", "headers")


def _check_step(step: Any) -> JsonDict:
    # A malformed step is a fault of the caller, refused for the whole operation rather than per step.
    if not isinstance(step, dict) or step.get("op") not in STEP_OPS:
        raise CodecError(SEMANTICS_FORMAT, f"a step must be an object whose op is one of {STEP_OPS}, got {step!r}")
    if step["op"] in KEYED_STEPS:
        if "key" not in step:
            raise CodecError(SEMANTICS_FORMAT, f"step {step['op']!r} needs a key (null allowed)")
        if step["key"] is not None and not isinstance(step["key"], str):
            raise CodecError(SEMANTICS_FORMAT, f"a header key must be a string or null, got {step['key']!r}")
    return step


def _step_key(step: JsonDict) -> Any:
    return step["key"]


def _run_step(headers: Headers, step: JsonDict) -> JsonDict:
    name = step.get("op")
    if name == "add":
        headers.add(_step_key(step), unhex(step.get("value"), SEMANTICS_FORMAT))
        return {}
    if name == "remove":
        headers.remove(_step_key(step))
        return {}
    if name == "last_header":
        return {"result": _header_json(headers.last_header(_step_key(step)))}
    if name == "headers":
        return {"result": [_header_json(h) for h in headers.headers(_step_key(step))]}
    if name == "set_read_only":
        headers.set_read_only()
        return {}
    if name == "to_list":
        return {"result": _headers_output(headers.to_list())}
    other = Headers(_headers_input(step.get("other"), SEMANTICS_FORMAT) or [])
    return {"result": headers == other}


def run_semantics(payload: JsonDict, new_headers: Callable[[], Headers] = Headers) -> JsonDict:
    """The body of ``headers.semantics`` over headers made by ``new_headers`` (mutants pass a broken class)."""
    steps = payload.get("steps")
    if not isinstance(steps, list):
        raise CodecError(SEMANTICS_FORMAT, "steps must be a list")
    checked = [_check_step(step) for step in steps]
    headers = new_headers()
    results: list[JsonDict] = []
    for step in checked:
        outcome = capture(partial(_run_step, headers, step))
        results.append({**outcome, "headers": _headers_output(headers.to_list())})
    return {"steps": results}


@op("headers.semantics", rules=["HDR-1", "HDR-2", "HDR-3", "HDR-4", "HDR-5", "HDR-6"],
    inputs=[Field("steps", f"list[{{op: {' | '.join(map(repr, STEP_OPS))}, key?: string | null, value?: hex | null, "
                           "other?: list[[string, hex | null]]}]".replace("'", '"'),
                  "a malformed step refuses the whole operation")],
    outputs=[Output("steps", "list[{headers: list[[string, hex | null]], result?: bool | list | [string, hex | null] "
                             "| null, error?: {}}]", "each step's result or refusal, and the headers after it")])
def semantics(request: Request) -> JsonDict:
    """Apply ``steps`` to a fresh ``RecordHeaders``; each step reports its result or error and the headers after it."""
    return run_semantics(request.payload)


__all__ = ["read", "read_headers", "run_semantics", "semantics", "size", "write", "write_headers"]
