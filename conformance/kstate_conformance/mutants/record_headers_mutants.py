"""Mutants of KIP-82 header semantics and the v2 record encoding (HDR-*)."""

from __future__ import annotations

from typing import Any

from kstate.codecs.primitives import read_varint, write_varint
from kstate.codecs.record_headers import Headers
from kstate.errors import DecodeError
from kstate.ops import JsonDict, call
from kstate.ops.record_headers_ops import run_semantics
from kstate_conformance.adapter import Handler
from kstate_conformance.mutants import altered, mutant

WRITE_OPS = ("record_v2.write", "record_v2.write_headers")


def _with_headers(op: str, change: Any) -> Handler:
    """The reference ``op`` run on headers rewritten by ``change`` (a writer that mangles its input)."""

    def handler(payload: JsonDict) -> JsonDict:
        headers = payload.get("headers")
        return call(op, {**payload, "headers": None if headers is None else change(headers)})

    return handler


@mutant("reversed-header-order", "headers written last-added first (iterating the list backwards)", "record_v2", rules=("HDR-1",))
def _reversed_header_order() -> dict[str, Handler]:
    return {op: _with_headers(op, lambda headers: list(reversed(headers))) for op in WRITE_OPS}


@mutant("null-header-value-as-empty", "a null header value written as length 0 instead of -1", "record_v2", rules=("HDR-3", "HDR-12"))
def _null_header_value_as_empty() -> dict[str, Handler]:
    def drop_nulls(headers: list[list[Any]]) -> list[list[Any]]:
        return [[key, "" if value is None else value] for key, value in headers]

    return {op: _with_headers(op, drop_nulls) for op in WRITE_OPS}


@mutant("header-count-omitted-when-empty",
        "no header count written for a record without headers (KIP-1271's empty header bytes), "
        "and a body that ends before the count read as no headers", "record_v2", rules=("HDR-11",))
def _header_count_omitted_when_empty() -> dict[str, Handler]:
    def write(payload: JsonDict) -> JsonDict:
        out = call("record_v2.write", payload)
        if "error" in out or payload.get("headers"):
            return out
        record = bytes.fromhex(out["record"])
        body = record[read_varint(record, 0)[1]:-1]  # the reference always ends an empty list with 00
        shortened = write_varint(len(body)) + body
        return {**out, "record": shortened.hex(), "size_in_bytes": len(shortened), "headers_section": ""}

    def write_headers(payload: JsonDict) -> JsonDict:
        out = call("record_v2.write_headers", payload)
        return {"bytes": ""} if out.get("bytes") == "00" else out

    def read(payload: JsonDict) -> JsonDict:
        out = call("record_v2.read", payload)
        if "error" not in out:
            return out
        # Retry as if the missing count were 00: the tolerant reader this mutant pairs with.
        try:
            data = bytes.fromhex(payload["bytes"])
            length, start = read_varint(data, 0)
            patched = write_varint(length + 1) + data[start:start + length] + b"\x00" + data[start + length:]
        except (ValueError, KeyError, DecodeError):
            return out
        retried = call("record_v2.read", {**payload, "bytes": patched.hex()})
        return out if "error" in retried else retried

    return {"record_v2.write": write, "record_v2.write_headers": write_headers, "record_v2.read": read}


class _RemoveFirstOnly(Headers):
    """``remove`` that stops at the first match, like ``list.remove``."""

    def remove(self, key: str) -> Headers:
        self._check_writable()
        self._check_key(key)
        for index, header in enumerate(self._items):
            if header.key == key:
                del self._items[index]
                break
        return self


class _NeverReadOnly(Headers):
    """``setReadOnly`` forgotten: the headers stay writable after the producer has sent them."""

    def set_read_only(self) -> None:
        pass


@mutant("remove-first-match-only", "remove(key) removes only the first header with that key", "headers", rules=("HDR-4",))
def _remove_first_match_only() -> dict[str, Handler]:
    return {"headers.semantics": lambda payload: run_semantics(payload, _RemoveFirstOnly)}


@mutant("read-only-not-enforced", "add and remove still work after setReadOnly", "headers", rules=("HDR-6",))
def _read_only_not_enforced() -> dict[str, Handler]:
    return {"headers.semantics": lambda payload: run_semantics(payload, _NeverReadOnly)}


@mutant("negative-header-count-as-none",
        "a negative header count read as no headers (KIP-1271's lenient HeadersDeserializer reused)", "record_v2", rules=("HDR-13",))
def _negative_header_count_as_none() -> dict[str, Handler]:
    def tolerate(op: str) -> Handler:
        def handler(payload: JsonDict) -> JsonDict:
            out = call(op, payload)
            reason = out.get("error", {}).get("reason", "")
            if not reason.startswith("negative header count"):
                return out
            # Replace the count by 00 and drop whatever followed it, as a reader that stops there would.
            data = bytes.fromhex(payload["bytes"])
            at = out["error"]["offset"]
            if op == "record_v2.read_headers":
                return {"headers": [], "bytes_consumed": read_varint(data, at)[1]}
            start = read_varint(data, 0)[1]
            body = data[start:at] + b"\x00"
            return call(op, {**payload, "bytes": (write_varint(len(body)) + body).hex()})

        return handler

    return {op: tolerate(op) for op in ("record_v2.read", "record_v2.read_headers")}


def _semantics_with_null_keys_as_empty(payload: JsonDict) -> JsonDict:
    steps = payload.get("steps")
    if isinstance(steps, list):
        steps = [{**s, "key": ""} if isinstance(s, dict) and s.get("op") == "add" and s.get("key") is None else s
                 for s in steps]
    return run_semantics({**payload, "steps": steps})


@mutant("null-header-key-as-empty", "a null header key is added as an empty key instead of refused", "headers",
        rules=("HDR-2",))
def _null_header_key_as_empty() -> dict[str, Handler]:
    return {"headers.semantics": _semantics_with_null_keys_as_empty}


class _UnorderedEquality(Headers):
    """``equals`` that compares the headers as a multiset (sorted), ignoring order."""

    def __eq__(self, other: object) -> bool:
        def canon(h: Headers) -> list[tuple[str, bool, bytes]]:
            return sorted((k, v is None, v or b"") for k, v in h.to_list())

        return isinstance(other, Headers) and canon(self) == canon(other)

    __hash__ = Headers.__hash__


@mutant("header-equality-ignores-order", "headers compared as a multiset: order does not matter", "headers",
        rules=("HDR-5",))
def _header_equality_ignores_order() -> dict[str, Handler]:
    return {"headers.semantics": lambda payload: run_semantics(payload, _UnorderedEquality)}


@mutant("record-size-without-length-prefix", "sizeInBytes reports the body size without its varint length", "record_v2",
        rules=("HDR-7",))
def _record_size_without_length_prefix() -> dict[str, Handler]:
    def size(payload: JsonDict) -> JsonDict:
        out = call("record_v2.size", payload)
        if "error" in out:
            return out
        return {**out, "size_in_bytes": out["size_of_body_in_bytes"]}

    def write(payload: JsonDict) -> JsonDict:
        out = call("record_v2.write", payload)
        if "error" in out:
            return out
        record = bytes.fromhex(out["record"])
        return {**out, "size_in_bytes": len(record) - read_varint(record, 0)[1]}

    return {"record_v2.size": size, "record_v2.write": write}


@mutant("record-attributes-set", "the record attributes byte written as 1 (the batch's compression bits copied)",
        "record_v2", rules=("HDR-8",))
def _record_attributes_set() -> dict[str, Handler]:
    def write(payload: JsonDict, out: JsonDict) -> JsonDict:
        if "error" in out:
            return out
        record = bytearray(bytes.fromhex(out["record"]))
        record[read_varint(bytes(record), 0)[1]] = 1
        return {**out, "record": record.hex()}

    return altered("record_v2.write", write)


@mutant("record-timestamp-not-delta", "the reader returns the timestamp delta as the record timestamp", "record_v2",
        rules=("HDR-9",))
def _record_timestamp_not_delta() -> dict[str, Handler]:
    def fix(out: JsonDict) -> JsonDict:
        if isinstance(out, dict) and "timestamp" in out and "base_timestamp" in out:
            return {**out, "timestamp": out["timestamp"] - out["base_timestamp"]}
        return out

    def read(payload: JsonDict) -> JsonDict:
        return fix(call("record_v2.read", payload))

    def write(payload: JsonDict) -> JsonDict:
        out = call("record_v2.write", payload)
        return {**out, "decoded": fix(out["decoded"])} if "decoded" in out else out

    return {"record_v2.read": read, "record_v2.write": write}


@mutant("record-null-key-as-empty", "a null record key written with length 0 instead of -1", "record_v2",
        rules=("HDR-10",))
def _record_null_key_as_empty() -> dict[str, Handler]:
    def write(payload: JsonDict) -> JsonDict:
        if payload.get("key", "") is None:
            return call("record_v2.write", {**payload, "key": ""})
        return call("record_v2.write", payload)

    return {"record_v2.write": write}
