"""The audit at scale on the embedded broker and a local SparkSession: the Arrow-batch Kafka source reads exactly
what a plain consumer reads, also with partitions split into offset ranges; the key-value oracle as a Spark plan
computes the Python engine's bytes for negative and extreme timestamps, header layouts and legacy boundaries
(CL-9 to CL-11, RST-1, RST-2, RST-7); the stores' state read by Spark tasks from their directories is what the
dump reads, and the audit takes it as its actual side."""

from __future__ import annotations

import random
import struct
from pathlib import Path
from typing import Any

import pytest
from helpers import write_raw_store

from kstate.codecs.store_types import BUILT_KV_TYPES, RestoreConversion, StoreType
from kstate.kafka.broker import Broker
from kstate.kafka.changelog_topics import RawRecord, consume_all, create_topic, produce
from kstate.spark.expressions import timestamp_bytes
from kstate.spark.kafka_source import SCHEMA, read_topic
from kstate.spark.oracle import (
    ChangelogRow,
    LegacyBoundary,
    audit,
    python_kv_state,
    spark_kv_state,
    store_directories_frame,
)

pytestmark = pytest.mark.spark


def _records(rng: random.Random, count: int) -> list[RawRecord]:
    return [(b"key-%02d" % rng.randrange(30), None if rng.random() < 0.1 else rng.randbytes(rng.randrange(30)),
             1_000 + n, rng.choice([[], [("h", b"%d" % n)], [("a", None), ("a", b""), ("\u0436", b"\xff")]]))
            for n in range(count)]


def _rows(frame: Any) -> list[tuple[Any, ...]]:
    return sorted((r.partition, r.offset, r.timestamp, r.timestampType, None if r.key is None else bytes(r.key),
                   None if r.value is None else bytes(r.value),
                   [(h.key, None if h.value is None else bytes(h.value)) for h in r.headers]) for r in frame.collect())


@pytest.mark.parametrize("splits", [1, 3])
def test_the_arrow_source_reads_what_a_consumer_reads(spark: Any, broker: Broker, topic_name: str, splits: int) -> None:
    create_topic(broker, topic_name, 3)
    rng = random.Random(11)
    for partition, count in enumerate([500, 2, 0]):
        if count:
            produce(broker, topic_name, _records(rng, count), partition=partition)
    frame = read_topic(spark, broker.bootstrap, topic_name, splits=str(splits))
    # Partition 0 in `splits` ranges, partition 1 (2 records) in at most 2, the empty partition 2 in one.
    assert frame.rdd.getNumPartitions() == (3 if splits == 1 else 3 + 2 + 1)
    consumed = sorted((p, r["offset"], r["timestamp"], 1, r["key"], r["value"], r["headers"])
                      for p in range(3) for r in consume_all(broker, topic_name, p))
    assert _rows(frame) == consumed and len(consumed) == 502


@pytest.mark.parametrize("splits", [1, 3])
def test_the_source_keeps_the_latest_record_per_key_with_exact_counts(spark: Any, broker: Broker, topic_name: str,
                                                                       splits: int) -> None:
    """``latest_per_key``: per range, the latest record per key (RST-1) and its count; keys repeated across ranges
    are combined by Spark's latest by offset into the Python engine's state, tombstones hiding keys (RST-6)."""
    from pyspark.sql import functions as F

    create_topic(broker, topic_name, 2)
    rng = random.Random(19)
    written = {0: _records(rng, 400), 1: _records(rng, 3)}
    written[0].append((b"key-00", None, 5_000, []))  # key-00 ends deleted in partition 0
    for partition, records in written.items():
        produce(broker, topic_name, records, partition=partition)
    reduced = read_topic(spark, broker.bootstrap, topic_name, splits=str(splits), latest_per_key="true")
    assert reduced.columns[-1] == "records"
    assert reduced.agg(F.sum("records")).first()[0] == 404
    rows = reduced.collect()
    per_range = {(r.partition, bytes(r.key)) for r in rows}
    assert (len(rows) == len(per_range)) is (splits == 1)  # several ranges: a key comes once from each range it is in
    changelog = [ChangelogRow(p, offset, key, value, stamp, tuple(headers))
                 for p, records in written.items() for offset, (key, value, stamp, headers) in enumerate(records)]
    assert (0, b"key-00") in per_range
    for store_type in (StoreType.KEY_VALUE, StoreType.TIMESTAMPED_KV_WITH_HEADERS):
        expected = python_kv_state(changelog, store_type)
        got: dict[int, dict[bytes, bytes]] = {}
        for row in spark_kv_state(reduced, store_type, one_row_per_key=splits == 1).collect():
            got.setdefault(row.partition, {})[bytes(row.key)] = bytes(row.value)
        assert got == expected and b"key-00" not in expected[0]


def test_the_persisted_changelog_of_a_window_or_session_audit_counts_every_record(
        spark: Any, broker: Broker, topic_name: str) -> None:
    """``persisted_changelog`` with ``latest_per_key`` (what window and session audits read): one row per key,
    the record count still of every record."""
    from kstate.spark.oracle import persisted_changelog

    create_topic(broker, topic_name, 2)
    produce(broker, topic_name, [(b"a", b"1", 1, []), (b"a", None, 2, []), (b"b", b"2", 3, [])], partition=0)
    produce(broker, topic_name, [(b"a", b"3", 4, [])], partition=1)
    steps: list[str] = []
    with persisted_changelog(spark, broker.bootstrap, topic_name, None, None, steps.append,
                             latest_per_key=True) as (changelog, records):
        rows = sorted((r.partition, bytes(r.key), r.offset, r.records) for r in changelog.collect())
    assert records == 4 and rows == [(0, b"a", 1, 2), (0, b"b", 2, 1), (1, b"a", 0, 1)]
    assert steps == ["reading the changelog", "computing the expected state"]


def test_the_source_refuses_a_split_count_below_one(spark: Any, broker: Broker, topic_name: str) -> None:
    create_topic(broker, topic_name, 1)
    with pytest.raises(Exception, match="splits must be at least 1"):
        read_topic(spark, broker.bootstrap, topic_name, splits="0").count()


def test_timestamps_become_eight_big_endian_bytes_negative_ones_too(spark: Any) -> None:
    from pyspark.sql import functions as F

    stamps = [0, 1, 255, 2**40, 1_700_000_000_000, 2**63 - 1, -1, -2, -(2**40), -(2**63)]
    frame = spark.createDataFrame([(t,) for t in stamps], "t long").select("t", timestamp_bytes(F.col("t")).alias("b"))
    assert {r.t: bytes(r.b) for r in frame.collect()} == {t: struct.pack(">q", t) for t in stamps}


@pytest.mark.parametrize("store_type", list(BUILT_KV_TYPES), ids=lambda t: t.value)
def test_the_spark_plan_computes_the_python_engines_bytes(spark: Any, store_type: StoreType) -> None:
    """Timestamps Kafka would not carry (negative, extreme) go through the plan too; every older built type is a
    legacy boundary of its own partition (RST-7)."""
    rng = random.Random(5)
    rows = [ChangelogRow(n % 4, n, b"k%d" % rng.randrange(40), None if rng.random() < 0.1 else rng.randbytes(9),
                         rng.choice([0, 7, -1, -(2**63), 2**63 - 1, 1_700_000_000_000]),
                         rng.choice([(), (("h", b"1"),), (("a", None), ("\u0436", b"\xff" * 70))]))
            for n in range(800)]
    older = [t for t in BUILT_KV_TYPES if BUILT_KV_TYPES.index(t) < BUILT_KV_TYPES.index(store_type)]
    boundaries = {p + 1: LegacyBoundary(p + 1, 500, legacy) for p, legacy in enumerate(older)}
    changelog = spark.createDataFrame([("t", r.partition, r.offset, r.timestamp, 1, r.key, r.value, list(r.headers))
                                       for r in rows], SCHEMA)
    got: dict[int, dict[bytes, bytes]] = {}
    for row in spark_kv_state(changelog, store_type, boundaries).collect():
        got.setdefault(row.partition, {})[bytes(row.key)] = bytes(row.value)
    expected = python_kv_state(rows, store_type, boundaries)
    assert got == expected and sum(map(len, expected.values())) > 100


def test_store_directories_are_read_by_spark_tasks_as_the_dump_reads_them(spark: Any, broker: Broker,
                                                                            topic_name: str, tmp_path: Path) -> None:
    """Plain key-value stores of two tasks, audited with the stores read in parallel: a lost update is reported
    by key, and the actual side is counted from the frame."""
    from kstate.store_dump import dump_store_dir

    create_topic(broker, topic_name, 2)
    produce(broker, topic_name, [(b"a", b"1", 10, []), (b"b", b"2", 11, []), (b"a", b"3", 12, [])], partition=0)
    produce(broker, topic_name, [(b"c", b"4", 13, []), (b"c", None, 14, []), (b"d", b"5", 15, [])], partition=1)
    directories = [(0, tmp_path / "0_0" / "rocksdb" / "s"), (1, tmp_path / "0_1" / "rocksdb" / "s")]
    write_raw_store(directories[0][1], {b"a": b"3", b"b": b"2"})
    write_raw_store(directories[1][1], {b"d": b"5", b"c": b"4"})  # the tombstone of c never reached this store
    frame = store_directories_frame(spark, StoreType.KEY_VALUE, [(p, str(d)) for p, d in directories])
    read = {(r.partition, bytes(r.key)): bytes(r.value) for r in frame.collect()}
    assert read == {(p, k): v for p, d in directories
                    for k, v in dump_store_dir(d).logical_view(StoreType.KEY_VALUE).items()}
    report = audit(broker.bootstrap, topic_name, StoreType.KEY_VALUE, frame, spark=spark)
    assert (report.records_read, report.expected_keys, report.actual_keys) == (6, 3, 4)
    assert [(d.partition, d.key, d.kind) for d in report.differences] == [(1, b"c", "unexpected")]


def test_family_stores_are_read_by_spark_tasks_as_read_store_entries_reads_them(spark: Any, tmp_path: Path) -> None:
    """Window stores of two tasks, segments as directories (WIN-1 keys); a row that does not decode comes back
    as an ``undecodable`` problem, not a failure, as the driver-side reader reports it."""
    from pyspark.sql import functions as F

    from kstate.codecs.changelog import window_changelog_key as wk
    from kstate.spark.semantics import read_store_entries, read_stores_frame, store_problems

    stores = {0: [tmp_path / "0_0" / "w"], 1: [tmp_path / "0_1" / "w"]}
    write_raw_store(stores[0][0] / "w.0", {wk(b"A", 1, 0): b"v", wk(b"A", 1, 1): b"w", b"short": b"x"})
    write_raw_store(stores[0][0] / "w.60000", {wk(b"B", 60_001, 0): b"b"})
    write_raw_store(stores[1][0] / "w.0", {wk(b"C", 7, 0): b"c"})
    problems: list[Any] = []
    expected = sorted(row for p, dirs in stores.items() for d in dirs
                      for row in read_store_entries(StoreType.WINDOW, p, d, problems))
    frame = read_stores_frame(spark, StoreType.WINDOW, stores)
    entries = frame.where(F.col("problem_kind").isNull()).collect()
    assert sorted(tuple(bytes(v) if isinstance(v, bytearray) else v for v in row[:-4]) for row in entries) == expected
    assert len(expected) == 4
    assert store_problems(frame) == problems and [(p.key, p.kind) for p in problems] == [(b"short", "undecodable")]


_LONG_HEADERS = [("k", b"v" * 70), ("\u0436" * 40, b"w" * 9_000), ("n", None), ("e", b""),
                 ("big", b"x" * 2_100_000)]


@pytest.mark.parametrize("conversion", list(RestoreConversion), ids=lambda c: c.value)
def test_restore_expressions_write_the_codecs_bytes(spark: Any, conversion: RestoreConversion) -> None:
    """Header bytes with one-, two-, three- and four-byte varints (lengths 70, 9,000, 2,100,000; 70 headers),
    null and empty values, multi-byte key characters, no headers at all (HV-1, HV-2, HV-6, HV-12, PRIM-6)."""
    from pyspark.sql import functions as F

    from kstate.codecs.changelog import record_converter
    from kstate.codecs.store_types import STORE_TYPES
    from kstate.spark.expressions import header_bytes, restore_expression

    store_type = next(t for t in BUILT_KV_TYPES + tuple(STORE_TYPES) if STORE_TYPES[t].restore is conversion)
    header_sets: list[list[tuple[str, bytes | None]]] = [
        [], [("h", b"1")], _LONG_HEADERS, [(f"a{n}", b"%d" % n) for n in range(70)], [("n", None)]]
    rows = [(n, b"value-%d" % n * (n + 1), stamp, headers)
            for n, (stamp, headers) in enumerate((s, h) for s in (0, -1, 1_700_000_000_000) for h in header_sets)]
    frame = spark.createDataFrame([(n, v, s, [{"key": k, "value": hv} for k, hv in h]) for n, v, s, h in rows],
                                  "n int, value binary, timestamp long, headers array<struct<key:string,value:binary>>")
    encoded = frame.withColumn("encoded", header_bytes(F.col("headers")))
    got = {r.n: bytes(r.stored) for r in encoded.select(
        "n", restore_expression(conversion, F.col("value"), F.col("timestamp"), F.col("encoded")).alias("stored"))
        .collect()}
    convert = record_converter(store_type)
    assert got == {n: convert(v, s, h) for n, v, s, h in rows}


def test_the_source_reads_partitions_up_to_the_given_ends(spark: Any, broker: Broker, topic_name: str) -> None:
    """``ends``: each named partition is read up to that offset (exclusive), also when split into ranges; the
    others to their end."""
    create_topic(broker, topic_name, 2)
    for partition in range(2):
        produce(broker, topic_name, [(b"k%d" % n, b"v", n, []) for n in range(10)], partition=partition)
    for splits in ("1", "3"):
        frame = read_topic(spark, broker.bootstrap, topic_name, ends="0:4", splits=splits)
        assert sorted((r.partition, r.offset) for r in frame.collect()) == [
            *((0, n) for n in range(4)), *((1, n) for n in range(10))]


def test_the_audit_joins_only_the_partitions_whose_digests_differ(spark: Any, broker: Broker,
                                                                   topic_name: str) -> None:
    """Partition 0 agrees; partition 1 has two values swapped between keys (same count, same values); partition 2
    has every key deleted and an entry left in the store; partition 5 is not in the topic at all."""
    from kstate.spark.oracle import partition_digests, read_changelog_frame, spark_kv_latest, state_frame

    create_topic(broker, topic_name, 3)
    produce(broker, topic_name, [(b"a", b"1", 1, []), (b"b", b"2", 2, [])], partition=0)
    produce(broker, topic_name, [(b"a", b"1", 1, []), (b"b", b"2", 2, [])], partition=1)
    produce(broker, topic_name, [(b"a", b"1", 1, []), (b"a", None, 2, [])], partition=2)
    actual = {0: {b"a": b"1", b"b": b"2"}, 1: {b"a": b"2", b"b": b"1"}, 2: {b"a": b"1"}, 5: {b"z": b"9"}}
    latest = spark_kv_latest(read_changelog_frame(spark, broker.bootstrap, topic_name, latest_per_key=True),
                             StoreType.KEY_VALUE, one_row_per_key=True)
    digests = partition_digests(latest, state_frame(spark, actual))
    assert digests.differing() == [1, 2, 5]
    assert {p: (d.count, d.records, d.end) for p, d in digests.expected.items()} == {
        0: (2, 2, 2), 1: (2, 2, 2), 2: (0, 2, 2)}
    report = audit(broker.bootstrap, topic_name, StoreType.KEY_VALUE, actual, spark=spark)
    assert [(d.partition, d.key, d.kind) for d in report.differences] == [
        (1, b"a", "different"), (1, b"b", "different"), (2, b"a", "unexpected"), (5, b"z", "unexpected")]
    assert (report.records_read, report.expected_keys, report.actual_keys) == (6, 4, 6)
