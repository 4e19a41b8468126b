"""What only a real broker does, and restore must be right about: a changelog the log cleaner compacted (RST-1,
CL-15), a changelog written by exactly-once transactions with aborted ones among them (RST-9, RST-3), a broker
restarted or killed in the middle of a restore (RST-3, KV-50), and the changelog configuration a broker reports
back (CL-15 to CL-17).

Each scenario needs a capability the embedded Tansu broker lacks (runtime notes §1); on a provider without it, it
is skipped naming the capability and the ``apache`` provider that has it.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

import pytest

from kstate.app.restore_io import restore_from_changelog
from kstate.codecs import changelog as cl
from kstate.codecs.store_types import StoreType
from kstate.kafka.broker import ApacheBroker, Broker, BrokerUnavailable
from kstate.kafka.changelog_topics import (
    RawRecord,
    consume_all,
    create_changelog_topic,
    create_topic,
    iter_batches,
    produce,
)
from kstate.stores.api import Backend, KeyValueBytesStore, TopicPartition
from kstate.stores.factory import open_kv_store
from kstate_conformance import rules

T0 = 1_700_000_000_000
#: How long a scenario waits for the log cleaner before it declares that compaction never ran.
COMPACTION_WAIT_S = 90.0


def require(broker: Broker, capable: bool, capability: str) -> None:
    """Skip, naming the missing capability, unless the broker has it."""
    if not capable:
        pytest.skip(f"requires the apache provider: the {broker.provider} broker lacks {capability}")


def restartable(broker: Broker) -> ApacheBroker:
    if not isinstance(broker, ApacheBroker):
        pytest.skip(f"requires the apache provider: the {broker.provider} broker cannot be restarted by the test "
                    "with its data kept")
    return broker


def open_store(store_type: StoreType, state_dir: Path, app: str) -> KeyValueBytesStore:
    return open_kv_store(store_type, Backend.ROCKSDB, name="s", state_dir=state_dir, application_id=app)


def latest(records: list[RawRecord]) -> dict[bytes, RawRecord]:
    """Each key's last record, in changelog order (RST-1)."""
    out: dict[bytes, RawRecord] = {}
    for record in records:
        assert record[0] is not None
        out[record[0]] = record
    return out


def assert_store_holds(store: KeyValueBytesStore, store_type: StoreType, expected: dict[bytes, RawRecord],
                       others: Collection[bytes] = ()) -> None:
    """Each key holds its last record converted for ``store_type`` (RST-1, RST-2), a tombstoned key nothing, and
    each of ``others`` (keys no applied record wrote) nothing."""
    for key, (_k, value, timestamp, headers) in expected.items():
        want = None if value is None else cl.restore_value(store_type, cl.ChangelogRecord(key, value, timestamp,
                                                                                          tuple(headers)))
        assert store.get(key) == want, key
    for key in set(others) - set(expected):
        assert store.get(key) is None, key


# --- restore from a compacted changelog ------------------------------------------------------------------------

#: Segments rolled every 100 ms; the cleaner may clean as soon as 1 % of the log is dirty, with no lag, and
#: drops a tombstone 100 ms after a cleaning kept it. The broker's cleaner looks for work every 200 ms.
FAST_COMPACTION = {"segment.ms": "100", "min.cleanable.dirty.ratio": "0.01", "min.compaction.lag.ms": "0",
                   "delete.retention.ms": "100"}


def _compacted_changelog(broker: Broker, topic: str, rounds: int, keys: int, rng: random.Random) -> list[RawRecord]:
    """Write ``rounds`` rounds over ``keys`` keys (about a tenth of each round tombstones), each round in a segment
    of its own (a pause longer than segment.ms between rounds), and a last record that rolls the last round's
    segment, so that every round is in a closed segment the cleaner may compact. Returns what was written."""
    written: list[RawRecord] = []
    for r in range(rounds):
        batch: list[RawRecord] = []
        for k in rng.sample(range(keys), keys // 2):
            value = None if rng.random() < 0.1 else b"r%d-k%d" % (r, k)
            batch.append((b"k%04d" % k, value, T0 + len(written) + len(batch), [("round", b"%d" % r)]))
        produce(broker, topic, batch)
        written += batch
        time.sleep(0.15)
    last: RawRecord = (b"roll", b"last", T0 + len(written), [])
    produce(broker, topic, [last])
    return [*written, last]


def _wait_until_compacted(broker: Broker, topic: str, written: int) -> list[dict[str, Any]]:
    """The topic's records once the cleaner has removed some (bounded by :data:`COMPACTION_WAIT_S`)."""
    deadline = time.monotonic() + COMPACTION_WAIT_S
    while True:
        records = consume_all(broker, topic)
        if len(records) < written:
            return records
        if time.monotonic() > deadline:
            pytest.fail(f"{topic}: the log cleaner removed nothing from {written} records in {COMPACTION_WAIT_S:.0f} s")
        time.sleep(0.5)


@rules("RST-1", "RST-2", "RST-3", "CL-15")
@pytest.mark.parametrize("store_type", [StoreType.KEY_VALUE, StoreType.TIMESTAMPED_KV_WITH_HEADERS],
                         ids=lambda t: t.value)
def test_restore_from_a_compacted_changelog(broker: Broker, tmp_path: Path, app_name: str,
                                            store_type: StoreType) -> None:
    """The cleaner ran (records gone, offsets with gaps, and what it kept of a key is its last record) and restore
    still lands on each key's last record (RST-1, RST-2), committing the changelog's last offset (RST-3): compaction keeps what restore needs (CL-15)."""
    require(broker, broker.capabilities.compaction, "compaction (its log cleaner never runs)")
    topic = cl.changelog_topic_name(app_name, "s")
    create_topic(broker, topic, 1, {**cl.changelog_topic_config(store_type), **FAST_COMPACTION})
    written = _compacted_changelog(broker, topic, rounds=8, keys=200, rng=random.Random(3))
    compacted = _wait_until_compacted(broker, topic, len(written))
    offsets = [r["offset"] for r in compacted]
    assert offsets != list(range(len(offsets))), "records are gone but the offsets have no gaps"
    assert offsets[-1] == len(written) - 1  # the last record is in the active segment, never cleaned
    # What compaction kept is each key's last record, wherever it kept one.
    expected = latest(written)
    by_key = {r["key"]: r for r in compacted}
    for key, record in by_key.items():
        assert (record["value"], record["timestamp"]) == expected[key][1:3], key

    store = open_store(store_type, tmp_path, app_name)
    try:
        outcome = restore_from_changelog(store, store_type, broker.bootstrap, TopicPartition(topic, 0),
                                         batch_size=50, liveness=broker.check_alive)
        # The cleaner may have gone on since it was observed: restore reads at most what was read then.
        assert outcome.records <= len(compacted) < len(written)
        assert outcome.first_offset is not None and outcome.first_offset >= offsets[0]
        assert outcome.last_offset == len(written) - 1
        assert store.committed_offset(TopicPartition(topic, 0)) == len(written) - 1
        assert_store_holds(store, store_type, expected)
    finally:
        store.close()


# --- exactly-once changelogs -------------------------------------------------------------------------------------

def _transactions(broker: Broker, topic: str, plan: list[tuple[bool, list[RawRecord]]],
                  transactional_id: str) -> tuple[list[tuple[int, RawRecord]], list[tuple[int, RawRecord]]]:
    """Write each ``(commit, records)`` of ``plan`` as one transaction, committed or aborted; returns the
    (offset, record) pairs of the committed records and of the aborted ones."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": transactional_id,
                         "acks": "all", "linger.ms": 2})
    committed: list[tuple[int, RawRecord]] = []
    aborted: list[tuple[int, RawRecord]] = []
    # A delivery report has no headers: its key, value and timestamp pair it with the record sent.
    delivered: list[tuple[int, tuple[bytes | None, bytes | None, int]]] = []

    def on_delivery(err: Any, msg: Any) -> None:
        assert err is None, err
        delivered.append((msg.offset(), (msg.key(), msg.value(), msg.timestamp()[1])))

    producer.init_transactions(30)
    for commit, records in plan:
        delivered.clear()
        producer.begin_transaction()
        for key, value, timestamp, headers in records:
            producer.produce(topic, key=key, value=value, timestamp=timestamp, headers=list(headers) or None,
                             partition=0, on_delivery=on_delivery)
        assert producer.flush(30) == 0
        assert [sent for _, sent in delivered] == [record[:3] for record in records]
        pairs = [(offset, record) for (offset, _), record in zip(delivered, records, strict=True)]
        if commit:
            producer.commit_transaction(30)
            committed += pairs
        else:
            producer.abort_transaction(30)
            aborted += pairs
    return committed, aborted


@rules("RST-9", "RST-3", "RST-1")
def test_restore_under_read_committed_skips_aborted_transactions(broker: Broker, tmp_path: Path,
                                                                 app_name: str) -> None:
    """A changelog of committed and aborted transactions (the last one aborted): restore applies exactly the
    committed records (RST-9), each batch committed with the offset of its last applied record (RST-3); a second
    restore applies nothing, and one after a further transaction applies exactly its records."""
    require(broker, broker.capabilities.read_committed_filters_aborted,
            "read_committed filtering (it delivers aborted records)")
    store_type = StoreType.TIMESTAMPED_KV_WITH_HEADERS
    topic = create_changelog_topic(broker, app_name, "s", store_type, 1)
    rng = random.Random(5)

    def records(n: int, tag: bytes) -> list[RawRecord]:
        return [(b"k%02d" % rng.randrange(30), tag + b"-%d" % i, T0 + i, [("t", tag)]) for i in range(n)]

    # Aborted transactions overwrite committed keys and write keys nothing committed writes.
    plan = [(True, records(20, b"c1")), (False, [*records(15, b"a1"), (b"only-aborted", b"x", T0, [])]),
            (True, records(20, b"c2")), (False, records(10, b"a2")), (True, records(5, b"c3")),
            (False, [*records(12, b"a3"), (b"only-aborted-2", b"y", T0, [])])]
    committed, aborted = _transactions(broker, topic, plan, f"{app_name}-0_0")
    committed_offsets = [offset for offset, _ in committed]

    # The aborted records are in the log: a read_uncommitted reader gets them.
    uncommitted = [m.offset() for batch in iter_batches(broker.bootstrap, topic, 0, timeout=15,
                                                        config={"isolation.level": "read_uncommitted"})
                   for m in batch]
    assert set(uncommitted) == set(committed_offsets) | {offset for offset, _ in aborted}, (
        sorted(uncommitted), committed_offsets, [offset for offset, _ in aborted])
    assert [r["offset"] for r in consume_all(broker, topic)] == committed_offsets

    tp = TopicPartition(topic, 0)
    store = open_store(store_type, tmp_path, app_name)
    try:
        outcome = restore_from_changelog(store, store_type, broker.bootstrap, tp, batch_size=7,
                                         liveness=broker.check_alive)
        assert outcome.records == len(committed)
        assert (outcome.first_offset, outcome.last_offset) == (committed_offsets[0], committed_offsets[-1])
        assert store.committed_offset(tp) == committed_offsets[-1]
        assert_store_holds(store, store_type, latest([r for _, r in committed]),
                           {r[0] for _, r in aborted if r[0] is not None})

        again = restore_from_changelog(store, store_type, broker.bootstrap, tp, liveness=broker.check_alive)
        assert (again.records, again.first_offset) == (0, None)
        assert store.committed_offset(tp) == committed_offsets[-1]

        more, _ = _transactions(broker, topic, [(True, records(6, b"c4"))], f"{app_name}-0_0")
        after = restore_from_changelog(store, store_type, broker.bootstrap, tp, liveness=broker.check_alive)
        assert after.records == len(more)
        assert (after.first_offset, after.last_offset) == (more[0][0], more[-1][0])
        assert store.committed_offset(tp) == more[-1][0]
        assert_store_holds(store, store_type, latest([r for _, r in committed + more]))
    finally:
        store.close()


# --- a broker restarted or killed in the middle of a restore ----------------------------------------------------

RESTART_RECORDS = 3000
#: Small fetches and a small prefetch queue (about 128 KB, some 120 records of 1 KB): at the restart nearly the
#: whole changelog is still on the broker, so the restore must fetch it from the restarted broker.
SMALL_FETCHES = {"fetch.max.bytes": 65536, "message.max.bytes": 65536, "max.partition.fetch.bytes": 32768, "queued.max.messages.kbytes": 128,
                 "queued.min.messages": 50}


def _large_changelog(broker: Broker, app_name: str, store_type: StoreType) -> tuple[str, list[RawRecord]]:
    """The changelog topic of store ``s`` and the RESTART_RECORDS records of 1 KB produced to it (RST-1)."""
    topic = create_changelog_topic(broker, app_name, "s", store_type, 1)
    rng = random.Random(9)
    written: list[RawRecord] = [(b"k%03d" % rng.randrange(400), None if i % 37 == 0 else rng.randbytes(1000),
                                 T0 + i, []) for i in range(RESTART_RECORDS)]
    assert produce(broker, topic, written) == RESTART_RECORDS
    return topic, written


def _once_past_offset_300(action: Callable[[], None]) -> tuple[Callable[[int], None], list[int]]:
    """An ``after_batch`` hook that runs ``action`` once, after the first batch that reaches offset 300, and the
    list that keeps that batch's last offset (a broker fault in the middle of a restore, RST-3)."""
    fired: list[int] = []

    def hook(last: int) -> None:
        if not fired and last >= 300:
            fired.append(last)
            action()

    return hook, fired


@rules("RST-1", "RST-3")
def test_a_broker_restart_in_the_middle_of_a_restore_loses_nothing(broker: Broker, tmp_path: Path, app_name: str,
                                                                   system_report: Callable[[str, Any], None]) -> None:
    """The broker is stopped and started again (same data, same address) after the restore's third batch: the
    same restore goes on from where it was and ends with every record applied (RST-1, RST-3)."""
    apache = restartable(broker)
    store_type = StoreType.TIMESTAMPED_KV
    topic, written = _large_changelog(broker, app_name, store_type)

    def restart() -> None:
        started = time.monotonic()
        apache.restart()
        system_report("broker restart", {"seconds": round(time.monotonic() - started, 1),
                                         "jvm_start_to_first_answer": round(apache.start_times[-1], 1)})

    restart_once, restarted_at = _once_past_offset_300(restart)

    tp = TopicPartition(topic, 0)
    store = open_store(store_type, tmp_path, app_name)
    try:
        outcome = restore_from_changelog(store, store_type, broker.bootstrap, tp, batch_size=100,
                                         liveness=broker.check_alive, after_batch=restart_once, config=SMALL_FETCHES)
        assert restarted_at and restarted_at[0] < RESTART_RECORDS // 2, restarted_at
        assert (outcome.records, outcome.first_offset, outcome.last_offset) == (
            RESTART_RECORDS, 0, RESTART_RECORDS - 1)
        assert store.committed_offset(tp) == RESTART_RECORDS - 1
        assert_store_holds(store, store_type, latest(written))
    finally:
        store.close()
    # The broker kept the changelog across its restart.
    assert len(consume_all(broker, topic)) == RESTART_RECORDS


@rules("RST-1", "RST-3", "KV-50")
def test_a_broker_killed_in_the_middle_of_a_restore_resumes_from_the_committed_offset(
        broker: Broker, tmp_path: Path, app_name: str) -> None:
    """The broker is SIGKILLed during a restore: the restore fails naming the broker, the store keeps the batches
    committed before (RST-3, KV-50); with the broker back, a new restore starts right after the committed offset
    and ends with every record applied, none lost (RST-1)."""
    apache = restartable(broker)
    store_type = StoreType.KEY_VALUE
    topic, written = _large_changelog(broker, app_name, store_type)
    kill_once, killed_at = _once_past_offset_300(apache.kill)

    tp = TopicPartition(topic, 0)
    store = open_store(store_type, tmp_path, app_name)
    try:
        with pytest.raises(BrokerUnavailable, match=rf"apache broker at 127\.0\.0\.1:{apache.port}"):
            restore_from_changelog(store, store_type, broker.bootstrap, tp, batch_size=100,
                                   liveness=broker.check_alive, after_batch=kill_once, config=SMALL_FETCHES)
        committed = store.committed_offset(tp)
        assert committed is not None and killed_at[0] <= committed < RESTART_RECORDS - 1, (killed_at, committed)
        apache.restart()
        resumed = restore_from_changelog(store, store_type, broker.bootstrap, tp, batch_size=100,
                                         liveness=broker.check_alive, config=SMALL_FETCHES)
        assert (resumed.first_offset, resumed.last_offset) == (committed + 1, RESTART_RECORDS - 1)
        assert resumed.records == RESTART_RECORDS - 1 - committed
        assert store.committed_offset(tp) == RESTART_RECORDS - 1
        assert_store_holds(store, store_type, latest(written))
    finally:
        store.close()


# --- changelog topic configuration read back ---------------------------------------------------------------------

CONFIG_CASES: list[tuple[StoreType, dict[str, int]]] = [
    (StoreType.TIMESTAMPED_KV_WITH_HEADERS, {}),
    (StoreType.VERSIONED_KV, {"history_retention_ms": 3_600_000}),
    (StoreType.TIMESTAMPED_WINDOW, {"retention_ms": 600_000}),
    (StoreType.SESSION, {"retention_ms": 60_000}),
]


@rules("CL-15", "CL-16", "CL-17")
@pytest.mark.parametrize(("store_type", "retention"), CONFIG_CASES, ids=lambda c: getattr(c, "value", ""))
def test_changelog_config_is_set_on_the_topic_not_inherited(broker: Broker, app_name: str, store_type: StoreType,
                                                            retention: dict[str, int]) -> None:
    """DescribeConfigs on a broker that reports every entry with its source: the entries set on the topic itself
    are exactly Kafka Streams' changelog configuration (CL-15 to CL-17), none left to a broker default that could
    differ elsewhere (a broker whose log.message.timestamp.type is LogAppendTime, say)."""
    from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource  # type: ignore[attr-defined]

    require(broker, broker.capabilities.describe_configs_sources,
            "DescribeConfigs with every entry's source (it reports only the entries set, without a topic source)")
    topic = create_changelog_topic(broker, app_name, "s", store_type, 1, **retention)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    resource = ConfigResource("topic", topic)
    entries = admin.describe_configs([resource], request_timeout=15)[resource].result(15)
    on_topic = {name: e.value for name, e in entries.items() if e.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value}
    assert on_topic == cl.changelog_topic_config(store_type, **retention)
    assert on_topic["message.timestamp.type"] == "CreateTime"
    assert entries["cleanup.policy"].value == on_topic["cleanup.policy"]

