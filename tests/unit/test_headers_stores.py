"""KIP-1271 header stores: open logic, upgrades from timestamped and plain, lazy headers (KV-38, KV-62, UPG-3, UPG-6..UPG-9)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kstate.codecs.header_values import encode_value_timestamp_headers, raw_value_of, raw_value_to_headers_value
from kstate.codecs.store_types import StoreType
from kstate.errors import DecodeError
from kstate.stores.api import Backend, ProcessorStateError, StoreCorruptedError
from kstate.stores.engine import list_column_families
from kstate.stores.factory import open_kv_store, store_directory, wipe_store
from kstate.stores.headers import InMemoryTimestampedKeyValueStoreWithHeaders, RocksDBTimestampedStoreWithHeaders
from kstate.stores.typed import TimestampedKeyValueStore, TimestampedKeyValueStoreWithHeaders
from kstate_conformance.raw_rocksdb import column_family_maps, put_rows

FF8 = b"\xff" * 8


def ts(value: int) -> bytes:
    return value.to_bytes(8, "big", signed=True)


def _timestamped_dir(state_dir: Path, entries: dict[bytes, tuple[bytes, int]]) -> Path:
    store = TimestampedKeyValueStore(open_kv_store(StoreType.TIMESTAMPED_KV, Backend.ROCKSDB, name="s", state_dir=state_dir))
    for key, (value, timestamp) in entries.items():
        store.put(key, value, timestamp)
    store.close()
    return store_directory(state_dir, "app", "0_0", "s")


def _open_headers(state_dir: Path) -> RocksDBTimestampedStoreWithHeaders:
    store = open_kv_store(StoreType.TIMESTAMPED_KV_WITH_HEADERS, Backend.ROCKSDB, name="s", state_dir=state_dir)
    assert isinstance(store, RocksDBTimestampedStoreWithHeaders)
    return store


def test_upgrade_from_a_timestamped_store(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = _timestamped_dir(tmp_path, {b"a": (b"1", 10), b"b": (b"2", 20), b"c": (b"3", 30)})
    with caplog.at_level(logging.INFO, logger="kstate.stores"):
        store = _open_headers(tmp_path)
    assert "Opening store s in upgrade mode from timestamped store" in caplog.messages
    assert store.mode == "upgrade"
    assert store.column_families == ("keyValueWithTimestamp", "keyValueWithTimestampAndHeaders")
    assert list(store.all()) == [(b"a", b"\x00" + ts(10) + b"1"), (b"b", b"\x00" + ts(20) + b"2"), (b"c", b"\x00" + ts(30) + b"3")]
    assert store.get(b"a") == b"\x00" + ts(10) + b"1"  # migrated
    assert store.delete(b"b") == b"\x00" + ts(20) + b"2"  # read without migrating, then deleted
    new_c = encode_value_timestamp_headers(b"3!", 31, [("h", b"x")])
    assert new_c is not None
    store.put(b"c", new_c)
    store.close()
    cfs = column_family_maps(path)
    assert set(cfs) == {"default", "keyValueWithTimestamp", "keyValueWithTimestampAndHeaders", "offsets"}
    assert cfs["default"] == {}
    assert cfs["keyValueWithTimestamp"] == {}
    assert cfs["keyValueWithTimestampAndHeaders"] == {b"a": b"\x00" + ts(10) + b"1", b"c": new_c}


def test_an_empty_legacy_timestamped_family_is_dropped_at_open(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = _timestamped_dir(tmp_path, {b"a": (b"1", 10)})
    store = _open_headers(tmp_path)
    store.get(b"a")  # migrates the only key
    store.close()
    assert "keyValueWithTimestamp" in list_column_families(path)
    with caplog.at_level(logging.INFO, logger="kstate.stores"):
        store = _open_headers(tmp_path)
    assert "Opening store s in regular headers-aware mode" in caplog.messages
    assert store.mode == "regular"
    store.close()
    assert sorted(list_column_families(path)) == ["default", "keyValueWithTimestampAndHeaders", "offsets"]
    assert column_family_maps(path)["keyValueWithTimestampAndHeaders"] == {b"a": b"\x00" + ts(10) + b"1"}


def test_upgrade_from_a_plain_store_gets_timestamp_minus_one(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    plain = open_kv_store(StoreType.KEY_VALUE, Backend.ROCKSDB, name="s", state_dir=tmp_path)
    plain.put(b"k", b"plain")
    plain.put(b"j", b"")
    plain.close()
    with caplog.at_level(logging.INFO, logger="kstate.stores"):
        store = _open_headers(tmp_path)
    assert "Opening store s in upgrade mode from plain key value store" in caplog.messages
    typed = TimestampedKeyValueStoreWithHeaders(store)
    value = typed.get(b"k")
    assert value is not None
    assert (value.value, value.timestamp, value.headers) == (b"plain", -1, [])
    assert list(store.all()) == [(b"j", b"\x00" + FF8), (b"k", b"\x00" + FF8 + b"plain")]
    typed.close()
    cfs = column_family_maps(store_directory(tmp_path, "app", "0_0", "s"))
    assert cfs["default"] == {b"j": b""}
    assert cfs["keyValueWithTimestampAndHeaders"] == {b"k": b"\x00" + FF8 + b"plain"}


def test_plain_and_timestamped_data_together_are_refused(tmp_path: Path) -> None:
    path = _timestamped_dir(tmp_path, {b"a": (b"1", 10)})
    put_rows(path, {"default": {b"p": b"plain"}})
    with pytest.raises(ProcessorStateError, match=r"Inconsistent store state for s\. Cannot have both plain \(DEFAULT\) and timestamped data"):
        _open_headers(tmp_path)
    # the refused open released the database: a timestamped store still opens it
    open_kv_store(StoreType.TIMESTAMPED_KV, Backend.ROCKSDB, name="s", state_dir=tmp_path).close()


def test_typed_headers_facade_decodes_headers_only_when_asked(tmp_path: Path) -> None:
    typed = TimestampedKeyValueStoreWithHeaders(_open_headers(tmp_path))
    typed.put(b"k", b"v", 5, [("a", b"x"), ("a", None)])
    typed.put(b"m", b"w", 6)
    value = typed.get(b"k")
    assert value is not None
    assert (value.value, value.timestamp) == (b"v", 5)
    assert not value.headers_decoded
    assert value.headers == [("a", b"x"), ("a", None)]
    assert value.headers_decoded
    assert typed.inner.get(b"m") == b"\x00" + ts(6) + b"w"
    assert list(typed.values()) == [b"v", b"w"]
    for _key, entry in typed.all():
        assert not entry.headers_decoded
    old = typed.put_if_absent(b"k", b"z", 1)
    assert old is not None and old.value == b"v"
    typed.put(b"k", None, 9)
    assert typed.get(b"k") is None
    typed.close()


def test_in_memory_headers_store_holds_the_headers_layout() -> None:
    inner = InMemoryTimestampedKeyValueStoreWithHeaders("s")
    typed = TimestampedKeyValueStoreWithHeaders(inner)
    typed.put(b"k", b"v", 5, [("a", b"x")])
    assert inner.get(b"k") == bytes.fromhex("0a0202610278") + ts(5) + b"v"
    assert inner.manages_offsets() is False


def test_wipe_and_rebuild_from_the_changelog_gives_the_same_logical_state(tmp_path: Path) -> None:
    """UPG-3: after a refused downgrade the store is wiped and restored; values carry the record timestamps."""
    changelog = [(b"a", b"1", 10, [("h", b"1")]), (b"b", b"2", 20, []), (b"a", b"3", 30, []), (b"b", None, 40, [])]
    original = TimestampedKeyValueStoreWithHeaders(_open_headers(tmp_path))
    for key, value, timestamp, headers in changelog:
        original.put(key, value, timestamp, headers)
    expected = [(k, (v.value, v.timestamp, v.headers)) for k, v in original.all()]
    original.close()
    with pytest.raises(ProcessorStateError):
        open_kv_store(StoreType.TIMESTAMPED_KV, Backend.ROCKSDB, name="s", state_dir=tmp_path)
    wipe_store(tmp_path, name="s")
    rebuilt = _open_headers(tmp_path)
    rebuilt.restore_batch([(k, raw_value_to_headers_value(v, t, h)) for k, v, t, h in changelog])
    rebuilt.commit({})
    typed = TimestampedKeyValueStoreWithHeaders(rebuilt)
    assert [(k, (v.value, v.timestamp, v.headers)) for k, v in typed.all()] == expected == [(b"a", (b"3", 30, []))]
    typed.close()


def test_persistent_and_in_memory_stores_differ_after_an_upgrade(tmp_path: Path) -> None:
    """UPG-9: on disk a legacy key reads timestamp -1; an in-memory store rebuilt from the changelog has the record's."""
    plain = open_kv_store(StoreType.KEY_VALUE, Backend.ROCKSDB, name="s", state_dir=tmp_path)
    plain.put(b"k", b"v")
    plain.close()
    persistent = TimestampedKeyValueStoreWithHeaders(_open_headers(tmp_path))
    memory = TimestampedKeyValueStoreWithHeaders(InMemoryTimestampedKeyValueStoreWithHeaders("s"))
    memory.inner.restore_batch([(b"k", raw_value_to_headers_value(b"v", 1234, None))])
    from_disk, rebuilt = persistent.get(b"k"), memory.get(b"k")
    assert from_disk is not None and rebuilt is not None
    assert (from_disk.value, from_disk.timestamp) == (b"v", -1)
    assert (rebuilt.value, rebuilt.timestamp) == (b"v", 1234)
    persistent.close()


@settings(max_examples=400, deadline=None)
@given(data=st.binary(max_size=40))
def test_hostile_stored_bytes_only_raise_decode_errors(data: bytes) -> None:
    """A malformed value in a header store: the facades fail only with DecodeError, and the value-only
    scan's fast path agrees with ``raw_value_of`` on every input."""
    inner = InMemoryTimestampedKeyValueStoreWithHeaders("s")
    inner.put(b"k", data)
    typed = TimestampedKeyValueStoreWithHeaders(inner)
    try:
        expected: bytes | str | None = raw_value_of(data)
    except DecodeError:
        expected = "refused"
    try:
        scanned: bytes | str | None = next(iter(typed.values()))
    except DecodeError:
        scanned = "refused"
    assert scanned == expected
    try:
        value = typed.get(b"k")
        assert value is not None
        value.headers  # noqa: B018 - parsing the header bytes is the point
    except DecodeError:
        pass
    timestamped = TimestampedKeyValueStore(inner)
    try:
        timestamped.get(b"k")
        list(timestamped.values())
    except DecodeError:
        pass


def test_a_corrupt_offsets_family_is_a_typed_open_error(tmp_path: Path) -> None:
    store = _open_headers(tmp_path)
    store.close()
    path = store_directory(tmp_path, "app", "0_0", "s")
    put_rows(path, {"offsets": {b"position": b"\x00\x00\x00\x00\x07"}})
    with pytest.raises(ProcessorStateError, match="corrupt offsets column family"):
        _open_headers(tmp_path)
    put_rows(path, {"offsets": {b"status": b"\x00", b"position": bytes(40)}})  # neither OPEN nor CLOSED (KV-57)
    with pytest.raises(StoreCorruptedError, match="neither OPEN nor CLOSED"):
        _open_headers(tmp_path)
    _open_headers_ignoring = open_kv_store(
        StoreType.TIMESTAMPED_KV_WITH_HEADERS, Backend.ROCKSDB, name="s", state_dir=tmp_path, ignore_invalid_state=True
    )
    _open_headers_ignoring.close()
