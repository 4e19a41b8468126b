"""The record cache of the reference (spec/caching.md CACHE-1..CACHE-10)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kstate.codecs import changelog as cl
from kstate.codecs.store_types import StoreType
from kstate.errors import EncodeError, InvalidArgumentError, NullKeyError
from kstate.stores.api import Backend, InvalidStateStoreError, RecordContext, TopicPartition
from kstate.stores.caching import (
    DEFAULT_CACHE_MAX_BYTES,
    CacheEntry,
    CachingKeyValueStore,
    FlushedEntry,
    NamedCache,
    entry_size,
)
from kstate.stores.changelogging import RecordContextHolder
from kstate.stores.factory import open_kv_store
from kstate.stores.families import changelogging_store

Record = cl.ChangelogRecord
ONE = 1 + 1 + 45  # a one-byte key and value, no topic, no headers


def make(backend: Backend = Backend.MEMORY, store_type: StoreType = StoreType.KEY_VALUE, *, max_bytes: int = DEFAULT_CACHE_MAX_BYTES,
         listener: bool = False, old_values: bool = False, tmp: Path | None = None,
         ) -> tuple[CachingKeyValueStore, list[Record], RecordContextHolder, list[FlushedEntry]]:
    inner = open_kv_store(store_type, backend, name="s", state_dir=tmp)
    context = RecordContextHolder(RecordContext(timestamp=0))
    sink: list[Record] = []
    forwarded: list[FlushedEntry] = []
    logged = changelogging_store(inner, store_type, context, sink)
    store = CachingKeyValueStore(logged, context, max_bytes=max_bytes,
                                 flush_listener=forwarded.append if listener else None, send_old_values=old_values)
    return store, sink, context, forwarded


@pytest.fixture(params=list(Backend), ids=lambda b: b.value)
def cached(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[CachingKeyValueStore, list[Record], RecordContextHolder, list[FlushedEntry]]]:
    made = make(request.param, tmp=tmp_path)
    yield made
    made[0].close()


# --- sizes and the named cache --------------------------------------------------------------------------------


def test_entry_size_is_kafkas_estimate() -> None:
    """ThreadCacheTest.memoryCacheEntrySize counts the key twice; LRUNode.size counts it once (the real code)."""
    context = RecordContext(timestamp=1, headers=(("héader", b"xyz"), ("n", None)), topic="tópic")
    assert entry_size(b"key", b"value", context) == 3 + 24 + 1 + 5 + 8 + 8 + 4 + 5 + (6 + 3) + (1 + 0)
    assert entry_size(b"k", None, RecordContext(timestamp=0)) == 1 + 45
    assert entry_size(b"k", b"v", None) == ONE
    assert entry_size(b"", b"", RecordContext(timestamp=0, topic="\U0001f600")) == 45 + 2  # two UTF-16 units


def test_named_cache_evicts_the_least_recently_used_and_flushes_everything_dirty() -> None:
    written: list[list[bytes]] = []
    cache = NamedCache(2 * ONE, lambda batch: written.append([k for k, _ in batch]))
    ctx = RecordContext(timestamp=0)
    cache.put(b"a", CacheEntry(b"1", ctx, True, ONE))
    cache.put(b"b", CacheEntry(b"2", ctx, True, ONE))
    assert cache.get(b"a") is not None  # b is now the eldest
    cache.put(b"c", CacheEntry(b"3", ctx, True, ONE))
    assert written == [[b"b", b"a", b"c"]]
    assert len(cache) == 2 and cache.size_bytes == 2 * ONE and cache.dirty_keys() == []
    cache.put(b"d", CacheEntry(None, ctx, True, ONE))  # evicts the clean a: nothing written
    assert written == [[b"b", b"a", b"c"]]
    cache.flush()
    assert written[-1] == [b"d"] and cache.get(b"d") is None, "a flushed tombstone leaves the cache"


def test_rewriting_a_dirty_key_moves_it_to_the_end_of_the_flush_order() -> None:
    written: list[list[bytes]] = []
    cache = NamedCache(10_000, lambda batch: written.append([k for k, _ in batch]))
    ctx = RecordContext(timestamp=0)
    for key in (b"a", b"b", b"c", b"a"):
        cache.put(key, CacheEntry(b"v", ctx, True, ONE))
    cache.flush()
    assert written == [[b"b", b"c", b"a"]]
    cache.flush()
    assert written == [[b"b", b"c", b"a"]], "nothing dirty, nothing written"


def test_a_clean_entry_never_replaces_a_dirty_one() -> None:
    cache = NamedCache(10_000, lambda batch: None)
    cache.put(b"a", CacheEntry(b"v", RecordContext(timestamp=0), True, ONE))
    with pytest.raises(AssertionError):
        cache.put(b"a", CacheEntry(b"v", None, False, ONE))
    with pytest.raises(ValueError):
        NamedCache(-1, lambda batch: None)


def test_an_entry_larger_than_the_cache_is_flushed_at_once() -> None:
    store, sink, _, _ = make(max_bytes=0)
    store.put(b"a", b"1")
    assert sink == [Record(b"a", b"1", 0)]
    assert len(store.cache) == 0
    store.close()


# --- the caching store ------------------------------------------------------------------------------------------


def test_writes_stay_in_the_cache_until_a_flush(cached: tuple[CachingKeyValueStore, list[Record], RecordContextHolder, list[FlushedEntry]]) -> None:
    store, sink, context, _ = cached
    context.current = RecordContext(timestamp=5, headers=(("h", b"1"),))
    store.put(b"a", b"1")
    context.current = RecordContext(timestamp=6)
    store.put_all([(b"b", b"2"), (b"a", b"3")])
    assert store.get(b"a") == b"3" and sink == []
    store.flush()
    assert sink == [Record(b"b", b"2", 6), Record(b"a", b"3", 6)]
    assert store.inner.get(b"a") == b"3"


def test_a_flushed_write_keeps_its_own_context(cached: tuple[CachingKeyValueStore, list[Record], RecordContextHolder, list[FlushedEntry]]) -> None:
    store, sink, context, _ = cached
    context.current = RecordContext(timestamp=5)
    store.delete(b"a")
    context.current = RecordContext(timestamp=9)
    store.flush()
    assert sink == [Record(b"a", None, 5)]
    assert context.current.timestamp == 9, "the context is restored after the flush"


def test_reads_cache_clean_entries(cached: tuple[CachingKeyValueStore, list[Record], RecordContextHolder, list[FlushedEntry]]) -> None:
    store, sink, _, _ = cached
    store.inner.put(b"x", b"below")
    sink.clear()
    assert store.get(b"x") == b"below"
    entry = store.cache.get(b"x")
    assert entry is not None and not entry.dirty and entry.context is None
    store.flush()
    assert sink == [], "a clean entry is never written back"


def test_put_if_absent_and_delete_read_through_the_cache(cached: tuple[CachingKeyValueStore, list[Record], RecordContextHolder, list[FlushedEntry]]) -> None:
    store, sink, _, _ = cached
    assert store.put_if_absent(b"a", b"1") is None
    assert store.put_if_absent(b"a", b"2") == b"1"
    assert store.delete(b"a") == b"1"
    assert store.get(b"a") is None
    assert store.delete(b"a") is None
    store.flush()
    assert sink == [Record(b"a", None, 0)]


def test_null_keys_are_refused_before_anything_is_cached(cached: tuple[CachingKeyValueStore, list[Record], RecordContextHolder, list[FlushedEntry]]) -> None:
    store, _, _, _ = cached
    for call in (lambda: store.put(None, b"v"), lambda: store.get(None), lambda: store.delete(None),  # type: ignore[arg-type]
                 lambda: store.put_if_absent(None, b"v"), lambda: store.put_all([(b"a", b"1"), (None, b"2")])):  # type: ignore[arg-type, list-item]
        with pytest.raises(NullKeyError):
            call()
    assert len(store.cache) == 0


@pytest.mark.parametrize(("key", "value", "argument"), [(1 << 40, b"v", "key"), ("k", b"v", "key"),
                                                         (b"k", "v", "value"), (b"k", 1 << 40, "value")],
                         ids=["huge-int-key", "str-key", "str-value", "huge-int-value"])
def test_keys_and_values_that_are_not_bytes_are_refused_before_anything_is_cached(
        cached: tuple[CachingKeyValueStore, list[Record], RecordContextHolder, list[FlushedEntry]],
        key: Any, value: Any, argument: str) -> None:
    """KV-26: the cache never sizes (``entry_size``) or keeps a key or value that is not bytes: an
    InvalidArgumentError naming it, and nothing cached, stored or logged, even after a flush."""
    store, sink, _, _ = cached
    writes: list[Callable[[], object]] = [lambda: store.put(key, value), lambda: store.put_all([(key, value)]),
                                          lambda: store.put_if_absent(key, value)]
    if argument == "key":
        writes += [lambda: store.delete(key), lambda: store.get(key)]
    for write in writes:
        with pytest.raises(InvalidArgumentError) as info:
            write()
        assert info.value.argument == argument
    with pytest.raises(InvalidArgumentError):
        store.range("a", b"z")  # type: ignore[arg-type]
    store.flush()
    assert store.cache.size_bytes == 0 and sink == [] and list(store.all()) == []


def test_tombstones_with_and_without_a_flush_listener() -> None:
    papi, papi_sink, _, _ = make()
    dsl, dsl_sink, _, forwarded = make(listener=True)
    for store in (papi, dsl):
        store.put(b"a", b"1")
        store.delete(b"a")
        store.delete(b"b")
        store.flush()
    assert papi_sink == [Record(b"a", None, 0), Record(b"b", None, 0)]
    assert dsl_sink == [] and forwarded == []
    dsl.put(b"c", b"1")
    dsl.flush()
    dsl.delete(b"c")
    dsl.flush()
    assert dsl_sink == [Record(b"c", b"1", 0), Record(b"c", None, 0)]
    assert [(f.key, f.new_value, f.old_value) for f in forwarded] == [(b"c", b"1", None), (b"c", None, None)]


def test_old_values_are_forwarded_when_asked_for() -> None:
    """CachingInMemoryKeyValueStoreTest.shouldForwardOldValuesWhenEnabled."""
    store, _, _, forwarded = make(listener=True, old_values=True)
    store.put(b"1", b"a")
    store.flush()
    store.put(b"1", b"b")
    store.put(b"1", b"c")
    store.flush()
    store.put(b"1", None)
    store.flush()
    assert [(f.new_value, f.old_value) for f in forwarded] == [(b"a", None), (b"c", b"a"), (None, b"c")]
    forwarded.clear()
    for value in (b"a", b"b", None):
        store.put(b"1", value)
    store.flush()
    assert forwarded == []


def test_iterators_merge_cache_and_store(cached: tuple[CachingKeyValueStore, list[Record], RecordContextHolder, list[FlushedEntry]]) -> None:
    store, _, _, _ = cached
    store.put_all([(b"a", b"1"), (b"b", b"2"), (b"c", b"3"), (b"d", b"4")])
    store.flush()
    store.delete(b"a")
    store.put(b"c", b"33")
    store.put(b"e", b"5")
    expected = [(b"b", b"2"), (b"c", b"33"), (b"d", b"4"), (b"e", b"5")]
    assert list(store.all()) == expected
    assert list(store.reverse_all()) == expected[::-1]
    assert list(store.range(b"a", b"c")) == expected[:2]
    assert list(store.reverse_range(b"b", b"d")) == expected[:3][::-1]
    assert list(store.prefix_scan(b"c")) == [(b"c", b"33")]
    iterator = store.all()
    assert iterator.peek_next_key() == b"b"
    assert next(iterator) == (b"b", b"2")
    iterator.close()
    with pytest.raises(InvalidStateStoreError):
        next(iterator)


def test_inverted_ranges_are_empty_and_warned(cached: tuple[CachingKeyValueStore, list[Record], RecordContextHolder, list[FlushedEntry]],
                                              caplog: pytest.LogCaptureFixture) -> None:
    store, _, _, _ = cached
    store.put(b"\x01", b"1")
    with caplog.at_level(logging.WARNING, logger="kstate.stores"):
        assert list(store.range(b"\x02", b"\x01")) == []
        assert list(store.reverse_range(b"\x02", b"\x01")) == []
    assert sum("invalid key range: from > to" in r.message for r in caplog.records) >= 2


def test_cached_prefix_scans_need_an_incrementable_prefix(cached: tuple[CachingKeyValueStore, list[Record], RecordContextHolder, list[FlushedEntry]]) -> None:
    store, _, _, _ = cached
    store.put(b"\xff", b"1")
    for prefix in (b"", b"\xff", b"\xff\xff"):
        with pytest.raises(Exception) as error:
            list(store.prefix_scan(prefix))
        assert isinstance(error.value, (EncodeError, IndexError))


def test_approximate_count_ignores_the_cache() -> None:
    store, _, _, _ = make()
    store.put_all([(b"a", b"1"), (b"b", b"2")])
    assert store.approximate_num_entries() == 0
    store.flush()
    assert store.approximate_num_entries() == 2


def test_commit_flushes_before_committing_offsets(tmp_path: Path) -> None:
    store, sink, _, _ = make(Backend.ROCKSDB, tmp=tmp_path)
    store.put(b"a", b"1")
    store.commit({TopicPartition("app-s-changelog", 0): 0})
    assert sink == [Record(b"a", b"1", 0)]
    assert store.committed_offset(TopicPartition("app-s-changelog", 0)) == 0
    store.put(b"b", b"2")
    store.drop_cache()
    store.close()
    assert sink == [Record(b"a", b"1", 0)], "dropped dirty entries are never written"


def test_close_flushes_and_closed_stores_refuse(tmp_path: Path) -> None:
    store, sink, _, _ = make(Backend.ROCKSDB, tmp=tmp_path)
    store.put(b"a", b"1")
    store.close()
    assert sink == [Record(b"a", b"1", 0)] and not store.is_open
    for call in (lambda: store.get(b"a"), lambda: store.put(b"a", b"1"), lambda: list(store.all()),
                 lambda: store.approximate_num_entries(), lambda: store.flush()):
        with pytest.raises(InvalidStateStoreError):
            call()
    store.close()


def test_restore_goes_below_the_cache() -> None:
    store, sink, _, _ = make()
    store.restore_batch([(b"a", b"1")])
    assert len(store.cache) == 0 and sink == []
    assert store.get(b"a") == b"1"


OPS = st.lists(
    st.one_of(
        st.tuples(st.just("put"), st.sampled_from([b"a", b"b", b"c", b"d"]), st.none() | st.binary(min_size=1, max_size=3)),
        st.tuples(st.just("delete"), st.sampled_from([b"a", b"b", b"c", b"d"]), st.none()),
        st.tuples(st.just("get"), st.sampled_from([b"a", b"b", b"c", b"d"]), st.none()),
        st.tuples(st.just("flush"), st.just(b""), st.none()),
    ),
    max_size=30,
)


@settings(max_examples=60, deadline=None)
@given(ops=OPS, max_bytes=st.sampled_from([0, ONE, 2 * ONE + 10, 5 * ONE, DEFAULT_CACHE_MAX_BYTES]))
def test_the_cache_is_invisible_to_readers_and_the_log_converges(ops: list[tuple[str, bytes, bytes | None]], max_bytes: int) -> None:
    """Reads equal a dict's; after a flush, the store below and the last logged value per key equal it too."""
    store, sink, _, _ = make(max_bytes=max_bytes)
    model: dict[bytes, bytes] = {}
    for op, key, value in ops:
        if op == "put":
            store.put(key, value)
            if value is None:
                model.pop(key, None)
            else:
                model[key] = value
        elif op == "delete":
            assert store.delete(key) == model.pop(key, None)
        elif op == "get":
            assert store.get(key) == model.get(key)
        else:
            store.flush()
        assert list(store.all()) == sorted(model.items())
        assert list(store.reverse_all()) == sorted(model.items(), reverse=True)
    store.flush()
    assert list(store.inner.all()) == sorted(model.items())
    last: dict[bytes, bytes | None] = {}
    for record in sink:
        last[record.key] = record.value
    assert {k: v for k, v in last.items() if v is not None} == model
