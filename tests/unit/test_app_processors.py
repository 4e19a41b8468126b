"""The application instance's processors (kstate.app.processors): one per store family, each in the family's own
module kstate.app.<family>_processor, found by its name;
each writes through the family's change-logging layer as Kafka's DSL operator writes its store."""

from __future__ import annotations

from typing import Any

import pytest

from kstate.app.processors import (
    VALUE_DECODERS,
    ProcessorConfigError,
    aggregate,
    decode_stored,
    parse_aggregate,
    processor_for,
    processors,
)
from kstate.codecs import changelog as cl
from kstate.codecs import session_keys, window_keys
from kstate.codecs.store_types import (
    STORE_TYPES,
    VALUE_ENCODERS,
    Family,
    StoreType,
    UnknownFamilyError,
    encode_stored_value,
)
from kstate.stores.api import Backend, RecordContext
from kstate.stores.changelogging import RecordContextHolder
from kstate.stores.factory import open_bytes_store
from kstate.stores.families import changelogging_store
from kstate_conformance import rules

HEADERS = (("h", b"1"), ("h", None))


class Harness:
    """An in-memory store of ``store_type`` under its change-logging layer, and the family's processor over it."""

    def __init__(self, store_type: StoreType, store_options: dict[str, Any], options: dict[str, int]) -> None:
        self.store_type = store_type
        self.store: Any = open_bytes_store(store_type, Backend.MEMORY, name="s", options=store_options)
        self.holder = RecordContextHolder()
        self.sink: list[cl.ChangelogRecord] = []
        self.logged = changelogging_store(self.store, store_type, self.holder, self.sink)
        self.processor = processor_for(self.logged, store_type, store_options, options)

    def send(self, key: bytes, value: bytes | None, timestamp: int) -> None:
        self.holder.current = RecordContext(timestamp=timestamp, headers=HEADERS)
        self.processor.process(key, value, timestamp, HEADERS)


def test_every_family_has_a_processor_and_every_value_layout_a_decoder() -> None:
    assert set(processors()) == set(Family)
    assert set(VALUE_DECODERS) == set(VALUE_ENCODERS)
    for store_type, info in STORE_TYPES.items():
        if info.value_format is not None:
            stored = decode_stored(store_type, VALUE_ENCODERS[info.value_format](b"v", 5, list(HEADERS)) or b"")
            assert stored.value == b"v"
            assert stored.timestamp in (None, 5)
            assert stored.headers in (None, HEADERS)


def test_a_family_without_a_processor_is_refused_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """No silent default (issue 33): a family whose processor module is missing is an UnknownFamilyError naming it."""
    from kstate.app import processors as module

    found = dict(processors())
    del found[Family.KEY_VALUE]
    monkeypatch.setattr(module, "processors", lambda: found)
    with pytest.raises(UnknownFamilyError, match="key_value"):
        processor_for(object(), StoreType.KEY_VALUE, {}, {})


@rules("INST-25")
def test_aggregate_round_trips() -> None:
    assert parse_aggregate(aggregate(12, b"a:b")) == (12, b"a:b")


@rules("INST-23", "INST-25")
@pytest.mark.parametrize("store_type", [StoreType.TIMESTAMPED_WINDOW, StoreType.TIMESTAMPED_WINDOW_WITH_HEADERS])
def test_window_aggregation_counts_per_tumbling_window_and_drops_closed_windows(store_type: StoreType) -> None:
    h = Harness(store_type, {"retention_ms": 1000, "window_size_ms": 100}, {"grace_ms": 50})
    for value, ts in ((b"a", 120), (b"b", 110), (b"c", 250), (None, 260)):
        h.send(b"k", value, ts)
    first = decode_stored(store_type, h.store.fetch(b"k", 100))
    assert (parse_aggregate(first.value), first.timestamp) == ((2, b"b"), 120)  # max(old, record) timestamp
    assert parse_aggregate(decode_stored(store_type, h.store.fetch(b"k", 200)).value) == (1, b"c")
    logged = len(h.sink)
    h.send(b"k", b"late", 150)  # window [100, 200) closed at stream time 250 - grace 50
    assert len(h.sink) == logged and parse_aggregate(decode_stored(store_type, h.store.fetch(b"k", 100)).value)[0] == 2
    assert [window_keys.PLAIN.decode(r.key).timestamp for r in h.sink] == [100, 100, 200]


@rules("INST-26")
def test_window_processor_refuses_a_grace_beyond_retention() -> None:
    with pytest.raises(ProcessorConfigError, match="grace_ms"):
        Harness(StoreType.WINDOW, {"retention_ms": 100, "window_size_ms": 60}, {"grace_ms": 50})


@rules("INST-24", "INST-25")
@pytest.mark.parametrize("store_type", [StoreType.SESSION, StoreType.SESSION_WITH_HEADERS])
def test_session_aggregation_merges_overlapping_sessions(store_type: StoreType) -> None:
    h = Harness(store_type, {"retention_ms": 10_000}, {"inactivity_gap_ms": 10})
    for ts in (0, 5, 30, 15):
        h.send(b"k", b"v%d" % ts, ts)
    sessions = [(s.start, s.end, parse_aggregate(decode_stored(store_type, s.value).value))
                for s in h.store.fetch(b"k")]
    assert sessions == [(0, 15, (3, b"v15")), (30, 30, (1, b"v30"))]
    h.sink.clear()
    h.send(b"k", b"v22", 22)  # overlaps both: one session [0, 30]
    assert [(s.start, s.end, parse_aggregate(decode_stored(store_type, s.value).value))
            for s in h.store.fetch(b"k")] == [(0, 30, (5, b"v22"))]
    logged = [(session_keys.PLAIN.decode(r.key).start, session_keys.PLAIN.decode(r.key).end, r.value) for r in h.sink]
    assert logged == [(0, 15, None), (30, 30, None), (0, 30, b"5:v22")]  # removes, then the merged put


@rules("INST-26")
def test_session_processor_needs_its_gap() -> None:
    with pytest.raises(ProcessorConfigError, match="inactivity_gap_ms"):
        Harness(StoreType.SESSION, {"retention_ms": 100}, {})
    with pytest.raises(ProcessorConfigError, match="window_size"):
        Harness(StoreType.SESSION, {"retention_ms": 100}, {"inactivity_gap_ms": 1, "window_size": 3})


@rules("INST-22")
def test_versioned_table_puts_versions_and_tombstones_at_the_record_timestamp() -> None:
    h = Harness(StoreType.VERSIONED_KV, {"history_retention_ms": 10_000}, {})
    h.send(b"k", b"a", 100)
    h.send(b"k", b"b", 50)  # out of order: an older version
    h.send(b"k", None, 200)
    assert h.store.get(b"k") is None
    assert h.store.get(b"k", 60).value == b"b"
    assert h.store.get(b"k", 150).value == b"a"
    assert [(r.value, r.timestamp) for r in h.sink] == [(b"a", 100), (b"b", 50), (None, 200)]


@rules("INST-22")
def test_versioned_table_with_headers_keeps_the_record_headers_with_each_version() -> None:
    h = Harness(StoreType.VERSIONED_KV_WITH_HEADERS, {"history_retention_ms": 10_000}, {})
    h.send(b"k", b"a", 100)
    h.send(b"k", None, 200)
    assert h.store.get(b"k") is None
    assert h.store.get(b"k", 150).value == encode_stored_value(StoreType.VERSIONED_KV_WITH_HEADERS, b"a", 100, HEADERS)
    assert [(r.value, r.timestamp, r.headers) for r in h.sink] == [(b"a", 100, HEADERS), (None, 200, HEADERS)]


@rules("INST-12")
def test_key_value_table_puts_the_layout_and_deletes_on_null() -> None:
    h = Harness(StoreType.TIMESTAMPED_KV_WITH_HEADERS, {}, {})
    h.send(b"k", b"a", 7)
    assert h.store.get(b"k") == encode_stored_value(h.store_type, b"a", 7, list(HEADERS))
    h.send(b"k", None, 8)
    assert h.store.get(b"k") is None
    with pytest.raises(ProcessorConfigError, match="grace_ms"):
        Harness(StoreType.KEY_VALUE, {}, {"grace_ms": 1})
