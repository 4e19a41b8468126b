"""The audit at scale (issue 13): the Spark audit's changelog records per second against a raw consume of the same
topic, on ``local[1]`` and ``local[2]``, measured side by side in one run.

A changelog of ``KSTATE_BENCH_AUDIT_RECORDS`` records (default 1 000 000; 16-byte keys, a quarter of them distinct,
100-byte values, one header on every other record) is produced in bulk with confluent-kafka over
``KSTATE_BENCH_AUDIT_PARTITIONS`` partitions (default 4). Then:

- ``raw consume``: one confluent-kafka consumer assigned every partition, reading to partition EOF on each and
  doing nothing with the messages (the baseline; target: the audit >= 0.3 of it).
- ``audit``: :func:`kstate.spark.oracle.audit` of each store type measured (timestamped, whose values are Spark
  expressions, and timestamped with headers, converted in Arrow batches) against the state the Python engine
  computes, which is right (the audit must find 0 differences). What is timed is the whole ``audit`` call: read
  the topic through the Kafka data source, count it, latest per key, convert, hand over the actual state as
  Arrow, full outer join and collect the differences. The SparkSession is started (and warmed by one round)
  before timing; its start is not timed.

Wall-clock rounds, the fastest kept (pytest-benchmark times the raw consume; the audit rounds are timed
here, several store types per session); the ratios and the scaling from 1 to 2 cores are printed at the end of
the module. Measurements, not timed tests: a ratio under its target is reported, never failed.
"""

from __future__ import annotations

import os
import random
import time
from typing import Any

import pytest

from kstate.codecs.store_types import StoreType
from kstate.kafka.broker import TansuBroker
from kstate.kafka.changelog_topics import CLIENT_DEFAULTS, FAST_FETCH, create_changelog_topic, flush_bounded

RECORDS = int(os.environ.get("KSTATE_BENCH_AUDIT_RECORDS", "1000000"))
PARTITIONS = int(os.environ.get("KSTATE_BENCH_AUDIT_PARTITIONS", "4"))
ROUNDS = int(os.environ.get("KSTATE_BENCH_AUDIT_ROUNDS", "2"))
MASTERS = ("local[1]", "local[2]")
AUDITED = (StoreType.TIMESTAMPED_KV, StoreType.TIMESTAMPED_KV_WITH_HEADERS)
RESULTS: dict[str, float] = {}


@pytest.fixture(scope="module")
def audit_topic(bench_broker: TansuBroker) -> str:
    """The changelog, produced in bulk: large batches, round-robin over partitions, acknowledged by the broker."""
    from confluent_kafka import Producer

    topic = create_changelog_topic(bench_broker, "bench-audit", "s", StoreType.TIMESTAMPED_KV_WITH_HEADERS, PARTITIONS)
    rng = random.Random(13)
    producer = Producer({"bootstrap.servers": bench_broker.bootstrap, "acks": "all", "linger.ms": 20,
                         "batch.size": 1_000_000, "queue.buffering.max.messages": 1_000_000,
                         "message.timeout.ms": 300_000})
    failures: list[str] = []

    def on_delivery(err: Any, _msg: Any) -> None:
        if err is not None:
            failures.append(str(err))

    for n in range(RECORDS):
        while True:
            try:
                producer.produce(topic, key=b"%016d" % rng.randrange(RECORDS // 4), value=rng.randbytes(100),
                                 timestamp=1_700_000_000_000 + n, headers=[("h", b"%d" % n)] if n % 2 else None,
                                 partition=n % PARTITIONS, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.05)
    assert flush_bounded(producer, bench_broker, 300) == 0 and not failures, failures[:3]
    return topic


@pytest.fixture(scope="module")
def expected_states(bench_broker: TansuBroker, audit_topic: str) -> dict[StoreType, Any]:
    """The right state of each audited store type, from the Python engine (the audit compares against it)."""
    from kstate.spark.oracle import python_kv_state, read_changelog_rows

    rows = read_changelog_rows(bench_broker.bootstrap, audit_topic, range(PARTITIONS))
    assert len(rows) == RECORDS
    return {store_type: python_kv_state(rows, store_type) for store_type in AUDITED}


def _raw_consume(bootstrap: str, topic: str) -> int:
    """Every message of every partition through one consumer, nothing done with them; the count."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    consumer = Consumer({**CLIENT_DEFAULTS, **FAST_FETCH, "group.id": "bench-raw", "bootstrap.servers": bootstrap})
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
        count = 0
        at_end: set[int] = set()
        while len(at_end) < PARTITIONS:
            for message in consumer.consume(num_messages=10_000, timeout=0.1):
                error = message.error()
                if error is None:
                    count += 1
                elif error.code() == KafkaError._PARTITION_EOF:
                    at_end.add(int(message.partition() or 0))
                else:
                    raise AssertionError(f"raw consume: {error}")
        return count
    finally:
        consumer.close()


def test_raw_consume(benchmark: Any, bench_broker: TansuBroker, audit_topic: str) -> None:
    count = benchmark.pedantic(_raw_consume, args=(bench_broker.bootstrap, audit_topic), rounds=3, iterations=1,
                               warmup_rounds=1)
    assert count == RECORDS
    RESULTS["raw consume"] = RECORDS / benchmark.stats.stats.min


@pytest.mark.parametrize("master", MASTERS)
def test_audit(bench_broker: TansuBroker, audit_topic: str, expected_states: dict[StoreType, Any],
               master: str) -> None:
    pytest.importorskip("pyspark")
    from pyspark.sql import SparkSession

    from kstate.spark.oracle import audit
    from kstate.spark.session import spark_session

    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()
    # The JVM's default 1 GB heap runs out over the rounds (each hands a 1M-record state over as Arrow).
    spark = spark_session(master, conf={"spark.ui.showConsoleProgress": "false", "spark.driver.memory": "2g"})
    try:
        for store_type in AUDITED:
            seconds: list[float] = []
            for _ in range(ROUNDS + 1):  # the first round warms the workers and the JIT, and is dropped
                started = time.perf_counter()
                report = audit(bench_broker.bootstrap, audit_topic, store_type, expected_states[store_type], spark=spark)
                seconds.append(time.perf_counter() - started)
                assert report.ok, report.summary()
                assert report.records_read == RECORDS
            RESULTS[f"audit {store_type.value} {master}"] = RECORDS / min(seconds[1:])
    finally:
        spark.stop()


def teardown_module() -> None:
    raw = RESULTS.get("raw consume")
    lines = [f"audit benchmark: {RECORDS:,} changelog records over {PARTITIONS} partitions"]
    if raw:
        lines.append(f"raw consume (one confluent-kafka consumer, all partitions) {raw:,.0f} records/s")
    for store_type in AUDITED:
        rates = [RESULTS.get(f"audit {store_type.value} {master}") for master in MASTERS]
        for master, rate in zip(MASTERS, rates, strict=True):
            if rate:
                versus = f": ratio {rate / raw:.2f} of raw consume (target >= 0.3)" if raw else ""
                lines.append(f"audit {store_type.value} {master} {rate:,.0f} records/s{versus}")
        if rates[0] and rates[1]:
            lines.append(f"audit {store_type.value} scaling local[1] -> local[2]: {rates[1] / rates[0]:.2f}x "
                         "(target >= 1.7x)")
    print("\n" + "\n".join(lines) + f"\n(measured {time.strftime('%Y-%m-%d %H:%M')})")
