"""The conformance suite's versioned-store model answers Kafka's ``RocksDBVersionedStoreTest`` expectations.

The model (``kstate_conformance.models.versioned``) is written from the spec, not from the reference; this
checks it against the exact expectations of Kafka's own test before it judges any implementation.
"""

from __future__ import annotations

import pytest

from kstate_conformance.models import versioned as m
from kstate_conformance.models.kv import Record
from kstate_conformance.tests.test_versioned_store_contract import (
    EXAMPLES,
    RULE_EXAMPLES,
    RULE_SEGMENT_INTERVAL,
    SEGMENT_INTERVAL,
    Example,
)


def _b(text: str | None) -> bytes | None:
    return None if text is None else text.encode()


def _seen(record: m.VersionedRecord | None) -> tuple[str, int, int | None] | None:
    return None if record is None else (record.value.decode(), record.timestamp, record.valid_to)


@pytest.mark.parametrize("example", EXAMPLES + RULE_EXAMPLES, ids=[e.kafka_test for e in EXAMPLES + RULE_EXAMPLES])
def test_the_model_meets_kafkas_expectations(example: Example) -> None:
    interval = SEGMENT_INTERVAL if example in EXAMPLES else RULE_SEGMENT_INTERVAL.get(example.kafka_test, 10)
    model = m.VersionedStoreModel(example.history_retention, interval)
    for number, step in enumerate(example.steps):
        where = f"{example.kafka_test} step {number} {step}"
        kind = step[0]
        if kind == "put":
            _, key, value, ts, valid_to = step
            assert model.put(key.encode(), _b(value), ts) == valid_to, where
        elif kind == "get":
            got = _seen(model.get(step[1].encode()))
            assert got == (None if step[2] is None else (*step[2], None)), where
        elif kind == "as_of":
            assert _seen(model.get_as_of(step[1].encode(), step[2])) == step[3], where
        elif kind in ("delete", "delete_unchecked"):
            got = _seen(model.delete(step[1].encode(), step[2]))
            if kind == "delete":
                assert (None if got is None else got[:2]) == step[3], where
        elif kind == "versions":
            _, key, from_ms, to_ms, order, expected = step
            assert [_seen(r) for r in model.get_versions(key.encode(), from_ms, to_ms, order)] == expected, where
        elif kind == "restore":
            model.restore_batch([Record(k.encode(), _b(v), ts) for k, v, ts in step[1]])
        else:
            raise AssertionError(kind)


def test_a_tombstone_at_the_latest_timestamp_after_a_tombstone_is_recorded_nowhere() -> None:
    """VER-34's example: "a"@10, tombstone@20, "b"@30, tombstone@30, then "c"@25 becomes the latest."""
    model = m.VersionedStoreModel(1000, 100)
    for value, ts in ((b"a", 10), (None, 20), (b"b", 30), (None, 30)):
        model.put(b"k", value, ts)
    assert model.put(b"k", b"c", 25) == m.VALID_TO_UNDEFINED
    assert model.get(b"k") == m.VersionedRecord(b"c", 25)


def test_java_division_truncates_toward_zero() -> None:
    assert m.segment_id(-5, 10) == 0 and m.segment_id(-15, 10) == -1 and m.segment_id(15, 10) == 1
    assert m.default_segment_interval(300_000) == 60_000 and m.default_segment_interval(0) == 2_000


def test_the_model_writes_the_worked_example_row_of_the_reference_notes() -> None:
    """kafka-formats.md 5.3: "a"@1 then "bc"@5 in one segment with next 9; the gap variant; a degenerate row."""
    model = m.VersionedStoreModel(1000, 100)
    model.put(b"k", b"a", 1)
    model.put(b"k", b"bc", 5)
    model.put(b"k", b"z", 9)
    row = model.physical_rows()[bytes(8) + b"k"]
    assert row.hex() == ("0000000000000009" "0000000000000001" "0000000000000005" "00000002"
                         "0000000000000001" "00000001" "61" "6263")
    gap = m.VersionedStoreModel(1000, 100)
    gap.put(b"k", b"a", 1)
    gap.put(b"k", None, 5)
    gap.put(b"k", b"z", 9)
    gap.put(b"k", b"bc", 7)
    assert gap.physical_rows()[bytes(8) + b"k"].hex() == (
        "0000000000000009" "0000000000000001" "0000000000000007" "00000002" "0000000000000005" "ffffffff"
        "0000000000000001" "00000001" "61" "6263")
    lone = m.VersionedStoreModel(1000, 100)
    lone.put(b"k", None, 7)
    assert lone.physical_rows() == {bytes(8) + b"k": bytes.fromhex("0000000000000007" * 3 + "ffffffff")}
