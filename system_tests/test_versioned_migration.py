"""KIP-889's manual migration of a running application's key-value store to a versioned store, under continuous
input with out-of-order timestamps, one instance at a time (:func:`kstate.app.migration.migrate_to_versioned`,
VS-30 to VS-33): stop the instance, wipe its key-value store, set the changelog's ``min.compaction.lag.ms`` to
history retention + 1 day, restore a versioned store from the same changelog, restart the instance on the
versioned store. Afterwards every ``get(key, as_of)`` over the retained history (``as_of`` >= stream time -
history retention, VS-9) and every ``get(key)`` (VS-8) equals the oracle: the versions each key's changelog
records make under the spec's versioned semantics (a record a version at its timestamp, a tombstone a version
without value, the same timestamp replaced, a put older than stream time - grace not put; VS-6, VS-7), computed
here independently of the store."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from helpers import bounce_one_by_one

from kstate.app.cluster import AppCluster
from kstate.app.migration import (
    MIN_COMPACTION_LAG,
    BrokerTopicConfigAdmin,
    changelog_from_broker,
    migrate_to_versioned,
)
from kstate.app.process import InstanceProcess
from kstate.codecs import changelog as cl
from kstate.codecs.store_types import StoreType
from kstate.codecs.versioned import LATEST_VALUE_SEGMENT_ID
from kstate.kafka.changelog_topics import describe_topic_config
from kstate.spark.oracle import ChangelogRow
from kstate.stores.api import Backend
from kstate.stores.factory import open_bytes_store

PARTITIONS = 6
KEYS = 60
#: Short enough that the test's event time (about 1 ms per input record, 3000 ms in all) expires history.
HISTORY_RETENTION_MS = 1500
SEGMENT_INTERVAL_MS = 300
#: Input timestamps go back by up to this much: out-of-order versions, all within the grace period.
JITTER_MS = 40
VERSIONED_OPTIONS = {"history_retention_ms": HISTORY_RETENTION_MS, "segment_interval_ms": SEGMENT_INTERVAL_MS}


@dataclass
class VersionsOracle:
    """One partition's versions per key, from its changelog records in offset order (VS-6, VS-7, VS-9)."""

    grace_ms: int
    stream_time: int = -1
    versions: dict[bytes, dict[int, bytes | None]] = field(default_factory=dict)
    not_put: int = 0

    def apply(self, rows: Iterable[ChangelogRow]) -> VersionsOracle:
        for row in rows:
            if row.timestamp < self.stream_time - self.grace_ms:
                self.not_put += 1  # older than the grace period: not put
                continue
            self.stream_time = max(self.stream_time, row.timestamp)
            self.versions.setdefault(row.key, {})[row.timestamp] = row.value  # same timestamp: replaced
        return self

    def get_as_of(self, key: bytes, as_of: int) -> tuple[bytes, int, int | None] | None:
        """``(value, validFrom, validTo or None)`` of the version valid at ``as_of``; None for none or a tombstone."""
        versions = self.versions.get(key, {})
        older = [ts for ts in versions if ts <= as_of]
        if not older:
            return None
        valid_from = max(older)
        value = versions[valid_from]
        if value is None:
            return None
        newer = [ts for ts in versions if ts > valid_from]
        return value, valid_from, min(newer) if newer else None

    def latest(self, key: bytes) -> tuple[bytes, int] | None:
        versions = self.versions.get(key, {})
        if not versions:
            return None
        valid_from = max(versions)
        value = versions[valid_from]
        return None if value is None else (value, valid_from)


def _as_of_points(oracle: VersionsOracle, key: bytes) -> set[int]:
    """Every version's timestamp and the millisecond before it, the retention bound and beyond the stream time."""
    low = oracle.stream_time - HISTORY_RETENTION_MS
    points = {low, low + 1, oracle.stream_time, oracle.stream_time + 100}
    for ts in oracle.versions.get(key, {}):
        points.update((ts - 1, ts, ts + 1))
    return {p for p in points if p >= low}


def test_kip889_migration_of_a_running_application_to_versioned_stores(
        make_cluster: Callable[..., AppCluster], system_report: Callable[[str, object], None]) -> None:
    started = time.monotonic()
    cluster = make_cluster(StoreType.TIMESTAMPED_KV, partitions=PARTITIONS, timestamp_jitter_ms=JITTER_MS)
    cluster.require(store_types=[StoreType.TIMESTAMPED_KV, StoreType.VERSIONED_KV], events=["opened", "restored"])
    cluster.produce_batch(per_partition=200, keys=KEYS, rng=random.Random(21))
    instances = [cluster.instance(f"i{n}", [n, n + 3]) for n in range(3)]
    for instance in instances:
        instance.start()
    for instance in instances:
        instance.wait_caught_up(cluster.input_end())
    admin = BrokerTopicConfigAdmin.for_broker(cluster.broker)
    migrated_records = 0

    def migrate(instance: InstanceProcess) -> None:
        nonlocal migrated_records
        # Stop the instance: nothing writes its stores or their changelog partitions while they migrate.
        assert instance.stop() == 0
        for partition in instance.config.partitions:
            records = changelog_from_broker(cluster.broker, cluster.changelog_topic, partition)
            result = migrate_to_versioned(
                store_name=cluster.store_name, history_retention_ms=HISTORY_RETENTION_MS,
                segment_interval_ms=SEGMENT_INTERVAL_MS, changelog_records=records, admin=admin,
                state_dir=instance.config.state_dir, application_id=cluster.application_id,
                task_id=instance.config.task_id(partition), from_store_type=StoreType.TIMESTAMPED_KV)
            assert result.restored.records == len(records) > 0
            assert result.min_compaction_lag_ms == HISTORY_RETENTION_MS + cl.VERSIONED_ADDITIONAL_COMPACTION_LAG_MS
            migrated_records += len(records)
        instance.start(store_type=StoreType.VERSIONED_KV.value, store_options=dict(VERSIONED_OPTIONS))

    def restored_nothing(event: dict[str, Any]) -> None:
        assert event["store_type"] == StoreType.VERSIONED_KV.value, event
        # The migration restored everything already: the instance's restore starts after its committed offset.
        assert event["committed_changelog_offset"] is not None, event

    sent = bounce_one_by_one(cluster, instances, migrate, restored_nothing, keys=KEYS, seed=22)
    for instance in instances:
        assert all(e["records"] == 0 for e in instance.events("restored") if e["pid"] == instance.pid)
    config = describe_topic_config(cluster.broker, cluster.changelog_topic)
    assert config.get(MIN_COMPACTION_LAG) == str(HISTORY_RETENTION_MS + cl.VERSIONED_ADDITIONAL_COMPACTION_LAG_MS), config

    # The changelog is the input, record for record, before the migration (key-value) and after (versioned,
    # VS-16): each value at its input record's key and timestamp; every acknowledged input record logged.
    changelog = cluster.changelog_rows()
    by_value = cluster.input_by_value()
    for row in changelog:
        if row.value is not None:
            source = by_value[row.value]
            assert (row.partition, row.key, row.timestamp, row.headers) == (source.partition, source.key,
                                                                            source.timestamp, ()), row
    assert {r.value for r in changelog if r.value is not None} == set(by_value)
    gets = out_of_order = expired_keys = logical_segments = 0
    for partition in range(PARTITIONS):
        rows = [r for r in changelog if r.partition == partition]
        out_of_order += sum(1 for a, b in pairwise(rows) if b.timestamp < a.timestamp)
        oracle = VersionsOracle(grace_ms=HISTORY_RETENTION_MS).apply(rows)
        assert oracle.not_put == 0  # the jitter stays within the grace period
        # On disk: the latest-value segment (-1) holds each key whose latest version is not a tombstone (VER-2).
        segments = cluster.dump(partition).logical_segments()
        latest_values = {key for key in oracle.versions if oracle.latest(key) is not None}
        assert set(segments.get(LATEST_VALUE_SEGMENT_ID, {})) == latest_values, partition
        assert len(segments) > 2, sorted(segments)  # history kept in several segments
        logical_segments += len(segments)
        owner = cluster.owner(partition)
        store = open_bytes_store(StoreType.VERSIONED_KV, Backend.ROCKSDB, name=cluster.store_name,
                                 state_dir=owner.config.state_dir, application_id=cluster.application_id,
                                 task_id=owner.config.task_id(partition), options=dict(VERSIONED_OPTIONS))
        try:
            for key in oracle.versions:
                latest = store.get(key)  # type: ignore[attr-defined]
                assert (None if latest is None else (latest.value, latest.timestamp)) == oracle.latest(key), key
                if max(oracle.versions[key]) < oracle.stream_time - HISTORY_RETENTION_MS:
                    expired_keys += 1
                for as_of in sorted(_as_of_points(oracle, key)):
                    found = store.get(key, as_of)  # type: ignore[attr-defined]
                    actual = None if found is None else (found.value, found.timestamp, found.valid_to)
                    assert actual == oracle.get_as_of(key, as_of), (partition, key, as_of)
                    gets += 1
        finally:
            store.close()
    assert out_of_order > 0
    system_report("versioned migration (KIP-889)",
                  {"input_during_migration": sent, "migrated_changelog_records": migrated_records,
                   "changelog_records": len(changelog), "out_of_order_records": out_of_order, "gets_checked": gets,
                   "keys_with_expired_history": expired_keys, "logical_segments": logical_segments,
                   "seconds": round(time.monotonic() - started, 1)})
