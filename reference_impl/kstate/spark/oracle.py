"""The changelog oracle: the state each store should hold, computed from its changelog topic, and the audit
that compares it with dumps of the instances' stores, reporting every difference with its key.

Key-value semantics (RST-1, RST-2, RST-6): per changelog partition and key, the record with the highest
offset wins; a tombstone means absent; the value is the record converted as restore converts it for the
store type (CL-9 to CL-11). A store upgraded in place keeps what older-format instances wrote in the legacy
family, read through the dual accessor's conversion (KV-31, RST-7): a :class:`LegacyBoundary` per partition
says which records were written by which older store type, and their expected value is the legacy value
converted. The Python engine and the Spark job implement the same semantics; the state builders are looked
up by store type in ``STATE_BUILDERS``. Versioned, window and session stores have their own semantics, per
version, window and session, in :mod:`kstate.spark.families`, which reports through the same AuditReport.
"""

from __future__ import annotations

import contextlib
import itertools
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from kstate.codecs import changelog as cl
from kstate.codecs.layout import column_family_plan
from kstate.codecs.store_types import BUILT_KV_TYPES, STORE_TYPES, RestoreConversion, StoreType
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


#: The restore conversions a Spark expression computes: the value as is (CL-9), or the record timestamp as 8
#: big-endian bytes before it (CL-10, TSKV-6). The others (the header layouts) go through Arrow batches.
_EXPRESSED_RESTORES = (RestoreConversion.IDENTITY, RestoreConversion.TIMESTAMPED)
_PREFIX_PROBE = b"\x01kstate-probe\xff"


def timestamp_bytes(timestamp: Any) -> Any:
    """A long column as its 8 big-endian two's-complement bytes: ``hex`` of a negative long is already 16 digits."""
    from pyspark.sql import functions as F

    return F.unhex(F.lpad(F.hex(timestamp), 16, "0"))


def _restore_expression(store_type: StoreType, value: Any, timestamp: Any) -> Any | None:
    """Restore's conversion of a record as a Spark expression (CL-9, CL-10), or None where it needs Arrow."""
    from pyspark.sql import functions as F

    conversion = STORE_TYPES[store_type].restore
    if conversion not in _EXPRESSED_RESTORES:
        return None
    return value if conversion is RestoreConversion.IDENTITY else F.concat(timestamp_bytes(timestamp), value)


def _legacy_prefix(store_type: StoreType, legacy_type: StoreType) -> bytes | None:
    """The bytes the upgrade conversion puts before a legacy value (TSKV-5, HV-8: all prefix the value), checked
    on a probe value; None if the conversion is not a fixed prefix (then the value is converted in Python)."""
    convert = _legacy_conversion(store_type, legacy_type)
    prefix = convert(b"")
    return prefix if prefix is not None and convert(_PREFIX_PROBE) == prefix + _PREFIX_PROBE else None


def _legacy_column(boundaries: Mapping[int, LegacyBoundary]) -> Any:
    """The legacy store type (its name) that wrote each row, from the partition's boundary; null for none."""
    from pyspark.sql import functions as F

    legacy = F.lit(None).cast("string")
    for boundary in boundaries.values():
        legacy = F.when((F.col("partition") == boundary.partition) & (F.col("offset") < boundary.before_offset),
                        F.lit(boundary.legacy_type.value)).otherwise(legacy)
    return legacy


def _converted_column(store_type: StoreType, boundaries: Mapping[int, LegacyBoundary]) -> tuple[Any, bool]:
    """The expected value as a Spark expression where one computes it (null elsewhere), and whether every row is
    covered: then no Arrow pass is needed."""
    from pyspark.sql import functions as F

    value, timestamp = F.col("value"), F.col("timestamp")
    own = _restore_expression(store_type, value, timestamp)
    complete = own is not None
    converted = F.lit(None).cast("binary") if own is None else own
    for legacy_type in sorted({b.legacy_type for b in boundaries.values()}, key=lambda t: t.value):
        prefix = _legacy_prefix(store_type, legacy_type)
        legacy_value = _restore_expression(legacy_type, value, timestamp)
        if prefix is None or legacy_value is None:
            complete = False
            expression = F.lit(None).cast("binary")
        else:
            expression = F.concat(F.lit(prefix), legacy_value)
        converted = F.when(F.col("legacy") == legacy_type.value, expression).otherwise(converted)
    return converted, complete


def _headers_of(column: Any) -> list[Headers]:
    """Per row, the ``(key, value)`` header pairs of an Arrow ``list<struct<key, value>>`` column."""
    offsets = column.offsets.to_pylist()
    header_keys, header_values = column.values.flatten()  # flatten: the fields as the struct array's slice sees them
    pairs = list(zip(header_keys.to_pylist(), header_values.to_pylist(), strict=True))
    return [tuple(pairs[low:high]) for low, high in itertools.pairwise(offsets)]


def convert_arrow_batches(type_name: str) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The ``mapInArrow`` function that fills the expected values no Spark expression computed: restore's
    conversion of a whole batch at once (``restore_entries``, CL-9 to CL-11), legacy rows one by one (KV-31)."""

    def convert(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        from kstate.codecs.changelog import restore_entries
        from kstate.codecs.store_types import StoreType as Type
        from kstate.spark.oracle import expected_value as expected

        store_type = Type(type_name)
        for batch in batches:
            columns = batch.to_pydict()
            values: list[bytes | None] = columns["converted"]
            todo = [i for i, v in enumerate(values) if v is None]
            if todo:
                keys, raw, stamps, legacy = columns["key"], columns["value"], columns["timestamp"], columns["legacy"]
                headers = _headers_of(batch.column("headers"))
                own = [i for i in todo if legacy[i] is None]
                converted = restore_entries(store_type, [(keys[i], raw[i], stamps[i], headers[i]) for i in own])
                for i, (_key, value) in zip(own, converted, strict=True):
                    values[i] = value
                for i in todo:
                    if legacy[i] is not None:
                        values[i] = expected(store_type, Type(legacy[i]), keys[i], raw[i], stamps[i], headers[i])
            yield pa.RecordBatch.from_arrays([batch.column("partition"), batch.column("key"),
                                              pa.array(values, pa.binary())], names=["partition", "key", "value"])

    return convert


def spark_kv_state(changelog: Any, store_type: StoreType, boundaries: Mapping[int, LegacyBoundary] | None = None,
                   *, one_row_per_key: bool = False) -> Any:
    """Key-value semantics as a Spark plan: ``max_by`` offset per (partition, key), tombstones dropped (RST-1,
    RST-2, RST-6), legacy rows by their boundary (RST-7); values converted by Spark expressions, or for the
    header layouts by ``mapInArrow`` over whole batches (never a per-row Python UDF). ``one_row_per_key``: the
    changelog holds only the latest row per (partition, key) already (the source's ``latest_per_key`` over whole
    partitions), so no aggregation is planned. Columns: partition, key, value."""
    from pyspark.sql import functions as F

    store_type = StoreType(store_type)
    boundaries = boundaries or {}
    converted, complete = _converted_column(store_type, boundaries)
    fields = ["offset", "value", "timestamp"] if complete else ["offset", "value", "timestamp", "headers"]
    if one_row_per_key:
        latest = changelog.select("partition", "key", *fields)
    else:
        latest = (changelog.groupBy("partition", "key")
                  .agg(F.max_by(F.struct(*fields), "offset").alias("r"))
                  .select("partition", "key", *(f"r.{name}" for name in fields)))
    latest = latest.where(F.col("value").isNotNull()).withColumn("legacy", _legacy_column(boundaries))
    if complete:
        return latest.select("partition", "key", converted.alias("value"))
    return (latest.withColumn("converted", converted)
            .select("partition", "key", "value", "timestamp", "headers", "legacy", "converted")
            .mapInArrow(convert_arrow_batches(store_type.value), "partition int, key binary, value binary"))


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

        from kstate.app.dump import dump_store_dir
        from kstate.codecs.store_types import StoreType as Type

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
    """What an audit found. Key-value stores list ``differences`` per key; versioned, window and session stores
    list ``entry_differences`` per version, window or session (``entity``), with ``counts`` per kind."""

    engine: str
    records_read: int
    expected_keys: int
    actual_keys: int
    differences: list[Difference] = field(default_factory=list)
    seconds: float = 0.0
    entity: str = "keys"
    #: ``kstate.spark.families.EntryDifference`` items (at most ``families.MAX_LISTED``).
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

    def summary(self) -> str:
        head = (f"{self.engine} oracle: {self.records_read} changelog records, {self.expected_keys} expected "
                f"{self.entity}, {self.actual_keys} actual {self.entity}, {self.difference_count} differences in "
                f"{self.seconds:.1f} s")
        lines = [head]
        if self.counts:
            lines.append("differences by kind: " + ", ".join(f"{kind} {n}" for kind, n in self.counts.items()))
        listed: list[Any] = [*self.differences, *self.entry_differences]
        return "\n".join([*lines, *(str(d) for d in listed[:50])])


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
                         client_config: Mapping[str, Any] | None = None, *, latest_per_key: bool = False) -> Any:
    """The changelog ``topic`` (all its partitions, or ``partitions``) as a DataFrame of the Kafka source; with
    ``latest_per_key``, the latest record per (partition, key) with its ``records`` count (RST-1)."""
    from kstate.spark.kafka_source import CLIENT_OPTION_PREFIX, read_topic

    options = {} if partitions is None else {"partitions": ",".join(str(p) for p in partitions)}
    if latest_per_key:
        options["latest_per_key"] = "true"
    options.update({f"{CLIENT_OPTION_PREFIX}{k}": str(v) for k, v in (client_config or {}).items()})
    return read_topic(spark, bootstrap, topic, **options)


@contextlib.contextmanager
def persisted_changelog(spark: Any, bootstrap: str, topic: str, partitions: Iterable[int] | None,
                        client_config: Mapping[str, Any] | None, step: Progress,
                        latest_per_key: bool = False) -> Iterator[tuple[Any, int]]:
    """The changelog read once and kept for the plans that follow, with its record count (with
    ``latest_per_key``, only each key's latest record, the count still of every record); says the steps."""
    from pyspark.sql import functions as F

    from kstate.spark.kafka_source import COUNT_COLUMN

    step("reading the changelog")
    changelog = read_changelog_frame(spark, bootstrap, topic, partitions, client_config,
                                     latest_per_key=latest_per_key).persist()
    try:
        records = int(changelog.agg(F.sum(COUNT_COLUMN)).first()[0] or 0) if latest_per_key else changelog.count()
        step("computing the expected state")
        yield changelog, records
    finally:
        changelog.unpersist()


def audit(bootstrap: str, topic: str, store_type: StoreType, actual: State | Any, *, spark: Any = None,
          partitions: Iterable[int] | None = None, boundaries: Mapping[int, LegacyBoundary] | None = None,
          progress: Progress | None = None, client_config: Mapping[str, Any] | None = None) -> AuditReport:
    """Compute the expected state of ``topic`` for ``store_type`` and compare it with ``actual``.

    With ``spark`` the Spark job does the work (the comparison too, as a full outer join); without it, the
    Python engine. ``actual`` is a state, or with ``spark`` a DataFrame of partition, key, value (such as
    :func:`store_directories_frame` reads in parallel). ``partitions`` limits the changelog partitions read (default: all of the topic's).
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
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    from kstate.spark.kafka_source import COUNT_COLUMN

    # One pass over the topic: each source task keeps the latest record per key of its whole partition (a
    # map-side combine, RST-1) with the number of records it stood for; those are summed as they stream into
    # the plan (an observation), so the count stays exact without a first job over a cached copy.
    step("reading the changelog")
    counted = Observation("changelog records")
    changelog = (read_changelog_frame(spark, bootstrap, topic, partitions, client_config, latest_per_key=True)
                 .observe(counted, F.sum(COUNT_COLUMN).alias("records")))
    step("computing the expected state")
    expected_df = spark_builder(changelog, store_type, boundaries, one_row_per_key=True)
    actual_df = state_frame(spark, actual) if isinstance(actual, dict) else actual
    step("comparing")
    e, a = expected_df.alias("e"), actual_df.alias("a")
    joined = e.join(a, (F.col("e.partition") == F.col("a.partition")) & (F.col("e.key") == F.col("a.key")),
                    "full_outer")
    rows = (joined.select(F.coalesce("e.partition", "a.partition").alias("partition"),
                          F.coalesce("e.key", "a.key").alias("key"),
                          F.col("e.value").alias("expected"), F.col("a.value").alias("actual"),
                          F.col("e.key").isNotNull().alias("in_expected"),
                          F.col("a.key").isNotNull().alias("in_actual"))
            .withColumn("same", F.col("expected").eqNullSafe(F.col("actual")))
            .groupBy().agg(F.sum(F.col("in_expected").cast("long")).alias("n"),
                           F.sum(F.col("in_actual").cast("long")).alias("actual_n"),
                           F.collect_list(F.when(~F.col("same"), F.struct("partition", "key", "expected", "actual")))
                           .alias("diffs"))
            .collect()[0])
    differences = sorted((Difference(d["partition"], bytes(d["key"]),
                                     None if d["expected"] is None else bytes(d["expected"]),
                                     None if d["actual"] is None else bytes(d["actual"]))
                          for d in rows["diffs"]), key=lambda d: (d.partition, d.key))
    return AuditReport("spark", int(counted.get["records"] or 0), int(rows["n"] or 0), int(rows["actual_n"] or 0),
                       differences, time.monotonic() - started)
