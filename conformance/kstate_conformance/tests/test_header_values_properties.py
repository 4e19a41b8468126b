"""Properties of KIP-1271 header-aware values, checked through the adapter (HV-*)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kstate_conformance import rules
from kstate_conformance.departures import depart
from kstate_conformance.harness import i64, is_refusal
from kstate_conformance.strategies import INT64, hex_binary

KEYS = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=12)
HEADER_VALUES = st.none() | hex_binary(16)
HEADERS = st.lists(st.tuples(KEYS, HEADER_VALUES).map(list), max_size=6)
NON_EMPTY_HEADERS = st.lists(st.tuples(KEYS, HEADER_VALUES).map(list), min_size=1, max_size=6)
VALUES = hex_binary(16)


def _varint(implementation: Any, value: int) -> str:
    return str(implementation.call("varint.write_varint", {"value": value})["bytes"])


def _header_bytes(implementation: Any, headers: list[list[Any]] | None) -> str:
    return str(implementation.call("header_values.serialize_headers", {"headers": headers})["bytes"])


def _expected_header_bytes(implementation: Any, headers: list[list[Any]]) -> str:
    """The header section built independently: zig-zag varints from the varint ops, UTF-8 keys."""
    parts = [_varint(implementation, len(headers))]
    for key, value in headers:
        key_bytes = key.encode("utf-8")
        parts += [_varint(implementation, len(key_bytes)), key_bytes.hex()]
        parts += [_varint(implementation, -1)] if value is None else [_varint(implementation, len(value) // 2), value]
    return "".join(parts)


# --- header bytes ----------------------------------------------------------------------------------


@rules("HV-1")
def test_no_headers_is_zero_bytes(implementation: Any) -> None:
    assert implementation.call("header_values.serialize_headers", {"headers": None}) == {"bytes": ""}
    assert implementation.call("header_values.serialize_headers", {"headers": []}) == {"bytes": ""}
    assert implementation.call("header_values.deserialize_headers", {"bytes": ""}) == {"headers": []}
    assert implementation.call("header_values.deserialize_headers", {"bytes": "00"}) == {"headers": []}


@rules("HV-1", "HV-2", "HV-3", "HV-4")
@given(NON_EMPTY_HEADERS)
def test_header_bytes_are_the_record_header_section(implementation: Any, headers: list[list[Any]]) -> None:
    assert _header_bytes(implementation, headers) == _expected_header_bytes(implementation, headers)


@rules("HV-1", "HV-2", "HV-4")
@given(HEADERS)
def test_header_bytes_round_trip_in_order_with_nulls(implementation: Any, headers: list[list[Any]]) -> None:
    data = _header_bytes(implementation, headers)
    assert implementation.call("header_values.deserialize_headers", {"bytes": data}) == {"headers": headers}


@rules("HV-2")
def test_null_and_empty_header_values_differ(implementation: Any) -> None:
    null = _header_bytes(implementation, [["k", None]])
    empty = _header_bytes(implementation, [["k", ""]])
    assert (null, empty) == ("02026b01", "02026b00")
    assert implementation.call("header_values.deserialize_headers", {"bytes": null}) == {"headers": [["k", None]]}
    assert implementation.call("header_values.deserialize_headers", {"bytes": empty}) == {"headers": [["k", ""]]}


@rules("HV-4")
def test_keys_count_utf8_bytes(implementation: Any) -> None:
    assert _header_bytes(implementation, [["é", None]]) == "0204c3a901"
    assert _header_bytes(implementation, [["\U0001f389", None]]) == "0208f09f8e8901"


@rules("HV-13")
@given(NON_EMPTY_HEADERS, st.data())
def test_truncated_header_bytes_are_refused(implementation: Any, headers: list[list[Any]], data: st.DataObject) -> None:
    full = bytes.fromhex(_header_bytes(implementation, headers))
    cut = data.draw(st.integers(min_value=1, max_value=len(full) - 1)) if len(full) > 1 else 0
    if cut == 0:
        return
    out = implementation.call("header_values.deserialize_headers", {"bytes": full[:cut].hex()})
    assert is_refusal(out)


@rules("HV-13")
def test_malformed_lengths_are_refused(implementation: Any) -> None:
    for data in ["0201", "0202610300", "020261087878", "02feffffff0f", "80", "ffffffffff01"]:
        assert is_refusal(implementation.call("header_values.deserialize_headers", {"bytes": data})), data


# --- ValueTimestampHeaders ---------------------------------------------------------------------------


@rules("HV-6")
@given(VALUES, INT64, HEADERS)
def test_layout_puts_headers_before_the_timestamp(implementation: Any, value: str, ts: int, headers: list[list[Any]]) -> None:
    section = _header_bytes(implementation, headers)
    out = implementation.call("header_values.serialize", {"value": value, "timestamp": ts, "headers": headers})
    assert out == {"bytes": _varint(implementation, len(section) // 2) + section + i64(ts) + value}


@rules("HV-6", "HV-9")
@given(VALUES, INT64, HEADERS)
def test_round_trip_and_static_helpers_agree(implementation: Any, value: str, ts: int, headers: list[list[Any]]) -> None:
    data = implementation.call("header_values.serialize", {"value": value, "timestamp": ts, "headers": headers})["bytes"]
    assert implementation.call("header_values.deserialize", {"bytes": data}) == {
        "deserialize": {"result": {"value": value, "timestamp": ts, "headers": headers}},
        "static_value": {"value": value},
        "static_timestamp": {"timestamp": ts},
        "static_headers": {"headers": headers},
    }


@rules("HV-7")
@given(VALUES, INT64)
def test_no_headers_is_a_single_zero_prefix(implementation: Any, value: str, ts: int) -> None:
    no_headers: tuple[list[Any] | None, ...] = (None, [])
    for headers in no_headers:
        out = implementation.call("header_values.serialize", {"value": value, "timestamp": ts, "headers": headers})
        assert out == {"bytes": "00" + i64(ts) + value}


@rules("HV-7")
@given(INT64, HEADERS)
def test_null_value_is_null_whatever_the_headers(implementation: Any, ts: int, headers: list[list[Any]]) -> None:
    assert implementation.call("header_values.serialize", {"value": None, "timestamp": ts, "headers": headers}) == {"bytes": None}
    out = implementation.call("header_values.deserialize", {"bytes": None})
    assert out["deserialize"] == {"result": None} and out["static_value"] == {"value": None}
    assert out["static_headers"] == {"headers": None} and is_refusal(out["static_timestamp"])


@rules("HV-9")
@given(NON_EMPTY_HEADERS, st.binary(max_size=7))
def test_headers_read_needs_no_timestamp(implementation: Any, headers: list[list[Any]], tail: bytes) -> None:
    section = _header_bytes(implementation, headers)
    data = _varint(implementation, len(section) // 2) + section + tail.hex()
    out = implementation.call("header_values.deserialize", {"bytes": data})
    assert out["static_headers"] == {"headers": headers}
    assert is_refusal(out["deserialize"]) and is_refusal(out["static_timestamp"])


@rules("HV-13")
@given(VALUES, INT64, HEADERS, st.data())
def test_a_value_cut_before_its_payload_is_refused(implementation: Any, value: str, ts: int, headers: list[list[Any]],
                                                   data: st.DataObject) -> None:
    full = implementation.call("header_values.serialize", {"value": value, "timestamp": ts, "headers": headers})["bytes"]
    payload_start = len(full) // 2 - len(value) // 2
    cut = data.draw(st.integers(min_value=0, max_value=payload_start - 1))
    out = implementation.call("header_values.deserialize", {"bytes": full[: 2 * cut]})
    assert is_refusal(out["deserialize"])
    assert is_refusal(out["static_timestamp"])


@rules("HV-13")
@pytest.mark.parametrize("size", ["01", "03", "ffffffff0f"], ids=["-1", "-2", "int-min"])
def test_a_negative_headers_size_is_refused(implementation: Any, size: str) -> None:
    """A negative headersSize (zig-zag ``01`` is -1) is refused by the full decode, the headers read and the
    aggregation decode; it is never read as "no headers" (the lazy decode: the next test)."""
    data = _negative_headers_size_value(size)
    out = implementation.call("header_values.deserialize", {"bytes": data})
    assert is_refusal(out["deserialize"]) and is_refusal(out["static_headers"]), out
    assert is_refusal(implementation.call("header_values.deserialize_aggregation", {"bytes": data}))


@rules("HV-10", "HV-13")
@pytest.mark.kstate_level("hardened")
@pytest.mark.parametrize("size", ["01", "03", "ffffffff0f"], ids=["-1", "-2", "int-min"])
def test_a_negative_headers_size_is_refused_by_the_lazy_decode(implementation: Any, size: str) -> None:
    """HV-10 (hardened) with HV-13: the lazy decode refuses a negative headersSize as the full decode does. A store
    that decodes eagerly, as Kafka 4.4's does, lacks the lazy_headers capability (absent)."""
    assert is_refusal(implementation.call("header_values.deserialize_lazy", {"bytes": _negative_headers_size_value(size)}))


def _negative_headers_size_value(size: str) -> str:
    """A header-aware value whose headersSize is the varint ``size``, then timestamp 7 and value ``aa``."""
    return size + (7).to_bytes(8, "big").hex() + "aa"


# --- lazy decoding (HV-10, hardened: Kafka 4.4 decodes eagerly; absent where lazy_headers is not declared) -------

GARBAGE_HEADER_BYTES = st.sampled_from(["0201", "020a61", "02026105", "020203", "0202610ff0"])


@rules("HV-10")
@pytest.mark.kstate_level("hardened")
@given(GARBAGE_HEADER_BYTES, VALUES, INT64)
def test_value_and_timestamp_reads_skip_the_header_bytes(implementation: Any, garbage: str, value: str, ts: int) -> None:
    data = _varint(implementation, len(garbage) // 2) + garbage + i64(ts) + value
    lazy = implementation.call("header_values.deserialize_lazy", {"bytes": data})
    assert lazy["result"] == {"value": value, "timestamp": ts, "raw_headers": garbage}
    assert is_refusal(lazy["headers"])
    full = implementation.call("header_values.deserialize", {"bytes": data})
    assert full["static_value"] == {"value": value} and full["static_timestamp"] == {"timestamp": ts}
    assert is_refusal(full["static_headers"])


@rules("HV-10")
@pytest.mark.kstate_level("hardened")
@given(VALUES, INT64, HEADERS)
def test_lazy_headers_are_the_headers(implementation: Any, value: str, ts: int, headers: list[list[Any]]) -> None:
    data = implementation.call("header_values.serialize", {"value": value, "timestamp": ts, "headers": headers})["bytes"]
    lazy = implementation.call("header_values.deserialize_lazy", {"bytes": data})
    assert lazy == {"result": {"value": value, "timestamp": ts, "raw_headers": _header_bytes(implementation, headers)},
                    "headers": {"headers": headers}}


# --- AggregationWithHeaders -------------------------------------------------------------------------


@rules("HV-11")
@given(VALUES, HEADERS)
def test_aggregation_layout_and_round_trip(implementation: Any, agg: str, headers: list[list[Any]]) -> None:
    section = _header_bytes(implementation, headers)
    data = implementation.call("header_values.serialize_aggregation", {"aggregation": agg, "headers": headers})["bytes"]
    assert data == _varint(implementation, len(section) // 2) + section + agg
    assert implementation.call("header_values.deserialize_aggregation", {"bytes": data}) == {
        "result": {"aggregation": agg, "headers": headers}}
    assert implementation.call("header_values.raw_aggregation", {"bytes": data}) == {"aggregation": agg}


@rules("HV-11")
def test_aggregation_nulls(implementation: Any) -> None:
    assert implementation.call("header_values.serialize_aggregation", {"aggregation": None, "headers": [["a", "78"]]}) == {"bytes": None}
    assert implementation.call("header_values.deserialize_aggregation", {"bytes": None}) == {"result": None}
    assert implementation.call("header_values.raw_aggregation", {"bytes": None}) == {"aggregation": None}
    assert is_refusal(implementation.call("header_values.raw_aggregation", {"bytes": ""}))


@rules("HV-11")
def test_aggregation_with_null_headers_is_refused_or_written_without_headers(implementation: Any) -> None:
    """HV-11: ``AggregationWithHeaders.make`` refuses null headers (``NullPointerException``, "headers must not be
    null"), where the reference takes them as none; either is allowed, never bytes other than ``00`` + aggregation."""
    out = implementation.call("header_values.serialize_aggregation", {"aggregation": "0102", "headers": None})
    assert is_refusal(out) or out == {"bytes": "000102"}, out


# --- conversions ---------------------------------------------------------------------------------------


@rules("HV-8")
@given(VALUES, INT64)
def test_converted_timestamped_value_keeps_value_and_timestamp(implementation: Any, value: str, ts: int) -> None:
    legacy = implementation.call("timestamped.serialize", {"value": value, "timestamp": ts})["bytes"]
    out = implementation.call("header_values.convert_to_header_format", {"value_and_timestamp": legacy})
    assert out == {"bytes": "00" + legacy, "deserialized": {"value": value, "timestamp": ts, "headers": []}}
    assert out["bytes"] == implementation.call("header_values.serialize", {"value": value, "timestamp": ts, "headers": None})["bytes"]


@rules("HV-8")
@given(st.binary(max_size=7))
def test_conversion_never_looks_inside(implementation: Any, short: bytes) -> None:
    assert implementation.call("header_values.convert_to_header_format", {"value_and_timestamp": short.hex()}) == {"bytes": "00" + short.hex()}
    assert implementation.call("header_values.convert_to_header_format", {"value_and_timestamp": None}) == {"bytes": None}


@rules("HV-8")
@given(VALUES)
def test_plain_values_convert_with_timestamp_minus_one(implementation: Any, value: str) -> None:
    out = implementation.call("header_values.convert_from_plain_to_header_format", {"plain_value": value})
    assert out == {"bytes": "00" + "ff" * 8 + value, "deserialized": {"value": value, "timestamp": -1, "headers": []}}
    assert implementation.call("header_values.convert_from_plain_to_header_format", {"plain_value": None}) == {"bytes": None}


@rules("HV-8")
@given(VALUES, VALUES)
def test_conversion_keeps_byte_order(implementation: Any, a: str, b: str) -> None:
    for op, field in (("header_values.convert_to_header_format", "value_and_timestamp"),
                      ("header_values.convert_from_plain_to_header_format", "plain_value")):
        ca = bytes.fromhex(implementation.call(op, {field: a})["bytes"])
        cb = bytes.fromhex(implementation.call(op, {field: b})["bytes"])
        ra, rb = bytes.fromhex(a), bytes.fromhex(b)
        assert (ca > cb) - (ca < cb) == (ra > rb) - (ra < rb)


# --- restore -------------------------------------------------------------------------------------------

CONSISTENCY = [["v", "00"], ["c", "00" * 40]]


@rules("HV-12")
@given(st.none() | VALUES, INT64, HEADERS, st.booleans())
def test_restore_copies_every_record_header(implementation: Any, value: str | None, ts: int, headers: list[list[Any]],
                                            consistency: bool) -> None:
    record_headers = headers + CONSISTENCY if consistency else headers
    out = implementation.call("header_values.raw_value_to_headers_value",
                     {"record_value": value, "record_timestamp": ts, "record_headers": record_headers})
    stored = implementation.call("header_values.serialize", {"value": value, "timestamp": ts, "headers": record_headers})["bytes"]
    assert out == {"value": stored, "timestamp": ts, "headers": record_headers}
    session = implementation.call("header_values.raw_value_to_session_headers_value",
                         {"record_value": value, "record_headers": record_headers})
    aggregation = implementation.call("header_values.serialize_aggregation",
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
def test_invalid_utf8_keys_are_replaced_as_the_jdk_does(implementation: Any, key_bytes: str, key: str) -> None:
    data = "02" + _varint(implementation, len(key_bytes) // 2) + key_bytes + "01"
    answer = implementation.call("header_values.deserialize_headers", {"bytes": data})
    if is_refusal(answer):
        depart(["HV-5"], f"invalid UTF-8 key bytes {key_bytes} refused (HV-5 allows it): {answer}")
    assert answer == {"headers": [[key, None]]}


@rules("HV-5")
@pytest.mark.kstate_level("recommended")
@given(HEADERS, st.binary(min_size=1, max_size=8))
def test_negative_counts_and_trailing_bytes_are_tolerated(implementation: Any, headers: list[list[Any]], extra: bytes) -> None:
    checks: list[tuple[str, list[list[Any]]]] = [("01" + extra.hex(), [])]
    if headers:
        checks.append((_header_bytes(implementation, headers) + extra.hex(), headers))
    for data, expected in checks:
        answer = implementation.call("header_values.deserialize_headers", {"bytes": data})
        if is_refusal(answer):
            depart(["HV-5"], f"lenient header bytes {data} refused (HV-5 allows it): {answer}")
        assert answer == {"headers": expected}


@rules("HV-14")
@pytest.mark.kstate_level("recommended")
def test_static_helpers_skip_backwards_over_a_negative_headers_size(implementation: Any) -> None:
    out = implementation.call("header_values.deserialize", {"bytes": "01000000000000000000"})
    assert out["static_value"] == {"value": "0000"}
    assert out["static_timestamp"] == {"timestamp": 72057594037927936}
    assert is_refusal(out["deserialize"]) and is_refusal(out["static_headers"])
    assert implementation.call("header_values.raw_aggregation", {"bytes": "016162"}) == {"aggregation": "016162"}


@rules("HV-16")
@pytest.mark.kstate_level("recommended")
def test_an_unpaired_surrogate_is_written_as_a_question_mark(implementation: Any) -> None:
    assert _header_bytes(implementation, [["a\ud800b", None]]) == "0206613f6201"


@rules("HV-15")
@pytest.mark.kstate_level("tentative")
@given(HEADERS, st.binary(max_size=24))
def test_any_payload_follows_the_header_bytes_verbatim(implementation: Any, headers: list[list[Any]], payload: bytes) -> None:
    data = implementation.call("header_values.serialize_aggregation", {"aggregation": payload.hex(), "headers": headers})["bytes"]
    section = _header_bytes(implementation, headers)
    prefix = _varint(implementation, len(section) // 2) + section
    assert data.startswith(prefix) and data[len(prefix):] == payload.hex()
