"""The audit's two readers of a changelog (issue 24): the kit's Python Data Source and Spark's own Kafka source
(``spark-sql-kafka-0-10``, ``kstate audit --source spark-kafka``) give the same audit answer on a real broker: the
same records read, the same expected and actual keys, the same differences (RST-1, RST-2; header bytes HV-1).

Marked ``slow`` (over a minute on the shared 2-core machine, the connector fetched by Maven on first use): run by
``tox -e system-long``, not by the default ``system`` environment."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest

from kstate.codecs.store_types import StoreType
from kstate.kafka.broker import Broker
from kstate.kafka.changelog_topics import create_changelog_topic, produce
from kstate.spark.oracle import audit, python_kv_state, read_changelog_rows

pytestmark = [pytest.mark.spark, pytest.mark.slow]

PARTITIONS = 2
RECORDS = 1_000


def _records(partition: int) -> list[tuple[bytes, bytes | None, int, list[tuple[str, bytes | None]]]]:
    """Keys written several times, some deleted (tombstones), some deleted and written again; headers of several
    shapes (none, a null value, several with one key twice) on the header-aware values."""
    rng = random.Random(partition)
    out: list[tuple[bytes, bytes | None, int, list[tuple[str, bytes | None]]]] = []
    for n in range(RECORDS):
        key = b"k%05d" % rng.randrange(RECORDS // 5)
        value = None if rng.random() < 0.1 else rng.randbytes(rng.randrange(0, 200))
        headers = [[], [("h", None)], [("trace", b"%d" % n), ("trace", b""), ("Ключ", b"v")]][n % 3]
        out.append((key, value, 1_700_000_000_000 + n, headers))
    return out


@pytest.mark.parametrize("store_type", [StoreType.TIMESTAMPED_KV, StoreType.TIMESTAMPED_KV_WITH_HEADERS])
def test_both_sources_give_the_same_audit_answer(broker: Broker, spark_kafka: Any, store_type: StoreType,
                                                 system_report: Callable[[str, Any], None]) -> None:
    topic = create_changelog_topic(broker, f"audit-sources-{store_type.value}", "s", store_type, PARTITIONS)
    for partition in range(PARTITIONS):
        assert produce(broker, topic, _records(partition), partition=partition) == RECORDS
    expected = python_kv_state(read_changelog_rows(broker.bootstrap, topic, range(PARTITIONS)), store_type)
    # The actual state differs from the changelog's in three ways, so that both audits have something to find.
    actual = {p: dict(entries) for p, entries in expected.items()}
    changed, deleted = sorted(actual[0])[:2]
    actual[0][changed] = actual[0][changed][:-1] + bytes([actual[0][changed][-1] ^ 1])
    del actual[0][deleted]
    actual[1][b"never-written"] = b"\x00" * 8
    reports = {source: audit(broker.bootstrap, topic, store_type, actual, spark=spark_kafka, source=source)
               for source in ("python", "spark-kafka")}
    python, spark_kafka_report = reports["python"], reports["spark-kafka"]
    system_report(f"audit sources, {store_type.value}", {s: f"{r.seconds:.1f} s" for s, r in reports.items()})
    assert python.records_read == spark_kafka_report.records_read == PARTITIONS * RECORDS
    assert python.expected_keys == spark_kafka_report.expected_keys == sum(map(len, expected.values()))
    assert python.actual_keys == spark_kafka_report.actual_keys
    found = {source: sorted((d.partition, d.key, d.kind, d.expected, d.actual) for d in report.differences)
             for source, report in reports.items()}
    assert [(p, k, kind) for p, k, kind, _, _ in found["python"]] == sorted(
        [(0, changed, "different"), (0, deleted, "missing"), (1, b"never-written", "unexpected")])
    assert found["spark-kafka"] == found["python"]


def test_an_unknown_source_is_refused(spark: Any) -> None:
    from kstate.errors import InvalidArgumentError

    with pytest.raises(InvalidArgumentError, match="unknown changelog source 'kafka'"):
        audit("127.0.0.1:9", "any-topic", StoreType.TIMESTAMPED_KV, {}, spark=spark, source="kafka")
