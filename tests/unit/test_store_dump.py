"""The app's read-only dumps of any family (kstate.store_dump): a window or session store segment by segment
(LAY-3), a versioned store's logical segments (VER-1, VER-2); what they answer matches the open store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kstate.codecs import window_keys
from kstate.codecs.store_types import TIMESTAMPED_CF, StoreType
from kstate.codecs.timestamped import encode_value_and_timestamp
from kstate.codecs.versioned import LATEST_VALUE_SEGMENT_ID
from kstate.store_dump import dump_segmented_store, dump_store
from kstate.stores.api import Backend, TopicPartition
from kstate.stores.factory import open_bytes_store

TP = TopicPartition("app-w-changelog", 0)


def test_a_window_store_dumps_segment_by_segment_as_the_store_holds_it(tmp_path: Path) -> None:
    store: Any = open_bytes_store(StoreType.TIMESTAMPED_WINDOW, Backend.ROCKSDB, name="w", state_dir=tmp_path,
                                     options={"retention_ms": 1000, "window_size_ms": 10, "segment_interval_ms": 100})
    for start in (0, 50, 150, 420):
        store.put(b"k", encode_value_and_timestamp(b"v%d" % start, start), start)
    store.commit({TP: 7})
    rows = store.segment_rows()
    store.close()
    dump = dump_segmented_store(tmp_path, "app", "0_0", "w", StoreType.TIMESTAMPED_WINDOW)
    assert list(dump.segments) == ["w.0", "w.100", "w.400"]  # oldest first, named by segment start
    assert {name: d.column_families[TIMESTAMPED_CF] for name, d in dump.segments.items()} == {
        name: dict(cfs[TIMESTAMPED_CF]) for name, cfs in rows.items()}
    assert dump.committed_offset(TP.topic, TP.partition) == 7 and dump.status_open is False
    view = dump.logical_view(StoreType.TIMESTAMPED_WINDOW)
    assert sorted(window_keys.PLAIN.decode(k).timestamp for k in view) == [0, 50, 150, 420]
    with pytest.raises(ValueError, match="segmented"):
        dump_store(tmp_path, "app", "0_0", "w", StoreType.TIMESTAMPED_WINDOW)


def test_a_versioned_store_dumps_its_logical_segments(tmp_path: Path) -> None:
    store: Any = open_bytes_store(StoreType.VERSIONED_KV, Backend.ROCKSDB, name="v", state_dir=tmp_path,
                                     options={"history_retention_ms": 10_000, "segment_interval_ms": 100})
    store.put(b"a", b"1", 10)
    store.put(b"a", b"2", 250)
    store.put(b"b", b"3", 30)
    store.put(b"b", None, 40)
    store.close()
    segments = dump_store(tmp_path, "app", "0_0", "v", StoreType.VERSIONED_KV).logical_segments()
    assert set(segments[LATEST_VALUE_SEGMENT_ID]) == {b"a"}  # b's latest version is a tombstone
    assert set(segments) - {LATEST_VALUE_SEGMENT_ID}  # history by validTo in segments of its own
    with pytest.raises(ValueError, match="one database"):
        dump_segmented_store(tmp_path, "app", "0_0", "v", StoreType.VERSIONED_KV)


def test_store_dump_of_a_closed_store_leaves_its_directory_untouched(tmp_path: Path) -> None:
    """``store.dump`` reads a closed store as it is on disk (KV-20): through the read-only reader, not by opening it."""
    from kstate.ops import call

    opened = call("store.open", {"store_type": "kv", "name": "s", "state_dir": str(tmp_path)})
    call("store.put", {"handle": opened["handle"], "key": "6b", "value": "76"})
    call("store.close", {"handle": opened["handle"]})
    store_dir = tmp_path / "app" / "0_0" / "rocksdb" / "s"
    before = {p.name: p.read_bytes() for p in store_dir.iterdir() if p.is_file()}
    dumped = call("store.dump", {"state_dir": str(tmp_path), "name": "s"})
    assert dumped["column_families"]["default"] == [["6b", "76"]]
    assert {p.name: p.read_bytes() for p in store_dir.iterdir() if p.is_file()} == before


def test_a_clean_read_releases_the_database_without_a_full_collection(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """read_database collects the garbage only when something still refers to the database (issue 35: a full
    collection per dump in the suite's large heap); the store then opens again at once (its files released)."""
    import gc

    from kstate import store_dump

    store = open_bytes_store(StoreType.TIMESTAMPED_KV, Backend.ROCKSDB, name="s", state_dir=tmp_path)
    store.put(b"k", encode_value_and_timestamp(b"v", 1))
    store.close()
    db_dir = tmp_path / "app" / "0_0" / "rocksdb" / "s"
    collections: list[object] = []
    monkeypatch.setattr(gc, "collect", lambda *args: collections.append(args) or 0)
    rows = store_dump.read_database(db_dir)
    assert rows[TIMESTAMPED_CF] == [(b"k", encode_value_and_timestamp(b"v", 1))]
    assert collections == []
    monkeypatch.undo()
    reopened = open_bytes_store(StoreType.TIMESTAMPED_KV, Backend.ROCKSDB, name="s", state_dir=tmp_path)
    assert reopened.get(b"k") == encode_value_and_timestamp(b"v", 1)
    reopened.close()


def test_iter_database_streams_a_family_row_by_row(tmp_path: Path) -> None:
    """iter_database yields a family's rows as RocksDB reads them (issue 35): its first row comes before the
    family is read into memory, and reading every row one at a time holds a fraction of what read_database's lists
    hold; both give the same rows in key order, and closing the generator early releases the database."""
    import tracemalloc

    from kstate import store_dump

    store: Any = open_bytes_store(StoreType.TIMESTAMPED_KV, Backend.ROCKSDB, name="s", state_dir=tmp_path)
    for i in range(20_000):
        store.put(i.to_bytes(4, "big"), encode_value_and_timestamp(bytes(500) + i.to_bytes(4, "big"), i))
    store.close()
    db_dir = tmp_path / "app" / "0_0" / "rocksdb" / "s"

    tracemalloc.start()
    try:
        held = store_dump.read_database(db_dir)
        _, held_peak = tracemalloc.get_traced_memory()
        del held
        tracemalloc.reset_peak()
        base, _ = tracemalloc.get_traced_memory()
        count, last = 0, b""
        for cf, rows in store_dump.iter_database(db_dir):
            for key, _value in rows:
                if cf == TIMESTAMPED_CF:
                    assert key > last
                    last = key
                    count += 1
        _, streamed_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == 20_000
    assert held_peak > 10_000_000  # 20,000 rows of over 500 bytes each, held
    assert streamed_peak - base < held_peak / 10

    stream = store_dump.iter_database(db_dir)
    families = {}
    for cf, rows in stream:
        families[cf] = next(rows, None)
        if cf == TIMESTAMPED_CF:
            break
    stream.close()
    assert families[TIMESTAMPED_CF] == ((0).to_bytes(4, "big"), encode_value_and_timestamp(bytes(500) + bytes(4), 0))
    reopened: Any = open_bytes_store(StoreType.TIMESTAMPED_KV, Backend.ROCKSDB, name="s", state_dir=tmp_path)
    assert reopened.get((7).to_bytes(4, "big")) == encode_value_and_timestamp(bytes(500) + (7).to_bytes(4, "big"), 7)
    reopened.close()
