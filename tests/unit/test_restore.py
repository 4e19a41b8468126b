"""Restore of the reference stores from changelog records (spec/restore.md RST-1..RST-7, changelog.md CL-9..CL-11)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kstate.codecs import changelog as cl
from kstate.codecs.header_values import encode_value_timestamp_headers
from kstate.codecs.store_types import BUILT_KV_TYPES, StoreType
from kstate.errors import NullKeyError
from kstate.stores.api import Backend, KeyValueBytesStore
from kstate.stores.changelogging import RecordContextHolder
from kstate.stores.factory import open_kv_store
from kstate.stores.families import changelogging_store
from kstate.stores.kv import RocksDBStore
from kstate.stores.restore import DEFAULT_RESTORE_BATCH_SIZE, RestoreResult, batches_of, convert, converter_for, restore
from kstate_conformance.models.kv import Record as ModelRecord
from kstate_conformance.models.kv import replay

Record = cl.ChangelogRecord
COMBOS = [(t, b) for t in BUILT_KV_TYPES for b in Backend]
FF8 = b"\xff" * 8


def ts8(value: int) -> bytes:
    return value.to_bytes(8, "big", signed=True)


class SpyStore:
    """Records the batches it is given."""

    def __init__(self) -> None:
        self.batches: list[list[tuple[bytes, bytes | None]]] = []

    def restore_batch(self, entries: Sequence[tuple[bytes, bytes | None]]) -> None:
        self.batches.append(list(entries))


def test_converters_are_kafkas_per_store_type() -> None:
    record = Record(b"k", b"v", 77, (("a", b"x"), ("v", b"\x00"), ("a", None)))
    assert converter_for(StoreType.KEY_VALUE)(record) == b"v"
    assert converter_for(StoreType.TIMESTAMPED_KV)(record) == ts8(77) + b"v"
    expected = encode_value_timestamp_headers(b"v", 77, [("a", b"x"), ("v", b"\x00"), ("a", None)])
    assert converter_for(StoreType.TIMESTAMPED_KV_WITH_HEADERS)(record) == expected
    for store_type in BUILT_KV_TYPES:
        assert converter_for(store_type)(Record(b"k", None, 5)) is None
        assert convert(store_type, record) == converter_for(store_type)(record)


def test_empty_values_and_no_headers() -> None:
    record = Record(b"k", b"", 0)
    assert convert(StoreType.TIMESTAMPED_KV, record) == ts8(0)
    assert convert(StoreType.TIMESTAMPED_KV_WITH_HEADERS, record) == b"\x00" + ts8(0)


def test_batches_keep_changelog_order() -> None:
    records = [Record(bytes([i]), b"v", i) for i in range(7)]
    assert [[r.timestamp for r in b] for b in batches_of(records, 3)] == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(batches_of([], 3)) == []
    with pytest.raises(ValueError):
        list(batches_of(records, 0))


def test_restore_hands_each_batch_to_the_store_once() -> None:
    spy = SpyStore()
    records = [Record(b"a", b"1", 5), Record(b"b", None, 6), Record(b"a", b"2", 7)]
    result = restore(spy, StoreType.TIMESTAMPED_KV, records, batch_size=2)  # type: ignore[arg-type]
    assert result == RestoreResult(records=3, batches=2)
    assert spy.batches == [[(b"a", ts8(5) + b"1"), (b"b", None)], [(b"a", ts8(7) + b"2")]]
    assert DEFAULT_RESTORE_BATCH_SIZE == 1000


@pytest.mark.parametrize(("store_type", "backend"), COMBOS, ids=[f"{t.value}-{b.value}" for t, b in COMBOS])
def test_restore_applies_records_in_order(store_type: StoreType, backend: Backend, tmp_path: Path) -> None:
    store = open_kv_store(store_type, backend, name="s", state_dir=tmp_path)
    records = [Record(b"1", b"a", 1), Record(b"2", b"b", 2), Record(b"1", None, 3), Record(b"3", b"c", 4),
               Record(b"3", None, 5), Record(b"3", b"d", 6), Record(b"4", None, 7)]
    assert restore(store, store_type, records, batch_size=3) == RestoreResult(7, 3)
    assert list(store.all()) == [(b"2", convert(store_type, records[1])), (b"3", convert(store_type, records[5]))]
    store.close()


def test_restore_refuses_a_batch_with_a_null_key() -> None:
    store = open_kv_store(StoreType.KEY_VALUE, Backend.MEMORY, name="s")
    with pytest.raises(NullKeyError):
        restore(store, StoreType.KEY_VALUE, [Record(b"a", b"1", 0), Record(None, b"2", 0)])  # type: ignore[arg-type]
    assert list(store.all()) == []


def test_restore_goes_below_the_changelog(tmp_path: Path) -> None:
    inner = open_kv_store(StoreType.KEY_VALUE, Backend.ROCKSDB, name="s", state_dir=tmp_path)
    sink: list[Record] = []
    logged = changelogging_store(inner, StoreType.KEY_VALUE, RecordContextHolder(), sink)
    restore(logged, StoreType.KEY_VALUE, [Record(b"a", b"1", 3)])
    assert sink == [] and logged.get(b"a") == b"1"
    logged.close()


def _rocksdb(store_type: StoreType, path: Path, *, ignore_invalid_state: bool = False) -> RocksDBStore:
    store = open_kv_store(store_type, Backend.ROCKSDB, name="s", state_dir=path, ignore_invalid_state=ignore_invalid_state)
    assert isinstance(store, RocksDBStore)
    return store


def test_restore_batches_are_atomic_with_the_next_commit(tmp_path: Path) -> None:
    """A restored batch is staged and becomes durable, all of it, with the commit that follows (RST-3, KV-50)."""
    store = _rocksdb(StoreType.KEY_VALUE, tmp_path)
    restore(store, StoreType.KEY_VALUE, [Record(b"a", b"1", 0), Record(b"b", b"2", 0)])
    store.simulate_crash()
    store = _rocksdb(StoreType.KEY_VALUE, tmp_path, ignore_invalid_state=True)
    assert list(store.all()) == []
    restore(store, StoreType.KEY_VALUE, [Record(b"a", b"1", 0), Record(b"b", b"2", 0)])
    store.commit({})
    store.simulate_crash()
    store = _rocksdb(StoreType.KEY_VALUE, tmp_path, ignore_invalid_state=True)
    assert list(store.all()) == [(b"a", b"1"), (b"b", b"2")]
    store.close()


def test_restore_into_upgrade_mode_moves_keys_to_the_new_family(tmp_path: Path) -> None:
    plain = open_kv_store(StoreType.KEY_VALUE, Backend.ROCKSDB, name="s", state_dir=tmp_path)
    plain.put_all([(b"1", b"a"), (b"2", b"b"), (b"3", b"c")])
    plain.close()
    store = _rocksdb(StoreType.TIMESTAMPED_KV, tmp_path)
    assert store.mode == "upgrade"
    restore(store, StoreType.TIMESTAMPED_KV, [Record(b"1", b"a2", 9), Record(b"2", None, 9)])
    assert list(store.all()) == [(b"1", ts8(9) + b"a2"), (b"3", FF8 + b"c")]
    store.close()
    from kstate.stores.engine import RocksDBEngine

    engine = RocksDBEngine(tmp_path / "app" / "0_0" / "rocksdb" / "s")
    try:
        assert list(engine.iterate("default")) == [(b"3", b"c")]
        assert list(engine.iterate("keyValueWithTimestamp")) == [(b"1", ts8(9) + b"a2")]
    finally:
        engine.close()


RECORDS = st.lists(
    st.builds(
        Record,
        st.sampled_from([b"", b"a", b"ab", b"b"]),
        st.none() | st.binary(max_size=3),
        st.integers(min_value=0, max_value=(1 << 63) - 1),
        st.lists(st.tuples(st.sampled_from(["h", "v", "c"]), st.none() | st.binary(max_size=2)), max_size=2).map(tuple),
    ),
    max_size=15,
)


@pytest.mark.parametrize("store_type", list(BUILT_KV_TYPES), ids=lambda t: t.value)
@settings(max_examples=30, deadline=None)
@given(records=RECORDS, batch_size=st.integers(min_value=1, max_value=5))
def test_restore_equals_a_replay_into_a_dict(store_type: StoreType, records: list[Record], batch_size: int) -> None:
    """Whatever the batch size, the store ends as the suite's model replays the records into a dict (RST-1, RST-3)."""
    expected = replay(store_type.value, [ModelRecord(r.key, r.value, r.timestamp, tuple(r.headers)) for r in records])
    store: KeyValueBytesStore = open_kv_store(store_type, Backend.MEMORY, name="s")
    restore(store, store_type, records, batch_size=batch_size)
    assert list(store.all()) == sorted(expected.items())


def test_the_collector_is_paused_during_restore_and_restored_after() -> None:
    """Nested and concurrent pauses keep the collector off until the last ends; its prior state returns."""
    import gc
    import threading

    from kstate.stores.restore import gc_paused

    was_enabled = gc.isenabled()
    try:
        for initial in (True, False):
            (gc.enable if initial else gc.disable)()
            inner_started, release = threading.Event(), threading.Event()

            def other_thread(started: threading.Event = inner_started, done: threading.Event = release) -> None:
                with gc_paused():
                    started.set()
                    done.wait(5)

            with gc_paused():
                assert not gc.isenabled()
                worker = threading.Thread(target=other_thread)
                worker.start()
                assert inner_started.wait(5)
            assert not gc.isenabled()  # the other thread's pause is still on
            release.set()
            worker.join(5)
            assert gc.isenabled() is initial
            with pytest.raises(RuntimeError), gc_paused():
                raise RuntimeError("a failing restore")
            assert gc.isenabled() is initial
    finally:
        (gc.enable if was_enabled else gc.disable)()


def test_restore_pauses_the_collector() -> None:
    import gc

    seen: list[bool] = []

    class Probe(SpyStore):
        def restore_batch(self, entries: Sequence[tuple[bytes, bytes | None]]) -> None:
            seen.append(gc.isenabled())
            super().restore_batch(entries)

    restore(Probe(), StoreType.KEY_VALUE, [cl.ChangelogRecord(b"k", b"v", 1)])  # type: ignore[arg-type]
    assert seen == [False]
    assert gc.isenabled()


class _Message:
    """The accessors of a confluent-kafka ``Message`` that restore reads; ``headers`` counts its calls."""

    header_reads = 0

    def __init__(self, key: bytes, value: bytes | None, timestamp: int, headers: list[tuple[str, bytes]] | None):
        self._row = (key, value, timestamp, headers)

    def key(self) -> bytes:
        return self._row[0]

    def value(self) -> bytes | None:
        return self._row[1]

    def timestamp(self) -> tuple[int, int]:
        return (1, self._row[2])

    def headers(self) -> list[tuple[str, bytes]] | None:
        _Message.header_reads += 1
        return self._row[3]


def test_restore_rows_read_each_message_once_and_headers_only_when_asked() -> None:
    """Rows for ``restore_entries``: key, value, the timestamp's value, and headers for header stores only."""
    from kstate.kafka.changelog_topics import restore_rows

    batch = [_Message(b"a", b"1", 5, [("h", b"x")]), _Message(b"b", None, -1, None)]
    _Message.header_reads = 0
    assert list(restore_rows(batch, with_headers=False)) == [(b"a", b"1", 5, None), (b"b", None, -1, None)]
    assert _Message.header_reads == 0
    assert list(restore_rows(batch, with_headers=True)) == [(b"a", b"1", 5, [("h", b"x")]), (b"b", None, -1, None)]
    assert _Message.header_reads == 2
    assert list(restore_rows([], with_headers=True)) == []
    entries = cl.restore_entries(StoreType.TIMESTAMPED_KV_WITH_HEADERS, restore_rows(batch, with_headers=True))
    assert entries == [(b"a", encode_value_timestamp_headers(b"1", 5, [("h", b"x")])), (b"b", None)]
