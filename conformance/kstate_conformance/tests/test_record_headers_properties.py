"""Properties of KIP-82 headers and the v2 record, checked through the adapter (HDR-*).

The expected bytes come from a small model of the layout written here from the spec, independent of
any implementation; header semantics are checked against a plain list model.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from kstate_conformance import rules
from kstate_conformance.bytes_model import header_section, sized, zigzag_varint, zigzag_varlong
from kstate_conformance.strategies import INT32, INT64, header_lists, nullable_binary

# Few distinct keys so that duplicates are common; text() never yields unpaired surrogates.
KEYS = st.one_of(st.sampled_from(["a", "b", "", "\u00e9", "e\u0301", "\u65e5\u672c", "\U0001F600"]), st.text(max_size=6))
VALUES = nullable_binary(8)
HEADERS = header_lists(KEYS, VALUES, max_size=6)
NULLABLE_BYTES = nullable_binary(12)

Pairs = list[tuple[str, bytes | None]]


# --- a model of the layout (spec/record-headers.md) ------------------------------------------------------


def record_body(offset_delta: int, timestamp_delta: int, key: bytes | None, value: bytes | None,
                section: bytes, attributes: int = 0) -> bytes:
    return bytes([attributes]) + zigzag_varlong(timestamp_delta) + zigzag_varint(offset_delta) + sized(key) + sized(value) + section


def framed(body: bytes) -> bytes:
    return zigzag_varint(len(body)) + body


def java_long(value: int) -> int:
    value &= 0xFFFFFFFFFFFFFFFF
    return value - (1 << 64) if value >> 63 else value


def hexed(data: bytes | None) -> str | None:
    return None if data is None else data.hex()


def headers_json(headers: Pairs) -> list[list[Any]]:
    return [[k, hexed(v)] for k, v in headers]


def write(implementation: Any, offset_delta: int, timestamp_delta: int, key: bytes | None, value: bytes | None,
          headers: Pairs) -> dict[str, Any]:
    out: dict[str, Any] = implementation.call("record_v2.write", {
        "offset_delta": offset_delta, "timestamp_delta": timestamp_delta, "key": hexed(key), "value": hexed(value),
        "headers": headers_json(headers)})
    return out


def read(implementation: Any, data: bytes, base_offset: int = 0, base_timestamp: int = 0) -> dict[str, Any]:
    out: dict[str, Any] = implementation.call("record_v2.read",
                                     {"bytes": data.hex(), "base_offset": base_offset, "base_timestamp": base_timestamp})
    return out


def is_error(out: dict[str, Any]) -> bool:
    return "error" in out


# --- writing ----------------------------------------------------------------------------------------------


@rules("HDR-1", "HDR-7", "HDR-8", "HDR-9", "HDR-10", "HDR-11", "HDR-12")
@given(INT32, INT64, NULLABLE_BYTES, NULLABLE_BYTES, HEADERS)
@example(0, 0, None, None, [])
@example(0, 0, b"", b"", [("a", None), ("a", b""), ("b", b"\x01")])
def test_write_matches_the_v2_layout(implementation: Any, offset_delta: int, timestamp_delta: int, key: bytes | None,
                                     value: bytes | None, headers: Pairs) -> None:
    section = header_section(headers)
    expected = framed(record_body(offset_delta, timestamp_delta, key, value, section))
    out = write(implementation, offset_delta, timestamp_delta, key, value, headers)
    assert out["record"] == expected.hex()
    assert out["size_in_bytes"] == len(expected)
    assert out["headers_section"] == section.hex()


@rules("HDR-1", "HDR-3", "HDR-9", "HDR-10", "HDR-12")
@given(INT32, INT64, NULLABLE_BYTES, NULLABLE_BYTES, HEADERS, INT64, INT64)
def test_written_record_reads_back(implementation: Any, offset_delta: int, timestamp_delta: int, key: bytes | None,
                                   value: bytes | None, headers: Pairs, base_offset: int, base_timestamp: int) -> None:
    record = bytes.fromhex(write(implementation, offset_delta, timestamp_delta, key, value, headers)["record"])
    assert read(implementation, record + b"\x07\x07", base_offset, base_timestamp) == {
        "base_offset": base_offset,
        "base_timestamp": base_timestamp,
        "offset": java_long(base_offset + offset_delta),
        "timestamp": java_long(base_timestamp + timestamp_delta),
        "key": hexed(key),
        "value": hexed(value),
        "headers": headers_json(headers),
        "attributes": 0,
        "size_in_bytes": len(record),
        "bytes_consumed": len(record),
    }


@rules("HDR-9")
@given(INT32, INT64, HEADERS)
def test_write_reports_the_record_read_back_at_base_1000_5000(implementation: Any, offset_delta: int, timestamp_delta: int,
                                                             headers: Pairs) -> None:
    decoded = write(implementation, offset_delta, timestamp_delta, b"k", None, headers)["decoded"]
    assert decoded == {"base_offset": 1000, "base_timestamp": 5000, "offset": 1000 + offset_delta,
                       "timestamp": java_long(5000 + timestamp_delta), "key": "6b", "value": None,
                       "headers": headers_json(headers)}


@rules("HDR-1", "HDR-3", "HDR-11", "HDR-12", "HDR-13")
@given(HEADERS)
def test_header_section_round_trips(implementation: Any, headers: Pairs) -> None:
    written = implementation.call("record_v2.write_headers", {"headers": headers_json(headers)})
    assert written == {"bytes": header_section(headers).hex()}
    assert written["bytes"] == write(implementation, 0, 0, None, None, headers)["headers_section"]
    back = implementation.call("record_v2.read_headers", {"bytes": written["bytes"] + "ff"})
    assert back == {"headers": headers_json(headers), "bytes_consumed": len(written["bytes"]) // 2}


@rules("HDR-7", "HDR-10")
@given(INT32, INT64, NULLABLE_BYTES, NULLABLE_BYTES, HEADERS)
def test_size_matches_the_written_record(implementation: Any, offset_delta: int, timestamp_delta: int, key: bytes | None,
                                         value: bytes | None, headers: Pairs) -> None:
    record = write(implementation, offset_delta, timestamp_delta, key, value, headers)["record"]
    sizes = implementation.call("record_v2.size", {
        "offset_delta": offset_delta, "timestamp_delta": timestamp_delta, "key_size": -1 if key is None else len(key),
        "value_size": -1 if value is None else len(value), "headers": headers_json(headers)})
    body = sizes["size_of_body_in_bytes"]
    assert sizes["size_in_bytes"] == len(record) // 2 == len(zigzag_varint(body)) + body


@rules("HDR-3", "HDR-10", "HDR-12")
@given(KEYS, st.booleans())
def test_null_and_empty_stay_distinct(implementation: Any, key: str, in_header: bool) -> None:
    def record(empty: bytes | None) -> str:
        if in_header:
            return str(write(implementation, 0, 0, None, None, [(key, empty)])["record"])
        return str(write(implementation, 0, 0, empty, empty, [])["record"])

    with_null, with_empty = record(None), record(b"")
    assert with_null != with_empty
    assert read(implementation, bytes.fromhex(with_null))["headers" if in_header else "value"] == (
        [[key, None]] if in_header else None)
    assert read(implementation, bytes.fromhex(with_empty))["headers" if in_header else "value"] == (
        [[key, ""]] if in_header else "")


@rules("HDR-11", "HDR-12")
@pytest.mark.parametrize("headers", [None, [["a", "01"], [None, "02"]], [[None, None]]],
                         ids=["null-headers", "second-key-null", "only-key-null"])
def test_null_headers_and_null_header_keys_are_refused(implementation: Any, headers: Any) -> None:
    payload = {"offset_delta": 0, "timestamp_delta": 0, "key": None, "value": None, "headers": headers}
    assert is_error(implementation.call("record_v2.write", payload))
    assert is_error(implementation.call("record_v2.write_headers", {"headers": headers}))


@rules("HDR-9")
@pytest.mark.parametrize(("offset_delta", "timestamp_delta"), [(1 << 31, 0), (-(1 << 31) - 1, 0), (0, 1 << 63)])
def test_deltas_outside_java_types_are_refused(implementation: Any, offset_delta: int, timestamp_delta: int) -> None:
    payload: dict[str, Any] = {"offset_delta": offset_delta, "timestamp_delta": timestamp_delta, "key": None, "value": None,
               "headers": []}
    assert is_error(implementation.call("record_v2.write", payload))


# --- reading: refusals (HDR-13) ---------------------------------------------------------------------------


@rules("HDR-13")
@given(INT32, INT64, NULLABLE_BYTES, NULLABLE_BYTES, HEADERS, st.data())
def test_a_truncated_record_is_refused(implementation: Any, offset_delta: int, timestamp_delta: int, key: bytes | None,
                                       value: bytes | None, headers: Pairs, data: st.DataObject) -> None:
    record = framed(record_body(offset_delta, timestamp_delta, key, value, header_section(headers)))
    cut = data.draw(st.integers(min_value=0, max_value=len(record) - 1))
    assert is_error(read(implementation, record[:cut]))


@rules("HDR-13")
@given(NULLABLE_BYTES, HEADERS, st.binary(min_size=1, max_size=3))
def test_bytes_left_in_the_body_are_refused(implementation: Any, value: bytes | None, headers: Pairs, extra: bytes) -> None:
    body = record_body(0, 0, None, value, header_section(headers)) + extra
    assert is_error(read(implementation, framed(body)))


@rules("HDR-13")
@given(HEADERS, st.integers(min_value=-(1 << 31), max_value=-1))
def test_a_negative_header_count_is_refused(implementation: Any, headers: Pairs, count: int) -> None:
    section = header_section(headers, count=count)
    assert is_error(read(implementation, framed(record_body(0, 0, None, None, section))))
    assert is_error(implementation.call("record_v2.read_headers", {"bytes": section.hex()}))


@rules("HDR-13")
@given(HEADERS, st.integers(min_value=1, max_value=(1 << 31) - 1))
def test_a_header_count_beyond_the_remaining_bytes_is_refused(implementation: Any, headers: Pairs, excess: int) -> None:
    tail = header_section(headers)[len(zigzag_varint(len(headers))):]
    count = min(len(tail) + excess, (1 << 31) - 1)
    section = zigzag_varint(count) + tail
    assert is_error(read(implementation, framed(record_body(0, 0, None, None, section))))
    assert is_error(implementation.call("record_v2.read_headers", {"bytes": section.hex()}))


@rules("HDR-13")
@given(st.integers(min_value=-(1 << 31), max_value=-1), VALUES)
def test_a_negative_header_key_length_is_refused(implementation: Any, key_length: int, value: bytes | None) -> None:
    section = zigzag_varint(1) + zigzag_varint(key_length) + sized(value)
    assert is_error(read(implementation, framed(record_body(0, 0, None, None, section))))
    assert is_error(implementation.call("record_v2.read_headers", {"bytes": section.hex()}))


@rules("HDR-13")
@pytest.mark.parametrize("length", [-1, -(1 << 31), 8, (1 << 31) - 1])
def test_a_body_length_that_does_not_fit_is_refused(implementation: Any, length: int) -> None:
    body = record_body(0, 0, None, None, zigzag_varint(0))
    assert is_error(read(implementation, zigzag_varint(length) + body))


# --- reading: Kafka's leniency (HDR-14) ---------------------------------------------------------------------


@rules("HDR-14")
@pytest.mark.kstate_level("recommended")
@given(st.integers(min_value=-(1 << 31), max_value=-2), st.integers(min_value=-(1 << 31), max_value=-2),
       st.integers(min_value=-(1 << 31), max_value=-2), st.integers(min_value=1, max_value=255), KEYS)
def test_reader_accepts_what_kafka_accepts(implementation: Any, key_length: int, value_length: int, header_value_length: int,
                                           attributes: int, header_key: str) -> None:
    section = zigzag_varint(1) + sized(header_key.encode("utf-8")) + zigzag_varint(header_value_length)
    body = (bytes([attributes]) + zigzag_varlong(0) + zigzag_varint(0) + zigzag_varint(key_length) + zigzag_varint(value_length) + section)
    out = read(implementation, framed(body) + b"\x00")
    assert (out["key"], out["value"], out["headers"], out["attributes"]) == (None, None, [[header_key, None]], attributes)
    assert out["bytes_consumed"] == len(framed(body))


@rules("HDR-14")
@pytest.mark.kstate_level("recommended")
def test_size_in_bytes_uses_the_minimal_length_varint(implementation: Any) -> None:
    body = record_body(0, 0, None, None, zigzag_varint(0))
    out = read(implementation, bytes([len(body) * 2 | 0x80, 0x00]) + body)
    assert (out["size_in_bytes"], out["bytes_consumed"]) == (len(body) + 1, len(body) + 2)


@rules("HDR-14")
@pytest.mark.kstate_level("recommended")
@pytest.mark.parametrize(("key_bytes", "key"), [
    ("eda080", "\ufffd"), ("eda041", "\ufffdA"), ("c0af", "\ufffd\ufffd"), ("e241", "\ufffdA"), ("f09f8e", "\ufffd"),
    ("61ff62", "a\ufffdb"),
])
def test_invalid_utf8_keys_decode_as_the_jdk_does(implementation: Any, key_bytes: str, key: str) -> None:
    section = zigzag_varint(1) + sized(bytes.fromhex(key_bytes)) + zigzag_varint(-1)
    assert read(implementation, framed(record_body(0, 0, None, None, section)))["headers"] == [[key, None]]


# --- writing keys with unpaired surrogates (HDR-15) -------------------------------------------------------------


@rules("HDR-15")
@pytest.mark.kstate_level("recommended")
@pytest.mark.parametrize("key", ["a\ud800b", "\udc00", "x\ud83d"])
def test_a_key_with_an_unpaired_surrogate_is_not_written_inconsistently(implementation: Any, key: str) -> None:
    out = implementation.call("record_v2.write", {"offset_delta": 0, "timestamp_delta": 0, "key": None, "value": None,
                                         "headers": [[key, None]]})
    if not is_error(out):
        record = bytes.fromhex(out["record"])
        assert not is_error(read(implementation, record)), "the written record must be readable: its length must match"


# --- header semantics against a list model (HDR-1..HDR-6) --------------------------------------------------------

STEP_KEYS = st.one_of(st.sampled_from(["a", "b", "\u00e9"]), st.none())
STEPS = st.one_of(
    st.builds(lambda k, v: {"op": "add", "key": k, "value": hexed(v)}, STEP_KEYS, st.one_of(st.none(), st.binary(max_size=2))),
    st.builds(lambda k: {"op": "remove", "key": k}, STEP_KEYS),
    st.builds(lambda k: {"op": "last_header", "key": k}, STEP_KEYS),
    st.builds(lambda k: {"op": "headers", "key": k}, STEP_KEYS),
    st.builds(lambda o: {"op": "equals", "other": o},
              st.lists(st.tuples(st.sampled_from(["a", "b", "\u00e9"]), st.sampled_from([None, "", "01"])).map(list),
                       max_size=3)),
    st.just({"op": "to_list"}),
    st.just({"op": "set_read_only"}),
)


class ListModel:
    """What spec/record-headers.md says a header list does, as the simplest code that does it."""

    def __init__(self) -> None:
        self.items: list[list[Any]] = []
        self.read_only = False

    def apply(self, step: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
        """(refused, result fields) for one step; a refused step changes nothing."""
        op, key = step["op"], step.get("key")
        if op == "add":
            if key is None or self.read_only:
                return True, {}
            self.items.append([key, step["value"]])
            return False, {}
        if op == "remove":
            if self.read_only or key is None:
                return True, {}
            self.items = [h for h in self.items if h[0] != key]
            return False, {}
        if op in ("last_header", "headers"):
            if key is None:
                return True, {}
            matches = [h for h in self.items if h[0] == key]
            if op == "headers":
                return False, {"result": matches}
            return False, {"result": matches[-1] if matches else None}
        if op == "equals":
            return False, {"result": self.items == step["other"]}
        if op == "to_list":
            return False, {"result": list(self.items)}
        self.read_only = True
        return False, {}


@rules("HDR-1", "HDR-2", "HDR-3", "HDR-4", "HDR-5", "HDR-6")
@given(st.lists(STEPS, max_size=20))
@example([{"op": "add", "key": "a", "value": "01"}, {"op": "add", "key": "b", "value": None},
          {"op": "add", "key": "a", "value": ""}, {"op": "remove", "key": "a"}, {"op": "to_list"}])
@example([{"op": "add", "key": "a", "value": None}, {"op": "set_read_only"}, {"op": "add", "key": "a", "value": "01"},
          {"op": "remove", "key": "a"}, {"op": "remove", "key": None}, {"op": "last_header", "key": "a"}])
def test_semantics_match_the_list_model(implementation: Any, steps: list[dict[str, Any]]) -> None:
    out = implementation.call("headers.semantics", {"steps": steps})
    model = ListModel()
    assert len(out["steps"]) == len(steps)
    for index, (step, actual) in enumerate(zip(steps, out["steps"], strict=True)):
        refused, result = model.apply(step)
        where = f"step {index} {step}"
        assert is_error(actual) == refused, f"{where}: refused={refused} expected, got {actual}"
        assert actual["headers"] == model.items, where
        if not refused:
            assert {k: v for k, v in actual.items() if k != "headers"} == result, where


@rules("HDR-4")
def test_remove_takes_every_duplicate(implementation: Any) -> None:
    steps = [{"op": "add", "key": k, "value": v} for k, v in [("a", "01"), ("a", "02"), ("b", None), ("a", None)]]
    out = implementation.call("headers.semantics", {"steps": [*steps, {"op": "remove", "key": "a"}]})
    assert out["steps"][-1] == {"headers": [["b", None]]}


@rules("HDR-6")
def test_read_only_refuses_add_and_remove_but_not_reads(implementation: Any) -> None:
    steps = [{"op": "add", "key": "a", "value": "01"}, {"op": "set_read_only"},
             {"op": "add", "key": "b", "value": None}, {"op": "remove", "key": "a"}, {"op": "remove", "key": "zz"},
             {"op": "remove", "key": None}, {"op": "add", "key": None, "value": None},
             {"op": "last_header", "key": "a"}, {"op": "headers", "key": "a"}]
    out = implementation.call("headers.semantics", {"steps": steps})["steps"]
    assert [is_error(s) for s in out] == [False, False, True, True, True, True, True, False, False]
    assert all(s["headers"] == [["a", "01"]] for s in out)
    assert out[-2]["result"] == ["a", "01"] and out[-1]["result"] == [["a", "01"]]
