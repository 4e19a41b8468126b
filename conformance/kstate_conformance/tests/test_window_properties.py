"""Properties of window store keys, checked through the adapter (WIN-*)."""

from __future__ import annotations

from typing import Any

from hypothesis import assume, given
from hypothesis import strategies as st

from kstate_conformance import rules
from kstate_conformance.key_layouts import (
    KEY_FIRST,
    KEY_ORDERED,
    LAYOUTS,
    PLAIN,
    PREFIXED,
    TIME_FIRST,
    KeyLayout,
    bound,
    each_layout,
    int_bytes,
    is_error,
    long_bytes,
)
from kstate_conformance.key_layouts import ranges as layout_ranges

LONG_MAX = (1 << 63) - 1
INT_MAX = (1 << 31) - 1
INT64 = st.integers(min_value=-(1 << 63), max_value=LONG_MAX)
INT32 = st.integers(min_value=-(1 << 31), max_value=INT_MAX)
NON_NEGATIVE_TS = st.integers(min_value=0, max_value=LONG_MAX)
STORE_SEQ = st.integers(min_value=0, max_value=INT_MAX)
KEYS = st.binary(max_size=12)


def _layout(layout: KeyLayout, key: bytes, ts: int, seq: int) -> bytes:
    """The store key as the spec draws it: the window start, then the seqnum (WIN-1, WIN-2, WIN-3)."""
    return layout.store_key(key, long_bytes(ts), int_bytes(seq))


def _encode(implementation: Any, layout: KeyLayout, key: bytes, ts: int, seq: int) -> bytes:
    out = implementation.call(f"window.{layout.name}.to_store_key_binary", {"key": key.hex(), "timestamp": ts, "seqnum": seq})
    return bytes.fromhex(out["bytes"])


def _ranges(implementation: Any, layout: KeyLayout, key: bytes | None, time: int) -> dict[str, Any]:
    return layout_ranges(implementation, "window", layout, key, time)


def _no_prefix(a: bytes, b: bytes) -> bool:
    return not a.startswith(b) and not b.startswith(a)


@rules("WIN-1", "WIN-2", "WIN-3")
@each_layout()
@given(key=KEYS, ts=INT64, seq=INT32)
def test_store_key_layout(implementation: Any, layout: KeyLayout, key: bytes, ts: int, seq: int) -> None:
    assert _encode(implementation, layout, key, ts, seq) == _layout(layout, key, ts, seq)


@rules("WIN-1", "WIN-2", "WIN-3")
def test_store_key_layout_examples(implementation: Any) -> None:
    # key "k", start 1700000000000 (0x18BCFE56800), seqnum 1
    assert _encode(implementation, PLAIN, b"k", 1700000000000, 1).hex() == "6b0000018bcfe5680000000001"
    assert _encode(implementation, TIME_FIRST, b"k", 1700000000000, 1).hex() == "000000018bcfe568006b00000001"
    assert _encode(implementation, KEY_FIRST, b"k", 1700000000000, 1).hex() == "016b0000018bcfe5680000000001"


@rules("WIN-4", "WIN-2")
@each_layout()
@given(key=KEYS, ts=INT64, seq=INT32)
def test_store_key_round_trips(implementation: Any, layout: KeyLayout, key: bytes, ts: int, seq: int) -> None:
    data = _layout(layout, key, ts, seq)
    out = implementation.call(f"window.{layout.name}.extract_store_key", {"bytes": data.hex()})
    expected: dict[str, Any] = {"key": key.hex(), "timestamp": ts, "seqnum": seq}
    if layout.prefix:
        expected["is_time_first"] = layout is TIME_FIRST
    assert out == expected


@rules("WIN-4")
@each_layout()
@given(data=st.binary(max_size=12))
def test_input_shorter_than_the_fixed_part_is_refused(implementation: Any, layout: KeyLayout, data: bytes) -> None:
    fixed = 12 + len(layout.prefix)
    assume(len(data) < fixed)
    assert is_error(implementation.call(f"window.{layout.name}.extract_store_key", {"bytes": data.hex()}))


@rules("WIN-2")
@given(data=st.binary(max_size=4))
def test_is_time_first_schema_key(implementation: Any, data: bytes) -> None:
    expected = len(data) > 0 and data[0] == 0
    assert implementation.call("window.is_time_first_schema_key", {"bytes": data.hex()}) == {"result": expected}


@rules("WIN-13")
@given(a=KEYS, b=KEYS, ts_a=NON_NEGATIVE_TS, ts_b=NON_NEGATIVE_TS, seq_a=STORE_SEQ, seq_b=STORE_SEQ)
def test_time_first_keys_sort_by_time_then_key(
    implementation: Any, a: bytes, b: bytes, ts_a: int, ts_b: int, seq_a: int, seq_b: int
) -> None:
    assume(_no_prefix(a, b) or a == b)
    left = _encode(implementation, TIME_FIRST, a, ts_a, seq_a)
    right = _encode(implementation, TIME_FIRST, b, ts_b, seq_b)
    assert (left < right) == ((ts_a, a, seq_a) < (ts_b, b, seq_b))


@rules("WIN-13")
@each_layout(KEY_ORDERED)
@given(pair=st.integers(min_value=0, max_value=8).flatmap(lambda n: st.tuples(st.binary(min_size=n, max_size=n),
                                                                               st.binary(min_size=n, max_size=n))),
       ts_a=NON_NEGATIVE_TS, ts_b=NON_NEGATIVE_TS, seq_a=STORE_SEQ, seq_b=STORE_SEQ)
def test_key_first_keys_of_equal_length_sort_by_key_then_time(
    implementation: Any, layout: KeyLayout, pair: tuple[bytes, bytes], ts_a: int, ts_b: int, seq_a: int, seq_b: int
) -> None:
    a, b = pair
    left = _encode(implementation, layout, a, ts_a, seq_a)
    right = _encode(implementation, layout, b, ts_b, seq_b)
    assert (left < right) == ((a, ts_a, seq_a) < (b, ts_b, seq_b))


@rules("WIN-13", "WIN-2", "WIN-3")
@given(a=KEYS, b=KEYS, ts_a=INT64, ts_b=INT64)
def test_every_time_first_key_sorts_before_every_key_first_key(implementation: Any, a: bytes, b: bytes, ts_a: int, ts_b: int) -> None:
    assert _encode(implementation, TIME_FIRST, a, ts_a, 0) < _encode(implementation, KEY_FIRST, b, ts_b, 0)


@rules("WIN-14", "WIN-10", "WIN-11")
@each_layout()
@given(key=KEYS, times=st.lists(NON_NEGATIVE_TS, min_size=3, max_size=3).map(sorted), seq=STORE_SEQ)
def test_range_bounds_bracket_every_key_of_the_range(
    implementation: Any, layout: KeyLayout, key: bytes, times: list[int], seq: int
) -> None:
    time_from, ts, time_to = times
    stored = _encode(implementation, layout, key, ts, seq)
    lower = _ranges(implementation, layout, key, time_from)
    upper = _ranges(implementation, layout, key, time_to)
    assert bound(lower, "lower_range") <= stored <= bound(upper, "upper_range")
    assert bound(lower, "lower_range_fixed_size") <= stored <= bound(upper, "upper_range_fixed_size")


@rules("WIN-10")
@each_layout()
@given(key=KEYS, time=INT64)
def test_fixed_size_bounds_are_store_keys_with_extreme_seqnums(implementation: Any, layout: KeyLayout, key: bytes, time: int) -> None:
    out = _ranges(implementation, layout, key, time)
    assert bound(out, "lower_range_fixed_size") == _layout(layout, key, max(0, time), 0)
    assert bound(out, "upper_range_fixed_size") == _layout(layout, key, time, INT_MAX)


@rules("WIN-10")
@given(key=KEYS, time=INT64)
def test_variable_size_bounds_of_the_time_first_and_plain_schemas(implementation: Any, key: bytes, time: int) -> None:
    time_first = _ranges(implementation, TIME_FIRST, key, time)
    assert bound(time_first, "lower_range") == b"\x00" + long_bytes(time) + key
    assert bound(time_first, "upper_range") == b"\x00" + long_bytes(time) + b"\xff" * len(key) + int_bytes(INT_MAX)
    plain = _ranges(implementation, PLAIN, key, time)
    key_first = _ranges(implementation, KEY_FIRST, key, time)
    assert bound(plain, "lower_range") == key + bytes(12)
    assert bound(key_first, "lower_range") == b"\x01" + key + bytes(12)
    assert bound(key_first, "upper_range") == b"\x01" + bound(plain, "upper_range")


@rules("WIN-11")
@given(key=st.binary(max_size=10), time=INT64)
def test_upper_range_keeps_key_bytes_while_at_least_the_first_suffix_byte(implementation: Any, key: bytes, time: int) -> None:
    suffix = long_bytes(time) + int_bytes(INT_MAX)
    kept = 0
    while kept < len(key) and (kept == 0 or key[kept] >= suffix[0]):
        kept += 1
    assert bound(_ranges(implementation, PLAIN, key, time), "upper_range") == key[:kept] + suffix


@rules("WIN-11")
def test_upper_range_drops_key_bytes_below_the_first_timestamp_byte(implementation: Any) -> None:
    key = bytes.fromhex("807f00ff")
    dropped = bound(_ranges(implementation, PLAIN, key, -(1 << 63)), "upper_range")
    assert dropped.hex() == "80" + "8000000000000000" + "7fffffff"
    kept = bound(_ranges(implementation, PLAIN, key, 0), "upper_range")
    assert kept.hex() == "807f00ff" + "0000000000000000" + "7fffffff"


@rules("WIN-7", "WIN-10")
@given(time=INT64)
def test_null_keys(implementation: Any, time: int) -> None:
    for layout in LAYOUTS:
        assert is_error(implementation.call(f"window.{layout.name}.to_store_key_binary", {"key": None, "timestamp": time, "seqnum": 0}))
        out = _ranges(implementation, layout, None, time)
        assert is_error(out["lower_range_fixed_size"]) and is_error(out["upper_range_fixed_size"])
    assert _ranges(implementation, PLAIN, None, time)["lower_range"] == {"bytes": None}
    assert _ranges(implementation, PLAIN, None, time)["upper_range"] == {"bytes": None}
    time_first = _ranges(implementation, TIME_FIRST, None, time)
    assert (time_first["lower_range"], time_first["upper_range"]) == ({"bytes": "00" + long_bytes(time).hex()}, {"bytes": "01"})
    key_first = _ranges(implementation, KEY_FIRST, None, time)
    assert (key_first["lower_range"], key_first["upper_range"]) == ({"bytes": "01"}, {"bytes": "02"})
    # null and empty are different keys
    assert _ranges(implementation, PLAIN, b"", time)["lower_range"] == {"bytes": "00" * 12}


def _expected_window(start: int, size: int) -> tuple[int, int] | None:
    end = (start + size + (1 << 63)) % (1 << 64) - (1 << 63)  # Java long addition
    if end < 0:
        end = LONG_MAX
    if start < 0 or end <= start:
        return None
    return start, end


@rules("WIN-8", "WIN-9")
@each_layout()
@given(key=KEYS, start=st.one_of(INT64, st.sampled_from([0, 1, LONG_MAX, LONG_MAX - 1, -1])),
       size=st.one_of(INT64, st.sampled_from([0, 1, 10, LONG_MAX, -(1 << 63)])))
def test_window_of_a_store_key(implementation: Any, layout: KeyLayout, key: bytes, start: int, size: int) -> None:
    out = implementation.call(f"window.{layout.name}.extract_store_window",
                     {"bytes": _layout(layout, key, start, 0).hex(), "window_size": size})
    expected = _expected_window(start, size)
    if expected is None:
        assert is_error(out)
    else:
        assert out == {"start": expected[0], "end": expected[1]}


@rules("WIN-8", "WIN-9")
def test_window_overflow_examples(implementation: Any) -> None:
    def window(start: int, size: int) -> Any:
        return implementation.call("window.key_schema.extract_store_window",
                          {"bytes": (long_bytes(start) + int_bytes(0)).hex(), "window_size": size})

    assert window(0, LONG_MAX) == {"start": 0, "end": LONG_MAX}
    assert window(1, LONG_MAX) == {"start": 1, "end": LONG_MAX}
    assert is_error(window(LONG_MAX, 1))
    assert is_error(window(5, 0))
    assert is_error(window(-1, 5000))


@rules("WIN-12")
@each_layout(PREFIXED)
@given(key=KEYS, ts=INT64, seq=INT32)
def test_plain_keys_convert_to_prefixed_keys(implementation: Any, layout: KeyLayout, key: bytes, ts: int, seq: int) -> None:
    plain = _layout(PLAIN, key, ts, seq)
    out = implementation.call(f"window.{layout.name}.from_non_prefix_window_key", {"bytes": plain.hex()})
    assert out == {"bytes": _layout(layout, key, ts, seq).hex()}


@rules("WIN-12")
@given(data=st.binary(max_size=11))
def test_time_first_conversion_refuses_short_keys(implementation: Any, data: bytes) -> None:
    assert is_error(implementation.call("window.time_first.from_non_prefix_window_key", {"bytes": data.hex()}))


@rules("WIN-5")
@given(key=KEYS, start=st.integers(min_value=0, max_value=LONG_MAX - 1), size=st.integers(min_value=1, max_value=1 << 40))
def test_pipe_serde_is_key_then_start(implementation: Any, key: bytes, start: int, size: int) -> None:
    end = min(start + size, LONG_MAX)
    out = implementation.call("window.key_schema.to_binary", {"key": key.hex(), "window_start": start, "window_end": end})
    assert out == {"bytes": (key + long_bytes(start)).hex()}
    back = implementation.call("window.key_schema.from_binary", {"bytes": out["bytes"], "window_size": size})
    assert back == {"key": key.hex(), "start": start, "end": end}


@rules("WIN-5", "WIN-8")
def test_pipe_serde_refuses_invalid_windows(implementation: Any) -> None:
    for start, end in [(5, 5), (5, 4), (-1, 5)]:
        assert is_error(implementation.call("window.key_schema.to_binary", {"key": "6b", "window_start": start, "window_end": end}))
    assert is_error(implementation.call("window.key_schema.from_binary", {"bytes": "00" * 7, "window_size": 10}))


@rules("WIN-6")
@given(seq=STORE_SEQ)
def test_seqnum_advances_only_with_duplicates(implementation: Any, seq: int) -> None:
    assert implementation.call("window.next_seqnum", {"seqnum": seq, "retain_duplicates": False}) == {"seqnum": seq}
    expected = 0 if seq == INT_MAX else seq + 1
    assert implementation.call("window.next_seqnum", {"seqnum": seq, "retain_duplicates": True}) == {"seqnum": expected}


@rules("WIN-6")
def test_first_duplicate_gets_seqnum_one_and_the_counter_wraps_to_zero(implementation: Any) -> None:
    assert implementation.call("window.next_seqnum", {"seqnum": 0, "retain_duplicates": True}) == {"seqnum": 1}
    assert implementation.call("window.next_seqnum", {"seqnum": INT_MAX, "retain_duplicates": True}) == {"seqnum": 0}


@rules("WIN-15")
@each_layout()
@given(key=KEYS, ts=INT64, interval=st.integers(min_value=1, max_value=1 << 40))
def test_segment_of_a_store_key_is_its_start_truncated(implementation: Any, layout: KeyLayout, key: bytes, ts: int, interval: int) -> None:
    out = implementation.call(f"window.{layout.name}.segment_id", {"bytes": _layout(layout, key, ts, 3).hex(), "segment_interval": interval})
    quotient = abs(ts) // interval
    assert out == {"segment_timestamp": ts, "segment_id": quotient if ts >= 0 else -quotient}


@rules("WIN-16")
@given(retention=st.integers(min_value=0, max_value=LONG_MAX))
def test_default_segment_interval(implementation: Any, retention: int) -> None:
    out = implementation.call("window.segment_interval", {"retention": retention, "window_size": 0})
    assert out == {"segment_interval": max(retention // 2, 60000)}


@rules("WIN-16")
def test_store_parameters_are_checked(implementation: Any) -> None:
    assert is_error(implementation.call("window.segment_interval", {"retention": -1, "window_size": 0}))
    assert is_error(implementation.call("window.segment_interval", {"retention": 10, "window_size": -1}))
    assert is_error(implementation.call("window.segment_interval", {"retention": 10, "window_size": 11}))
    assert implementation.call("window.segment_interval", {"retention": 10, "window_size": 10, "segment_interval": 3}) == {
        "segment_interval": 3}


@rules("WIN-16")
def test_a_segment_interval_below_one_is_refused(implementation: Any) -> None:
    """A store that is given a segment interval checks it (WS-2); Kafka's public Stores takes none, so a testee
    that declares no segment_interval_option answers this unsupported and the case is absent."""
    assert is_error(implementation.call("window.segment_interval", {"retention": 10, "window_size": 1, "segment_interval": 0}))
