"""The segment managers on their own (LAY-3, WIN-15, WIN-16, SESS-11, VER-1, VER-2, VER-30): ids, names on disk,
the live-segment rule and expiry, ordering, reopening after a restart, and the merged position."""

from __future__ import annotations

from pathlib import Path

import pytest

from kstate.codecs import segments as seg
from kstate.codecs import versioned as v
from kstate.codecs.primitives import encode_int64
from kstate.codecs.store_types import DEFAULT_CF, OFFSETS_CF, TIMESTAMPED_CF
from kstate.errors import InvalidArgumentError
from kstate.stores.engine import MemoryEngine, list_column_families
from kstate.stores.segments import (
    KeyValueSegment,
    KeyValueSegments,
    LogicalKeyValueSegments,
    TimestampedSegments,
)

INTERVAL = 60_000
RETENTION = 180_000


def _segments(task_dir: Path, cls: type[KeyValueSegments] = KeyValueSegments) -> KeyValueSegments:
    segments = cls("win", task_dir, RETENTION, INTERVAL)
    segments.open_existing(-1)
    return segments


def _put(segment: KeyValueSegment, key: bytes, value: bytes) -> None:
    segment.accessor.put(key, value)


def test_segment_ids_truncate_and_names_are_segment_starts(tmp_path: Path) -> None:
    segments = KeyValueSegments("win", tmp_path, RETENTION, INTERVAL)
    assert [segments.segment_id(t) for t in (0, 59_999, 60_000, 125_000, -1, -60_000, -60_001)] == [0, 0, 1, 2, 0, -1, -1]
    assert segments.segment_name(2) == "win.120000" == seg.segment_dir_name("win", 2, INTERVAL)
    assert segments.min_live_segment_id(300_000) == 2  # (300000 - 180000) / 60000


def test_segment_names_are_one_function_for_directories_and_logical_segments() -> None:
    assert seg.segment_dir("s", 3, 1000) == "s/s.3000"
    assert v.segment_name("s", 3, 1000) == seg.segment_name("s", 3, 1000) == "s.3000"
    assert seg.segment_name("s", 2**62, 4) == "s.0"  # Java long multiplication wraps


def test_managers_refuse_bad_parameters(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="segment_interval"):
        KeyValueSegments("win", tmp_path, RETENTION, 0)
    with pytest.raises(InvalidArgumentError, match="retention_period"):
        KeyValueSegments("win", tmp_path, -1, INTERVAL)


def test_one_database_per_segment_named_by_its_start(tmp_path: Path) -> None:
    segments = _segments(tmp_path)
    assert (tmp_path / "win").is_dir()
    first = segments.get_or_create_segment_if_live(segments.segment_id(61_000), 61_000)
    assert first is not None and first.id == 1 and first.name == "win.60000"
    assert segments.get_or_create_segment(1) is first
    assert sorted(p.name for p in (tmp_path / "win").iterdir()) == ["win.60000"]
    assert sorted(list_column_families(tmp_path / "win" / "win.60000")) == [DEFAULT_CF, OFFSETS_CF]
    segments.close()


def test_expired_segments_are_not_created_and_are_destroyed(tmp_path: Path) -> None:
    segments = _segments(tmp_path)
    for start in (0, 60_000, 120_000):
        assert segments.get_or_create_segment_if_live(segments.segment_id(start), start) is not None
    # stream time 250000: the earliest live segment is (250000 - 180000) / 60000 = 1
    assert segments.get_or_create_segment_if_live(0, 250_000) is None
    assert segments.segment_ids() == [1, 2]
    assert sorted(p.name for p in (tmp_path / "win").iterdir()) == ["win.120000", "win.60000"]
    segments.cleanup_expired_segments(400_000)  # earliest live: 3
    assert segments.segment_ids() == []
    assert list((tmp_path / "win").iterdir()) == []


def test_segments_in_range_ordered_by_direction(tmp_path: Path) -> None:
    segments = _segments(tmp_path)
    for segment_id in (3, 1, 2, 5):
        segments.get_or_create_segment(segment_id)
    assert [s.id for s in segments.segments(60_000, 179_999, forward=True)] == [1, 2]
    assert [s.id for s in segments.segments(0, 400_000, forward=False)] == [5, 3, 2, 1]
    assert [s.id for s in segments.all_segments()] == [1, 2, 3, 5]
    assert segments.segment_for_timestamp(130_000) is segments.get_or_create_segment(2)
    segments.get_or_create_segment(3).close()
    assert [s.id for s in segments.all_segments(forward=False)] == [5, 2, 1]  # closed segments are left out
    segments.close()


def test_existing_segments_reopen_after_a_restart_with_their_data(tmp_path: Path) -> None:
    segments = _segments(tmp_path)
    one = segments.get_or_create_segment(1)
    two = segments.get_or_create_segment(2)
    _put(one, b"k1", b"v1")
    _put(two, b"k2", b"v2")
    one.instance.commit({("win-changelog", 0): 10}, {"in": {0: 4}})
    two.instance.commit({("win-changelog", 0): 11}, {"in": {0: 9}, "other": {1: 2}})
    segments.close()

    reopened = _segments(tmp_path)
    assert reopened.segment_ids() == [1, 2]
    assert reopened.get_or_create_segment(1).accessor.get(b"k1") == b"v1"
    assert reopened.get_or_create_segment(2).accessor.get(b"k2") == b"v2"
    assert reopened.get_or_create_segment(2).instance.committed_offset(("win-changelog", 0)) == 11
    # The store's position is the merge of its segments' positions.
    assert reopened.position() == {"in": {0: 9}, "other": {1: 2}}
    reopened.close()


def test_restart_renames_legacy_names_and_skips_what_kafka_skips(tmp_path: Path) -> None:
    segments = _segments(tmp_path)
    for segment_id in (1, 2):
        segments.get_or_create_segment(segment_id)
    segments.close()
    directory = tmp_path / "win"
    (directory / "win.60000").rename(directory / "win:60000")  # the intermediate ':' form
    (directory / "win.120000").rename(directory / "win-197001010002")  # the old date form: minute 2
    (directory / "win-nodate").mkdir()  # an unparseable date: skipped
    (directory / "win.-60000").mkdir()  # a negative id: not opened

    reopened = _segments(tmp_path)
    assert reopened.segment_ids() == [1, 2]
    assert sorted(p.name for p in directory.iterdir()) == ["win-nodate", "win.-60000", "win.120000", "win.60000"]
    reopened.close()


def test_an_unreadable_name_is_skipped_and_the_scan_goes_on(tmp_path: Path) -> None:
    """LAY-12: Kafka's ``openExisting`` swallows the parse error and opens nothing; the reference skips the entry."""
    segments = _segments(tmp_path)
    segments.get_or_create_segment(1)
    segments.close()
    (tmp_path / "win" / "win.notanumber").mkdir()
    reopened = _segments(tmp_path)
    assert reopened.segment_ids() == [1]
    assert (tmp_path / "win" / "win.notanumber").is_dir()
    reopened.close()


def test_segments_expired_at_restart_are_dropped(tmp_path: Path) -> None:
    segments = _segments(tmp_path)
    for segment_id in (0, 1, 4):
        segments.get_or_create_segment(segment_id)
    segments.close()
    reopened = KeyValueSegments("win", tmp_path, RETENTION, INTERVAL)
    reopened.open_existing(300_000)  # earliest live: 2
    assert reopened.segment_ids() == [4]
    assert sorted(p.name for p in (tmp_path / "win").iterdir()) == ["win.240000"]
    reopened.close()


def test_timestamped_segments_migrate_their_plain_data_per_segment(tmp_path: Path) -> None:
    plain = _segments(tmp_path)
    _put(plain.get_or_create_segment(1), b"k", b"v")
    plain.get_or_create_segment(2)
    plain.close()

    timestamped = _segments(tmp_path, TimestampedSegments)
    upgraded = timestamped.get_or_create_segment(1)
    assert upgraded.instance.mode == "upgrade"
    assert upgraded.accessor.get(b"k") == b"\xff" * 8 + b"v"  # a plain value reads with timestamp -1 (UPG-5)
    assert timestamped.get_or_create_segment(2).instance.mode == "regular"
    timestamped.close()
    assert sorted(list_column_families(tmp_path / "win" / "win.120000")) == [DEFAULT_CF, TIMESTAMPED_CF, OFFSETS_CF]


# --- logical segments -------------------------------------------------------------------------------------------------


def _logical(task_dir: Path | None = None, engine: MemoryEngine | None = None) -> LogicalKeyValueSegments:
    segments = LogicalKeyValueSegments("ver", task_dir, RETENTION, INTERVAL, engine=engine)
    segments.open_existing(-1)
    return segments


def test_logical_segments_share_one_database_at_rocksdb_store(tmp_path: Path) -> None:
    segments = _logical(tmp_path)
    assert segments.physical.path == tmp_path / "rocksdb" / "ver"
    one = segments.get_or_create_segment(1)
    assert (one.name, one.prefix) == ("ver.60000", encode_int64(1))
    latest = segments.latest_value_segment()
    assert (latest.id, latest.name, latest.prefix) == (-1, "ver.latestValues", b"\xff" * 8)
    assert segments.latest_value_segment() is latest
    assert segments.all_segments() == [one]  # reserved segments are not listed
    segments.close()
    assert sorted(list_column_families(tmp_path / "rocksdb" / "ver")) == [DEFAULT_CF, OFFSETS_CF]
    assert [p.name for p in tmp_path.iterdir()] == ["rocksdb"]  # no file or directory per segment


def test_logical_segments_refuse_negative_ids_outside_reserved_segments() -> None:
    segments = _logical(engine=MemoryEngine())
    with pytest.raises(InvalidArgumentError, match="createReservedSegment"):
        segments.get_or_create_segment(-2)
    with pytest.raises(InvalidArgumentError, match="custom names"):
        segments.segment_name(-1)
    with pytest.raises(InvalidArgumentError, match="must be negative"):
        segments.create_reserved_segment(0, "x")


def test_expired_logical_segments_lose_their_prefix_and_the_latest_values_stay() -> None:
    segments = _logical(engine=MemoryEngine())
    accessor = segments.physical.accessor
    for segment_id in (0, 1, 2):
        segment = segments.get_or_create_segment(segment_id)
        accessor.put(segment.key(b"k"), bytes([segment_id]))
    latest = segments.latest_value_segment()
    accessor.put(latest.key(b"k"), b"latest")
    segments.cleanup_expired_segments(250_000)  # earliest live: 1
    assert segments.segment_ids() == [1, 2]
    segments.commit({}, {})
    rows = segments.physical.column_family_rows()[DEFAULT_CF]
    assert [k for k, _ in rows] == [encode_int64(1) + b"k", encode_int64(2) + b"k", b"\xff" * 8 + b"k"]
    assert segments.get_or_create_segment_if_live(0, 250_000) is None
    segments.close()


def test_logical_segments_find_their_segments_again_on_reopen(tmp_path: Path) -> None:
    segments = _logical(tmp_path)
    segment = segments.get_or_create_segment(3)
    segments.physical.accessor.put(segment.key(b"k"), b"v")
    segments.commit({("ver-changelog", 0): 5}, {"in": {0: 1}})
    segments.close()

    reopened = _logical(tmp_path)
    # VS-14: the reference registers the segments on disk again (Kafka's openExisting does not).
    assert reopened.segment_ids() == [3]
    assert reopened.position() == {"in": {0: 1}}
    assert reopened.physical.accessor.get(reopened.get_or_create_segment(3).key(b"k")) == b"v"
    reopened.close()
