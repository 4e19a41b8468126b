"""Properties of session store keys, checked through the adapter (SESS-*)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from kstate_conformance import rules

LONG_MAX = (1 << 63) - 1
INT64 = st.integers(min_value=-(1 << 63), max_value=LONG_MAX)
NON_NEGATIVE_TS = st.integers(min_value=0, max_value=LONG_MAX)
KEYS = st.binary(max_size=12)
SCHEMAS = ("key_schema", "time_first", "key_first")


def _long(value: int) -> bytes:
    return value.to_bytes(8, "big", signed=True)


def _layout(schema: str, key: bytes, start: int, end: int) -> bytes:
    """The session key as the spec draws it, end before start (SESS-1, SESS-2, SESS-3)."""
    times = _long(end) + _long(start)
    if schema == "key_schema":
        return key + times
    if schema == "time_first":
        return b"\x00" + times + key
    return b"\x01" + key + times


def _encode(codec: Any, schema: str, key: bytes | None, start: int, end: int) -> Any:
    return codec.call(f"session.{schema}.to_binary", {"key": None if key is None else key.hex(), "start": start, "end": end})


def _key(codec: Any, schema: str, key: bytes, start: int, end: int) -> bytes:
    return bytes.fromhex(_encode(codec, schema, key, start, end)["bytes"])


def _ranges(codec: Any, schema: str, key: bytes | None, time: int) -> dict[str, Any]:
    out: dict[str, Any] = codec.call(f"session.{schema}.ranges", {"key": None if key is None else key.hex(), "time": time})
    return out


def _bound(out: dict[str, Any], name: str) -> bytes:
    return bytes.fromhex(out[name]["bytes"])


def _is_error(out: Any) -> bool:
    return isinstance(out, dict) and "error" in out


# Valid sessions: 0 <= start <= end.
SESSIONS = st.tuples(NON_NEGATIVE_TS, NON_NEGATIVE_TS).map(sorted).map(tuple)


@rules("SESS-1", "SESS-2", "SESS-3")
@pytest.mark.parametrize("schema", SCHEMAS)
@given(key=KEYS, session=SESSIONS)
def test_session_key_layout_puts_end_first(codec: Any, schema: str, key: bytes, session: tuple[int, int]) -> None:
    start, end = session
    assert _key(codec, schema, key, start, end) == _layout(schema, key, start, end)


@rules("SESS-1", "SESS-2", "SESS-3")
def test_session_key_layout_examples(codec: Any) -> None:
    assert _key(codec, "key_schema", b"key", 5, 10).hex() == "6b6579" + "000000000000000a" + "0000000000000005"
    assert _key(codec, "time_first", b"key", 5, 10).hex() == "00" + "000000000000000a" + "0000000000000005" + "6b6579"
    assert _key(codec, "key_first", b"key", 5, 10).hex() == "01" + "6b6579" + "000000000000000a" + "0000000000000005"


@rules("SESS-4")
@pytest.mark.parametrize("schema", SCHEMAS)
@given(key=KEYS, start=INT64, end=INT64)
def test_decoding_reports_fields_and_validates_the_window(codec: Any, schema: str, key: bytes, start: int, end: int) -> None:
    out = codec.call(f"session.{schema}.extract", {"bytes": _layout(schema, key, start, end).hex()})
    assert {k: out[k] for k in ("key", "start", "end")} == {"key": key.hex(), "start": start, "end": end}
    if start < 0 or end < start:
        assert _is_error(out["window"])
    else:
        assert out["window"] == {"start": start, "end": end}


@rules("SESS-4")
def test_a_single_record_session_is_valid(codec: Any) -> None:
    out = codec.call("session.key_schema.extract", {"bytes": _layout("key_schema", b"k", 7, 7).hex()})
    assert out["window"] == {"start": 7, "end": 7}


@rules("SESS-4")
@pytest.mark.parametrize("schema", SCHEMAS)
@given(data=st.binary(max_size=16))
def test_input_shorter_than_the_fixed_part_is_refused(codec: Any, schema: str, data: bytes) -> None:
    assume(len(data) < (16 if schema == "key_schema" else 17))
    assert _is_error(codec.call(f"session.{schema}.extract", {"bytes": data.hex()}))


@rules("SESS-5")
@pytest.mark.kstate_level("recommended")
@pytest.mark.parametrize("schema", SCHEMAS)
@given(key=KEYS, start=INT64, end=INT64)
def test_encoders_write_any_timestamps_like_kafka(codec: Any, schema: str, key: bytes, start: int, end: int) -> None:
    assert _key(codec, schema, key, start, end) == _layout(schema, key, start, end)


@rules("SESS-6")
@given(start=NON_NEGATIVE_TS, end=NON_NEGATIVE_TS)
def test_only_the_time_first_schema_accepts_a_null_key(codec: Any, start: int, end: int) -> None:
    assert _is_error(_encode(codec, "key_schema", None, start, end))
    assert _is_error(_encode(codec, "key_first", None, start, end))
    assert _encode(codec, "time_first", None, start, end) == {"bytes": _layout("time_first", b"", start, end).hex()}


@rules("SESS-12")
@pytest.mark.parametrize("schema", SCHEMAS)
@given(key=KEYS, a=SESSIONS, b=SESSIONS)
def test_keys_of_one_record_key_sort_by_end_then_start(
    codec: Any, schema: str, key: bytes, a: tuple[int, int], b: tuple[int, int]
) -> None:
    left, right = _key(codec, schema, key, *a), _key(codec, schema, key, *b)
    assert (left < right) == ((a[1], a[0]) < (b[1], b[0]))


@rules("SESS-12")
@given(k1=KEYS, k2=KEYS, a=SESSIONS, b=SESSIONS)
def test_time_first_keys_sort_by_end_start_then_key(
    codec: Any, k1: bytes, k2: bytes, a: tuple[int, int], b: tuple[int, int]
) -> None:
    left, right = _key(codec, "time_first", k1, *a), _key(codec, "time_first", k2, *b)
    assert (left < right) == ((a[1], a[0], k1) < (b[1], b[0], k2))


@rules("SESS-13", "SESS-7", "SESS-8")
@pytest.mark.parametrize("schema", SCHEMAS)
@given(key=KEYS, session=SESSIONS, time_from=NON_NEGATIVE_TS, time_to=NON_NEGATIVE_TS)
def test_range_bounds_bracket_every_overlapping_session(
    codec: Any, schema: str, key: bytes, session: tuple[int, int], time_from: int, time_to: int
) -> None:
    start, end = session
    assume(end >= time_from and start <= time_to)
    stored = _key(codec, schema, key, start, end)
    lower = _ranges(codec, schema, key, time_from)
    upper = _ranges(codec, schema, key, time_to)
    assert _bound(lower, "lower_range") <= stored <= _bound(upper, "upper_range")
    assert _bound(lower, "lower_range_fixed_size") <= stored <= _bound(upper, "upper_range_fixed_size")


@rules("SESS-13", "SESS-7")
@pytest.mark.parametrize("schema", SCHEMAS)
@given(key=KEYS, session=SESSIONS)
def test_the_bounds_of_the_session_itself_contain_it(codec: Any, schema: str, key: bytes, session: tuple[int, int]) -> None:
    start, end = session
    stored = _key(codec, schema, key, start, end)
    assert _bound(_ranges(codec, schema, key, end), "lower_range_fixed_size") <= stored
    assert stored <= _bound(_ranges(codec, schema, key, start), "upper_range_fixed_size")


@rules("SESS-7")
@given(key=KEYS, time=INT64)
def test_range_bound_layouts(codec: Any, key: bytes, time: int) -> None:
    clamped = max(0, time)
    plain = _ranges(codec, "key_schema", key, time)
    assert _bound(plain, "lower_range") == key + bytes(16)
    assert _bound(plain, "lower_range_fixed_size") == _layout("key_schema", key, 0, clamped)
    time_first = _ranges(codec, "time_first", key, time)
    assert _bound(time_first, "lower_range") == b"\x00" + _long(time) + bytes(8) + key
    assert _bound(time_first, "upper_range") == b"\x00" + _long(LONG_MAX) + _long(time) + key
    assert _bound(time_first, "lower_range_fixed_size") == _layout("time_first", key, 0, clamped)
    assert _bound(time_first, "upper_range_fixed_size") == _layout("time_first", key, time, LONG_MAX)
    key_first = _ranges(codec, "key_first", key, time)
    for name in ("lower_range", "upper_range", "lower_range_fixed_size"):
        assert _bound(key_first, name) == b"\x01" + _bound(plain, name)


@rules("SESS-7")
@given(key=KEYS, time=INT64)
def test_fixed_upper_bound_checks_the_session_window_except_time_first(codec: Any, key: bytes, time: int) -> None:
    for schema in ("key_schema", "key_first"):
        out = _ranges(codec, schema, key, time)["upper_range_fixed_size"]
        if time < 0:
            assert _is_error(out)
        else:
            assert bytes.fromhex(out["bytes"]) == _layout(schema, key, time, LONG_MAX)
    assert not _is_error(_ranges(codec, "time_first", key, time)["upper_range_fixed_size"])


@rules("SESS-7", "SESS-6")
@given(time=INT64)
def test_null_key_bounds(codec: Any, time: int) -> None:
    plain = _ranges(codec, "key_schema", None, time)
    assert (plain["lower_range"], plain["upper_range"]) == ({"bytes": None}, {"bytes": None})
    assert _is_error(plain["lower_range_fixed_size"]) and _is_error(plain["upper_range_fixed_size"])
    key_first = _ranges(codec, "key_first", None, time)
    assert (key_first["lower_range"], key_first["upper_range"]) == ({"bytes": "01"}, {"bytes": "02"})
    assert _is_error(key_first["lower_range_fixed_size"])
    time_first = _ranges(codec, "time_first", None, time)
    assert time_first["lower_range"] == {"bytes": "00" + _long(time).hex()}
    assert time_first["upper_range"] == {"bytes": "01"}
    assert time_first["lower_range_fixed_size"] == {"bytes": _layout("time_first", b"", 0, max(0, time)).hex()}


@rules("SESS-8")
@given(key=st.binary(max_size=10), time=INT64)
def test_upper_range_keeps_key_bytes_while_at_least_7f(codec: Any, key: bytes, time: int) -> None:
    kept = 0
    while kept < len(key) and (kept == 0 or key[kept] >= 0x7F):
        kept += 1
    expected = key[:kept] + _long(LONG_MAX) + _long(time)
    assert _bound(_ranges(codec, "key_schema", key, time), "upper_range") == expected
    assert _bound(_ranges(codec, "key_first", key, time), "upper_range") == b"\x01" + expected


@rules("SESS-8")
def test_upper_range_example(codec: Any) -> None:
    out = _bound(_ranges(codec, "key_schema", bytes.fromhex("807f00ff"), 10), "upper_range")
    assert out.hex() == "807f" + "7fffffffffffffff" + "000000000000000a"


@rules("SESS-9")
@given(key=KEYS, start=INT64, end=INT64)
def test_plain_keys_convert_to_prefixed_keys(codec: Any, key: bytes, start: int, end: int) -> None:
    plain = _layout("key_schema", key, start, end).hex()
    time_first = codec.call("session.time_first.extract_window_bytes_from_non_prefix_session_key", {"bytes": plain})
    assert time_first == {"bytes": _layout("time_first", key, start, end).hex()}
    key_first = codec.call("session.key_first.prefix_non_prefix_session_key", {"bytes": plain})
    assert key_first == {"bytes": _layout("key_first", key, start, end).hex()}


@rules("SESS-9")
@given(data=st.binary(max_size=15))
def test_time_first_conversion_refuses_short_keys(codec: Any, data: bytes) -> None:
    out = codec.call("session.time_first.extract_window_bytes_from_non_prefix_session_key", {"bytes": data.hex()})
    assert _is_error(out)


@rules("SESS-10")
@given(key=KEYS, session=SESSIONS)
def test_windowed_encoding_matches_each_schema(codec: Any, key: bytes, session: tuple[int, int]) -> None:
    start, end = session
    out = codec.call("session.to_binary_windowed", {"key": key.hex(), "start": start, "end": end})
    assert out == {
        "session_key_schema": _layout("key_schema", key, start, end).hex(),
        "time_first": _layout("time_first", key, start, end).hex(),
        "key_first": _layout("key_first", key, start, end).hex(),
    }


@rules("SESS-10", "SESS-4")
@given(key=KEYS, start=INT64, end=INT64)
def test_windowed_encoding_refuses_invalid_windows(codec: Any, key: bytes, start: int, end: int) -> None:
    assume(start < 0 or end < start)
    assert _is_error(codec.call("session.to_binary_windowed", {"key": key.hex(), "start": start, "end": end}))


@rules("SESS-11")
@pytest.mark.parametrize("schema", SCHEMAS)
@given(key=KEYS, session=SESSIONS, interval=st.integers(min_value=1, max_value=1 << 40))
def test_segment_is_chosen_by_the_end(codec: Any, schema: str, key: bytes, session: tuple[int, int], interval: int) -> None:
    start, end = session
    out = codec.call(f"session.{schema}.segment_id",
                     {"bytes": _layout(schema, key, start, end).hex(), "segment_interval": interval})
    assert out == {"segment_timestamp": end, "segment_id": end // interval}


@rules("SESS-11")
def test_segment_by_end_example(codec: Any) -> None:
    out = codec.call("session.key_schema.segment_id", {"bytes": _layout("key_schema", b"k", 5, 25).hex(), "segment_interval": 10})
    assert out == {"segment_timestamp": 25, "segment_id": 2}


@rules("SESS-11")
@given(retention=st.integers(min_value=0, max_value=LONG_MAX))
def test_default_segment_interval(codec: Any, retention: int) -> None:
    assert codec.call("session.segment_interval", {"retention": retention}) == {"segment_interval": max(retention // 2, 60000)}
    assert _is_error(codec.call("session.segment_interval", {"retention": -1 - retention}))
