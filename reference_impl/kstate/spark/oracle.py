"""The changelog oracle: the state each store should hold, computed from its changelog topic, and the audit
that compares it with dumps of the instances' stores, reporting every difference with its key.

Key-value semantics (RST-1, RST-2, RST-6): per changelog partition and key, the record with the highest
offset wins; a tombstone means absent; the value is the record converted as restore converts it for the
store type (CL-9 to CL-11). A store upgraded in place keeps what older-format instances wrote in the legacy
family, read through the dual accessor's conversion (KV-31, RST-7): a :class:`LegacyBoundary` per partition
says which records were written by which older store type, and their expected value is the legacy value
converted. The Python engine and the Spark job implement the same semantics; the state builders are looked
up by store type in ``STATE_BUILDERS`` so that versioned, window and session semantics slot in beside them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kstate.codecs import changelog as cl
from kstate.codecs.layout import column_family_plan
from kstate.codecs.store_types import BUILT_KV_TYPES, StoreType
from kstate.stores.column_families import CONVERTERS

#: One store's state by changelog partition: partition -> key -> value bytes in the store type's layout.
State = dict[int, dict[bytes, bytes]]
Headers = tuple[tuple[str, bytes | None], ...]
Progress = Callable[[str], None]


@dataclass(frozen=True)
class LegacyBoundary:
    """Records of ``partition`` below ``before_offset`` were written by a ``legacy_type`` store that the current
    store was upgraded from in place (the store's committed changelog offset + 1 when it first opened)."""

    partition: int
    before_offset: int
    legacy_type: StoreType


def _legacy_conversion(store_type: StoreType, legacy_type: StoreType) -> Callable[[bytes], bytes]:
    """How a ``store_type`` store reads a value a ``legacy_type`` store left in its family (KV-31, KV-37)."""
    if legacy_type is store_type:
        return lambda value: value
    legacy_family = column_family_plan(legacy_type, {}).data_cf
    plan = column_family_plan(store_type, {legacy_family: True})
    if plan.conversion is None:
        raise ValueError(f"a {store_type.value} store does not upgrade a {legacy_type.value} store in place")
    return CONVERTERS[plan.conversion]


def expected_value(store_type: StoreType, legacy_type: StoreType | None, key: bytes, value: bytes | None,
                   timestamp: int, headers: Headers) -> bytes | None:
    """The value a store holds for a latest changelog record: restore's conversion, or the legacy value read
    through the upgrade conversion (None for a tombstone)."""
    if value is None:
        return None
    if legacy_type is None:
        return cl.restore_value(store_type, cl.ChangelogRecord(key, value, timestamp, headers))
    legacy = cl.restore_value(legacy_type, cl.ChangelogRecord(key, value, timestamp, headers))
    assert legacy is not None
    return _legacy_conversion(store_type, legacy_type)(legacy)


def _legacy_for(boundaries: Mapping[int, LegacyBoundary], partition: int, offset: int) -> StoreType | None:
    boundary = boundaries.get(partition)
    return boundary.legacy_type if boundary is not None and offset < boundary.before_offset else None


# --- the Python engine --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChangelogRow:
    partition: int
    offset: int
    key: bytes
    value: bytes | None
    timestamp: int
    headers: Headers = ()


def python_kv_state(rows: Iterable[ChangelogRow], store_type: StoreType,
                    boundaries: Mapping[int, LegacyBoundary] | None = None) -> State:
    """Key-value semantics in plain Python: the last record per (partition, key) by offset, tombstones deleting."""
    latest: dict[tuple[int, bytes], ChangelogRow] = {}
    for row in rows:
        current = latest.get((row.partition, row.key))
        if current is None or row.offset > current.offset:
            latest[(row.partition, row.key)] = row
    state: State = {}
    for (partition, key), row in latest.items():
        legacy = _legacy_for(boundaries or {}, partition, row.offset)
        value = expected_value(store_type, legacy, key, row.value, row.timestamp, row.headers)
        if value is not None:
            state.setdefault(partition, {})[key] = value
    return state


def read_changelog_rows(bootstrap: str, topic: str, partitions: Iterable[int],
                        client_config: Mapping[str, Any] | None = None) -> list[ChangelogRow]:
    """Every record of ``topic``'s ``partitions``, read to the end by fetch (the Python engine's input)."""
    from kstate.kafka.changelog_topics import iter_batches

    rows: list[ChangelogRow] = []
    for partition in partitions:
        for batch in iter_batches(bootstrap, topic, partition, 0, config=client_config):
            for m in batch:
                rows.append(ChangelogRow(partition, m.offset(), m.key(), m.value(), m.timestamp()[1],
                                         tuple(m.headers() or ())))
    return rows


# --- the Spark engine ---------------------------------------------------------------------------------


def spark_kv_state(changelog: Any, store_type: StoreType, boundaries: Mapping[int, LegacyBoundary] | None = None) -> Any:
    """Key-value semantics as a Spark job: ``max_by`` offset per (partition, key), tombstones dropped, values
    converted by a Python UDF calling the same conversion as the Python engine. Columns: partition, key, value."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import BinaryType

    latest = (changelog.groupBy("partition", "key")
              .agg(F.max_by(F.struct("offset", "value", "timestamp", "headers"), "offset").alias("r"))
              .select("partition", "key", "r.offset", "r.value", "r.timestamp", "r.headers")
              .where(F.col("value").isNotNull()))
    legacy_column = F.lit(None).cast("string")
    for boundary in (boundaries or {}).values():
        legacy_column = F.when((F.col("partition") == boundary.partition) & (F.col("offset") < boundary.before_offset),
                               F.lit(boundary.legacy_type.value)).otherwise(legacy_column)
    type_name = StoreType(store_type).value

    def convert(key: bytes, value: bytes, timestamp: int, headers: list[Any], legacy: str | None) -> bytes | None:
        from kstate.codecs.store_types import StoreType as Type
        from kstate.spark.oracle import expected_value as expected

        pairs = tuple((h["key"], None if h["value"] is None else bytes(h["value"])) for h in headers or [])
        return expected(Type(type_name), None if legacy is None else Type(legacy), bytes(key), bytes(value),
                        timestamp, pairs)

    # A plain (pickled) Python UDF, said explicitly: left to infer, pyspark reads the type hints as a pandas UDF's
    # and warns that it cannot, and with Arrow on by default it warns when pandas is missing. Bytes in, bytes out
    # gain nothing from Arrow here, and the benchmarks were measured this way.
    to_value = F.udf(convert, BinaryType(), useArrow=False)
    return latest.select("partition", "key", to_value("key", "value", "timestamp", "headers", legacy_column).alias("value"))


#: How the expected state of each store type is computed from its changelog, per engine.
STATE_BUILDERS: dict[StoreType, tuple[Callable[..., State], Callable[..., Any]]] = {
    store_type: (python_kv_state, spark_kv_state) for store_type in BUILT_KV_TYPES
}


# --- the audit ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Difference:
    """One key whose expected and actual values differ; None on one side means the key is missing there."""

    partition: int
    key: bytes
    expected: bytes | None
    actual: bytes | None

    @property
    def kind(self) -> str:
        if self.actual is None:
            return "missing"
        if self.expected is None:
            return "unexpected"
        return "different"

    def __str__(self) -> str:
        def show(b: bytes | None) -> str:
            return "absent" if b is None else b.hex()

        return (f"partition {self.partition} key {self.key.hex()} ({self.kind}): expected {show(self.expected)}, "
                f"actual {show(self.actual)}")


@dataclass
class AuditReport:
    engine: str
    records_read: int
    expected_keys: int
    actual_keys: int
    differences: list[Difference] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.differences

    @property
    def records_per_second(self) -> float:
        return self.records_read / self.seconds if self.seconds else 0.0

    def summary(self) -> str:
        head = (f"{self.engine} oracle: {self.records_read} changelog records, {self.expected_keys} expected keys, "
                f"{self.actual_keys} actual keys, {len(self.differences)} differences in {self.seconds:.1f} s")
        return "\n".join([head, *(str(d) for d in self.differences[:50])])


def compare_states(expected: State, actual: State) -> list[Difference]:
    """Every (partition, key) whose values differ, sorted."""
    out = []
    for partition in sorted(set(expected) | set(actual)):
        e, a = expected.get(partition, {}), actual.get(partition, {})
        for key in sorted(set(e) | set(a)):
            if e.get(key) != a.get(key):
                out.append(Difference(partition, key, e.get(key), a.get(key)))
    return out


def audit(bootstrap: str, topic: str, store_type: StoreType, actual: State, *, spark: Any = None,
          partitions: Iterable[int] | None = None, boundaries: Mapping[int, LegacyBoundary] | None = None,
          progress: Progress | None = None, client_config: Mapping[str, Any] | None = None) -> AuditReport:
    """Compute the expected state of ``topic`` for ``store_type`` and compare it with ``actual``.

    With ``spark`` the Spark job does the work (the comparison too, as a full outer join); without it, the
    Python engine. ``partitions`` limits the changelog partitions read (default: all of the topic's).
    ``client_config`` (librdkafka properties: security, SASL, TLS, ...) goes to every Kafka client.
    """
    client_config = dict(client_config or {})
    store_type = StoreType(store_type)
    step = progress or (lambda _msg: None)
    started = time.monotonic()
    python_builder, spark_builder = STATE_BUILDERS[store_type]
    if spark is None:
        from confluent_kafka.admin import AdminClient

        if partitions is None:
            metadata = AdminClient({**client_config, "bootstrap.servers": bootstrap}).list_topics(topic, timeout=15)
            partitions = sorted(metadata.topics[topic].partitions)
        step("reading the changelog")
        rows = read_changelog_rows(bootstrap, topic, partitions, client_config)
        step("computing the expected state")
        expected = python_builder(rows, store_type, boundaries)
        step("comparing")
        differences = compare_states(expected, actual)
        return AuditReport("python", len(rows), sum(map(len, expected.values())), sum(map(len, actual.values())),
                           differences, time.monotonic() - started)
    from pyspark.sql import functions as F

    from kstate.spark.kafka_source import CLIENT_OPTION_PREFIX, read_topic

    options = {} if partitions is None else {"partitions": ",".join(str(p) for p in partitions)}
    options.update({f"{CLIENT_OPTION_PREFIX}{k}": str(v) for k, v in client_config.items()})
    step("reading the changelog")
    changelog = read_topic(spark, bootstrap, topic, **options).persist()
    try:
        records = changelog.count()
        step("computing the expected state")
        expected_df = spark_builder(changelog, store_type, boundaries)
        actual_df = spark.createDataFrame([(p, k, v) for p, entries in actual.items() for k, v in entries.items()],
                                          "partition int, key binary, value binary")
        step("comparing")
        e, a = expected_df.alias("e"), actual_df.alias("a")
        joined = e.join(a, (F.col("e.partition") == F.col("a.partition")) & (F.col("e.key") == F.col("a.key")),
                        "full_outer")
        rows = (joined.select(F.coalesce("e.partition", "a.partition").alias("partition"),
                              F.coalesce("e.key", "a.key").alias("key"),
                              F.col("e.value").alias("expected"), F.col("a.value").alias("actual"),
                              F.col("e.key").isNotNull().alias("in_expected"))
                .withColumn("same", F.col("expected").eqNullSafe(F.col("actual")))
                .groupBy().agg(F.sum(F.col("in_expected").cast("long")).alias("n"),
                               F.collect_list(F.when(~F.col("same"), F.struct("partition", "key", "expected", "actual")))
                               .alias("diffs"))
                .collect()[0])
        differences = sorted((Difference(d["partition"], bytes(d["key"]),
                                         None if d["expected"] is None else bytes(d["expected"]),
                                         None if d["actual"] is None else bytes(d["actual"]))
                              for d in rows["diffs"]), key=lambda d: (d.partition, d.key))
        return AuditReport("spark", records, int(rows["n"] or 0), sum(map(len, actual.values())), differences,
                           time.monotonic() - started)
    finally:
        changelog.unpersist()
