"""The versioned store's fast paths (spec/versioned-store.md): the latest-version cache stays a mirror of the
latest-value rows (VS-2, VS-8), and expired-segment cleanup runs exactly when the earliest live id moves (VS-13)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from kstate.codecs.primitives import segment_id
from kstate.stores import versioned
from kstate.stores.api import TopicPartition
from kstate.stores.versioned import RocksDBVersionedStore, VersionedRecord

TP = TopicPartition("app-v-changelog", 0)
KEYS = [bytes([k]) for k in range(4)]


def _random_writes(store: RocksDBVersionedStore, *, seed: int, steps: int) -> Iterator[tuple[int, int]]:
    """Seeded puts (some tombstones, some late) and deletes over ``KEYS``, a commit every 37 steps; yields the step
    and the stream time after each write, so that a test checks the store between writes."""
    rng = random.Random(seed)
    now = 100
    for step in range(steps):
        key = rng.choice(KEYS)
        now += rng.randrange(0, 5)
        late = now - rng.randrange(0, 60) if rng.random() < 0.3 else now
        if rng.random() < 0.8:
            store.put(key, None if rng.random() < 0.1 else bytes(rng.randrange(0, 9)), late)
        else:
            store.delete(key, late)
        if step % 37 == 0:
            store.commit({TP: step})
        yield step, now


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
    try:
        for _step, _now in _random_writes(store, seed=3, steps=600):
            for k in KEYS:
                row = store._latest_row(k)
                expected = None if row is None else VersionedRecord(row[8:], int.from_bytes(row[:8], "big"))
                assert store.get(k) == expected
    finally:
        store.close()


def test_get_as_of_in_place_answers_what_the_per_key_procedure_answers(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The get as of read in place (issue 35) and the codec's ``KeyVersions.get_as_of`` (VER-32) agree at every
    time around every version, over out-of-order puts, tombstones, deletes, commits, expiry and a cache dropped for
    size (VS-9)."""
    monkeypatch.setattr(versioned, "_LATEST_CACHE_BYTES", 64)
    store = RocksDBVersionedStore("s", tmp_path, history_retention_ms=50, segment_interval_ms=10)
    try:
        for step, now in _random_writes(store, seed=35, steps=400):
            if step % 5 == 0:
                for k in KEYS:
                    for as_of in range(now - 70, now + 3):
                        assert store.get(k, as_of) == store._codec_get_as_of(k, as_of), (k, as_of)
    finally:
        store.close()


@pytest.mark.parametrize("row", [b"", b"\x00" * 7, (1_000).to_bytes(8, "big"), (1_000).to_bytes(8, "big") + b"\x00" * 7,
                                 (1_000).to_bytes(8, "big") + (0).to_bytes(8, "big"),
                                 (1_000).to_bytes(8, "big") + (0).to_bytes(8, "big") + (0).to_bytes(8, "big")
                                 + (-2).to_bytes(4, "big", signed=True),
                                 (1_000).to_bytes(8, "big") + (0).to_bytes(8, "big") + (0).to_bytes(8, "big")
                                 + (50).to_bytes(4, "big")])
def test_get_as_of_of_a_malformed_segment_row_fails_as_the_codec_fails(tmp_path: Path, row: bytes) -> None:
    """A segment row the index cannot be read from is refused with the codec's typed error, or answered as the
    codec answers it (VER-9, VER-11)."""
    store = RocksDBVersionedStore("s", tmp_path, history_retention_ms=10_000, segment_interval_ms=100)
    try:
        store.put(b"k", b"v", 2_000)
        store.commit({TP: 1})
        store._row_put(versioned._INT64.pack(segment_id(999, 100)) + b"k", row)
        store._segments.get_or_create_segment(segment_id(999, 100))
        outcomes = []
        for read in (store.get, store._codec_get_as_of):
            try:
                outcomes.append(("answer", read(b"k", 500)))
            except Exception as exc:  # the typed error, compared by type and text
                outcomes.append(("error", type(exc), str(exc)))
        assert outcomes[0] == outcomes[1]
    finally:
        store.close()
