"""The Spark side: the Kafka data source reads topics exactly (one Spark partition per Kafka partition, to
EOF by fetch), the Spark oracle computes the same state as the Python engine for every key-value store type
(RST-1, RST-2, RST-7 via legacy boundaries), the audit reports every difference with its key, and
``kstate audit`` runs it from the command line."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest
from helpers import consumed_by_one_instance, write_raw_store

from kstate.app.cluster import AppCluster
from kstate.codecs.store_types import BUILT_KV_TYPES, StoreType
from kstate.kafka.broker import Broker
from kstate.kafka.changelog_topics import RawRecord, create_topic, produce
from kstate.spark.kafka_source import read_topic
from kstate.spark.oracle import LegacyBoundary, audit, python_kv_state, read_changelog_rows

pytestmark = pytest.mark.spark


def test_the_data_source_reads_every_record_exactly(spark: Any, broker: Broker, topic_name: str) -> None:
    create_topic(broker, topic_name, 3)
    records: dict[int, list[RawRecord]] = {
        0: [(b"k1", b"v1", 1_700_000_000_000, [("a", b"1"), ("a", b"2"), ("n", None), ("e", b"")]),
            (b"k2", b"", 5, []), (b"k1", None, 7, [("\u0436", b"\xff")]), (b"\xff\x00", b"\x00", 2**41, [])],
        1: [(b"k%d" % i, b"v%d" % i, 10 + i, []) for i in range(300)],  # multi-record batches: ListOffsets is wrong
        2: [],
    }
    for partition, rows in records.items():
        if rows:
            produce(broker, topic_name, rows, partition=partition)
    frame = read_topic(spark, broker.bootstrap, topic_name)
    assert frame.rdd.getNumPartitions() == 3
    got = frame.orderBy("partition", "offset").collect()
    assert [(r.partition, r.offset) for r in got] == [(p, o) for p, rows in records.items() for o in range(len(rows))]
    for row in got:
        key, value, timestamp, headers = records[row.partition][row.offset]
        assert (bytes(row.key), None if row.value is None else bytes(row.value), row.timestamp) == (key, value, timestamp)
        assert [(h.key, None if h.value is None else bytes(h.value)) for h in row.headers] == headers
        assert row.timestampType == 1 and row.topic == topic_name


def _changelog_with_everything(cluster: AppCluster, rng: random.Random) -> None:
    for partition in range(cluster.partitions):
        produce(cluster.broker, cluster.changelog_topic,
                [(b"key-%03d" % rng.randrange(60), None if rng.random() < 0.15 else b"v%d" % n, 1000 + n,
                  [("h", b"%d" % n), ("h", None)] if n % 3 else []) for n in range(400)], partition=partition)


@pytest.mark.parametrize("store_type", list(BUILT_KV_TYPES), ids=lambda t: t.value)
def test_spark_and_python_engines_agree(spark: Any, make_cluster: Callable[..., AppCluster], store_type: StoreType) -> None:
    cluster = make_cluster(store_type, partitions=3)
    _changelog_with_everything(cluster, random.Random(1))
    rows = read_changelog_rows(cluster.broker.bootstrap, cluster.changelog_topic, range(3))
    boundaries: dict[int, LegacyBoundary] = {}
    if store_type is not StoreType.KEY_VALUE:
        boundaries = {1: LegacyBoundary(1, 200, StoreType.KEY_VALUE)}
        if store_type is StoreType.TIMESTAMPED_KV_WITH_HEADERS:
            boundaries[2] = LegacyBoundary(2, 300, StoreType.TIMESTAMPED_KV)
    expected = python_kv_state(rows, store_type, boundaries)
    assert sum(map(len, expected.values())) > 100
    report = audit(cluster.broker.bootstrap, cluster.changelog_topic, store_type, expected, spark=spark,
                   boundaries=boundaries)
    assert report.ok, report.summary()
    assert report.records_read == len(rows) == 1200

    tampered = {p: dict(entries) for p, entries in expected.items()}
    some_key = sorted(tampered[0])[0]
    tampered[0][some_key] = b"wrong"
    removed = sorted(tampered[1])[-1]
    del tampered[1][removed]
    tampered[2][b"never-written"] = b"x"
    report = audit(cluster.broker.bootstrap, cluster.changelog_topic, store_type, tampered, spark=spark,
                   boundaries=boundaries)
    assert [(d.partition, d.key, d.kind) for d in report.differences] == [
        (0, some_key, "different"), (1, removed, "missing"), (2, b"never-written", "unexpected")]
    assert report.differences[0].expected == expected[0][some_key] and report.differences[0].actual == b"wrong"


def test_kstate_audit_command(spark: Any, make_cluster: Callable[..., AppCluster], capsys: pytest.CaptureFixture[str]) -> None:
    from kstate.cli import main

    cluster = make_cluster(StoreType.TIMESTAMPED_KV, partitions=2)
    instance = consumed_by_one_instance(cluster, per_partition=300, keys=80, seed=2)
    args = ["audit", "--bootstrap", cluster.broker.bootstrap, "--application-id", cluster.application_id,
            "--store", cluster.store_name, "--store-type", "timestamped_kv", "--state-dir", instance.config.state_dir,
            "--master", "local[2]"]
    assert main(args) == 0
    assert "0 differences" in capsys.readouterr().out
    # A changelog record the store never saw: the audit names the key and fails.
    produce(cluster.broker, cluster.changelog_topic, [(b"lost-update", b"v", 99, [])], partition=1)
    assert main(args) == 1
    out = capsys.readouterr().out
    assert "1 differences" in out and b"lost-update".hex() in out


@pytest.mark.parametrize("engine", ["spark", "python"])
def test_kstate_audit_with_a_non_default_client_configuration(
        spark: Any, make_cluster: Callable[..., AppCluster], tmp_path: Any, capsys: pytest.CaptureFixture[str],
        engine: str) -> None:
    """The audit as an operator runs it against a real cluster: client properties from a file, shortcut options
    and ``-X`` settings reach every client (the broker check, the Python reader, the Spark source)."""
    from kstate.cli import main

    cluster = make_cluster(StoreType.KEY_VALUE, partitions=2)
    instance = consumed_by_one_instance(cluster, per_partition=120, keys=40, seed=5)
    properties = tmp_path / "client.properties"
    properties.write_text("# as an operator would keep it\nclient.id=kstate-auditor\nfetch.min.bytes=1\n"
                          "socket.keepalive.enable=true\n")
    args = ["audit", "--bootstrap", cluster.broker.bootstrap, "--application-id", cluster.application_id,
            "--store", cluster.store_name, "--store-type", "kv", "--state-dir", instance.config.state_dir,
            "--engine", engine, "--master", "local[2]", "--client-config", str(properties),
            "--security-protocol", "PLAINTEXT", "-X", "fetch.wait.max.ms=50", "-X", "client.id=kstate-audit-x"]
    assert main(args) == 0
    assert "0 differences" in capsys.readouterr().out
    # The configuration is really used: asking for TLS from a plaintext broker finds no broker, in one line.
    assert main([*args, "-X", "security.protocol=SSL", "--connect-timeout", "3"]) == 2
    err = capsys.readouterr().err
    assert f"no broker answered at {cluster.broker.bootstrap}" in err and "Traceback" not in err


def test_kstate_audit_of_a_versioned_store_detects_its_type_and_reports_per_version(
        spark: Any, broker: Broker, tmp_path: Any, app_name: str, capsys: pytest.CaptureFixture[str]) -> None:
    """History retention 500, stream time 3000: k1 b [2000,3000) and k2 x [2500,-) are queryable, k1 a [1000,2000)
    is not (VER-32); the type is detected from the directory; a version the store lacks is reported (VER-25)."""
    from kstate.cli import main
    from kstate.codecs import versioned

    topic = f"{app_name}-vs-changelog"
    create_topic(broker, topic, 1)
    produce(broker, topic, [(b"k1", b"a", 1000, []), (b"k1", b"b", 2000, []), (b"k1", None, 3000, []),
                            (b"k2", b"x", 2500, [])])
    store_dir = tmp_path / "state" / app_name / "0_0" / "rocksdb" / "vs"
    write_raw_store(store_dir, {
        versioned.latest_value_key(b"k2"): versioned.encode_latest_value(b"x", 2500),
        versioned.segment_key(2, b"k1"): versioned.new_segment_value_with_record(b"a", 1000, 2000).serialize(),
        versioned.segment_key(3, b"k1"): versioned.new_segment_value_with_record(b"b", 2000, 3000).serialize(),
    })
    args = ["audit", "--bootstrap", broker.bootstrap, "--application-id", app_name, "--store", "vs",
            "--state-dir", str(tmp_path / "state"), "--history-retention-ms", "500", "--master", "local[2]"]
    assert main(args) == 0
    captured = capsys.readouterr()
    assert "store type versioned_kv (detected" in captured.err
    assert "2 expected versions, 2 actual versions, 0 differences" in captured.out
    produce(broker, topic, [(b"k3", b"q", 3100, [])])
    assert main(args) == 1
    out = capsys.readouterr().out
    assert "differences by kind: missing 1" in out
    assert f"partition 0 key {b'k3'.hex()} valid_from=3100 (missing): expected value=71 valid_to=latest" in out


def test_kstate_audit_of_a_session_store_reads_every_segment_and_reports_per_session(
        spark: Any, broker: Broker, tmp_path: Any, app_name: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Sessions by key, start and end from ``<task>/<store>/<store>.<segment start>`` (SESS-1, SESS-11); a
    merge's removes delete the merged sessions (CL-7); a session the store kept though it was merged away is
    reported, one line per session, in each task's partition."""
    from kstate.cli import main
    from kstate.codecs.changelog import segmented_changelog_key
    from kstate.codecs.store_types import Family

    def sk(key: bytes, start: int, end: int) -> bytes:
        return segmented_changelog_key(key, start, end, family=Family.SESSION)

    topic = f"{app_name}-ss-changelog"
    create_topic(broker, topic, 2)
    produce(broker, topic, [(sk(b"u", 1000, 1000), b"1", 1000, []), (sk(b"u", 1500, 1500), b"1", 1500, []),
                            (sk(b"u", 1000, 1000), None, 1500, []), (sk(b"u", 1500, 1500), None, 1500, []),
                            (sk(b"u", 1000, 1500), b"2", 1500, [])], partition=0)
    produce(broker, topic, [(sk(b"w", 5000, 7000), b"9", 7000, [])], partition=1)
    state = tmp_path / "state"
    for task, segment, rows in [("0_0", "ss.0", {sk(b"u", 1000, 1500): b"2", sk(b"u", 1000, 1000): b"1"}),
                                ("0_1", "ss.6000", {sk(b"w", 5000, 7000): b"9"})]:
        write_raw_store(state / app_name / task / "ss" / segment, rows)
    args = ["audit", "--bootstrap", broker.bootstrap, "--application-id", app_name, "--store", "ss",
            "--state-dir", str(state), "--store-type", "session", "--retention-ms", "60000", "--master", "local[2]"]
    assert main(args) == 1
    out = capsys.readouterr().out
    assert f"{topic}: 2 partitions dumped" in out
    assert "2 expected sessions, 3 actual sessions, 1 differences" in out
    assert f"partition 0 key {b'u'.hex()} start=1000 end=1000 (unexpected): expected absent, actual value=31" in out
