"""Mutants of KIP-1271 header-aware values: realistic misreadings of the layout and of header bytes."""

from __future__ import annotations

from collections.abc import Callable

from kstate.codecs import header_values as hv
from kstate.codecs.primitives import encode_int64, read_varint, take, write_varint
from kstate.ops import JsonDict, call, capture, headers_from_json, headers_to_json, tohex, unhex
from kstate_conformance.adapter import Handler
from kstate_conformance.bytes_model import sized, unsigned_varint, zigzag_varint
from kstate_conformance.mutants import altered, mutant

FAMILY = "header_values"
Pairs = list[tuple[str, bytes | None]]


def _header_ops(encode_headers: Callable[[Pairs | None], bytes]) -> dict[str, Handler]:
    """Every writing operation rebuilt over a broken header-bytes encoder."""

    def prefixed(headers: Pairs | None) -> bytes:
        return sized(encode_headers(headers))

    def serialize_headers(payload: JsonDict) -> JsonDict:
        return {"bytes": encode_headers(headers_from_json(payload["headers"])).hex()}

    def serialize(payload: JsonDict) -> JsonDict:
        value = unhex(payload["value"])
        if value is None:
            return {"bytes": None}
        headers = headers_from_json(payload["headers"])
        return {"bytes": (prefixed(headers) + encode_int64(payload["timestamp"]) + value).hex()}

    def serialize_aggregation(payload: JsonDict) -> JsonDict:
        agg = unhex(payload["aggregation"])
        return {"bytes": None if agg is None else (prefixed(headers_from_json(payload["headers"])) + agg).hex()}

    def restore(payload: JsonDict) -> JsonDict:
        value = unhex(payload["record_value"])
        headers = headers_from_json(payload["record_headers"])
        data = None if value is None else prefixed(headers) + encode_int64(payload["record_timestamp"]) + value
        return {"value": tohex(data), "timestamp": payload["record_timestamp"], "headers": headers_to_json(headers)}

    return {"header_values.serialize_headers": serialize_headers, "header_values.serialize": serialize,
            "header_values.serialize_aggregation": serialize_aggregation,
            "header_values.raw_value_to_headers_value": restore}


def _null_to_null(field: str, handle: Callable[[JsonDict, bytes], JsonDict]) -> Handler:
    """A broken handler that still answers ``{"bytes": null}`` for a null ``field``, as the serializers do (HV-6):
    ``handle(payload, the field's bytes)`` answers the rest."""
    def handler(payload: JsonDict) -> JsonDict:
        data = unhex(payload[field])
        return {"bytes": None} if data is None else handle(payload, data)

    return handler


@mutant("headers-after-timestamp", "ValueTimestampHeaders written as [ts][headersSize][headers][value], record-like", FAMILY, rules=("HV-6",))
def _headers_after_timestamp() -> dict[str, Handler]:
    def serialize(payload: JsonDict, value: bytes) -> JsonDict:
        section = hv.encode_headers(headers_from_json(payload["headers"]))
        return {"bytes": (encode_int64(payload["timestamp"]) + sized(section) + value).hex()}

    return {"header_values.serialize": _null_to_null("value", serialize)}


@mutant("headers-empty-count-written", "no headers written as a count byte 00 (pre-PR #21419), so values start 02 00", FAMILY, rules=("HV-1",))
def _empty_count_written() -> dict[str, Handler]:
    def encode(headers: Pairs | None) -> bytes:
        return hv.encode_headers(headers) or write_varint(0)

    return _header_ops(encode)


@mutant("headers-unsigned-varints", "header counts and lengths written as unsigned LEB128, not zig-zag", FAMILY, rules=("HV-2",))
def _unsigned_varints() -> dict[str, Handler]:
    def encode(headers: Pairs | None) -> bytes:
        if not headers:
            return b""
        out = bytearray(unsigned_varint(len(headers)))
        for key, value in headers:
            key_bytes = key.encode("utf-8", "replace")
            out += unsigned_varint(len(key_bytes)) + key_bytes
            out += unsigned_varint(0xFFFFFFFF) if value is None else unsigned_varint(len(value)) + value
        return bytes(out)

    return _header_ops(encode)


@mutant("headers-null-value-as-empty", "a null header value written as an empty one (length 0)", FAMILY, rules=("HV-2",))
def _null_as_empty() -> dict[str, Handler]:
    def encode(headers: Pairs | None) -> bytes:
        return hv.encode_headers(None if headers is None else [(k, v or b"") for k, v in headers])

    return _header_ops(encode)


@mutant("headers-null-value-dropped", "headers with a null value left out of the header bytes", FAMILY, rules=("HV-2",))
def _null_dropped() -> dict[str, Handler]:
    def encode(headers: Pairs | None) -> bytes:
        return hv.encode_headers(None if headers is None else [(k, v) for k, v in headers if v is not None])

    return _header_ops(encode)


@mutant("headers-eager-decoding", "reading value and timestamp parses the header bytes first (no lazy decoding)", FAMILY, rules=("HV-10",))
def _eager() -> dict[str, Handler]:
    def deserialize_lazy(payload: JsonDict) -> JsonDict:
        decoded = hv.decode_value_timestamp_headers(unhex(payload["bytes"]))
        if decoded is None:
            return {"result": None, "headers": None}
        headers = decoded.headers  # parsed up front: malformed header bytes fail the whole read
        return {"result": {"value": decoded.value.hex(), "timestamp": decoded.timestamp,
                           "raw_headers": decoded.raw_headers.hex()},
                "headers": {"headers": headers_to_json(headers)}}

    def deserialize(payload: JsonDict) -> JsonDict:
        data = unhex(payload["bytes"])

        def full() -> JsonDict:
            decoded = hv.decode_value_timestamp_headers(data)
            if decoded is None:
                return {"result": None}
            headers = headers_to_json(decoded.headers)
            return {"result": {"value": decoded.value.hex(), "timestamp": decoded.timestamp, "headers": headers}}

        def static_value() -> JsonDict:
            hv.headers_of(data)
            return {"value": tohex(hv.raw_value_of(data))}

        def static_timestamp() -> JsonDict:
            hv.headers_of(data)
            return {"timestamp": hv.timestamp_of_headers_value(data)}

        return {"deserialize": capture(full), "static_value": capture(static_value),
                "static_timestamp": capture(static_timestamp),
                "static_headers": capture(lambda: {"headers": headers_to_json(hv.headers_of(data))})}

    return {"header_values.deserialize_lazy": deserialize_lazy, "header_values.deserialize": deserialize}


@mutant("headers-python-utf8-replace", "header keys decoded with Python's errors='replace' instead of the JDK's rules", FAMILY, rules=("HV-5",))
def _python_replace() -> dict[str, Handler]:
    def deserialize_headers(payload: JsonDict) -> JsonDict:
        data = unhex(payload["bytes"])
        headers = hv.decode_headers(data)
        if data and any("\ufffd" in key for key, _ in headers):
            # Re-decode each key the Python way: walk the same structure, keep the raw key bytes.
            count, pos = read_varint(data, 0)
            rebuilt: Pairs = []
            for _ in range(count):
                length, pos = read_varint(data, pos)
                key_bytes, pos = take(data, pos, length, "header-bytes")
                value_length, pos = read_varint(data, pos)
                value = None
                if value_length >= 0:
                    value, pos = take(data, pos, value_length, "header-bytes")
                rebuilt.append((key_bytes.decode("utf-8", "replace"), value))
            headers = rebuilt
        return {"headers": headers_to_json(headers)}

    return {"header_values.deserialize_headers": deserialize_headers}


@mutant("headers-plain-conversion-timestamp-zero", "convertFromPlainToHeaderFormat writes timestamp 0, not -1", FAMILY, rules=("HV-8",))
def _plain_ts_zero() -> dict[str, Handler]:
    def convert(payload: JsonDict, plain: bytes) -> JsonDict:
        data = b"\x00" + bytes(8) + plain
        return {"bytes": data.hex(), "deserialized": {"value": plain.hex(), "timestamp": 0, "headers": []}}

    return {"header_values.convert_from_plain_to_header_format": _null_to_null("plain_value", convert)}


@mutant("headers-restore-drops-consistency", "restore filters the internal v/c consistency headers out of the value", FAMILY, rules=("HV-12", "CL-11"))
def _restore_filters() -> dict[str, Handler]:
    def restore(payload: JsonDict) -> JsonDict:
        headers = headers_from_json(payload["record_headers"]) or []
        kept = [(k, v) for k, v in headers if k not in ("v", "c")]
        value = hv.raw_value_to_headers_value(unhex(payload["record_value"]), payload["record_timestamp"], kept)
        return {"value": tohex(value), "timestamp": payload["record_timestamp"], "headers": headers_to_json(headers)}

    return {"header_values.raw_value_to_headers_value": restore}


def _encode_with(key_bytes: Callable[[str], bytes], count: Callable[[int], bytes]) -> Callable[[Pairs | None], bytes]:
    def encode(headers: Pairs | None) -> bytes:
        if not headers:
            return b""
        out = bytearray(count(len(headers)))
        for key, value in headers:
            raw = key_bytes(key)
            out += zigzag_varint(len(raw)) + raw
            out += zigzag_varint(-1) if value is None else zigzag_varint(len(value)) + value
        return bytes(out)

    return encode


def _cesu8(key: str) -> bytes:
    out = bytearray()
    for ch in key:
        if ord(ch) > 0xFFFF:
            units = ch.encode("utf-16-be")
            for i in (0, 2):
                out += chr(int.from_bytes(units[i:i + 2], "big")).encode("utf-8", "surrogatepass")
        else:
            out += ch.encode("utf-8", "surrogatepass")
    return bytes(out)


@mutant("headers-modified-utf8-keys", "header keys written in Java's modified UTF-8 (DataOutput.writeUTF), not UTF-8",
        FAMILY, rules=("HV-4",))
def _modified_utf8_keys() -> dict[str, Handler]:
    return _header_ops(_encode_with(lambda k: _cesu8(k).replace(b"\x00", b"\xc0\x80"), zigzag_varint))


@mutant("headers-count-int32", "the header count written as a 4-byte int (DataOutput.writeInt), not a varint", FAMILY,
        rules=("HV-3",))
def _count_int32() -> dict[str, Handler]:
    return _header_ops(_encode_with(lambda k: k.encode("utf-8", "surrogatepass"), lambda n: n.to_bytes(4, "big")))


@mutant("headers-null-value-serialized", "ValueTimestampHeaders of a null value serialized as headers and timestamp",
        FAMILY, rules=("HV-7",))
def _null_value_serialized() -> dict[str, Handler]:
    def serialize(payload: JsonDict) -> JsonDict:
        if payload.get("value") is None:
            section = hv.encode_headers(headers_from_json(payload.get("headers")))
            return {"bytes": (sized(section) + encode_int64(payload["timestamp"])).hex()}
        return call("header_values.serialize", payload)

    return {"header_values.serialize": serialize}


@mutant("headers-static-timestamp-skips-one-byte", "the static timestamp helper reads at offset 1, as if the header "
        "bytes were always empty", FAMILY, rules=("HV-9",))
def _static_timestamp_skips_one_byte() -> dict[str, Handler]:
    def deserialize(payload: JsonDict, out: JsonDict) -> JsonDict:
        data = unhex(payload.get("bytes"))
        if data is not None and len(data) >= 9 and "error" not in out:
            out["static_timestamp"] = {"timestamp": int.from_bytes(data[1:9], "big", signed=True)}
        return out

    return altered("header_values.deserialize", deserialize)


@mutant("aggregation-headers-after", "AggregationWithHeaders written as [aggregation][headersSize][headers]", FAMILY,
        rules=("HV-11",))
def _aggregation_headers_after() -> dict[str, Handler]:
    def serialize_aggregation(payload: JsonDict) -> JsonDict:
        agg = unhex(payload["aggregation"])
        if agg is None:
            return {"bytes": None}
        section = hv.encode_headers(headers_from_json(payload.get("headers")))
        return {"bytes": (agg + sized(section)).hex()}

    return {"header_values.serialize_aggregation": serialize_aggregation}


@mutant("headers-negative-size-as-empty", "a negative headersSize read as no header bytes instead of refused", FAMILY,
        rules=("HV-13",))
def _negative_size_as_empty() -> dict[str, Handler]:
    def patched(op: str) -> Handler:
        def handler(payload: JsonDict) -> JsonDict:
            out = call(op, payload)
            data = unhex(payload.get("bytes"))
            if data is None or not data:
                return out
            try:
                size, at = read_varint(data, 0)
            except Exception:
                return out
            if size >= 0:
                return out
            return call(op, {**payload, "bytes": ("00" + data[at:].hex())})

        return handler

    def deserialize(payload: JsonDict) -> JsonDict:
        out = call("header_values.deserialize", payload)
        fixed = patched("header_values.deserialize")(payload)
        return {**out, "deserialize": fixed["deserialize"], "static_headers": fixed["static_headers"]}

    return {"header_values.deserialize": deserialize,
            **{op: patched(op) for op in ("header_values.deserialize_lazy", "header_values.deserialize_aggregation")}}
