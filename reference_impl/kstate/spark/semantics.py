"""The changelog oracle for the families beyond key-value: the state a store should make queryable, computed from
its changelog as Spark plans, the same state read from a closed store directory, and the per-entry (version,
window, session, ...) differences between them.

Every store instance is one changelog partition, with one store-wide observed stream time. The expected
side is built from Spark expressions only (``substring``/``conv`` of the binary changelog key, window
functions, ``groupBy``/``max_by``, joins), so it scales with partitions; the actual side is decoded by the
codecs while the driver reads the store's RocksDB databases. Each family's semantics (its entries, how the
changelog implies them, which are still queryable) are its module ``kstate.spark.<family>_semantics``, found by
its name (issue 33): a new family's module needs no line here.

Values are compared field by field as the store type keeps them (CL-9 to CL-11): the raw value, the record
timestamp for timestamped window types, the record headers (all of them) for header-aware types.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kstate.codecs.store_types import STORE_TYPES, VALUE_DECODERS, Family, StoredValue, StoreType, ValueFormat
from kstate.errors import KStateError

#: The largest number of differences listed one by one; the counts per kind are always complete.
MAX_LISTED = 10_000

Row = tuple[Any, ...]

#: What a family's semantics module is called: ``kstate.spark.<family>_semantics``.
SEMANTICS_MODULE_SUFFIX = "_semantics"


class AuditSetupError(KStateError):
    """The audit of a store of a family beyond key-value was asked for without what it needs."""


@dataclass(frozen=True)
class FamilyParameters:
    """The store's configuration the semantics depend on: ``retention_ms`` (window, session),
    ``history_retention_ms`` (versioned), ``retain_duplicates`` (window)."""

    retention_ms: int | None = None
    history_retention_ms: int | None = None
    retain_duplicates: bool = False


@dataclass(frozen=True)
class EntryDifference:
    """One version, window or session whose expected and actual state differ, in one field (or wholly)."""

    partition: int
    key: bytes
    entry: str
    kind: str
    expected: str | None
    actual: str | None

    def __str__(self) -> str:
        return (f"partition {self.partition} key {self.key.hex()} {self.entry} ({self.kind}): "
                f"expected {self.expected if self.expected is not None else 'absent'}, "
                f"actual {self.actual if self.actual is not None else 'absent'}")


def _stores_timestamp(store_type: StoreType) -> bool:
    return STORE_TYPES[store_type].value_format in (ValueFormat.TIMESTAMPED, ValueFormat.TIMESTAMPED_WITH_HEADERS)


def _stores_headers(store_type: StoreType) -> bool:
    return STORE_TYPES[store_type].value_format in (ValueFormat.TIMESTAMPED_WITH_HEADERS,
                                                    ValueFormat.AGGREGATION_WITH_HEADERS)


# --- Spark expressions over binary keys -----------------------------------------------------------


def int_at(column: str, position: Any, size: int) -> Any:
    """The big-endian two's-complement integer of ``size`` bytes at 1-based ``position`` (PRIM-1), as a long."""
    from pyspark.sql import functions as F

    # conv to a negative base reads the hex digits as a signed 64-bit number; 4-byte seqnums are masked >= 0.
    return F.conv(F.hex(F.substring(column, position, F.lit(size))), 16, -10).cast("long")


def latest_by_offset(changelog: Any, keys: list[str]) -> Any:
    """The last record by offset per ``keys`` (RST-1): its value, timestamp and headers."""
    from pyspark.sql import functions as F

    fields = [c for c in ("value", "timestamp", "headers") if c not in keys]
    return (changelog.groupBy(*keys)
            .agg(F.max_by(F.struct("offset", *fields), "offset").alias("r"))
            .select(*keys, *[f"r.{c}" for c in fields]))


# --- the families ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Semantics:
    """One family's semantics: how expected entries come from the changelog and actual ones from a store."""

    family: Family
    #: What an entry is called in the report ("versions", "windows", "sessions").
    entity: str
    #: The columns naming an entry, after partition and key.
    entry_columns: tuple[str, ...]
    #: The columns compared, in the order differences are reported.
    compared: tuple[str, ...]
    #: The schema of the decoded entries (both sides).
    schema: str
    #: ``(changelog, store type, parameters) -> (entries, event times)``: event times are (partition, event_time).
    expected: Callable[[Any, StoreType, FamilyParameters], tuple[Any, Any]]
    #: ``(store type, data view of one database) -> entries`` without the partition column.
    decode: Callable[[StoreType, dict[bytes, bytes]], Iterator[Row]]
    #: ``(parameters) -> predicate`` over the columns of an entry and ``stream_time``: still queryable.
    queryable: Callable[[FamilyParameters], Any]
    #: The parameter the family needs, by its ``FamilyParameters`` name.
    needs: str
    #: The stored value layouts :attr:`decode` reads.
    value_formats: frozenset[ValueFormat]
    #: Whether the expected entries depend only on each changelog key's latest record and on which keys occur
    #: (the stream time is in the key), so that the source's ``latest_per_key`` may read the changelog.
    latest_per_key: bool = False
    #: The entry columns duplicates are grouped by when the store retains them (``retain_duplicates``, WIN-6);
    #: None: the family has no duplicates.
    duplicates_by: tuple[str, ...] | None = None


HEADERS_TYPE = "array<struct<key:string,value:binary>>"


def record_fields(frame: Any, store_type: StoreType) -> Any:
    """The record's parts a store of ``store_type`` keeps beside the value (CL-9 to CL-11); null otherwise."""
    from pyspark.sql import functions as F

    headers = F.col("headers") if _stores_headers(store_type) else F.lit(None).cast(HEADERS_TYPE)
    frame = frame.withColumn("headers", headers)
    if "timestamp" not in frame.columns:
        return frame
    return frame.withColumn("timestamp", F.col("timestamp") if _stores_timestamp(store_type) else F.lit(None).cast("long"))


def latest_per_changelog_key(changelog: Any, store_type: StoreType, key_columns: Callable[[Any], Any],
                             columns: Sequence[str], event_time: str) -> tuple[Any, Any]:
    """A family's expected entries where the changelog key is the store key with the entry's time in it (WIN-1,
    SESS-1): the last record per changelog key, a tombstone deleting it, split by ``key_columns`` and selected as
    ``partition, key, *columns``; and every record's ``event_time`` column as the event times (CL-6, CL-7)."""
    from pyspark.sql import functions as F

    latest = key_columns(latest_by_offset(changelog, ["partition", "key"]).where(F.col("value").isNotNull()))
    entries = record_fields(latest, store_type).select("partition", "key", *columns)
    events = key_columns(changelog.select("partition", "key")).select(
        "partition", F.col(event_time).alias("event_time"))
    return entries, events


def within_retention(column: str, params: FamilyParameters) -> Any:
    """Still queryable: ``column`` above the stream time minus the store's retention (WS-11, SS-12)."""
    from pyspark.sql import functions as F

    return F.col(column) > F.col("stream_time") - F.lit(params.retention_ms)


def value_decoder(store_type: StoreType) -> Callable[[bytes], StoredValue]:
    """The table's decoder of ``store_type``'s stored values; a layout the family's decoders do not know is refused."""
    semantics = semantics_for(store_type)
    value_format = STORE_TYPES[store_type].value_format
    if value_format is None or value_format not in semantics.value_formats:
        raise AuditSetupError(f"the family oracle cannot decode {StoreType(store_type).value} values")
    return VALUE_DECODERS[value_format]


def header_list(parts: StoredValue) -> list[tuple[str, bytes | None]] | None:
    """The headers as the entry schema's array column holds them (None: the layout keeps none)."""
    return None if parts.headers is None else list(parts.headers)


def _data_view(store_type: StoreType, families: dict[str, dict[bytes, bytes]]) -> dict[bytes, bytes]:
    """What the store's iterators read: the data family, legacy rows converted (LAY-6, LAY-8)."""
    from kstate.store_dump import logical_view

    return logical_view(store_type, families)


@functools.cache
def family_semantics() -> Mapping[Family, Semantics]:
    """The semantics of each family the oracle knows beyond key-value: the ``SEMANTICS`` of every
    ``kstate.spark.<family>_semantics`` module, imported by its name (issue 33); two modules of one family are
    refused."""
    import kstate.spark as package

    found: dict[Family, Semantics] = {}
    for module_info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if not module_info.name.endswith(SEMANTICS_MODULE_SUFFIX):
            continue
        semantics: Semantics = importlib.import_module(f"{package.__name__}.{module_info.name}").SEMANTICS
        if semantics.family in found:
            raise RuntimeError(f"kstate.spark.{module_info.name}: a second module of the {semantics.family.value} family")
        found[semantics.family] = semantics
    return found


@functools.cache
def family_audit_types() -> tuple[StoreType, ...]:
    """The store types whose changelog the family oracle reads (a changelog format and restore rule exist) and
    whose stored values its decoders know."""
    semantics = family_semantics()
    return tuple(t for t, i in STORE_TYPES.items()
                 if i.family in semantics and i.changelog is not None and i.restore is not None
                 and i.value_format in semantics[i.family].value_formats)


def semantics_for(store_type: StoreType) -> Semantics:
    """The semantics of ``store_type``'s family; :class:`AuditSetupError` for a type the oracle cannot audit."""
    if store_type not in family_audit_types():
        raise AuditSetupError(f"the family oracle does not audit {StoreType(store_type).value} stores")
    return family_semantics()[STORE_TYPES[store_type].family]


def check_parameters(store_type: StoreType, params: FamilyParameters) -> None:
    """Refuse a missing or negative retention the type's semantics need, naming it."""
    semantics = semantics_for(store_type)
    value = getattr(params, semantics.needs)
    if value is None or value < 0:
        raise AuditSetupError(f"auditing a {StoreType(store_type).value} store needs a non-negative "
                              f"{semantics.needs.replace('_', '-')} (the store's configuration)")
    if params.retain_duplicates and semantics.duplicates_by is None:
        keeping = sorted(s.family.value for s in family_semantics().values() if s.duplicates_by is not None)
        raise AuditSetupError(f"retain_duplicates applies to {' and '.join(keeping)} stores only")


# --- the actual side --------------------------------------------------------------------------------


def _databases(store_type: StoreType, store_dir: Path) -> list[Path]:
    """The RocksDB directories of a store: itself (versioned) or its segments (LAY-2, LAY-3)."""
    from kstate.store_dump import segment_databases

    if STORE_TYPES[store_type].single_database:
        return [store_dir]
    return [db for db, _ in segment_databases(store_dir)]


def read_store_entries(store_type: StoreType, partition: int, store_dir: str | Path,
                       problems: list[EntryDifference] | None = None) -> list[Row]:
    """Every entry of a closed store directory, decoded as :data:`SEMANTICS` lays them out (read from scratch
    copies, the directory untouched); with ``problems``, rows that do not decode are added to it (kind
    ``undecodable``) instead of failing the read."""
    from kstate.store_dump import read_database

    semantics = semantics_for(store_type)
    rows: list[Row] = []
    for db_dir in _databases(store_type, Path(store_dir)):
        view = _data_view(store_type, {cf: dict(entries) for cf, entries in read_database(db_dir).items()})
        try:
            decoded = [(partition, *row) for row in semantics.decode(store_type, view)]
            rows.extend(decoded)
            continue
        except (KStateError, AssertionError) as exc:
            if problems is None:
                raise AuditSetupError(f"{db_dir}: a row does not decode as {store_type.value} ({exc})") from exc
        for key, value in view.items():  # the slow path, only for a database holding a bad row
            try:
                rows.extend((partition, *row) for row in semantics.decode(store_type, {key: value}))
            except (KStateError, AssertionError) as exc:
                problems.append(EntryDifference(partition, key, f"row in {db_dir.name}", "undecodable", None, str(exc)))
    return rows


#: The columns :func:`read_stores_frame` adds for a row that did not decode (an ``undecodable`` difference).
PROBLEM_COLUMNS = "problem_entry string, problem_kind string, problem_expected string, problem_actual string"


def _store_directory_reader(type_name: str, schema: Any) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The ``mapInArrow`` function reading (partition, directory) rows where the task runs: the decoded entries of
    each directory, and its undecodable rows in the problem columns, as Arrow batches of ``schema``."""

    def read(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        from kstate.codecs.store_types import StoreType as Type
        from kstate.spark.semantics import read_store_entries as read_entries

        store_type = Type(type_name)
        entry_width = len(schema) - 4
        for batch in batches:
            for partition, directory in zip(batch.column("partition").to_pylist(),
                                            batch.column("directory").to_pylist(), strict=True):
                problems: list[EntryDifference] = []
                out = [(*row, None, None, None, None) for row in read_entries(store_type, partition, directory, problems)]
                out += [(p.partition, p.key, *([None] * (entry_width - 2)), p.entry, p.kind, p.expected, p.actual)
                        for p in problems]
                if out:
                    columns = list(zip(*out, strict=True))
                    yield pa.RecordBatch.from_arrays([pa.array(list(values), field.type)
                                                      for values, field in zip(columns, schema, strict=True)],
                                                     schema=schema)

    return read


def read_stores_frame(spark: Any, store_type: StoreType, stores: Mapping[int, Iterable[str | Path]]) -> Any:
    """The closed store directories (changelog partition -> directories) read by Spark tasks in parallel, one
    per directory, as :func:`read_store_entries` reads them: the family's columns, plus :data:`PROBLEM_COLUMNS`
    set (and the entry columns null but partition and key) on each row that did not decode."""
    from pyspark.sql.pandas.types import to_arrow_schema

    store_type = StoreType(store_type)
    ddl = f"{semantics_for(store_type).schema}, {PROBLEM_COLUMNS}"
    schema = to_arrow_schema(spark.createDataFrame([], ddl).schema)
    pairs = [(int(partition), str(d)) for partition, dirs in sorted(stores.items()) for d in dirs]
    listing = spark.createDataFrame(pairs, "partition int, directory string").repartition(max(len(pairs), 1))
    return listing.mapInArrow(_store_directory_reader(store_type.value, schema), ddl)


def store_problems(frame: Any) -> list[EntryDifference]:
    """The undecodable rows of a :func:`read_stores_frame` frame, by partition, key and entry."""
    from pyspark.sql import functions as F

    found = frame.where(F.col("problem_kind").isNotNull()).collect()
    return sorted((EntryDifference(r["partition"], bytes(r["key"]), r["problem_entry"], r["problem_kind"],
                                   r["problem_expected"], r["problem_actual"]) for r in found),
                  key=lambda d: (d.partition, d.key, d.entry))


def actual_frame(spark: Any, store_type: StoreType, rows: Iterable[Row]) -> Any:
    """Decoded store entries (from :func:`read_store_entries`) as a DataFrame of the family's schema."""
    return spark.createDataFrame(list(rows), semantics_for(store_type).schema)


# --- the comparison ---------------------------------------------------------------------------------


def _shown(column: Any, name: str) -> Any:
    """A compared column as report text: hex bytes, numbers, ``[k=hex,...]`` headers, ``latest`` for no validTo."""
    from pyspark.sql import functions as F

    def headers_text(headers: Any) -> Any:
        pairs = F.transform(headers, lambda h: F.concat(h["key"], F.lit("="), F.coalesce(F.hex(h["value"]), F.lit("null"))))
        return F.concat(F.lit("["), F.array_join(pairs, ","), F.lit("]"))

    if name == "value":
        return F.hex(column)
    if name == "valid_to":
        return F.coalesce(column.cast("string"), F.lit("latest"))
    if name == "headers":
        return headers_text(column)
    if name == "duplicates":
        return F.array_join(F.transform(column, lambda d: F.concat_ws(
            " ", F.hex(d["value"]), d["timestamp"].cast("string"), headers_text(d["headers"]))), "; ")
    return column.cast("string")


def _queryable_entries(semantics: Semantics, entries: Any, stream_times: Any, params: FamilyParameters) -> Any:
    """The entries a store answers queries with at the changelog's stream time (observed stream time −1 when
    a partition has no records, VER-25)."""
    from pyspark.sql import functions as F

    with_time = (entries.join(F.broadcast(stream_times), "partition", "left")
                 .withColumn("stream_time", F.coalesce(F.col("stream_time"), F.lit(-1).cast("long"))))
    # An entry whose key does not decode has null times: kept, so that it is reported rather than lost.
    return with_time.where(F.coalesce(semantics.queryable(params), F.lit(True))).drop("stream_time")


def _comparable(semantics: Semantics, params: FamilyParameters) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The entry and compared columns; duplicates are compared per key and the family's ``duplicates_by`` (a
    window's start, WIN-6)."""
    if semantics.duplicates_by is not None and params.retain_duplicates:
        return semantics.duplicates_by, ("duplicates",)
    return semantics.entry_columns, semantics.compared


def _group_duplicates(semantics: Semantics, frame: Any) -> Any:
    """The sorted list of each entry's compared fields per key and the family's ``duplicates_by`` (WIN-6)."""
    from pyspark.sql import functions as F

    return (frame.groupBy("partition", "key", *(semantics.duplicates_by or ()))
            .agg(F.array_sort(F.collect_list(F.struct(*semantics.compared))).alias("duplicates")))


@dataclass
class Comparison:
    """What the comparison found: entry counts on both sides, differences counted per kind, and listed."""

    expected_entries: int
    actual_entries: int
    counts: dict[str, int]
    differences: list[EntryDifference]


def compare(semantics: Semantics, expected: Any, actual: Any, params: FamilyParameters,
            stream_times: Any, max_listed: int = MAX_LISTED) -> Comparison:
    """Join expected and actual entries on (partition, key, entry) and list every difference, one per field."""
    from pyspark.sql import functions as F

    expected = _queryable_entries(semantics, expected, stream_times, params)
    actual = _queryable_entries(semantics, actual, stream_times, params)
    entry, compared = _comparable(semantics, params)
    if compared == ("duplicates",):
        expected, actual = _group_duplicates(semantics, expected), _group_duplicates(semantics, actual)
    keys = ["partition", "key", *entry]
    e = expected.select(*keys, *[F.col(c).alias(f"e_{c}") for c in compared], F.lit(True).alias("in_e"))
    a = actual.select(*keys, *[F.col(c).alias(f"a_{c}") for c in compared], F.lit(True).alias("in_a"))
    joined = (e.join(a, keys, "full_outer")
              .withColumn("in_e", F.coalesce("in_e", F.lit(False))).withColumn("in_a", F.coalesce("in_a", F.lit(False))))
    in_e, in_a = F.col("in_e"), F.col("in_a")

    def whole(prefix: str) -> Any:
        return F.concat_ws(" ", *[F.concat(F.lit(f"{c}="), _shown(F.col(f"{prefix}{c}"), c)) for c in compared])

    def difference(kind: Any, expected_text: Any, actual_text: Any) -> Any:
        return F.struct(kind.alias("kind"), expected_text.cast("string").alias("expected"),
                        actual_text.cast("string").alias("actual"))

    none = F.lit(None).cast("string")
    candidates = [
        F.when(in_e & ~in_a, difference(F.lit("missing"), whole("e_"), none)),
        F.when(~in_e & in_a, difference(F.lit("unexpected"), none, whole("a_"))),
        *[F.when(in_e & in_a & ~F.col(f"e_{c}").eqNullSafe(F.col(f"a_{c}")),
                 difference(F.lit(f"different {c}"), _shown(F.col(f"e_{c}"), c), _shown(F.col(f"a_{c}"), c)))
          for c in compared],
    ]
    # One pass counts both sides and every kind of difference: posexplode_outer keeps an entry without
    # differences (kind null) and counts each entry once (position 0 or null).
    exploded = joined.select(*keys, in_e, in_a, F.posexplode_outer(F.filter(F.array(*candidates),
                                                                            lambda d: d.isNotNull())))
    first = F.coalesce(F.col("pos"), F.lit(0)) == 0
    tally = (exploded.groupBy(F.col("col.kind").alias("kind"))
             .agg(F.count("col").alias("n"), F.sum(F.when(first & in_e, 1).otherwise(0)).alias("e"),
                  F.sum(F.when(first & in_a, 1).otherwise(0)).alias("a"))
             .collect())
    counts = {row["kind"]: int(row["n"]) for row in tally if row["kind"] is not None}
    listed = (exploded.where(F.col("col").isNotNull()).select(*keys, "col.kind", "col.expected", "col.actual")
              .orderBy(*keys, "kind").limit(max_listed).collect()) if counts else []
    totals = {"e": sum(int(row["e"]) for row in tally), "a": sum(int(row["a"]) for row in tally)}
    differences = [EntryDifference(row["partition"], bytes(row["key"]), " ".join(f"{c}={row[c]}" for c in entry),
                                   row["kind"], row["expected"], row["actual"]) for row in listed]
    return Comparison(int(totals["e"] or 0), int(totals["a"] or 0), dict(sorted(counts.items())), differences)


def _expected_with_stream_times(changelog: Any, store_type: StoreType, params: FamilyParameters) -> tuple[Any, Any]:
    from pyspark.sql import functions as F

    check_parameters(store_type, params)
    expected, events = semantics_for(store_type).expected(changelog, StoreType(store_type), params)
    return expected, events.groupBy("partition").agg(F.max("event_time").alias("stream_time"))


def expected_entries(changelog: Any, store_type: StoreType, params: FamilyParameters) -> Any:
    """The entries ``changelog`` (the Kafka source's columns) implies a store answers queries with, in the
    family's schema, before duplicates are grouped."""
    expected, stream_times = _expected_with_stream_times(changelog, store_type, params)
    return _queryable_entries(semantics_for(store_type), expected, stream_times, params)


def compare_changelog(spark: Any, changelog: Any, store_type: StoreType, params: FamilyParameters, actual: Any,
                      max_listed: int = MAX_LISTED) -> Comparison:
    """The expected entries of ``changelog`` (the Kafka source's columns) against ``actual`` (the family schema)."""
    expected, stream_times = _expected_with_stream_times(changelog, store_type, params)
    return compare(semantics_for(store_type), expected, actual, params, stream_times, max_listed)


def audit_stores(bootstrap: str, topic: str, store_type: StoreType, stores: Mapping[int, Iterable[str | Path]],
                 params: FamilyParameters, *, spark: Any, partitions: Iterable[int] | None = None,
                 progress: Callable[[str], None] | None = None,
                 client_config: Mapping[str, Any] | None = None, source: str = "python") -> Any:
    """Audit the closed store directories ``stores`` (changelog partition -> directories) of a versioned, window
    or session store against its changelog ``topic``, read through ``source`` (``python`` or ``spark-kafka``);
    answers an :class:`kstate.spark.oracle.AuditReport`."""
    from pyspark.sql import functions as F

    from kstate.spark.oracle import AuditReport, persisted_changelog

    store_type = StoreType(store_type)
    check_parameters(store_type, params)
    semantics = semantics_for(store_type)
    step = progress or (lambda _msg: None)
    started = time.monotonic()
    read = read_stores_frame(spark, store_type, stores).persist()
    try:
        problems = store_problems(read)
        actual = read.where(F.col("problem_kind").isNull()).select(*spark.createDataFrame([], semantics.schema).columns)
        with persisted_changelog(spark, bootstrap, topic, partitions, client_config, step,
                                 latest_per_key=semantics.latest_per_key,
                                 source=source) as (changelog, records):
            step("comparing")
            found = compare_changelog(spark, changelog, store_type, params, actual)
    finally:
        read.unpersist()
    counts = dict(found.counts)
    if problems:
        counts["undecodable"] = len(problems)
    return AuditReport("spark", records, found.expected_entries, found.actual_entries, [],
                       time.monotonic() - started, entity=semantics.entity,
                       entry_differences=problems + found.differences, counts=dict(sorted(counts.items())))
