"""Unit tests of the reference KIP-258 codec (kstate.codecs.timestamped)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kstate.codecs import timestamped as t
from kstate.errors import DecodeError, EncodeError
from kstate.ops import call

INT64 = st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1)


def test_layout_of_kafka_examples() -> None:
    assert t.encode_value_and_timestamp(b"v", 5) == bytes.fromhex("000000000000000576")
    assert t.encode_value_and_timestamp(b"", -1) == b"\xff" * 8
    assert t.encode_value_and_timestamp(None, 5) is None
    assert t.convert_to_timestamped_format(b"\x01") == b"\xff" * 8 + b"\x01"
    assert t.convert_to_timestamped_format(None) is None
    assert t.raw_value_to_timestamped_value(b"x", 256) == bytes.fromhex("000000000000010078")
    assert t.raw_value_to_timestamped_value(None, 256) is None


@given(st.binary(max_size=32), INT64)
def test_round_trip(value: bytes, timestamp: int) -> None:
    data = t.encode_value_and_timestamp(value, timestamp)
    assert data is not None
    assert t.decode_value_and_timestamp(data) == (value, timestamp)
    assert t.raw_value(data) == value and t.timestamp_of(data) == timestamp


def test_out_of_range_timestamp_is_an_encode_error() -> None:
    with pytest.raises(EncodeError):
        t.encode_value_and_timestamp(b"", 1 << 63)


@given(st.binary(max_size=7))
def test_short_input_is_a_decode_error(data: bytes) -> None:
    for decode in (t.decode_value_and_timestamp, t.raw_value, t.timestamp_of):
        with pytest.raises(DecodeError):
            decode(data)


@given(st.binary(max_size=64))
def test_hostile_bytes_raise_only_decode_errors(data: bytes) -> None:
    try:
        decoded = t.decode_value_and_timestamp(data)
    except DecodeError:
        assert len(data) < 8
    else:
        assert decoded == (data[8:], int.from_bytes(data[:8], "big", signed=True))


def test_values_are_same_follows_java_identity() -> None:
    value = bytes.fromhex("000000000000000a76")
    copy = bytes(bytearray(value))
    assert t.values_are_same_and_time_is_increasing(value, value) is True
    assert t.values_are_same_and_time_is_increasing(value, copy) is False  # equal timestamp is not increasing
    assert t.values_are_same_and_time_is_increasing(None, None) is True
    assert t.values_are_same_and_time_is_increasing(None, None, same_reference=False) is True
    assert t.values_are_same_and_time_is_increasing(None, value) is False
    later = bytes.fromhex("000000000000000b76")
    assert t.values_are_same_and_time_is_increasing(value, later) is True
    assert t.values_are_same_and_time_is_increasing(later, value) is False
    assert t.values_are_same_and_time_is_increasing(value, bytes.fromhex("000000000000000b77")) is False


def test_short_values_in_the_comparison_follow_kafka() -> None:
    assert t.values_are_same_and_time_is_increasing(b"\x01", b"\x02\x03") is False
    assert t.values_are_same_and_time_is_increasing(b"\x01", b"\x01", same_reference=True) is True
    with pytest.raises(DecodeError):
        t.values_are_same_and_time_is_increasing(b"\x01\x02", b"\x01\x02", same_reference=False)


def test_comparison_op_reads_two_byte_strings_as_two_arrays_and_flags_short_ones() -> None:
    """TSKV-4: distinct arrays unless ``same_reference`` says otherwise; an equal timestamp is not increasing."""
    op = "timestamped.values_are_same_and_time_is_increasing"
    assert call(op, {"old": "000000000000000a76", "new": "000000000000000a76"}) == {"result": False}
    assert call(op, {"old": "000000000000000a76", "new": "000000000000000a76", "same_reference": True}) == {"result": True}
    assert call(op, {"old": None, "new": None}) == {"result": True}  # two nulls are always one reference
    assert call(op, {"old": None, "new": None, "same_reference": False}) == {"result": True}
    assert "error" in call(op, {"old": "00", "new": "01", "same_reference": True})
    assert call(op, {"old": "000000000000000a76", "new": "000000000000000a76", "same_reference": "yes"})["error"]["field"] \
        == "same_reference"
    from kstate.ops import load_all

    lenient = load_all()[op].lenient
    assert lenient is not None
    assert lenient({"old": "01", "new": "0203"}) is not None
    assert lenient({"old": "0102", "new": "0102", "same_reference": False}) is None  # refused, not lenient
    assert lenient({"old": "000000000000000a76", "new": "000000000000000b76"}) is None


def test_a_recorded_comparison_of_equal_inputs_passed_one_array() -> None:
    """The vector files cannot express identity: byte-equal recorded inputs stand for one array (TSKV-4 step 1)."""
    from kstate.ops import vector_input

    java = "ValueAndTimestampSerializer.valuesAreSameAndTimeIsIncreasing"
    same = {"old": "000000000000000a76", "new": "000000000000000a76"}
    assert vector_input(java, same) == {**same, "same_reference": True}
    assert call("timestamped.values_are_same_and_time_is_increasing", vector_input(java, same)) == {"result": True}
    other = {"old": "000000000000000a76", "new": "000000000000000b76"}
    assert vector_input(java, other) == other
    assert vector_input(java, {"old": None, "new": None}) == {"old": None, "new": None}
    assert vector_input("ValueAndTimestampSerializer.serialize", same) == same
