"""Mutants of the key-value store family: the reference stores and layers, each with one realistic bug.

Every mutant replaces ``store.open`` only: it builds its stores with a :class:`StoreBuilder` whose bytes
store, change-logging layer, cache or restorer is a subclass of the reference's with the bug. The other
``store.*`` operations are the reference's, acting on whatever ``store.open`` registered.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from kstate.codecs import changelog as cl
from kstate.ops import JsonDict, call
from kstate.ops.store_ops import DEFAULT_BUILDER, StoreBuilder, make_open_handler
from kstate.stores.api import Backend, KeyValueBytesStore, StoreType, TopicPartition
from kstate.stores.caching import CacheEntry, CachingKeyValueStore, FlushListener, NamedCache
from kstate.stores.changelogging import ChangeLoggingKeyValueBytesStore, ChangelogSink, RecordContextHolder
from kstate.stores.engine import RocksDBEngine, rocksdb_options
from kstate.stores.factory import open_kv_store, rocksdb_store_class, store_directory, task_directory
from kstate.stores.headers import RocksDBTimestampedStoreWithHeaders
from kstate.stores.kv import DualColumnFamilyAccessor, InMemoryKeyValueStore, StoreIterator
from kstate.stores.restore import RestoreResult, restore
from kstate.stores.timestamped import RocksDBTimestampedStore
from kstate_conformance.adapter import Handler
from kstate_conformance.mutants import mutant

FAMILY = "kv"
StoreClasses = Mapping[tuple[StoreType, Backend], Callable[..., KeyValueBytesStore]]


def _opening(classes: StoreClasses) -> Callable[..., KeyValueBytesStore]:
    """``open_kv_store``, but the listed (type, backend) pairs get the mutant classes."""

    def open_store(store_type: StoreType, backend: Backend, *, name: str, state_dir: str | Path | None = None,
                   application_id: str = "app", task_id: str = "0_0", ignore_invalid_state: bool = False,
                   **options: Any) -> KeyValueBytesStore:
        cls = classes.get((StoreType(store_type), Backend(backend)))
        if cls is None:
            return open_kv_store(store_type, backend, name=name, state_dir=state_dir, application_id=application_id,
                                 task_id=task_id, ignore_invalid_state=ignore_invalid_state, **options)
        if Backend(backend) is Backend.MEMORY:
            return cls(name)
        task_dir = task_directory(state_dir or tempfile.mkdtemp(prefix="kstate-"), application_id, task_id)
        return cls(name, task_dir, ignore_invalid_state=ignore_invalid_state)

    return open_store


def _rocksdb_classes_with(mixin: type) -> StoreClasses:
    """Every RocksDB key-value store class with ``mixin`` in front of it: a mutant of one method for all three."""
    classes: dict[tuple[StoreType, Backend], Callable[..., KeyValueBytesStore]] = {}
    for store_type in StoreType:
        base = rocksdb_store_class(store_type)
        classes[(store_type, Backend.ROCKSDB)] = type(f"{mixin.__name__}{base.__name__}", (mixin, base), {})
    return classes


def _open_with(builder: StoreBuilder) -> dict[str, Handler]:
    return {"store.open": make_open_handler(builder)}


# --- a migrating iterator -----------------------------------------------------------------------------------


class _MigratingIterators:
    """Iterators that "finish the upgrade while they are at it": each legacy entry read is migrated (KV-35)."""

    def _iterator(self, lower: bytes | None, upper: bytes | None, upper_inclusive: bool, reverse: bool) -> StoreIterator:
        iterator: StoreIterator = super()._iterator(lower, upper, upper_inclusive, reverse)  # type: ignore[misc]
        accessor = self._accessor  # type: ignore[attr-defined]
        if not isinstance(accessor, DualColumnFamilyAccessor):
            return iterator
        entries = list(iterator)
        iterator.close()
        for key, _ in entries:
            accessor.get(key)
        return StoreIterator(self.name, iter(entries))  # type: ignore[attr-defined]


class _MigratingTimestampedStore(_MigratingIterators, RocksDBTimestampedStore):
    pass


class _MigratingHeadersStore(_MigratingIterators, RocksDBTimestampedStoreWithHeaders):
    pass


@mutant("kv-migrating-iterator", "dual-column-family iterators migrate the legacy entries they return", FAMILY)
def _migrating_iterator() -> dict[str, Handler]:
    classes: StoreClasses = {(StoreType.TIMESTAMPED, Backend.ROCKSDB): _MigratingTimestampedStore,
                             (StoreType.TIMESTAMPED_WITH_HEADERS, Backend.ROCKSDB): _MigratingHeadersStore}
    return _open_with(replace(DEFAULT_BUILDER, open_bytes_store=_opening(classes)))


# --- change-logging bugs -----------------------------------------------------------------------------------------


class _DeleteSkipsAbsentTombstone(ChangeLoggingKeyValueBytesStore):
    """"Nothing was deleted, so nothing to log": a delete of an absent key sends no tombstone (CL-3)."""

    def delete(self, key: bytes) -> bytes | None:
        previous = self.inner.delete(key)
        if previous is not None:
            self.sink.append(cl.kv_delete_record(self._codec_type, key, self.context.codec_context()))
        return previous


@mutant("kv-delete-skips-tombstone", "delete logs no tombstone when the key was absent", FAMILY)
def _delete_skips_tombstone() -> dict[str, Handler]:
    return _open_with(replace(DEFAULT_BUILDER, logging_layer=_DeleteSkipsAbsentTombstone))


class _ProcessingTimeSink:
    """Stamps every record with the context (processing) timestamp instead of the one the layer chose (CL-4)."""

    def __init__(self, sink: ChangelogSink, context: RecordContextHolder) -> None:
        self._sink = sink
        self._context = context

    def append(self, record: cl.ChangelogRecord) -> None:
        self._sink.append(replace(record, timestamp=self._context.current.timestamp))


def _processing_time_logging(inner: KeyValueBytesStore, store_type: StoreType, context: RecordContextHolder,
                             sink: ChangelogSink) -> KeyValueBytesStore:
    return ChangeLoggingKeyValueBytesStore(inner, store_type, context, _ProcessingTimeSink(sink, context))


@mutant("kv-changelog-processing-time", "timestamped stores log the context timestamp instead of the stored one",
        FAMILY)
def _changelog_processing_time() -> dict[str, Handler]:
    return _open_with(replace(DEFAULT_BUILDER, logging_layer=_processing_time_logging))


class _PutIfAbsentAlwaysLogs(ChangeLoggingKeyValueBytesStore):
    """Logs every putIfAbsent, as if it were a put, even when the key was present (CL-3)."""

    def put_if_absent(self, key: bytes, value: bytes | None) -> bytes | None:
        previous = self.inner.put_if_absent(key, value)
        self.sink.append(cl.kv_put_record(self._codec_type, key, value, self.context.codec_context()))
        return previous


@mutant("kv-put-if-absent-logs-when-present", "putIfAbsent logs the new value even when the key was present", FAMILY)
def _put_if_absent_always_logs() -> dict[str, Handler]:
    return _open_with(replace(DEFAULT_BUILDER, logging_layer=_PutIfAbsentAlwaysLogs))


# --- offsets outside the data batch ------------------------------------------------------------------------------


class _OffsetsFirst:
    """``commit`` writes the offsets at once, in their own batch; the data waits for the next close (KV-50)."""

    def commit(self, changelog_offsets: Mapping[TopicPartition, int | None]) -> None:
        self._check_open()  # type: ignore[attr-defined]
        offsets_store = self._offsets  # type: ignore[attr-defined]
        if offsets_store is None:
            super().commit(changelog_offsets)  # type: ignore[misc]
            return
        offsets = {(tp.topic, tp.partition): offset for tp, offset in changelog_offsets.items()}
        self._engine.write(offsets_store.commit_batch(offsets, self._position))  # type: ignore[attr-defined]


@mutant("kv-offsets-outside-data-batch", "commit writes the offsets in their own batch, before the data", FAMILY)
def _offsets_outside_data_batch() -> dict[str, Handler]:
    return _open_with(replace(DEFAULT_BUILDER, open_bytes_store=_opening(_rocksdb_classes_with(_OffsetsFirst))))


# --- restore ---------------------------------------------------------------------------------------------------


class _UnflushedRestore:
    """``restoring()`` turns the WAL off and never flushes: restored batches live in memtables only (RST-8)."""

    @contextlib.contextmanager
    def restoring(self) -> Iterator[None]:
        options = self._engine._write_options  # type: ignore[attr-defined]
        options.disable_wal = True
        try:
            yield
        finally:
            options.disable_wal = False


@mutant("kv-restore-unflushed", "restore writes with the WAL off and never flushes, so a crash after it loses it", FAMILY)
def _restore_unflushed() -> dict[str, Handler]:
    return _open_with(replace(DEFAULT_BUILDER, open_bytes_store=_opening(_rocksdb_classes_with(_UnflushedRestore))))



def _timestamp_blind_restore(store: KeyValueBytesStore, store_type: StoreType, records: Sequence[cl.ChangelogRecord],
                             batch_size: int, after_batch: Callable[[RestoreResult], None] | None) -> RestoreResult:
    """Restores as if every record had no timestamp (-1), the legacy conversion's value (RST-2)."""
    blind = [replace(r, timestamp=-1) for r in records]
    return restore(store, store_type, blind, batch_size=batch_size, after_batch=after_batch)


@mutant("kv-restore-ignores-record-timestamp", "restore stamps values with -1 instead of the record timestamp", FAMILY)
def _restore_ignores_record_timestamp() -> dict[str, Handler]:
    return _open_with(replace(DEFAULT_BUILDER, restorer=_timestamp_blind_restore))


# --- an in-memory iterator over the live map ------------------------------------------------------------------


class _LiveKeysInMemoryStore(InMemoryKeyValueStore):
    """Iterates the live sorted map instead of a copy of its keys: keys inserted later are seen (KV-41)."""

    def _iterator(self, lower: bytes | None, upper: bytes | None, upper_inclusive: bool, reverse: bool) -> StoreIterator:
        return StoreIterator(self.name, self._walk(lower, upper, upper_inclusive, reverse))

    def _walk(self, lower: bytes | None, upper: bytes | None, upper_inclusive: bool, reverse: bool) -> Iterator[tuple[bytes, bytes]]:
        last: bytes | None = None
        while True:
            keys = self._map.key_range("default", lower, upper, upper_inclusive=upper_inclusive)
            if reverse:
                keys.reverse()
            following = [k for k in keys if last is None or (k < last if reverse else k > last)]
            if not following:
                return
            last = following[0]
            value = self._map.get("default", last)
            if value is not None:
                yield last, value


@mutant("kv-memory-iterator-sees-inserts", "in-memory iterators walk the live map and see keys inserted later", FAMILY)
def _memory_iterator_sees_inserts() -> dict[str, Handler]:
    classes: StoreClasses = {(t, Backend.MEMORY): (lambda name, _t=t: _live_keys_store(name, _t)) for t in StoreType}
    return _open_with(replace(DEFAULT_BUILDER, open_bytes_store=_opening(classes)))


def _live_keys_store(name: str, store_type: StoreType) -> KeyValueBytesStore:
    store = _LiveKeysInMemoryStore(name)
    store.store_type = store_type
    return store


# --- cache bugs ---------------------------------------------------------------------------------------------------


class _KeyOrderCache(NamedCache):
    """Flushes dirty entries sorted by key instead of in the order they were written (CACHE-3)."""

    def flush(self, evicted: tuple[bytes, CacheEntry] | None = None) -> None:
        order = sorted(self._dirty)
        self._dirty.clear()
        for key in order:
            self._dirty[key] = None
        super().flush(evicted)


def _key_order_caching(inner: KeyValueBytesStore, context: RecordContextHolder, max_bytes: int,
                       listener: FlushListener | None) -> CachingKeyValueStore:
    store = CachingKeyValueStore(inner, context, max_bytes=max_bytes, flush_listener=listener)
    store.cache = _KeyOrderCache(max_bytes, store._write_back)
    return store


@mutant("kv-cache-flush-in-key-order", "the cache flushes dirty entries in key order, not write order", FAMILY)
def _cache_flush_in_key_order() -> dict[str, Handler]:
    return _open_with(replace(DEFAULT_BUILDER, caching_layer=_key_order_caching))


class _TombstoneSkippingCache(CachingKeyValueStore):
    """Applies the DSL's "absent below, nothing to delete" shortcut to every store (CACHE-5)."""

    def _write_back(self, batch: list[tuple[bytes, CacheEntry]]) -> None:
        kept = [(k, e) for k, e in batch if e.value is not None or self.inner.get(k) is not None]
        super()._write_back(kept)


def _tombstone_skipping_caching(inner: KeyValueBytesStore, context: RecordContextHolder, max_bytes: int,
                                listener: FlushListener | None) -> CachingKeyValueStore:
    return _TombstoneSkippingCache(inner, context, max_bytes=max_bytes, flush_listener=listener)


@mutant("kv-cache-drops-absent-tombstones", "without a flush listener, cached tombstones of absent keys are dropped",
        FAMILY)
def _cache_drops_absent_tombstones() -> dict[str, Handler]:
    return _open_with(replace(DEFAULT_BUILDER, caching_layer=_tombstone_skipping_caching))


# --- store directories and value facades ------------------------------------------------------------------------

def _newest_table_format() -> Any:
    """Kafka's options but RocksDB 8.6+'s default table ``format_version`` 6, which RocksDB 7.x cannot read."""
    import rocksdict

    options = rocksdb_options()
    table = rocksdict.BlockBasedOptions()
    table.set_format_version(6)
    options.set_block_based_table_factory(table)
    return options


def _open_newest_table_format(store_type: StoreType, backend: Backend, *, name: str,
                              state_dir: str | Path | None = None, application_id: str = "app",
                              task_id: str = "0_0", **options: Any) -> KeyValueBytesStore:
    if Backend(backend) is Backend.MEMORY:
        return open_kv_store(store_type, backend, name=name, **options)
    state_dir = state_dir or tempfile.mkdtemp(prefix="kstate-")
    engine = RocksDBEngine(store_directory(state_dir, application_id, task_id, name), options=_newest_table_format)
    return rocksdb_store_class(StoreType(store_type))(name, task_directory(state_dir, application_id, task_id),
                                                      engine=engine, **options)


@mutant("kv-tables-newest-format", "RocksDB tables keep the engine's default format_version 6 (LAY-9)", FAMILY)
def _tables_newest_format() -> dict[str, Handler]:
    return _open_with(replace(DEFAULT_BUILDER, open_bytes_store=_open_newest_table_format))


def _open_without_migration(store_type: StoreType, backend: Backend, **options: Any) -> KeyValueBytesStore:
    return open_kv_store(store_type, backend, **{**options, "migrate_legacy_files": False})


@mutant("kv-legacy-checkpoint-ignored", "a task's pre-4.3 .checkpoint is left unread at open (KV-55)", FAMILY)
def _legacy_checkpoint_ignored() -> dict[str, Handler]:
    return _open_with(replace(DEFAULT_BUILDER, open_bytes_store=_open_without_migration))


def _open_as_current_reader(store_type: StoreType, backend: Backend, **options: Any) -> KeyValueBytesStore:
    options.pop("manage_offsets", None)  # every reader opens the offsets family
    return open_kv_store(store_type, backend, **options)


@mutant("kv-old-reader-opens-offsets", "a pre-4.3 reader opens a store holding the offsets family (UPG-2)", FAMILY)
def _old_reader_opens_offsets() -> dict[str, Handler]:
    return _open_with(replace(DEFAULT_BUILDER, open_bytes_store=_open_as_current_reader))


class _PlainDowngradeClose:
    """A downgrade close that is an ordinary close: no legacy files, the offsets family stays (UPG-4)."""

    def close_for_downgrade(self) -> None:
        self.close()  # type: ignore[attr-defined]


@mutant("kv-downgrade-close-plain", "closing for a downgrade writes no .checkpoint and keeps the offsets family",
        FAMILY)
def _downgrade_close_plain() -> dict[str, Handler]:
    return _open_with(replace(DEFAULT_BUILDER, open_bytes_store=_opening(_rocksdb_classes_with(_PlainDowngradeClose))))


@mutant("kv-facade-eager-headers", "the headers facade parses the header bytes on every read (KV-62, HV-10)", FAMILY)
def _facade_eager_headers() -> dict[str, Handler]:
    def get_typed(payload: JsonDict) -> JsonDict:
        out = call("store.get_typed", {**payload, "fields": ["value", "timestamp", "headers"]})
        if "error" in out or not out.get("found"):
            return out
        asked = payload.get("fields")
        return out if not asked else {"found": True, **{f: out[f] for f in asked if f in out}}

    return {"store.get_typed": get_typed}
