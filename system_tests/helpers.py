"""Checks shared by the scenario tests: decoding store values back to (raw value, timestamp, headers)."""

from __future__ import annotations

from kstate.app.cluster import AppCluster, InputRecord
from kstate.codecs.header_values import decode_value_timestamp_headers
from kstate.codecs.store_types import StoreType
from kstate.codecs.timestamped import decode_value_and_timestamp
from kstate.spark.oracle import State

Decoded = tuple[bytes, int | None, tuple[tuple[str, bytes | None], ...] | None]


def decode(store_type: StoreType, value: bytes) -> Decoded:
    """A stored value as (raw value, timestamp or None, headers or None) for its store type's layout."""
    if store_type is StoreType.KEY_VALUE:
        return value, None, None
    if store_type is StoreType.TIMESTAMPED_KV:
        pair = decode_value_and_timestamp(value)
        assert pair is not None
        return pair[0], pair[1], None
    decoded = decode_value_timestamp_headers(value)
    assert decoded is not None
    return decoded.value, decoded.timestamp, tuple((k, v) for k, v in decoded.headers)


def assert_no_acknowledged_input_lost(cluster: AppCluster, state: State, store_type: StoreType) -> int:
    """Every key's raw value is the value of its last acknowledged input record; deleted keys are absent.
    Returns the number of keys checked."""
    checked = 0
    for partition, latest in cluster.latest_input().items():
        entries = state.get(partition, {})
        for key, record in latest.items():
            if record.value is None:
                assert key not in entries, f"partition {partition} key {key!r}: deleted at input offset {record.offset}"
                continue
            assert key in entries, f"partition {partition} key {key!r}: input offset {record.offset} lost"
            raw, _, _ = decode(store_type, entries[key])
            assert raw == record.value, f"partition {partition} key {key!r}: {raw!r} != input {record.value!r}"
            checked += 1
        assert set(entries) <= set(latest), f"partition {partition}: keys never written {set(entries) - set(latest)}"
    return checked


def input_headers(record: InputRecord) -> tuple[tuple[str, bytes | None], ...]:
    return record.headers
