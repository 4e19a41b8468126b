"""Unit tests of the reference v2 record codec and the KIP-82 headers model (kstate.codecs.record_v2, record_headers)."""

from __future__ import annotations

import tracemalloc

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kstate.codecs import record_v2 as rv2
from kstate.codecs.record_headers import Header, Headers, HeadersReadOnlyError, NullHeaderKeyError
from kstate.errors import DecodeError, EncodeError
from kstate.ops import call

KEYS = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=8)
HEADERS = st.lists(st.tuples(KEYS, st.none() | st.binary(max_size=8)), max_size=5)
NULLABLE = st.none() | st.binary(max_size=10)
INT32 = st.integers(min_value=-(1 << 31), max_value=(1 << 31) - 1)
INT64 = st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1)

# The record_headers_v2 vector "one_header", recorded from Kafka's DefaultRecord.writeTo.
ONE_HEADER = bytes.fromhex("18000000026b02760202680276")


# --- encoding ---------------------------------------------------------------------------------------------


def test_write_record_gives_kafkas_bytes() -> None:
    assert rv2.write_record(0, 0, b"k", b"v", [("h", b"v")]) == ONE_HEADER
    assert rv2.write_record(0, 0, None, None, []) == bytes.fromhex("0c000000010100")
    assert rv2.write_record(3, 100, None, None, [Header("", b"x")]) == bytes.fromhex("1400c80106010102000278")


def test_empty_header_section_is_a_zero_count() -> None:
    assert rv2.encode_record_headers([]) == b"\x00"
    assert rv2.encode_record_headers([("a", None), ("a", b"")]) == bytes.fromhex("04026101026100")


@pytest.mark.parametrize(("headers", "reason"), [
    (None, "Headers cannot be null"),
    ([("a", b"1"), (None, b"2")], "null header key"),
    ([("a\ud800", None)], "unpaired surrogate"),
    ([(1, None)], "must be a string"),
    ([("a", "text")], "must be bytes"),
])
def test_bad_headers_are_encode_errors(headers: object, reason: str) -> None:
    with pytest.raises(EncodeError, match=reason):
        rv2.write_record(0, 0, None, None, headers)  # type: ignore[arg-type]
    with pytest.raises(EncodeError):
        rv2.encode_record_headers(headers)  # type: ignore[arg-type]


@pytest.mark.parametrize(("offset_delta", "timestamp_delta"), [(1 << 31, 0), (-(1 << 31) - 1, 0), (0, 1 << 63),
                                                               (0, -(1 << 63) - 1), (True, 0), (0, 1.5)])
def test_deltas_outside_java_types_are_encode_errors(offset_delta: object, timestamp_delta: object) -> None:
    with pytest.raises(EncodeError):
        rv2.write_record(offset_delta, timestamp_delta, None, None, [])  # type: ignore[arg-type]
    with pytest.raises(EncodeError):
        rv2.size_of_body(offset_delta, timestamp_delta, -1, -1, [])  # type: ignore[arg-type]


def test_non_bytes_key_is_an_encode_error() -> None:
    with pytest.raises(EncodeError):
        rv2.write_record(0, 0, "k", None, [])  # type: ignore[arg-type]


@given(INT32, INT64, NULLABLE, NULLABLE, HEADERS)
def test_sizes_match_the_written_record(offset_delta: int, timestamp_delta: int, key: bytes | None,
                                        value: bytes | None, headers: list[tuple[str, bytes | None]]) -> None:
    record = rv2.write_record(offset_delta, timestamp_delta, key, value, headers)
    key_size = -1 if key is None else len(key)
    value_size = -1 if value is None else len(value)
    assert rv2.size_in_bytes(offset_delta, timestamp_delta, key_size, value_size, headers) == len(record)
    body = rv2.size_of_body(offset_delta, timestamp_delta, key_size, value_size, headers)
    assert rv2.size_of_varint(body) + body == len(record)


# --- decoding ---------------------------------------------------------------------------------------------


@given(INT32, INT64, NULLABLE, NULLABLE, HEADERS, INT64, INT64, st.binary(max_size=4))
def test_read_inverts_write(offset_delta: int, timestamp_delta: int, key: bytes | None, value: bytes | None,
                            headers: list[tuple[str, bytes | None]], base_offset: int, base_timestamp: int,
                            trailer: bytes) -> None:
    record = rv2.write_record(offset_delta, timestamp_delta, key, value, headers)
    decoded = rv2.read_record(record + trailer, base_offset, base_timestamp)
    assert (decoded.key, decoded.value, decoded.headers) == (key, value, headers)
    assert (decoded.offset_delta, decoded.timestamp_delta, decoded.attributes) == (offset_delta, timestamp_delta, 0)
    assert decoded.size_in_bytes == decoded.bytes_consumed == len(record)
    assert -(1 << 63) <= decoded.timestamp < 1 << 63 and -(1 << 63) <= decoded.offset < 1 << 63


def test_read_record_at_an_offset_and_java_wrapping() -> None:
    decoded = rv2.read_record(b"\xaa\xbb" + rv2.write_record(1, (1 << 63) - 1, None, b"", []), (1 << 63) - 1, 5000,
                              offset=2)
    assert decoded.offset == -(1 << 63)
    assert decoded.timestamp == -(1 << 63) + 4999
    assert decoded.value == b"" and decoded.key is None


def test_decode_record_headers_from_an_offset() -> None:
    headers, end = rv2.decode_record_headers(bytes.fromhex("ff" "04026101026100" "ee"), 1)
    assert headers == [("a", None), ("a", b"")]
    assert end == 8


def test_non_minimal_length_prefix_keeps_kafkas_size_in_bytes() -> None:
    decoded = rv2.read_record(bytes.fromhex("8c00000000010100"), 0, 0)
    assert (decoded.size_in_bytes, decoded.bytes_consumed) == (7, 8)


@pytest.mark.parametrize(("record", "reason"), [
    ("", "truncated"),
    ("00", "no attributes"),
    ("01000000010100", "negative record length"),
    ("0e000000010100", "exceeds"),
    ("0c000000010101", "negative header count"),
    ("0e00000001010400", "larger than"),
    ("100000000101020300", "negative header key length"),
    ("0e00000001010000", "left in the record body"),
    ("16000000010102026106aabb", "runs past"),
])
def test_malformed_records_are_decode_errors(record: str, reason: str) -> None:
    with pytest.raises(DecodeError, match=reason):
        rv2.read_record(bytes.fromhex(record), 0, 0)


# --- hostile bytes ------------------------------------------------------------------------------------------


@given(st.binary(max_size=80), INT64, INT64)
def test_hostile_bytes_give_a_record_or_a_decode_error(data: bytes, base_offset: int, base_timestamp: int) -> None:
    try:
        decoded = rv2.read_record(data, base_offset, base_timestamp)
    except DecodeError:
        return
    assert decoded.bytes_consumed <= len(data)


@given(st.binary(max_size=40))
def test_hostile_header_sections_give_headers_or_a_decode_error(data: bytes) -> None:
    try:
        headers, end = rv2.decode_record_headers(data)
    except DecodeError:
        return
    assert end <= len(data) and len(headers) <= len(data)


@given(INT32, INT64, NULLABLE, NULLABLE, HEADERS, st.data())
def test_mutated_records_give_a_record_or_a_decode_error(offset_delta: int, timestamp_delta: int,
                                                         key: bytes | None, value: bytes | None,
                                                         headers: list[tuple[str, bytes | None]],
                                                         data: st.DataObject) -> None:
    record = bytearray(rv2.write_record(offset_delta, timestamp_delta, key, value, headers))
    position = data.draw(st.integers(min_value=0, max_value=len(record) - 1))
    record[position] = data.draw(st.integers(min_value=0, max_value=255))
    try:
        decoded = rv2.read_record(bytes(record), 0, 0)
    except DecodeError:
        return
    assert decoded.bytes_consumed <= len(record)


@pytest.mark.parametrize("data", [
    "feffffff0f",                                  # body length 2^31-1
    "1400000001" "01feffffff0f",                   # header count 2^31-1
    "10000000feffffff0f",                          # key length 2^31-1
    "1600000001010202" "61feffffff0f",             # header value length 2^31-1
])
def test_huge_length_fields_do_not_allocate(data: str) -> None:
    tracemalloc.start()
    try:
        with pytest.raises(DecodeError):
            rv2.read_record(bytes.fromhex(data), 0, 0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


# --- the headers model -------------------------------------------------------------------------------------------


def test_add_refuses_a_null_key_before_the_read_only_check() -> None:
    headers = Headers([("a", b"1")])
    headers.set_read_only()
    with pytest.raises(NullHeaderKeyError):
        headers.add(None, b"2")  # type: ignore[arg-type]
    with pytest.raises(HeadersReadOnlyError):
        headers.remove(None)  # type: ignore[arg-type]
    with pytest.raises(HeadersReadOnlyError):
        headers.add("b", None)
    assert headers.to_list() == [("a", b"1")]


def test_headers_model_semantics() -> None:
    headers = Headers().add("a", b"1").add("b", None).add("a", b"")
    assert headers.last_header("a") == Header("a", b"")
    assert headers.headers("a") == [Header("a", b"1"), Header("a", b"")]
    assert headers != Headers([("a", b"1"), ("a", b""), ("b", None)])
    headers.remove("a")
    assert headers.to_list() == [("b", None)]
    assert headers == Headers([("b", None)]) and headers != Headers([("b", b"")])


# --- the operations --------------------------------------------------------------------------------------------


def test_write_op_output_fields_are_the_vectors() -> None:
    out = call("record_v2.write", {"offset_delta": 0, "timestamp_delta": 0, "key": "6b", "value": "76",
                                   "headers": [["h", "76"]]})
    assert out == {"record": ONE_HEADER.hex(), "size_in_bytes": 13, "headers_section": "0202680276",
                   "decoded": {"base_offset": 1000, "base_timestamp": 5000, "offset": 1000, "timestamp": 5000,
                               "key": "6b", "value": "76", "headers": [["h", "76"]]}}


@pytest.mark.parametrize("payload", [
    {"steps": None}, {"steps": [{"op": "bogus"}]}, {"steps": [{"op": "add", "value": None}]},
    {"steps": [{"op": "remove", "key": 3}]}, {"steps": ["add"]},
])
def test_malformed_semantics_steps_refuse_the_whole_operation(payload: dict[str, object]) -> None:
    assert set(call("headers.semantics", payload)) == {"error"}


def test_read_op_refuses_a_base_outside_java_long() -> None:
    assert "error" in call("record_v2.read", {"bytes": "0c000000010100", "base_offset": 1 << 63, "base_timestamp": 0})
