"""Rolling upgrades of segmented stores to their header-aware variants (KIP-1271) under continuous input, one
instance bounced at a time: a windowed aggregation's ``timestamped_window`` store to
``timestamped_window_with_headers`` (WS-27), a session aggregation's ``session`` store to ``session_with_headers``
(SS-31, SS-32). Every segment written before the bounce opens in upgrade mode (the dual column-family lazy
upgrade, per segment); nothing acknowledged is lost (every window and session holds the aggregate of its input
records); rows written before the upgrade stay in the legacy family and read with empty headers (HV-8, KV-31),
through the dump and through the store's own reads; rows written after carry the record's headers; the
changelog format is unchanged: the same keys, raw aggregates, the input timestamps, and headers only once the
header-aware store writes (CL-8, WS-23, SS-28). Compare ``test_upgrades.py`` (key-value stores)."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pytest
from helpers import Aggregate, bounce_one_by_one, expected_sessions, expected_windows, three_caught_up_after_every_key

from kstate.app.cluster import AppCluster
from kstate.app.processors import StoredValue, decode_stored, parse_aggregate
from kstate.codecs import session_keys, window_keys
from kstate.codecs.store_types import (
    DEFAULT_CF,
    SESSION_HEADERS_CF,
    TIMESTAMPED_CF,
    TIMESTAMPED_HEADERS_CF,
    StoreType,
)
from kstate.stores.api import Backend
from kstate.stores.factory import open_bytes_store

PARTITIONS = 6
#: Keys the continuous input writes; the keys written once before the upgrade (``PRELOADED``) are never
#: written again, so their rows stay legacy to the end.
KEYS = 40
PRELOADED = range(1000, 1030)
#: Long enough that nothing expires during the test (event time advances 1 ms per input record).
RETENTION_MS = 60_000

Id = tuple[Any, ...]


@dataclass(frozen=True)
class HeaderUpgrade:
    """One family's upgrade: the types, the families of each segment, and how its keys and aggregates read."""

    old: StoreType
    new: StoreType
    legacy_cf: str
    new_cf: str
    store_options: Mapping[str, Any]
    processor_options: Mapping[str, int]

    def row_id(self, store_key: bytes) -> Id:
        """``(key, window start)`` of a window row, ``(key, start, end)`` of a session row."""
        if self.new is StoreType.TIMESTAMPED_WINDOW_WITH_HEADERS:
            decoded = window_keys.PLAIN.decode(store_key)
            assert decoded.seqnum == 0, decoded
            return decoded.key, decoded.timestamp
        session = session_keys.PLAIN.decode(store_key)
        return session.key, session.start, session.end

    def expected(self, cluster: AppCluster) -> Mapping[int, Mapping[Any, Aggregate]]:
        if self.new is StoreType.TIMESTAMPED_WINDOW_WITH_HEADERS:
            return expected_windows(cluster, self.store_options["window_size_ms"])
        return expected_sessions(cluster, self.processor_options["inactivity_gap_ms"])

    def read(self, store: Any, row: Id) -> bytes | None:
        """The row through the store's own read (``fetch(key, start)`` / ``fetchSession(key, start, end)``)."""
        if self.new is StoreType.TIMESTAMPED_WINDOW_WITH_HEADERS:
            return store.fetch(row[0], row[1])  # type: ignore[no-any-return]
        return store.fetch_session(row[0], row[1], row[2])  # type: ignore[no-any-return]


UPGRADES = [
    pytest.param(HeaderUpgrade(StoreType.TIMESTAMPED_WINDOW, StoreType.TIMESTAMPED_WINDOW_WITH_HEADERS, TIMESTAMPED_CF,
                               TIMESTAMPED_HEADERS_CF,
                               {"retention_ms": RETENTION_MS, "window_size_ms": 100, "segment_interval_ms": 500}, {}),
                 id="timestamped-window-to-headers"),
    pytest.param(HeaderUpgrade(StoreType.SESSION, StoreType.SESSION_WITH_HEADERS, DEFAULT_CF, SESSION_HEADERS_CF,
                               {"retention_ms": RETENTION_MS, "segment_interval_ms": 500}, {"inactivity_gap_ms": 300}),
                 id="session-to-headers"),
]


@pytest.mark.parametrize("case", UPGRADES)
def test_rolling_header_upgrade_under_continuous_input(make_cluster: Callable[..., AppCluster],
                                                       system_report: Callable[[str, object], None],
                                                       case: HeaderUpgrade) -> None:
    started = time.monotonic()
    cluster = make_cluster(case.old, partitions=PARTITIONS, store_options=dict(case.store_options),
                           processor_options=dict(case.processor_options))
    cluster.require(store_types=[case.old, case.new], events=["opened"])  # before any work (INST-40)
    rng = random.Random(5)
    instances = three_caught_up_after_every_key(cluster, KEYS, PRELOADED, rng)
    boundaries: dict[int, int] = {}
    upgraded_segments: list[str] = []

    def upgraded(event: dict[str, Any]) -> None:
        # A segment whose legacy family holds data opens in upgrade mode. Every window segment does; a session
        # segment may have lost all its rows to merged sessions (removed, put again in a later segment by their
        # new end) and opens in regular mode.
        modes = event["segment_modes"]
        upgrading = [name for name, mode in modes.items() if mode == "upgrade"]
        assert upgrading and set(modes.values()) <= {"upgrade", "regular"}, event
        if case.new is StoreType.TIMESTAMPED_WINDOW_WITH_HEADERS:
            assert len(upgrading) == len(modes), event
        upgraded_segments.extend(upgrading)
        boundaries[event["partition"]] = event["committed_changelog_offset"] + 1

    sent = bounce_one_by_one(cluster, instances, lambda instance: instance.bounce(store_type=case.new.value), upgraded,
                             keys=KEYS)
    assert sorted(boundaries) == list(range(PARTITIONS))

    # The changelog: the old type's records and the new type's have the same format; headers only from the
    # header-aware store (CL-8), each record's raw aggregate traced to the input record it ends with.
    by_value = cluster.input_by_value()
    last_write: dict[tuple[int, Id], int] = {}
    changelog = cluster.changelog_rows()
    for row in changelog:
        row_id = case.row_id(row.key)
        if row.value is None:
            continue  # a merged session removed
        last_write[(row.partition, row_id)] = row.offset
        count, last = parse_aggregate(row.value)
        source = by_value[last]
        assert count >= 1 and (row_id[0], row.timestamp) == (source.key, source.timestamp), row
        legacy = row.offset < boundaries[row.partition]
        assert row.headers == (() if legacy else source.headers), row

    # Every row: the aggregate of its input records; legacy rows in the legacy family of their segment.
    expected = case.expected(cluster)
    legacy_rows = new_rows = 0
    for partition in range(PARTITIONS):
        dump = cluster.dump_segments(partition)
        legacy_keys = {k for d in dump.segments.values() for k in d.column_families.get(case.legacy_cf, {})}
        new_keys = {k for d in dump.segments.values() for k in d.column_families.get(case.new_cf, {})}
        found: dict[Id, tuple[bytes, StoredValue]] = {
            case.row_id(store_key): (store_key, decode_stored(case.new, value))
            for store_key, value in dump.logical_view(case.new).items()}
        assert set(found) == set(expected[partition]), f"partition {partition}: rows lost or never written"
        for row_id, (store_key, stored) in found.items():
            aggregate = expected[partition][row_id]
            assert parse_aggregate(stored.value) == (aggregate.count, aggregate.last.value), (partition, row_id)
            if stored.timestamp is not None:
                assert stored.timestamp == aggregate.timestamp, (partition, row_id, stored)
            if last_write[(partition, row_id)] < boundaries[partition]:
                legacy_rows += 1
                assert store_key in legacy_keys and store_key not in new_keys, (partition, row_id)
                assert stored.headers == (), (partition, row_id, stored)  # read with empty headers (HV-8)
            else:
                new_rows += 1
                assert store_key in new_keys and store_key not in legacy_keys, (partition, row_id)
                assert stored.headers == aggregate.last.headers, (partition, row_id, stored)
    assert legacy_rows > 0 and new_rows > 0, (legacy_rows, new_rows)

    # The store's own reads agree with the dump, legacy rows included (read through the conversion).
    store_reads = 0
    for partition in (0, 1):
        owner = cluster.owner(partition)
        store = open_bytes_store(case.new, Backend.ROCKSDB, name=cluster.store_name, state_dir=owner.config.state_dir,
                                 application_id=cluster.application_id, task_id=owner.config.task_id(partition),
                                 options=dict(case.store_options))
        try:
            for row_id, aggregate in expected[partition].items():
                value = case.read(store, row_id)
                assert value is not None, (partition, row_id)
                stored = decode_stored(case.new, value)
                assert parse_aggregate(stored.value) == (aggregate.count, aggregate.last.value), (partition, row_id)
                legacy = last_write[(partition, row_id)] < boundaries[partition]
                assert stored.headers == (() if legacy else aggregate.last.headers), (partition, row_id, stored)
                store_reads += 1
        finally:
            store.close()
    system_report(f"rolling upgrade {case.old.value}->{case.new.value}",
                  {"input_during_upgrade": sent, "upgraded_segments": len(upgraded_segments), "legacy_rows": legacy_rows,
                   "new_rows": new_rows, "store_reads": store_reads, "changelog_records": len(changelog),
                   "seconds": round(time.monotonic() - started, 1)})
