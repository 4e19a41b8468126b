"""Checks shared by the scenario tests: stored values taken apart, and what each family's store must hold."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from kstate.app.cluster import AppCluster, InputFeeder, InputRecord
from kstate.app.process import InstanceProcess
from kstate.app.processors import StoredValue, decode_stored, parse_aggregate
from kstate.codecs import session_keys, window_keys
from kstate.codecs.store_types import STORE_TYPES, Family, StoreType
from kstate.spark.oracle import State

Decoded = tuple[bytes, int | None, tuple[tuple[str, bytes | None], ...] | None]

#: Small windows and segments so that one test's input (about 3000 ms of event time) spans many segments and
#: expires most of them: segments of 200 ms, windows of 100 ms, retention 600 ms (WS-2); sessions closed after
#: 20 ms without a record of their key (a key gets one about every 40 ms: some sessions merge, some not);
#: versioned history kept 1500 ms in segments of 300 ms (VS-9).
RETENTION_MS = 600
WINDOW_SIZE_MS = 100
GAP_MS = 20
HISTORY_RETENTION_MS = 1500
STORE_OPTIONS: dict[Family, dict[str, Any]] = {
    Family.KEY_VALUE: {},
    Family.VERSIONED: {"history_retention_ms": HISTORY_RETENTION_MS, "segment_interval_ms": 300},
    Family.WINDOW: {"retention_ms": RETENTION_MS, "window_size_ms": WINDOW_SIZE_MS, "segment_interval_ms": 200},
    Family.SESSION: {"retention_ms": RETENTION_MS, "segment_interval_ms": 200},
}
PROCESSOR_OPTIONS: dict[Family, dict[str, int]] = {Family.KEY_VALUE: {}, Family.VERSIONED: {}, Family.WINDOW: {},
                                                   Family.SESSION: {"inactivity_gap_ms": GAP_MS}}


def family_cluster(make_cluster: Callable[..., AppCluster], store_type: StoreType, partitions: int,
                   **settings: Any) -> AppCluster:
    """A cluster of ``store_type`` with its family's small store and processor options (:data:`STORE_OPTIONS`)."""
    family = STORE_TYPES[store_type].family
    return make_cluster(store_type, partitions=partitions, store_options=STORE_OPTIONS[family],
                        processor_options=PROCESSOR_OPTIONS[family], **settings)


def family_keys(store_type: StoreType) -> int:
    """Keys of a family's input: 40 for windows and sessions, so that their windows and sessions fill, else 200."""
    return 40 if STORE_TYPES[store_type].family in (Family.WINDOW, Family.SESSION) else 200


def three_caught_up_after_every_key(cluster: AppCluster, keys: int, preloaded: Iterable[int],
                                    rng: random.Random) -> list[InstanceProcess]:
    """Each key of ``preloaded`` written once, no tombstone, on each of six partitions, then three instances owning
    partitions n and n + 3, started and caught up: where a rolling bounce begins."""
    assert cluster.partitions == 6, cluster.partitions
    for partition in range(cluster.partitions):
        cluster.produce(partition, [cluster.next_record(partition, keys, rng, tombstone_every=0, key=k)
                                    for k in preloaded], flush=False)
    cluster.flush()
    instances = [cluster.instance(f"i{n}", [n, n + 3]) for n in range(3)]
    for instance in instances:
        instance.start()
    for instance in instances:
        instance.wait_caught_up(cluster.input_end())
    return instances


def write_raw_store(path: Path, rows: Mapping[bytes, bytes]) -> None:
    """A RocksDB database at ``path`` (made if missing) holding ``rows`` in its default family, written raw."""
    import rocksdict

    path.mkdir(parents=True, exist_ok=True)
    db: Any = rocksdict.Rdict(str(path), rocksdict.Options(raw_mode=True))
    for key, value in rows.items():
        db[key] = value
    db.close()
    del db  # RocksDB releases its lock only once the handle is collected


def consumed_by_one_instance(cluster: AppCluster, per_partition: int, keys: int, seed: int) -> InstanceProcess:
    """A batch of input on every partition, consumed to its end by one instance that then stops cleanly."""
    cluster.produce_batch(per_partition=per_partition, keys=keys, rng=random.Random(seed))
    instance = cluster.instance("a", list(range(cluster.partitions))).start()
    instance.wait_caught_up(cluster.input_end())
    assert instance.stop() == 0
    return instance


def decode(store_type: StoreType, value: bytes) -> Decoded:
    """A stored value as (raw value, timestamp or None, headers or None) for its store type's layout."""
    stored = decode_stored(store_type, value)
    return stored.value, stored.timestamp, stored.headers


def assert_no_acknowledged_input_lost(cluster: AppCluster, state: State, store_type: StoreType) -> int:
    """Every key's raw value is the value of its last acknowledged input record; deleted keys are absent.
    Returns the number of keys checked."""
    checked = 0
    for partition, latest in cluster.latest_input().items():
        entries = state.get(partition, {})
        for key, record in latest.items():
            if record.value is None:
                assert key not in entries, f"partition {partition} key {key!r}: deleted at input offset {record.offset}"
                continue
            assert key in entries, f"partition {partition} key {key!r}: input offset {record.offset} lost"
            raw, _, _ = decode(store_type, entries[key])
            assert raw == record.value, f"partition {partition} key {key!r}: {raw!r} != input {record.value!r}"
            checked += 1
        assert set(entries) <= set(latest), f"partition {partition}: keys never written {set(entries) - set(latest)}"
    return checked


def input_headers(record: InputRecord) -> tuple[tuple[str, bytes | None], ...]:
    return record.headers


# --- windowed aggregations (kstate.app.processors): what the stores must hold, from the acknowledged input ---------

#: ``(key, window start)`` or ``(key, session start, session end)``.
WindowId = tuple[bytes, int]
SessionId = tuple[bytes, int, int]
RowId = TypeVar("RowId", WindowId, SessionId)


@dataclass(frozen=True)
class Aggregate:
    """What a windowed processor's aggregate must be: the count, and the last record aggregated."""

    count: int
    last: InputRecord
    timestamp: int


def _inputs_in_offset_order(cluster: AppCluster) -> dict[int, list[InputRecord]]:
    by_partition: dict[int, list[InputRecord]] = {}
    for record in sorted(cluster.acked, key=lambda r: (r.partition, r.offset)):
        by_partition.setdefault(record.partition, []).append(record)
    return by_partition


def _aggregates(cluster: AppCluster, add: Callable[[dict[RowId, Aggregate], InputRecord], None]
                ) -> dict[int, dict[RowId, Aggregate]]:
    # Every partition's aggregates, ``add`` folding in each non-null input record in offset order.
    out: dict[int, dict[RowId, Aggregate]] = {}
    for partition, records in _inputs_in_offset_order(cluster).items():
        aggregates = out.setdefault(partition, {})
        for record in records:
            if record.value is not None:
                add(aggregates, record)
    return out


def _assert_rows_match(cluster: AppCluster, expected: dict[int, dict[RowId, Aggregate]],
                       found: dict[int, dict[RowId, StoredValue]], what: str, absent: str,
                       check: Callable[[int, RowId, StoredValue, Aggregate], None],
                       live: Callable[[dict[RowId, Aggregate]], set[RowId]]) -> int:
    # Each stored row is an expected one and passes ``check``; every ``live`` expected row is stored.
    checked = 0
    for partition in range(cluster.partitions):
        aggregates = expected.get(partition, {})
        rows = found.get(partition, {})
        for row, stored in rows.items():
            aggregate = aggregates.get(row)
            assert aggregate is not None, f"partition {partition} {what} {row}: {absent}"
            check(partition, row, stored, aggregate)
            checked += 1
        missing = live(aggregates) - set(rows)
        assert not missing, f"partition {partition}: live {what}s lost: {sorted(missing)[:5]}"
    return checked


def expected_windows(cluster: AppCluster, window_size: int) -> dict[int, dict[WindowId, Aggregate]]:
    """Per partition, each tumbling window's aggregate over the non-null input records in offset order
    (input timestamps increase per partition, so no record is late)."""
    def add(windows: dict[WindowId, Aggregate], record: InputRecord) -> None:
        window = (record.key, record.timestamp - record.timestamp % window_size)
        old = windows.get(window)
        windows[window] = Aggregate((old.count if old else 0) + 1, record,
                                    max(old.timestamp if old else record.timestamp, record.timestamp))

    return _aggregates(cluster, add)


def expected_sessions(cluster: AppCluster, gap: int) -> dict[int, dict[SessionId, Aggregate]]:
    """Per partition, each session's aggregate: a record joins (and merges) every session of its key that ends
    at or after ``ts - gap`` and starts at or before ``ts + gap``."""
    def add(sessions: dict[SessionId, Aggregate], record: InputRecord) -> None:
        ts = record.timestamp
        overlapping = [s for s in sessions if s[0] == record.key and s[2] >= ts - gap and s[1] <= ts + gap]
        start = min([ts, *(s[1] for s in overlapping)])
        end = max([ts, *(s[2] for s in overlapping)])
        count = sum(sessions.pop(s).count for s in overlapping) + 1
        sessions[(record.key, start, end)] = Aggregate(count, record, ts)

    return _aggregates(cluster, add)


def _rows(state: State, store_type: StoreType, row_id: Callable[[bytes], RowId]) -> dict[int, dict[RowId, StoredValue]]:
    return {partition: {row_id(store_key): decode_stored(store_type, stored) for store_key, stored in entries.items()}
            for partition, entries in state.items()}


def _window_id(store_key: bytes) -> WindowId:
    decoded = window_keys.PLAIN.decode(store_key)
    assert decoded.seqnum == 0, decoded  # an aggregation's store keeps no duplicates (WS-4)
    return decoded.key, decoded.timestamp


def _session_id(store_key: bytes) -> SessionId:
    decoded = session_keys.PLAIN.decode(store_key)
    return decoded.key, decoded.start, decoded.end


def window_state(state: State, store_type: StoreType) -> dict[int, dict[WindowId, StoredValue]]:
    """Each partition's window store rows (``[key][start][seqnum]`` -> value) taken apart, seqnum 0 checked."""
    return _rows(state, store_type, _window_id)


def assert_windows_match_input(cluster: AppCluster, found: dict[int, dict[WindowId, StoredValue]],
                               window_size: int, retention: int,
                               legacy: Callable[[int, WindowId], bool] = lambda _p, _w: False) -> int:
    """Every window in the stores holds the aggregate of its input records (count, last value, largest
    timestamp) and, in a header-aware layout, the last record's headers, or none for a ``legacy`` row (written
    before an upgrade, HV-8); every window still live at the end (start >= stream time - retention + 1, WS-10)
    is there. Returns the number of windows checked."""
    def check(partition: int, window: WindowId, stored: StoredValue, aggregate: Aggregate) -> None:
        assert parse_aggregate(stored.value) == (aggregate.count, aggregate.last.value), (partition, window, stored)
        if stored.timestamp is not None:
            assert stored.timestamp == aggregate.timestamp, (partition, window, stored)
        if stored.headers is not None:
            assert stored.headers == (() if legacy(partition, window) else aggregate.last.headers), (
                partition, window, stored)

    def live(windows: dict[WindowId, Aggregate]) -> set[WindowId]:
        stream_time = max((start for _key, start in windows), default=-1)
        return {w for w in windows if w[1] >= stream_time - retention + 1}

    return _assert_rows_match(cluster, expected_windows(cluster, window_size), found, "window", "never written",
                              check, live)


def bounce_one_by_one(cluster: AppCluster, instances: list[InstanceProcess], bounce: Callable[[InstanceProcess], None],
                      on_opened: Callable[[dict[str, Any]], None], *, keys: int, rate: float = 300,
                      seed: int = 7, settle: float = 0.7) -> int:
    """A rolling bounce under continuous input (``rate`` records a second over ``keys`` keys): each instance in
    turn is ``bounce``d (stopped, changed, started), waited for until it runs, and each of its ``opened`` events
    of that start handed to ``on_opened``; then every instance catches up with the input and all stop cleanly.
    Returns how many records the continuous input sent."""
    feeder = InputFeeder(cluster, rate=rate, keys=keys, seed=seed)
    feeder.start()
    try:
        time.sleep(0.5)
        for instance in instances:
            bounce(instance)
            instance.wait_running()
            for event in instance.events("opened"):
                if event["pid"] == instance.pid:
                    on_opened(event)
            time.sleep(settle)
    finally:
        sent = feeder.finish()
    for instance in instances:
        instance.wait_caught_up(cluster.input_end())
    cluster.stop_all()
    return sent


def session_state(state: State, store_type: StoreType) -> dict[int, dict[SessionId, StoredValue]]:
    """Each partition's session store rows (``[key][end][start]`` -> aggregate) taken apart."""
    return _rows(state, store_type, _session_id)


def assert_sessions_match_input(cluster: AppCluster, found: dict[int, dict[SessionId, StoredValue]], gap: int,
                                retention: int) -> int:
    """Every session in the stores is one the input makes, with its aggregate (count, last value) and, in a
    header-aware layout, the last record's headers; every session still live at the end (end >= stream time -
    retention + 1, SS-13) is there. Returns the number of sessions checked."""
    def check(partition: int, session: SessionId, stored: StoredValue, aggregate: Aggregate) -> None:
        assert parse_aggregate(stored.value) == (aggregate.count, aggregate.last.value), (partition, session)
        if stored.headers is not None:
            assert stored.headers == aggregate.last.headers, (partition, session, stored)

    def live(sessions: dict[SessionId, Aggregate]) -> set[SessionId]:
        stream_time = max((end for _key, _start, end in sessions), default=-1)
        return {s for s in sessions if s[2] >= stream_time - retention + 1}

    return _assert_rows_match(cluster, expected_sessions(cluster, gap), found, "session", "not a session of the input",
                              check, live)


def assert_state_matches_input(cluster: AppCluster, store_type: StoreType) -> int:
    """The stores hold what the acknowledged input makes, by family; returns the rows checked. A versioned store is
    not checked here (0): byte for byte with a restore of its changelog is its scenarios' check, and its history is
    VS-* of its own test."""
    family = STORE_TYPES[store_type].family
    state = cluster.logical_state()
    if family is Family.KEY_VALUE:
        return assert_no_acknowledged_input_lost(cluster, state, store_type)
    if family is Family.WINDOW:
        return assert_windows_match_input(cluster, window_state(state, store_type), WINDOW_SIZE_MS, RETENTION_MS)
    if family is Family.SESSION:
        return assert_sessions_match_input(cluster, session_state(state, store_type), GAP_MS, RETENTION_MS)
    return 0

def committed_input(cluster: AppCluster, partitions: int) -> dict[int, int]:
    """The group's committed input offsets; a coordinator still loading or moving, or one that did not answer within
    the call's timeout (a loaded machine, right after a kill), is asked again."""
    from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

    consumer = Consumer({"bootstrap.servers": cluster.broker.bootstrap, "group.id": cluster.application_id,
                         "enable.auto.commit": False})
    try:
        for attempt in range(10):
            try:
                committed = consumer.committed([TopicPartition(cluster.input_topic, p) for p in range(partitions)],
                                               timeout=10)
                return {tp.partition: max(tp.offset, 0) for tp in committed}
            except KafkaException as exc:
                error = exc.args[0]
                if not (error.retriable() or error.code() == KafkaError._TIMED_OUT) or attempt == 9:
                    raise
                time.sleep(0.5)
        raise AssertionError("unreachable")
    finally:
        consumer.close()
