"""Unit tests of the session stores (spec/session-store.md, SS-*): both backends, rows per segment, findSessions,
order, expiry, restart, crash, restore, offsets per segment, the header-aware upgrade and refusals."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from kstate.codecs import changelog as cl
from kstate.codecs.header_values import encode_aggregation_with_headers
from kstate.codecs.store_types import DEFAULT_CF, OFFSETS_CF, SESSION_HEADERS_CF, StoreType
from kstate.errors import InvalidArgumentError, KStateError, NullKeyError
from kstate.storage_files import directory_digest
from kstate.stores.api import (
    Backend,
    ProcessorStateError,
    RecordContext,
    StoreCorruptedError,
    TopicPartition,
    UnknownColumnFamilyError,
)
from kstate.stores.changelogging import RecordContextHolder
from kstate.stores.factory import open_bytes_store, task_directory
from kstate.stores.families import StoreOptionError, store_classes
from kstate.stores.restore import restore
from kstate.stores.session import (
    ChangeLoggingSessionBytesStore,
    InMemorySessionStore,
    InvalidSessionWindowError,
    ReadOnlySessionStoreWithHeaders,
    RocksDBSessionStore,
    RocksDBSessionStoreWithHeaders,
    SessionOperations,
    SessionRecord,
)

MAX = 2**63 - 1
TP = TopicPartition("app-s-changelog", 0)


def key(k: bytes, start: int, end: int) -> bytes:
    """SS-1 / SESS-1, written out: ``[key][end int64 BE][start int64 BE]``."""
    return k + end.to_bytes(8, "big", signed=True) + start.to_bytes(8, "big", signed=True)


def rows(records: Iterator[SessionRecord]) -> list[tuple[bytes, int, int, bytes]]:
    return [(r.key, r.start, r.end, r.value) for r in records]


@pytest.fixture
def task(tmp_path: Path) -> Path:
    return task_directory(tmp_path, "app", "0_0")


def open_store(backend: Backend, task: Path, retention: int = 600_000, interval: int | None = None,
               store_type: StoreType = StoreType.SESSION, **kwargs: object) -> SessionOperations:
    options: dict[str, object] = {"retention_ms": retention}
    if interval is not None:
        options["segment_interval_ms"] = interval
    store = open_bytes_store(store_type, backend, name="s", state_dir=task.parent.parent, options=options, **kwargs)
    assert isinstance(store, SessionOperations)
    return store


BACKENDS = list(Backend)


# --- keys, values, segments -----------------------------------------------------------------------------------


def test_rows_per_segment_are_the_session_keys(task: Path) -> None:
    """SS-1, SS-10, SS-11: default interval 300000 for retention 600000; the END picks the segment."""
    store = open_store(Backend.ROCKSDB, task)
    assert isinstance(store, RocksDBSessionStore) and store.segment_interval_ms == 300_000
    store.put(b"k", 0, 10, b"a")
    store.put(b"k", 250_000, 300_000, b"b")  # starts in segment 0, ends in segment 1
    store.put(b"j", 5, 5, b"c")
    segments = store.segment_rows()
    assert sorted(segments) == ["s.0", "s.300000"]
    assert segments["s.0"][DEFAULT_CF] == [(key(b"j", 5, 5), b"c"), (key(b"k", 0, 10), b"a")]
    assert segments["s.300000"][DEFAULT_CF] == [(key(b"k", 250_000, 300_000), b"b")]
    store.close()
    assert sorted(p.name for p in (task / "s").iterdir()) == ["s.0", "s.300000"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_overlap_rule_edges(task: Path, backend: Backend) -> None:
    """SS-5: end >= earliest_end and start <= latest_start, both inclusive; other keys never answered."""
    store = open_store(backend, task)
    for k, s, e, v in [(b"k", 0, 10, b"1"), (b"k", 20, 30, b"2"), (b"k", 40, 40, b"3"), (b"k", 50, 70, b"4"),
                       (b"k\x00", 0, 35, b"5"), (b"l", 25, 35, b"6")]:
        store.put(k, s, e, v)
    assert rows(store.find_sessions(b"k", 30, 40)) == [(b"k", 20, 30, b"2"), (b"k", 40, 40, b"3")]
    assert rows(store.find_sessions(b"k", 31, 39)) == []
    assert rows(store.find_sessions(b"k", 10, 0)) == [(b"k", 0, 10, b"1")]
    assert rows(store.find_sessions(b"k", 70, 50)) == [(b"k", 50, 70, b"4")]
    assert rows(store.find_sessions(b"k", 71, MAX)) == []
    assert rows(store.find_sessions(b"k", 30, 40, backward=True)) == [(b"k", 40, 40, b"3"), (b"k", 20, 30, b"2")]
    assert rows(store.fetch(b"k")) == [(b"k", 0, 10, b"1"), (b"k", 20, 30, b"2"), (b"k", 40, 40, b"3"),
                                       (b"k", 50, 70, b"4")]
    store.close()


def test_orders_differ_between_backends(task: Path) -> None:
    """SS-6 (segment, key, end, start) and SS-7 (end, key, start descending); backward reverses each."""
    puts = [(b"c", 0, 10, b"1"), (b"b", 5, 10, b"2"), (b"b", 0, 10, b"3"), (b"b", 0, 400_000, b"4"),
            (b"a", 350_000, 350_000, b"5")]
    results = {}
    for backend in BACKENDS:
        store = open_store(backend, task)
        for p in puts:
            store.put(*p)
        results[backend] = (rows(store.fetch_range(b"a", b"c")), rows(store.fetch_range(b"a", b"c", backward=True)),
                            rows(store.find_sessions_range(None, None, 0, MAX)))
        store.close()
    rocks = [(b"b", 0, 10, b"3"), (b"b", 5, 10, b"2"), (b"c", 0, 10, b"1"), (b"a", 350_000, 350_000, b"5"),
             (b"b", 0, 400_000, b"4")]
    assert results[Backend.ROCKSDB] == (rocks, rocks[::-1], rocks)
    memory = [(b"b", 5, 10, b"2"), (b"b", 0, 10, b"3"), (b"c", 0, 10, b"1"), (b"a", 350_000, 350_000, b"5"),
              (b"b", 0, 400_000, b"4")]
    memory_back = [(b"b", 0, 400_000, b"4"), (b"a", 350_000, 350_000, b"5"), (b"c", 0, 10, b"1"),
                   (b"b", 0, 10, b"3"), (b"b", 5, 10, b"2")]
    assert results[Backend.MEMORY] == (memory, memory_back, memory)


@pytest.mark.parametrize("backend", BACKENDS)
def test_invalid_key_range(task: Path, backend: Backend, caplog: pytest.LogCaptureFixture) -> None:
    """SS-9: from > to answers nothing with the WARN; the in-memory fetch(from > to) throws when not empty."""
    store = open_store(backend, task)
    assert rows(store.fetch_range(b"b", b"a")) == []  # empty store: nothing to throw on
    store.put(b"a", 0, 1, b"v")
    with caplog.at_level(logging.WARNING, "kstate.stores"):
        assert rows(store.find_sessions_range(b"b", b"a", 0, MAX)) == []
    assert "invalid key range" in caplog.text
    if backend is Backend.MEMORY:
        with pytest.raises(InvalidArgumentError):
            store.fetch_range(b"b", b"a")
    else:
        assert rows(store.fetch_range(b"b", b"a")) == []
    store.close()


# --- refusals -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_bad_windows_are_refused_and_change_nothing(task: Path, backend: Backend) -> None:
    """SS-3, SS-28: start > end, start < 0, a null key, non-long times: typed errors, neither store nor log changes."""
    inner = open_store(backend, task)
    log: list[cl.ChangelogRecord] = []
    store = ChangeLoggingSessionBytesStore(inner, StoreType.SESSION, RecordContextHolder(RecordContext(1)), log)
    with pytest.raises(InvalidSessionWindowError, match="endMs"):
        store.put(b"k", 10, 5, b"v")
    with pytest.raises(InvalidSessionWindowError, match="startMs"):
        store.put(b"k", -1, 5, b"v")
    with pytest.raises(NullKeyError):
        store.put(None, 0, 5, b"v")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        store.put(b"k", 0, 2**63, b"v")
    with pytest.raises(InvalidArgumentError):
        store.put(b"k", 0, 5, "v")  # type: ignore[arg-type]
    with pytest.raises(InvalidSessionWindowError):
        store.remove(b"k", 10, 5)
    assert log == [] and rows(inner.fetch_range(None, None)) == []
    assert inner.observed_stream_time == -1
    if backend is Backend.ROCKSDB:
        with pytest.raises(InvalidSessionWindowError):  # upperRangeFixedSize: SessionWindow(-1, MAX)
            inner.find_sessions(b"k", 0, -1)
    else:
        assert rows(inner.find_sessions(b"k", 0, -1)) == []
    assert issubclass(InvalidSessionWindowError, KStateError)
    store.close()


def test_options_are_checked(task: Path) -> None:
    """SS-11: retention required and non-negative, interval >= 1, unknown options refused by name."""
    classes = store_classes(StoreType.SESSION)
    with pytest.raises(StoreOptionError, match="retention_ms"):
        classes.check_options({})
    with pytest.raises(StoreOptionError, match="window_size_ms"):
        classes.check_options({"retention_ms": 1, "window_size_ms": 3})
    with pytest.raises(InvalidArgumentError, match="retention"):
        open_store(Backend.MEMORY, task, retention=-1)
    with pytest.raises(InvalidArgumentError, match="segment"):
        open_store(Backend.ROCKSDB, task, retention=100, interval=0)


def test_a_negative_context_timestamp_refuses_the_write(task: Path) -> None:
    """SS-28: the changelog record is built first; a write it refuses reaches neither store nor log."""
    inner = open_store(Backend.ROCKSDB, task)
    log: list[cl.ChangelogRecord] = []
    store = ChangeLoggingSessionBytesStore(inner, StoreType.SESSION, RecordContextHolder(RecordContext(-5)), log)
    with pytest.raises(KStateError, match="Invalid timestamp"):
        store.put(b"k", 0, 5, b"v")
    assert log == [] and inner.fetch_session(b"k", 0, 5) is None and inner.segment_rows() == {}
    store.close()


# --- expiry -----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_expiry_by_observed_stream_time(task: Path, backend: Backend) -> None:
    """SS-12..SS-17: reads skip ends < observed - retention + 1, a late put is dropped and counted."""
    store = open_store(backend, task, retention=100, interval=50)
    store.put(b"k", 0, 10, b"a")
    store.put(b"k", 100, 120, b"b")
    store.put(b"k", 200, 230, b"c")
    store.put(b"k", 0, 20, b"d")
    assert store.observed_stream_time == 230 and store.dropped_records == 1
    assert rows(store.fetch(b"k")) == [(b"k", 200, 230, b"c")]
    assert store.fetch_session(b"k", 100, 120) is None
    assert store.fetch_session(b"k", 200, 230) == b"c"
    if isinstance(store, RocksDBSessionStore):
        assert sorted(store.segment_rows()) == ["s.100", "s.200"]  # s.0 deleted (SS-15)
        assert not (task / "s" / "s.0").exists()
    store.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_live_bound_wraps_as_a_java_long(task: Path, backend: Backend) -> None:
    """SS-13, SS-17: retention 0 and a session ending at Long.MAX. RocksDB: observed - retention + 1 wraps to
    Long.MIN, so the session is answered (unwrapped, the bound MAX + 1 would skip it). In memory every put ends at
    or before observed - 0 and is skipped."""
    store = open_store(backend, task, retention=0, interval=MAX)
    store.put(b"k", 0, 5, b"a")
    store.put(b"k", 0, MAX, b"b")
    expected = [(b"k", 0, MAX, b"b")] if backend is Backend.ROCKSDB else []
    assert rows(store.fetch(b"k")) == expected
    store.close()


def test_remove_advances_stream_time_but_creates_no_segment(task: Path) -> None:
    """SS-4, SS-12 (RocksDB): remove moves stream time and deletes only in an open segment."""
    store = open_store(Backend.ROCKSDB, task, retention=100, interval=50)
    assert isinstance(store, RocksDBSessionStore)
    store.put(b"k", 0, 10, b"a")
    store.remove(b"k", 500, 1000)
    assert store.observed_stream_time == 1000 and sorted(store.segment_rows()) == ["s.0"]
    assert rows(store.fetch(b"k")) == []  # expired for reads
    store.close()


def test_stream_time_is_not_persisted(task: Path) -> None:
    """SS-12: a reopened store starts at -1 and answers what it skipped before."""
    store = open_store(Backend.ROCKSDB, task, retention=100, interval=50)
    store.put(b"k", 100, 120, b"b")
    store.put(b"k", 200, 230, b"c")
    assert rows(store.fetch(b"k")) == [(b"k", 200, 230, b"c")]
    store.close()
    store = open_store(Backend.ROCKSDB, task, retention=100, interval=50)
    assert rows(store.fetch(b"k")) == [(b"k", 100, 120, b"b"), (b"k", 200, 230, b"c")]
    store.close()


# --- offsets, crash, restart ----------------------------------------------------------------------------------------


def test_offsets_in_every_segment_and_merged_position(task: Path) -> None:
    """SS-21, SS-23: each segment commits the offsets and the store position; reopened, the positions merge."""
    store = open_store(Backend.ROCKSDB, task)
    assert isinstance(store, RocksDBSessionStore)
    store.set_record_context(RecordContext(1, topic="in", partition=0, offset=4))
    store.put(b"k", 0, 10, b"a")
    store.set_record_context(RecordContext(1, topic="in", partition=1, offset=9))
    store.put(b"k", 0, 300_000, b"b")
    store.commit({TP: 7})
    assert store.committed_offset(TP) == 7
    for segment in store.segments.all_segments():
        assert segment.instance.committed_offset((TP.topic, TP.partition)) == 7
        assert OFFSETS_CF in segment.instance.column_family_rows()
    store.close()
    reopened = open_store(Backend.ROCKSDB, task)
    assert reopened.position == {"in": {0: 4, 1: 9}}
    assert reopened.committed_offset(TP) == 7 and reopened.manages_offsets()
    reopened.put(b"k", 0, 600_000, b"c")  # a new segment holds no offset yet
    assert reopened.committed_offset(TP) == 7
    reopened.close()


def test_crash_loses_staged_writes_in_every_segment(task: Path) -> None:
    """SS-22, SS-20: uncommitted writes are lost; the unclean shutdown refuses the next open, changing nothing."""
    store = open_store(Backend.ROCKSDB, task)
    store.put(b"k", 0, 10, b"a")
    store.put(b"k", 0, 300_000, b"b")
    store.commit({TP: 3})
    store.put(b"k", 20, 30, b"c")
    store.put(b"k", 0, 600_000, b"d")
    assert isinstance(store, RocksDBSessionStore)
    store.simulate_crash()
    before = directory_digest(task)
    with pytest.raises(ProcessorStateError):
        open_store(Backend.ROCKSDB, task)
    assert directory_digest(task) == before
    store = open_store(Backend.ROCKSDB, task, ignore_invalid_state=True)
    assert rows(store.fetch(b"k")) == [(b"k", 0, 10, b"a"), (b"k", 0, 300_000, b"b")]
    assert store.committed_offset(TP) == 3
    store.close()


def test_in_memory_store_keeps_no_offsets(task: Path) -> None:
    """SS-19."""
    store = open_store(Backend.MEMORY, task)
    assert isinstance(store, InMemorySessionStore) and not store.persistent() and not store.manages_offsets()
    store.put(b"k", 0, 1, b"v")
    store.commit({TP: 5})
    assert store.committed_offset(TP) is None
    store.close()
    assert not store.is_open


def test_closed_store_and_iterators(task: Path) -> None:
    """SS-37: closing closes open iterators; a closed store refuses every call."""
    store = open_store(Backend.ROCKSDB, task)
    store.put(b"k", 0, 1, b"v")
    iterator = store.fetch(b"k")
    store.close()
    with pytest.raises(KStateError):
        next(iterator)
    with pytest.raises(KStateError):
        store.fetch(b"k")
    with pytest.raises(KStateError):
        store.put(b"k", 0, 1, b"v")


def test_a_for_loop_reads_the_scan_and_a_close_ends_it(task: Path) -> None:
    """SS-37, KV-12 (issue 35): a ``for`` loop over a RocksDB session iterator reads its scan directly; closing the
    iterator inside the loop ends the loop and releases the segments' cursors, and ``next`` after it refuses. A
    peeked entry is still answered first."""
    store = open_store(Backend.ROCKSDB, task)
    for i in range(4):
        store.put(b"k", i * 10, i * 10 + 1, bytes([i]))
    store.commit({TopicPartition("t", 0): 1})
    iterator = store.fetch(b"k")
    seen = []
    for record in iterator:
        seen.append(record.value)
        iterator.close()
    assert seen == [b"\x00"]
    assert isinstance(store, RocksDBSessionStore)
    assert not any(s.instance.engine._cursors for s in store.segments.all_segments())  # type: ignore[attr-defined]
    with pytest.raises(KStateError):
        next(iterator)
    with pytest.raises(KStateError):
        iterator.peek_next()
    peeked = store.fetch(b"k")
    first = peeked.peek_next()
    assert first is not None and [r.value for r in peeked] == [b"\x00", b"\x01", b"\x02", b"\x03"]
    peeked.close()
    store.close()


# --- restore and changelog ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_restore_advances_stream_time_first(task: Path, backend: Backend) -> None:
    """SS-24, SS-25: the batch's largest end first; expired records are skipped; nothing is logged."""
    store = open_store(backend, task, retention=100, interval=50)
    records = [cl.ChangelogRecord(key(b"k", 0, 10), b"a", 1), cl.ChangelogRecord(key(b"k", 200, 230), b"c", 2),
               cl.ChangelogRecord(key(b"j", 210, 220), b"e", 3), cl.ChangelogRecord(key(b"j", 210, 220), None, 4)]
    restore(store, StoreType.SESSION, records)
    assert rows(store.fetch_range(None, None)) == [(b"k", 200, 230, b"c")]
    if isinstance(store, RocksDBSessionStore):
        assert sorted(store.segment_rows()) == ["s.200"]
    store.close()


@pytest.mark.parametrize("store_type", [StoreType.SESSION, StoreType.SESSION_WITH_HEADERS])
def test_restore_skips_the_wal_in_every_segment_and_flushes_at_its_end(task: Path, store_type: StoreType) -> None:
    """RST-8 for a segmented store: the segments open at restore and those it creates write without the WAL, and
    each is flushed when restore ends, so no family keeps a memtable entry (a session store used to restore
    through the WAL and leave the rows in memtables)."""
    store = open_store(Backend.ROCKSDB, task, retention=10_000, interval=1_000, store_type=store_type)
    assert isinstance(store, RocksDBSessionStore)
    store.put(b"a", 0, 10, b"before")
    store.commit({TP: 0})
    records = [cl.ChangelogRecord(key(b"k", t, t + 5), b"v", t) for t in (0, 1_500, 2_500, 3_500)]
    restore(store, store_type, records,
            after_batch=lambda done: store.commit({TP: done.records}))
    segments = store.segments.all_segments()
    assert [s.name for s in segments] == ["s.0", "s.1000", "s.2000", "s.3000"]
    for segment in segments:
        families = segment.instance.engine._cf_objects  # type: ignore[attr-defined]
        assert {cf: families[cf].property_int_value("rocksdb.num-entries-active-mem-table") for cf in families} \
            == dict.fromkeys(families, 0), segment.name
    assert [r[:3] for r in rows(store.fetch(b"k"))] == [(b"k", t, t + 5) for t in (0, 1_500, 2_500, 3_500)]
    store.close()


def test_restore_of_a_bad_key_writes_nothing(task: Path) -> None:
    """Restore checks every key before writing (a key shorter than 16 bytes cannot be a session key)."""
    store = open_store(Backend.ROCKSDB, task)
    with pytest.raises(KStateError):
        store.restore_batch([(key(b"k", 0, 1), b"v"), (b"short", b"v")])
    assert rows(store.fetch(b"k")) == []
    store.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_changelog_records(task: Path, backend: Backend) -> None:
    """SS-26..SS-28: plain: aggregate at the context timestamp, no headers; headers type: raw aggregation + stored
    headers; tombstones carry the context's headers (headers type only); a dropped put is still logged."""
    context = RecordContextHolder(RecordContext(9, (("h", b"\x01"),)))
    for store_type in (StoreType.SESSION, StoreType.SESSION_WITH_HEADERS):
        log: list[cl.ChangelogRecord] = []
        inner = open_store(backend, task, retention=100, interval=50, store_type=store_type)
        store = store_classes(store_type).logging(inner, store_type, context, log)
        value = b"v" if store_type is StoreType.SESSION else encode_aggregation_with_headers(b"v", [("a", b"x")])
        store.put(b"k", 0, 500, value)
        store.put(b"k", 0, 5, value)  # expired: dropped by the store, logged anyway
        store.remove(b"k", 0, 500)
        headers = () if store_type is StoreType.SESSION else (("a", b"x"),)
        tombstone_headers = () if store_type is StoreType.SESSION else (("h", b"\x01"),)
        assert log == [cl.ChangelogRecord(key(b"k", 0, 500), b"v", 9, headers),
                       cl.ChangelogRecord(key(b"k", 0, 5), b"v", 9, headers),
                       cl.ChangelogRecord(key(b"k", 0, 500), None, 9, tombstone_headers)]
        assert rows(store.fetch(b"k")) == []
        store.close()
        if isinstance(inner, RocksDBSessionStore):
            shutil.rmtree(task / "s")


def test_changelog_topic_config() -> None:
    """SS-29: compact,delete and retention + 1 day, saturating."""
    for store_type in (StoreType.SESSION, StoreType.SESSION_WITH_HEADERS):
        assert cl.changelog_topic_config(store_type, retention_ms=600_000) == {
            "message.timestamp.type": "CreateTime", "cleanup.policy": "compact,delete", "retention.ms": "87000000"}
        assert cl.changelog_topic_config(store_type, retention_ms=MAX)["retention.ms"] == str(MAX)


# --- header-aware stores ----------------------------------------------------------------------------------------------


def test_upgrade_in_every_segment(task: Path) -> None:
    """SS-31, SS-32: each plain segment opens in upgrade mode; reads convert, a point read migrates."""
    plain = open_store(Backend.ROCKSDB, task)
    plain.put(b"k", 0, 10, b"a")
    plain.put(b"k", 0, 300_000, b"b")
    plain.put(b"k", 0, 600_000, b"c")
    plain.close()
    store = open_store(Backend.ROCKSDB, task, store_type=StoreType.SESSION_WITH_HEADERS)
    assert isinstance(store, RocksDBSessionStoreWithHeaders)
    assert store.segment_modes() == {"s.0": "upgrade", "s.300000": "upgrade", "s.600000": "upgrade"}
    assert rows(store.fetch(b"k")) == [(b"k", 0, 10, b"\x00a"), (b"k", 0, 300_000, b"\x00b"),
                                       (b"k", 0, 600_000, b"\x00c")]
    assert store.fetch_session(b"k", 0, 300_000) == b"\x00b"
    segments = store.segment_rows()
    for name, legacy in (("s.0", [(key(b"k", 0, 10), b"a")]), ("s.300000", []), ("s.600000", [(key(b"k", 0, 600_000), b"c")])):
        assert segments[name][DEFAULT_CF] == legacy
    assert segments["s.300000"][SESSION_HEADERS_CF] == [(key(b"k", 0, 300_000), b"\x00b")]
    store.close()
    before = directory_digest(task)
    with pytest.raises(UnknownColumnFamilyError):  # SS-35, SS-20: no downgrade, nothing changed
        open_store(Backend.ROCKSDB, task)
    assert directory_digest(task) == before


def test_an_upgrade_refused_by_a_later_segment_changes_no_earlier_segment(task: Path) -> None:
    """SS-20, KV-57: every segment is checked before any is opened. Found by the state machine: ``s.300000`` holds
    committed offsets and no data (its one session removed), which the header-aware type refuses; ``s.0`` had
    already been given the header family, and the plain store could no longer open it."""
    plain = open_store(Backend.ROCKSDB, task)
    plain.put(b"k", 0, 10, b"a")
    plain.put(b"k", 0, 300_000, b"b")
    plain.commit({TP: 1})
    plain.remove(b"k", 0, 300_000)
    plain.commit({TP: 2})
    plain.close()
    before = directory_digest(task)
    with pytest.raises(StoreCorruptedError, match="offsets ahead of data"):
        open_store(Backend.ROCKSDB, task, store_type=StoreType.SESSION_WITH_HEADERS)
    assert directory_digest(task) == before
    reopened = open_store(Backend.ROCKSDB, task)
    assert rows(reopened.fetch(b"k")) == [(b"k", 0, 10, b"a")]
    reopened.close()


def test_a_fresh_header_store_is_regular_and_restores_headers(task: Path) -> None:
    """SS-31, SS-34: regular mode; restore rebuilds [hsize][headers][aggregation] from the record headers."""
    store = open_store(Backend.ROCKSDB, task, store_type=StoreType.SESSION_WITH_HEADERS)
    restore(store, StoreType.SESSION_WITH_HEADERS, [cl.ChangelogRecord(key(b"k", 0, 5), b"v", 3, (("a", b"x"),))])
    assert store.fetch_session(b"k", 0, 5) == bytes.fromhex("0a020261027876")
    assert isinstance(store, RocksDBSessionStore) and store.segment_modes() == {"s.0": "regular"}
    view = ReadOnlySessionStoreWithHeaders(store)
    decoded = view.fetch_session(b"k", 0, 5)
    assert decoded is not None and decoded.aggregation == b"v" and decoded.headers == [("a", b"x")]
    [session] = view.fetch(b"k")
    assert (session.key, session.start, session.end, session.value) == (b"k", 0, 5, decoded)
    store.close()
