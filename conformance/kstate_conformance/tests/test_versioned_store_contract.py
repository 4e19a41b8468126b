"""Contract tests: the exact expectations of Kafka's ``RocksDBVersionedStoreTest``, through the neutral
``store.*`` and ``versioned_store.*`` operations only (KIP-889, KIP-968; spec/versioned.md VER-25..VER-34).

Each example names the Kafka test it mirrors. The steps are transcribed from the Kafka test (its constants:
history retention 300 000 ms, segment interval 100 000 ms, ``BASE_TIMESTAMP`` 10; its string keys and values
as UTF-8 bytes), and only what the Kafka test asserts is checked: the put return codes, the value, timestamp
and validTo of every read, the value and timestamp of a delete's answer. A store type or backend the
implementation's ``store.capabilities`` lacks is skipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from kstate_conformance import rules
from kstate_conformance import store_types as types
from kstate_conformance.harness import BACKENDS, ROCKSDB, Kit, Store, h, kit, record

__all__ = ["kit"]

HISTORY_RETENTION = 300_000
GRACE_PERIOD = HISTORY_RETENTION
SEGMENT_INTERVAL = HISTORY_RETENTION // 3
BASE = 10
SI = SEGMENT_INTERVAL
UNDEFINED = -1
NOT_PUT = -(1 << 63)
MIN_LONG, MAX_LONG = -(1 << 63), (1 << 63) - 1
VERSIONED_TYPES = types.VERSIONED_TYPES

#: A read's expected answer: (value, timestamp, validTo or None = undefined), or None for no record.
Expected = tuple[str, int, int | None] | None
Step = tuple[Any, ...]


def put(key: str, value: str | None, ts: int, valid_to: int) -> Step:
    return ("put", key, value, ts, valid_to)


def get(key: str, expected: tuple[str, int] | None) -> Step:
    return ("get", key, expected)


def as_of(key: str, ts: int, expected: Expected) -> Step:
    return ("as_of", key, ts, expected)


def delete(key: str, ts: int, expected: tuple[str, int] | None) -> Step:
    return ("delete", key, ts, expected)


def versions(key: str, from_ms: int, to_ms: int, order: str, expected: list[tuple[str, int, int | None]]) -> Step:
    return ("versions", key, from_ms, to_ms, order, expected)


def restore(*records: tuple[str, str | None, int]) -> Step:
    return ("restore", records)


@dataclass(frozen=True)
class Example:
    """One test of Kafka's ``RocksDBVersionedStoreTest`` as data."""

    kafka_test: str
    steps: tuple[Step, ...]
    history_retention: int = HISTORY_RETENTION
    rules: tuple[str, ...] = ()


def _latest(value: str, ts: int) -> Expected:
    return (value, ts, None)


#: The reads both ``shouldPutRepeatTimestamps`` and ``shouldMoveRecordToOlderSegmentWithNullsDuringPut`` end in:
#: their puts leave the same history, vp5 at SI+5, vn5 at SI-5 and vn6 at SI-6, the rest tombstones (VER-22, VER-29).
_READS_OF_VP5_VN5_VN6: tuple[Step, ...] = (
    get("k", None), as_of("k", SI + 30, None), as_of("k", SI + 15, None),
    as_of("k", SI + 6, ("vp5", SI + 5, SI + 10)), as_of("k", SI + 2, None), as_of("k", SI, None),
    as_of("k", SI - 1, None), as_of("k", SI - 5, ("vn5", SI - 5, SI - 1)),
    as_of("k", SI - 6, ("vn6", SI - 6, SI - 5)), as_of("k", SI - 8, None),
)

EXAMPLES: tuple[Example, ...] = (
    Example("shouldPutLatest", (
        put("k", "v", BASE, UNDEFINED), put("k", "v2", BASE + 1, UNDEFINED),
        get("k", ("v2", BASE + 1)),
        as_of("k", BASE, ("v", BASE, BASE + 1)),
        as_of("k", BASE + 1, _latest("v2", BASE + 1)),
        as_of("k", BASE + 2, _latest("v2", BASE + 1)),
    ), rules=("VER-27", "VER-28", "VER-31", "VER-32")),
    Example("shouldPutNullAsLatest", (
        put("k", None, BASE, UNDEFINED), put("k", None, BASE + 1, UNDEFINED),
        get("k", None), as_of("k", BASE, None), as_of("k", BASE + 1, None), as_of("k", BASE + 2, None),
    ), rules=("VER-27", "VER-29")),
    Example("shouldPutOlderWithNonNullLatest", (
        put("k", "v", BASE, UNDEFINED), put("k", "v2", BASE - 2, BASE), put("k", "v1", BASE - 1, BASE),
        put("k", "v4", BASE - 4, BASE - 2),
        get("k", ("v", BASE)),
        as_of("k", BASE, _latest("v", BASE)),
        as_of("k", BASE - 1, ("v1", BASE - 1, BASE)),
        as_of("k", BASE - 2, ("v2", BASE - 2, BASE - 1)),
        as_of("k", BASE - 3, ("v4", BASE - 4, BASE - 2)),
    ), rules=("VER-27", "VER-29")),
    Example("shouldPutOlderWithNullLatest", (
        put("k", None, BASE, UNDEFINED), put("k", "v2", BASE - 2, BASE), put("k", "v1", BASE - 1, BASE),
        put("k", "v4", BASE - 4, BASE - 2),
        get("k", None), as_of("k", BASE, None),
        as_of("k", BASE - 1, ("v1", BASE - 1, BASE)),
        as_of("k", BASE - 2, ("v2", BASE - 2, BASE - 1)),
        as_of("k", BASE - 3, ("v4", BASE - 4, BASE - 2)),
    ), rules=("VER-27", "VER-29")),
    Example("shouldPutOlderNullWithNonNullLatest", (
        put("k", "v", BASE, UNDEFINED), put("k", None, BASE - 2, BASE), put("k", None, BASE - 1, BASE),
        put("k", None, BASE - 4, BASE - 2), put("k", "v5", BASE - 5, BASE - 4), put("k", "v3", BASE - 3, BASE - 2),
        put("k", None, BASE - 6, BASE - 5),
        get("k", ("v", BASE)),
        as_of("k", BASE, _latest("v", BASE)), as_of("k", BASE - 1, None), as_of("k", BASE - 2, None),
        as_of("k", BASE - 3, ("v3", BASE - 3, BASE - 2)), as_of("k", BASE - 4, None),
        as_of("k", BASE - 5, ("v5", BASE - 5, BASE - 4)), as_of("k", BASE - 6, None),
    ), rules=("VER-27", "VER-29")),
    Example("shouldPutOlderNullWithNullLatest", (
        put("k", None, BASE, UNDEFINED), put("k", None, BASE - 2, BASE), put("k", None, BASE - 1, BASE),
        put("k", None, BASE - 4, BASE - 2), put("k", "v3", BASE - 3, BASE - 2), put("k", "v5", BASE - 5, BASE - 4),
        put("k", None, BASE - 6, BASE - 5),
        get("k", None), as_of("k", BASE, None), as_of("k", BASE - 1, None), as_of("k", BASE - 2, None),
        as_of("k", BASE - 3, ("v3", BASE - 3, BASE - 2)), as_of("k", BASE - 4, None),
        as_of("k", BASE - 5, ("v5", BASE - 5, BASE - 4)), as_of("k", BASE - 6, None),
    ), rules=("VER-27", "VER-29")),
    Example("shouldPutRepeatTimestampAsLatest", (
        put("k", "to_be_replaced", BASE, UNDEFINED), put("k", "b", BASE, UNDEFINED),
        get("k", ("b", BASE)), as_of("k", BASE, _latest("b", BASE)), as_of("k", BASE - 1, None),
        put("k", None, BASE, UNDEFINED),
        get("k", None), as_of("k", BASE, None), as_of("k", BASE - 1, None),
        put("k", None, BASE, UNDEFINED),
        get("k", None), as_of("k", BASE, None), as_of("k", BASE - 1, None),
        put("k", "b", BASE, UNDEFINED),
        get("k", ("b", BASE)), as_of("k", BASE, _latest("b", BASE)), as_of("k", BASE - 1, None),
    ), rules=("VER-28", "VER-34")),
    Example("shouldPutRepeatTimestamps", (
        put("k", "to_be_replaced", SI + 20, UNDEFINED),
        put("k", None, SI - 10, SI + 20),
        put("k", "to_be_replaced", SI - 10, SI + 20),
        put("k", None, SI - 10, SI + 20),
        put("k", "to_be_replaced", SI - 1, SI + 20),
        put("k", "to_be_replaced", SI + 1, SI + 20),
        put("k", None, SI - 1, SI + 1),
        put("k", None, SI + 1, SI + 20),
        put("k", None, SI + 10, SI + 20),
        put("k", None, SI + 5, SI + 10),
        put("k", "vp5", SI + 5, SI + 10),
        put("k", "to_be_replaced", SI - 5, SI - 1),
        put("k", "vn5", SI - 5, SI - 1),
        put("k", None, SI + 20, UNDEFINED),
        put("k", None, SI + 20, UNDEFINED),
        put("k", "vn6", SI - 6, SI - 5),
        *_READS_OF_VP5_VN5_VN6,
    ), rules=("VER-22", "VER-29", "VER-34")),
    Example("shouldPutIntoMultipleSegments", (
        put("k", None, SI - 20, UNDEFINED), put("k", "vn10", SI - 10, UNDEFINED), put("k", None, SI - 1, UNDEFINED),
        put("k", None, SI + 1, UNDEFINED), put("k", "vp10", SI + 10, UNDEFINED), put("k", None, SI + 20, UNDEFINED),
        get("k", None), as_of("k", SI + 30, None), as_of("k", SI + 15, ("vp10", SI + 10, SI + 20)),
        as_of("k", SI + 5, None), as_of("k", SI + 2, None), as_of("k", SI, None), as_of("k", SI - 1, None),
        as_of("k", SI - 5, ("vn10", SI - 10, SI - 1)), as_of("k", SI - 15, None),
    ), rules=("VER-22", "VER-28")),
    Example("shouldMoveRecordToOlderSegmentDuringPut", (
        put("k", "vp20", SI + 20, UNDEFINED), put("k", "vp10", SI + 10, SI + 20), put("k", "vn10", SI - 10, SI + 10),
        put("k", "vn2", SI - 2, SI + 10), put("k", "vn1", SI - 1, SI + 10), put("k", "vp1", SI + 1, SI + 10),
        get("k", ("vp20", SI + 20)), as_of("k", SI + 30, _latest("vp20", SI + 20)),
        as_of("k", SI + 15, ("vp10", SI + 10, SI + 20)), as_of("k", SI + 5, ("vp1", SI + 1, SI + 10)),
        as_of("k", SI, ("vn1", SI - 1, SI + 1)), as_of("k", SI - 1, ("vn1", SI - 1, SI + 1)),
        as_of("k", SI - 2, ("vn2", SI - 2, SI - 1)), as_of("k", SI - 5, ("vn10", SI - 10, SI - 2)),
    ), rules=("VER-22", "VER-29")),
    Example("shouldMoveRecordToOlderSegmentWithNullsDuringPut", (
        put("k", None, SI + 20, UNDEFINED), put("k", None, SI - 1, SI + 20), put("k", None, SI + 1, SI + 20),
        put("k", None, SI - 10, SI - 1), put("k", None, SI + 10, SI + 20), put("k", "vp5", SI + 5, SI + 10),
        put("k", "vn5", SI - 5, SI - 1), put("k", "vn6", SI - 6, SI - 5),
        *_READS_OF_VP5_VN5_VN6,
    ), rules=("VER-10", "VER-22", "VER-29")),
    Example("shouldFallThroughToExistingOlderSegmentAsLatestDuringPut", (
        put("k", None, SI - 5, UNDEFINED), put("k", "vn6", SI - 6, SI - 5), put("k", "vp20", SI + 20, UNDEFINED),
        put("k", None, SI + 10, SI + 20), put("k", None, SI - 1, SI + 10), put("k", "vn2", SI - 2, SI - 1),
        get("k", ("vp20", SI + 20)), as_of("k", SI + 30, _latest("vp20", SI + 20)), as_of("k", SI + 12, None),
        as_of("k", SI, None), as_of("k", SI - 1, None), as_of("k", SI - 2, ("vn2", SI - 2, SI - 1)),
        as_of("k", SI - 5, None), as_of("k", SI - 6, ("vn6", SI - 6, SI - 5)),
    ), rules=("VER-15", "VER-29")),
    Example("shouldPutNonLatestTombstoneIntoNewSegmentWithValidTo", (
        put("k", "vp30", SI + 30, UNDEFINED), put("k", None, SI - 10, SI + 30), put("k", "vn5", SI - 5, SI + 30),
        put("k", "vn1", SI - 1, SI + 30), put("k", None, SI - 2, SI - 1),
        get("k", ("vp30", SI + 30)), as_of("k", SI + 10, ("vn1", SI - 1, SI + 30)),
        as_of("k", SI - 1, ("vn1", SI - 1, SI + 30)), as_of("k", SI - 2, None),
        as_of("k", SI - 5, ("vn5", SI - 5, SI - 2)), as_of("k", SI - 10, None),
    ), rules=("VER-22", "VER-29")),
    Example("shouldDelete", (
        put("k", "vp20", SI + 20, UNDEFINED), put("k", "vp10", SI + 10, SI + 20), put("k", "vn10", SI - 10, SI + 10),
        put("k", "vn2", SI - 2, SI + 10),
        delete("k", SI - 5, ("vn10", SI - 10)), delete("k", SI + 10, ("vp10", SI + 10)),
        delete("k", SI + 10, None), delete("k", SI + 25, ("vp20", SI + 20)),
    ), rules=("VER-33",)),
    Example("shouldNotPutExpired", (
        put("k", "v", HISTORY_RETENTION + 10, UNDEFINED),
        put("k1", "v1", HISTORY_RETENTION + 10 - GRACE_PERIOD, UNDEFINED),
        get("k1", ("v1", HISTORY_RETENTION + 10 - GRACE_PERIOD)),
        put("k2", "v2", HISTORY_RETENTION + 9 - GRACE_PERIOD, NOT_PUT),
        get("k2", None),
    ), rules=("VER-25", "VER-26")),
    Example("shouldNotDeleteExpired", (
        put("k1", "v1", 1, UNDEFINED), put("k2", "v2", 1, UNDEFINED), put("kother", "vother", HISTORY_RETENTION + 10, UNDEFINED),
        delete("k1", HISTORY_RETENTION + 10 - GRACE_PERIOD, ("v1", 1)), get("k1", None),
        delete("k2", HISTORY_RETENTION + 9 - GRACE_PERIOD, None), get("k2", ("v2", 1)),
    ), rules=("VER-25", "VER-33")),
    Example("shouldGetFromOlderSegments", (
        put("ko", None, SI - 10, UNDEFINED), put("ko", None, 2 * SI - 10, UNDEFINED), put("ko", None, 3 * SI - 10, UNDEFINED),
        as_of("k", SI - 20, None),
        put("k", "v", SI - 20, UNDEFINED), put("k", None, SI - 10, UNDEFINED),
        as_of("k", SI - 30, None), as_of("k", SI - 15, ("v", SI - 20, SI - 10)), as_of("k", SI - 5, None),
        put("k", "v2", 3 * SI - 20, UNDEFINED), put("k", None, 3 * SI - 10, UNDEFINED),
        as_of("k", SI - 30, None), as_of("k", SI - 15, ("v", SI - 20, SI - 10)), as_of("k", SI - 5, None),
    ), rules=("VER-32",)),
    Example("shouldNotGetExpired", (
        put("k", "v_old", 0, UNDEFINED), put("k", "v", SI - 10, UNDEFINED),
        as_of("k", SI - 11, ("v_old", 0, SI - 10)),
        put("ko", "vo", HISTORY_RETENTION + SI - 11, UNDEFINED),
        as_of("k", SI - 11, ("v_old", 0, SI - 10)),
        put("ko", "vo2", HISTORY_RETENTION + SI - 10, UNDEFINED),
        as_of("k", SI - 11, None),
    ), rules=("VER-25", "VER-32")),
    Example("shouldGetExpiredIfLatestValue", (
        put("k", "v", 1, UNDEFINED), put("ko", "vo_old", 1, UNDEFINED), put("ko", "vo_new", HISTORY_RETENTION + 12, UNDEFINED),
        as_of("k", 10, _latest("v", 1)), as_of("ko", 10, None),
    ), rules=("VER-32",)),
    Example("shouldDistinguishEmptyAndNull", (
        put("k", None, SI + 20, UNDEFINED), put("k", None, SI - 10, SI + 20), put("k", None, SI - 1, SI + 20),
        put("k", None, SI + 1, SI + 20), put("k", None, SI + 10, SI + 20), put("k", "", SI + 5, SI + 10),
        put("k", "", SI - 5, SI - 1), put("k", "", SI - 6, SI - 5),
        get("k", None), as_of("k", SI + 30, None), as_of("k", SI + 15, None), as_of("k", SI + 6, ("", SI + 5, SI + 10)),
        as_of("k", SI + 2, None), as_of("k", SI, None), as_of("k", SI - 1, None), as_of("k", SI - 5, ("", SI - 5, SI - 1)),
        as_of("k", SI - 6, ("", SI - 6, SI - 5)), as_of("k", SI - 8, None),
    ), rules=("VER-8", "VER-29")),
    Example("shouldGetRecordVersionsFromOlderSegments", (
        put("ko", None, SI - 10, UNDEFINED), put("ko", None, 2 * SI - 10, UNDEFINED), put("ko", None, 3 * SI - 10, UNDEFINED),
        versions("k", SI - 20, SI, "any", []),
        put("k", "v1", SI - 30, UNDEFINED), put("k", "v2", SI - 25, UNDEFINED), put("k", None, SI - 20, UNDEFINED),
        put("k", None, SI - 15, UNDEFINED), put("k", "v3", SI - 10, UNDEFINED), put("k", "v4", SI - 5, UNDEFINED),
        versions("k", SI - 40, SI - 35, "any", []),
        versions("k", SI - 30, SI - 5, "any", [("v4", SI - 5, None), ("v3", SI - 10, SI - 5), ("v2", SI - 25, SI - 20),
                                                ("v1", SI - 30, SI - 25)]),
        versions("k", MIN_LONG, MAX_LONG, "any", [("v4", SI - 5, None), ("v3", SI - 10, SI - 5), ("v2", SI - 25, SI - 20),
                                                  ("v1", SI - 30, SI - 25)]),
        versions("k", SI - 4, SI, "any", [("v4", SI - 5, None)]),
        versions("k", SI - 5, SI - 5, "any", [("v4", SI - 5, None)]),
        versions("k", SI - 4, SI - 4, "any", [("v4", SI - 5, None)]),
        versions("k", SI - 31, SI - 21, "any", [("v2", SI - 25, SI - 20), ("v1", SI - 30, SI - 25)]),
        versions("k", SI - 24, SI - 11, "any", [("v2", SI - 25, SI - 20)]),
        versions("k", SI - 11, SI - 4, "any", [("v4", SI - 5, None), ("v3", SI - 10, SI - 5)]),
        versions("k", SI - 26, SI - 5, "any", [("v4", SI - 5, None), ("v3", SI - 10, SI - 5), ("v2", SI - 25, SI - 20),
                                                ("v1", SI - 30, SI - 25)]),
        versions("k", SI - 15, SI - 10, "any", [("v3", SI - 10, SI - 5)]),
        versions("k", SI - 19, SI - 16, "any", []),
        put("k", "v5", 3 * SI - 30, UNDEFINED), put("k", None, 3 * SI - 20, UNDEFINED),
        versions("k", SI - 40, SI - 35, "any", []),
        versions("k", SI - 30, SI - 26, "any", [("v1", SI - 30, SI - 25)]),
        versions("k", SI - 19, SI - 16, "any", []),
    ), rules=("VER-12", "VER-32")),
    Example("shouldGetRecordVersionsInAscendingOrder", (
        put("k", "v1", SI - 30, UNDEFINED), put("k", "v2", SI - 25, UNDEFINED), put("k", "v3", SI - 10, UNDEFINED),
        put("k", "v4", SI - 5, UNDEFINED),
        versions("k", SI - 30, SI - 5, "ascending", [("v1", SI - 30, SI - 25), ("v2", SI - 25, SI - 10),
                                                      ("v3", SI - 10, SI - 5), ("v4", SI - 5, None)]),
    ), rules=("VER-12",)),
    Example("shouldGetRecordVersionsFromMultipleOldSegmentsInAscendingOrder", (
        put("k", "v1", SI - 10, UNDEFINED), put("k", "v2", SI - 5, UNDEFINED),
        put("k", "v3", 2 * SI - 10, UNDEFINED), put("k", "v4", 2 * SI - 5, UNDEFINED),
        versions("k", MIN_LONG, MAX_LONG, "ascending", [("v1", SI - 10, SI - 5), ("v2", SI - 5, 2 * SI - 10),
                                                        ("v3", 2 * SI - 10, 2 * SI - 5), ("v4", 2 * SI - 5, None)]),
    ), rules=("VER-12", "VER-22")),
    Example("shouldNotGetExpiredRecordVersions", (
        put("k", "v_old", 0, UNDEFINED), put("k", "v", SI - 10, UNDEFINED),
        versions("k", 0, SI - 11, "any", [("v_old", 0, SI - 10)]),
        put("ko", "vo", HISTORY_RETENTION + SI - 11, UNDEFINED),
        versions("k", 0, SI - 11, "any", [("v_old", 0, SI - 10)]),
        put("ko", "vo2", HISTORY_RETENTION + SI - 10, UNDEFINED),
        versions("k", 0, SI - 11, "any", []),
    ), rules=("VER-30", "VER-32")),
    Example("shouldGetExpiredIfLatestVersionValue", (
        put("k", "v", 1, UNDEFINED), put("ko", "vo_old", 1, UNDEFINED), put("ko", "vo_new", HISTORY_RETENTION + 12, UNDEFINED),
        versions("k", 0, 10, "any", [("v", 1, None)]), versions("ko", 0, 10, "any", []),
    ), rules=("VER-32",)),
    Example("shouldRestore", (
        restore(("k", "vp20", SI + 20), ("k", "vp10", SI + 10), ("k", "vn10", SI - 10), ("k", "vn2", SI - 2),
                ("k", "vn1", SI - 1), ("k", "vp1", SI + 1)),
        get("k", ("vp20", SI + 20)), as_of("k", SI + 30, _latest("vp20", SI + 20)),
        as_of("k", SI + 15, ("vp10", SI + 10, SI + 20)), as_of("k", SI + 5, ("vp1", SI + 1, SI + 10)),
        as_of("k", SI, ("vn1", SI - 1, SI + 1)), as_of("k", SI - 1, ("vn1", SI - 1, SI + 1)),
        as_of("k", SI - 2, ("vn2", SI - 2, SI - 1)), as_of("k", SI - 5, ("vn10", SI - 10, SI - 2)),
    ), rules=("VER-29",)),
    Example("shouldRestoreWithNulls", (
        restore(("k", None, SI + 20), ("k", None, SI - 1), ("k", None, SI + 1), ("k", None, SI - 10),
                ("k", None, SI + 10), ("k", "vp5", SI + 5), ("k", "vn5", SI - 5), ("k", "vn6", SI - 6)),
        get("k", None), as_of("k", SI + 30, None), as_of("k", SI + 15, None), as_of("k", SI + 6, ("vp5", SI + 5, SI + 10)),
        as_of("k", SI + 2, None), as_of("k", SI, None), as_of("k", SI - 1, None), as_of("k", SI - 5, ("vn5", SI - 5, SI - 1)),
        as_of("k", SI - 6, ("vn6", SI - 6, SI - 5)), as_of("k", SI - 8, None),
    ), rules=("VER-10", "VER-29")),
    Example("shouldRestoreWithNullsAndRepeatTimestamps", (
        restore(("k", "to_be_replaced", SI + 20), ("k", None, SI - 10), ("k", "to_be_replaced", SI - 10),
                ("k", None, SI - 10), ("k", "to_be_replaced", SI - 1), ("k", "to_be_replaced", SI + 1),
                ("k", None, SI - 1), ("k", None, SI + 1), ("k", None, SI + 10), ("k", None, SI + 5),
                ("k", "vp5", SI + 5), ("k", "to_be_replaced", SI - 5), ("k", "vn5", SI - 5), ("k", None, SI + 20),
                ("k", None, SI + 20), ("k", "vn6", SI - 6)),
        get("k", None), as_of("k", SI + 30, None), as_of("k", SI + 15, None), as_of("k", SI + 6, ("vp5", SI + 5, SI + 10)),
        as_of("k", SI + 2, None), as_of("k", SI, None), as_of("k", SI - 1, None), as_of("k", SI - 5, ("vn5", SI - 5, SI - 1)),
        as_of("k", SI - 6, ("vn6", SI - 6, SI - 5)), as_of("k", SI - 8, None),
    ), rules=("VER-29", "VER-34")),
    Example("shouldRestoreMultipleBatches", (
        restore(("k", None, SI - 20), ("k", "vn10", SI - 10), ("k", None, SI - 1)),
        restore(("k", None, SI + 1), ("k", "vp10", SI + 10), ("k", None, SI + 20)),
        get("k", None), as_of("k", SI + 30, None), as_of("k", SI + 15, ("vp10", SI + 10, SI + 20)),
        as_of("k", SI + 5, None), as_of("k", SI + 2, None), as_of("k", SI, None), as_of("k", SI - 1, None),
        as_of("k", SI - 5, ("vn10", SI - 10, SI - 1)), as_of("k", SI - 15, None),
    ), rules=("VER-28",)),
    Example("shouldNotRestoreExpired", (
        restore(("k", "v", HISTORY_RETENTION + 10), ("k1", "v1", HISTORY_RETENTION + 10 - GRACE_PERIOD),
                ("k2", "v2", HISTORY_RETENTION + 9 - GRACE_PERIOD)),
        get("k", ("v", HISTORY_RETENTION + 10)), get("k1", ("v1", HISTORY_RETENTION + 10 - GRACE_PERIOD)), get("k2", None),
    ), rules=("VER-25", "VER-26")),
    Example("shouldRestoreEvenIfRecordWouldBeExpiredByEndOfBatch", (
        restore(("k2", "v2", HISTORY_RETENTION - GRACE_PERIOD), ("k", "v", HISTORY_RETENTION + 10)),
        get("k2", ("v2", HISTORY_RETENTION - GRACE_PERIOD)), get("k", ("v", HISTORY_RETENTION + 10)),
    ), rules=("VER-25", "VER-30")),
    Example("shouldAllowZeroHistoryRetention", (
        put("k", "v", BASE, UNDEFINED), get("k", ("v", BASE)),
        as_of("k", BASE, _latest("v", BASE)), as_of("k", BASE + 1, _latest("v", BASE)),
        put("k", "updated", BASE, UNDEFINED), get("k", ("updated", BASE)), as_of("k", BASE, _latest("updated", BASE)),
        put("k", "v2", BASE + 2, UNDEFINED), get("k", ("v2", BASE + 2)), as_of("k", BASE + 2, _latest("v2", BASE + 2)),
        as_of("k", BASE + 1, None),
        ("delete_unchecked", "k", BASE + 3), get("k", None),
        put("k2", "v", BASE + 2, NOT_PUT), get("k2", None),
    ), history_retention=0, rules=("VER-24", "VER-26", "VER-32")),
)


#: Rules Kafka's test leaves unpinned, worked by hand from the spec (the same cases as fixtures/spec/versioned_store.json).
RULE_EXAMPLES: tuple[Example, ...] = (
    Example("tombstone at the latest timestamp is recorded nowhere (VER-34)", (
        put("k", "a", 10, UNDEFINED), put("k", None, 20, UNDEFINED), put("k", "b", 30, UNDEFINED),
        put("k", None, 30, UNDEFINED), put("k", "c", 25, UNDEFINED), get("k", ("c", 25)),
        put("m", "a", 10, UNDEFINED), put("m", "b", 30, UNDEFINED), put("m", None, 30, UNDEFINED),
        put("m", "c", 25, 30), get("m", None), as_of("m", 27, ("c", 25, 30)),
    ), rules=("VER-34",)),
    Example("restore drops a version wholly before the retained history at the end of its batch (VS-15)", (
        restore(("k", "a", 50), ("k", "b", 58), ("k", "c", 49), ("o", "x", 75)),
        versions("k", 0, 100, "ascending", [("a", 50, 58), ("b", 58, None)]),
    ), history_retention=10, rules=("VS-15", "VER-30")),
    Example("the grace period and the segments are the store's, not a key's (VS-5, VS-13)", (
        put("a", "x", 5, UNDEFINED), put("b", "y", 30, UNDEFINED), put("a", "z", 19, NOT_PUT), put("a", "w", 20, UNDEFINED),
        versions("a", 0, 40, "ascending", [("x", 5, 20), ("w", 20, None)]),
        put("b", "y2", 40, UNDEFINED), versions("a", 0, 40, "ascending", [("w", 20, None)]),
    ), history_retention=10, rules=("VS-5", "VS-6", "VS-13")),
)
RULE_SEGMENT_INTERVAL = {RULE_EXAMPLES[1].kafka_test: 100}


# --- running an example through the operations ------------------------------------------------------------


def _record_json(value: str, ts: int, valid_to: int | None) -> dict[str, Any]:
    return {"value": h(value), "timestamp": ts, "valid_to": valid_to}


def _read(out: dict[str, Any]) -> dict[str, Any] | None:
    record: dict[str, Any] | None = out["record"]
    if record is None:
        return None
    return {"value": record["value"], "timestamp": record["timestamp"], "valid_to": record.get("valid_to")}


def _changelog_record(key: str, value: str | None, ts: int) -> dict[str, Any]:
    return {"key": h(key), "value": None if value is None else h(value), "timestamp": ts, "headers": []}


def run_example(store: Store, example: Example) -> None:
    """Run ``example``'s steps on ``store``, asserting each expectation the Kafka test asserts."""
    for number, step in enumerate(example.steps):
        where = f"{example.kafka_test} step {number} {step[:4]}"
        kind = step[0]
        if kind == "put":
            _, key, value, ts, valid_to = step
            out = store.ok("versioned_store.put", key=h(key), value=None if value is None else h(value), timestamp=ts)
            assert out["valid_to"] == valid_to, f"{where}: put returned {out['valid_to']}, Kafka {valid_to}"
        elif kind == "get":
            _, key, expected = step
            got = _read(store.ok("versioned_store.get", key=h(key)))
            want = None if expected is None else _record_json(expected[0], expected[1], None)
            assert got == want, f"{where}: get answered {got}, Kafka {want}"
        elif kind == "as_of":
            _, key, ts, expected = step
            got = _read(store.ok("versioned_store.get", key=h(key), as_of=ts))
            want = None if expected is None else _record_json(*expected)
            assert got == want, f"{where}: get as of {ts} answered {got}, Kafka {want}"
        elif kind in ("delete", "delete_unchecked"):
            key, ts = step[1], step[2]
            got = _read(store.ok("versioned_store.delete", key=h(key), timestamp=ts))
            if kind == "delete":
                expected = step[3]
                seen = None if got is None else (got["value"], got["timestamp"])
                deleted = None if expected is None else (h(expected[0]), expected[1])
                assert seen == deleted, f"{where}: delete answered {got}, Kafka {deleted}"
        elif kind == "versions":
            _, key, from_ms, to_ms, order, expected = step
            out = store.ok("versioned_store.get_versions", key=h(key), from_ms=from_ms, to_ms=to_ms, order=order)
            found = [_read({"record": r}) for r in out["records"]]
            listed = [_record_json(*e) for e in expected]
            assert found == listed, f"{where}: versions answered {found}, Kafka {listed}"
        elif kind == "restore":
            records = [_changelog_record(*r) for r in step[1]]
            out = store.restore(records, batch_size=len(records))
            assert out["restored"] == len(records), f"{where}: {out}"
        else:
            raise AssertionError(f"unknown step {kind!r}")


def _open(kit: Kit, store_type: str, backend: str, history_retention: int, segment_interval: int = SEGMENT_INTERVAL) -> Store:
    return kit.open(store_type, backend, options={"history_retention_ms": history_retention,
                                                  "segment_interval_ms": segment_interval})


VERSIONED_STORES = pytest.mark.parametrize("store_type", VERSIONED_TYPES)


@rules("VER-8", "VER-10", "VER-12", "VER-15", "VER-22", "VER-24", "VER-25", "VER-26", "VER-27", "VER-28", "VER-29",
       "VER-30", "VER-31", "VER-32", "VER-33", "VER-34", "VS-3", "VS-5", "VS-6", "VS-7", "VS-8", "VS-9", "VS-10", "VS-11",
       "VS-12", "VS-13", "VS-15", "VS-20", "VS-22", "VS-34")
@BACKENDS
@VERSIONED_STORES
@pytest.mark.parametrize("example", EXAMPLES, ids=[e.kafka_test for e in EXAMPLES])
def test_kafka_rocksdb_versioned_store_test(kit: Kit, store_type: str, backend: str, example: Example) -> None:
    """The store answers each step of Kafka's ``RocksDBVersionedStoreTest.<name>`` as Kafka's test asserts."""
    store = _open(kit, store_type, backend, example.history_retention)
    run_example(store, example)


@rules("VER-25", "VER-30", "VER-34", "VS-5", "VS-6", "VS-13", "VS-15")
@BACKENDS
@VERSIONED_STORES
@pytest.mark.parametrize("example", RULE_EXAMPLES, ids=[e.kafka_test for e in RULE_EXAMPLES])
def test_rules_worked_by_hand(kit: Kit, store_type: str, backend: str, example: Example) -> None:
    """The store answers the hand-worked steps of the rules Kafka's test does not pin (interval 10 unless noted)."""
    store = _open(kit, store_type, backend, example.history_retention,
                  RULE_SEGMENT_INTERVAL.get(example.kafka_test, 10))
    run_example(store, example)


@rules("VER-26", "VER-33", "VS-18")
@BACKENDS
@VERSIONED_STORES
def test_every_put_and_delete_is_logged_even_when_refused(kit: Kit, store_type: str, backend: str) -> None:
    """``ChangeLoggingVersionedKeyValueBytesStore`` logs each put and delete after the inner call, unconditionally:
    an expired put (NOT_PUT) and an expired delete are logged too."""
    store = _open(kit, store_type, backend, HISTORY_RETENTION)
    run_example(store, EXAMPLES[[e.kafka_test for e in EXAMPLES].index("shouldNotDeleteExpired")])
    logged = [(r["key"], r["value"], r["timestamp"]) for r in store.changelog()]
    assert logged == [
        (h("k1"), h("v1"), 1), (h("k2"), h("v2"), 1), (h("kother"), h("vother"), HISTORY_RETENTION + 10),
        (h("k1"), None, HISTORY_RETENTION + 10 - GRACE_PERIOD), (h("k2"), None, HISTORY_RETENTION + 9 - GRACE_PERIOD),
    ], f"changelog records: {logged}"


# --- moved from test_store_rules_family_places (issue 33): VS-36, VS-17, VS-20 ----------------------------------------

VERSIONED_OPTIONS = {"history_retention_ms": 100, "segment_interval_ms": 10}


def _versions(store: Store, key: str) -> Any:
    return store.ok("versioned_store.get_versions", key=key)["records"]


@rules("VS-36")
@pytest.mark.kstate_places("store:versioned", "restore")
def test_a_restored_version_that_would_go_to_a_negative_segment_is_refused(kit: Kit) -> None:
    """Place: a RocksDB versioned store restoring. A record at -35 reaches only the latest-value store; one at -25
    would move it to segment ``-25 / 10 = -2``: the batch is refused with a typed error and the version at -35 is
    as it was (VS-36)."""
    kit.require("versioned_kv", ROCKSDB)
    store = kit.open("versioned_kv", ROCKSDB, options=VERSIONED_OPTIONS)
    store.restore([record(h("k"), "61", -35)])
    assert _versions(store, h("k")) == [{"value": "61", "timestamp": -35, "valid_to": None}]
    out = store.call("store.restore", records=[record(h("k"), "62", -25)], batch_size=1000)
    assert "error" in out, f"a restored version moved to segment -2 was accepted: {out}"
    assert _versions(store, h("k")) == [{"value": "61", "timestamp": -35, "valid_to": None}]


_VERSIONED_RECORDS = [record(h("k"), "61", 10), record(h("k"), "62", 20), record(h("j"), "63", 15),
                      record(h("k"), None, 30), record(h("j"), "64", 25)]


@rules("VS-17")
@pytest.mark.kstate_places("store:versioned", "restore", "reopen")
def test_a_versioned_restore_commits_its_offsets_with_its_rows_and_keeps_them_after_a_reopen(kit: Kit) -> None:
    """Place: a RocksDB versioned store restored with the offsets committed per batch, then reopened. The committed
    offset is the last record's, and the latest values and the offset are those after the reopen too (VS-17). The
    older versions are compared before the reopen only: after a restart Kafka finds a segment again only once a
    put creates it (VS-14), the reference finds them at open."""
    kit.require("versioned_kv", ROCKSDB, "offsets")
    store = kit.open("versioned_kv", ROCKSDB, options=VERSIONED_OPTIONS)
    store.restore(_VERSIONED_RECORDS, batch_size=2, commit_offsets=True)
    assert store.committed() == len(_VERSIONED_RECORDS) - 1
    versions = (_versions(store, h("k")), _versions(store, h("j")))
    assert versions == ([{"value": "62", "timestamp": 20, "valid_to": 30}, {"value": "61", "timestamp": 10,
                                                                            "valid_to": 20}],
                        [{"value": "64", "timestamp": 25, "valid_to": None},
                         {"value": "63", "timestamp": 15, "valid_to": 25}]), versions
    latest = [store.ok("versioned_store.get", key=key)["record"] for key in (h("k"), h("j"))]
    assert latest == [None, {"value": "64", "timestamp": 25, "valid_to": None}], latest
    store.close()
    again = kit.open("versioned_kv", ROCKSDB, options=VERSIONED_OPTIONS)
    assert again.committed() == len(_VERSIONED_RECORDS) - 1
    assert [again.ok("versioned_store.get", key=key)["record"] for key in (h("k"), h("j"))] == latest


@rules("VS-20")
@pytest.mark.kstate_places("store:versioned", "restore")
def test_an_in_memory_versioned_store_restores_as_the_rocksdb_one_and_keeps_no_offset(kit: Kit) -> None:
    """Place: the in-memory versioned store restored (the reference's; Kafka has none). It answers the restored
    versions exactly as a RocksDB store restored from the same records, and commits no offset (VS-20)."""
    kit.require("versioned_kv", ROCKSDB)
    kit.require("versioned_kv", "memory")
    answers = []
    for backend in (ROCKSDB, "memory"):
        store = kit.open("versioned_kv", backend, name=f"on-{backend}", options=VERSIONED_OPTIONS)
        store.restore(_VERSIONED_RECORDS, batch_size=2, commit_offsets=backend == "memory")
        answers.append((_versions(store, h("k")), _versions(store, h("j")),
                        store.ok("versioned_store.get", key=h("k"), as_of=15)["record"]))
        if backend == "memory":
            assert store.committed() is None
    assert answers[0] == answers[1]
