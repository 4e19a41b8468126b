"""The versioned store's fast paths (spec/versioned-store.md): the latest-version cache stays a mirror of the
latest-value rows (VS-2, VS-8), and expired-segment cleanup runs exactly when the earliest live id moves (VS-13)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from kstate.codecs.primitives import segment_id
from kstate.stores import versioned
from kstate.stores.api import TopicPartition
from kstate.stores.versioned import RocksDBVersionedStore, VersionedRecord

TP = TopicPartition("app-v-changelog", 0)


@pytest.mark.parametrize("retention", [0, 1, 7, 1000])
@pytest.mark.parametrize("interval", [1, 3, 10, 20_000])
def test_cleanup_is_due_exactly_when_the_earliest_live_segment_moves(tmp_path: Path, retention: int,
                                                                     interval: int) -> None:
    """``_first_stream_time_past`` agrees with ``segmentId(streamTime - retention)`` (Java truncation, VER-30)."""
    store = RocksDBVersionedStore("s", tmp_path, history_retention_ms=retention, segment_interval_ms=interval)
    try:
        for bound in range(-5, 6):
            due = store._first_stream_time_past(bound)
            assert segment_id(due - retention, interval) > bound
            assert segment_id(due - 1 - retention, interval) <= bound
    finally:
        store.close()


def test_the_cache_follows_every_write_of_a_latest_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Reads through the cache answer what the rows say, across fast and slow puts, deletes, commits and a cache
    dropped for size (VS-2, VS-8)."""
    monkeypatch.setattr(versioned, "_LATEST_CACHE_BYTES", 64)
    store = RocksDBVersionedStore("s", tmp_path, history_retention_ms=50, segment_interval_ms=10)
    rng = random.Random(3)
    keys = [bytes([k]) for k in range(4)]
    now = 100
    try:
        for step in range(600):
            key = rng.choice(keys)
            now += rng.randrange(0, 5)
            late = now - rng.randrange(0, 60) if rng.random() < 0.3 else now
            if rng.random() < 0.8:
                store.put(key, None if rng.random() < 0.1 else bytes(rng.randrange(0, 9)), late)
            else:
                store.delete(key, late)
            if step % 37 == 0:
                store.commit({TP: step})
            for k in keys:
                row = store._latest_row(k)
                expected = None if row is None else VersionedRecord(row[8:], int.from_bytes(row[:8], "big"))
                assert store.get(k) == expected
    finally:
        store.close()
