"""The reference window stores: rows, segments, expiry, duplicates, restart, crash, restore, offsets, upgrades and
refusals, on both backends (spec/window-store.md, WS-*)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kstate.codecs import changelog as cl
from kstate.codecs import window_keys
from kstate.codecs.header_values import encode_value_timestamp_headers
from kstate.codecs.store_types import DEFAULT_CF, OFFSETS_CF, TIMESTAMPED_CF, TIMESTAMPED_HEADERS_CF, StoreType
from kstate.codecs.timestamped import encode_value_and_timestamp
from kstate.errors import DecodeError, InvalidArgumentError, KStateError, NullKeyError
from kstate.ops import call
from kstate.storage_files import directory_digest
from kstate.stores.api import Backend, ProcessorStateError, RecordContext, StoreStorageError, TopicPartition
from kstate.stores.changelogging import ChangeLoggingWindowBytesStore, RecordContextHolder
from kstate.stores.factory import open_bytes_store
from kstate.stores.families import StoreOptionError
from kstate.stores.restore import restore
from kstate.stores.window import RocksDBWindowStore
from kstate.stores.window_memory import InMemoryWindowStore

T = StoreType
WINDOW_TYPES = (T.WINDOW, T.TIMESTAMPED_WINDOW, T.TIMESTAMPED_WINDOW_WITH_HEADERS)
DATA_CF = {T.WINDOW: DEFAULT_CF, T.TIMESTAMPED_WINDOW: TIMESTAMPED_CF,
           T.TIMESTAMPED_WINDOW_WITH_HEADERS: TIMESTAMPED_HEADERS_CF}
MINUTE = 60_000
# Retention 2 minutes: the default segment interval is max(60000, 60000) = one minute (WS-2).
OPTIONS = {"retention_ms": 2 * MINUTE, "window_size_ms": 1000}
TP = TopicPartition("app-w-changelog", 0)


def row_key(key: bytes, start: int, seqnum: int = 0) -> bytes:
    return window_keys.PLAIN.to_store_key(key, start, seqnum)


def stored(store_type: StoreType, value: bytes, timestamp: int = 7) -> bytes:
    """``value`` in the type's layout (WS-21)."""
    if store_type is T.WINDOW:
        return value
    if store_type is T.TIMESTAMPED_WINDOW:
        return encode_value_and_timestamp(value, timestamp)  # type: ignore[return-value]
    return encode_value_timestamp_headers(value, timestamp, [("h", b"1")])  # type: ignore[return-value]


def open_store(backend: Backend, tmp_path: Path, store_type: StoreType = T.WINDOW, **options: Any) -> Any:
    return open_bytes_store(store_type, backend, name="w", state_dir=tmp_path, options={**OPTIONS, **options})


def segment_dirs(tmp_path: Path) -> list[str]:
    directory = tmp_path / "app" / "0_0" / "w"
    return sorted(p.name for p in directory.iterdir()) if directory.is_dir() else []


BACKENDS = list(Backend)


# --- rows and segments --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("store_type", WINDOW_TYPES, ids=lambda t: t.value)
def test_each_segment_holds_the_plain_store_keys_in_the_type_s_family(tmp_path: Path, store_type: StoreType) -> None:
    """WS-3, WS-5, WS-21, WS-27: rows ``[key][start][0]`` in ``<store>.<segment start>``, in the data family."""
    store = open_store(Backend.ROCKSDB, tmp_path, store_type)
    store.put(b"a", stored(store_type, b"1"), 5)
    store.put(b"b", stored(store_type, b"2"), MINUTE + 5)
    store.put(b"a", stored(store_type, b"3"), MINUTE + 5)
    rows = store.segment_rows()
    assert list(rows) == ["w.0", f"w.{MINUTE}"]
    assert rows["w.0"][DATA_CF[store_type]] == [(row_key(b"a", 5), stored(store_type, b"1"))]
    assert rows[f"w.{MINUTE}"][DATA_CF[store_type]] == [
        (row_key(b"a", MINUTE + 5), stored(store_type, b"3")), (row_key(b"b", MINUTE + 5), stored(store_type, b"2"))]
    assert all(OFFSETS_CF in families for families in rows.values())
    store.close()
    assert segment_dirs(tmp_path) == ["w.0", f"w.{MINUTE}"]  # named by segment start, not id (LAY-3)


def test_the_segment_interval_option_names_the_directories(tmp_path: Path) -> None:
    """WS-2, WS-5: segment id = start / interval; the directory is named id × interval."""
    store = open_store(Backend.ROCKSDB, tmp_path, segment_interval_ms=1000)
    for start in (999, 1000, 2500):
        store.put(b"k", b"v", start)
    assert store.segment_names() == ["w.0", "w.1000", "w.2000"]
    store.close()


def test_options_are_checked_before_anything_is_created(tmp_path: Path) -> None:
    """WS-2, WS-35: bad options are refused with a typed error; no directory is left behind."""
    for options in ({"retention_ms": -1, "window_size_ms": 0}, {"retention_ms": 10, "window_size_ms": 11},
                    {"retention_ms": 10, "window_size_ms": 1, "segment_interval_ms": 0}):
        with pytest.raises(InvalidArgumentError):
            open_bytes_store(T.WINDOW, Backend.ROCKSDB, name="w", state_dir=tmp_path, options=options)
        with pytest.raises(InvalidArgumentError):
            open_bytes_store(T.WINDOW, Backend.MEMORY, name="w", options=options)
    with pytest.raises(StoreOptionError):
        open_bytes_store(T.WINDOW, Backend.MEMORY, name="w", options={"window_size_ms": 1})
    with pytest.raises(StoreOptionError):
        open_bytes_store(T.WINDOW, Backend.MEMORY, name="w", options={**OPTIONS, "grace_ms": 1})
    assert not any(tmp_path.iterdir())
    assert RocksDBWindowStore(
        "w", tmp_path / "t", retention_ms=10 * MINUTE, window_size_ms=1).segment_interval == 5 * MINUTE


# --- reads and their order -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.value)
def test_fetches_answer_in_kafka_s_order(tmp_path: Path, backend: Backend) -> None:
    """WS-11..WS-15, WS-18: single-key by start; key ranges per segment (RocksDB) or per start (memory)."""
    store = open_store(backend, tmp_path)
    store.put(b"b", b"b1", 1000)
    store.put(b"a", b"a1", 1000)
    store.put(b"a", b"a2", MINUTE + 1000)
    store.put(b"b", b"b2", 2000)
    assert store.fetch(b"a", 1000) == b"a1" and store.fetch(b"a", 2000) is None
    assert store.fetch_range(b"a", 0, 10 * MINUTE) == [(1000, b"a1"), (MINUTE + 1000, b"a2")]
    assert store.fetch_range(b"a", 0, 10 * MINUTE, backward=True) == [(MINUTE + 1000, b"a2"), (1000, b"a1")]
    assert store.fetch_range(b"a", 1001, MINUTE) == []
    assert store.fetch_range(b"a", 5, 1) == []
    if backend is Backend.ROCKSDB:
        expected = [(b"a", 1000, b"a1"), (b"b", 1000, b"b1"), (b"b", 2000, b"b2"), (b"a", MINUTE + 1000, b"a2")]
    else:
        expected = [(b"a", 1000, b"a1"), (b"b", 1000, b"b1"), (b"b", 2000, b"b2"), (b"a", MINUTE + 1000, b"a2")]
    assert store.fetch_all(0, 10 * MINUTE) == expected
    assert store.all() == expected
    assert store.all(backward=True) == expected[::-1]
    assert store.fetch_keys(b"a", b"b", 0, 10 * MINUTE) == expected
    assert store.fetch_keys(b"b", None, 0, 1500) == [(b"b", 1000, b"b1")]
    assert store.fetch_keys(None, b"a", 0, 10 * MINUTE, backward=True) == [(b"a", MINUTE + 1000, b"a2"), (b"a", 1000, b"a1")]
    assert store.fetch_keys(b"b", b"a", 0, 10 * MINUTE) == []  # keyFrom > keyTo (WS-13)
    store.close()


def test_a_key_range_reads_segment_by_segment_on_rocksdb_and_start_by_start_in_memory(tmp_path: Path) -> None:
    """WS-13 vs WS-18: within one segment RocksDB orders by key first; memory always by start first."""
    rocks, memory = open_store(Backend.ROCKSDB, tmp_path), open_store(Backend.MEMORY, tmp_path)
    for store in (rocks, memory):
        store.put(b"a", b"a2", 2000)
        store.put(b"b", b"b1", 1000)
    assert rocks.fetch_all(0, MINUTE) == [(b"a", 2000, b"a2"), (b"b", 1000, b"b1")]
    assert memory.fetch_all(0, MINUTE) == [(b"b", 1000, b"b1"), (b"a", 2000, b"a2")]
    rocks.close()


def test_a_single_key_fetch_skips_longer_keys_in_the_byte_range(tmp_path: Path) -> None:
    """WS-11: the fixed-size range of ``a`` also covers ``a\\x00...``; the key check drops them."""
    store = open_store(Backend.ROCKSDB, tmp_path)
    store.put(b"a\x00\x00\x00\x00\x00\x00\x00\x00", b"long", 1000)
    store.put(b"a", b"short", 1000)
    assert store.fetch_range(b"a", 0, 10_000) == [(1000, b"short")]
    store.close()


# --- expiry --------------------------------------------------------------------------------------------------------


def test_rocksdb_drops_puts_into_expired_segments_and_deletes_them(tmp_path: Path) -> None:
    """WS-6, WS-7, WS-8, WS-10, WS-11, WS-15, WS-38."""
    store = open_store(Backend.ROCKSDB, tmp_path)
    store.put(b"k", b"old", 1000)
    store.put(b"k", b"new", 4 * MINUTE)  # T = 4 min: live segments from segmentId(2 min) = 2
    assert store.observed_stream_time == 4 * MINUTE
    assert segment_dirs(tmp_path) == [f"w.{4 * MINUTE}"]  # segment 0 deleted when segment 4 was fetched
    store.put(b"k", b"late", MINUTE + 1)  # segment 1 < 2: dropped
    assert store.dropped_records == 1 and segment_dirs(tmp_path) == [f"w.{4 * MINUTE}"]
    store.put(b"k", b"live", 2 * MINUTE)  # segment 2 is live, though its start is not after T - R
    assert store.fetch(b"k", 2 * MINUTE) is None  # 2 min < T - R + 1 (WS-10)
    assert store.fetch_range(b"k", 0, 10 * MINUTE) == [(4 * MINUTE, b"new")]
    assert store.all() == [(b"k", 4 * MINUTE, b"new")]
    assert store.fetch_all(0, 2 * MINUTE) == []  # to < actualFrom
    store.close()


def test_in_memory_expiry_is_per_window_start(tmp_path: Path) -> None:
    """WS-17, WS-19, WS-20: dropped at start <= T - R; forgotten below T - R + 1."""
    store = open_store(Backend.MEMORY, tmp_path)
    store.put(b"k", b"a", 1000)
    store.put(b"k", b"b", 2 * MINUTE + 1000)  # T - R = 1000
    assert store.dropped_records == 0
    store.put(b"k", b"c", 1000)  # 1000 <= T - R: dropped
    assert store.dropped_records == 1
    assert store.fetch(b"k", 1000) is None and store.window_starts() == (2 * MINUTE + 1000,)
    store.put(b"k", b"d", 1001)
    assert store.all() == [(b"k", 1001, b"d"), (b"k", 2 * MINUTE + 1000, b"b")]


def test_a_negative_window_start_is_forgotten_in_memory_and_not_answered_by_all(tmp_path: Path) -> None:
    """WS-39 (tentative), WS-15, WS-17."""
    rocks, memory = open_store(Backend.ROCKSDB, tmp_path), open_store(Backend.MEMORY, tmp_path)
    for store in (rocks, memory):
        store.put(b"k", b"n", -5)
        assert store.all() == []
    assert rocks.segment_names() == ["w.0"] and memory.window_starts() == ()
    rocks.close()


# --- duplicates ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.value)
def test_duplicates_get_their_own_seqnum_and_a_null_is_a_no_op(tmp_path: Path, backend: Backend) -> None:
    """WS-4, WS-9, WS-16, WS-10, WS-19."""
    store = open_store(backend, tmp_path, retain_duplicates=True)
    store.put(b"k", b"1", 1000)
    store.put(b"k", b"2", 1000)
    store.put(b"k", None, 1000)  # no-op, the seqnum does not move
    store.put(b"j", b"3", 1000)
    assert store.seqnum == 3
    assert store.fetch_range(b"k", 0, MINUTE) == [(1000, b"1"), (1000, b"2")]
    assert store.fetch_keys(b"j", b"k", 0, MINUTE, backward=True) == [(b"k", 1000, b"2"), (b"k", 1000, b"1"),
                                                                     (b"j", 1000, b"3")]
    if backend is Backend.ROCKSDB:
        rows = store.segment_rows()["w.0"][DEFAULT_CF]
        assert rows == [(row_key(b"j", 1000, 3), b"3"), (row_key(b"k", 1000, 1), b"1"), (row_key(b"k", 1000, 2), b"2")]
        assert store.fetch(b"j", 1000) == b"3" and store.fetch(b"k", 1000) is None  # the current seqnum is 3
        store.close()
    else:
        assert store.fetch(b"j", 1000) is None  # the inner keys carry a seqnum (WS-19)


def test_the_seqnum_wraps_to_zero_after_integer_max(tmp_path: Path) -> None:
    """WS-4 via WIN-6: ``(seqnum + 1) & 0x7FFFFFFF``."""
    store = open_store(Backend.MEMORY, tmp_path, retain_duplicates=True)
    store.seqnum = 0x7FFFFFFF
    store.put(b"k", b"v", 1000)
    assert store.seqnum == 0 and store.fetch_range(b"k", 0, MINUTE) == [(1000, b"v")]


def test_a_null_put_deletes_the_row_without_duplicates(tmp_path: Path) -> None:
    """WS-9."""
    for backend in BACKENDS:
        store = open_store(backend, tmp_path / backend.value)
        store.put(b"k", b"v", 1000)
        store.put(b"k", None, 1000)
        assert store.all() == [] and store.fetch(b"k", 1000) is None
        store.close()


# --- restart and crash ---------------------------------------------------------------------------------------------


def test_a_restart_reopens_every_segment_and_resets_time_and_seqnum(tmp_path: Path) -> None:
    """WS-31, WS-4, WS-6."""
    store = open_store(Backend.ROCKSDB, tmp_path, retain_duplicates=True)
    store.put(b"k", b"1", 1000)
    store.put(b"k", b"2", MINUTE)
    store.close()
    again = open_store(Backend.ROCKSDB, tmp_path, retain_duplicates=True)
    assert again.segment_names() == ["w.0", f"w.{MINUTE}"]
    assert again.observed_stream_time == -1 and again.seqnum == 0
    assert again.fetch_range(b"k", 0, MINUTE) == [(1000, b"1"), (MINUTE, b"2")]
    again.put(b"k", b"3", 1000)  # seqnum 1 again: replaces the first row (WS-4)
    assert again.fetch_range(b"k", 0, 1000) == [(1000, b"3")]
    again.close()


def _committed_then_staged(tmp_path: Path, offset: int) -> Any:
    """A RocksDB window store with a row committed at ``offset`` in segment 0, then a row not yet committed in the
    next segment (a segment the commit did not reach)."""
    store = open_store(Backend.ROCKSDB, tmp_path)
    store.put(b"k", b"1", 1000)
    store.commit({TP: offset})
    store.put(b"k", b"2", MINUTE)
    return store


def test_a_crash_loses_staged_rows_and_the_reopen_is_refused(tmp_path: Path) -> None:
    """WS-30, WS-31: every segment is abandoned; an unclean segment refuses the open unless told otherwise."""
    store = _committed_then_staged(tmp_path, 1)
    store.simulate_crash()
    assert not store.is_open
    with pytest.raises(ProcessorStateError):
        open_store(Backend.ROCKSDB, tmp_path)
    reopened = open_bytes_store(T.WINDOW, Backend.ROCKSDB, name="w", state_dir=tmp_path, options=OPTIONS,
                                ignore_invalid_state=True)
    assert reopened.all() == [(b"k", 1000, b"1")]  # type: ignore[attr-defined]
    reopened.close()


# --- offsets and position ------------------------------------------------------------------------------------------


def test_every_segment_commits_offsets_and_the_position_merges_at_open(tmp_path: Path) -> None:
    """WS-28, WS-29: offsets in every segment database; the newest segment's offset answers; positions merge."""
    store = open_store(Backend.ROCKSDB, tmp_path)
    assert store.committed_offset(TP) is None
    store.set_record_context(RecordContext(timestamp=1, topic="in", partition=0, offset=4))
    store.put(b"k", b"1", 1000)
    store.commit({TP: 10})
    store.set_record_context(RecordContext(timestamp=1, topic="in", partition=1, offset=9))
    store.put(b"k", b"2", MINUTE)
    store.commit({TP: 11})
    assert store.segment_committed_offsets() == {"w.0": {TP: 11}, f"w.{MINUTE}": {TP: 11}}
    assert store.committed_offset(TP) == 11
    store.close()
    again = open_store(Backend.ROCKSDB, tmp_path)
    assert again.position == {"in": {0: 4, 1: 9}}
    again.close()


def test_a_segment_created_after_a_commit_has_no_offset_and_the_newest_one_with_an_offset_answers(tmp_path: Path) -> None:
    """WS-28: ``committedOffset`` walks the segments newest first."""
    store = _committed_then_staged(tmp_path, 3)
    assert store.segment_committed_offsets()[f"w.{MINUTE}"] == {}
    assert store.committed_offset(TP) == 3
    store.close()


def test_the_in_memory_store_manages_no_offsets(tmp_path: Path) -> None:
    """WS-36."""
    store = open_store(Backend.MEMORY, tmp_path)
    store.put(b"k", b"v", 1)
    store.commit({TP: 5})
    assert not store.manages_offsets() and store.committed_offset(TP) is None and not store.persistent()
    store.close()
    assert not store.is_open


# --- upgrades ------------------------------------------------------------------------------------------------------


def test_every_segment_of_a_plain_store_upgrades_to_timestamped(tmp_path: Path) -> None:
    """WS-27: each segment opens in upgrade mode and reads its plain rows as ``[-1][value]``."""
    plain = open_store(Backend.ROCKSDB, tmp_path)
    plain.put(b"k", b"a", 1000)
    plain.put(b"k", b"b", MINUTE + 1000)
    plain.close()
    upgraded = open_store(Backend.ROCKSDB, tmp_path, T.TIMESTAMPED_WINDOW)
    assert upgraded.segment_modes() == {"w.0": "upgrade", f"w.{MINUTE}": "upgrade"}
    assert upgraded.fetch_range(b"k", 0, 10 * MINUTE) == [
        (1000, encode_value_and_timestamp(b"a", -1)), (MINUTE + 1000, encode_value_and_timestamp(b"b", -1))]
    upgraded.put(b"k", stored(T.TIMESTAMPED_WINDOW, b"c"), MINUTE + 1000)
    rows = upgraded.segment_rows()[f"w.{MINUTE}"]
    assert rows[TIMESTAMPED_CF] == [(row_key(b"k", MINUTE + 1000), stored(T.TIMESTAMPED_WINDOW, b"c"))]
    upgraded.close()


def test_every_segment_of_a_timestamped_store_upgrades_to_headers(tmp_path: Path) -> None:
    """WS-27: header-aware segments read timestamped rows with empty headers (``00`` prefix)."""
    old = open_store(Backend.ROCKSDB, tmp_path, T.TIMESTAMPED_WINDOW)
    for start in (1000, MINUTE + 1000):
        old.put(b"k", stored(T.TIMESTAMPED_WINDOW, b"v"), start)
    old.close()
    upgraded = open_store(Backend.ROCKSDB, tmp_path, T.TIMESTAMPED_WINDOW_WITH_HEADERS)
    assert set(upgraded.segment_modes().values()) == {"upgrade"} and len(upgraded.segment_modes()) == 2
    assert [v for _, v in upgraded.fetch_range(b"k", 0, 10 * MINUTE)] == [b"\x00" + stored(T.TIMESTAMPED_WINDOW, b"v")] * 2
    upgraded.close()


# --- change logging ------------------------------------------------------------------------------------------------


def logged(backend: Backend, tmp_path: Path, store_type: StoreType = T.WINDOW,
           **options: Any) -> tuple[ChangeLoggingWindowBytesStore, list[cl.ChangelogRecord], RecordContextHolder]:
    sink: list[cl.ChangelogRecord] = []
    context = RecordContextHolder(RecordContext(timestamp=42, headers=(("c", b"x"),)))
    inner = open_store(backend, tmp_path, store_type, **options)
    return ChangeLoggingWindowBytesStore(inner, store_type, context, sink), sink, context


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.value)
def test_the_logging_layer_counts_its_own_seqnum_and_logs_dropped_and_skipped_puts(tmp_path: Path, backend: Backend) -> None:
    """WS-22: every put logged with the layer's seqnum, also an expired put and a null with duplicates."""
    layer, sink, _ = logged(backend, tmp_path, retain_duplicates=True)
    layer.put(b"k", b"1", 4 * MINUTE)
    layer.put(b"k", None, 4 * MINUTE)  # skipped by the store, a tombstone in the log
    layer.put(b"k", b"2", 1000)  # expired: dropped by the store, logged
    assert [(r.key, r.value, r.timestamp) for r in sink] == [
        (row_key(b"k", 4 * MINUTE, 1), b"1", 42), (row_key(b"k", 4 * MINUTE, 2), None, 42),
        (row_key(b"k", 1000, 3), b"2", 42)]
    # RocksDB counts the dropped put's seqnum before it finds the segment expired; memory checks expiry first.
    assert layer.inner.seqnum == (2 if backend is Backend.ROCKSDB else 1)
    assert layer.fetch_range(b"k", 0, 10 * MINUTE) == [(4 * MINUTE, b"1")]
    layer.close()


@pytest.mark.parametrize("store_type", WINDOW_TYPES, ids=lambda t: t.value)
def test_the_changelog_value_timestamp_and_headers_follow_the_type(tmp_path: Path, store_type: StoreType) -> None:
    """WS-23."""
    layer, sink, _ = logged(Backend.MEMORY, tmp_path, store_type)
    layer.put(b"k", stored(store_type, b"v", 9), 1000)
    layer.put(b"k", None, 1000)
    value_record, tombstone = sink
    assert value_record.key == row_key(b"k", 1000) and value_record.value == b"v"
    expected = {T.WINDOW: (42, ()), T.TIMESTAMPED_WINDOW: (9, ()), T.TIMESTAMPED_WINDOW_WITH_HEADERS: (9, (("h", b"1"),))}
    assert (value_record.timestamp, value_record.headers) == expected[store_type]
    tombstone_headers = (("c", b"x"),) if store_type is T.TIMESTAMPED_WINDOW_WITH_HEADERS else ()
    assert (tombstone.value, tombstone.timestamp, tombstone.headers) == (None, 42, tombstone_headers)


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.value)
def test_a_refused_write_changes_nothing(tmp_path: Path, backend: Backend) -> None:
    """WS-24, WS-35: a value outside the layout, a null key, a bad time: no row, no segment, no record, no seqnum."""
    layer, sink, context = logged(backend, tmp_path, T.TIMESTAMPED_WINDOW, retain_duplicates=True)
    with pytest.raises(DecodeError):
        layer.put(b"k", b"short", 1000)
    with pytest.raises(NullKeyError):
        layer.put(None, stored(T.TIMESTAMPED_WINDOW, b"v"), 1000)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        layer.put(b"k", stored(T.TIMESTAMPED_WINDOW, b"v"), 1 << 63)
    with pytest.raises(InvalidArgumentError):
        layer.put(b"k", "text", 1000)  # type: ignore[arg-type]
    context.current = RecordContext(timestamp=-1)
    with pytest.raises(KStateError):
        layer.put(b"k", None, 1000)  # a tombstone at a negative context timestamp cannot be produced
    assert sink == [] and layer.seqnum == 0 and layer.inner.seqnum == 0 and layer.all() == []
    assert layer.inner.observed_stream_time == -1
    if backend is Backend.ROCKSDB:
        assert layer.inner.segment_names() == [] and segment_dirs(tmp_path) == []
    layer.close()


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.value)
@pytest.mark.parametrize("key", [1 << 40, "k", 7.5], ids=["huge-int", "str", "float"])
def test_a_key_that_is_not_bytes_is_refused_by_the_logging_layer_by_name(
        tmp_path: Path, backend: Backend, key: Any) -> None:
    """WS-35, KV-26: an int key is never ``bytes(key)`` (1 << 40 would allocate a terabyte), a str has no encoding:
    an InvalidArgumentError naming ``key``, nothing written, logged or counted."""
    layer, sink, _context = logged(backend, tmp_path, T.WINDOW, retain_duplicates=True)
    with pytest.raises(InvalidArgumentError) as info:
        layer.put(key, b"v", 1000)
    assert info.value.argument == "key"
    with pytest.raises(InvalidArgumentError):
        layer.check_write(key, b"v", 1000)
    assert sink == [] and layer.seqnum == 0 and layer.all() == []
    layer.close()


@pytest.mark.parametrize("with_segments", [False, True], ids=["new", "existing"])
def test_a_position_path_that_is_a_directory_is_refused_with_a_typed_error(tmp_path: Path, with_segments: bool) -> None:
    """WS-29, KV-25: ``<store>.position`` a directory is refused as a key-value store refuses it (a typed
    StoreStorageError naming the store, not IsADirectoryError), before any segment is opened or created."""
    if with_segments:
        store = open_store(Backend.ROCKSDB, tmp_path)
        store.put(b"k", b"v", 1000)
        store.close()
    (tmp_path / "app" / "0_0" / "w.position").mkdir(parents=True)
    before = directory_digest(tmp_path)
    with pytest.raises(StoreStorageError, match="not a regular file") as info:
        open_store(Backend.ROCKSDB, tmp_path)
    assert info.value.store == "w"
    assert directory_digest(tmp_path) == before


def test_bad_reads_are_typed_errors(tmp_path: Path) -> None:
    """WS-35."""
    for backend in BACKENDS:
        store = open_store(backend, tmp_path / backend.value)
        with pytest.raises(NullKeyError):
            store.fetch(None, 1)
        with pytest.raises(InvalidArgumentError):
            store.fetch_range(b"k", 0, "1")
        with pytest.raises(InvalidArgumentError):
            store.fetch_keys(1, None, 0, 1)
        store.close()
        with pytest.raises(KStateError):
            store.fetch(b"k", 1)


def test_the_changelog_topic_is_compact_delete_with_a_day_more(tmp_path: Path) -> None:
    """WS-32."""
    config = cl.changelog_topic_config(T.TIMESTAMPED_WINDOW, retention_ms=2 * MINUTE, retain_duplicates=True)
    assert config["cleanup.policy"] == "compact,delete" and config["retention.ms"] == str(2 * MINUTE + 86_400_000)
    assert cl.changelog_topic_config(T.WINDOW, retention_ms=1, retain_duplicates=True)["cleanup.policy"] == "delete"


# --- restore -------------------------------------------------------------------------------------------------------


def record(key: bytes, start: int, seqnum: int, value: bytes | None, timestamp: int = 5) -> cl.ChangelogRecord:
    return cl.ChangelogRecord(row_key(key, start, seqnum), value, timestamp, (("r", b"1"),))


@pytest.mark.parametrize("store_type", WINDOW_TYPES, ids=lambda t: t.value)
def test_rocksdb_restore_converts_and_files_rows_by_segment_skipping_expired_ones(
        tmp_path: Path, store_type: StoreType) -> None:
    """WS-25: the batch's largest start first; the changelog seqnum kept; expired segments skipped."""
    store = open_store(Backend.ROCKSDB, tmp_path, store_type)
    records = [record(b"k", 1000, 7, b"old"), record(b"k", MINUTE + 5, 0, b"a"), record(b"k", 4 * MINUTE, 2, b"b")]
    restore(store, store_type, records, batch_size=3)
    assert store.observed_stream_time == 4 * MINUTE
    assert store.segment_names() == [f"w.{4 * MINUTE}"]  # segments 0 and 1 expired at the batch's time
    converted = cl.restore_value(store_type, records[2])
    assert store.segment_rows()[f"w.{4 * MINUTE}"][DATA_CF[store_type]] == [(row_key(b"k", 4 * MINUTE, 2), converted)]
    store.close()


def test_rocksdb_restore_in_small_batches_keeps_what_was_live_then(tmp_path: Path) -> None:
    """WS-25: stream time advances batch by batch; a row live in its batch is kept until a later put expires it."""
    store = open_store(Backend.ROCKSDB, tmp_path)
    restore(store, T.WINDOW, [record(b"k", 1000, 0, b"a"), record(b"k", 4 * MINUTE, 0, b"b")], batch_size=1)
    assert store.segment_names() == [f"w.{4 * MINUTE}"]  # segment 0 made, then dropped by the second batch
    store.close()


def test_in_memory_restore_drops_the_changelog_seqnum(tmp_path: Path) -> None:
    """WS-26."""
    store = open_store(Backend.MEMORY, tmp_path, T.TIMESTAMPED_WINDOW, retain_duplicates=True)
    restore(store, T.TIMESTAMPED_WINDOW, [record(b"k", 1000, 9, b"a"), record(b"k", 1000, 9, b"b")])
    assert store.seqnum == 2
    assert store.fetch_range(b"k", 0, MINUTE) == [(1000, encode_value_and_timestamp(b"a", 5)),
                                                  (1000, encode_value_and_timestamp(b"b", 5))]


def test_a_short_changelog_key_is_refused_before_anything_is_restored(tmp_path: Path) -> None:
    """WS-35."""
    for backend in BACKENDS:
        store = open_store(backend, tmp_path / backend.value)
        with pytest.raises(DecodeError):
            restore(store, T.WINDOW, [record(b"k", 1000, 0, b"a"), cl.ChangelogRecord(b"short", b"v", 1)])
        assert store.all() == []
        store.close()


def test_restore_through_the_ops_then_dump_by_segment(tmp_path: Path) -> None:
    """WS-25, WS-28 through ``store.restore`` (each batch committed) and ``store.dump``."""
    opened = call("store.open", {"store_type": "window", "backend": "rocksdb", "name": "w", "state_dir": str(tmp_path),
                                 "options": OPTIONS})
    handle = opened["handle"]
    records = [{"key": row_key(b"k", start, 0).hex(), "value": "0a", "timestamp": 1} for start in (1000, MINUTE)]
    assert call("store.restore", {"handle": handle, "records": records, "batch_size": 1, "commit_offsets": True}) == {
        "restored": 2, "batches": 2}
    assert call("store.committed_offset", {"handle": handle, "topic": "app-w-changelog", "partition": 0}) == {"offset": 1}
    dump = call("store.dump", {"handle": handle})["segments"]
    assert sorted(dump) == ["w.0", f"w.{MINUTE}"]
    assert dump["w.0"][DEFAULT_CF] == [[row_key(b"k", 1000, 0).hex(), "0a"]]
    assert call("window_store.fetch_range", {"handle": handle, "key": "6b", "from_ms": 0, "to_ms": MINUTE}) == {
        "entries": [[1000, "0a"], [MINUTE, "0a"]]}
    assert call("store.close", {"handle": handle}) == {}
    assert sorted(call("store.dump", {"store_type": "window", "state_dir": str(tmp_path), "name": "w"})["segments"]) == [
        "w.0", f"w.{MINUTE}"]


def test_a_window_op_on_a_key_value_store_is_refused_by_name() -> None:
    """OPS-2: ``window_store.*`` needs a window store."""
    handle = call("store.open", {"store_type": "kv", "backend": "memory", "name": "s"})["handle"]
    out = call("window_store.put", {"handle": handle, "key": "00", "value": "00", "window_start": 1})
    assert out["error"]["type"] == "InvalidStateStoreError" and "window" in out["error"]["message"]
    assert call("store.open", {"store_type": "window", "backend": "memory", "caching": True,
                               "options": OPTIONS})["error"]["type"] == "InvalidArgumentError"  # WS-33


def test_the_in_memory_store_classes_share_one_implementation() -> None:
    """WS-1: the in-memory store of every window type is ``InMemoryWindowStore`` holding the type's bytes."""
    for store_type in WINDOW_TYPES:
        store = open_bytes_store(store_type, Backend.MEMORY, name="w", options=OPTIONS)
        assert isinstance(store, InMemoryWindowStore) and store.store_type is store_type  # type: ignore[attr-defined]


class _NoCacheWindowStore(RocksDBWindowStore):
    """Every put through the full expiry path: the oracle of the put cache."""

    def put(self, key: bytes, value: bytes | None, window_start: int) -> None:
        self._last_segment_time = -2  # never the stream time: the cached segment is never reused
        super().put(key, value, window_start)


def test_the_put_cache_answers_as_the_full_expiry_path(tmp_path: Path) -> None:
    """WS-6, WS-7, WS-8: the reused segment of the previous put changes neither rows nor segments nor drops."""
    import random

    rng = random.Random(3)
    fast = RocksDBWindowStore("w", tmp_path / "fast", retention_ms=5000, window_size_ms=10, segment_interval_ms=1000,
                              retain_duplicates=True)
    slow = _NoCacheWindowStore("w", tmp_path / "slow", retention_ms=5000, window_size_ms=10, segment_interval_ms=1000,
                               retain_duplicates=True)
    clock = 0
    for _ in range(1500):
        clock += rng.choice((0, 0, 0, 1, 3, 40))
        start = max(-50, clock - rng.choice((0, 0, 10, 900, 4500, 6000)))
        key, value = bytes([rng.randrange(4)]), bytes([rng.randrange(256)]) if rng.random() > 0.1 else None
        fast.put(key, value, start)
        slow.put(key, value, start)
    assert fast.segment_rows() == slow.segment_rows() and fast.dropped_records == slow.dropped_records > 0
    assert fast.all() == slow.all() and fast.fetch_all(0, clock, backward=True) == slow.fetch_all(0, clock, backward=True)
    fast.close()
    slow.close()


def test_a_legacy_position_file_is_merged_and_a_bad_one_refuses_the_open(tmp_path: Path) -> None:
    """WS-29: ``maybeMigrateExistingPositionFile`` merges ``<store>.position`` (and leaves it); unreadable, refused."""
    from kstate.storage_files import position_file_path, write_position_file

    task_dir = tmp_path / "app" / "0_0"
    task_dir.mkdir(parents=True)
    write_position_file(task_dir, "w", {"in": {0: 7}})
    store = open_store(Backend.ROCKSDB, tmp_path)
    assert store.position == {"in": {0: 7}} and position_file_path(task_dir, "w").exists()
    store.close()
    position_file_path(task_dir, "w").write_text("not a checkpoint")
    with pytest.raises(ProcessorStateError):
        open_store(Backend.ROCKSDB, tmp_path)
