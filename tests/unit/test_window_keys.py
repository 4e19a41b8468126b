"""Unit tests of the reference window key codec (kstate.codecs.window_keys) and its operations.

What every window and session schema shares is tested once per schema in test_key_schemas.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kstate.codecs import key_schemas as ks
from kstate.codecs import window_keys as wk
from kstate.errors import DecodeError, EncodeError, NullKeyError
from kstate.ops import call
from kstate.vectors import check, load_vector_file

LONG_MAX = (1 << 63) - 1
LONG_MIN = -(1 << 63)
PLAIN, TIME_FIRST, KEY_FIRST = wk.PLAIN, wk.TIME_FIRST, wk.KEY_FIRST


def test_layouts_of_the_three_schemas() -> None:
    assert PLAIN.to_store_key(b"k", 1, 2).hex() == "6b" + "0000000000000001" + "00000002"
    assert TIME_FIRST.to_store_key(b"k", 1, 2).hex() == "00" + "0000000000000001" + "6b" + "00000002"
    assert KEY_FIRST.to_store_key(b"k", 1, 2).hex() == "01" + "6b" + "0000000000000001" + "00000002"
    assert PLAIN.to_store_key(b"", -1, -1) == b"\xff" * 12


@pytest.mark.parametrize("schema", wk.SCHEMAS, ids=repr)
def test_null_key_and_out_of_range_arguments_are_refused(schema: wk.WindowSchema) -> None:
    with pytest.raises(NullKeyError):
        schema.to_store_key(None, 0, 0)
    with pytest.raises(EncodeError):
        schema.to_store_key(b"", 1 << 63, 0)
    with pytest.raises(EncodeError):
        schema.to_store_key(b"", 0, 1 << 31)
    with pytest.raises(NullKeyError):
        schema.lower_range_fixed_size(None, 0)


def test_no_length_field_so_a_long_key_is_sliced_not_allocated() -> None:
    # Window keys carry no length field: a 1 MiB key decodes in one slice of exactly that size.
    key = b"\xab" * (1 << 20)
    decoded = PLAIN.decode(key + bytes(12))
    assert decoded.key == key and decoded.timestamp == 0


def test_prefix_byte_is_not_checked() -> None:
    decoded = TIME_FIRST.decode(bytes.fromhex("07" + "0000000000000001" + "aa" + "00000002"))
    assert decoded == wk.WindowStoreKey(b"\xaa", 1, 2)
    assert not wk.is_time_first_schema_key(bytes.fromhex("07"))
    assert wk.is_time_first_schema_key(b"\x00") and not wk.is_time_first_schema_key(b"")


def test_window_checks_run_in_kafkas_order() -> None:
    with pytest.raises(DecodeError, match="negative"):
        wk.validate_window(-1, -5, time_window=True)
    with pytest.raises(DecodeError, match="smaller"):
        wk.validate_window(5, 4, time_window=False)
    with pytest.raises(DecodeError, match="greater"):
        wk.validate_window(5, 5, time_window=True)
    wk.validate_window(5, 5, time_window=False)
    with pytest.raises(EncodeError):
        wk.validate_window(-1, 0, time_window=True, error=EncodeError)


def test_time_window_for_size_uses_java_long_arithmetic() -> None:
    assert wk.time_window_for_size(0, LONG_MAX) == wk.TimeWindow(0, LONG_MAX)
    assert wk.time_window_for_size(1, LONG_MAX) == wk.TimeWindow(1, LONG_MAX)  # wrapped negative, capped
    assert wk.time_window_for_size(5, -10) == wk.TimeWindow(5, LONG_MAX)  # -5 is negative: capped too
    assert wk.time_window_for_size(0, LONG_MIN) == wk.TimeWindow(0, LONG_MAX)
    with pytest.raises(DecodeError):
        wk.time_window_for_size(LONG_MAX, 1)
    with pytest.raises(DecodeError):
        wk.time_window_for_size(10, -5)
    with pytest.raises(DecodeError):
        wk.time_window_for_size(7, 0)


def test_ordered_upper_range() -> None:
    suffix = bytes.fromhex("80") + bytes(11)
    assert ks.ordered_upper_range(bytes.fromhex("807f00ff"), suffix) == b"\x80" + suffix
    assert ks.ordered_upper_range(bytes.fromhex("7f80ff"), suffix) == bytes.fromhex("7f80ff") + suffix
    assert ks.ordered_upper_range(bytes.fromhex("7f80"), b"\x00" + bytes(11)) == bytes.fromhex("7f80") + bytes(12)
    assert ks.ordered_upper_range(b"", suffix) == suffix
    assert ks.ordered_upper_range(b"\x00", suffix) == b"\x00" + suffix  # the first byte is always kept


def test_range_bounds_for_null_keys() -> None:
    assert PLAIN.lower_range(None, 5) is None and PLAIN.upper_range(None, 5) is None
    assert TIME_FIRST.lower_range(None, 5) == b"\x00" + (5).to_bytes(8, "big")
    assert TIME_FIRST.upper_range(None, 5) == b"\x01"
    assert KEY_FIRST.lower_range(None, 5) == b"\x01"
    assert KEY_FIRST.upper_range(None, 5) == b"\x02"


def test_fixed_size_bounds_clamp_only_the_lower_time() -> None:
    assert PLAIN.lower_range_fixed_size(b"k", -5) == PLAIN.to_store_key(b"k", 0, 0)
    assert PLAIN.upper_range_fixed_size(b"k", -5) == PLAIN.to_store_key(b"k", -5, (1 << 31) - 1)
    assert TIME_FIRST.lower_range(b"k", -5) == b"\x00" + (-5).to_bytes(8, "big", signed=True) + b"k"


def test_from_non_prefix_window_key() -> None:
    plain = PLAIN.to_store_key(b"key", 9, 3)
    assert TIME_FIRST.from_non_prefix_key(plain) == TIME_FIRST.to_store_key(b"key", 9, 3)
    assert KEY_FIRST.from_non_prefix_key(plain) == KEY_FIRST.to_store_key(b"key", 9, 3)
    assert KEY_FIRST.from_non_prefix_key(b"") == b"\x01"  # Kafka prefixes anything
    with pytest.raises(DecodeError):
        TIME_FIRST.from_non_prefix_key(bytes(11))
    with pytest.raises(EncodeError):
        PLAIN.from_non_prefix_key(plain)


def test_pipe_serde() -> None:
    assert wk.to_binary(b"k", 5) == b"k" + (5).to_bytes(8, "big")
    assert wk.from_binary(b"k" + (5).to_bytes(8, "big"), 10) == (b"k", wk.TimeWindow(5, 15))
    with pytest.raises(NullKeyError):
        wk.to_binary(None, 5)
    with pytest.raises(DecodeError):
        wk.from_binary(bytes(7), 10)


def test_seqnums() -> None:
    assert wk.next_seqnum(0, False) == 0
    assert wk.next_seqnum(0, True) == 1
    assert wk.next_seqnum((1 << 31) - 1, True) == 0
    with pytest.raises(EncodeError):
        wk.next_seqnum(1 << 31, True)


def test_segments_and_store_parameters() -> None:
    assert wk.default_segment_interval(0) == 60000
    assert wk.default_segment_interval(120003) == 60001
    assert wk.validate_store_params(100, 100, None) == 60000
    assert PLAIN.segment_id(PLAIN.to_store_key(b"", -1, 0), 10) == 0
    assert TIME_FIRST.segment_id(TIME_FIRST.to_store_key(b"k", -11, 0), 10) == -1
    for retention, size, interval in [(-1, 0, None), (10, -1, None), (10, 11, None), (10, 1, 0)]:
        with pytest.raises(EncodeError):
            wk.validate_store_params(retention, size, interval)
    with pytest.raises(EncodeError):
        PLAIN.segment_id(bytes(12), 0)


def test_operations_report_refusals_per_sub_output() -> None:
    out = call("window.key_schema.ranges", {"key": None, "time": 3})
    assert out["lower_range"] == {"bytes": None}
    assert "error" in out["lower_range_fixed_size"] and "error" in out["upper_range_fixed_size"]
    assert "error" in call("window.key_schema.to_binary", {"key": "6b", "window_start": 4, "window_end": 4})
    out = call("window.key_first.extract_store_key", {"bytes": "01" + "6b" + "00" * 8 + "00000001"})
    assert out == {"key": "6b", "timestamp": 0, "seqnum": 1, "is_time_first": False}


def test_every_recorded_window_vector_matches(shared_vectors: Path) -> None:
    vectors = [v for v in load_vector_file(shared_vectors)["vectors"] if v["group"] == "window_key_schema"]
    report = check(vectors)
    assert len(vectors) == 1386
    assert report.ok, [r for r in report.results if r.status in ("mismatched", "unsupported")][:5]

