"""The changelog oracle's semantics of the window family (WIN-1, WIN-6, WIN-15, CL-6; spec/window-store.md WS-6,
WS-7, WS-11, WS-22, WS-25), found by :mod:`kstate.spark.semantics` by this module's name.

The changelog key is the store key ``[key][windowStart][seqnum]``; per changelog key the last record by offset, a
tombstone deleting it. Stream time is the largest window start (restore advances it over every record); fetches
see windows starting above stream time minus retention. With ``retain_duplicates`` the changelog layer's seqnums
drift from the store's (a null put is logged but not stored), so duplicates are compared as the sorted list of
``(value, timestamp, headers)`` per key and window start; a null put of such a store still counts for stream time
here, as it does once the store is restored.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kstate.codecs import window_keys
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
    """``[key][windowStart int64][seqnum int32]`` split into key, window_start, seqnum (WIN-1, WIN-4)."""
    from pyspark.sql import functions as F

    n = F.length("key")
    return (frame.withColumn("window_start", int_at("key", n - 11, 8))
            .withColumn("seqnum", int_at("key", n - 3, 4))
            .withColumn("key", F.substring("key", F.lit(1), n - 12)))


def _expected(changelog: Any, store_type: StoreType, params: FamilyParameters) -> tuple[Any, Any]:
    """The last record per changelog key ``[key][windowStart][seqnum]``, tombstones deleting (WIN-1, CL-6)."""
    return latest_per_changelog_key(changelog, store_type, _key_columns,
                                    ("window_start", "seqnum", "value", "timestamp", "headers"),
                                    event_time="window_start")


def _decode(store_type: StoreType, view: dict[bytes, bytes]) -> Iterator[Row]:
    decode = value_decoder(store_type)
    for store_key, stored in view.items():
        decoded = window_keys.PLAIN.decode(store_key)
        parts = decode(stored)
        yield decoded.key, decoded.timestamp, decoded.seqnum, parts.value, parts.timestamp, header_list(parts)


def _queryable(params: FamilyParameters) -> Any:
    return within_retention("window_start", params)


#: Stream time is in the key (WIN-1): each changelog key's latest record is enough. Duplicates (WIN-6) are grouped
#: per key and window start.
SEMANTICS = Semantics(
    Family.WINDOW, "windows", ("window_start", "seqnum"), ("value", "timestamp", "headers"),
    f"partition int, key binary, window_start long, seqnum long, value binary, timestamp long, headers {HEADERS_TYPE}",
    _expected, _decode, _queryable, "retention_ms",
    frozenset({ValueFormat.PLAIN, ValueFormat.TIMESTAMPED, ValueFormat.TIMESTAMPED_WITH_HEADERS}),
    latest_per_key=True, duplicates_by=("window_start",))
