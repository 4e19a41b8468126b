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
