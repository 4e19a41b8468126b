"""Properties of KIP-258 timestamped values, checked through the adapter (TSKV-*)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kstate_conformance import rules
from kstate_conformance.harness import i64, is_refusal
from kstate_conformance.strategies import INT64

VALUES = st.binary(max_size=24)
MINUS_ONE = "ff" * 8


@rules("TSKV-1")
@given(VALUES, INT64)
def test_layout_is_big_endian_timestamp_then_value(implementation: Any, value: bytes, timestamp: int) -> None:
    out = implementation.call("timestamped.serialize", {"value": value.hex(), "timestamp": timestamp})
    assert out == {"bytes": i64(timestamp) + value.hex()}


@rules("TSKV-1", "TSKV-3")
@given(VALUES, INT64)
def test_round_trip_and_static_helpers_agree(implementation: Any, value: bytes, timestamp: int) -> None:
    data = implementation.call("timestamped.serialize", {"value": value.hex(), "timestamp": timestamp})["bytes"]
    assert implementation.call("timestamped.deserialize", {"bytes": data}) == {"result": {"value": value.hex(), "timestamp": timestamp}}
    assert implementation.call("timestamped.raw_value", {"bytes": data}) == {"value": value.hex()}
    assert implementation.call("timestamped.timestamp", {"bytes": data}) == {"timestamp": timestamp}


@rules("TSKV-2")
@given(INT64)
def test_null_is_null_and_empty_is_eight_bytes(implementation: Any, timestamp: int) -> None:
    assert implementation.call("timestamped.serialize", {"value": None, "timestamp": timestamp}) == {"bytes": None}
    empty = implementation.call("timestamped.serialize", {"value": "", "timestamp": timestamp})
    assert empty == {"bytes": i64(timestamp)}
    assert implementation.call("timestamped.deserialize", {"bytes": empty["bytes"]}) == {"result": {"value": "", "timestamp": timestamp}}
    assert implementation.call("timestamped.deserialize", {"bytes": None}) == {"result": None}


@rules("TSKV-3")
@given(st.binary(max_size=7))
def test_fewer_than_eight_bytes_are_refused(implementation: Any, data: bytes) -> None:
    assert is_refusal(implementation.call("timestamped.deserialize", {"bytes": data.hex()}))
    assert is_refusal(implementation.call("timestamped.raw_value", {"bytes": data.hex()}))
    assert is_refusal(implementation.call("timestamped.timestamp", {"bytes": data.hex()}))


@rules("TSKV-5")
@given(VALUES)
def test_legacy_values_get_the_minus_one_prefix(implementation: Any, plain: bytes) -> None:
    out = implementation.call("timestamped.convert_to_timestamped_format", {"plain_value": plain.hex()})
    assert out == {"bytes": MINUS_ONE + plain.hex()}
    assert implementation.call("timestamped.deserialize", {"bytes": out["bytes"]}) == {"result": {"value": plain.hex(), "timestamp": -1}}
    assert implementation.call("timestamped.convert_to_timestamped_format", {"plain_value": None}) == {"bytes": None}


@rules("TSKV-5")
@given(VALUES, VALUES)
def test_conversion_keeps_the_byte_order_of_legacy_values(implementation: Any, a: bytes, b: bytes) -> None:
    ca = bytes.fromhex(implementation.call("timestamped.convert_to_timestamped_format", {"plain_value": a.hex()})["bytes"])
    cb = bytes.fromhex(implementation.call("timestamped.convert_to_timestamped_format", {"plain_value": b.hex()})["bytes"])
    assert (ca > cb) - (ca < cb) == (a > b) - (a < b)


@rules("TSKV-6")
@given(st.none() | VALUES, INT64)
def test_restore_prepends_the_record_timestamp(implementation: Any, value: bytes | None, timestamp: int) -> None:
    hex_value = None if value is None else value.hex()
    out = implementation.call("timestamped.raw_value_to_timestamped_value", {"record_value": hex_value, "record_timestamp": timestamp})
    stored = implementation.call("timestamped.serialize", {"value": hex_value, "timestamp": timestamp})["bytes"]
    assert out == {"value": stored, "timestamp": timestamp}


def _model(old: bytes | None, new: bytes | None, same: bool) -> bool:
    if same:
        return True
    if old is None or new is None or len(old) != len(new):
        return False
    old_ts = int.from_bytes(old[:8], "big", signed=True)
    new_ts = int.from_bytes(new[:8], "big", signed=True)
    return new_ts > old_ts and old[8:] == new[8:]


TIMESTAMPED = st.builds(lambda ts, v: bytes.fromhex(i64(ts)) + v, st.integers(-3, 3), st.binary(max_size=2))


@rules("TSKV-4")
@given(st.none() | TIMESTAMPED, st.none() | TIMESTAMPED)
def test_values_are_same_and_time_is_increasing(implementation: Any, old: bytes | None, new: bytes | None) -> None:
    payload = {"old": None if old is None else old.hex(), "new": None if new is None else new.hex()}
    distinct = {**payload, "same_reference": False}
    if old is None and new is None:
        assert implementation.call("timestamped.values_are_same_and_time_is_increasing", payload) == {"result": True}
        return
    assert implementation.call("timestamped.values_are_same_and_time_is_increasing", distinct) == {"result": _model(old, new, False)}


@rules("TSKV-4")
@given(TIMESTAMPED)
def test_one_array_passed_twice_is_the_same(implementation: Any, value: bytes) -> None:
    op = "timestamped.values_are_same_and_time_is_increasing"
    assert implementation.call(op, {"old": value.hex(), "new": value.hex(), "same_reference": True}) == {"result": True}
    # Two byte strings are two arrays unless same_reference says otherwise; equal copies have equal
    # timestamps, and an equal timestamp is not increasing (step 4).
    assert implementation.call(op, {"old": value.hex(), "new": value.hex()}) == {"result": False}
    assert implementation.call(op, {"old": value.hex(), "new": value.hex(), "same_reference": False}) == {"result": False}


@rules("TSKV-7")
@given(st.binary(max_size=7), st.binary(max_size=7))
def test_short_copies_of_equal_length_are_refused(implementation: Any, a: bytes, b: bytes) -> None:
    b = (b + bytes(len(a)))[: len(a)]
    out = implementation.call("timestamped.values_are_same_and_time_is_increasing", {"old": a.hex(), "new": b.hex(), "same_reference": False})
    assert is_refusal(out)


@rules("TSKV-7")
@pytest.mark.kstate_level("recommended")
def test_short_values_are_compared_by_length_as_kafka_does(implementation: Any) -> None:
    op = "timestamped.values_are_same_and_time_is_increasing"
    assert implementation.call(op, {"old": "01", "new": "0203", "same_reference": False}) == {"result": False}
    assert implementation.call(op, {"old": "", "new": "000000000000000176", "same_reference": False}) == {"result": False}
    assert implementation.call(op, {"old": "01", "new": "01", "same_reference": True}) == {"result": True}
