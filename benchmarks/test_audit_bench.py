"""The audit at scale (issue 13): the Spark audit's changelog records per second against a raw consume of the same
topic, on ``local[1]`` and ``local[2]``, measured side by side in one run.

A changelog of ``KSTATE_BENCH_AUDIT_RECORDS`` records (default 1 000 000; 16-byte keys, a quarter of them distinct,
100-byte values, one header on every other record) is produced in bulk with confluent-kafka over
``KSTATE_BENCH_AUDIT_PARTITIONS`` partitions (default 4). Then:

- ``raw consume``: one confluent-kafka consumer assigned every partition, reading to partition EOF on each and
  doing nothing with the messages (the baseline; target: the audit >= 0.3 of it).
- ``audit``: :func:`kstate.spark.oracle.audit` of each store type measured (timestamped, and timestamped with
  headers, whose header bytes the source encodes) against the state the Python engine computes, which is right
  (the audit must find 0 differences). What is timed is the whole ``audit`` call: read the topic through the
  Kafka data source (latest per key in each task), convert by Spark expressions, hand over the actual state as
  Arrow, compare per-partition digests of both sides. The SparkSession is started (and warmed by one round)
  before timing; its start is not timed.

``audit source``: the same audit on ``local[2]`` through each reader of the changelog, the kit's Python Data Source
(``python``) and Spark's own Kafka source (``spark-kafka``, ``spark-sql-kafka-0-10`` fetched by Maven, issue 24),
side by side; the ratio is Spark's source's records per second over the Python source's. Every session of the
module starts with Spark's Kafka source on its classpath where it resolves (the JVM takes jars when it starts).

Each master runs twice: free (the JVM, its Python workers and their librdkafka threads may use every core, so
``local[1]`` keeps more than one core busy) and pinned (every thread of the driver, its JVM and the JVM's Python
workers confined to N cores by ``sched_setaffinity`` for ``local[N]``; the broker stays free). The cores kept busy on average
(``/proc/stat``) are printed beside each rate: the scaling free from ``local[1]`` to ``local[2]`` on two cores
cannot pass 2 divided by what ``local[1]`` keeps busy.

Wall-clock rounds, the fastest kept (pytest-benchmark times the raw consume; the audit rounds are timed
here, several store types per session); the ratios and the scaling from 1 to 2 cores are printed at the end of
the module. Measurements, not timed tests: a ratio under its target is reported, never failed.
"""

from __future__ import annotations

import contextlib
import os
import random
import time
from typing import Any

import pytest

from kstate.codecs.store_types import StoreType
from kstate.kafka.broker import Broker
from kstate.kafka.changelog_topics import CLIENT_DEFAULTS, FAST_FETCH, create_changelog_topic, flush_bounded

RECORDS = int(os.environ.get("KSTATE_BENCH_AUDIT_RECORDS", "1000000"))
PARTITIONS = int(os.environ.get("KSTATE_BENCH_AUDIT_PARTITIONS", "4"))
ROUNDS = int(os.environ.get("KSTATE_BENCH_AUDIT_ROUNDS", "2"))
MASTERS = ("local[1]", "local[2]")
#: Free: the audit's processes may use every core; pinned: ``local[N]`` confined to N cores.
PLACEMENTS = ("free", "pinned")
AUDITED = (StoreType.TIMESTAMPED_KV, StoreType.TIMESTAMPED_KV_WITH_HEADERS)
#: The audit's readers of the changelog (kstate.spark.spark_kafka.SOURCES).
SOURCES = ("python", "spark-kafka")
RESULTS: dict[str, float] = {}
#: The session configuration that puts Spark's Kafka source on the classpath, or why it cannot (filled once).
_CONNECTOR: list[dict[str, str] | str] = []


def connector_conf() -> dict[str, str] | str:
    """``spark.jars`` of Spark's Kafka source (resolved by Maven once), or why it is unavailable."""
    if not _CONNECTOR:
        from kstate.spark.spark_kafka import SparkKafkaUnavailable, connector

        try:
            _CONNECTOR.append(connector().conf)
        except SparkKafkaUnavailable as exc:
            _CONNECTOR.append(str(exc))
    return _CONNECTOR[0]


def _session(master: str) -> Any:
    """A session of ``master`` with a 2 GB heap (the default 1 GB runs out over the rounds, each handing a 1M-record
    state over as Arrow), and Spark's Kafka source on the classpath where it resolves."""
    from kstate.spark.session import spark_session

    jars = connector_conf()
    return spark_session(master, conf={"spark.ui.showConsoleProgress": "false", "spark.driver.memory": "2g",
                                       **(jars if isinstance(jars, dict) else {})})


@pytest.fixture(scope="module")
def audit_topic(bench_broker: Broker) -> str:
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
def expected_states(bench_broker: Broker, audit_topic: str) -> dict[StoreType, Any]:
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


def test_raw_consume(benchmark: Any, bench_broker: Broker, audit_topic: str) -> None:
    count = benchmark.pedantic(_raw_consume, args=(bench_broker.bootstrap, audit_topic), rounds=3, iterations=1,
                               warmup_rounds=1)
    assert count == RECORDS
    RESULTS["raw consume"] = RECORDS / benchmark.stats.stats.min


def _busy_core_seconds() -> float:
    """CPU seconds every core of the machine has spent busy since boot (``/proc/stat``: all but idle and iowait)."""
    with open("/proc/stat") as stat:
        fields = [int(n) for n in stat.readline().split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def _pin(roots: list[int], cores: set[int]) -> None:
    """Every thread of ``roots`` and of all their descendant processes (the JVM's Python workers) on ``cores``."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError), open(f"/proc/{entry}/stat") as stat:
                parents[int(entry)] = int(stat.read().rsplit(")", 1)[1].split()[1])
    tree, added = set(roots), True
    while added:
        children = {pid for pid, parent in parents.items() if parent in tree} - tree
        tree |= children
        added = bool(children)
    for pid in tree:
        with contextlib.suppress(OSError):
            for thread in os.listdir(f"/proc/{pid}/task"):
                with contextlib.suppress(OSError):
                    os.sched_setaffinity(int(thread), cores)


@pytest.mark.parametrize("store_type", AUDITED, ids=lambda t: t.value)
@pytest.mark.parametrize("placement", PLACEMENTS)
@pytest.mark.parametrize("master", MASTERS)
def test_audit(benchmark: Any, bench_broker: Broker, audit_topic: str, expected_states: dict[StoreType, Any],
               master: str, placement: str, store_type: StoreType) -> None:
    pytest.importorskip("pyspark")
    from pyspark.sql import SparkSession

    from kstate.spark.oracle import audit

    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()
    cores = int(master.removeprefix("local[").removesuffix("]"))
    every_core = os.sched_getaffinity(0)
    if placement == "pinned" and len(every_core) < cores:
        pytest.skip(f"{master} pinned needs {cores} cores, this machine has {len(every_core)}")
    spark = _session(master)
    audit_processes = [os.getpid(), spark.sparkContext._gateway.proc.pid]  # the driver and its JVM (kept across sessions)
    if placement == "pinned":
        # The last cores (the broker's threads start on the first); workers forked later inherit the affinity.
        _pin(audit_processes, set(sorted(every_core)[-cores:]))
    rounds: list[tuple[float, float]] = []

    def one_audit() -> None:
        busy = _busy_core_seconds()
        started = time.perf_counter()
        report = audit(bench_broker.bootstrap, audit_topic, store_type, expected_states[store_type], spark=spark)
        seconds = time.perf_counter() - started
        rounds.append((seconds, (_busy_core_seconds() - busy) / seconds))
        assert report.ok, report.summary()
        assert report.records_read == RECORDS

    try:
        # The warm-up round starts the workers and the JIT, and is dropped.
        benchmark.pedantic(one_audit, rounds=ROUNDS, iterations=1, warmup_rounds=1)
    finally:
        spark.stop()
        _pin(audit_processes, every_core)
    seconds, busy_cores = min(rounds[1:])
    RESULTS[f"audit {store_type.value} {master} {placement}"] = RECORDS / seconds
    RESULTS[f"cores {store_type.value} {master} {placement}"] = busy_cores


@pytest.mark.parametrize("store_type", AUDITED, ids=lambda t: t.value)
@pytest.mark.parametrize("source", SOURCES)
def test_audit_source(benchmark: Any, bench_broker: Broker, audit_topic: str, expected_states: dict[StoreType, Any],
                      source: str, store_type: StoreType) -> None:
    """The audit on local[2] through one reader of the changelog; the same answer (no difference) either way."""
    pytest.importorskip("pyspark")
    from kstate.spark.oracle import audit

    jars = connector_conf()
    if source == "spark-kafka" and isinstance(jars, str):
        pytest.skip(jars)
    spark = _session("local[2]")
    seconds: list[float] = []

    def one_audit() -> None:
        started = time.perf_counter()
        report = audit(bench_broker.bootstrap, audit_topic, store_type, expected_states[store_type], spark=spark,
                       source=source)
        seconds.append(time.perf_counter() - started)
        assert report.ok, report.summary()
        assert report.records_read == RECORDS

    # The warm-up round starts the workers, loads the source's classes and warms the JIT; it is dropped.
    benchmark.pedantic(one_audit, rounds=ROUNDS, iterations=1, warmup_rounds=1)
    RESULTS[f"source {source} {store_type.value}"] = RECORDS / min(seconds[1:])


def teardown_module() -> None:
    raw = RESULTS.get("raw consume")
    lines = [f"audit benchmark: {RECORDS:,} changelog records over {PARTITIONS} partitions"]
    if raw:
        lines.append(f"raw consume (one confluent-kafka consumer, all partitions) {raw:,.0f} records/s")
    for store_type in AUDITED:
        for placement in PLACEMENTS:
            rates = [RESULTS.get(f"audit {store_type.value} {master} {placement}") for master in MASTERS]
            for master, rate in zip(MASTERS, rates, strict=True):
                if rate:
                    versus = f": ratio {rate / raw:.2f} of raw consume (target >= 0.3)" if raw else ""
                    busy = RESULTS[f"cores {store_type.value} {master} {placement}"]
                    lines.append(f"audit {store_type.value} {master} {placement} {rate:,.0f} records/s{versus}, "
                                 f"{busy:.2f} cores busy")
            if rates[0] and rates[1]:
                lines.append(f"audit {store_type.value} {placement} scaling local[1] -> local[2]: "
                             f"{rates[1] / rates[0]:.2f}x (target >= 1.7x)")
    for store_type in AUDITED:
        python, spark_kafka = (RESULTS.get(f"source {source} {store_type.value}") for source in SOURCES)
        if python and spark_kafka:
            lines.append(f"audit {store_type.value} local[2] through the Python source {python:,.0f} records/s, "
                         f"through Spark's Kafka source {spark_kafka:,.0f} records/s: ratio {spark_kafka / python:.2f}")
    print("\n" + "\n".join(lines) + f"\n(measured {time.strftime('%Y-%m-%d %H:%M')})")
