"""The change-logging layer of the reference (spec/changelog.md CL-1..CL-4, CL-8; kv-stores.md KV-3)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kstate.codecs import changelog as cl
from kstate.codecs.header_values import decode_value_timestamp_headers, encode_value_timestamp_headers
from kstate.codecs.store_types import BUILT_KV_TYPES, BUILT_TYPES, StoreType
from kstate.codecs.timestamped import decode_value_and_timestamp, encode_value_and_timestamp
from kstate.errors import EncodeError, InvalidArgumentError, KStateError, NullKeyError
from kstate.stores.api import Backend, Flushable, KeyValueBytesStore, RecordContext
from kstate.stores.caching import CachingKeyValueStore
from kstate.stores.changelogging import (
    ChangeLoggingKeyValueBytesStore,
    ChangeLoggingTimestampedKeyValueBytesStore,
    ChangeLoggingTimestampedKeyValueBytesStoreWithHeaders,
    RecordContextHolder,
)
from kstate.stores.factory import open_kv_store
from kstate.stores.families import STORE_CLASSES, changelogging_store
from kstate.stores.kv import RocksDBStore

Record = cl.ChangelogRecord
COMBOS = [(t, b) for t in BUILT_KV_TYPES for b in Backend]


@pytest.fixture(params=COMBOS, ids=lambda c: f"{c[0].value}-{c[1].value}")
def logged(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[ChangeLoggingKeyValueBytesStore, list[Record], RecordContextHolder]]:
    store_type, backend = request.param
    inner = open_kv_store(store_type, backend, name="s", state_dir=tmp_path)
    sink: list[Record] = []
    context = RecordContextHolder(RecordContext(timestamp=42, headers=(("ctx", b"\x01"),)))
    store = changelogging_store(inner, store_type, context, sink)
    yield store, sink, context
    store.close()


def value_of(store_type: StoreType, raw: bytes, ts: int = 7, headers: list[tuple[str, bytes | None]] | None = None) -> bytes:
    if store_type is StoreType.KEY_VALUE:
        return raw
    if store_type is StoreType.TIMESTAMPED_KV:
        value = encode_value_and_timestamp(raw, ts)
    else:
        value = encode_value_timestamp_headers(raw, ts, headers)
    assert value is not None
    return value


def expected_record(store_type: StoreType, key: bytes, raw: bytes | None, ts: int = 7,
                    headers: tuple[tuple[str, bytes | None], ...] = ()) -> Record:
    """The record Kafka sends for a write: hand-built from CL-3, CL-4, CL-8 (context ts 42, headers ctx=01)."""
    if raw is None:
        tomb_headers = (("ctx", b"\x01"),) if store_type is StoreType.TIMESTAMPED_KV_WITH_HEADERS else ()
        return Record(key, None, 42, tomb_headers)
    if store_type is StoreType.KEY_VALUE:
        return Record(key, raw, 42)
    if store_type is StoreType.TIMESTAMPED_KV:
        return Record(key, raw, ts)
    return Record(key, raw, ts, headers)


def test_factory_picks_kafkas_class_per_store_type() -> None:
    inner = open_kv_store(StoreType.KEY_VALUE, Backend.MEMORY, name="s")
    context, sink = RecordContextHolder(), []  # type: ignore[var-annotated]
    assert type(changelogging_store(inner, StoreType.KEY_VALUE, context, sink)) is ChangeLoggingKeyValueBytesStore
    assert isinstance(changelogging_store(inner, StoreType.TIMESTAMPED_KV, context, sink), ChangeLoggingTimestampedKeyValueBytesStore)
    assert isinstance(changelogging_store(inner, StoreType.TIMESTAMPED_KV_WITH_HEADERS, context, sink),
                      ChangeLoggingTimestampedKeyValueBytesStoreWithHeaders)
    assert set(STORE_CLASSES) == set(BUILT_TYPES)


def test_put_and_delete_log_kafkas_records(logged: tuple[ChangeLoggingKeyValueBytesStore, list[Record], RecordContextHolder]) -> None:
    store, sink, _ = logged
    t = store.store_type
    headers = [("a", b"x"), ("n", None)]
    store.put(b"k1", value_of(t, b"v1", 1000, headers))
    store.put(b"k2", None)
    assert store.delete(b"k1") == value_of(t, b"v1", 1000, headers)
    assert store.delete(b"absent") is None
    assert sink == [
        expected_record(t, b"k1", b"v1", 1000, tuple(headers) if t is StoreType.TIMESTAMPED_KV_WITH_HEADERS else ()),
        expected_record(t, b"k2", None),
        expected_record(t, b"k1", None),
        expected_record(t, b"absent", None),
    ]


def test_put_if_absent_logs_only_when_absent(logged: tuple[ChangeLoggingKeyValueBytesStore, list[Record], RecordContextHolder]) -> None:
    store, sink, _ = logged
    t = store.store_type
    assert store.put_if_absent(b"k", value_of(t, b"a")) is None
    assert store.put_if_absent(b"k", value_of(t, b"b")) == value_of(t, b"a")
    assert store.put_if_absent(b"z", None) is None
    assert sink == [expected_record(t, b"k", b"a"), expected_record(t, b"z", None)]
    assert store.get(b"k") == value_of(t, b"a") and store.get(b"z") is None


def test_put_all_logs_every_entry_in_order(logged: tuple[ChangeLoggingKeyValueBytesStore, list[Record], RecordContextHolder]) -> None:
    store, sink, _ = logged
    t = store.store_type
    store.put_all([(b"a", value_of(t, b"1")), (b"b", None), (b"a", value_of(t, b"2"))])
    assert sink == [expected_record(t, b"a", b"1"), expected_record(t, b"b", None), expected_record(t, b"a", b"2")]
    assert store.get(b"a") == value_of(t, b"2")


def test_a_null_key_writes_and_logs_nothing(logged: tuple[ChangeLoggingKeyValueBytesStore, list[Record], RecordContextHolder]) -> None:
    store, sink, _ = logged
    t = store.store_type
    with pytest.raises(NullKeyError):
        store.put(None, value_of(t, b"1"))  # type: ignore[arg-type]
    with pytest.raises(NullKeyError):
        store.put_all([(b"a", value_of(t, b"1")), (None, value_of(t, b"2"))])  # type: ignore[list-item]
    with pytest.raises(NullKeyError):
        store.delete(None)  # type: ignore[arg-type]
    assert sink == []
    assert list(store.all()) == []


def test_a_write_refused_by_the_log_leaves_the_store_unchanged(logged: tuple[ChangeLoggingKeyValueBytesStore, list[Record], RecordContextHolder]) -> None:
    """A negative logged timestamp is refused before the inner store is written (CL-1, CL-2); Kafka writes first."""
    store, sink, context = logged
    t = store.store_type
    store.put(b"d", value_of(t, b"v"))
    sink.clear()
    context.current = RecordContext(timestamp=-1)
    with pytest.raises(EncodeError):
        store.put(b"k", value_of(t, b"v", ts=-1) if t is not StoreType.KEY_VALUE else b"v")
    with pytest.raises(EncodeError):
        store.delete(b"d")
    assert store.get(b"k") is None and store.get(b"d") == value_of(t, b"v")
    assert sink == []


@pytest.mark.parametrize(("key", "value", "argument"), [(1 << 40, b"v", "key"), ("k", b"v", "key"),
                                                         (b"k", "v", "value"), (b"k", 1 << 40, "value")],
                         ids=["huge-int-key", "str-key", "str-value", "huge-int-value"])
def test_keys_and_values_that_are_not_bytes_are_refused_by_name(
        logged: tuple[ChangeLoggingKeyValueBytesStore, list[Record], RecordContextHolder],
        key: Any, value: Any, argument: str) -> None:
    """KV-26: every write of the logging layer refuses a key or value that is not bytes with an InvalidArgumentError
    naming it (never ``bytes(1 << 40)``, never a TypeError), before the store or the log is written."""
    store, sink, _context = logged
    store.put(b"d", value_of(store.store_type, b"v"))
    sink.clear()
    writes: list[Callable[[], object]] = [lambda: store.put(key, value), lambda: store.put_all([(key, value)]),
                                          lambda: store.check_write(key, value)]
    if argument == "key":
        writes += [lambda: store.delete(key), lambda: store.put_if_absent(key, value)]
    else:
        writes += [lambda: store.put_if_absent(b"d", value), lambda: store.put_if_absent(b"n", value)]
    for write in writes:
        with pytest.raises(InvalidArgumentError) as info:
            write()
        assert info.value.argument == argument
    assert sink == []
    assert list(store.all()) == [(b"d", value_of(store.store_type, b"v"))]


def test_the_context_in_force_at_each_write_is_logged(logged: tuple[ChangeLoggingKeyValueBytesStore, list[Record], RecordContextHolder]) -> None:
    store, sink, context = logged
    t = store.store_type
    context.current = RecordContext(timestamp=5, headers=(("h", None),))
    store.delete(b"a")
    context.current = RecordContext(timestamp=6)
    store.delete(b"b")
    tomb5 = (("h", None),) if t is StoreType.TIMESTAMPED_KV_WITH_HEADERS else ()
    assert sink == [Record(b"a", None, 5, tomb5), Record(b"b", None, 6, ())]


def test_restore_batches_are_not_logged(logged: tuple[ChangeLoggingKeyValueBytesStore, list[Record], RecordContextHolder]) -> None:
    store, sink, _ = logged
    store.restore_batch([(b"a", value_of(store.store_type, b"1")), (b"b", None)])
    assert sink == []
    assert store.get(b"a") == value_of(store.store_type, b"1")


def test_context_subscribers_follow_the_current_context() -> None:
    seen: list[RecordContext] = []
    holder = RecordContextHolder(RecordContext(timestamp=1))
    holder.subscribe(seen.append)
    holder.current = RecordContext(timestamp=2, topic="in", offset=9, partition=0)
    assert [c.timestamp for c in seen] == [1, 2]
    assert holder.codec_context() == cl.RecordContext(2, ())


def test_the_store_position_tracks_the_context(tmp_path: Path) -> None:
    inner = open_kv_store(StoreType.KEY_VALUE, Backend.ROCKSDB, name="s", state_dir=tmp_path)
    assert isinstance(inner, RocksDBStore)
    holder = RecordContextHolder()
    holder.subscribe(inner.set_record_context)
    store = changelogging_store(inner, StoreType.KEY_VALUE, holder, [])
    holder.current = RecordContext(timestamp=3, topic="in", partition=2, offset=17)
    store.put(b"k", b"v")
    assert inner.position == {"in": {2: 17}}
    store.close()


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([b"a", b"b", b"c"]), st.none() | st.binary(max_size=3),
                          st.integers(min_value=0, max_value=1 << 40)), max_size=12))
def test_replaying_the_log_rebuilds_a_timestamped_store(writes: list[tuple[bytes, bytes | None, int]]) -> None:
    """The records of any write sequence, restored, give back the store (RST-6 at the unit level)."""
    inner: KeyValueBytesStore = open_kv_store(StoreType.TIMESTAMPED_KV, Backend.MEMORY, name="s")
    sink: list[Record] = []
    store = changelogging_store(inner, StoreType.TIMESTAMPED_KV, RecordContextHolder(RecordContext(timestamp=1)), sink)
    for key, raw, ts in writes:
        store.put(key, encode_value_and_timestamp(raw, ts))
    rebuilt = open_kv_store(StoreType.TIMESTAMPED_KV, Backend.MEMORY, name="r")
    rebuilt.restore_batch([(r.key, cl.restore_value(StoreType.TIMESTAMPED_KV, r)) for r in sink])
    assert list(rebuilt.all()) == list(store.all())


# --- a refused write reaches neither the store nor the changelog (issue 15, store fault 4) ----------------

#: Stored values the change-logging layer cannot log: shorter than the 8-byte timestamp, or a headers
#: value whose sections do not add up. Each is checked below to be refused by the value codec.
MALFORMED = {
    StoreType.TIMESTAMPED_KV: [b"", b"\x01", b"\x01\x02\x03", b"\x00" * 7],
    StoreType.TIMESTAMPED_KV_WITH_HEADERS: [b"", b"\x00", b"\x00" + b"\x00" * 7, b"\x06\x00", b"\x01" + b"\x00" * 9],
}
REFUSAL_COMBOS = [(t, b, c) for t in MALFORMED for b in Backend for c in (False, True)]
REFUSAL_PARAMS = pytest.mark.parametrize(
    ("store_type", "backend", "caching"), REFUSAL_COMBOS,
    ids=lambda v: v.value if hasattr(v, "value") else ("cached" if v else "uncached"))


def _stack(store_type: StoreType, backend: Backend, caching: bool, tmp_path: Path
           ) -> tuple[KeyValueBytesStore, KeyValueBytesStore, list[Record], RecordContextHolder]:
    inner = open_kv_store(store_type, backend, name="s", state_dir=tmp_path)
    context = RecordContextHolder(RecordContext(timestamp=42))
    sink: list[Record] = []
    store: KeyValueBytesStore = changelogging_store(inner, store_type, context, sink)
    if caching:
        store = CachingKeyValueStore(store, context)
    return store, inner, sink, context


def _flushed(store: KeyValueBytesStore) -> None:
    if isinstance(store, Flushable):
        store.flush()


@REFUSAL_PARAMS
def test_a_refused_write_reaches_neither_the_store_nor_the_changelog(
        store_type: StoreType, backend: Backend, caching: bool, tmp_path: Path) -> None:
    """A value the log cannot carry is refused at the write, before the cache or the store takes it (CL-1)."""
    decode = decode_value_and_timestamp if store_type is StoreType.TIMESTAMPED_KV else decode_value_timestamp_headers
    store, inner, sink, _ = _stack(store_type, backend, caching, tmp_path)
    good = value_of(store_type, b"v")
    store.put(b"k", good)
    _flushed(store)
    sink.clear()
    for bad in MALFORMED[store_type]:
        with pytest.raises(KStateError):
            decode(bad)  # the example really is malformed
        with pytest.raises(KStateError):
            store.put(b"n", bad)
        with pytest.raises(KStateError):
            store.put(b"k", bad)
        with pytest.raises(KStateError):
            store.put_all([(b"a", good), (b"b", bad)])
        with pytest.raises(KStateError):
            store.put_if_absent(b"n", bad)
        # Kafka never reads the value of a putIfAbsent on a present key: nothing to refuse, nothing written.
        assert store.put_if_absent(b"k", bad) == good
    _flushed(store)  # the cache holds nothing that could fail or land now
    assert sink == []
    assert store.get(b"n") is None and store.get(b"a") is None and store.get(b"k") == good
    assert list(inner.all()) == [(b"k", good)]
    store.close()


@REFUSAL_PARAMS
def test_a_write_with_a_negative_logged_timestamp_changes_nothing(
        store_type: StoreType, backend: Backend, caching: bool, tmp_path: Path) -> None:
    """ProducerRecord refuses a negative timestamp (CL-2): the write is refused before anything is stored."""
    store, inner, sink, context = _stack(store_type, backend, caching, tmp_path)
    good = value_of(store_type, b"v")
    store.put(b"k", good)
    _flushed(store)
    sink.clear()
    with pytest.raises(EncodeError):
        store.put(b"n", value_of(store_type, b"v", ts=-1))
    context.current = RecordContext(timestamp=-1)
    with pytest.raises(EncodeError):
        store.delete(b"k")  # a tombstone is logged at the context timestamp
    with pytest.raises(EncodeError):
        store.put(b"k", None)
    context.current = RecordContext(timestamp=42)
    _flushed(store)
    assert sink == []
    assert list(inner.all()) == [(b"k", good)]
    store.close()


@REFUSAL_PARAMS
def test_a_refused_put_through_the_neutral_operations_changes_nothing(
        store_type: StoreType, backend: Backend, caching: bool, tmp_path: Path) -> None:
    """The same through ``store.*`` (spec/ops.md): the refusal is the put's answer, the flush finds nothing."""
    from kstate.ops import call

    handle = call("store.open", {"store_type": store_type.value, "backend": backend.value, "caching": caching,
                                 "state_dir": str(tmp_path), "context": {"timestamp": 42}})["handle"]
    for bad in MALFORMED[store_type]:
        assert "error" in call("store.put", {"handle": handle, "key": "01", "value": bad.hex()})
    assert call("store.flush", {"handle": handle}) == {}
    assert call("store.get", {"handle": handle, "key": "01"}) == {"value": None}
    assert call("store.changelog", {"handle": handle})["records"] == []
    call("store.close", {"handle": handle})
