"""The changelog oracle: the state each store should hold, computed from its changelog topic, and the audit
that compares it with dumps of the instances' stores, reporting every difference with its key.

Key-value semantics (RST-1, RST-2, RST-6): per changelog partition and key, the record with the highest
offset wins; a tombstone means absent; the value is the record converted as restore converts it for the
store type (CL-9 to CL-11). A store upgraded in place keeps what older-format instances wrote in the legacy
family, read through the dual accessor's conversion (KV-31, RST-7): a :class:`LegacyBoundary` per partition
says which records were written by which older store type, and their expected value is the legacy value
converted. The Python engine and the Spark job implement the same semantics; the state builders are looked
up by store type in ``STATE_BUILDERS``. Versioned, window and session stores have their own semantics, per
version, window and session, in :mod:`kstate.spark.semantics`, which reports through the same AuditReport.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from kstate.codecs import changelog as cl
from kstate.codecs.changelog import restore_reads_headers
from kstate.codecs.layout import column_family_plan
from kstate.codecs.store_types import BUILT_KV_TYPES, STORE_TYPES, StoreType
from kstate.errors import InvalidArgumentError
from kstate.spark.expressions import header_bytes, restore_expression
from kstate.stores.column_families import CONVERTERS

#: One store's state by changelog partition: partition -> key -> value bytes in the store type's layout.
State = dict[int, dict[bytes, bytes]]
Headers = tuple[tuple[str, bytes | None], ...]
Progress = Callable[[str], None]
#: Differences a summary lists one by one; the headline counts them all.
LISTED_IN_SUMMARY = 50


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


#: The column of each record's header bytes (HV-1), computed once where a conversion embeds them: by the
#: Kafka source (its ``header_bytes`` option) or by :func:`header_bytes`.
HEADER_BYTES = "header_bytes"
#: The column saying the latest record is not a tombstone: filters test it, never the converted value, whose
#: expression the optimizer would copy into the filter.
PRESENT = "present"


def _restore_expression(store_type: StoreType, value: Any, timestamp: Any, encoded_headers: Any) -> Any:
    """Restore's conversion of a record as a Spark expression (CL-9 to CL-11)."""
    conversion = STORE_TYPES[store_type].restore
    if conversion is None:
        raise ValueError(f"a {store_type.value} store has no restore conversion")
    return restore_expression(conversion, value, timestamp, encoded_headers)


_PREFIX_PROBE = b"\x01kstate-probe\xff"


def _legacy_prefix(store_type: StoreType, legacy_type: StoreType) -> bytes:
    """The bytes the upgrade conversion puts before a legacy value (TSKV-5, HV-8: all prefix the value), checked
    on a probe value; a conversion that is not a fixed prefix has no Spark plan and is refused by name."""
    convert = _legacy_conversion(store_type, legacy_type)
    prefix = convert(b"")
    if prefix is None or convert(_PREFIX_PROBE) != prefix + _PREFIX_PROBE:
        raise ValueError(f"a {store_type.value} store reads a {legacy_type.value} value by more than a fixed "
                         "prefix: the Spark oracle has no plan for it")
    return prefix


def _legacy_column(boundaries: Mapping[int, LegacyBoundary]) -> Any:
    """The legacy store type (its name) that wrote each row, from the partition's boundary; null for none."""
    from pyspark.sql import functions as F

    legacy = F.lit(None).cast("string")
    for boundary in boundaries.values():
        legacy = F.when((F.col("partition") == boundary.partition) & (F.col("offset") < boundary.before_offset),
                        F.lit(boundary.legacy_type.value)).otherwise(legacy)
    return legacy


def _converted_column(store_type: StoreType, boundaries: Mapping[int, LegacyBoundary]) -> Any:
    """The expected value of each row as a Spark expression: restore's conversion (CL-9 to CL-11), or for rows
    below a legacy boundary the legacy type's conversion read through the upgrade's prefix (KV-31, RST-7); null
    for a tombstone (RST-6)."""
    from pyspark.sql import functions as F

    value, timestamp, headers = F.col("value"), F.col("timestamp"), F.col(HEADER_BYTES)
    converted = _restore_expression(store_type, value, timestamp, headers)
    legacy = _legacy_column(boundaries)
    for legacy_type in sorted({b.legacy_type for b in boundaries.values()}, key=lambda t: t.value):
        legacy_value = F.concat(F.lit(_legacy_prefix(store_type, legacy_type)),
                                _restore_expression(legacy_type, value, timestamp, headers))
        converted = F.when(legacy == legacy_type.value, legacy_value).otherwise(converted)
    return F.when(value.isNotNull(), converted)


def reads_headers(store_type: StoreType, boundaries: Mapping[int, LegacyBoundary]) -> bool:
    """Whether the expected values embed record headers: the store type's restore or a legacy one does (CL-11)."""
    return any(restore_reads_headers(t) for t in {store_type, *(b.legacy_type for b in boundaries.values())})


def spark_kv_latest(changelog: Any, store_type: StoreType, boundaries: Mapping[int, LegacyBoundary] | None = None,
                    *, one_row_per_key: bool = False) -> Any:
    """The latest record per (partition, key) (``max_by`` offset, RST-1) with its expected value, null for a
    tombstone (RST-2, RST-6, RST-7), and the number of records it stands for: columns partition, key, offset,
    records, present (not a tombstone), value. ``one_row_per_key``: the changelog holds only the latest row per
    (partition, key) already (the source's ``latest_per_key`` over whole partitions, its ``records`` column), so
    no aggregation is planned."""
    from pyspark.sql import functions as F

    from kstate.spark.kafka_source import COUNT_COLUMN

    boundaries = boundaries or {}
    store_type = StoreType(store_type)
    fields = ["offset", "value", "timestamp"]
    if reads_headers(store_type, boundaries):
        if HEADER_BYTES not in changelog.columns:
            changelog = changelog.withColumn(HEADER_BYTES, header_bytes(F.col("headers")))
        fields.append(HEADER_BYTES)
    counted = COUNT_COLUMN in changelog.columns
    if one_row_per_key:
        latest = changelog.select("partition", "key", *fields,
                                  F.col(COUNT_COLUMN) if counted else F.lit(1).cast("long").alias(COUNT_COLUMN))
    else:
        latest = (changelog.groupBy("partition", "key")
                  .agg(F.max_by(F.struct(*fields), "offset").alias("r"),
                       (F.sum(COUNT_COLUMN) if counted else F.count(F.lit(1))).alias(COUNT_COLUMN))
                  .select("partition", "key", *(f"r.{name}" for name in fields), COUNT_COLUMN))
    return latest.select("partition", "key", "offset", COUNT_COLUMN, F.col("value").isNotNull().alias(PRESENT),
                         _converted_column(store_type, boundaries).alias("value"))


def spark_kv_state(changelog: Any, store_type: StoreType, boundaries: Mapping[int, LegacyBoundary] | None = None,
                   *, one_row_per_key: bool = False) -> Any:
    """Key-value semantics as a Spark plan: :func:`spark_kv_latest` without the deleted keys; values computed by
    Spark expressions (never a Python UDF). Columns: partition, key, value."""

    latest = spark_kv_latest(changelog, store_type, boundaries, one_row_per_key=one_row_per_key)
    return latest.where(PRESENT).select("partition", "key", "value")


def state_frame(spark: Any, state: State) -> Any:
    """A state (partition -> key -> value) as a DataFrame of partition, key, value, handed over as Arrow columns."""
    import pyarrow as pa

    partitions = [p for p, entries in state.items() for _ in range(len(entries))]
    keys = [k for entries in state.values() for k in entries]
    values = [v for entries in state.values() for v in entries.values()]
    table = pa.table({"partition": pa.array(partitions, pa.int32()), "key": pa.array(keys, pa.binary()),
                      "value": pa.array(values, pa.binary())})
    return spark.createDataFrame(table)


def read_store_directories(type_name: str) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The ``mapInArrow`` function reading store directories (rows of partition, directory) where the task runs:
    each directory's logical view as a ``type_name`` store sees it (KV-31, KV-35)."""

    def read(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        from kstate.codecs.store_types import StoreType as Type
        from kstate.store_dump import dump_store_dir

        store_type = Type(type_name)
        for batch in batches:
            for partition, directory in zip(batch.column("partition").to_pylist(),
                                            batch.column("directory").to_pylist(), strict=True):
                view = dump_store_dir(directory).logical_view(store_type)
                yield pa.RecordBatch.from_arrays([pa.array([partition] * len(view), pa.int32()),
                                                  pa.array(list(view), pa.binary()),
                                                  pa.array(list(view.values()), pa.binary())],
                                                 names=["partition", "key", "value"])

    return read


def store_directories_frame(spark: Any, store_type: StoreType, directories: Iterable[tuple[int, str]]) -> Any:
    """The stores' state read by Spark tasks in parallel, one task per store directory: ``(partition,
    directory)`` pairs in, a DataFrame of partition, key, value out (the actual side of :func:`audit`)."""
    pairs = [(int(p), str(d)) for p, d in directories]
    listing = spark.createDataFrame(pairs, "partition int, directory string")
    return (listing.repartition(max(len(pairs), 1))
            .mapInArrow(read_store_directories(StoreType(store_type).value), "partition int, key binary, value binary"))


#: How the expected state of each store type is computed from its changelog, per engine.
STATE_BUILDERS: dict[StoreType, tuple[Callable[..., State], Callable[..., Any]]] = {
    store_type: (python_kv_state, spark_kv_latest) for store_type in BUILT_KV_TYPES
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
    """What an audit found. Key-value stores list ``differences`` per key; versioned, window and session stores
    list ``entry_differences`` per version, window or session (``entity``), with ``counts`` per kind."""

    engine: str
    records_read: int
    expected_keys: int
    actual_keys: int
    differences: list[Difference] = field(default_factory=list)
    seconds: float = 0.0
    entity: str = "keys"
    #: ``kstate.spark.semantics.EntryDifference`` items (at most ``semantics.MAX_LISTED``).
    entry_differences: list[Any] = field(default_factory=list)
    #: Every difference counted by kind, also those not listed.
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.differences and not self.entry_differences

    @property
    def difference_count(self) -> int:
        return len(self.differences) + (sum(self.counts.values()) if self.counts else len(self.entry_differences))

    @property
    def records_per_second(self) -> float:
        return self.records_read / self.seconds if self.seconds else 0.0

    def headline(self) -> list[str]:
        """The verdict's lines: the counts, and the differences by kind where they are counted."""
        head = (f"{self.engine} oracle: {self.records_read} changelog records, {self.expected_keys} expected "
                f"{self.entity}, {self.actual_keys} actual {self.entity}, {self.difference_count} differences in "
                f"{self.seconds:.1f} s")
        lines = [head]
        if self.counts:
            lines.append("differences by kind: " + ", ".join(f"{kind} {n}" for kind, n in self.counts.items()))
        return lines

    @property
    def listed(self) -> list[Any]:
        """Every difference listed one by one (key-value and the other families alike)."""
        return [*self.differences, *self.entry_differences]

    def summary(self) -> str:
        return "\n".join([*self.headline(), *(str(d) for d in self.listed[:LISTED_IN_SUMMARY])])


def compare_states(expected: State, actual: State) -> list[Difference]:
    """Every (partition, key) whose values differ, sorted."""
    out = []
    for partition in sorted(set(expected) | set(actual)):
        e, a = expected.get(partition, {}), actual.get(partition, {})
        for key in sorted(set(e) | set(a)):
            if e.get(key) != a.get(key):
                out.append(Difference(partition, key, e.get(key), a.get(key)))
    return out


def read_changelog_frame(spark: Any, bootstrap: str, topic: str, partitions: Iterable[int] | None = None,
                         client_config: Mapping[str, Any] | None = None, *, latest_per_key: bool = False,
                         ends: Mapping[int, int] | None = None, header_bytes: bool = False,
                         source: str = "python") -> Any:
    """The changelog ``topic`` (all its partitions, or ``partitions``) as a DataFrame of the Kafka source; with
    ``latest_per_key``, the latest record per (partition, key) with its ``records`` count (RST-1); ``ends``: the
    offset each partition is read up to (exclusive), instead of its end; ``header_bytes``: with each record's header
    bytes (HV-1), encoded where the records are read. ``source``: ``python`` (the Python Data Source) or
    ``spark-kafka`` (Spark's own Kafka source, :mod:`kstate.spark.spark_kafka`), the same columns either way."""
    from kstate.spark.kafka_source import CLIENT_OPTION_PREFIX, read_topic
    from kstate.spark.spark_kafka import SOURCES, read_changelog

    if source not in SOURCES:
        raise InvalidArgumentError("source", f"unknown changelog source {source!r}: {' or '.join(SOURCES)}")
    if source == "spark-kafka":
        return read_changelog(spark, bootstrap, topic, partitions, client_config, latest_per_key=latest_per_key,
                              ends=ends, header_bytes=header_bytes)

    options = {} if partitions is None else {"partitions": ",".join(str(p) for p in partitions)}
    if latest_per_key:
        options["latest_per_key"] = "true"
    if ends:
        options["ends"] = ",".join(f"{p}:{end}" for p, end in sorted(ends.items()))
    if header_bytes:
        options["header_bytes"] = "true"
    options.update({f"{CLIENT_OPTION_PREFIX}{k}": str(v) for k, v in (client_config or {}).items()})
    return read_topic(spark, bootstrap, topic, **options)


@contextlib.contextmanager
def persisted_changelog(spark: Any, bootstrap: str, topic: str, partitions: Iterable[int] | None,
                        client_config: Mapping[str, Any] | None, step: Progress,
                        latest_per_key: bool = False, source: str = "python") -> Iterator[tuple[Any, int]]:
    """The changelog read once and kept for the plans that follow, with its record count (with
    ``latest_per_key``, only each key's latest record, the count still of every record); says the steps."""
    from pyspark.sql import functions as F

    from kstate.spark.kafka_source import COUNT_COLUMN

    step("reading the changelog")
    changelog = read_changelog_frame(spark, bootstrap, topic, partitions, client_config,
                                     latest_per_key=latest_per_key, source=source).persist()
    try:
        records = int(changelog.agg(F.sum(COUNT_COLUMN)).first()[0] or 0) if latest_per_key else changelog.count()
        step("computing the expected state")
        yield changelog, records
    finally:
        changelog.unpersist()


def _note(progress: Progress | None, detail: str) -> None:
    """A count for the stage in progress, where the progress display takes one (``kstate audit``'s does)."""
    note = getattr(progress, "note", None)
    if note is not None:
        note(detail)


def audit(bootstrap: str, topic: str, store_type: StoreType, actual: State | Any, *, spark: Any = None,
          partitions: Iterable[int] | None = None, boundaries: Mapping[int, LegacyBoundary] | None = None,
          progress: Progress | None = None, client_config: Mapping[str, Any] | None = None,
          source: str = "python") -> AuditReport:
    """Compute the expected state of ``topic`` for ``store_type`` and compare it with ``actual``.

    With ``spark`` Spark jobs do the work: per partition digests of both sides (:func:`partition_digests`), then a
    full outer join of the partitions whose digests differ, their changelog read again up to the same offsets;
    without it, the Python engine. ``actual`` is a state, or with ``spark`` a DataFrame of partition, key, value
    (such as :func:`store_directories_frame` reads in parallel). ``partitions`` limits the changelog partitions
    read (default: all of the topic's).
    ``client_config`` (librdkafka properties: security, SASL, TLS, ...) goes to every Kafka client. ``source``
    names the Spark reader of the changelog (:func:`read_changelog_frame`); the Python engine reads it itself.
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
        _note(progress, f"{len(rows)} changelog records read")
        expected = python_builder(rows, store_type, boundaries)
        step("comparing")
        differences = compare_states(expected, actual)
        return AuditReport("python", len(rows), sum(map(len, expected.values())), sum(map(len, actual.values())),
                           differences, time.monotonic() - started)
    from pyspark.sql import functions as F

    # One pass over the topic: each source task keeps the latest record per key of its whole partition (a
    # map-side combine, RST-1) with the number of records it stood for. Both sides are summed up per partition
    # (a digest); only partitions whose digests differ are read again and joined key by key.
    step("reading the changelog")
    encode_headers = reads_headers(store_type, boundaries or {})
    changelog = read_changelog_frame(spark, bootstrap, topic, partitions, client_config, latest_per_key=True,
                                     header_bytes=encode_headers, source=source)
    step("computing the expected state")
    latest = spark_builder(changelog, store_type, boundaries, one_row_per_key=True)
    actual_df = state_frame(spark, actual) if isinstance(actual, dict) else actual
    step("comparing")
    digests = partition_digests(latest, actual_df)
    records = sum(d.records for d in digests.expected.values())
    differing = digests.differing()
    _note(progress, f"{records} changelog records read; {len(differing)} of {len(set(digests.expected) | set(digests.actual))} "
                    "partitions differ")
    listed: list[Difference] = []
    if differing:
        ends = {p: digests.expected[p].end for p in differing if p in digests.expected}
        reread = (read_changelog_frame(spark, bootstrap, topic, sorted(ends), client_config, latest_per_key=True,
                                       ends=ends, header_bytes=encode_headers, source=source) if ends else None)
        expected_df = (spark_builder(reread, store_type, boundaries, one_row_per_key=True)
                       .where(PRESENT).select("partition", "key", "value") if reread is not None
                       else spark.createDataFrame([], "partition int, key binary, value binary"))
        listed = joined_differences(expected_df, actual_df.where(F.col("partition").isin(differing)))
    return AuditReport("spark", records, sum(d.count for d in digests.expected.values()),
                       sum(d.count for d in digests.actual.values()), listed, time.monotonic() - started)


@dataclass(frozen=True)
class PartitionDigest:
    """One side of one partition summed up: its entries, two 64-bit hash sums of (key, value) over them (each kept
    as the sums of its high and low 32 bits, which cannot overflow), and on the expected side the changelog
    records read and the offset after the last one."""

    count: int
    sums: tuple[int, int, int, int]
    records: int = 0
    end: int = 0


@dataclass(frozen=True)
class Digests:
    expected: dict[int, PartitionDigest]
    actual: dict[int, PartitionDigest]

    def differing(self) -> list[int]:
        """The partitions whose two sides may differ: their counts or hash sums are not equal (a partition with
        no entries on one side sums to nothing there)."""
        empty = PartitionDigest(0, (0, 0, 0, 0))
        return sorted(p for p in set(self.expected) | set(self.actual)
                      if (self.expected.get(p, empty).count, self.expected.get(p, empty).sums)
                      != (self.actual.get(p, empty).count, self.actual.get(p, empty).sums))


def partition_digests(latest: Any, actual: Any) -> Digests:
    """Per partition and side, in one Spark job with no shuffle of entries: the number of entries and the sums of
    two hashes of each (key, value) (an order-free digest: the sides agree on a partition exactly when its
    digests are equal, but for hash collisions of two 64-bit sums); ``latest`` keeps its tombstones (a null
    value, not counted) so that every partition read has its records and end offset."""
    from pyspark.sql import functions as F

    present = F.col(PRESENT)
    low_bits = F.lit(0xFFFFFFFF)
    hashes = [F.when(present, F.xxhash64("key", "value")), F.when(present, F.xxhash64("value", "key"))]
    sums = [part for h in hashes for part in (F.sum(F.shiftright(h, 32)), F.sum(h.bitwiseAND(low_bits)))]
    expected = latest.select(F.lit(True).alias("expected"), "partition", "key", PRESENT, "value", "offset", "records")
    actual_side = actual.select(F.lit(False).alias("expected"), "partition", "key", F.lit(True).alias(PRESENT), "value",
                                F.lit(None).cast("long").alias("offset"), F.lit(0).cast("long").alias("records"))
    rows = (expected.unionByName(actual_side).groupBy("expected", "partition")
            .agg(F.count_if(present).alias("count"), *(total.alias(f"s{n}") for n, total in enumerate(sums)),
                 F.sum("records").alias("records"), F.max("offset").alias("last"))
            .collect())
    sides: dict[bool, dict[int, PartitionDigest]] = {True: {}, False: {}}
    for row in rows:
        sides[row["expected"]][row["partition"]] = PartitionDigest(
            int(row["count"]), tuple(int(row[f"s{n}"] or 0) for n in range(4)),  # type: ignore[arg-type]
            int(row["records"] or 0), -1 if row["last"] is None else int(row["last"]) + 1)
    return Digests(sides[True], sides[False])


def joined_differences(expected: Any, actual: Any) -> list[Difference]:
    """Every (partition, key) whose values differ between two frames of partition, key, value: a full outer join."""
    from pyspark.sql import functions as F

    e, a = expected.alias("e"), actual.alias("a")
    joined = e.join(a, (F.col("e.partition") == F.col("a.partition")) & (F.col("e.key") == F.col("a.key")),
                    "full_outer")
    rows = (joined.select(F.coalesce("e.partition", "a.partition").alias("partition"),
                          F.coalesce("e.key", "a.key").alias("key"),
                          F.col("e.value").alias("expected"), F.col("a.value").alias("actual"))
            .where(~F.col("expected").eqNullSafe(F.col("actual")))
            .collect())
    return sorted((Difference(r["partition"], bytes(r["key"]), None if r["expected"] is None else bytes(r["expected"]),
                              None if r["actual"] is None else bytes(r["actual"])) for r in rows),
                  key=lambda d: (d.partition, d.key))
