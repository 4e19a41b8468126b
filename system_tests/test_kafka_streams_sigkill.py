"""SIGKILL of a real Kafka Streams instance under continuous input, at-least-once and exactly-once (``exactly_once_v2``):
kill -9, check what was left read-only, restart, many times over. Mirrors ``StreamsEosTest.test_failure_and_recovery``
of Kafka's ``tests/kafkatest/tests/streams/streams_eos_test.py`` (abort a processor with kill -9 while the driver
produces, restart it, verify every record delivered), here for one instance and each store family.

After every kill, before the restart: the store's committed changelog offset (KIP-1035's ``offsets`` column family,
else the task's ``.checkpoint``) is never ahead of the changelog's committed records (OFF-4), a one-database store
holds exactly the changelog up to it (KV-50), and every input record below the group's committed input offset has
its changelog record (INST-15). At the end no acknowledged input is lost and the oracle agrees; under exactly-once the
committed changelog of a key-value store is the input itself, each record once, in order (no duplicate, no gap).
A kill while Kafka drops an expired segment can leave that segment half deleted: the check after the kill allows it
below the live segments only, counts it in the report, and a restart that then fails says so.

Needs the Kafka Streams instance (``instances/kafka-streams``: Java and Maven). The default env runs one store type
per guarantee (two representatives); ``KSTATE_STREAMS_MATRIX=1`` (tox env ``streams-families``) every
store type the instance describes. ``KSTATE_STREAMS_KILLS`` (default 2, 3 in the matrix) sets the kills.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable
from typing import Any

import pytest
from conftest import Oracle
from helpers import (
    GAP_MS,
    RETENTION_MS,
    STORE_OPTIONS,
    WINDOW_SIZE_MS,
    Aggregate,
    assert_no_acknowledged_input_lost,
    assert_sessions_match_input,
    assert_windows_match_input,
    committed_input,
    decode,
    expected_sessions,
    expected_windows,
    family_cluster,
    family_keys,
    session_state,
    window_state,
)
from test_kafka_streams_migration import NEW, _kafka_streams

from kstate.app.cluster import AppCluster, InputFeeder
from kstate.app.process import InstanceCommand, InstanceError
from kstate.app.processors import StoredValue, parse_aggregate
from kstate.codecs.store_types import STORE_TYPES, Family, StoreType
from kstate.codecs.versioned import LATEST_VALUE_PREFIX, decode_latest_value
from kstate.spark.oracle import python_kv_state
from kstate.store_dump import (
    DatabaseReadError,
    SegmentedStoreDump,
    StoreDump,
    dump_store_dir,
    segment_databases,
)
from kstate.stores.factory import store_directory
from kstate_conformance import rules

PARTITIONS = 2
#: Kafka's `OffsetCheckpoint.OFFSET_UNKNOWN` (OFF-14): a logged store opened before its first changelog write.
OFFSET_UNKNOWN = -4
MATRIX = os.environ.get("KSTATE_STREAMS_MATRIX") == "1"
#: Kills per scenario: 2 in the default env (its time budget), 3 in the matrix.
KILLS = int(os.environ.get("KSTATE_STREAMS_KILLS", "3" if MATRIX else "2"))
GUARANTEES = ["at_least_once", "exactly_once_v2"]
#: Input records each partition commits in a run before the kill's random delay starts.
PROGRESS = 800
#: The default env's scenarios (its time budget): a key-value store under exactly-once and a window store under
#: at-least-once; test_kafka_streams_state_dirs covers the session and versioned families there. The rest with
#: KSTATE_STREAMS_MATRIX=1.
REPRESENTATIVES = {(StoreType.TIMESTAMPED_KV, "exactly_once_v2"), (StoreType.TIMESTAMPED_WINDOW, "at_least_once")}
TYPES = [StoreType.KEY_VALUE, StoreType.TIMESTAMPED_KV, StoreType.TIMESTAMPED_KV_WITH_HEADERS, StoreType.VERSIONED_KV,
         StoreType.WINDOW, StoreType.TIMESTAMPED_WINDOW, StoreType.TIMESTAMPED_WINDOW_WITH_HEADERS, StoreType.SESSION,
         StoreType.SESSION_WITH_HEADERS]
#: Changelog values that are the input's value itself (CL-*): the exactly-once check compares them with the input.
PLAIN_CHANGELOG = {StoreType.KEY_VALUE, StoreType.TIMESTAMPED_KV, StoreType.VERSIONED_KV}


@pytest.fixture(scope="module")
def kafka_streams() -> InstanceCommand:
    """The Kafka Streams 4.4.0 instance: its jar as built (CI builds it before the envs run), else built now."""
    return _kafka_streams(NEW)


def _committed_input(cluster: AppCluster) -> dict[int, int]:
    return committed_input(cluster, PARTITIONS)


def _progressed(before: dict[int, int]) -> Callable[[dict[str, Any]], bool]:
    """A status predicate: every partition committed ``PROGRESS`` records past ``before``, enough input for RocksDB's
    smallest memtable (64 KiB, whatever less the setter asks) to have flushed, so that the kill finds a store."""
    def check(status: dict[str, Any]) -> bool:
        return all(int(status.get("input_next", {}).get(str(p)) or 0) >= before[p] + PROGRESS for p in range(PARTITIONS))
    return check


def _raw(store_type: StoreType, stored: bytes) -> bytes:
    return decode(store_type, stored)[0]


def _store_after_kill(cluster: AppCluster, partition: int, instance_id: str,
                      store_type: StoreType) -> tuple[StoreDump | SegmentedStoreDump, list[str]]:
    """The store of ``partition`` as the kill left it, and the expired segments the kill left half deleted.

    Kafka drops an expired segment by deleting its directory file by file (``AbstractSegments.cleanupExpiredSegments``,
    ``Utils.delete``), so a kill in between can leave a segment whose MANIFEST names a table already deleted. Such a
    segment is unreadable, and allowed only below the live segments: a segment exists only if it was live when it
    was made (WS-10, SS-13), so stream time had reached the newest segment's start, and every segment older than
    ``segmentId(newest start - retention)`` was already being dropped. Any other unreadable segment fails the check.
    """
    instance = cluster.instances[instance_id]
    if STORE_TYPES[store_type].single_database:
        return cluster.store_dump(partition, instance), []
    path = store_directory(instance.config.state_dir, cluster.application_id, instance.config.task_id(partition),
                           cluster.store_name, store_type)
    interval = int(STORE_OPTIONS[STORE_TYPES[store_type].family]["segment_interval_ms"])
    segments = segment_databases(path)
    newest = max((start for _, start in segments), default=0)
    min_live_start = (newest - RETENTION_MS) // interval * interval
    dumps: dict[str, StoreDump] = {}
    half_deleted: list[str] = []
    for database, start in segments:
        try:
            dump = dump_store_dir(database)
        except DatabaseReadError:
            if start >= min_live_start:
                raise
            half_deleted.append(database.name)
            continue
        if dump.column_families:
            dumps[database.name] = dump
    return SegmentedStoreDump(path, dumps), half_deleted


def _check_after_kill(cluster: AppCluster, instance_id: str, store_type: StoreType, guarantee: str,
                      kill: int) -> tuple[int, int, list[str]]:
    """Read-only, the instance dead: offsets never ahead of the data (OFF-4, KV-50), committed input logged (INST-15).
    Returns the stores checked, those found with data beyond their committed offset and the expired segments left
    half deleted (:func:`_store_after_kill`)."""
    changelog = cluster.changelog_rows()  # read_committed: an aborted transaction's records are not the data
    committed_input = _committed_input(cluster)
    checked = ahead = 0
    half_deleted: list[str] = []
    for partition in range(PARTITIONS):
        rows = [r for r in changelog if r.partition == partition]
        dump, dropped = _store_after_kill(cluster, partition, instance_id, store_type)
        half_deleted += dropped
        committed = dump.committed_offset(cluster.changelog_topic, partition)
        if committed is None or committed == OFFSET_UNKNOWN:
            continue
        assert rows and committed <= rows[-1].offset, (f"kill {kill} partition {partition}: committed changelog "
                                                       f"offset {committed} ahead of the changelog")
        if STORE_TYPES[store_type].family is Family.KEY_VALUE:
            expected = python_kv_state([r for r in rows if r.offset <= committed], store_type).get(partition, {})
            found = dump.logical_view(store_type)
            if found != expected:
                # Kafka 4.4 writes without a WAL: a memtable flush between two commits puts data written after the
                # committed offset on disk, with the OPEN status (KV-52). It is then an unclean store, which an
                # exactly-once restart wipes and an at-least-once restart restores over from the offset (OFF-4).
                assert dump.status_open is True, (f"kill {kill} partition {partition}: data beyond the committed "
                                                  f"offset {committed} in a store not marked OPEN")
                ahead += 1
                if guarantee == "at_least_once":
                    ever_logged = {(r.key, r.value) for r in rows}
                    stray = [k for k, v in found.items() if (k, _raw(store_type, v)) not in ever_logged]
                    assert not stray, f"kill {kill} partition {partition}: values never logged: {stray[:3]}"
        checked += 1
    if store_type in PLAIN_CHANGELOG:
        logged = {(r.partition, r.key, r.value) for r in changelog}
        for record in cluster.acked:
            if record.offset < committed_input[record.partition]:
                assert (record.partition, record.key, record.value) in logged, (
                    f"kill {kill}: committed input {record} has no changelog record")
    return checked, ahead, half_deleted


def _assert_exactly_once(cluster: AppCluster) -> None:
    """Under exactly_once_v2 the committed changelog of a key-value store is its input, once each and in order."""
    changelog = cluster.changelog_rows()
    inputs: dict[int, list[tuple[bytes, bytes | None]]] = {}
    for record in sorted(cluster.acked, key=lambda r: (r.partition, r.offset)):
        inputs.setdefault(record.partition, []).append((record.key, record.value))
    for partition in range(PARTITIONS):
        logged = [(r.key, r.value) for r in changelog if r.partition == partition]
        assert logged == inputs.get(partition, []), (
            f"partition {partition}: the committed changelog is not the input exactly once "
            f"({len(logged)} records for {len(inputs.get(partition, []))} inputs)")


def _assert_windowed_at_least_once(cluster: AppCluster, store_type: StoreType) -> int:
    """At-least-once windowed aggregates after kills: a record processed again after a restore is counted again
    (INST-15), so each row has its input's last value and at least its count; every live window or session is
    there. Returns the rows checked."""
    state = cluster.logical_state()
    expected: dict[int, dict[Any, Aggregate]]
    if STORE_TYPES[store_type].family is Family.WINDOW:
        found: dict[int, dict[Any, StoredValue]] = dict(window_state(state, store_type))
        expected = dict(expected_windows(cluster, WINDOW_SIZE_MS))
        position = 1  # a window's start decides its expiry (WS-10)
    else:
        found = dict(session_state(state, store_type))
        expected = dict(expected_sessions(cluster, GAP_MS))
        position = 2  # a session's end decides its expiry (SS-13)
    checked = 0
    for partition in range(PARTITIONS):
        rows, wanted = found.get(partition, {}), expected.get(partition, {})
        for window, stored in rows.items():
            aggregate = wanted.get(window)
            assert aggregate is not None, f"partition {partition} {window}: not made by the input"
            count, last = parse_aggregate(stored.value)
            assert last == aggregate.last.value and count >= aggregate.count, (partition, window, stored, aggregate)
            checked += 1
        stream_time = max((int(w[position]) for w in wanted), default=-1)
        missing = {w for w in wanted if int(w[position]) >= stream_time - RETENTION_MS + 1} - set(rows)
        assert not missing, f"partition {partition}: live rows lost: {sorted(missing)[:5]}"
    return checked


def _assert_state(cluster: AppCluster, oracle: Oracle, store_type: StoreType, guarantee: str) -> int:
    family = STORE_TYPES[store_type].family
    if family in (Family.WINDOW, Family.SESSION) and guarantee == "at_least_once":
        return _assert_windowed_at_least_once(cluster, store_type)
    state = cluster.logical_state()
    if family is Family.KEY_VALUE:
        checked = assert_no_acknowledged_input_lost(cluster, state, store_type)
        report = oracle(cluster.changelog_topic, store_type, state)
        assert report.ok, report.summary()
        return checked
    if family is Family.WINDOW:
        return assert_windows_match_input(cluster, window_state(state, store_type), WINDOW_SIZE_MS, RETENTION_MS)
    if family is Family.SESSION:
        return assert_sessions_match_input(cluster, session_state(state, store_type), GAP_MS, RETENTION_MS)
    # versioned: the latest value of every key is the last acknowledged input's (input timestamps rise per partition;
    # its history is VS-*'s own test). Latest values are the rows under LATEST_VALUE_PREFIX (VER-1, VER-3).
    latest = {p: {k[len(LATEST_VALUE_PREFIX):]: decode_latest_value(v)[0] for k, v in rows.items()
                  if k.startswith(LATEST_VALUE_PREFIX)} for p, rows in state.items()}
    return assert_no_acknowledged_input_lost(cluster, latest, StoreType.KEY_VALUE)


@rules("INST-45", "INST-15", "OFF-4", "KV-50")
@pytest.mark.parametrize("guarantee", GUARANTEES)
@pytest.mark.parametrize("store_type", TYPES, ids=[t.value for t in TYPES])
def test_kafka_streams_sigkill_under_continuous_input_loses_nothing(
        make_cluster: Callable[..., AppCluster], oracle: Oracle, kafka_streams: InstanceCommand,
        system_report: Callable[[str, object], None], store_type: StoreType, guarantee: str) -> None:
    if (store_type, guarantee) not in REPRESENTATIVES and not MATRIX:
        pytest.skip("the family matrix: KSTATE_STREAMS_MATRIX=1 (tox env streams-families)")
    started = time.monotonic()
    kafka_streams.require(store_types=[store_type])
    family = STORE_TYPES[store_type].family
    cluster = family_cluster(make_cluster, store_type, PARTITIONS, instance_command=kafka_streams)
    rng = random.Random(2026)
    keys = family_keys(store_type)
    # EOS: a short transaction timeout, so that a transaction left open by a kill does not hold read_committed
    # readers for Kafka Streams' default 10 s (StreamsConfig's eos producer default) if it is not fenced first.
    # Small memtables: Kafka 4.4 writes without a WAL, so only a RocksDB flush puts data and offsets on disk before a
    # kill; without flushes every store would be empty after a kill and the checks below would check nothing.
    extra = {"processing.guarantee": guarantee, "rocksdb.config.setter": "kstate.streams.SmallMemtables"}
    if guarantee != "at_least_once":
        extra["producer.transaction.timeout.ms"] = "3000"
    instance = cluster.instance("streams", range(PARTITIONS), commit_interval_ms=100, commit_every_records=50,
                                extra=extra)
    _committed_input(cluster)  # waits out a group coordinator still loading on a broker just started
    cluster.produce_batch(per_partition=200, keys=keys, rng=rng)
    feeder = InputFeeder(cluster, rate=600, keys=keys, seed=11)
    feeder.start()
    checked = ahead = 0
    half_deleted: list[str] = []
    try:
        for kill in range(KILLS):
            before = _committed_input(cluster)
            instance.start()
            # Killed while processing: after both partitions committed past where this run began, at a random time.
            instance.wait_until(_progressed(before), 90, "a commit on every partition")
            time.sleep(rng.uniform(0.2, 1.5))
            instance.kill()
            instance.wait_exit(timeout=10)
            stores, beyond, dropped = _check_after_kill(cluster, "streams", store_type, guarantee, kill)
            checked += stores
            ahead += beyond
            half_deleted += dropped
    finally:
        sent = feeder.finish()
    instance.start()
    try:
        instance.wait_caught_up(cluster.input_end(), timeout=120)
    except InstanceError as exc:
        if not half_deleted:
            raise
        raise AssertionError(f"Kafka Streams did not restart over the expired segments a kill left half deleted "
                             f"({', '.join(half_deleted)}): {exc}") from exc
    assert instance.stop() == 0
    rows = _assert_state(cluster, oracle, store_type, guarantee)
    if guarantee == "exactly_once_v2" and store_type in PLAIN_CHANGELOG and family is Family.KEY_VALUE:
        _assert_exactly_once(cluster)
    system_report(f"kafka streams sigkill {store_type.value} {guarantee}",
                  {"kills": KILLS, "continuous_input": sent, "input_records": len(cluster.acked),
                   "stores_checked_after_kill": checked, "stores_ahead_of_offset_and_open": ahead,
                   "expired_segments_half_deleted": len(half_deleted), "rows_checked": rows,
                   "seconds": round(time.monotonic() - started, 1)})
