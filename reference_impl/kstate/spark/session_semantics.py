"""The changelog oracle's semantics of the session family (SESS-1, SESS-11, CL-7), found by
:mod:`kstate.spark.semantics` by this module's name.

The changelog key is ``[key][end][start]``; per session the last record by offset, a tombstone (a ``remove``, as a
session merge writes for each merged session) deleting it. Stream time is the largest session end; sessions ending
above stream time minus retention are found.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kstate.codecs import session_keys
from kstate.codecs.store_types import Family, StoreType, ValueFormat
from kstate.spark.semantics import (
    HEADERS_TYPE,
    FamilyParameters,
    Row,
    Semantics,
    header_list,
    int_at,
    latest_per_changelog_key,
    value_decoder,
    within_retention,
)


def _key_columns(frame: Any) -> Any:
    """``[key][end int64][start int64]`` split into key, start, end; end comes first (SESS-1, SESS-4)."""
    from pyspark.sql import functions as F

    n = F.length("key")
    return (frame.withColumn("end", int_at("key", n - 15, 8))
            .withColumn("start", int_at("key", n - 7, 8))
            .withColumn("key", F.substring("key", F.lit(1), n - 16)))


def _expected(changelog: Any, store_type: StoreType, params: FamilyParameters) -> tuple[Any, Any]:
    """The last record per session key ``[key][end][start]``, removes deleting (SESS-1, CL-7)."""
    return latest_per_changelog_key(changelog, store_type, _key_columns,
                                    ("start", "end", "value", "headers"), event_time="end")


def _decode(store_type: StoreType, view: dict[bytes, bytes]) -> Iterator[Row]:
    decode = value_decoder(store_type)
    for store_key, stored in view.items():
        decoded = session_keys.PLAIN.decode(store_key)
        parts = decode(stored)
        yield decoded.key, decoded.start, decoded.end, parts.value, header_list(parts)


def _queryable(params: FamilyParameters) -> Any:
    return within_retention("end", params)


#: Stream time is in the key (SESS-1): each changelog key's latest record is enough.
SEMANTICS = Semantics(
    Family.SESSION, "sessions", ("start", "end"), ("value", "headers"),
    f"partition int, key binary, start long, end long, value binary, headers {HEADERS_TYPE}",
    _expected, _decode, _queryable, "retention_ms",
    frozenset({ValueFormat.PLAIN, ValueFormat.AGGREGATION_WITH_HEADERS}), latest_per_key=True)
