"""Unit tests of the reference session key codec (kstate.codecs.session_keys) and its operations.

What every window and session schema shares is tested once per schema in test_key_schemas.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kstate.codecs import session_keys as sk
from kstate.errors import DecodeError, EncodeError, NullKeyError
from kstate.ops import call
from kstate.vectors import check, load_vector_file

LONG_MAX = (1 << 63) - 1
LONG_MIN = -(1 << 63)
PLAIN, TIME_FIRST, KEY_FIRST = sk.PLAIN, sk.TIME_FIRST, sk.KEY_FIRST
END_10_START_5 = "000000000000000a" + "0000000000000005"


def test_layouts_put_the_end_first() -> None:
    assert PLAIN.to_store_key(b"k", 5, 10).hex() == "6b" + END_10_START_5
    assert TIME_FIRST.to_store_key(b"k", 5, 10).hex() == "00" + END_10_START_5 + "6b"
    assert KEY_FIRST.to_store_key(b"k", 5, 10).hex() == "01" + "6b" + END_10_START_5


def test_null_keys() -> None:
    with pytest.raises(NullKeyError):
        PLAIN.to_store_key(None, 0, 0)
    with pytest.raises(NullKeyError):
        KEY_FIRST.to_store_key(None, 0, 0)
    assert TIME_FIRST.to_store_key(None, 5, 10) == TIME_FIRST.to_store_key(b"", 5, 10)
    assert TIME_FIRST.lower_range_fixed_size(None, -3) == TIME_FIRST.to_store_key(b"", 0, 0)
    with pytest.raises(NullKeyError):
        KEY_FIRST.lower_range_fixed_size(None, 3)


def test_no_length_field_so_a_long_key_is_sliced_not_allocated() -> None:
    key = b"\xcd" * (1 << 20)
    assert TIME_FIRST.decode(b"\x00" + bytes(16) + key).key == key


def test_session_window_validation() -> None:
    sk.validate_session_window(7, 7)  # a single-record session is valid
    with pytest.raises(DecodeError, match="negative"):
        sk.validate_session_window(-1, -5)
    with pytest.raises(DecodeError, match="smaller"):
        sk.validate_session_window(10, 5)
    assert PLAIN.extract_window(PLAIN.to_store_key(b"", 5, 10)) == (5, 10)
    with pytest.raises(DecodeError):
        PLAIN.extract_window(PLAIN.to_store_key(b"", 10, 5))
    with pytest.raises(EncodeError):
        KEY_FIRST.to_binary_windowed(b"k", 10, 5)


def test_range_bounds() -> None:
    key = bytes.fromhex("807f00ff")
    max_then = (LONG_MAX).to_bytes(8, "big") + (10).to_bytes(8, "big")
    assert PLAIN.upper_range(key, 10) == bytes.fromhex("807f") + max_then
    assert KEY_FIRST.upper_range(key, 10) == b"\x01" + bytes.fromhex("807f") + max_then
    assert TIME_FIRST.upper_range(key, 10) == b"\x00" + max_then + key
    assert PLAIN.lower_range(key, 10) == key + bytes(16)
    assert TIME_FIRST.lower_range(key, 10) == b"\x00" + (10).to_bytes(8, "big") + bytes(8) + key
    assert PLAIN.lower_range(None, 1) is None and PLAIN.upper_range(None, 1) is None
    assert (KEY_FIRST.lower_range(None, 1), KEY_FIRST.upper_range(None, 1)) == (b"\x01", b"\x02")
    assert (TIME_FIRST.lower_range(None, 1), TIME_FIRST.upper_range(None, 1)) == (
        b"\x00" + (1).to_bytes(8, "big"), b"\x01")


def test_fixed_upper_bound_checks_the_window_except_time_first() -> None:
    with pytest.raises(EncodeError):
        PLAIN.upper_range_fixed_size(b"k", -1)
    with pytest.raises(EncodeError):
        KEY_FIRST.upper_range_fixed_size(b"k", -1)
    assert TIME_FIRST.upper_range_fixed_size(b"k", -1) == TIME_FIRST.to_store_key(b"k", -1, LONG_MAX)
    assert PLAIN.lower_range_fixed_size(b"k", -9) == PLAIN.to_store_key(b"k", 0, 0)


def test_conversions() -> None:
    plain = PLAIN.to_store_key(b"key", 5, 10)
    assert TIME_FIRST.from_non_prefix_key(plain) == TIME_FIRST.to_store_key(b"key", 5, 10)
    assert KEY_FIRST.from_non_prefix_key(plain) == KEY_FIRST.to_store_key(b"key", 5, 10)
    assert KEY_FIRST.from_non_prefix_key(b"") == b"\x01"
    with pytest.raises(DecodeError):
        TIME_FIRST.from_non_prefix_key(bytes(15))


def test_segments_by_end() -> None:
    data = PLAIN.to_store_key(b"k", 5, 25)
    assert PLAIN.segment_id(data, 10) == 2
    assert sk.default_segment_interval(86400000) == 43200000
    assert sk.default_segment_interval(1) == 60000
    with pytest.raises(EncodeError):
        sk.default_segment_interval(-1)
    with pytest.raises(EncodeError):
        PLAIN.segment_id(data, 0)


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
