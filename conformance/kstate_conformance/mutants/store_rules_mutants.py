"""Mutants of the store-level rules: the record cache, commit ordering, restore, store-managed offsets and
legacy offset files, and the change-logging layer (CACHE-*, RST-*, OFF-*, CL-*).

Each replaces ``store.open`` only, with a :class:`StoreBuilder` one of whose layers carries one realistic
porting bug; the other ``store.*`` operations are the reference's. Their tests run through the neutral
operations (``tests/test_store_rules.py`` first, then the whole suite).
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

from kstate.codecs import changelog as cl
from kstate.codecs.offsets import OFFSET_UNKNOWN, OFFSETS_COLUMN_FAMILY, POSITION_KEY, STATUS_KEY, encode_status
from kstate.codecs.position import Position
from kstate.codecs.store_types import BUILT_TYPES, WINDOW_TYPES, StoreType
from kstate.errors import KStateError
from kstate.ops.store_ops import DEFAULT_BUILDER, StoreBuilder, make_open_handler
from kstate.storage_files import read_checkpoint_file, task_checkpoint_path, write_checkpoint_file, write_position_file
from kstate.stores.api import Backend, KeyValueBytesStore, RecordContext, StateStore, TopicPartition
from kstate.stores.caching import CacheEntry, CachingKeyValueStore, FlushListener, NamedCache, entry_size
from kstate.stores.changelogging import ChangeLoggingKeyValueBytesStore, ChangelogSink, RecordContextHolder
from kstate.stores.column_families import DualColumnFamilyAccessor
from kstate.stores.engine import RocksDBEngine, WriteBatch
from kstate.stores.factory import open_bytes_store, task_directory
from kstate.stores.families import store_classes
from kstate.stores.life import Op
from kstate.stores.restore import RestoreResult, restore
from kstate.stores.surface import DEFAULT_ROCKSDB_OPTIONS, RocksDBOptions
from kstate.stores.type_check import check_store_type_on_disk
from kstate_conformance.adapter import Handler
from kstate_conformance.mutants import Change, mutant, registering
from kstate_conformance.mutants.kv_mutants import opening, rocksdb_classes_with

FAMILY = "store_rules"


def _rocksdb_with(mixin: type) -> dict[str, Handler]:
    """``store.open`` whose RocksDB key-value stores of every type have ``mixin`` in front of their class."""
    return _open_with(replace(DEFAULT_BUILDER, open_bytes_store=opening(rocksdb_classes_with(mixin), options_bypass=True)))


def _open_with(builder: StoreBuilder) -> dict[str, Handler]:
    return {"store.open": make_open_handler(builder)}


def _caching_with(cache_class: type[NamedCache] | None = None,
                  store_class: type[CachingKeyValueStore] = CachingKeyValueStore) -> dict[str, Handler]:
    """``store.open`` whose caching layer is ``store_class`` over a ``cache_class`` record cache."""

    def layer(inner: KeyValueBytesStore, context: RecordContextHolder, max_bytes: int,
              listener: FlushListener | None) -> CachingKeyValueStore:
        store = store_class(inner, context, max_bytes=max_bytes, flush_listener=listener)
        if cache_class is not None:
            store.cache = cache_class(max_bytes, store._write_back)
        return store

    return _open_with(replace(DEFAULT_BUILDER, caching_layer=layer))


def _flagged_mutant(broken: type, name: str, description: str, rules: tuple[str, ...], **flags: bool) -> None:
    """Register the mutant ``name``: the RocksDB stores with the configurable ``broken`` mixin, ``flags`` set, in
    front of their class (one bug of several that one broken piece of code can have)."""
    _rocksdb_mutant(name, description, rules)(type(f"{broken.__name__}_{'_'.join(flags)}", (broken,), flags))


def _building(field: str) -> Callable[..., Callable[[Change], Change]]:
    """A decorator registering a mutant whose store builder has the decorated function as its ``field``."""
    return registering(FAMILY, lambda change: _open_with(replace(DEFAULT_BUILDER, **{field: change})))


#: The decorated record cache, caching store, RocksDB store mixin, restorer or change-logging layer of a mutant.
_cache_mutant = registering(FAMILY, lambda cache_class: _caching_with(cache_class))
_caching_store_mutant = registering(FAMILY, lambda store_class: _caching_with(store_class=store_class))
_rocksdb_mutant = registering(FAMILY, _rocksdb_with)
_restorer_mutant = _building("restorer")
_logging_mutant = _building("logging_layer")


# --- CACHE-6: size accounting and eviction ---------------------------------------------------------------------------


@_cache_mutant("cache-evicts-at-limit", "the cache evicts when its size reaches the limit, not when it exceeds it",
               rules=("CACHE-6",))
class _EvictAtLimitCache(NamedCache):
    """Evicts once the cache *reaches* its limit (``>=``): a cache filled exactly to its limit evicts."""

    def put(self, key: bytes, entry: CacheEntry) -> None:
        super().put(key, entry)
        while self.size_bytes >= self.max_bytes and len(self):
            self._evict_eldest()


def _utf8_entry_size(key: bytes, value: bytes | None, context: Any) -> int:
    """The entry size with the topic and header keys counted in UTF-8 bytes (Python's ``len(s.encode())``)."""
    size = entry_size(key, value, None)
    if context is not None:
        size += len(context.topic.encode("utf-8"))
        for header_key, header_value in context.headers:
            size += len(header_key.encode("utf-8")) + (0 if header_value is None else len(header_value))
    return size


@_caching_store_mutant("cache-sizes-text-in-utf8", "the cache counts the topic and header keys in UTF-8 bytes, not "
                       "Java chars", rules=("CACHE-6",))
class _Utf8SizedStore(CachingKeyValueStore):
    def _put_internal(self, key: bytes, value: bytes | None) -> None:
        context = self.context.current
        self.cache.put(key, CacheEntry(value, context, True, _utf8_entry_size(key, value, context)))


@_caching_store_mutant("cache-sizes-text-in-code-points", "the cache counts the topic and header keys in code points, "
                       "not Java chars", rules=("CACHE-6",))
class _CodePointSizedStore(CachingKeyValueStore):
    """Counts the topic and header keys in code points (Python's ``len(str)``), not UTF-16 units."""

    def _put_internal(self, key: bytes, value: bytes | None) -> None:
        context = self.context.current
        size = entry_size(key, value, None) + len(context.topic)
        size += sum(len(k) + (0 if v is None else len(v)) for k, v in context.headers)
        self.cache.put(key, CacheEntry(value, context, True, size))


@_caching_store_mutant("cache-clean-entry-sized-with-context", "a clean entry cached by a read is sized with the "
                       "current context", rules=("CACHE-6",))
class _CleanEntriesWithContextStore(CachingKeyValueStore):
    """A value read from below is cached (clean) and sized with the reader's current record context."""

    def _cache_clean(self, key: bytes, value: bytes) -> None:
        self.cache.put(key, CacheEntry(value, None, False, entry_size(key, value, self.context.current)))


@_caching_store_mutant("cache-ignores-context-headers", "the cache does not count the record context's headers in an "
                       "entry's size", rules=("CACHE-6",))
class _HeaderBlindStore(CachingKeyValueStore):
    """Sizes entries without the context's headers (only the topic is counted)."""

    def _put_internal(self, key: bytes, value: bytes | None) -> None:
        context = self.context.current
        size = entry_size(key, value, replace(context, headers=()))
        self.cache.put(key, CacheEntry(value, context, True, size))


@_caching_store_mutant("cache-size-payload-only", "an entry's size is its key and value bytes only, without Kafka's "
                       "overheads", rules=("CACHE-6",))
class _PayloadOnlyStore(CachingKeyValueStore):
    """Counts only the key and value bytes: no node, entry or context overhead."""

    def _put_internal(self, key: bytes, value: bytes | None) -> None:
        size = len(key) + (0 if value is None else len(value))
        self.cache.put(key, CacheEntry(value, self.context.current, True, size))


@_cache_mutant("cache-eviction-writes-only-evicted", "evicting a dirty entry writes back that entry alone",
               rules=("CACHE-6",))
class _EvictOnlyTheEvictedCache(NamedCache):
    """Writes back only the evicted dirty entry, not every dirty entry."""

    def _evict_eldest(self) -> None:
        key, _ = self._recency.popitem(last=False)
        entry = self._entries.pop(key)
        self.size_bytes -= entry.size
        if entry.dirty:
            self._dirty.pop(key, None)
            entry.dirty = False
            self._write_back([(key, entry)])


# --- CACHE-1..5, 7..10 --------------------------------------------------------------------------------------------


@_caching_store_mutant("cache-reads-store-first", "reads ask the store below before the cache", rules=("CACHE-1",))
class _StoreFirstStore(CachingKeyValueStore):
    """``get`` asks the store below first and the cache only when the store has nothing."""

    def _get_internal(self, key: bytes) -> bytes | None:
        value = self.inner.get(key)
        if value is not None:
            return value
        entry = self.cache.get(key)
        return None if entry is None else entry.value


@_caching_store_mutant("cache-flush-time-context", "cached writes are logged with the context at flush time, not at "
                       "write time", rules=("CACHE-2",))
class _FlushTimeContextStore(CachingKeyValueStore):
    """Entries are written back with the context current at flush time, not the one of their write."""

    def _write_back(self, batch: list[tuple[bytes, CacheEntry]]) -> None:
        now = self.context.current
        super()._write_back([(key, replace(entry, context=now)) for key, entry in batch])


@_caching_store_mutant("cache-no-coalescing", "a rewrite of a dirty key flushes the cache first instead of replacing "
                       "the entry", rules=("CACHE-4",))
class _NoCoalescingStore(CachingKeyValueStore):
    """A second write to a dirty key first flushes the cache, so that no write is lost."""

    def _put_internal(self, key: bytes, value: bytes | None) -> None:
        if key in self.cache.dirty_keys():
            self.cache.flush()
        super()._put_internal(key, value)


@_caching_store_mutant("cache-listener-keeps-absent-tombstones", "with a flush listener, tombstones of absent keys "
                       "are still written", rules=("CACHE-5",))
class _ListenerBlindTombstonesStore(CachingKeyValueStore):
    """With a flush listener, tombstones of keys absent below are still stored and forwarded."""

    def _write_back(self, batch: list[tuple[bytes, CacheEntry]]) -> None:
        listener = self.flush_listener
        self.flush_listener = None
        try:
            super()._write_back(batch)
        finally:
            self.flush_listener = listener
        if listener is not None:
            from kstate.stores.caching import FlushedEntry

            for key, entry in batch:
                assert entry.context is not None
                listener(FlushedEntry(key, entry.value, None, entry.context))


@_caching_store_mutant("cache-iterator-tombstones-show-store", "forward iterators drop cached tombstones instead of "
                       "hiding the stored key", rules=("CACHE-7",))
class _TombstonesShowStore(CachingKeyValueStore):
    """Range iterators skip cached tombstones but let the store's value for that key through."""

    def all(self) -> Any:
        self._allow(Op.READ)
        live = [k for k in self.cache.keys_between(None, None) if (e := self.cache.get(k)) and e.value is not None]
        from kstate.stores.caching import MergedCacheStoreIterator

        return MergedCacheStoreIterator(self.cache, live, self.inner.all(), False)

    def range(self, from_key: bytes | None, to_key: bytes | None) -> Any:
        if self._invalid_range(from_key, to_key):
            return super().range(from_key, to_key)
        self._allow(Op.READ)
        live = [k for k in self.cache.keys_between(from_key, to_key) if (e := self.cache.get(k)) and e.value is not None]
        from kstate.stores.caching import MergedCacheStoreIterator

        return MergedCacheStoreIterator(self.cache, live, self.inner.range(from_key, to_key), False)


@_caching_store_mutant("cache-prefix-scan-without-overflow-check", "a cached prefix scan accepts prefixes "
                       "Bytes.increment refuses", rules=("CACHE-8",))
class _OverflowPrefixStore(CachingKeyValueStore):
    """A cached prefix scan bounds the cache with ``incrementWithoutOverflow``: all-FF prefixes are accepted."""

    def prefix_scan(self, prefix: bytes) -> Any:
        from kstate.codecs.primitives import increment_without_overflow
        from kstate.stores.caching import MergedCacheStoreIterator

        self._allow(Op.READ)
        upper = increment_without_overflow(prefix) if prefix else None
        keys = self.cache.keys_between(prefix, upper, False) if upper is not None else self.cache.keys_between(prefix, None)
        return MergedCacheStoreIterator(self.cache, keys, self.inner.prefix_scan(prefix), False)


@_caching_store_mutant("cache-commit-before-flush", "commit commits the store's offsets before flushing the cache",
                       rules=("CACHE-9",))
class _CommitThenFlushStore(CachingKeyValueStore):
    """``commit`` commits the offsets below first and flushes the cache afterwards."""

    def commit(self, changelog_offsets: Mapping[TopicPartition, int | None]) -> None:
        self.inner.commit(changelog_offsets)
        self.flush_cache()


@_caching_store_mutant("cache-commit-without-flush", "commit does not flush the cache (it expects an explicit flush "
                       "first)", rules=("CACHE-9",))
class _CommitWithoutFlushStore(CachingKeyValueStore):
    """``commit`` relies on the task having flushed: the cache is not flushed first."""

    def commit(self, changelog_offsets: Mapping[TopicPartition, int | None]) -> None:
        self._allow(Op.COMMIT)
        self.inner.commit(changelog_offsets)


@_caching_store_mutant("cache-counts-cached-entries", "approximateNumEntries adds the cache's entries to the store's",
                       rules=("CACHE-10",))
class _CountingCacheStore(CachingKeyValueStore):
    """``approximateNumEntries`` adds the cached entries to the store's count."""

    def approximate_num_entries(self) -> int:
        return super().approximate_num_entries() + len(self.cache)


# --- RST-* ------------------------------------------------------------------------------------------------------


@_restorer_mutant("restore-first-record-wins", "restore keeps the first record of a key in each batch, not the last",
                  rules=("RST-1",))
def _first_wins_restore(store: KeyValueBytesStore, store_type: StoreType, records: Sequence[cl.ChangelogRecord],
                        batch_size: int, after_batch: Callable[[RestoreResult], None] | None) -> RestoreResult:
    """Deduplicates each batch keeping a key's FIRST record ("already restored" check)."""
    kept: list[cl.ChangelogRecord] = []
    for start in range(0, len(records), batch_size):
        seen: set[bytes] = set()
        for record in records[start:start + batch_size]:
            if record.key not in seen:
                seen.add(record.key)
                kept.append(record)
    return restore(store, store_type, kept, batch_size=batch_size, after_batch=after_batch)


@_restorer_mutant("restore-through-put", "restore writes each record with put, through the cache and the changelog",
                  rules=("RST-4",))
def _logged_restore(store: KeyValueBytesStore, store_type: StoreType, records: Sequence[cl.ChangelogRecord],
                    batch_size: int, after_batch: Callable[[RestoreResult], None] | None) -> RestoreResult:
    """Restores through the store's ordinary ``put`` (so through the cache and the change-logging layer)."""
    result = RestoreResult(0, 0)
    for start in range(0, len(records), batch_size):
        batch = records[start:start + batch_size]
        for record in batch:
            store.put(record.key, cl.restore_value(store_type, record))
        result = RestoreResult(result.records + len(batch), result.batches + 1)
        if after_batch is not None:
            after_batch(result)
    return result


@_restorer_mutant("restore-rebuild-as-in-place-upgrade", "a timestamped store rebuilt from the changelog gets "
                  "timestamp -1 like an in-place upgrade", rules=("RST-7", "RST-2"))
def _legacy_stamped_restore(store: KeyValueBytesStore, store_type: StoreType, records: Sequence[cl.ChangelogRecord],
                            batch_size: int, after_batch: Callable[[RestoreResult], None] | None) -> RestoreResult:
    """A timestamped store rebuilt from a changelog gets the in-place conversion's -1, as if upgraded in place."""
    if StoreType(store_type) is StoreType.TIMESTAMPED_KV:
        records = [replace(r, timestamp=-1) for r in records]
    return restore(store, store_type, records, batch_size=batch_size, after_batch=after_batch)


# --- OFF-5, OFF-6, OFF-7: the offsets family of an open store -------------------------------------------------------


@_rocksdb_mutant("commit-without-position", "commit writes the offsets only; the position is written at close",
                 rules=("OFF-5",))
class _PositionAtCloseOnly:
    """``commit`` writes the offsets but leaves the position for ``close`` to write."""

    def commit(self, changelog_offsets: Mapping[TopicPartition, int | None]) -> None:
        offsets_store = self._instance.offsets  # type: ignore[attr-defined]
        if offsets_store is None:
            super().commit(changelog_offsets)  # type: ignore[misc]
            return
        self._allow(Op.COMMIT)  # type: ignore[attr-defined]
        before = offsets_store.image.get(POSITION_KEY)
        offsets = {(tp.topic, tp.partition): offset for tp, offset in changelog_offsets.items()}
        batch = offsets_store.commit_batch(offsets, self._position)  # type: ignore[attr-defined]
        batch.column_family(OFFSETS_COLUMN_FAMILY).pop(POSITION_KEY, None)
        image = offsets_store._image
        if before is None:
            image.pop(POSITION_KEY, None)
        else:
            image[POSITION_KEY] = before
        self._instance.staged.apply(batch)  # type: ignore[attr-defined]


def _reference_handler(name: str) -> Handler:
    """The reference's handler of operation ``name``, as the suite calls it."""
    from kstate.ops import load_all
    from kstate.ops.inputs import as_payload

    spec = load_all()[name]
    return lambda payload: spec.handler(as_payload(payload))


def _with_patched(name: str, patches: Mapping[str, Any]) -> Handler:
    """The reference's ``name`` run with ``patches`` (``module.attribute`` -> replacement) in place."""
    from unittest import mock

    handler = _reference_handler(name)

    def run(payload: Any) -> Any:
        with contextlib.ExitStack() as stack:
            for target, replacement in patches.items():
                stack.enter_context(mock.patch(target, replacement))
            return handler(payload)

    return run


def _patching(name: str, description: str, rules: tuple[str, ...], ops: tuple[str, ...],
              *targets: str) -> Callable[[Change], Change]:
    """Register the mutant ``name``: the reference's ``ops`` run with each of ``targets`` (``module.attribute``)
    replaced by the decorated function (a bug of one function the operations reach)."""

    def register(replacement: Change) -> Change:
        patches = dict.fromkeys(targets, replacement)
        mutant(name, description, FAMILY, rules=rules)(lambda: {op: _with_patched(op, patches) for op in ops})
        return replacement

    return register


def offsets_batch(offsets: Any, after: Mapping[bytes, bytes]) -> WriteBatch:
    """The writes that take a ``StoreOffsets``' image to ``after``, the image then taken as written: what a mutated
    batch method answers."""
    from kstate.stores.offsets import diff_batch

    batch = diff_batch(offsets._image, after)
    offsets._image = after
    return batch


@_patching("empty-commit-writes-no-position", "an empty commit wipes the offsets and the position and writes no "
           "position (Kafka 4.4.0 writes it again after wipeOffsets)", ("OFF-5", "OFF-4"), ("store.commit",),
           "kstate.stores.offsets.StoreOffsets.commit_batch")
def _commit_batch_writing_no_position(self: Any, offsets: Mapping[Any, int | None], position: Position) -> WriteBatch:
    # The old reading of OFF-5: an empty commit wipes the offsets and the position and writes no position.
    from kstate.codecs.offsets import commit_offsets, commit_position

    after = commit_offsets(self._image, offsets)
    return offsets_batch(self, commit_position(after, position) if offsets else after)


@_rocksdb_mutant("open-status-with-first-commit", "OPEN is written with the first commit, not at open",
                 rules=("OFF-6",))
class _OpenStatusWithFirstCommit:
    """OPEN is persisted with the first commit instead of at open: a crash before it goes unnoticed."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._status_pending = False
        if self._instance.offsets is not None:  # type: ignore[attr-defined]
            batch = WriteBatch()
            batch.delete(OFFSETS_COLUMN_FAMILY, STATUS_KEY)
            self.engine.write(batch)  # type: ignore[attr-defined]
            self._status_pending = True

    def commit(self, changelog_offsets: Mapping[TopicPartition, int | None]) -> None:
        super().commit(changelog_offsets)  # type: ignore[misc]
        if self._status_pending:
            batch = WriteBatch()
            batch.put(OFFSETS_COLUMN_FAMILY, STATUS_KEY, encode_status(True))
            self.engine.write(batch)  # type: ignore[attr-defined]
            self._status_pending = False


@_rocksdb_mutant("refused-open-writes-closed", "a refused open closes the store and writes CLOSED, though it never "
                 "opened it", rules=("OFF-7",))
class _RefusedOpenClosesCleanly:
    """A refused open closes the store the ordinary way, which writes CLOSED although it never opened it."""

    def __init__(self, name: str, task_dir: Any = None, **kwargs: Any) -> None:
        try:
            super().__init__(name, task_dir, **kwargs)  # type: ignore[call-arg]
        except KStateError:
            path = getattr(self, "path", None)
            if path is not None and Path(path).is_dir():
                engine = RocksDBEngine(path)
                try:
                    batch = WriteBatch()
                    batch.put(OFFSETS_COLUMN_FAMILY, STATUS_KEY, encode_status(False))
                    engine.write(batch)
                finally:
                    engine.close()
            raise


# --- OFF-19: migrating a task's legacy .checkpoint ------------------------------------------------------------------


class _Migration:
    """Migrates ``.checkpoint`` itself (the reference's migration off), with one of three bugs."""

    commit_when_none = False  # commit(mine) even when the file holds no offset of this store: an empty map wipes
    unknown_as_null = False  # a -4 entry of this store is committed as a null offset, deleting what was committed
    delete_whole_file = False  # the file is deleted, with the entries of the task's other stores

    def __init__(self, name: str, task_dir: Any = None, **kwargs: Any) -> None:
        options = replace(kwargs.pop("options", DEFAULT_ROCKSDB_OPTIONS), migrate_legacy_files=False)
        super().__init__(name, task_dir, options=options, **kwargs)  # type: ignore[call-arg]
        offsets_store = self._instance.offsets  # type: ignore[attr-defined]
        if offsets_store is None or self.task_dir is None:  # type: ignore[attr-defined]
            return
        path = task_checkpoint_path(self.task_dir)  # type: ignore[attr-defined]
        if not path.exists():
            return
        checkpoint = read_checkpoint_file(path, unknown_as_none=True)
        own = {(tp.topic, tp.partition) for tp in self.changelog_partitions}  # type: ignore[attr-defined]
        mine: dict[tuple[str, int], int | None] = {
            tp: off for tp, off in checkpoint.items() if tp in own and (off is not None or self.unknown_as_null)}
        if mine or self.commit_when_none:
            self._instance.staged.apply(offsets_store.commit_batch(mine, self._position))  # type: ignore[attr-defined]
        rest = {tp: (OFFSET_UNKNOWN if off is None else off) for tp, off in checkpoint.items() if tp not in own}
        write_checkpoint_file(path, {} if self.delete_whole_file else rest)


_flagged_mutant(_Migration, "migration-empty-commit-wipes",
                "checkpoint migration commits an empty map for a store with no entry, wiping it", ("OFF-19",),
                commit_when_none=True)
_flagged_mutant(_Migration, "migration-unknown-offset-deletes",
                "checkpoint migration commits a -4 entry as a null offset", ("OFF-19",), unknown_as_null=True)
_flagged_mutant(_Migration, "migration-drops-other-stores",
                "the first store to migrate deletes .checkpoint with the other stores' entries", ("OFF-19",),
                delete_whole_file=True)


# --- OFF-20: the downgrade .checkpoint ----------------------------------------------------------------------------


class _DowngradeClose:
    """Writes the downgrade files itself, with one of two bugs."""

    skip_uncommitted = False  # a changelog partition without a committed offset is left out instead of -4
    overwrite = False  # the file is rewritten with this store's entries only

    def close_for_downgrade(self) -> None:
        offsets_store = self._instance.offsets  # type: ignore[attr-defined]
        task_dir = getattr(self, "task_dir", None)
        if offsets_store is None or task_dir is None:
            super().close_for_downgrade()  # type: ignore[misc]
            return
        self._allow(Op.DOWNGRADE)  # type: ignore[attr-defined]
        self._close_iterators()  # type: ignore[attr-defined]
        self._instance.staged.apply(offsets_store.close_batch(self._position))  # type: ignore[attr-defined]
        path = task_checkpoint_path(task_dir)
        merged: dict[tuple[str, int], int] = {}
        if not self.overwrite:
            merged = {tp: (OFFSET_UNKNOWN if off is None else off)
                      for tp, off in read_checkpoint_file(path, unknown_as_none=True).items()}
        if not self.skip_uncommitted:
            for tp in self.changelog_partitions:  # type: ignore[attr-defined]
                merged[(tp.topic, tp.partition)] = OFFSET_UNKNOWN
        merged.update(offsets_store.all_committed())
        write_checkpoint_file(path, merged)
        write_position_file(task_dir, self.name, self._position)  # type: ignore[attr-defined]
        self._open = False
        self._instance.is_open = False  # type: ignore[attr-defined]
        self._instance.accessor.release()  # type: ignore[attr-defined]
        try:
            self.engine.drop_column_family(OFFSETS_COLUMN_FAMILY)  # type: ignore[attr-defined]
        finally:
            self.engine.close()  # type: ignore[attr-defined]


_flagged_mutant(_DowngradeClose, "downgrade-omits-uncommitted",
                "the downgrade .checkpoint leaves out partitions with no committed offset instead of writing -4",
                ("OFF-20",), skip_uncommitted=True)
_flagged_mutant(_DowngradeClose, "downgrade-overwrites-checkpoint",
                "each store's downgrade close rewrites .checkpoint with its own entries only", ("OFF-20",),
                overwrite=True)


# --- CL-2, CL-4: the change-logging layer ----------------------------------------------------------------------------


class _NoTimestampAsContext(ChangeLoggingKeyValueBytesStore):
    """A stored timestamp of -1 (Kafka's NO_TIMESTAMP) is logged at the context timestamp instead of refused."""

    def put(self, key: bytes, value: bytes | None) -> None:
        if self.store_type is StoreType.TIMESTAMPED_KV and value is not None and value[:8] == b"\xff" * 8:
            self.inner.put(key, value)
            context = self.context.codec_context()
            stamped = context.timestamp.to_bytes(8, "big", signed=True) + value[8:]
            self.sink.append(cl.kv_put_record(self._codec_type, key, stamped, context))
            return
        super().put(key, value)


@_logging_mutant("changelog-no-timestamp-as-context", "a stored timestamp of -1 is logged at the context timestamp, "
                 "not refused", rules=("CL-2", "CL-4"))
def _no_timestamp_logging(inner: KeyValueBytesStore, store_type: StoreType, context: RecordContextHolder,
                          sink: ChangelogSink) -> KeyValueBytesStore:
    if StoreType(store_type) is StoreType.TIMESTAMPED_KV:
        return _NoTimestampAsContext(inner, store_type, context, sink)
    return cast(KeyValueBytesStore, DEFAULT_BUILDER.logging_layer(inner, store_type, context, sink))


class _PutAllLogsOncePerKey(ChangeLoggingKeyValueBytesStore):
    """``putAll`` logs each key once, with its last value in the batch."""

    def put_all(self, entries: Sequence[tuple[bytes, bytes | None]]) -> None:
        entries = list(entries)
        self.inner.put_all(entries)
        context = self.context.codec_context()
        for key, value in dict(entries).items():
            self.sink.append(cl.kv_put_record(self._codec_type, key, value, context))


@_logging_mutant("changelog-put-all-once-per-key", "putAll logs one record per distinct key instead of one per entry",
                 rules=("CL-1",))
def _put_all_once_logging(inner: KeyValueBytesStore, store_type: StoreType, context: RecordContextHolder,
                          sink: ChangelogSink) -> KeyValueBytesStore:
    return _PutAllLogsOncePerKey(inner, store_type, context, sink)


# --- CACHE-3, RST-5, RST-6 -------------------------------------------------------------------------------------


@_cache_mutant("cache-flush-in-first-write-order", "dirty entries flush in the order of their first write, not their "
               "latest", rules=("CACHE-3",))
class _FirstWriteOrderCache(NamedCache):
    """A rewritten dirty key keeps its place in the dirty order (``OrderedDict`` assignment does not move it)."""

    def put(self, key: bytes, entry: CacheEntry) -> None:
        position = list(self._dirty)
        super().put(key, entry)
        if entry.dirty and key in position and key in self._dirty:
            order = [k for k in position if k in self._dirty]
            order += [k for k in self._dirty if k not in order]
            self._dirty.clear()
            for k in order:
                self._dirty[k] = None


@_rocksdb_mutant("restore-upgrade-keeps-legacy-entry", "restore into a store in upgrade mode leaves the key's legacy "
                 "entry", rules=("RST-5",))
class _RestoreIntoNewFamilyOnly:
    """Restore in upgrade mode writes the new family directly, leaving the legacy entry of the key behind."""

    def restore_batch(self, entries: Sequence[tuple[bytes, bytes | None]]) -> None:
        accessor = getattr(self, "_accessor", None)
        if isinstance(accessor, DualColumnFamilyAccessor):
            self._allow(Op.RESTORE)  # type: ignore[attr-defined]
            accessor.staged.staged(accessor.new_cf).update(dict(entries))
            return
        super().restore_batch(entries)  # type: ignore[misc]


@_restorer_mutant("restore-headers-store-without-headers", "a header-aware store restores its changelog without the "
                  "record headers", rules=("RST-6", "RST-2"))
def _headerless_restore(store: KeyValueBytesStore, store_type: StoreType, records: Sequence[cl.ChangelogRecord],
                        batch_size: int, after_batch: Callable[[RestoreResult], None] | None) -> RestoreResult:
    """A header-aware store restored as if its changelog records carried no headers."""
    if StoreType(store_type) is StoreType.TIMESTAMPED_KV_WITH_HEADERS:
        records = [replace(r, headers=()) for r in records]
    return restore(store, store_type, records, batch_size=batch_size, after_batch=after_batch)


@_rocksdb_mutant("restore-leaves-wal-off", "after a restore the store keeps writing with the WAL off", rules=("RST-8",))
class _WalLeftOff:
    """Restore turns the WAL off and flushes at its end, but never turns the WAL back on."""

    @contextlib.contextmanager
    def restoring(self) -> Iterator[None]:
        with super().restoring():  # type: ignore[misc]
            yield
        engine = getattr(self, "engine", None)
        options = getattr(engine, "_write_options", None)
        if options is not None:
            options.disable_wal = True


@_restorer_mutant("restore-drops-partial-batch", "restore writes only full batches, so the result depends on the "
                  "batch size", rules=("RST-3",))
def _whole_batches_restore(store: KeyValueBytesStore, store_type: StoreType, records: Sequence[cl.ChangelogRecord],
                           batch_size: int, after_batch: Callable[[RestoreResult], None] | None) -> RestoreResult:
    """Restores ``len(records) // batch_size`` full batches: a last, partial batch is never written."""
    whole = len(records) - len(records) % batch_size
    return restore(store, store_type, list(records)[:whole], batch_size=batch_size, after_batch=after_batch)


# --- every family's store: KV-54, KV-12, VER-23 (issue 25's blind spots) -----------------------------------------


def _every_family_with(mixin: type, types: Sequence[StoreType] = BUILT_TYPES,
                       check_type: bool = True) -> dict[str, Handler]:
    """``store.open`` whose stores of ``types`` (every built type by default), on both backends, have ``mixin`` in
    front of their class; the rest of ``open_bytes_store`` is the reference's (its LAY-14 check unless not
    ``check_type``)."""

    def open_store(store_type: StoreType, backend: Backend, *, name: str, state_dir: str | Path | None = None,
                   application_id: str = "app", task_id: str = "0_0", ignore_invalid_state: bool = False,
                   options: Mapping[str, Any] | None = None, **rest: Any) -> StateStore:
        store_type, backend = StoreType(store_type), Backend(backend)
        if store_type not in types:
            return open_bytes_store(store_type, backend, name=name, state_dir=state_dir, application_id=application_id,
                                    task_id=task_id, ignore_invalid_state=ignore_invalid_state, options=options, **rest)
        classes = store_classes(store_type)
        family_options = classes.check_options(options or {})
        base = classes.memory if backend is Backend.MEMORY else classes.rocksdb
        cls = type(f"{mixin.__name__}{base.__name__}", (mixin, base), {})
        if backend is Backend.MEMORY:
            return cast(StateStore, cls(name, **family_options))
        task_dir = task_directory(state_dir or tempfile.mkdtemp(prefix="kstate-"), application_id, task_id)
        if check_type:
            check_store_type_on_disk(store_type, task_dir, name, family_options)
        return cast(StateStore, cls(name, task_dir, options=RocksDBOptions(ignore_invalid_state=ignore_invalid_state, **rest),
                                    **family_options))

    return _open_with(replace(DEFAULT_BUILDER, open_bytes_store=open_store))


class _PositionSetNotRaised:
    """Kafka 3.x's ``Position.withComponent``: the record's offset is put, so a reprocessed record moves it back."""

    _record_context: RecordContext | None
    _position: Position

    def _update_position(self) -> None:
        context = self._record_context
        if context is not None and context.topic and context.offset >= 0:
            self._position.setdefault(context.topic, {})[context.partition] = context.offset


@mutant("position-goes-back", "a write sets its partition's position to the record's offset, so a reprocessed record "
        "at a lower offset moves the position back (key-value, versioned and session stores)", FAMILY,
        rules=("KV-54",))
def _position_goes_back() -> dict[str, Handler]:
    # Not the window types: the hand-worked window case of WS-29 already writes a lower offset after a reopen.
    return _every_family_with(_PositionSetNotRaised, tuple(t for t in BUILT_TYPES if t not in WINDOW_TYPES))


class _LifecycleQuietWhenClosed:
    """flush, commit and committed_offset skip the open check: a closed store flushes and commits nothing, quietly,
    and answers "no offset" (as a port that guards only the data operations would)."""

    is_open: bool

    def flush(self) -> None:
        if self.is_open:
            super().flush()  # type: ignore[misc]

    def commit(self, changelog_offsets: Mapping[TopicPartition, int | None]) -> None:
        if self.is_open:
            super().commit(changelog_offsets)  # type: ignore[misc]

    def committed_offset(self, partition: TopicPartition) -> int | None:
        if not self.is_open:
            return None
        offset: int | None = super().committed_offset(partition)  # type: ignore[misc]
        return offset


@mutant("closed-store-lifecycle-answers", "a closed store answers flush, commit and committed_offset instead of "
        "refusing them", FAMILY, rules=("KV-12",))
def _closed_store_lifecycle_answers() -> dict[str, Handler]:
    return _every_family_with(_LifecycleQuietWhenClosed)


def _quotient_only(history_retention: int) -> int:
    """VER-23's tiers without their floors: the quotient alone (at least 1)."""
    divisor = 3 if history_retention <= 60_000 else 5 if history_retention <= 300_000 else \
        12 if history_retention <= 3_600_000 else 24
    return max(history_retention // divisor, 1)


class _DefaultIntervalWithoutFloor:
    """A store opened without a segment interval divides the history retention by its tier's divisor but drops the
    floor (``Math.max(hr / 3, 2000)`` ported as ``hr / 3``)."""

    def __init__(self, name: str, *args: Any, history_retention_ms: int, segment_interval_ms: int | None = None,
                 **kwargs: Any) -> None:
        if segment_interval_ms is None and isinstance(history_retention_ms, int) and history_retention_ms >= 0:
            segment_interval_ms = _quotient_only(history_retention_ms)
        super().__init__(name, *args, history_retention_ms=history_retention_ms,  # type: ignore[call-arg]
                         segment_interval_ms=segment_interval_ms, **kwargs)


@mutant("versioned-default-interval-without-floor", "a versioned store opened without a segment interval uses the "
        "history retention's quotient without VER-23's floors", FAMILY, rules=("VER-23",))
def _versioned_default_interval_without_floor() -> dict[str, Handler]:
    return _every_family_with(_DefaultIntervalWithoutFloor,
                              (StoreType.VERSIONED_KV, StoreType.VERSIONED_KV_WITH_HEADERS))


class _OpensWhateverIsThere:
    """No change to the store: only the check of what its directory holds is left out, as Kafka opens it."""


@mutant("store-type-not-checked", "a store opens whatever its directory holds: a key-value store's directory opens as "
        "versioned (null to every get, its offset kept), a window store's as a session store's", FAMILY,
        rules=("LAY-14",))
def _store_type_not_checked() -> dict[str, Handler]:
    return _every_family_with(_OpensWhateverIsThere, check_type=False)


# --- LAY-15, LAY-16, OFF-25: a hostile state directory (issue 32 B) --------------------------------------------------


def _position_batch_writing_the_position(self: Any, position: Position) -> WriteBatch:
    # The pre-4.4 reading of Kafka: a flush writes the position row.
    from kstate.codecs.offsets import commit_position

    return offsets_batch(self, commit_position(self._image, position))


def _close_batch_writing_the_position(self: Any, position: Position) -> WriteBatch:
    # The pre-4.4 reading of Kafka: a close writes the position row with CLOSED.
    from kstate.codecs.offsets import close_offsets, commit_position

    batch = offsets_batch(self, close_offsets(commit_position(self._image, position), self._opened))
    self._opened = False
    return batch


@_patching("task-file-written-through-a-link", "a legacy task file is written with open(path, 'wb'): a link planted "
           "there makes the write land on its target outside the task directory", ("LAY-15",),
           ("store.write_task_file",), "kstate.ops.store_ops.write_state_file")
def _write_through(path: str | Path, data: bytes) -> None:
    # Python's natural write: open(path, "wb") follows a link planted at ``path`` (or at a fixed temporary name).
    with open(path, "wb") as out:
        out.write(data)


@_patching("database-files-not-checked", "a store opens its directory without checking its files: RocksDB follows a "
           "dangling LOCK link and creates its target outside the store", ("LAY-16",), ("store.open",),
           "kstate.stores.engine.check_database_files")
def _database_files_unchecked(*_args: Any, **_kwargs: Any) -> None:
    return None


_OFFSET_CHECKS = ("kstate.stores.surface.committed_offset_problem", "kstate.stores.offsets.committed_offset_problem")


@_patching("negative-offsets-taken-as-offsets", "any committed offset is taken as one: -5 and Long.MIN_VALUE are "
           "committed, answered and reopened as real changelog offsets", ("OFF-25",), ("store.commit", "store.open"),
           *_OFFSET_CHECKS)
def _no_offset_problem(_offset: int) -> str | None:
    return None


@_patching("negative-offsets-all-refused", "every negative committed offset is refused as no offset: -4 "
           "(OFFSET_UNKNOWN, which Kafka 4.4's task commits) and -1 are refused at commit and at open", ("OFF-24",),
           ("store.commit", "store.open"), *_OFFSET_CHECKS)
def _negative_offset_problem(offset: int) -> str | None:
    return f"committed changelog offset {offset} is negative" if offset < 0 else None


@_patching("wipe-leftover-removed-only-as-a-directory", "a <store>~wiping leftover is deleted with "
           "rmtree(ignore_errors): a file left there stays and every later wipe fails on it", ("UPG-3",),
           ("store.wipe",), "kstate.stores.factory._remove_without_following")
def _remove_if_a_directory(path: Path) -> None:
    # The natural port of "delete the leftover": a tree delete that ignores what it cannot delete (a file there).
    import shutil

    shutil.rmtree(path, ignore_errors=True)


@_patching("segmented-store-ignores-task-checkpoint", "window and session stores never read the task's .checkpoint: "
           "its offsets are not migrated and garbage there is accepted", ("KV-55",), ("store.open",),
           "kstate.stores.segmented.read_checkpoint_entries")
def _no_checkpoint_entries(*_args: Any, **_kwargs: Any) -> dict[Any, Any]:
    return {}


@mutant("close-writes-position", "flush and close write the position row although nothing was committed (Kafka "
        "4.4.0 writes it in commit only)", FAMILY, rules=("KV-56", "OFF-5", "KV-63"))
def _close_writes_position() -> dict[str, Handler]:
    patches = {"kstate.stores.offsets.StoreOffsets.position_batch": _position_batch_writing_the_position,
               "kstate.stores.offsets.StoreOffsets.close_batch": _close_batch_writing_the_position}
    return {op: _with_patched(op, patches) for op in ("store.close", "store.flush")}
