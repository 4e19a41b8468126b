"""Properties of KIP-1271 header-aware values, checked through the adapter (HV-*)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kstate_conformance import rules
from kstate_conformance.harness import i64, is_refusal
from kstate_conformance.strategies import INT64, hex_binary

KEYS = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=12)
HEADER_VALUES = st.none() | hex_binary(16)
HEADERS = st.lists(st.tuples(KEYS, HEADER_VALUES).map(list), max_size=6)
NON_EMPTY_HEADERS = st.lists(st.tuples(KEYS, HEADER_VALUES).map(list), min_size=1, max_size=6)
VALUES = hex_binary(16)


def _varint(codec: Any, value: int) -> str:
    return str(codec.call("varint.write_varint", {"value": value})["bytes"])


def _header_bytes(codec: Any, headers: list[list[Any]] | None) -> str:
    return str(codec.call("header_values.serialize_headers", {"headers": headers})["bytes"])


def _expected_header_bytes(codec: Any, headers: list[list[Any]]) -> str:
    """The header section built independently: zig-zag varints from the varint ops, UTF-8 keys."""
    parts = [_varint(codec, len(headers))]
    for key, value in headers:
        key_bytes = key.encode("utf-8")
        parts += [_varint(codec, len(key_bytes)), key_bytes.hex()]
        parts += [_varint(codec, -1)] if value is None else [_varint(codec, len(value) // 2), value]
    return "".join(parts)


# --- header bytes ----------------------------------------------------------------------------------


@rules("HV-1")
def test_no_headers_is_zero_bytes(codec: Any) -> None:
    assert codec.call("header_values.serialize_headers", {"headers": None}) == {"bytes": ""}
    assert codec.call("header_values.serialize_headers", {"headers": []}) == {"bytes": ""}
    assert codec.call("header_values.deserialize_headers", {"bytes": ""}) == {"headers": []}
    assert codec.call("header_values.deserialize_headers", {"bytes": "00"}) == {"headers": []}


@rules("HV-1", "HV-2", "HV-3", "HV-4")
@given(NON_EMPTY_HEADERS)
def test_header_bytes_are_the_record_header_section(codec: Any, headers: list[list[Any]]) -> None:
    assert _header_bytes(codec, headers) == _expected_header_bytes(codec, headers)


@rules("HV-1", "HV-2", "HV-4")
@given(HEADERS)
def test_header_bytes_round_trip_in_order_with_nulls(codec: Any, headers: list[list[Any]]) -> None:
    data = _header_bytes(codec, headers)
    assert codec.call("header_values.deserialize_headers", {"bytes": data}) == {"headers": headers}


@rules("HV-2")
def test_null_and_empty_header_values_differ(codec: Any) -> None:
    null = _header_bytes(codec, [["k", None]])
    empty = _header_bytes(codec, [["k", ""]])
    assert (null, empty) == ("02026b01", "02026b00")
    assert codec.call("header_values.deserialize_headers", {"bytes": null}) == {"headers": [["k", None]]}
    assert codec.call("header_values.deserialize_headers", {"bytes": empty}) == {"headers": [["k", ""]]}


@rules("HV-4")
def test_keys_count_utf8_bytes(codec: Any) -> None:
    assert _header_bytes(codec, [["é", None]]) == "0204c3a901"
    assert _header_bytes(codec, [["\U0001f389", None]]) == "0208f09f8e8901"


@rules("HV-13")
@given(NON_EMPTY_HEADERS, st.data())
def test_truncated_header_bytes_are_refused(codec: Any, headers: list[list[Any]], data: st.DataObject) -> None:
    full = bytes.fromhex(_header_bytes(codec, headers))
    cut = data.draw(st.integers(min_value=1, max_value=len(full) - 1)) if len(full) > 1 else 0
    if cut == 0:
        return
    out = codec.call("header_values.deserialize_headers", {"bytes": full[:cut].hex()})
    assert is_refusal(out)


@rules("HV-13")
def test_malformed_lengths_are_refused(codec: Any) -> None:
    for data in ["0201", "0202610300", "020261087878", "02feffffff0f", "80", "ffffffffff01"]:
        assert is_refusal(codec.call("header_values.deserialize_headers", {"bytes": data})), data


# --- ValueTimestampHeaders ---------------------------------------------------------------------------


@rules("HV-6")
@given(VALUES, INT64, HEADERS)
def test_layout_puts_headers_before_the_timestamp(codec: Any, value: str, ts: int, headers: list[list[Any]]) -> None:
    section = _header_bytes(codec, headers)
    out = codec.call("header_values.serialize", {"value": value, "timestamp": ts, "headers": headers})
    assert out == {"bytes": _varint(codec, len(section) // 2) + section + i64(ts) + value}


@rules("HV-6", "HV-9")
@given(VALUES, INT64, HEADERS)
def test_round_trip_and_static_helpers_agree(codec: Any, value: str, ts: int, headers: list[list[Any]]) -> None:
    data = codec.call("header_values.serialize", {"value": value, "timestamp": ts, "headers": headers})["bytes"]
    assert codec.call("header_values.deserialize", {"bytes": data}) == {
        "deserialize": {"result": {"value": value, "timestamp": ts, "headers": headers}},
        "static_value": {"value": value},
        "static_timestamp": {"timestamp": ts},
        "static_headers": {"headers": headers},
    }


@rules("HV-7")
@given(VALUES, INT64)
def test_no_headers_is_a_single_zero_prefix(codec: Any, value: str, ts: int) -> None:
    no_headers: tuple[list[Any] | None, ...] = (None, [])
    for headers in no_headers:
        out = codec.call("header_values.serialize", {"value": value, "timestamp": ts, "headers": headers})
        assert out == {"bytes": "00" + i64(ts) + value}


@rules("HV-7")
@given(INT64, HEADERS)
def test_null_value_is_null_whatever_the_headers(codec: Any, ts: int, headers: list[list[Any]]) -> None:
    assert codec.call("header_values.serialize", {"value": None, "timestamp": ts, "headers": headers}) == {"bytes": None}
    out = codec.call("header_values.deserialize", {"bytes": None})
    assert out["deserialize"] == {"result": None} and out["static_value"] == {"value": None}
    assert out["static_headers"] == {"headers": None} and is_refusal(out["static_timestamp"])


@rules("HV-9")
@given(NON_EMPTY_HEADERS, st.binary(max_size=7))
def test_headers_read_needs_no_timestamp(codec: Any, headers: list[list[Any]], tail: bytes) -> None:
    section = _header_bytes(codec, headers)
    data = _varint(codec, len(section) // 2) + section + tail.hex()
    out = codec.call("header_values.deserialize", {"bytes": data})
    assert out["static_headers"] == {"headers": headers}
    assert is_refusal(out["deserialize"]) and is_refusal(out["static_timestamp"])


@rules("HV-13")
@given(VALUES, INT64, HEADERS, st.data())
def test_a_value_cut_before_its_payload_is_refused(codec: Any, value: str, ts: int, headers: list[list[Any]],
                                                   data: st.DataObject) -> None:
    full = codec.call("header_values.serialize", {"value": value, "timestamp": ts, "headers": headers})["bytes"]
    payload_start = len(full) // 2 - len(value) // 2
    cut = data.draw(st.integers(min_value=0, max_value=payload_start - 1))
    out = codec.call("header_values.deserialize", {"bytes": full[: 2 * cut]})
    assert is_refusal(out["deserialize"])
    assert is_refusal(out["static_timestamp"])


@rules("HV-13")
@pytest.mark.parametrize("size", ["01", "03", "ffffffff0f"], ids=["-1", "-2", "int-min"])
def test_a_negative_headers_size_is_refused(codec: Any, size: str) -> None:
    """A negative headersSize (zig-zag ``01`` is -1) is refused by the full decode, the headers read, the lazy
    decode and the aggregation decode; it is never read as "no headers"."""
    data = size + (7).to_bytes(8, "big").hex() + "aa"
    out = codec.call("header_values.deserialize", {"bytes": data})
    assert is_refusal(out["deserialize"]) and is_refusal(out["static_headers"]), out
    assert is_refusal(codec.call("header_values.deserialize_lazy", {"bytes": data}))
    assert is_refusal(codec.call("header_values.deserialize_aggregation", {"bytes": data}))


# --- lazy decoding -----------------------------------------------------------------------------------

GARBAGE_HEADER_BYTES = st.sampled_from(["0201", "020a61", "02026105", "020203", "0202610ff0"])


@rules("HV-10")
@given(GARBAGE_HEADER_BYTES, VALUES, INT64)
def test_value_and_timestamp_reads_skip_the_header_bytes(codec: Any, garbage: str, value: str, ts: int) -> None:
    data = _varint(codec, len(garbage) // 2) + garbage + i64(ts) + value
    lazy = codec.call("header_values.deserialize_lazy", {"bytes": data})
    assert lazy["result"] == {"value": value, "timestamp": ts, "raw_headers": garbage}
    assert is_refusal(lazy["headers"])
    full = codec.call("header_values.deserialize", {"bytes": data})
    assert full["static_value"] == {"value": value} and full["static_timestamp"] == {"timestamp": ts}
    assert is_refusal(full["static_headers"])


@rules("HV-10")
@given(VALUES, INT64, HEADERS)
def test_lazy_headers_are_the_headers(codec: Any, value: str, ts: int, headers: list[list[Any]]) -> None:
    data = codec.call("header_values.serialize", {"value": value, "timestamp": ts, "headers": headers})["bytes"]
    lazy = codec.call("header_values.deserialize_lazy", {"bytes": data})
    assert lazy == {"result": {"value": value, "timestamp": ts, "raw_headers": _header_bytes(codec, headers)},
                    "headers": {"headers": headers}}


# --- AggregationWithHeaders -------------------------------------------------------------------------


@rules("HV-11")
@given(VALUES, HEADERS)
def test_aggregation_layout_and_round_trip(codec: Any, agg: str, headers: list[list[Any]]) -> None:
    section = _header_bytes(codec, headers)
    data = codec.call("header_values.serialize_aggregation", {"aggregation": agg, "headers": headers})["bytes"]
    assert data == _varint(codec, len(section) // 2) + section + agg
    assert codec.call("header_values.deserialize_aggregation", {"bytes": data}) == {
        "result": {"aggregation": agg, "headers": headers}}
    assert codec.call("header_values.raw_aggregation", {"bytes": data}) == {"aggregation": agg}


@rules("HV-11")
def test_aggregation_nulls(codec: Any) -> None:
    assert codec.call("header_values.serialize_aggregation", {"aggregation": None, "headers": [["a", "78"]]}) == {"bytes": None}
    assert codec.call("header_values.deserialize_aggregation", {"bytes": None}) == {"result": None}
    assert codec.call("header_values.raw_aggregation", {"bytes": None}) == {"aggregation": None}
    assert is_refusal(codec.call("header_values.raw_aggregation", {"bytes": ""}))


# --- conversions ---------------------------------------------------------------------------------------


@rules("HV-8")
@given(VALUES, INT64)
def test_converted_timestamped_value_keeps_value_and_timestamp(codec: Any, value: str, ts: int) -> None:
    legacy = codec.call("timestamped.serialize", {"value": value, "timestamp": ts})["bytes"]
    out = codec.call("header_values.convert_to_header_format", {"value_and_timestamp": legacy})
    assert out == {"bytes": "00" + legacy, "deserialized": {"value": value, "timestamp": ts, "headers": []}}
    assert out["bytes"] == codec.call("header_values.serialize", {"value": value, "timestamp": ts, "headers": None})["bytes"]


@rules("HV-8")
@given(st.binary(max_size=7))
def test_conversion_never_looks_inside(codec: Any, short: bytes) -> None:
    assert codec.call("header_values.convert_to_header_format", {"value_and_timestamp": short.hex()}) == {"bytes": "00" + short.hex()}
    assert codec.call("header_values.convert_to_header_format", {"value_and_timestamp": None}) == {"bytes": None}


@rules("HV-8")
@given(VALUES)
def test_plain_values_convert_with_timestamp_minus_one(codec: Any, value: str) -> None:
    out = codec.call("header_values.convert_from_plain_to_header_format", {"plain_value": value})
    assert out == {"bytes": "00" + "ff" * 8 + value, "deserialized": {"value": value, "timestamp": -1, "headers": []}}
    assert codec.call("header_values.convert_from_plain_to_header_format", {"plain_value": None}) == {"bytes": None}


@rules("HV-8")
@given(VALUES, VALUES)
def test_conversion_keeps_byte_order(codec: Any, a: str, b: str) -> None:
    for op, field in (("header_values.convert_to_header_format", "value_and_timestamp"),
                      ("header_values.convert_from_plain_to_header_format", "plain_value")):
        ca = bytes.fromhex(codec.call(op, {field: a})["bytes"])
        cb = bytes.fromhex(codec.call(op, {field: b})["bytes"])
        ra, rb = bytes.fromhex(a), bytes.fromhex(b)
        assert (ca > cb) - (ca < cb) == (ra > rb) - (ra < rb)


# --- restore -------------------------------------------------------------------------------------------

CONSISTENCY = [["v", "00"], ["c", "00" * 40]]


@rules("HV-12")
@given(st.none() | VALUES, INT64, HEADERS, st.booleans())
def test_restore_copies_every_record_header(codec: Any, value: str | None, ts: int, headers: list[list[Any]],
                                            consistency: bool) -> None:
    record_headers = headers + CONSISTENCY if consistency else headers
    out = codec.call("header_values.raw_value_to_headers_value",
                     {"record_value": value, "record_timestamp": ts, "record_headers": record_headers})
    stored = codec.call("header_values.serialize", {"value": value, "timestamp": ts, "headers": record_headers})["bytes"]
    assert out == {"value": stored, "timestamp": ts, "headers": record_headers}
    session = codec.call("header_values.raw_value_to_session_headers_value",
                         {"record_value": value, "record_headers": record_headers})
    aggregation = codec.call("header_values.serialize_aggregation",
                             {"aggregation": value, "headers": record_headers})["bytes"]
    assert session == {"value": aggregation, "headers": record_headers}


# --- Kafka's leniency (recommended) and tentative parts ---------------------------------------------

JDK_REPLACEMENTS = [
    ("eda080", "\ufffd"), ("eda0", "\ufffd"), ("eda041", "\ufffdA"), ("f09f8e", "\ufffd"), ("f09f8e41", "\ufffdA"),
    ("c0af", "\ufffd\ufffd"), ("e080", "\ufffd\ufffd"), ("f4908080", "\ufffd" * 4), ("ff", "\ufffd"),
    ("e28241", "\ufffdA"), ("41e2", "A\ufffd"), ("c241", "\ufffdA"), ("f0808080", "\ufffd" * 4),
]


@rules("HV-5")
@pytest.mark.kstate_level("recommended")
@pytest.mark.parametrize(("key_bytes", "key"), JDK_REPLACEMENTS)
def test_invalid_utf8_keys_are_replaced_as_the_jdk_does(codec: Any, key_bytes: str, key: str) -> None:
    data = "02" + _varint(codec, len(key_bytes) // 2) + key_bytes + "01"
    assert codec.call("header_values.deserialize_headers", {"bytes": data}) == {"headers": [[key, None]]}


@rules("HV-5")
@pytest.mark.kstate_level("recommended")
@given(HEADERS, st.binary(min_size=1, max_size=8))
def test_negative_counts_and_trailing_bytes_are_tolerated(codec: Any, headers: list[list[Any]], extra: bytes) -> None:
    assert codec.call("header_values.deserialize_headers", {"bytes": "01" + extra.hex()}) == {"headers": []}
    if headers:
        data = _header_bytes(codec, headers) + extra.hex()
        assert codec.call("header_values.deserialize_headers", {"bytes": data}) == {"headers": headers}


@rules("HV-14")
@pytest.mark.kstate_level("recommended")
def test_static_helpers_skip_backwards_over_a_negative_headers_size(codec: Any) -> None:
    out = codec.call("header_values.deserialize", {"bytes": "01000000000000000000"})
    assert out["static_value"] == {"value": "0000"}
    assert out["static_timestamp"] == {"timestamp": 72057594037927936}
    assert is_refusal(out["deserialize"]) and is_refusal(out["static_headers"])
    assert codec.call("header_values.raw_aggregation", {"bytes": "016162"}) == {"aggregation": "016162"}


@rules("HV-16")
@pytest.mark.kstate_level("recommended")
def test_an_unpaired_surrogate_is_written_as_a_question_mark(codec: Any) -> None:
    assert _header_bytes(codec, [["a\ud800b", None]]) == "0206613f6201"


@rules("HV-15")
@pytest.mark.kstate_level("tentative")
@given(HEADERS, st.binary(max_size=24))
def test_any_payload_follows_the_header_bytes_verbatim(codec: Any, headers: list[list[Any]], payload: bytes) -> None:
    data = codec.call("header_values.serialize_aggregation", {"aggregation": payload.hex(), "headers": headers})["bytes"]
    section = _header_bytes(codec, headers)
    prefix = _varint(codec, len(section) // 2) + section
    assert data.startswith(prefix) and data[len(prefix):] == payload.hex()
