"""Restore from the broker on awkward changelog records: every store type stores exactly what each record
says (RST-2, CL-9 to CL-11, HV-12), whichever encoding path a record takes."""

from __future__ import annotations

from pathlib import Path

import pytest

from kstate.app.restore_io import restore_from_changelog
from kstate.codecs import changelog as cl
from kstate.codecs.header_values import decode_value_timestamp_headers
from kstate.codecs.store_types import BUILT_KV_TYPES, StoreType
from kstate.codecs.timestamped import decode_value_and_timestamp
from kstate.kafka.broker import Broker
from kstate.kafka.changelog_topics import RawRecord, consume_all, create_changelog_topic, produce
from kstate.stores.api import Backend, TopicPartition
from kstate.stores.factory import open_kv_store

T0 = 1_700_000_000_000
#: Each shape the restore converters treat apart: no headers, null and empty values, null header values,
#: lengths past one varint byte, more than 63 headers, non-ASCII keys, a tombstone after a put.
RECORDS: list[RawRecord] = [
    (b"plain", b"v", T0, []),
    (b"empty", b"", T0 + 1, []),
    (b"null-header", b"v", T0 + 2, [("n", None)]),
    (b"long-header", b"v" * 300, T0 + 3, [("k" * 70, b"x" * 200), ("short", b"y")]),
    (b"many-headers", b"v", T0 + 4, [(f"h{i}", bytes([i])) for i in range(70)]),
    (b"unicode", b"v", T0 + 5, [("cl\u00e9", b"\xff"), ("\u65e5\u672c", b"")]),
    (b"gone", b"v", T0 + 6, [("a", b"1")]),
    (b"gone", None, T0 + 7, [("a", b"2")]),
    (b"twice", b"first", T0 + 8, [("a", b"1")]),
    (b"twice", b"second", T0 + 9, [("b", b"2")]),
]


@pytest.mark.parametrize("store_type", list(BUILT_KV_TYPES), ids=lambda t: t.value)
def test_restore_stores_what_each_record_says(broker: Broker, tmp_path: Path, app_name: str,
                                              store_type: StoreType) -> None:
    topic = create_changelog_topic(broker, app_name, "s", store_type, 1)
    produce(broker, topic, RECORDS)
    read = consume_all(broker, topic)
    assert [(r["key"], r["value"]) for r in read] == [(k, v) for k, v, _, _ in RECORDS]

    store = open_kv_store(store_type, Backend.ROCKSDB, name="s", state_dir=tmp_path, application_id=app_name)
    try:
        outcome = restore_from_changelog(store, store_type, broker.bootstrap, TopicPartition(topic, 0),
                                         batch_size=3, liveness=broker.check_alive)
        assert (outcome.records, outcome.first_offset, outcome.last_offset) == (len(RECORDS), 0, len(RECORDS) - 1)
        latest = {record["key"]: record for record in read}
        for key, record in latest.items():
            stored = store.get(key)
            if record["value"] is None:
                assert stored is None, key
            elif store_type is StoreType.KEY_VALUE:
                assert stored == record["value"], key
            elif store_type is StoreType.TIMESTAMPED_KV:
                assert decode_value_and_timestamp(stored) == (record["value"], record["timestamp"]), key
            else:
                decoded = decode_value_timestamp_headers(stored)
                assert decoded is not None, key
                assert (decoded.value, decoded.timestamp) == (record["value"], record["timestamp"]), key
                assert decoded.headers == record["headers"], key
            # The batch path and the one-record converter agree byte for byte.
            assert stored == cl.restore_value(store_type, cl.ChangelogRecord(
                key, record["value"], record["timestamp"], tuple(record["headers"]))), key
        assert store.committed_offset(TopicPartition(topic, 0)) == len(RECORDS) - 1
    finally:
        store.close()
