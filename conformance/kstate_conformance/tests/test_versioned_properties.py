"""Properties of the KIP-889 versioned store formats and per-key behaviour, through the adapter (VER-*).

Segment rows are checked against an independent layout written here from the spec, and against a
plain list of versions; the per-key store (``versioned.key_scenario``) against a version-list model.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from kstate_conformance import rules
from kstate_conformance.bytes_model import int64
from kstate_conformance.strategies import INT64, INT64_MAX, INT64_MIN, nullable_binary

SCENARIO = "versioned.segment_scenario"
VALUES = nullable_binary(6)
Step = dict[str, Any]


def _java_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _hex(value: bytes | None) -> str | None:
    return None if value is None else value.hex()


@dataclass(frozen=True)
class Version:
    valid_from: int
    value: bytes | None


@dataclass(frozen=True)
class Row:
    """A segment row as a plain list: ``versions`` newest first, all before ``next_ts``."""

    next_ts: int
    versions: tuple[Version, ...]

    def valid_to(self, index: int) -> int:
        return self.next_ts if index == 0 else self.versions[index - 1].valid_from

    def layout(self) -> bytes:
        """The spec's layout (VER-4..VER-8), written independently of any implementation."""
        index = b"".join(int64(v.valid_from) + struct.pack(">i", -1 if v.value is None else len(v.value))
                         for v in self.versions)
        values = b"".join(v.value or b"" for v in reversed(self.versions))
        return int64(self.next_ts) + int64(self.versions[-1].valid_from) + index + values

    def expected(self, index: int, with_value: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {"index": index, "valid_from": self.versions[index].valid_from,
                               "valid_to": self.valid_to(index)}
        if with_value:
            out["value"] = _hex(self.versions[index].value)
        return out

    def find(self, ts: int) -> int:
        return next(i for i, v in enumerate(self.versions) if v.valid_from <= ts)

    def steps_by_latest(self) -> list[dict[str, Any]]:
        oldest = len(self.versions) - 1
        steps: list[dict[str, Any]] = [{"op": "new", "value": _hex(self.versions[oldest].value),
                                        "valid_from": self.versions[oldest].valid_from,
                                        "valid_to": self.valid_to(oldest)}]
        for i in range(oldest - 1, -1, -1):
            steps.append({"op": "insert_as_latest", "valid_from": self.versions[i].valid_from,
                          "valid_to": self.valid_to(i), "value": _hex(self.versions[i].value)})
        return steps

    def steps_by_earliest(self) -> list[dict[str, Any]]:
        steps: list[dict[str, Any]] = [{"op": "new", "value": _hex(self.versions[0].value),
                                        "valid_from": self.versions[0].valid_from, "valid_to": self.next_ts}]
        steps += [{"op": "insert_as_earliest", "timestamp": v.valid_from, "value": _hex(v.value)}
                  for v in self.versions[1:]]
        return steps


@st.composite
def rows(draw: st.DrawFn, min_gap: int = 1, low: int = 0, high: int = 1 << 40) -> Row:
    """Version lists with strictly decreasing validFroms at least ``min_gap`` apart."""
    count = draw(st.integers(min_value=1, max_value=6))
    stamps = sorted(draw(st.sets(st.integers(min_value=low, max_value=high), min_size=count + 1, max_size=count + 1)))
    stamps = [stamps[0]] + [stamps[0] + (s - stamps[0]) * min_gap for s in stamps[1:]]
    next_ts, *froms = sorted(stamps, reverse=True)
    return Row(next_ts, tuple(Version(f, draw(VALUES)) for f in froms))


def scenario(implementation: Any, steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = implementation.call(SCENARIO, {"steps": steps})["steps"]
    return out


def final_bytes(implementation: Any, steps: list[dict[str, Any]]) -> bytes:
    last = scenario(implementation, steps)[-1]
    assert "error" not in last, last
    return bytes.fromhex(last["bytes"])


# --- segment rows ----------------------------------------------------------------------------------


@rules("VER-4", "VER-5", "VER-6", "VER-7", "VER-8", "VER-14", "VER-15", "VER-17")
@given(rows())
def test_rows_built_newest_last_or_oldest_last_have_the_spec_layout(implementation: Any, row: Row) -> None:
    expected = row.layout()
    assert final_bytes(implementation, row.steps_by_latest()) == expected
    assert final_bytes(implementation, row.steps_by_earliest()) == expected


@rules("VER-4", "VER-21")
@given(rows())
def test_every_step_reports_the_row_header(implementation: Any, row: Row) -> None:
    for result in scenario(implementation, row.steps_by_latest()):
        data = bytes.fromhex(result["bytes"])
        assert result["next_timestamp"] == struct.unpack(">q", data[:8])[0]
        assert result["min_timestamp"] == struct.unpack(">q", data[8:16])[0]


@rules("VER-21", "VER-5", "VER-6", "VER-7", "VER-8")
@given(rows())
def test_a_row_reads_back_unchanged(implementation: Any, row: Row) -> None:
    data = row.layout()
    results = scenario(implementation, [{"op": "deserialize", "bytes": data.hex()}, {"op": "reload"}])
    assert [bytes.fromhex(r["bytes"]) for r in results] == [data, data]
    listed = implementation.call("versioned.segment_versions", {"bytes": data.hex()})
    assert listed["versions"] == [row.expected(i) for i in range(len(row.versions))]


@rules("VER-11", "VER-7")
@given(rows(), st.data())
def test_find_returns_the_version_valid_at_the_timestamp(implementation: Any, row: Row, data: st.DataObject) -> None:
    low = row.versions[-1].valid_from
    probes = [data.draw(st.integers(min_value=low, max_value=row.next_ts - 1)) for _ in range(3)]
    with_value = data.draw(st.booleans())
    steps: list[Step] = [{"op": "deserialize", "bytes": row.layout().hex()}]
    steps += [{"op": "find", "timestamp": ts, "include_value": with_value} for ts in probes]
    results = scenario(implementation, steps)[1:]
    assert [r["result"] for r in results] == [row.expected(row.find(ts), with_value) for ts in probes]


@rules("VER-11")
@given(rows(low=-(1 << 40)), st.integers(min_value=1, max_value=1 << 20))
def test_find_refuses_timestamps_outside_the_row(implementation: Any, row: Row, distance: int) -> None:
    steps: list[Step] = [{"op": "deserialize", "bytes": row.layout().hex()},
             {"op": "find", "timestamp": row.versions[-1].valid_from - distance, "include_value": True},
             {"op": "find", "timestamp": row.next_ts, "include_value": True},
             {"op": "find", "timestamp": row.next_ts + distance - 1, "include_value": False}]
    assume(row.versions[-1].valid_from != -1)
    assert all("error" in r for r in scenario(implementation, steps)[1:])


@rules("VER-12", "VER-7", "VER-8")
@given(rows(high=1000), st.integers(min_value=-5, max_value=1010), st.integers(min_value=-5, max_value=1010))
def test_find_all_returns_overlapping_values_newest_first(implementation: Any, row: Row, a: int, b: int) -> None:
    assume(row.versions[-1].valid_from != -1)
    expected = [row.expected(i) for i, v in enumerate(row.versions)
                if v.value is not None and v.valid_from <= b and row.valid_to(i) > a]
    steps: list[Step] = [{"op": "deserialize", "bytes": row.layout().hex()}, {"op": "find_all", "from": a, "to": b}]
    assert scenario(implementation, steps)[1]["results"] == expected


@rules("VER-8")
@given(st.integers(min_value=0, max_value=1 << 40), st.integers(min_value=1, max_value=1000))
def test_tombstone_and_empty_value_stay_apart(implementation: Any, start: int, width: int) -> None:
    steps: list[Step] = [{"op": "new", "value": "", "valid_from": start, "valid_to": start + width},
             {"op": "insert_as_latest", "valid_from": start + width, "valid_to": start + 2 * width, "value": None},
             {"op": "reload"}, {"op": "find", "timestamp": start, "include_value": True},
             {"op": "find", "timestamp": start + width, "include_value": True}]
    results = scenario(implementation, steps)
    assert bytes.fromhex(results[0]["bytes"])[-4:] == b"\x00\x00\x00\x00"
    assert bytes.fromhex(results[1]["bytes"])[16:28] == int64(start + width) + b"\xff\xff\xff\xff"
    assert results[3]["result"]["value"] == "" and results[4]["result"]["value"] is None


@rules("VER-10", "VER-14", "VER-15", "VER-17")
@given(st.integers(min_value=0, max_value=1 << 40), st.integers(min_value=1, max_value=1000), VALUES)
def test_degenerate_row(implementation: Any, t: int, delta: int, value: bytes | None) -> None:
    new = {"op": "new", "value": None, "valid_from": t, "valid_to": t}
    results = scenario(implementation, [new, {"op": "find", "timestamp": t, "include_value": True},
                               {"op": "find_all", "from": INT64_MIN, "to": INT64_MAX},
                               {"op": "insert", "timestamp": t, "value": "61", "index": 0}])
    assert bytes.fromhex(results[0]["bytes"]) == int64(t) * 3 + b"\xff\xff\xff\xff"
    assert "error" in results[1] and results[2]["results"] == [] and "error" in results[3]
    earliest = Row(t, (Version(t - delta, value),)).layout()
    assert final_bytes(implementation, [new, {"op": "insert_as_earliest", "timestamp": t - delta, "value": _hex(value)}]) \
        == earliest
    latest = Row(t + delta, (Version(t, value),)).layout()
    assert final_bytes(implementation, [new, {"op": "insert_as_latest", "valid_from": t, "valid_to": t + delta,
                                     "value": _hex(value)}]) == latest


@rules("VER-15", "VER-7")
@given(rows(), st.integers(min_value=1, max_value=1000), st.integers(min_value=1, max_value=1000), VALUES)
def test_a_gap_before_the_new_latest_becomes_a_tombstone(implementation: Any, row: Row, gap: int, width: int,
                                                          value: bytes | None) -> None:
    start = row.next_ts + gap
    step = {"op": "insert_as_latest", "valid_from": start, "valid_to": start + width, "value": _hex(value)}
    expected = Row(start + width, (Version(start, value), Version(row.next_ts, None), *row.versions))
    assert final_bytes(implementation, [{"op": "deserialize", "bytes": row.layout().hex()}, step]) == expected.layout()


@rules("VER-16")
@given(rows(min_gap=3), st.data(), VALUES)
def test_insert_as_latest_below_next_truncates(implementation: Any, row: Row, data: st.DataObject,
                                                value: bytes | None) -> None:
    low = row.versions[-1].valid_from
    start = data.draw(st.integers(min_value=low - 5, max_value=row.next_ts - 1))
    assume(low != -1 and start != -1)
    end = start + data.draw(st.integers(min_value=1, max_value=50))
    kept = tuple(v for v in row.versions if v.valid_from < start)
    expected = Row(end, (Version(start, value), *kept))
    step = {"op": "insert_as_latest", "valid_from": start, "valid_to": end, "value": _hex(value)}
    assert final_bytes(implementation, [{"op": "deserialize", "bytes": row.layout().hex()}, step]) == expected.layout()


@rules("VER-18", "VER-20")
@given(rows(min_gap=3), st.data(), VALUES)
def test_insert_at_an_index_find_has_reached(implementation: Any, row: Row, data: st.DataObject, value: bytes | None) -> None:
    index = data.draw(st.integers(min_value=0, max_value=len(row.versions) - 1))
    target = row.versions[index]
    ts = data.draw(st.integers(min_value=target.valid_from + 1, max_value=row.valid_to(index) - 1))
    insert = {"op": "insert", "timestamp": ts, "value": _hex(value), "index": index}
    start = [{"op": "deserialize", "bytes": row.layout().hex()}]
    assert "error" in scenario(implementation, [*start, insert])[-1], "insert before find() reached the index"
    found = {"op": "find", "timestamp": target.valid_from, "include_value": False}
    versions = list(row.versions)
    versions.insert(index, Version(ts, value))
    assert final_bytes(implementation, [*start, found, insert]) == Row(row.next_ts, tuple(versions)).layout()
    below = {"op": "insert", "timestamp": ts, "value": None, "index": -1}
    assert "error" in scenario(implementation, [*start, found, below])[-1]


@rules("VER-19", "VER-20")
@given(rows(min_gap=3), st.data(), VALUES)
def test_update_record_replaces_one_version(implementation: Any, row: Row, data: st.DataObject, value: bytes | None) -> None:
    index = data.draw(st.integers(min_value=0, max_value=len(row.versions) - 1))
    low = row.versions[index + 1].valid_from + 1 if index + 1 < len(row.versions) else row.versions[index].valid_from - 5
    ts = data.draw(st.integers(min_value=low, max_value=row.valid_to(index) - 1))
    update = {"op": "update_record", "timestamp": ts, "value": _hex(value), "index": index}
    start = [{"op": "deserialize", "bytes": row.layout().hex()}]
    assert "error" in scenario(implementation, [*start, update])[-1], "updateRecord before find() reached the index"
    found = {"op": "find", "timestamp": row.versions[index].valid_from, "include_value": False}
    versions = list(row.versions)
    versions[index] = Version(ts, value)
    assert final_bytes(implementation, [*start, found, update]) == Row(row.next_ts, tuple(versions)).layout()
    if index + 1 < len(row.versions):
        deeper = {"op": "update_record", "timestamp": ts, "value": None, "index": index + 1}
        assert "error" in scenario(implementation, [*start, found, deeper])[-1]


@rules("VER-20")
@given(rows(), VALUES)
def test_edits_count_as_reading_but_reloading_forgets(implementation: Any, row: Row, value: bytes | None) -> None:
    top = row.versions[0].valid_from
    steps: list[Step] = [*row.steps_by_earliest(), {"op": "find", "timestamp": top, "include_value": False},
             {"op": "update_record", "timestamp": top, "value": _hex(value), "index": 0}, {"op": "reload"},
             {"op": "update_record", "timestamp": top, "value": _hex(value), "index": 0}]
    results = scenario(implementation, steps)
    assert "error" not in results[-3] and "error" in results[-1]


@rules("VER-13")
@pytest.mark.kstate_level("recommended")
@given(st.integers(min_value=0, max_value=1000), st.binary(max_size=4))
def test_min_timestamp_minus_one_hides_every_version(implementation: Any, width: int, value: bytes) -> None:
    steps: list[Step] = [{"op": "new", "value": value.hex(), "valid_from": -1, "valid_to": width},
             {"op": "find", "timestamp": max(width - 1, -1), "include_value": True},
             {"op": "find_all", "from": INT64_MIN, "to": INT64_MAX},
             {"op": "insert_as_earliest", "timestamp": -5, "value": "61"}]
    results = scenario(implementation, steps)
    assert "error" in results[1] and results[2]["results"] == [] and "error" in results[3]


@rules("VER-9", "VER-21")
@given(st.binary(max_size=80), st.integers(min_value=INT64_MIN, max_value=INT64_MAX))
def test_any_bytes_give_an_answer_or_a_refusal(implementation: Any, data: bytes, ts: int) -> None:
    results = scenario(implementation, [{"op": "deserialize", "bytes": data.hex()},
                               {"op": "find", "timestamp": ts, "include_value": True},
                               {"op": "find_all", "from": INT64_MIN, "to": INT64_MAX}])
    if len(data) < 16:
        assert all("error" in r for r in results)
    assert isinstance(implementation.call("versioned.segment_versions", {"bytes": data.hex()}), dict)


@rules("VER-9")
@given(rows(), st.integers(min_value=1, max_value=(1 << 31) - 1))
def test_rows_that_run_past_their_end_are_refused(implementation: Any, row: Row, extra: int) -> None:
    data = row.layout()
    never_min = data[:8] + int64(row.versions[-1].valid_from - 1) + data[16:]
    assume(row.versions[-1].valid_from - 1 != -1)
    oldest = 16 + 12 * (len(row.versions) - 1)
    size = len(row.versions[-1].value or b"")
    too_big = data[:oldest + 8] + struct.pack(">i", min(size + extra, (1 << 31) - 1)) + data[oldest + 12:]
    for bad in (never_min, too_big, data[:-1] if size else data[:oldest + 11]):
        assert "error" in implementation.call("versioned.segment_versions", {"bytes": bad.hex()})


# --- latest-value rows, keys, placement, configuration -----------------------------------------------


@rules("VER-3")
@given(st.binary(max_size=40), INT64)
def test_latest_value_row_round_trips(implementation: Any, value: bytes, ts: int) -> None:
    row = implementation.call("versioned.latest_from", {"value": value.hex(), "timestamp": ts})["bytes"]
    assert bytes.fromhex(row) == int64(ts) + value
    assert implementation.call("versioned.latest_decode", {"bytes": row}) == {"value": value.hex(), "timestamp": ts}


@rules("VER-3")
@given(st.binary(max_size=7), INT64)
def test_latest_value_refuses_tombstones_and_short_rows(implementation: Any, short: bytes, ts: int) -> None:
    assert "error" in implementation.call("versioned.latest_from", {"value": None, "timestamp": ts})
    assert "error" in implementation.call("versioned.latest_decode", {"bytes": short.hex()})


@rules("VER-1", "VER-2")
@given(st.integers(min_value=0, max_value=INT64_MAX), st.binary(max_size=12), st.binary(max_size=12))
def test_segment_keys_and_the_latest_store_sorts_last(implementation: Any, sid: int, key: bytes, other: bytes) -> None:
    regular = bytes.fromhex(implementation.call("versioned.segment_key", {"segment_id": sid, "key": key.hex()})["bytes"])
    latest = bytes.fromhex(implementation.call("versioned.segment_key", {"segment_id": -1, "key": other.hex()})["bytes"])
    assert regular == int64(sid) + key and latest == b"\xff" * 8 + other
    assert regular < latest
    assert implementation.call("versioned.split_segment_key", {"bytes": regular.hex()}) == {"segment_id": sid, "key": key.hex()}
    assert "error" in implementation.call("versioned.split_segment_key", {"bytes": regular[:7].hex()})


@rules("VER-2")
@given(st.integers(min_value=0, max_value=1 << 30), st.integers(min_value=1, max_value=1 << 30),
       st.from_regex(r"[a-z][a-z0-9-]{0,12}", fullmatch=True))
def test_segment_names(implementation: Any, sid: int, interval: int, store: str) -> None:
    name = implementation.call("versioned.segment_name", {"store": store, "segment_id": sid, "segment_interval": interval})
    assert name == {"name": f"{store}.{sid * interval}"}
    latest = implementation.call("versioned.segment_name", {"store": store, "segment_id": -1, "segment_interval": interval})
    assert latest == {"name": f"{store}.latestValues"}


@rules("VER-22")
@given(INT64, st.integers(min_value=0, max_value=1 << 20), st.booleans(), st.integers(min_value=1, max_value=1 << 20))
def test_versions_are_filed_by_valid_to(implementation: Any, valid_from: int, width: int, tombstone: bool, interval: int) -> None:
    assume(valid_from + width <= INT64_MAX)
    call = {"valid_from": valid_from, "tombstone": tombstone, "segment_interval": interval}
    old = implementation.call("versioned.version_segment", {**call, "valid_to": valid_from + width})
    assert old == {"segment_id": _java_div(valid_from + width, interval)}
    latest = implementation.call("versioned.version_segment", {**call, "valid_to": None})
    assert latest == {"segment_id": _java_div(valid_from, interval) if tombstone else -1}


@rules("VER-23")
@given(st.integers(min_value=0, max_value=1 << 45))
def test_default_segment_interval(implementation: Any, retention: int) -> None:
    table = [(60_000, 3, 2_000), (300_000, 5, 20_000), (3_600_000, 12, 60_000)]
    expected = next((max(retention // d, floor) for limit, d, floor in table if retention <= limit),
                    max(retention // 24, 300_000))
    assert implementation.call("versioned.default_segment_interval", {"history_retention": retention}) == \
        {"segment_interval": expected}


@rules("VER-24", "VER-23")
@given(INT64, st.one_of(st.none(), INT64))
def test_store_configuration_is_validated(implementation: Any, retention: int, interval: int | None) -> None:
    out = implementation.call("versioned.store_config", {"history_retention": retention, "segment_interval": interval})
    if retention < 0 or (interval is not None and interval < 1):
        assert "error" in out
        return
    assert out["history_retention"] == out["grace_period"] == retention
    if interval is not None:
        assert out["segment_interval"] == interval


# --- the per-key store procedure ---------------------------------------------------------------------


KEY = "6b"
STORE_STEP = st.one_of(
    st.tuples(st.just("put"), st.integers(min_value=0, max_value=150), st.one_of(st.none(), st.binary(max_size=2))),
    st.tuples(st.just("delete"), st.integers(min_value=0, max_value=150), st.none()),
)


class VersionList:
    """The contract of ``VersionedKeyValueStore`` as a list of versions, with Kafka's expiry."""

    def __init__(self, retention: int) -> None:
        self.retention = retention
        self.versions: dict[int, bytes | None] = {}
        self.observed = -1

    def latest(self) -> dict[str, Any] | None:
        if not self.versions:
            return None
        ts = max(self.versions)
        value = self.versions[ts]
        return None if value is None else {"value": value.hex(), "timestamp": ts, "valid_to": None}

    def as_of(self, ts: int) -> dict[str, Any] | None:
        older = [t for t in self.versions if t <= ts]
        if not older:
            return None
        start = max(older)
        value = self.versions[start]
        if value is None:
            return None
        later = [t for t in self.versions if t > start]
        return {"value": value.hex(), "timestamp": start, "valid_to": min(later) if later else None}

    def get_as_of(self, ts: int) -> dict[str, Any] | None:
        latest = self.latest()
        if latest is not None and latest["timestamp"] <= ts:
            return latest
        if ts < self.observed - self.retention:
            return None
        return self.as_of(ts)

    def forgets(self, ts: int) -> bool:
        """VER-34: a tombstone at the latest value's own timestamp, which Kafka records nowhere."""
        latest = self.latest()
        return latest is not None and latest["timestamp"] == ts

    def apply(self, kind: str, ts: int, value: bytes | None) -> Any:
        if ts < self.observed - self.retention:
            return INT64_MIN if kind == "put" else None
        previous = self.get_as_of(ts)
        self.observed = max(self.observed, ts)
        self.versions[ts] = value
        if kind == "delete":
            return previous
        later = [t for t in self.versions if t > ts]
        return min(later) if later else -1


def key_scenario(implementation: Any, retention: int, interval: int, steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    payload = {"key": KEY, "history_retention": retention, "segment_interval": interval, "steps": steps}
    out: list[dict[str, Any]] = implementation.call("versioned.key_scenario", payload)["steps"]
    return out


@rules("VER-25", "VER-26", "VER-27", "VER-29", "VER-31", "VER-32", "VER-33")
@given(st.sampled_from([0, 7, 40, 1000]), st.sampled_from([1, 3, 10, 64]), st.lists(STORE_STEP, min_size=1, max_size=14))
def test_store_matches_the_version_list_contract(implementation: Any, retention: int, interval: int,
                                                 ops: list[tuple[str, int, bytes | None]]) -> None:
    model = VersionList(retention)
    steps: list[dict[str, Any]] = []
    expected: list[Any] = []
    for kind, ts, value in ops:
        if value is None and model.forgets(ts):
            break
        steps.append({"op": kind, "timestamp": ts, "value": _hex(value)} if kind == "put" else {"op": kind, "timestamp": ts})
        expected.append(model.apply(kind, ts, value))
        steps.append({"op": "get"})
        expected.append(model.latest())
        for probe in (ts - 1, ts, ts + 1, model.observed - retention - 1):
            steps.append({"op": "get_as_of", "timestamp": probe})
            expected.append(model.get_as_of(probe))
    assume(steps)
    results = key_scenario(implementation, retention, interval, steps)
    assert [r.get("result", r.get("error")) for r in results] == expected
    assert results[-1]["observed_stream_time"] == model.observed


@rules("VER-1", "VER-2", "VER-22", "VER-28", "VER-30")
@given(st.sampled_from([0, 7, 40, 1000]), st.sampled_from([1, 3, 10, 64]), st.lists(STORE_STEP, min_size=1, max_size=14))
def test_store_rows_are_laid_out_by_segment(implementation: Any, retention: int, interval: int,
                                            ops: list[tuple[str, int, bytes | None]]) -> None:
    steps: list[Step] = [{"op": kind, "timestamp": ts, "value": _hex(value)} if kind == "put" else {"op": kind, "timestamp": ts}
             for kind, ts, value in ops]
    newest = -1
    for step, result in zip(steps, key_scenario(implementation, retention, interval, steps), strict=True):
        latest_key = "ff" * 8 + KEY
        keys = [k for k, _ in result["rows"]]
        assert keys == sorted(keys, key=bytes.fromhex)
        min_live = _java_div(result["observed_stream_time"] - retention, interval)
        for key, row in result["rows"]:
            if key == latest_key:
                continue
            sid = struct.unpack(">q", bytes.fromhex(key)[:8])[0]
            assert key[16:] == KEY and sid >= 0 and sid >= min_live
            listed = implementation.call("versioned.segment_versions", {"bytes": row})
            assert _java_div(listed["next_timestamp"], interval) == sid
            assert all(_java_div(v["valid_to"], interval) == sid for v in listed["versions"] if v["value"] is not None)
        if step.get("value") is None and step["timestamp"] >= newest:
            assert latest_key not in keys, "a tombstone never enters the latest-value store"
        newest = max(newest, step["timestamp"])


@rules("VER-26", "VER-33", "VER-25")
@given(st.integers(min_value=0, max_value=1000), st.integers(min_value=0, max_value=1000))
def test_the_grace_period_boundary_is_accepted(implementation: Any, retention: int, ts: int) -> None:
    boundary = ts + retention
    steps: list[Step] = [{"op": "put", "timestamp": boundary, "value": "61"},
                         {"op": "put", "timestamp": ts, "value": "62"},
                         {"op": "delete", "timestamp": ts},
                         {"op": "put", "timestamp": ts - 1, "value": "63"},
                         {"op": "delete", "timestamp": ts - 1}]
    results = key_scenario(implementation, retention, 10, steps)
    replaced = retention == 0  # the second put then lands on the latest version's own timestamp
    deleted = {"value": "62", "timestamp": ts, "valid_to": None if replaced else boundary}
    assert [r["result"] for r in results] == [-1, -1 if replaced else boundary, deleted, INT64_MIN, None]
    assert all(r["observed_stream_time"] == boundary for r in results)


@rules("VER-28", "VER-22")
@given(st.integers(min_value=0, max_value=1000), st.integers(min_value=1, max_value=1000), st.binary(max_size=3),
       st.sampled_from([1, 10, 100]))
def test_in_order_put_moves_the_previous_latest_first(implementation: Any, ts: int, later: int, value: bytes,
                                                      interval: int) -> None:
    steps: list[Step] = [{"op": "put", "timestamp": ts, "value": value.hex()}, {"op": "put", "timestamp": ts + later, "value": "ff"}]
    rows = dict(key_scenario(implementation, 5000, interval, steps)[-1]["rows"])
    moved = Row(ts + later, (Version(ts, value),)).layout().hex()
    assert rows == {int64(_java_div(ts + later, interval)).hex() + KEY: moved,
                    "ff" * 8 + KEY: (int64(ts + later) + b"\xff").hex()}


@rules("VER-29")
def test_an_out_of_order_put_splits_a_version_across_segments(implementation: Any) -> None:
    steps: list[Step] = [{"op": "put", "timestamp": 5, "value": "61"}, {"op": "put", "timestamp": 35, "value": "62"},
             {"op": "put", "timestamp": 22, "value": "63"}]
    result = key_scenario(implementation, 100, 10, steps)[-1]
    assert result["result"] == 35
    assert result["rows"] == [
        [int64(2).hex() + KEY, Row(22, (Version(5, b"a"),)).layout().hex()],
        [int64(3).hex() + KEY, Row(35, (Version(22, b"c"),)).layout().hex()],
        ["ff" * 8 + KEY, (int64(35) + b"b").hex()],
    ]


@rules("VER-10", "VER-29")
def test_a_lone_tombstone_is_a_degenerate_row(implementation: Any) -> None:
    results = key_scenario(implementation, 100, 10, [{"op": "put", "timestamp": 42, "value": None},
                                            {"op": "put", "timestamp": 30, "value": "61"}])
    assert results[0]["rows"] == [[int64(4).hex() + KEY, (int64(42) * 3 + b"\xff\xff\xff\xff").hex()]]
    assert results[1]["result"] == 42
    assert results[1]["rows"] == [[int64(4).hex() + KEY, Row(42, (Version(30, b"a"),)).layout().hex()]]


@rules("VER-30")
def test_segments_below_retention_are_dropped_and_negative_ids_refused(implementation: Any) -> None:
    steps: list[Step] = [{"op": "put", "timestamp": t, "value": "61"} for t in (5, 15, 25, 200)]
    rows = key_scenario(implementation, 100, 10, steps)[-1]["rows"]
    assert [k[:16] for k, _ in rows] == [int64(20).hex(), "ff" * 8]
    negative = key_scenario(implementation, 1000, 10, [{"op": "put", "timestamp": -50, "value": "61"},
                                              {"op": "put", "timestamp": -20, "value": "62"}])
    assert "error" in negative[1]


@rules("VER-34")
@pytest.mark.kstate_level("recommended")
def test_a_tombstone_at_the_latest_timestamp_is_recorded_nowhere(implementation: Any) -> None:
    steps: list[Step] = [{"op": "put", "timestamp": 10, "value": "61"}, {"op": "put", "timestamp": 20, "value": None},
             {"op": "put", "timestamp": 30, "value": "62"}, {"op": "put", "timestamp": 30, "value": None},
             {"op": "put", "timestamp": 25, "value": "63"}, {"op": "get"}]
    results = key_scenario(implementation, 100, 10, steps)
    assert results[4]["result"] == -1
    assert results[5]["result"] == {"value": "63", "timestamp": 25, "valid_to": None}
