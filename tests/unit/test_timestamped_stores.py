"""Timestamped stores and the dual column-family upgrade from plain (spec/kv-stores.md KV-30..KV-37, KV-45, UPG-1, UPG-5)."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kstate.codecs.store_types import StoreType
from kstate.stores.api import Backend, ProcessorStateError
from kstate.stores.engine import MemoryEngine
from kstate.stores.factory import open_kv_store, store_directory
from kstate.stores.kv import RocksDBStore, UnknownColumnFamilyError
from kstate.stores.timestamped import InMemoryTimestampedKeyValueStore, RocksDBTimestampedStore
from kstate.stores.typed import TimestampedKeyValueStore
from kstate_conformance.raw_rocksdb import column_family_maps, put_rows

FF8 = b"\xff" * 8
LEGACY = {b"key%d" % i: (b"%d" % i) * i for i in range(1, 8)}  # key1 -> "1", key2 -> "22", ..., key7 -> "7777777"


def prepare_old_store(state_dir: Path) -> Path:
    """``RocksDBTimestampedStoreTest.prepareOldStore``: a plain store holding key1..key7."""
    plain = open_kv_store(StoreType.KEY_VALUE, Backend.ROCKSDB, name="s", state_dir=state_dir)
    for key, value in LEGACY.items():
        plain.put(key, value)
    plain.close()
    return store_directory(state_dir, "app", "0_0", "s")


def run_migration_matrix(store: RocksDBStore) -> None:
    """The operations and expectations of ``shouldMigrateDataFromDefaultToTimestampColumnFamily``.

    Kafka asserts RocksDB's ``estimate-num-keys`` after each step (7, 7, 7, 7, 5, 5, 5, 5, 5, 4, 3): the
    estimator's view of memtable deletes. The counts below are the exact old + new key counts, which the
    staged writes (KV-50) make observable; both satisfy KV-15.
    """
    assert store.mode == "upgrade"
    assert store.approximate_num_entries() == 7
    assert store.get(b"unknown") is None
    assert store.approximate_num_entries() == 7
    assert store.get(b"key1") == FF8 + b"1"
    assert store.approximate_num_entries() == 7
    store.put(b"key2", b"timestamp+22")
    assert store.approximate_num_entries() == 7
    store.put(b"key3", None)
    assert store.approximate_num_entries() == 6
    store.put(b"key8", b"timestamp+88888888")
    assert store.approximate_num_entries() == 7
    assert store.put_if_absent(b"key4", b"timestamp+4444") == FF8 + b"4444"
    assert store.put_if_absent(b"key11", b"timestamp+11111111111") is None
    assert store.approximate_num_entries() == 8
    assert store.put_if_absent(b"key5", None) == FF8 + b"55555"  # migrated, not deleted (KV-36)
    assert store.put_if_absent(b"key12", None) is None
    assert store.approximate_num_entries() == 8
    assert store.delete(b"key6") == FF8 + b"666666"
    assert store.approximate_num_entries() == 7

    expected_all = [
        (b"key1", FF8 + b"1"),
        (b"key11", b"timestamp+11111111111"),
        (b"key2", b"timestamp+22"),
        (b"key4", FF8 + b"4444"),
        (b"key5", FF8 + b"55555"),
        (b"key7", FF8 + b"7777777"),
        (b"key8", b"timestamp+88888888"),
    ]
    assert list(store.all()) == expected_all
    assert list(store.range(b"key2", b"key5")) == expected_all[2:5]
    assert list(store.reverse_all()) == expected_all[::-1]
    assert list(store.reverse_range(b"key2", b"key5")) == expected_all[2:5][::-1]
    assert list(store.prefix_scan(b"key1")) == expected_all[:2]
    # Iterating migrated nothing: key7 still counts in the old family.
    assert store.approximate_num_entries() == 7


EXPECTED_OLD_AFTER = {b"key7": b"7777777"}
EXPECTED_NEW_AFTER = {
    b"key1": FF8 + b"1",
    b"key11": b"timestamp+11111111111",
    b"key2": b"timestamp+22",
    b"key4": FF8 + b"4444",
    b"key5": FF8 + b"55555",
    b"key8": b"timestamp+88888888",
}


def test_migration_matrix_on_rocksdb_and_exact_bytes_of_both_families(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = prepare_old_store(tmp_path)
    with caplog.at_level(logging.INFO, logger="kstate.stores"):
        store = open_kv_store(StoreType.TIMESTAMPED_KV, Backend.ROCKSDB, name="s", state_dir=tmp_path)
    assert "Opening store s in upgrade mode" in caplog.messages
    assert isinstance(store, RocksDBTimestampedStore)
    run_migration_matrix(store)
    store.close()
    cfs = column_family_maps(path)
    assert set(cfs) == {"default", "keyValueWithTimestamp", "offsets"}
    assert cfs["default"] == EXPECTED_OLD_AFTER
    assert cfs["keyValueWithTimestamp"] == EXPECTED_NEW_AFTER


def test_migration_matrix_over_the_memory_engine() -> None:
    engine = MemoryEngine()
    for key, value in LEGACY.items():
        engine.put("default", key, value)
    store = RocksDBTimestampedStore("s", engine=engine)
    run_migration_matrix(store)
    store.close()
    assert engine.contents("default") == EXPECTED_OLD_AFTER
    assert engine.contents("keyValueWithTimestamp") == EXPECTED_NEW_AFTER


def test_the_mode_holds_until_reopen(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = prepare_old_store(tmp_path)
    store = open_kv_store(StoreType.TIMESTAMPED_KV, Backend.ROCKSDB, name="s", state_dir=tmp_path)
    assert isinstance(store, RocksDBTimestampedStore)
    for key in LEGACY:
        store.get(key)
    assert store.mode == "upgrade"  # every key migrated, still upgrade mode
    assert store.column_families == ("default", "keyValueWithTimestamp")
    store.close()
    assert column_family_maps(path)["default"] == {}
    with caplog.at_level(logging.INFO, logger="kstate.stores"):
        store = open_kv_store(StoreType.TIMESTAMPED_KV, Backend.ROCKSDB, name="s", state_dir=tmp_path)
    assert "Opening store s in regular mode" in caplog.messages
    assert isinstance(store, RocksDBTimestampedStore)
    assert store.mode == "regular"
    assert store.column_families == ("keyValueWithTimestamp",)
    assert store.get(b"key3") == FF8 + b"333"
    store.close()


def test_new_store_regular_mode_and_bytes(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="kstate.stores"):
        store = open_kv_store(StoreType.TIMESTAMPED_KV, Backend.ROCKSDB, name="s", state_dir=tmp_path)
    assert "Opening store s in regular mode" in caplog.messages
    assert list(store.all()) == []
    store.put(b"key", b"timestamped")
    store.close()
    with caplog.at_level(logging.INFO, logger="kstate.stores"):
        open_kv_store(StoreType.TIMESTAMPED_KV, Backend.ROCKSDB, name="s", state_dir=tmp_path).close()
    assert caplog.messages.count("Opening store s in regular mode") == 2
    cfs = column_family_maps(store_directory(tmp_path, "app", "0_0", "s"))
    assert cfs["default"] == {}
    assert cfs["keyValueWithTimestamp"] == {b"key": b"timestamped"}


def test_iterators_never_migrate_and_the_new_family_wins_on_equal_keys(tmp_path: Path) -> None:
    path = prepare_old_store(tmp_path)
    put_rows(path, {"keyValueWithTimestamp": {b"key2": b"NEW2", b"key9": b"NEW9"}})
    store = open_kv_store(StoreType.TIMESTAMPED_KV, Backend.ROCKSDB, name="s", state_dir=tmp_path)
    assert isinstance(store, RocksDBTimestampedStore)
    assert store.mode == "upgrade"
    forward = list(store.all())
    assert [k for k, _ in forward] == sorted({*LEGACY, b"key9"})
    assert dict(forward)[b"key2"] == b"NEW2"
    assert dict(forward)[b"key3"] == FF8 + b"333"
    assert list(store.reverse_all()) == forward[::-1]
    assert store.get(b"key2") == b"NEW2"  # found in the new family: nothing to migrate
    store.close()
    cfs = column_family_maps(path)
    assert cfs["default"] == LEGACY  # untouched, key2 included
    assert cfs["keyValueWithTimestamp"] == {b"key2": b"NEW2", b"key9": b"NEW9"}


def test_put_all_and_restore_delete_from_the_old_family(tmp_path: Path) -> None:
    path = prepare_old_store(tmp_path)
    store = open_kv_store(StoreType.TIMESTAMPED_KV, Backend.ROCKSDB, name="s", state_dir=tmp_path)
    store.put_all([(b"key1", bytes(8) + b"a"), (b"key2", None)])
    store.restore_batch([(b"key3", bytes(8) + b"c"), (b"key4", None)])
    store.close()
    cfs = column_family_maps(path)
    assert set(cfs["default"]) == {b"key5", b"key6", b"key7"}
    assert cfs["keyValueWithTimestamp"] == {b"key1": bytes(8) + b"a", b"key3": bytes(8) + b"c"}


def _listing(path: Path) -> dict[str, bytes]:
    return {name: (path / name).read_bytes() for name in sorted(os.listdir(path)) if name != "LOCK"}


@pytest.mark.parametrize(
    ("newer", "older", "unknown"),
    [
        (StoreType.TIMESTAMPED_KV, StoreType.KEY_VALUE, ("keyValueWithTimestamp",)),
        (StoreType.TIMESTAMPED_KV_WITH_HEADERS, StoreType.KEY_VALUE, ("keyValueWithTimestampAndHeaders",)),
        (StoreType.TIMESTAMPED_KV_WITH_HEADERS, StoreType.TIMESTAMPED_KV, ("keyValueWithTimestampAndHeaders",)),
    ],
)
def test_an_older_reader_fails_naming_the_unknown_family(
    tmp_path: Path, newer: StoreType, older: StoreType, unknown: tuple[str, ...]
) -> None:
    store = open_kv_store(newer, Backend.ROCKSDB, name="s", state_dir=tmp_path)
    store.put(b"k", b"\x00" + bytes(8) + b"v")
    store.close()
    path = store_directory(tmp_path, "app", "0_0", "s")
    before = _listing(path)
    with pytest.raises(UnknownColumnFamilyError) as caught:
        open_kv_store(older, Backend.ROCKSDB, name="s", state_dir=tmp_path)
    assert isinstance(caught.value, ProcessorStateError)
    assert caught.value.unknown_column_families == unknown
    for name in unknown:
        assert name in str(caught.value)
    assert _listing(path) == before  # refused before anything was written


def test_in_memory_timestamped_store_holds_the_timestamped_layout() -> None:
    inner = InMemoryTimestampedKeyValueStore("s")
    typed = TimestampedKeyValueStore(inner)
    typed.put(b"k", b"v", 5)
    typed.put(b"gone", None, 7)
    assert inner.get(b"k") == (5).to_bytes(8, "big") + b"v"
    assert typed.get(b"k") == (b"v", 5)
    assert typed.get(b"gone") is None
    assert typed.put_if_absent(b"k", b"w", 9) == (b"v", 5)
    typed.put_all([(b"a", (b"", -1)), (b"k", None)])
    assert list(typed.all()) == [(b"a", (b"", -1))]
    assert list(typed.values()) == [b""]
    assert typed.delete(b"a") == (b"", -1)
    typed.close()
    assert not typed.is_open


@pytest.mark.parametrize("backend", [Backend.ROCKSDB, Backend.MEMORY])
def test_typed_timestamped_facade_round_trips(tmp_path: Path, backend: Backend) -> None:
    typed = TimestampedKeyValueStore(open_kv_store(StoreType.TIMESTAMPED_KV, backend, name="s", state_dir=tmp_path))
    typed.put(b"b", b"2", 20)
    typed.put(b"a", b"1", -1)
    assert list(typed.range(b"a", b"b")) == [(b"a", (b"1", -1)), (b"b", (b"2", 20))]
    assert list(typed.reverse_range(None, None)) == [(b"b", (b"2", 20)), (b"a", (b"1", -1))]
    with typed.prefix_scan(b"a") as it:
        assert it.peek_next_key() == b"a"
        assert list(it) == [(b"a", (b"1", -1))]
    typed.close()



small_keys = st.binary(max_size=2)
dual_ops = st.lists(
    st.one_of(
        st.tuples(st.just("get"), small_keys, st.none()),
        st.tuples(st.just("put"), small_keys, st.none() | st.binary(min_size=8, max_size=10)),
        st.tuples(st.just("put_if_absent"), small_keys, st.none() | st.binary(min_size=8, max_size=10)),
        st.tuples(st.just("delete"), small_keys, st.none()),
        st.tuples(st.just("commit"), st.none(), st.none()),
    ),
    max_size=25,
)


@settings(max_examples=150, deadline=None)
@given(legacy=st.dictionaries(small_keys, st.binary(max_size=3), max_size=8), ops=dual_ops)
def test_upgrade_mode_agrees_with_a_model(legacy: dict[bytes, bytes], ops: list[tuple[str, bytes, bytes | None]]) -> None:
    """KV-31..KV-36 over random legacy data and operations: reads as a dict of converted values, and only
    ``get``/``put_if_absent`` of a present legacy key or a write ever moves a key out of ``default``."""
    engine = MemoryEngine()
    for key, value in legacy.items():
        engine.put("default", key, value)
    store = RocksDBTimestampedStore("s", engine=engine)
    assert store.mode == ("upgrade" if legacy else "regular")
    model = {k: FF8 + v for k, v in legacy.items()}
    untouched = set(legacy)
    for op, key, value in ops:
        if op == "get":
            assert store.get(key) == model.get(key)
            untouched.discard(key)
        elif op == "put":
            store.put(key, value)
            untouched.discard(key)
            if value is None:
                model.pop(key, None)
            else:
                model[key] = value
        elif op == "put_if_absent":
            assert store.put_if_absent(key, value) == model.get(key)
            untouched.discard(key)
            if key not in model and value is not None:
                model[key] = value
        elif op == "delete":
            assert store.delete(key) == model.get(key)
            untouched.discard(key)
            model.pop(key, None)
        else:
            store.commit({})
        expected = sorted(model.items())
        assert list(store.all()) == expected
        assert list(store.reverse_all()) == expected[::-1]
    store.close()
    assert engine.contents("default") == {k: legacy[k] for k in sorted(untouched)}
    assert engine.contents("keyValueWithTimestamp") == {k: v for k, v in sorted(model.items()) if k not in untouched}
