"""The changelog oracle's semantics of the versioned family (VER-25, VER-26, VER-30, VER-32, CL-5), found by
:mod:`kstate.spark.semantics` by this module's name.

A record older than the stream time observed before it minus the history retention was not put (VER-26; restore
skips it the same way); of the records of one key with one timestamp the last by offset wins (a same-timestamp put
replaces); each non-tombstone record is a version valid from its timestamp to the next record's timestamp of its
key (a tombstone ends a version), the last one with no validTo. Queryable (VER-32): the latest version always; an
older one while its validTo is above stream time minus history retention (some ``get(k, asOf)`` still returns it).
Known gap: the corner of VER-34 (a tombstone at the latest version's timestamp, recorded nowhere) is modelled as
the version list says, not as Kafka's store answers. The header-aware type (KIP-1271, tentative) keeps each
version as ``[headers][value]``: its headers are compared too.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kstate.codecs import versioned
from kstate.codecs.store_types import Family, StoreType, ValueFormat
from kstate.spark.semantics import (
    HEADERS_TYPE,
    FamilyParameters,
    Row,
    Semantics,
    header_list,
    latest_by_offset,
    record_fields,
    value_decoder,
)


def _expected(changelog: Any, store_type: StoreType, params: FamilyParameters) -> tuple[Any, Any]:
    """Versions per key with validFrom/validTo from the changelog (VER-25, VER-26, VER-32, CL-5)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    history = params.history_retention_ms
    before = Window.partitionBy("partition").orderBy("offset").rowsBetween(Window.unboundedPreceding, -1)
    # VER-26: a put older than the stream time observed before it minus the grace period (= history
    # retention, VER-24) is not applied; restore skips it by the same per-record test.
    accepted = (changelog.select("partition", "offset", "key", "value", "timestamp", "headers")
                .withColumn("observed", F.max("timestamp").over(before))
                .where(F.col("observed").isNull() | (F.col("timestamp") >= F.col("observed") - F.lit(history))))
    per_timestamp = latest_by_offset(accepted, ["partition", "key", "timestamp"])
    by_key = Window.partitionBy("partition", "key").orderBy("timestamp")
    versions = (record_fields(per_timestamp.withColumn("valid_to", F.lead("timestamp").over(by_key))
                              .withColumnRenamed("timestamp", "valid_from"), store_type)
                .where(F.col("value").isNotNull())
                .select("partition", "key", "valid_from", "valid_to", "value", "headers"))
    return versions, changelog.select("partition", F.col("timestamp").alias("event_time"))


def _decode(store_type: StoreType, view: dict[bytes, bytes]) -> Iterator[Row]:
    """Every version a versioned store holds: the latest-value rows and each segment row's non-tombstones, each value
    split by the type's layout (the header-aware type keeps ``[headers][value]``, KIP-1271, tentative)."""
    decode = value_decoder(store_type)
    for physical, stored in view.items():
        segment, key = versioned.split_segment_key(physical)
        if segment == versioned.LATEST_VALUE_SEGMENT_ID:
            value, valid_from = versioned.decode_latest_value(stored)
            parts = decode(value)
            yield key, valid_from, None, parts.value, header_list(parts)
            continue
        for version in versioned.deserialize_segment_value(stored).versions():
            if version.value is not None:
                parts = decode(version.value)
                yield key, version.valid_from, version.valid_to, parts.value, header_list(parts)


def _queryable(params: FamilyParameters) -> Any:
    from pyspark.sql import functions as F

    valid_to = F.col("valid_to")
    return valid_to.isNull() | (valid_to > F.col("stream_time") - F.lit(params.history_retention_ms))


#: A versioned store's entries need every record (its history, VER-26's skipped records), not only each key's latest.
SEMANTICS = Semantics(
    Family.VERSIONED, "versions", ("valid_from",), ("value", "valid_to", "headers"),
    f"partition int, key binary, valid_from long, valid_to long, value binary, headers {HEADERS_TYPE}",
    _expected, _decode, _queryable, "history_retention_ms",
    frozenset({ValueFormat.PLAIN, ValueFormat.AGGREGATION_WITH_HEADERS}), latest_per_key=False)
