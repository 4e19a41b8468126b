"""Unit tests of the reference's KIP-889 codecs, operations and per-key store procedure (VER-*)."""

from __future__ import annotations

import contextlib
import json
import logging
import random
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kstate.codecs import versioned as v
from kstate.errors import DecodeError, EncodeError, KStateError
from kstate.ops import call
from kstate.ops.versioned_ops import _scenario_leniency
from kstate.vectors import check, load_vector_file

WORKED = bytes.fromhex("0000000000000009" "0000000000000001" "0000000000000005" "00000002"
                       "0000000000000001" "00000001" "61" "6263")


def test_worked_examples_of_the_reference_document() -> None:
    row = v.new_segment_value_with_record(b"a", 1, 5)
    row.insert_as_latest(5, 9, b"bc")
    assert row.serialize() == WORKED
    gap = v.new_segment_value_with_record(b"a", 1, 5)
    gap.insert_as_latest(7, 9, b"bc")
    assert gap.serialize().hex() == ("0000000000000009" "0000000000000001" "0000000000000007" "00000002"
                                     "0000000000000005" "ffffffff" "0000000000000001" "00000001" "616263")
    degenerate = v.new_segment_value_with_record(None, 7, 7).serialize()
    assert degenerate == bytes.fromhex("0000000000000007" * 3 + "ffffffff") and len(degenerate) == 28


def test_versions_lists_every_version_with_its_valid_to() -> None:
    got = [(r.index, r.valid_from, r.valid_to, r.value) for r in v.SegmentValue.deserialize(WORKED).versions()]
    assert got == [(0, 5, 9, b"bc"), (1, 1, 5, b"a")]


def test_find_reads_lazily_and_remembers_how_far() -> None:
    row = v.SegmentValue.deserialize(WORKED)
    with pytest.raises(v.SegmentStateError):
        row.update_record(2, b"x", 1)
    assert row.find(1, True) == v.SegmentSearchResult(1, 1, 5, b"a")
    row.update_record(2, b"xyz", 1)
    assert row.min_timestamp == 2
    assert [(r.valid_from, r.valid_to, r.value) for r in row.versions()] == [(5, 9, b"bc"), (2, 5, b"xyz")]


def test_sentinel_collision_with_minus_one() -> None:
    row = v.new_segment_value_with_record(b"a", -1, 5)
    with pytest.raises(v.SegmentStateError, match="expected to find"):
        row.find(0, True)
    assert row.find_all(v.INT64_MIN, v.INT64_MAX) == []
    with pytest.raises(v.SegmentStateError):
        row.insert_as_earliest(-5, b"b")
    # The project's checked read is not bound to Kafka's sentinel.
    assert row.versions() == [v.SegmentSearchResult(0, -1, 5, b"a")]


def test_truncation_logs_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    row = v.new_segment_value_with_record(b"a", 10, 20)
    row.insert_as_latest(20, 30, b"b")
    with caplog.at_level(logging.WARNING, logger="kstate.codecs.versioned"):
        row.insert_as_latest(15, 40, b"c")
    assert "inconsistency" in caplog.text
    assert [(r.valid_from, r.valid_to, r.value) for r in row.versions()] == [(15, 40, b"c"), (10, 15, b"a")]


def test_latest_value_rows() -> None:
    assert v.encode_latest_value(b"", -1) == b"\xff" * 8
    assert v.decode_latest_value(b"\x00" * 7 + b"\x05ab") == (b"ab", 5)
    with pytest.raises(EncodeError):
        v.encode_latest_value(None, 0)
    with pytest.raises(DecodeError):
        v.decode_latest_value(b"\x00" * 7)


def test_keys_names_and_intervals() -> None:
    assert v.latest_value_key(b"k") == b"\xff" * 8 + b"k"
    assert v.split_segment_key(v.segment_key(3, b"kk")) == (3, b"kk")
    assert v.latest_value_store_name("s") == "s.latestValues"
    assert v.segment_name("s", 7, 60_000) == "s.420000"
    assert v.segment_name("s", 1 << 62, 4) == "s.0"  # Java long multiplication wraps
    with pytest.raises(EncodeError):
        v.segment_name("s", -2, 10)
    # The table is continuous at its boundaries, so < and <= cannot be told apart there.
    assert [v.default_segment_interval(hr) for hr in (60_000, 60_001, 300_000, 300_001, 3_600_000, 3_600_001)] == \
        [20_000, 20_000, 60_000, 60_000, 300_000, 300_000]
    assert v.store_config(100).segment_interval == 2_000
    with pytest.raises(EncodeError):
        v.store_config(-1)
    with pytest.raises(EncodeError):
        v.store_config(10, 0)


def test_the_recorded_kafka_vectors_of_the_family(shared_vectors: Path) -> None:
    vectors = [x for x in load_vector_file(shared_vectors)["vectors"] if x["group"].startswith("versioned_")]
    report = check(vectors)
    assert len(vectors) == 221
    assert report.total("mismatched") == 0 and report.total("unsupported") == 0
    lenient = [r.case for r in report.results if r.status == "lenient"]
    assert lenient == ["min_timestamp_minus_one_sentinel"]


def test_leniency_flags_rows_that_break_timestamp_order() -> None:
    steps = [{"op": "new", "value": "61", "valid_from": 10, "valid_to": 20},
             {"op": "find", "timestamp": 10, "include_value": False},
             {"op": "update_record", "timestamp": 30, "value": "62", "index": 0}]
    assert "timestamp order" in (_scenario_leniency({"steps": steps}) or "")
    assert _scenario_leniency({"steps": steps[:2]}) is None


def test_scenario_state_is_reported_after_a_refusal() -> None:
    out = call("versioned.segment_scenario", {"steps": [{"op": "find", "timestamp": 0, "include_value": True},
                                                        {"op": "bogus"}]})
    assert all("error" in s and s["bytes"] is None for s in out["steps"])


# --- hostile bytes ------------------------------------------------------------------------------------

HEADER = bytes.fromhex("0000000000000014" "000000000000000a")


def _exercise(row: bytes, ts: int) -> None:
    """Every read and edit a stored row can meet; only typed errors may escape."""
    for action in (
        lambda s: s.find(ts, True),
        lambda s: s.find_all(v.INT64_MIN, v.INT64_MAX),
        lambda s: s.versions(),
        lambda s: s.insert_as_earliest(ts, b"x"),
        lambda s: s.insert_as_latest(ts, v.INT64_MAX, None),
        lambda s: (s.find(ts, False), s.insert(ts, b"y", 0), s.update_record(ts, None, 0)),
    ):
        with contextlib.suppress(KStateError):
            action(v.SegmentValue.deserialize(row))


@given(st.binary(max_size=96), st.integers(min_value=v.INT64_MIN, max_value=v.INT64_MAX))
def test_hostile_segment_rows_raise_only_typed_errors(data: bytes, ts: int) -> None:
    _exercise(data, ts)


@given(st.binary(max_size=60), st.integers(min_value=5, max_value=25))
def test_hostile_rows_behind_a_plausible_header(tail: bytes, ts: int) -> None:
    _exercise(HEADER + tail, ts)


@given(st.binary(max_size=40))
def test_hostile_latest_values_and_keys(data: bytes) -> None:
    for decode in (v.decode_latest_value, v.split_segment_key):
        with contextlib.suppress(DecodeError):
            decode(data)


@pytest.mark.parametrize("tail, reason", [
    ("0000000000000011" "00000001" "61", "runs past the end"),   # never reaches min_timestamp
    ("000000000000000a" "7fffffff", "do not fit"),               # a 2 GiB value in a 28-byte row
    ("000000000000000a" "80000000", "neither -1"),               # Integer.MIN_VALUE size
    ("000000000000000a" "fffffffe", "neither -1"),
    ("000000000000000a" "00000003" "6161", "do not fit"),
])
def test_hostile_rows_are_refused_with_a_reason(tail: str, reason: str) -> None:
    row = v.SegmentValue.deserialize(HEADER + bytes.fromhex(tail))
    with pytest.raises(DecodeError, match=reason):
        row.versions()
    with pytest.raises(DecodeError, match=reason):
        row.find(15, True)


def test_the_checked_read_refuses_bytes_between_index_and_values() -> None:
    row = v.SegmentValue.deserialize(HEADER + bytes.fromhex("000000000000000a" "00000001" "616161"))
    assert row.find(15, True).value == b"a"  # Kafka reads values from the end and ignores the rest
    with pytest.raises(DecodeError, match="do not fill"):
        row.versions()


def test_a_huge_size_field_allocates_nothing() -> None:
    row = HEADER + bytes.fromhex("000000000000000a" "7fffffff")
    tracemalloc.start()
    try:
        with pytest.raises(DecodeError):
            v.SegmentValue.deserialize(row).find_all(v.INT64_MIN, v.INT64_MAX)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


def test_a_long_index_never_reaching_min_terminates() -> None:
    entries = b"".join(v.segment_key(100 + i, b"") + b"\x00\x00\x00\x00" for i in range(5000))
    with pytest.raises(DecodeError):
        v.SegmentValue.deserialize(HEADER + entries).find(15, False)


# --- the per-key store procedure --------------------------------------------------------------------


def _model_as_of(history: dict[int, bytes | None], ts: int) -> tuple[bytes, int, int | None] | None:
    older = [t for t in history if t <= ts]
    if not older:
        return None
    start = max(older)
    if history[start] is None:
        return None
    later = [t for t in history if t > start]
    value = history[start]
    assert value is not None
    return value, start, (min(later) if later else None)


def test_key_versions_against_a_version_list() -> None:
    rng = random.Random(20241025)
    for _ in range(400):
        retention, interval = rng.choice([0, 5, 50, 1000]), rng.choice([1, 3, 10, 100])
        store = v.KeyVersions(v.store_config(retention, interval))
        history: dict[int, bytes | None] = {}
        for _ in range(rng.randint(1, 20)):
            ts, value = rng.randint(0, 120), rng.choice([None, b"", b"a", b"bc"])
            latest = store.get()
            if value is None and latest is not None and latest.timestamp == ts:
                break  # VER-34: Kafka records this tombstone nowhere
            if ts < store.observed_stream_time - retention:
                assert store.put(value, ts) == v.PUT_RETURN_CODE_NOT_PUT
                continue
            returned = store.put(value, ts)
            history[ts] = value
            later = [t for t in history if t > ts]
            assert returned == (min(later) if later else -1)
            for probe in range(store.observed_stream_time - retention, 125, 3):
                got = store.get_as_of(probe)
                assert (None if got is None else (got.value, got.timestamp, got.valid_to)) == \
                    _model_as_of(history, probe)


def test_key_versions_restores_nothing_from_expired_segments() -> None:
    store = v.KeyVersions(v.store_config(100, 10))
    for ts in (5, 15, 25, 200):
        store.put(b"x", ts)
    assert sorted(store.segments) == [20]
    assert store.get_as_of(50) is None and store.get_as_of(200) == v.VersionedRecord(b"x", 200)


def test_fixture_cases_are_json_and_unique() -> None:
    from kstate.fixtures_tool.cases.versioned import cases

    names = [c.name for c in cases()]
    assert len(names) == len(set(names))
    for case in cases():
        json.dumps(call(case.op, case.input))
