"""Properties of session store keys, checked through the adapter (SESS-*)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from kstate_conformance import rules
from kstate_conformance.key_layouts import (
    KEY_FIRST,
    PLAIN,
    TIME_FIRST,
    KeyLayout,
    bound,
    each_layout,
    is_error,
    long_bytes,
)
from kstate_conformance.key_layouts import ranges as layout_ranges

LONG_MAX = (1 << 63) - 1
INT64 = st.integers(min_value=-(1 << 63), max_value=LONG_MAX)
NON_NEGATIVE_TS = st.integers(min_value=0, max_value=LONG_MAX)
KEYS = st.binary(max_size=12)


def _layout(layout: KeyLayout, key: bytes, start: int, end: int) -> bytes:
    """The session key as the spec draws it, end before start (SESS-1, SESS-2, SESS-3)."""
    return layout.store_key(key, long_bytes(end) + long_bytes(start))


def _encode(implementation: Any, layout: KeyLayout, key: bytes | None, start: int, end: int) -> Any:
    return implementation.call(f"session.{layout.name}.to_binary", {"key": None if key is None else key.hex(), "start": start, "end": end})


def _key(implementation: Any, layout: KeyLayout, key: bytes, start: int, end: int) -> bytes:
    return bytes.fromhex(_encode(implementation, layout, key, start, end)["bytes"])


def _ranges(implementation: Any, layout: KeyLayout, key: bytes | None, time: int) -> dict[str, Any]:
    return layout_ranges(implementation, "session", layout, key, time)


# Valid sessions: 0 <= start <= end.
SESSIONS = st.tuples(NON_NEGATIVE_TS, NON_NEGATIVE_TS).map(sorted).map(tuple)


@rules("SESS-1", "SESS-2", "SESS-3")
@each_layout()
@given(key=KEYS, session=SESSIONS)
def test_session_key_layout_puts_end_first(implementation: Any, layout: KeyLayout, key: bytes, session: tuple[int, int]) -> None:
    start, end = session
    assert _key(implementation, layout, key, start, end) == _layout(layout, key, start, end)


@rules("SESS-1", "SESS-2", "SESS-3")
def test_session_key_layout_examples(implementation: Any) -> None:
    assert _key(implementation, PLAIN, b"key", 5, 10).hex() == "6b6579" + "000000000000000a" + "0000000000000005"
    assert _key(implementation, TIME_FIRST, b"key", 5, 10).hex() == "00" + "000000000000000a" + "0000000000000005" + "6b6579"
    assert _key(implementation, KEY_FIRST, b"key", 5, 10).hex() == "01" + "6b6579" + "000000000000000a" + "0000000000000005"


@rules("SESS-4")
@each_layout()
@given(key=KEYS, start=INT64, end=INT64)
def test_decoding_reports_fields_and_validates_the_window(implementation: Any, layout: KeyLayout, key: bytes, start: int, end: int) -> None:
    out = implementation.call(f"session.{layout.name}.extract", {"bytes": _layout(layout, key, start, end).hex()})
    assert {k: out[k] for k in ("key", "start", "end")} == {"key": key.hex(), "start": start, "end": end}
    if start < 0 or end < start:
        assert is_error(out["window"])
    else:
        assert out["window"] == {"start": start, "end": end}


@rules("SESS-4")
def test_a_single_record_session_is_valid(implementation: Any) -> None:
    out = implementation.call("session.key_schema.extract", {"bytes": _layout(PLAIN, b"k", 7, 7).hex()})
    assert out["window"] == {"start": 7, "end": 7}


@rules("SESS-4")
@each_layout()
@given(data=st.binary(max_size=16))
def test_input_shorter_than_the_fixed_part_is_refused(implementation: Any, layout: KeyLayout, data: bytes) -> None:
    assume(len(data) < 16 + len(layout.prefix))
    assert is_error(implementation.call(f"session.{layout.name}.extract", {"bytes": data.hex()}))


@rules("SESS-5")
@pytest.mark.kstate_level("recommended")
@each_layout()
@given(key=KEYS, start=INT64, end=INT64)
def test_encoders_write_any_timestamps_like_kafka(implementation: Any, layout: KeyLayout, key: bytes, start: int, end: int) -> None:
    assert _key(implementation, layout, key, start, end) == _layout(layout, key, start, end)


@rules("SESS-6")
@given(start=NON_NEGATIVE_TS, end=NON_NEGATIVE_TS)
def test_only_the_time_first_schema_accepts_a_null_key(implementation: Any, start: int, end: int) -> None:
    assert is_error(_encode(implementation, PLAIN, None, start, end))
    assert is_error(_encode(implementation, KEY_FIRST, None, start, end))
    assert _encode(implementation, TIME_FIRST, None, start, end) == {"bytes": _layout(TIME_FIRST, b"", start, end).hex()}


@rules("SESS-12")
@each_layout()
@given(key=KEYS, a=SESSIONS, b=SESSIONS)
def test_keys_of_one_record_key_sort_by_end_then_start(
    implementation: Any, layout: KeyLayout, key: bytes, a: tuple[int, int], b: tuple[int, int]
) -> None:
    left, right = _key(implementation, layout, key, *a), _key(implementation, layout, key, *b)
    assert (left < right) == ((a[1], a[0]) < (b[1], b[0]))


@rules("SESS-12")
@given(k1=KEYS, k2=KEYS, a=SESSIONS, b=SESSIONS)
def test_time_first_keys_sort_by_end_start_then_key(
    implementation: Any, k1: bytes, k2: bytes, a: tuple[int, int], b: tuple[int, int]
) -> None:
    left, right = _key(implementation, TIME_FIRST, k1, *a), _key(implementation, TIME_FIRST, k2, *b)
    assert (left < right) == ((a[1], a[0], k1) < (b[1], b[0], k2))


@rules("SESS-13", "SESS-7", "SESS-8")
@each_layout()
@given(key=KEYS, session=SESSIONS, time_from=NON_NEGATIVE_TS, time_to=NON_NEGATIVE_TS)
def test_range_bounds_bracket_every_overlapping_session(
    implementation: Any, layout: KeyLayout, key: bytes, session: tuple[int, int], time_from: int, time_to: int
) -> None:
    start, end = session
    assume(end >= time_from and start <= time_to)
    stored = _key(implementation, layout, key, start, end)
    lower = _ranges(implementation, layout, key, time_from)
    upper = _ranges(implementation, layout, key, time_to)
    assert bound(lower, "lower_range") <= stored <= bound(upper, "upper_range")
    assert bound(lower, "lower_range_fixed_size") <= stored <= bound(upper, "upper_range_fixed_size")


@rules("SESS-13", "SESS-7")
@each_layout()
@given(key=KEYS, session=SESSIONS)
def test_the_bounds_of_the_session_itself_contain_it(implementation: Any, layout: KeyLayout, key: bytes, session: tuple[int, int]) -> None:
    start, end = session
    stored = _key(implementation, layout, key, start, end)
    assert bound(_ranges(implementation, layout, key, end), "lower_range_fixed_size") <= stored
    assert stored <= bound(_ranges(implementation, layout, key, start), "upper_range_fixed_size")


@rules("SESS-7")
@given(key=KEYS, time=INT64)
def test_range_bound_layouts(implementation: Any, key: bytes, time: int) -> None:
    clamped = max(0, time)
    plain = _ranges(implementation, PLAIN, key, time)
    assert bound(plain, "lower_range") == key + bytes(16)
    assert bound(plain, "lower_range_fixed_size") == _layout(PLAIN, key, 0, clamped)
    time_first = _ranges(implementation, TIME_FIRST, key, time)
    assert bound(time_first, "lower_range") == b"\x00" + long_bytes(time) + bytes(8) + key
    assert bound(time_first, "upper_range") == b"\x00" + long_bytes(LONG_MAX) + long_bytes(time) + key
    assert bound(time_first, "lower_range_fixed_size") == _layout(TIME_FIRST, key, 0, clamped)
    assert bound(time_first, "upper_range_fixed_size") == _layout(TIME_FIRST, key, time, LONG_MAX)
    key_first = _ranges(implementation, KEY_FIRST, key, time)
    for name in ("lower_range", "upper_range", "lower_range_fixed_size"):
        assert bound(key_first, name) == b"\x01" + bound(plain, name)


@rules("SESS-7")
@given(key=KEYS, time=INT64)
def test_fixed_upper_bound_checks_the_session_window_except_time_first(implementation: Any, key: bytes, time: int) -> None:
    for layout in (PLAIN, KEY_FIRST):
        out = _ranges(implementation, layout, key, time)["upper_range_fixed_size"]
        if time < 0:
            assert is_error(out)
        else:
            assert bytes.fromhex(out["bytes"]) == _layout(layout, key, time, LONG_MAX)
    assert not is_error(_ranges(implementation, TIME_FIRST, key, time)["upper_range_fixed_size"])


@rules("SESS-7", "SESS-6")
@given(time=INT64)
def test_null_key_bounds(implementation: Any, time: int) -> None:
    plain = _ranges(implementation, PLAIN, None, time)
    assert (plain["lower_range"], plain["upper_range"]) == ({"bytes": None}, {"bytes": None})
    assert is_error(plain["lower_range_fixed_size"]) and is_error(plain["upper_range_fixed_size"])
    key_first = _ranges(implementation, KEY_FIRST, None, time)
    assert (key_first["lower_range"], key_first["upper_range"]) == ({"bytes": "01"}, {"bytes": "02"})
    assert is_error(key_first["lower_range_fixed_size"])
    time_first = _ranges(implementation, TIME_FIRST, None, time)
    assert time_first["lower_range"] == {"bytes": "00" + long_bytes(time).hex()}
    assert time_first["upper_range"] == {"bytes": "01"}
    assert time_first["lower_range_fixed_size"] == {"bytes": _layout(TIME_FIRST, b"", 0, max(0, time)).hex()}


@rules("SESS-8")
@given(key=st.binary(max_size=10), time=INT64)
def test_upper_range_keeps_key_bytes_while_at_least_7f(implementation: Any, key: bytes, time: int) -> None:
    kept = 0
    while kept < len(key) and (kept == 0 or key[kept] >= 0x7F):
        kept += 1
    expected = key[:kept] + long_bytes(LONG_MAX) + long_bytes(time)
    assert bound(_ranges(implementation, PLAIN, key, time), "upper_range") == expected
    assert bound(_ranges(implementation, KEY_FIRST, key, time), "upper_range") == b"\x01" + expected


@rules("SESS-8")
def test_upper_range_example(implementation: Any) -> None:
    out = bound(_ranges(implementation, PLAIN, bytes.fromhex("807f00ff"), 10), "upper_range")
    assert out.hex() == "807f" + "7fffffffffffffff" + "000000000000000a"


@rules("SESS-9")
@given(key=KEYS, start=INT64, end=INT64)
def test_plain_keys_convert_to_prefixed_keys(implementation: Any, key: bytes, start: int, end: int) -> None:
    plain = _layout(PLAIN, key, start, end).hex()
    time_first = implementation.call("session.time_first.extract_window_bytes_from_non_prefix_session_key", {"bytes": plain})
    assert time_first == {"bytes": _layout(TIME_FIRST, key, start, end).hex()}
    key_first = implementation.call("session.key_first.prefix_non_prefix_session_key", {"bytes": plain})
    assert key_first == {"bytes": _layout(KEY_FIRST, key, start, end).hex()}


@rules("SESS-9")
@given(data=st.binary(max_size=15))
def test_time_first_conversion_refuses_short_keys(implementation: Any, data: bytes) -> None:
    out = implementation.call("session.time_first.extract_window_bytes_from_non_prefix_session_key", {"bytes": data.hex()})
    assert is_error(out)


@rules("SESS-10")
@given(key=KEYS, session=SESSIONS)
def test_windowed_encoding_matches_each_schema(implementation: Any, key: bytes, session: tuple[int, int]) -> None:
    start, end = session
    out = implementation.call("session.to_binary_windowed", {"key": key.hex(), "start": start, "end": end})
    assert out == {
        "session_key_schema": _layout(PLAIN, key, start, end).hex(),
        "time_first": _layout(TIME_FIRST, key, start, end).hex(),
        "key_first": _layout(KEY_FIRST, key, start, end).hex(),
    }


@rules("SESS-10", "SESS-4")
@given(key=KEYS, start=INT64, end=INT64)
def test_windowed_encoding_refuses_invalid_windows(implementation: Any, key: bytes, start: int, end: int) -> None:
    assume(start < 0 or end < start)
    assert is_error(implementation.call("session.to_binary_windowed", {"key": key.hex(), "start": start, "end": end}))


@rules("SESS-11")
@each_layout()
@given(key=KEYS, session=SESSIONS, interval=st.integers(min_value=1, max_value=1 << 40))
def test_segment_is_chosen_by_the_end(implementation: Any, layout: KeyLayout, key: bytes, session: tuple[int, int], interval: int) -> None:
    start, end = session
    out = implementation.call(f"session.{layout.name}.segment_id",
                     {"bytes": _layout(layout, key, start, end).hex(), "segment_interval": interval})
    assert out == {"segment_timestamp": end, "segment_id": end // interval}


@rules("SESS-11")
def test_segment_by_end_example(implementation: Any) -> None:
    out = implementation.call("session.key_schema.segment_id", {"bytes": _layout(PLAIN, b"k", 5, 25).hex(), "segment_interval": 10})
    assert out == {"segment_timestamp": 25, "segment_id": 2}


@rules("SESS-11")
@given(retention=st.integers(min_value=0, max_value=LONG_MAX))
def test_default_segment_interval(implementation: Any, retention: int) -> None:
    assert implementation.call("session.segment_interval", {"retention": retention}) == {"segment_interval": max(retention // 2, 60000)}
    assert is_error(implementation.call("session.segment_interval", {"retention": -1 - retention}))
