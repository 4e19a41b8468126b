"""The record cache over a key-value bytes store: Kafka's ``CachingKeyValueStore`` with its ``NamedCache``.

Writes land in the cache with the record context of the write and reach the store below (normally the
change-logging layer) only when the cache is flushed or a dirty entry is evicted; so only the last write
per key between two flushes is stored and logged (spec/caching.md, CACHE-*). One cache per store: the
thread cache's size limit is this store's limit.
"""

from __future__ import annotations

import bisect
import logging
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from kstate.codecs.primitives import increment
from kstate.stores.api import (
    InvalidStateStoreError,
    KeyValueBytesStore,
    KeyValueIterator,
    RecordContext,
    TopicPartition,
    WriteChecking,
)
from kstate.stores.kv import INVALID_RANGE_WARNING
from kstate.stores.life import Op, OpClass, check_state, life_of
from kstate.stores.surface import RecordContextHolder, check_bound, check_value, require_key
from kstate.stores.wrapping import WrappedKeyValueBytesStore

#: The logger of every store layer (KV-10).
log = logging.getLogger("kstate.stores")

#: ``statestore.cache.max.bytes`` default: 10 MiB.
DEFAULT_CACHE_MAX_BYTES = 10 * 1024 * 1024
#: ``LRUNode.size``: the key, then 8 bytes each for the entry, previous and next references.
_NODE_OVERHEAD = 24
#: ``LRUCacheEntry``: 1 for the dirty flag; ``ProcessorRecordContext``: timestamp 8, offset 8, partition 4.
_ENTRY_OVERHEAD = 1 + 8 + 8 + 4


def _java_chars(text: str) -> int:
    """``String.toCharArray().length``: UTF-16 code units."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def entry_size(key: bytes, value: bytes | None, context: RecordContext | None) -> int:
    """The bytes Kafka counts for one cached entry (CACHE-6); a clean entry has no topic and no headers."""
    size = len(key) + _NODE_OVERHEAD + _ENTRY_OVERHEAD + (0 if value is None else len(value))
    if context is not None:
        size += _java_chars(context.topic)
        for header_key, header_value in context.headers:
            size += _java_chars(header_key) + (0 if header_value is None else len(header_value))
    return size


@dataclass
class CacheEntry:
    """A cached value (None = tombstone) with the record context of the write that put it (None if clean)."""

    value: bytes | None
    context: RecordContext | None
    dirty: bool
    size: int


@dataclass(frozen=True)
class FlushedEntry:
    """What a flush listener receives: the key, the new value, the old value (if asked for), the write's context."""

    key: bytes
    new_value: bytes | None
    old_value: bytes | None
    context: RecordContext


FlushListener = Callable[[FlushedEntry], None]


class NamedCache:
    """LRU entries of one store, with the order in which dirty keys were last written (CACHE-3, CACHE-6)."""

    def __init__(self, max_bytes: int, write_back: Callable[[list[tuple[bytes, CacheEntry]]], None]) -> None:
        if max_bytes < 0:
            raise ValueError("cache size must not be negative")
        self.max_bytes = max_bytes
        self.size_bytes = 0
        self._write_back = write_back
        self._entries: dict[bytes, CacheEntry] = {}
        self._recency: OrderedDict[bytes, None] = OrderedDict()  # least recently used first
        self._dirty: OrderedDict[bytes, None] = OrderedDict()  # in order of the latest dirty write
        # Every cached key in byte order, for the ranges (Kafka's cache is a TreeMap): sorted again by the first
        # range after a key was first cached (None until then: a put pays nothing); removed keys stay until then,
        # and ``keys_between`` skips them (issue 35).
        self._sorted_keys: list[bytes] | None = None

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: bytes) -> CacheEntry | None:
        """The entry for ``key``, refreshing its recency on a hit."""
        entry = self._entries.get(key)
        if entry is not None:
            self._recency.move_to_end(key)
        return entry

    def put(self, key: bytes, entry: CacheEntry) -> None:
        """Insert or replace, then evict while over the limit; an evicted dirty entry flushes everything (CACHE-6)."""
        if not entry.dirty and key in self._dirty:
            raise AssertionError("a clean entry never replaces a dirty one")  # Kafka: IllegalStateException
        previous = self._entries.get(key)
        if previous is not None:
            self.size_bytes -= previous.size
        else:
            self._sorted_keys = None
        self._entries[key] = entry
        self._recency[key] = None
        self._recency.move_to_end(key)
        if entry.dirty:
            self._dirty.pop(key, None)
            self._dirty[key] = None
        self.size_bytes += entry.size
        while self.size_bytes > self.max_bytes and self._entries:
            self._evict_eldest()

    def _evict_eldest(self) -> None:
        key, _ = self._recency.popitem(last=False)
        entry = self._entries.pop(key)
        self.size_bytes -= entry.size
        if entry.dirty:
            self.flush(evicted=(key, entry))

    def flush(self, evicted: tuple[bytes, CacheEntry] | None = None) -> None:
        """Write back every dirty entry, ``evicted`` first; mark them clean and drop flushed tombstones (CACHE-3)."""
        if not self._dirty:
            return
        batch: list[tuple[bytes, CacheEntry]] = []
        if evicted is not None:
            batch.append(evicted)
            self._dirty.pop(evicted[0], None)
        tombstones: list[bytes] = []
        for key in self._dirty:
            entry = self._entries[key]
            batch.append((key, entry))
            entry.dirty = False
            if entry.value is None:
                tombstones.append(key)
        # Cleared before writing back: the write-back may come back into the cache (Kafka's re-entrancy note).
        self._dirty.clear()
        self._write_back(batch)
        for key in tombstones:
            self._remove(key)

    def _remove(self, key: bytes) -> None:
        entry = self._entries.pop(key, None)
        if entry is None:
            return
        self._recency.pop(key, None)
        self._dirty.pop(key, None)
        self.size_bytes -= entry.size

    def keys_between(self, from_key: bytes | None, to_key: bytes | None, to_inclusive: bool = True) -> list[bytes]:
        """The cached keys in ``[from_key, to_key]`` (or ``[from_key, to_key)``), sorted, copied now (CACHE-7)."""
        keys, entries = self._sorted_keys, self._entries
        if keys is None or len(keys) > 2 * len(entries) + 64:  # a key cached since, or mostly keys removed since
            keys = self._sorted_keys = sorted(entries)
        start = 0 if from_key is None else bisect.bisect_left(keys, from_key)
        if to_key is None:
            stop = len(keys)
        else:
            stop = bisect.bisect_right(keys, to_key) if to_inclusive else bisect.bisect_left(keys, to_key)
        return [key for key in keys[start:stop] if key in entries]

    def clear(self) -> None:
        self._entries.clear()
        self._sorted_keys = None
        self._recency.clear()
        self._dirty.clear()
        self.size_bytes = 0

    def dirty_keys(self) -> list[bytes]:
        return list(self._dirty)


class MergedCacheStoreIterator:
    """The cached entries of a range merged over the store's: the cache wins, cached tombstones hide (CACHE-7).

    The cache side iterates the keys cached when the iterator was created and reads each entry when it is
    reached, as ``ThreadCache.MemoryLRUCacheBytesIterator`` does (a key evicted meanwhile is skipped). The merge
    is one generator (:meth:`_merge`): ``next`` and a ``for`` loop both resume it, a loop directly while nothing is
    peeked (one Python frame per row, issue 35).
    """

    def __init__(self, cache: NamedCache, cache_keys: list[bytes], store_iterator: KeyValueIterator, reverse: bool) -> None:
        self._store = store_iterator
        self._rows: Iterator[tuple[bytes, bytes]] = self._merge(
            cache.get, reversed(cache_keys) if reverse else cache_keys, store_iterator, reverse)
        self._next: tuple[bytes, bytes] | None = None
        self._closed = False

    @staticmethod
    def _merge(cache_get: Callable[[bytes], CacheEntry | None], cache_keys: Iterable[bytes],
               store_iterator: KeyValueIterator, reverse: bool) -> Iterator[tuple[bytes, bytes]]:
        rows = iter(store_iterator)  # the store's own rows (its generator while nothing is peeked)
        stored = next(rows, None)
        for key in cache_keys:
            entry = cache_get(key)
            if entry is None:
                continue  # evicted since the iterator was created
            # The store's entries before the cached key, then the cached one shadowing the store's equal key.
            if reverse:
                while stored is not None and stored[0] > key:
                    yield stored
                    stored = next(rows, None)
            else:
                while stored is not None and stored[0] < key:
                    yield stored
                    stored = next(rows, None)
            if stored is not None and stored[0] == key:
                stored = next(rows, None)
            if entry.value is not None:
                yield key, entry.value
        if stored is not None:
            yield stored
            yield from rows

    def _refuse_if_closed(self) -> None:
        """The iterator's own life, not the store's: a closed iterator refuses reads (KV-12)."""
        if self._closed:
            raise InvalidStateStoreError("the iterator is closed")

    def __iter__(self) -> Iterator[tuple[bytes, bytes]]:
        if self._closed or self._next is not None:
            return self
        return self._rows

    def __next__(self) -> tuple[bytes, bytes]:
        if self._closed:
            self._refuse_if_closed()
        item = self._next
        if item is None:
            return next(self._rows)
        self._next = None
        return item

    def peek_next_key(self) -> bytes | None:
        self._refuse_if_closed()
        if self._next is None:
            self._next = next(self._rows, None)
        return None if self._next is None else self._next[0]

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._next = None
            close_rows = getattr(self._rows, "close", None)
            if close_rows is not None:
                close_rows()  # a loop over the rows ends with its iterator
            self._store.close()


class _EmptyIterator:
    def __init__(self) -> None:
        self._closed = False

    def __iter__(self) -> _EmptyIterator:
        return self

    def __next__(self) -> tuple[bytes, bytes]:
        if self._closed:
            raise InvalidStateStoreError("the iterator is closed")
        raise StopIteration

    def peek_next_key(self) -> bytes | None:
        if self._closed:
            raise InvalidStateStoreError("the iterator is closed")
        return None

    def close(self) -> None:
        self._closed = True


class CachingKeyValueStore(WrappedKeyValueBytesStore):
    """Kafka's ``CachingKeyValueStore`` over ``inner`` (CACHE-1 to CACHE-10).

    ``context`` is shared with the layers below: while flushing, each entry's captured context is made
    current so that the change-logging layer logs the timestamp and headers of the write that put it.
    With a ``flush_listener`` (a DSL ``KTable`` store) a tombstone for a key absent below is dropped (CACHE-5).
    Restore and the offsets are the wrapped store's: restore bypasses the cache (RST-4).
    """

    def __init__(
        self,
        inner: KeyValueBytesStore,
        context: RecordContextHolder,
        *,
        max_bytes: int = DEFAULT_CACHE_MAX_BYTES,
        flush_listener: FlushListener | None = None,
        send_old_values: bool = False,
    ) -> None:
        super().__init__(inner)
        self.context = context
        self.flush_listener = flush_listener
        self.send_old_values = send_old_values
        self.cache = NamedCache(max_bytes, self._write_back)
        # Resolved once: every write asks the layer below whether it would refuse it (CL-1).
        self._check_below: Callable[[bytes, bytes | None], None] | None = (
            inner.check_write if isinstance(inner, WriteChecking) else None)

    def _allow(self, op: OpClass) -> None:
        """The life table's answer for the store below's state: the layer has no life of its own, and refuses
        what a closed store refuses, flush and commit included (CACHE-9, KV-12)."""
        check_state(life_of(self.inner), op, self.name)

    @staticmethod
    def _require_key(key: bytes | None) -> bytes:
        """A null key is Kafka's NullPointerException (KV-3); a key that is not bytes a typed error naming it,
        before the cache sizes or stores it (KV-26)."""
        return require_key(key)

    # --- flushing ---------------------------------------------------------------------------------------

    def _write_back(self, batch: list[tuple[bytes, CacheEntry]]) -> None:
        for key, entry in batch:
            context = entry.context
            assert context is not None, "only dirty entries are written back"
            old_value: bytes | None = None
            if self.flush_listener is not None and (entry.value is None or self.send_old_values):
                old_value = self.inner.get(key)
                if entry.value is None and old_value is None:
                    continue  # absent below and deleted in the cache: nothing to store or forward (CACHE-5)
            current = self.context.current
            self.context.current = context
            try:
                self.inner.put(key, entry.value)
                if self.flush_listener is not None:
                    self.flush_listener(
                        FlushedEntry(key, entry.value, old_value if self.send_old_values else None, context)
                    )
            finally:
                self.context.current = current

    # --- writes -----------------------------------------------------------------------------------------

    def _check_write(self, key: bytes, value: bytes | None) -> None:
        # A write the layer below would refuse at flush is refused now, before the cache takes it, so
        # that it reaches neither the store nor the changelog (CL-1): the flush runs with this context.
        check = self._check_below
        if check is not None:
            check(key, value)

    def _put_internal(self, key: bytes, value: bytes | None) -> None:
        value = check_value(value)  # a value that is not bytes is refused before the cache sizes it (KV-26)
        self._check_write(key, value)
        context = self.context.current
        self.cache.put(key, CacheEntry(value, context, True, entry_size(key, value, context)))

    def put(self, key: bytes, value: bytes | None) -> None:
        key = self._require_key(key)
        self._allow(Op.WRITE)
        self._put_internal(key, value)

    def put_if_absent(self, key: bytes, value: bytes | None) -> bytes | None:
        key = self._require_key(key)
        self._allow(Op.WRITE)
        previous = self._get_internal(key)
        if previous is None:
            self._put_internal(key, value)
        return previous

    def put_all(self, entries: Sequence[tuple[bytes, bytes | None]]) -> None:
        # Every key is checked before any is cached, as the metered layer above does (KV-3).
        checked = [(self._require_key(key), check_value(value)) for key, value in entries]
        self._allow(Op.WRITE)
        for key, value in checked:
            self._check_write(key, value)  # all before any is cached: a refused putAll caches nothing
        for key, value in checked:
            self._put_internal(key, value)

    def delete(self, key: bytes) -> bytes | None:
        key = self._require_key(key)
        self._allow(Op.WRITE)
        previous = self._get_internal(key)
        self._put_internal(key, None)
        return previous

    # --- reads ------------------------------------------------------------------------------------------

    def _get_internal(self, key: bytes) -> bytes | None:
        entry = self.cache.get(key)
        if entry is not None:
            return entry.value
        value = self.inner.get(key)
        if value is not None:
            self._cache_clean(key, value)
        return value

    def _cache_clean(self, key: bytes, value: bytes) -> None:
        # A value read from below is cached clean, sized without any record context (CACHE-6).
        self.cache.put(key, CacheEntry(value, None, False, entry_size(key, value, None)))

    def get(self, key: bytes) -> bytes | None:
        key = self._require_key(key)
        self._allow(Op.READ)
        return self._get_internal(key)

    def _invalid_range(self, from_key: bytes | None, to_key: bytes | None) -> bool:
        if from_key is not None and to_key is not None and from_key > to_key:
            log.warning(INVALID_RANGE_WARNING)
            return True
        return False

    def _merged_range(self, from_key: bytes | None, to_key: bytes | None, reverse: bool) -> KeyValueIterator:
        from_key, to_key = check_bound("from", from_key), check_bound("to", to_key)
        if self._invalid_range(from_key, to_key):
            return _EmptyIterator()
        self._allow(Op.READ)
        store_iterator = self.inner.reverse_range(from_key, to_key) if reverse else self.inner.range(from_key, to_key)
        return MergedCacheStoreIterator(self.cache, self.cache.keys_between(from_key, to_key), store_iterator, reverse)

    def range(self, from_key: bytes | None, to_key: bytes | None) -> KeyValueIterator:
        return self._merged_range(from_key, to_key, False)

    def reverse_range(self, from_key: bytes | None, to_key: bytes | None) -> KeyValueIterator:
        return self._merged_range(from_key, to_key, True)

    def all(self) -> KeyValueIterator:
        self._allow(Op.READ)
        store_iterator = self.inner.all()
        return MergedCacheStoreIterator(self.cache, self.cache.keys_between(None, None), store_iterator, False)

    def reverse_all(self) -> KeyValueIterator:
        self._allow(Op.READ)
        store_iterator = self.inner.reverse_all()
        return MergedCacheStoreIterator(self.cache, self.cache.keys_between(None, None), store_iterator, True)

    def prefix_scan(self, prefix: bytes) -> KeyValueIterator:
        self._allow(Op.READ)
        store_iterator = self.inner.prefix_scan(prefix)
        try:
            # Bytes.increment, not incrementWithoutOverflow: empty and all-FF prefixes are refused (CACHE-8).
            upper = increment(prefix)
        except Exception:
            store_iterator.close()
            raise
        return MergedCacheStoreIterator(self.cache, self.cache.keys_between(prefix, upper, False), store_iterator, False)

    def approximate_num_entries(self) -> int:
        self._allow(Op.READ)
        return self.inner.approximate_num_entries()

    # --- lifecycle --------------------------------------------------------------------------------------

    def flush_cache(self) -> None:
        """``flushCache``: write back the dirty entries without flushing the store below."""
        self._allow(Op.COMMIT)
        self.cache.flush()

    def flush(self) -> None:
        self.flush_cache()
        super().flush()

    def commit(self, changelog_offsets: Mapping[TopicPartition, int | None]) -> None:
        """The cache first, so that the offsets committed below cover every write before the commit (CACHE-9)."""
        self.flush_cache()
        super().commit(changelog_offsets)

    def close(self) -> None:
        try:
            if self.inner.is_open:
                self.cache.flush()
        finally:
            self.cache.clear()
            self.inner.close()

    def drop_cache(self) -> None:
        """Forget every cached entry, dirty ones included: what a crash does to the cache (CACHE-9)."""
        self.cache.clear()
