"""Unit tests of the reference session key codec (kstate.codecs.session_keys) and its operations."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kstate.codecs import session_keys as sk
from kstate.errors import DecodeError, EncodeError, NullKeyError
from kstate.ops import call
from kstate.vectors import check, load_vector_file

LONG_MAX = (1 << 63) - 1
LONG_MIN = -(1 << 63)
INT64 = st.integers(min_value=LONG_MIN, max_value=LONG_MAX)
PLAIN, TIME_FIRST, KEY_FIRST = sk.SessionSchema.PLAIN, sk.SessionSchema.TIME_FIRST, sk.SessionSchema.KEY_FIRST
END_10_START_5 = "000000000000000a" + "0000000000000005"


def test_layouts_put_the_end_first() -> None:
    assert sk.to_binary(PLAIN, b"k", 5, 10).hex() == "6b" + END_10_START_5
    assert sk.to_binary(TIME_FIRST, b"k", 5, 10).hex() == "00" + END_10_START_5 + "6b"
    assert sk.to_binary(KEY_FIRST, b"k", 5, 10).hex() == "01" + "6b" + END_10_START_5


@pytest.mark.parametrize("schema", list(sk.SessionSchema))
@given(key=st.binary(max_size=20), start=INT64, end=INT64)
def test_round_trip_without_validation(schema: sk.SessionSchema, key: bytes, start: int, end: int) -> None:
    data = sk.to_binary(schema, key, start, end)
    assert sk.decode(schema, data) == sk.SessionStoreKey(key, start, end)
    assert len(data) == len(key) + sk.min_key_length(schema)


def test_null_keys() -> None:
    with pytest.raises(NullKeyError):
        sk.to_binary(PLAIN, None, 0, 0)
    with pytest.raises(NullKeyError):
        sk.to_binary(KEY_FIRST, None, 0, 0)
    assert sk.to_binary(TIME_FIRST, None, 5, 10) == sk.to_binary(TIME_FIRST, b"", 5, 10)
    assert sk.lower_range_fixed_size(TIME_FIRST, None, -3) == sk.to_binary(TIME_FIRST, b"", 0, 0)
    with pytest.raises(NullKeyError):
        sk.lower_range_fixed_size(KEY_FIRST, None, 3)


@pytest.mark.parametrize("schema", list(sk.SessionSchema))
@given(data=st.binary(max_size=48))
def test_hostile_bytes_raise_only_decode_errors(schema: sk.SessionSchema, data: bytes) -> None:
    decoders: list[Callable[[], object]] = [
        lambda: sk.decode(schema, data),
        lambda: sk.extract_window(schema, data),
        lambda: sk.key_segment_id(schema, data, 7),
        lambda: sk.extract_window_bytes_from_non_prefix_session_key(data),
    ]
    for decode in decoders:
        with contextlib.suppress(DecodeError):
            decode()


@pytest.mark.parametrize("schema", list(sk.SessionSchema))
def test_short_input_is_refused(schema: sk.SessionSchema) -> None:
    need = sk.min_key_length(schema)
    with pytest.raises(DecodeError) as info:
        sk.decode(schema, bytes(need - 1))
    assert info.value.offset == 0
    assert sk.decode(schema, bytes(need)) == sk.SessionStoreKey(b"", 0, 0)


def test_no_length_field_so_a_long_key_is_sliced_not_allocated() -> None:
    key = b"\xcd" * (1 << 20)
    assert sk.decode(TIME_FIRST, b"\x00" + bytes(16) + key).key == key


def test_session_window_validation() -> None:
    sk.validate_session_window(7, 7)  # a single-record session is valid
    with pytest.raises(DecodeError, match="negative"):
        sk.validate_session_window(-1, -5)
    with pytest.raises(DecodeError, match="smaller"):
        sk.validate_session_window(10, 5)
    assert sk.extract_window(PLAIN, sk.to_binary(PLAIN, b"", 5, 10)) == (5, 10)
    with pytest.raises(DecodeError):
        sk.extract_window(PLAIN, sk.to_binary(PLAIN, b"", 10, 5))
    with pytest.raises(EncodeError):
        sk.to_binary_windowed(KEY_FIRST, b"k", 10, 5)


def test_range_bounds() -> None:
    key = bytes.fromhex("807f00ff")
    max_then = (LONG_MAX).to_bytes(8, "big") + (10).to_bytes(8, "big")
    assert sk.upper_range(PLAIN, key, 10) == bytes.fromhex("807f") + max_then
    assert sk.upper_range(KEY_FIRST, key, 10) == b"\x01" + bytes.fromhex("807f") + max_then
    assert sk.upper_range(TIME_FIRST, key, 10) == b"\x00" + max_then + key
    assert sk.lower_range(PLAIN, key, 10) == key + bytes(16)
    assert sk.lower_range(TIME_FIRST, key, 10) == b"\x00" + (10).to_bytes(8, "big") + bytes(8) + key
    assert sk.lower_range(PLAIN, None, 1) is None and sk.upper_range(PLAIN, None, 1) is None
    assert (sk.lower_range(KEY_FIRST, None, 1), sk.upper_range(KEY_FIRST, None, 1)) == (b"\x01", b"\x02")
    assert (sk.lower_range(TIME_FIRST, None, 1), sk.upper_range(TIME_FIRST, None, 1)) == (
        b"\x00" + (1).to_bytes(8, "big"), b"\x01")


def test_fixed_upper_bound_checks_the_window_except_time_first() -> None:
    with pytest.raises(EncodeError):
        sk.upper_range_fixed_size(PLAIN, b"k", -1)
    with pytest.raises(EncodeError):
        sk.upper_range_fixed_size(KEY_FIRST, b"k", -1)
    assert sk.upper_range_fixed_size(TIME_FIRST, b"k", -1) == sk.to_binary(TIME_FIRST, b"k", -1, LONG_MAX)
    assert sk.lower_range_fixed_size(PLAIN, b"k", -9) == sk.to_binary(PLAIN, b"k", 0, 0)


def test_conversions() -> None:
    plain = sk.to_binary(PLAIN, b"key", 5, 10)
    assert sk.extract_window_bytes_from_non_prefix_session_key(plain) == sk.to_binary(TIME_FIRST, b"key", 5, 10)
    assert sk.prefix_non_prefix_session_key(plain) == sk.to_binary(KEY_FIRST, b"key", 5, 10)
    assert sk.prefix_non_prefix_session_key(b"") == b"\x01"
    with pytest.raises(DecodeError):
        sk.extract_window_bytes_from_non_prefix_session_key(bytes(15))


def test_segments_by_end() -> None:
    data = sk.to_binary(PLAIN, b"k", 5, 25)
    assert sk.key_segment_id(PLAIN, data, 10) == 2
    assert sk.default_segment_interval(86400000) == 43200000
    assert sk.default_segment_interval(1) == 60000
    with pytest.raises(EncodeError):
        sk.default_segment_interval(-1)
    with pytest.raises(EncodeError):
        sk.key_segment_id(PLAIN, data, 0)


def test_operations() -> None:
    out = call("session.key_schema.extract", {"bytes": "0000000000000005" + "000000000000000a"})
    assert out["start"] == 10 and out["end"] == 5 and "error" in out["window"]
    out = call("session.to_binary_windowed", {"key": None, "start": 5, "end": 10})
    assert "error" in out["session_key_schema"] and "error" in out["key_first"]
    assert out["time_first"] == "00" + END_10_START_5
    assert set(call("session.to_binary_windowed", {"key": "", "start": 5, "end": 4})) == {"error"}


def test_every_recorded_session_vector_matches(shared_vectors: Path) -> None:
    vectors = [v for v in load_vector_file(shared_vectors)["vectors"] if v["group"] == "session_key_schema"]
    report = check(vectors)
    assert len(vectors) == 1046
    assert report.ok, [r for r in report.results if r.status in ("mismatched", "unsupported")][:5]
