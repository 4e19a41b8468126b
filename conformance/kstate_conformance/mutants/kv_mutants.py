"""Mutants of the key-value store family: the reference stores and layers, each with one realistic bug.

Most mutants replace ``store.open`` only: it builds its stores with a :class:`StoreBuilder` whose bytes
store, change-logging layer, cache or restorer is a subclass of the reference's with the bug. The other
``store.*`` operations are the reference's, acting on whatever ``store.open`` registered. Bugs of an
adapter's own translation (an answer or an argument mishandled) replace that one operation. Each mutant
names the rules it breaks; every ``required`` KV and UPG rule has at least one (spec/README.md).
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

from kstate.codecs import changelog as cl
from kstate.codecs.store_types import BUILT_KV_TYPES, OFFSETS_CF, StoreType
from kstate.ops import JsonDict, call
from kstate.ops.store_ops import DEFAULT_BUILDER, StoreBuilder, make_open_handler
from kstate.stores.api import Backend, KeyValueBytesStore, TopicPartition
from kstate.stores.caching import CacheEntry, CachingKeyValueStore, FlushListener, NamedCache
from kstate.stores.changelogging import ChangeLoggingKeyValueBytesStore, ChangelogSink, RecordContextHolder
from kstate.stores.column_families import DualColumnFamilyAccessor
from kstate.stores.engine import (
    RocksDBEngine,
    _SnapshotCursor,
    block_cache,
    offsets_options,
    rocksdb_options,
    storage_error,
)
from kstate.stores.factory import open_kv_store, store_directory, task_directory
from kstate.stores.families import store_classes
from kstate.stores.headers import RocksDBTimestampedStoreWithHeaders
from kstate.stores.kv import InMemoryKeyValueStore, StoreIterator
from kstate.stores.life import Op
from kstate.stores.restore import RestoreResult, restore
from kstate.stores.rocksdb_instance import RocksDBInstance
from kstate.stores.surface import RocksDBOptions
from kstate.stores.timestamped import RocksDBTimestampedStore
from kstate_conformance.adapter import Handler
from kstate_conformance.mutants import Change, mutant, registering
from kstate_conformance.mutants.paired_mutants import changed_answer, paired_mutant

FAMILY = "kv"
StoreClasses = Mapping[tuple[StoreType, Backend], Callable[..., KeyValueBytesStore]]


def opening(classes: StoreClasses, *, options_bypass: bool = False) -> Callable[..., KeyValueBytesStore]:
    """``open_kv_store``, but the listed (type, backend) pairs get the mutant classes; with ``options_bypass``, a
    store opened with RocksDB options is the reference's."""

    def open_store(store_type: StoreType, backend: Backend, *, name: str, state_dir: str | Path | None = None,
                   application_id: str = "app", task_id: str = "0_0", ignore_invalid_state: bool = False,
                   **options: Any) -> KeyValueBytesStore:
        cls = classes.get((StoreType(store_type), Backend(backend)))
        if cls is None or (options_bypass and options):
            return open_kv_store(store_type, backend, name=name, state_dir=state_dir, application_id=application_id,
                                 task_id=task_id, ignore_invalid_state=ignore_invalid_state, **options)
        if Backend(backend) is Backend.MEMORY:
            return cls(name)
        task_dir = task_directory(state_dir or tempfile.mkdtemp(prefix="kstate-"), application_id, task_id)
        return cls(name, task_dir, options=RocksDBOptions(ignore_invalid_state=ignore_invalid_state, **options))

    return open_store


def rocksdb_classes_with(mixin: type) -> StoreClasses:
    """Every RocksDB key-value store class with ``mixin`` in front of it: a mutant of one method for all three."""
    classes: dict[tuple[StoreType, Backend], Callable[..., KeyValueBytesStore]] = {}
    for store_type in BUILT_KV_TYPES:
        base = store_classes(store_type).rocksdb
        classes[(store_type, Backend.ROCKSDB)] = type(f"{mixin.__name__}{base.__name__}", (mixin, base), {})
    return classes


def _on_instance(mixin: type) -> type:
    """A store mixin whose database is a :class:`RocksDBInstance` with ``mixin`` in front of it: a mutant of how
    the database opens (column families, refusals) rather than of the key-value operations."""
    instance_class = type(f"{mixin.__name__}Instance", (mixin, RocksDBInstance), {})
    return type(mixin.__name__, (), {"INSTANCE_CLASS": instance_class})


def _open_with(builder: StoreBuilder) -> dict[str, Handler]:
    return {"store.open": make_open_handler(builder)}


def _building(field: str) -> Callable[..., Callable[[Change], Change]]:
    """A decorator registering a mutant whose store builder has the decorated class or function as its ``field``
    (open_bytes_store, logging_layer, caching_layer or restorer)."""
    return registering(FAMILY, lambda change: _open_with(replace(DEFAULT_BUILDER, **{field: change})))


_opening_mutant = _building("open_bytes_store")
_logging_mutant = _building("logging_layer")
_caching_mutant = _building("caching_layer")
_restorer_mutant = _building("restorer")
#: The decorated mixin in front of every RocksDB key-value store class.
_rocksdb_mixin_mutant = registering(
    FAMILY, lambda mixin: _open_with(replace(DEFAULT_BUILDER, open_bytes_store=opening(rocksdb_classes_with(mixin)))))


def _classes_with(mixin: type, backends: Sequence[Backend] = tuple(Backend),
                  store_types: Sequence[StoreType] = BUILT_KV_TYPES) -> StoreClasses:
    """The store classes of ``store_types`` on ``backends`` with ``mixin`` in front of them."""
    classes: dict[tuple[StoreType, Backend], Callable[..., KeyValueBytesStore]] = {}
    for store_type in store_types:
        for backend in backends:
            base: type = store_classes(store_type).rocksdb if backend is Backend.ROCKSDB else store_classes(store_type).memory
            classes[(store_type, backend)] = type(f"{mixin.__name__}{base.__name__}", (mixin, base), {})
    return classes


def _stores_with(mixin: type, backends: Sequence[Backend] = tuple(Backend),
                 store_types: Sequence[StoreType] = BUILT_KV_TYPES) -> dict[str, Handler]:
    return _open_with(replace(DEFAULT_BUILDER, open_bytes_store=opening(_classes_with(mixin, backends, store_types))))


_ROCKSDB = (Backend.ROCKSDB,)
_MEMORY = (Backend.MEMORY,)
_UPGRADING = (StoreType.TIMESTAMPED_KV, StoreType.TIMESTAMPED_KV_WITH_HEADERS)

def _with_accessor(change: Callable[[Any, Any], Any]) -> type:
    """A store mixin whose database's column-family accessor is the reference's passed through
    ``change(instance, accessor)``."""

    class _ChangedAccessor:
        def _open_column_families(self) -> Any:
            return change(self, super()._open_column_families())  # type: ignore[misc]

    _ChangedAccessor.__name__ = f"_Accessor{change.__name__}"
    return _on_instance(_ChangedAccessor)


def _accessor_mixin(accessor_class: type[DualColumnFamilyAccessor]) -> type:
    """A store mixin putting ``accessor_class`` in place of the reference's dual accessor."""

    def swapped(_instance: Any, accessor: Any) -> Any:
        if isinstance(accessor, DualColumnFamilyAccessor):
            accessor.__class__ = accessor_class
        return accessor

    swapped.__name__ = accessor_class.__name__
    return _with_accessor(swapped)


def _mixin_mutant(name: str, description: str, rules: tuple[str, ...], backends: Sequence[Backend] = tuple(Backend),
                  store_types: Sequence[StoreType] = BUILT_KV_TYPES,
                  wrap: Callable[[Any], type] | None = None) -> Callable[[Change], Change]:
    """Register the mutant ``name`` whose stores of ``store_types`` on ``backends`` have the decorated mixin (passed
    through ``wrap``, e.g. :func:`_on_instance`) in front of the reference's class."""
    return registering(FAMILY, lambda mixin: _stores_with(wrap(mixin) if wrap else mixin, backends, store_types))(
        name, description, rules)


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


@mutant("kv-migrating-iterator", "dual-column-family iterators migrate the legacy entries they return", FAMILY,
        rules=("KV-35",))
def _migrating_iterator() -> dict[str, Handler]:
    classes: StoreClasses = {(StoreType.TIMESTAMPED_KV, Backend.ROCKSDB): _MigratingTimestampedStore,
                             (StoreType.TIMESTAMPED_KV_WITH_HEADERS, Backend.ROCKSDB): _MigratingHeadersStore}
    return _open_with(replace(DEFAULT_BUILDER, open_bytes_store=opening(classes)))


# --- change-logging bugs -----------------------------------------------------------------------------------------


@_logging_mutant("kv-delete-skips-tombstone", "delete logs no tombstone when the key was absent", rules=("CL-3",))
class _DeleteSkipsAbsentTombstone(ChangeLoggingKeyValueBytesStore):
    """"Nothing was deleted, so nothing to log": a delete of an absent key sends no tombstone (CL-3)."""

    def delete(self, key: bytes) -> bytes | None:
        previous = self.inner.delete(key)
        if previous is not None:
            self.sink.append(cl.kv_delete_record(self._codec_type, key, self.context.codec_context()))
        return previous


class _ProcessingTimeSink:
    """Stamps every record with the context (processing) timestamp instead of the one the layer chose (CL-4)."""

    def __init__(self, sink: ChangelogSink, context: RecordContextHolder) -> None:
        self._sink = sink
        self._context = context

    def append(self, record: cl.ChangelogRecord) -> None:
        self._sink.append(replace(record, timestamp=self._context.current.timestamp))


@_logging_mutant("kv-changelog-processing-time", "timestamped stores log the context timestamp instead of the stored "
                 "one", rules=("CL-4",))
def _processing_time_logging(inner: KeyValueBytesStore, store_type: StoreType, context: RecordContextHolder,
                             sink: ChangelogSink) -> KeyValueBytesStore:
    return ChangeLoggingKeyValueBytesStore(inner, store_type, context, _ProcessingTimeSink(sink, context))


@_logging_mutant("kv-put-if-absent-logs-when-present", "putIfAbsent logs the new value even when the key was present",
                 rules=("CL-3",))
class _PutIfAbsentAlwaysLogs(ChangeLoggingKeyValueBytesStore):
    """Logs every putIfAbsent, as if it were a put, even when the key was present (CL-3)."""

    def put_if_absent(self, key: bytes, value: bytes | None) -> bytes | None:
        previous = self.inner.put_if_absent(key, value)
        self.sink.append(cl.kv_put_record(self._codec_type, key, value, self.context.codec_context()))
        return previous


# --- offsets outside the data batch ------------------------------------------------------------------------------


@_rocksdb_mixin_mutant("kv-offsets-outside-data-batch", "commit writes the offsets in their own batch, before the data",
                       rules=("KV-50",))
class _OffsetsFirst:
    """``commit`` writes the offsets at once, in their own batch; the data waits for the next close (KV-50)."""

    def commit(self, changelog_offsets: Mapping[TopicPartition, int | None]) -> None:
        self._allow(Op.COMMIT)  # type: ignore[attr-defined]
        offsets_store = self._instance.offsets  # type: ignore[attr-defined]
        if offsets_store is None:
            super().commit(changelog_offsets)  # type: ignore[misc]
            return
        offsets = {(tp.topic, tp.partition): offset for tp, offset in changelog_offsets.items()}
        self.engine.write(offsets_store.commit_batch(offsets, self._position))  # type: ignore[attr-defined]


# --- restore ---------------------------------------------------------------------------------------------------


@_rocksdb_mixin_mutant("kv-restore-unflushed", "restore writes with the WAL off and never flushes, so a crash after "
                       "it loses it", rules=("RST-8",))
class _UnflushedRestore:
    """``restoring()`` turns the WAL off and never flushes: restored batches live in memtables only (RST-8)."""

    @contextlib.contextmanager
    def restoring(self) -> Iterator[None]:
        options = self.engine._write_options  # type: ignore[attr-defined]
        options.disable_wal = True
        try:
            yield
        finally:
            options.disable_wal = False


@_restorer_mutant("kv-restore-ignores-record-timestamp", "restore stamps values with -1 instead of the record "
                  "timestamp", rules=("RST-2",))
def _timestamp_blind_restore(store: KeyValueBytesStore, store_type: StoreType, records: Sequence[cl.ChangelogRecord],
                             batch_size: int, after_batch: Callable[[RestoreResult], None] | None) -> RestoreResult:
    """Restores as if every record had no timestamp (-1), the legacy conversion's value (RST-2)."""
    blind = [replace(r, timestamp=-1) for r in records]
    return restore(store, store_type, blind, batch_size=batch_size, after_batch=after_batch)


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


@mutant("kv-memory-iterator-sees-inserts", "in-memory iterators walk the live map and see keys inserted later", FAMILY,
        rules=("KV-41",))
def _memory_iterator_sees_inserts() -> dict[str, Handler]:
    classes: StoreClasses = {(t, Backend.MEMORY): (lambda name, _t=t: _live_keys_store(name, _t)) for t in BUILT_KV_TYPES}
    return _open_with(replace(DEFAULT_BUILDER, open_bytes_store=opening(classes)))


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


@_caching_mutant("kv-cache-flush-in-key-order", "the cache flushes dirty entries in key order, not write order",
                 rules=("CACHE-3",))
def _key_order_caching(inner: KeyValueBytesStore, context: RecordContextHolder, max_bytes: int,
                       listener: FlushListener | None) -> CachingKeyValueStore:
    store = CachingKeyValueStore(inner, context, max_bytes=max_bytes, flush_listener=listener)
    store.cache = _KeyOrderCache(max_bytes, store._write_back)
    return store


class _TombstoneSkippingCache(CachingKeyValueStore):
    """Applies the DSL's "absent below, nothing to delete" shortcut to every store (CACHE-5)."""

    def _write_back(self, batch: list[tuple[bytes, CacheEntry]]) -> None:
        kept = [(k, e) for k, e in batch if e.value is not None or self.inner.get(k) is not None]
        super()._write_back(kept)


@_caching_mutant("kv-cache-drops-absent-tombstones", "without a flush listener, cached tombstones of absent keys are "
                 "dropped", rules=("CACHE-5",))
def _tombstone_skipping_caching(inner: KeyValueBytesStore, context: RecordContextHolder, max_bytes: int,
                                listener: FlushListener | None) -> CachingKeyValueStore:
    return _TombstoneSkippingCache(inner, context, max_bytes=max_bytes, flush_listener=listener)


# --- store directories and value facades ------------------------------------------------------------------------

@_opening_mutant("kv-tables-newest-format", "RocksDB tables keep the engine's default format_version 6 (LAY-9)",
                 rules=("KV-21", "LAY-9"))
def _open_newest_table_format(store_type: StoreType, backend: Backend, *, name: str,
                              state_dir: str | Path | None = None, application_id: str = "app",
                              task_id: str = "0_0", **options: Any) -> KeyValueBytesStore:
    """Kafka's options in every family, but RocksDB 8.6+'s default table ``format_version`` 6, which RocksDB 7.x
    cannot read (KV-21, LAY-9); one block cache for the store, as the reference shares it."""
    if Backend(backend) is Backend.MEMORY:
        return open_kv_store(store_type, backend, name=name, **options)
    state_dir = state_dir or tempfile.mkdtemp(prefix="kstate-")
    cache = block_cache()
    engine = RocksDBEngine(store_directory(state_dir, application_id, task_id, name),
                           options=lambda: rocksdb_options(cache, format_version=6),
                           offsets=lambda: offsets_options(format_version=6), store_name=name)
    return cast(KeyValueBytesStore, store_classes(StoreType(store_type)).rocksdb(
        name, task_directory(state_dir, application_id, task_id), engine=engine, options=RocksDBOptions(**options)))


@_opening_mutant("kv-offsets-family-data-options", "the offsets family gets the data families' RocksDB options (KV-22)",
                 rules=("KV-22",))
def _open_offsets_with_data_options(store_type: StoreType, backend: Backend, *, name: str,
                                    state_dir: str | Path | None = None, application_id: str = "app",
                                    task_id: str = "0_0", **options: Any) -> KeyValueBytesStore:
    """The data families' options (bloom filter, ``optimize_filters_for_hits``, 16 MiB write buffers) in the
    ``offsets`` family too, as KV-22 said before Kafka's ``offsetsCfOptions`` were read."""
    if Backend(backend) is Backend.MEMORY:
        return open_kv_store(store_type, backend, name=name, **options)
    state_dir = state_dir or tempfile.mkdtemp(prefix="kstate-")
    cache = block_cache()
    engine = RocksDBEngine(store_directory(state_dir, application_id, task_id, name),
                           options=lambda: rocksdb_options(cache), offsets=lambda: rocksdb_options(cache),
                           store_name=name)
    return cast(KeyValueBytesStore, store_classes(StoreType(store_type)).rocksdb(
        name, task_directory(state_dir, application_id, task_id), engine=engine, options=RocksDBOptions(**options)))


@_opening_mutant("kv-legacy-checkpoint-ignored", "a task's pre-4.3 .checkpoint is left unread at open (KV-55)",
                 rules=("KV-55", "OFF-19"))
def _open_without_migration(store_type: StoreType, backend: Backend, **options: Any) -> KeyValueBytesStore:
    return open_kv_store(store_type, backend, **{**options, "migrate_legacy_files": False})


@_opening_mutant("kv-old-reader-opens-offsets", "a pre-4.3 reader opens a store holding the offsets family (UPG-2)",
                 rules=("UPG-2",))
def _open_as_current_reader(store_type: StoreType, backend: Backend, **options: Any) -> KeyValueBytesStore:
    options.pop("manage_offsets", None)  # every reader opens the offsets family
    return open_kv_store(store_type, backend, **options)


@_rocksdb_mixin_mutant("kv-downgrade-close-plain", "closing for a downgrade writes no .checkpoint and keeps the "
                       "offsets family", rules=("UPG-4", "OFF-20"))
class _PlainDowngradeClose:
    """A downgrade close that is an ordinary close: no legacy files, the offsets family stays (UPG-4)."""

    def close_for_downgrade(self) -> None:
        self.close()  # type: ignore[attr-defined]


@mutant("kv-facade-eager-headers", "the headers facade parses the header bytes on every read (KV-62, HV-10)", FAMILY,
        rules=("KV-62", "HV-10"))
def _facade_eager_headers() -> dict[str, Handler]:
    def get_typed(payload: JsonDict) -> JsonDict:
        out = call("store.get_typed", {**payload, "fields": ["value", "timestamp", "headers"]})
        if "error" in out or not out.get("found"):
            return out
        asked = payload.get("fields")
        return out if not asked else {"found": True, **{f: out[f] for f in asked if f in out}}

    return {"store.get_typed": get_typed}


# --- one mutant per required KV / UPG rule (issue 15): each a realistic porting bug, each breaking one rule ----


def _answer(op_name: str, change: Callable[[JsonDict, JsonDict], JsonDict]) -> dict[str, Handler]:
    """The reference's ``op_name`` with its answer passed through ``change(payload, answer)`` (errors untouched)."""

    def handler(payload: JsonDict) -> JsonDict:
        out = call(op_name, payload)
        return out if "error" in out else change(payload, out)

    return {op_name: handler}


def _asking(op_name: str, change: Callable[[JsonDict], JsonDict]) -> dict[str, Handler]:
    """The reference's ``op_name`` called with ``change(payload)`` instead of the payload given."""
    return {op_name: lambda payload: call(op_name, change(payload))}


def _handle_of(payload: JsonDict) -> Any:
    from kstate.ops import store_ops

    return store_ops._HANDLES.get(str(payload.get("handle")))


# KV-1 ---------------------------------------------------------------------------------------------------------


@_mixin_mutant("kv-memory-headers-no-put-all", "the in-memory headers store leaves putAll unimplemented",
               rules=("KV-1",), backends=_MEMORY, store_types=(StoreType.TIMESTAMPED_KV_WITH_HEADERS,))
class _NoPutAll:
    def put_all(self, entries: Sequence[tuple[bytes, bytes | None]]) -> None:
        from kstate.stores.api import ProcessorStateError

        raise ProcessorStateError(f"putAll is not supported by store {self.name}")  # type: ignore[attr-defined]


# KV-2 ... KV-10: the operations -----------------------------------------------------------------------------------


@_mixin_mutant("kv-empty-value-deletes", "put of an empty value deletes the key (empty bytes taken for null)",
               rules=("KV-2",))
class _EmptyValueDeletes:
    """``if not value: delete`` — Python's falsy empty bytes taken for null (KV-2)."""

    def put(self, key: bytes, value: bytes | None) -> None:
        super().put(key, value or None)  # type: ignore[misc]


@mutant("kv-put-all-skips-null-keys", "putAll skips entries with a null key and writes the others", FAMILY,
        rules=("KV-3",))
def _put_all_skips_null_keys() -> dict[str, Handler]:
    return _asking("store.put_all", lambda p: {**p, "entries": [e for e in p.get("entries") or [] if e[0] is not None]})


@mutant("kv-put-all-ignores-null-values", "putAll skips entries with a null value instead of deleting", FAMILY,
        rules=("KV-4",))
def _put_all_ignores_null_values() -> dict[str, Handler]:
    return _asking("store.put_all", lambda p: {**p, "entries": [e for e in p.get("entries") or [] if e[1] is not None]})


@mutant("kv-get-absent-empty", "get of an absent key answers an empty value instead of null", FAMILY, rules=("KV-5",))
def _get_absent_empty() -> dict[str, Handler]:
    return _answer("store.get", lambda _p, out: {**out, "value": "" if out.get("value") is None else out["value"]})


@mutant("kv-put-if-absent-returns-null", "putIfAbsent answers null even when the key was present", FAMILY,
        rules=("KV-6",))
def _put_if_absent_returns_null() -> dict[str, Handler]:
    return _answer("store.put_if_absent", lambda _p, out: {**out, "previous": None})


def _first_entry_wins(payload: JsonDict) -> JsonDict:
    seen: dict[Any, Any] = {}
    for key, value in payload.get("entries") or []:
        seen.setdefault(key, value)
    return {**payload, "entries": [[k, v] for k, v in seen.items()]}


@mutant("kv-put-all-first-wins", "putAll keeps the first entry of a key given twice, not the last", FAMILY,
        rules=("KV-7",))
def _put_all_first_wins() -> dict[str, Handler]:
    return _asking("store.put_all", _first_entry_wins)


@mutant("kv-delete-returns-null", "delete removes the key but answers null, not the old value", FAMILY,
        rules=("KV-8",))
def _delete_returns_null() -> dict[str, Handler]:
    return _answer("store.delete", lambda _p, out: {**out, "previous": None})


def _upper_exclusive(payload: JsonDict, out: JsonDict) -> JsonDict:
    upper = payload.get("to")
    return {**out, "entries": [e for e in out["entries"] if upper is None or e[0] != upper]}


@mutant("kv-range-upper-exclusive", "range and reverseRange exclude the upper bound (a half-open range)", FAMILY,
        rules=("KV-9",))
def _range_upper_exclusive() -> dict[str, Handler]:
    return {**_answer("store.range", _upper_exclusive), **_answer("store.reverse_range", _upper_exclusive)}


def _swapped_bounds(payload: JsonDict) -> JsonDict:
    lower, upper = payload.get("from"), payload.get("to")
    if lower is not None and upper is not None and bytes.fromhex(lower) > bytes.fromhex(upper):
        return {**payload, "from": upper, "to": lower}
    return payload


@mutant("kv-inverted-range-swapped", "a range with from > to is answered with its bounds swapped", FAMILY,
        rules=("KV-10",))
def _inverted_range_swapped() -> dict[str, Handler]:
    return {**_asking("store.range", _swapped_bounds), **_asking("store.reverse_range", _swapped_bounds)}


# KV-11, KV-12: iterators and closing ---------------------------------------------------------------------------


@_mixin_mutant("kv-rocksdb-iterator-live", "RocksDB iterators re-seek after every entry and see later writes",
               rules=("KV-11",), backends=_ROCKSDB)
class _LiveRocksDBIterators:
    """Each step re-seeks the database after the last key returned: no snapshot, later writes are seen (KV-11)."""

    def _iterator(self, lower: bytes | None, upper: bytes | None, upper_inclusive: bool, reverse: bool) -> StoreIterator:
        accessor = self._accessor  # type: ignore[attr-defined]

        def walk() -> Iterator[tuple[bytes, bytes]]:
            last: bytes | None = None
            while True:
                if reverse:
                    bounds = (lower, upper if last is None else last, True, upper_inclusive if last is None else False)
                else:
                    bounds = (lower if last is None else last, upper, last is None, upper_inclusive)
                source, cursors = accessor.scan(*bounds, reverse)
                entry = next(iter(source), None)
                for cursor in cursors:
                    cursor.close()
                if entry is None:
                    return
                last = entry[0]
                yield entry

        iterator = StoreIterator(self.name, walk(), (), self._iterators.discard)  # type: ignore[attr-defined]
        self._iterators.add(iterator)  # type: ignore[attr-defined]
        return iterator


@_mixin_mutant("kv-second-close-refused", "closing a closed store is refused instead of a no-op", rules=("KV-12",))
class _SecondCloseRefused:
    """``close`` checks the store is open first, as every other operation does (KV-12: closing twice is a no-op)."""

    def close(self) -> None:
        if not self.is_open:  # type: ignore[attr-defined]
            from kstate.stores.api import InvalidStateStoreError

            raise InvalidStateStoreError(f"Store {self.name} is currently closed.")  # type: ignore[attr-defined]
        super().close()  # type: ignore[misc]


# KV-13, KV-14: prefix scans ---------------------------------------------------------------------------------------


@_mixin_mutant("kv-prefix-scan-upper-inclusive", "RocksDB prefixScan includes the incremented prefix itself",
               rules=("KV-13",), backends=_ROCKSDB)
class _PrefixUpperInclusive:
    def _prefix_iterator(self, prefix: bytes) -> StoreIterator:
        from kstate.codecs.primitives import increment_without_overflow

        return self._iterator(prefix, increment_without_overflow(prefix), True, False)  # type: ignore[attr-defined,no-any-return]


@_mixin_mutant("kv-memory-prefix-scan-open-ended", "the in-memory prefixScan scans an unboundable prefix as RocksDB "
               "does", rules=("KV-14",), backends=_MEMORY)
class _MemoryPrefixOpenEnded:
    def _prefix_iterator(self, prefix: bytes) -> StoreIterator:
        from kstate.codecs.primitives import increment_without_overflow

        upper = increment_without_overflow(prefix)
        return self._iterator(prefix, upper, upper is None, False)  # type: ignore[attr-defined,no-any-return]


# KV-15, KV-16 ------------------------------------------------------------------------------------------------------


@_mixin_mutant("kv-upgrade-count-new-family-only", "approximateNumEntries in upgrade mode counts the new family only",
               rules=("KV-15",), backends=_ROCKSDB, store_types=_UPGRADING)
class _CountNewFamilyOnly:
    def approximate_num_entries(self) -> int:
        accessor = self._accessor  # type: ignore[attr-defined]
        if isinstance(accessor, DualColumnFamilyAccessor):
            self._allow(Op.READ)  # type: ignore[attr-defined]
            return accessor.staged.count(accessor.new_cf)
        return super().approximate_num_entries()  # type: ignore[misc,no-any-return]


@mutant("kv-restore-skips-tombstones", "restore skips changelog tombstones (nothing to restore)", FAMILY,
        rules=("KV-16",))
def _restore_skips_tombstones() -> dict[str, Handler]:
    return _asking("store.restore", lambda p: {**p, "records": [r for r in p.get("records") or []
                                                                  if r.get("value") is not None]})


# KV-20: where the store lives ---------------------------------------------------------------------------------------


@_opening_mutant("kv-store-outside-rocksdb-dir", "RocksDB stores live in <task>/<name>, without the rocksdb/ level",
                 rules=("KV-20",))
def _open_without_rocksdb_dir(store_type: StoreType, backend: Backend, *, name: str,
                              state_dir: str | Path | None = None, application_id: str = "app",
                              task_id: str = "0_0", **options: Any) -> KeyValueBytesStore:
    if Backend(backend) is Backend.MEMORY:
        return open_kv_store(store_type, backend, name=name, **options)
    task_dir = task_directory(state_dir or tempfile.mkdtemp(prefix="kstate-"), application_id, task_id)
    engine = RocksDBEngine(task_dir / name)
    return cast(KeyValueBytesStore, store_classes(StoreType(store_type)).rocksdb(
        name, task_dir, engine=engine, options=RocksDBOptions(**options)))


# KV-30 .. KV-38, UPG-5 .. UPG-8: the dual column-family upgrade -----------------------------------------------------


@_mixin_mutant("kv-upgrade-mode-when-legacy-family-exists", "upgrade mode is chosen when the legacy family exists, "
               "even empty", rules=("KV-30",), backends=_ROCKSDB, store_types=(StoreType.TIMESTAMPED_KV,),
               wrap=_with_accessor)
def _upgrade_when_legacy_family_exists(instance: Any, accessor: Any) -> Any:
    """Upgrade mode whenever the legacy family exists, not when it holds a key (KV-30)."""
    from kstate.stores.column_families import SingleColumnFamilyAccessor

    if isinstance(accessor, SingleColumnFamilyAccessor) and instance.layout.layout_type is StoreType.TIMESTAMPED_KV:
        from kstate.stores.column_families import CONVERTERS

        instance.mode = "upgrade"
        return DualColumnFamilyAccessor(accessor.staged, "default", accessor.cf,
                                        CONVERTERS["convert_to_timestamped_format"])
    return accessor


@_mixin_mutant("kv-iterators-skip-legacy-conversion", "iterators in upgrade mode return legacy values unconverted",
               rules=("KV-31",), backends=_ROCKSDB, store_types=_UPGRADING, wrap=_accessor_mixin)
class _UnconvertedScans(DualColumnFamilyAccessor):
    """Iterators hand out legacy values as stored; only ``get`` converts (KV-31)."""

    def scan(self, lower: bytes | None, upper: bytes | None, lower_inclusive: bool, upper_inclusive: bool,
             reverse: bool) -> Any:
        from kstate.stores.column_families import merge_sorted

        new_source, new_cursor = self.staged.scan(self.new_cf, lower, upper, lower_inclusive, upper_inclusive, reverse)
        old_source, old_cursor = self.staged.scan(self.old_cf, lower, upper, lower_inclusive, upper_inclusive, reverse)
        return merge_sorted(new_source, old_source, reverse), [new_cursor, old_cursor]


@_mixin_mutant("kv-get-does-not-migrate", "get converts a legacy value but leaves it in the legacy family",
               rules=("KV-32", "KV-37"), backends=_ROCKSDB, store_types=_UPGRADING, wrap=_accessor_mixin)
class _GetWithoutMigration(DualColumnFamilyAccessor):
    def get(self, key: bytes) -> bytes | None:
        return self.get_only(key)


@_mixin_mutant("kv-delete-returns-raw-legacy", "delete answers a legacy key's old value unconverted", rules=("KV-33",),
               backends=_ROCKSDB, store_types=_UPGRADING, wrap=_accessor_mixin)
class _DeleteReadsRawLegacy(DualColumnFamilyAccessor):
    def get_only(self, key: bytes) -> bytes | None:
        value = self.staged.read(self.new_cf, key)
        return value if value is not None else self.staged.read(self.old_cf, key)


@_mixin_mutant("kv-writes-keep-legacy-entry", "writes in upgrade mode leave the key's legacy entry in place",
               rules=("KV-34", "KV-37"), backends=_ROCKSDB, store_types=_UPGRADING, wrap=_accessor_mixin)
class _WritesKeepLegacy(DualColumnFamilyAccessor):
    def put(self, key: bytes, value: bytes | None) -> None:
        self.staged.stage(self.new_cf, key, value)

    def put_all(self, entries: Mapping[bytes, bytes | None]) -> None:
        self.staged.staged(self.new_cf).update(entries)


@_mixin_mutant("kv-put-if-absent-does-not-migrate", "putIfAbsent reads a legacy key without migrating it",
               rules=("KV-36", "KV-37"), backends=_ROCKSDB, store_types=_UPGRADING)
class _PutIfAbsentWithoutMigration:
    def put_if_absent(self, key: bytes, value: bytes | None) -> bytes | None:
        if key is None:
            return super().put_if_absent(key, value)
        self._allow(Op.WRITE)  # type: ignore[attr-defined]
        original = self._get_only(key)  # type: ignore[attr-defined]
        if original is None:
            self._write(key, value)  # type: ignore[attr-defined]
            self._update_position()  # type: ignore[attr-defined]
        return original  # type: ignore[no-any-return]


@_mixin_mutant("kv-plain-upgrade-timestamp-zero", "a timestamped store over plain data reads legacy values with "
               "timestamp 0", rules=("UPG-5",), backends=_ROCKSDB, store_types=(StoreType.TIMESTAMPED_KV,),
               wrap=_with_accessor)
def _zero_timestamp_upgrade(_instance: Any, accessor: Any) -> Any:
    """Legacy plain values get timestamp 0 instead of -1 (UPG-5)."""
    if isinstance(accessor, DualColumnFamilyAccessor):
        accessor.convert = lambda value: bytes(8) + value
    return accessor


@_mixin_mutant("kv-empty-legacy-family-kept", "a header store keeps an empty keyValueWithTimestamp family",
               rules=("UPG-6", "KV-38"), backends=_ROCKSDB, store_types=(StoreType.TIMESTAMPED_KV_WITH_HEADERS,),
               wrap=_on_instance)
class _EmptyLegacyFamilyKept:
    """The header store leaves an empty keyValueWithTimestamp family in the database (UPG-6)."""

    def _open_column_families(self) -> Any:
        engine = self.engine  # type: ignore[attr-defined]
        engine.drop_column_family = lambda _cf: None
        try:
            return super()._open_column_families()  # type: ignore[misc]
        finally:
            del engine.drop_column_family


@_mixin_mutant("kv-mixed-legacy-data-accepted", "a header store over plain and timestamped data opens, ignoring the "
               "plain", rules=("UPG-7", "KV-38"), backends=_ROCKSDB,
               store_types=(StoreType.TIMESTAMPED_KV_WITH_HEADERS,), wrap=_on_instance)
class _MixedLegacyDataAccepted:
    """Plain data beside timestamped data is ignored: the header store upgrades from the timestamped family (UPG-7).

    Both places that plan the column families see the plain family as empty: the checks before anything is
    written (on the read-only and on the writable database) and the choice of the accessor.
    """

    @staticmethod
    @contextlib.contextmanager
    def _plain_family_looks_empty(engine: Any) -> Iterator[None]:
        if not (engine.has_column_family("keyValueWithTimestamp") and not engine.is_empty("keyValueWithTimestamp")):
            yield
            return
        real_is_empty = engine.is_empty
        engine.is_empty = lambda cf: True if cf == "default" else real_is_empty(cf)
        try:
            yield
        finally:
            del engine.is_empty

    def _refuse_unopenable(self, engine: Any, ignore_invalid_state: bool) -> None:
        with self._plain_family_looks_empty(engine):
            super()._refuse_unopenable(engine, ignore_invalid_state)  # type: ignore[misc]

    def _open_column_families(self) -> Any:
        with self._plain_family_looks_empty(self.engine):  # type: ignore[attr-defined]
            return super()._open_column_families()  # type: ignore[misc]


@_mixin_mutant("kv-plain-to-headers-as-timestamped", "a header store converts plain legacy values as timestamped ones",
               rules=("UPG-8", "KV-38"), backends=_ROCKSDB, store_types=(StoreType.TIMESTAMPED_KV_WITH_HEADERS,),
               wrap=_with_accessor)
def _plain_to_headers_as_timestamped(_instance: Any, accessor: Any) -> Any:
    """Plain legacy values are converted as if they were timestamped ones: ``00`` + value, no ``FF×8`` (UPG-8)."""
    if isinstance(accessor, DualColumnFamilyAccessor) and accessor.old_cf == "default":
        from kstate.stores.column_families import CONVERTERS

        accessor.convert = CONVERTERS["convert_to_header_format"]
    return accessor


@_mixin_mutant("kv-older-type-opens-newer-directory", "an older store type opens a directory holding families it does "
               "not know", rules=("UPG-1",), backends=_ROCKSDB,
               store_types=(StoreType.KEY_VALUE, StoreType.TIMESTAMPED_KV), wrap=_on_instance)
class _AllFamiliesOpened:
    """Opens every column family on disk and plans with the ones it knows, ignoring the others: an older store
    type accepts a newer directory (UPG-1)."""

    def _check_known_column_families(self, existing: Any) -> None:
        return None

    def _open_column_families(self) -> Any:
        engine = self.engine  # type: ignore[attr-defined]
        known = self.layout.known_column_families(self.manage_offsets)  # type: ignore[attr-defined]
        every = engine.column_families
        engine.column_families = lambda: [cf for cf in every() if cf in known]
        try:
            return super()._open_column_families()  # type: ignore[misc]
        finally:
            del engine.column_families


# KV-40 .. KV-45: in memory -------------------------------------------------------------------------------------------


@_mixin_mutant("kv-memory-signed-key-order", "in-memory stores order keys by signed bytes", rules=("KV-40",),
               backends=_MEMORY)
class _SignedByteOrder:
    """Keys ordered as Java's signed ``byte`` compares them, not unsigned (KV-40)."""

    def _iterator(self, lower: bytes | None, upper: bytes | None, upper_inclusive: bool, reverse: bool) -> StoreIterator:
        keys = self._map.key_range("default", lower, upper, upper_inclusive=upper_inclusive)  # type: ignore[attr-defined]
        keys.sort(key=lambda k: bytes(b ^ 0x80 for b in k), reverse=reverse)
        return StoreIterator(self.name, self._live_values(keys))  # type: ignore[attr-defined]


@_mixin_mutant("kv-memory-close-keeps-data", "closing an in-memory store keeps its map; open iterators go on",
               rules=("KV-43",), backends=_MEMORY)
class _CloseKeepsMap:
    def close(self) -> None:
        self._open = False


@_mixin_mutant("kv-memory-remembers-offsets", "in-memory stores answer the last committed offsets", rules=("KV-44",),
               backends=_MEMORY)
class _RemembersOffsets:
    def commit(self, changelog_offsets: Mapping[TopicPartition, int | None]) -> None:
        super().commit(changelog_offsets)  # type: ignore[misc]
        self.__dict__.setdefault("_remembered", {}).update(changelog_offsets)

    def committed_offset(self, partition: TopicPartition) -> int | None:
        super().committed_offset(partition)  # type: ignore[misc]
        return self.__dict__.get("_remembered", {}).get(partition)  # type: ignore[no-any-return]


def _memory_rebuild_minus_one(payload: JsonDict) -> JsonDict:
    handle = _handle_of(payload)
    if handle is None or handle.backend is not Backend.MEMORY or handle.store_type is StoreType.KEY_VALUE:
        return payload
    return {**payload, "records": [{**r, "timestamp": -1} for r in payload.get("records") or []]}


@mutant("kv-memory-rebuild-timestamp-minus-one", "in-memory timestamped stores restore with -1, as a disk upgrade reads",
        FAMILY, rules=("KV-45", "UPG-9"))
def _memory_rebuild_minus_one_mutant() -> dict[str, Handler]:
    return _asking("store.restore", _memory_rebuild_minus_one)


# KV-50 .. KV-56: store-managed offsets ------------------------------------------------------------------------------


@_mixin_mutant("kv-reads-miss-staged-writes", "get reads committed data only, not writes staged since the last commit",
               rules=("KV-51",), backends=_ROCKSDB)
class _CommittedReads:
    """``get`` goes to the database only: writes staged since the last commit are invisible to it (KV-51)."""

    def get(self, key: bytes) -> bytes | None:
        from kstate.stores.column_families import SingleColumnFamilyAccessor

        accessor = self._accessor  # type: ignore[attr-defined]
        if key is None or not isinstance(accessor, SingleColumnFamilyAccessor) or not self.is_open:  # type: ignore[attr-defined]
            return super().get(key)  # type: ignore[misc,no-any-return]
        return self.engine.get(accessor.cf, key)  # type: ignore[attr-defined,no-any-return]


@_opening_mutant("kv-unclean-shutdown-ignored", "stores open as if ignore_invalid_state were always set",
                 rules=("KV-52",))
def _open_ignoring_invalid_state(store_type: StoreType, backend: Backend, **options: Any) -> KeyValueBytesStore:
    return open_kv_store(store_type, backend, **{**options, "ignore_invalid_state": True})


@_mixin_mutant("kv-empty-commit-keeps-offsets", "commit of an empty map writes the data and keeps every offset",
               rules=("KV-53",), backends=_ROCKSDB)
class _EmptyCommitKeepsOffsets:
    def commit(self, changelog_offsets: Mapping[TopicPartition, int | None]) -> None:
        if changelog_offsets:
            super().commit(changelog_offsets)  # type: ignore[misc]
        else:
            self.flush()  # type: ignore[attr-defined]


@_mixin_mutant("kv-position-not-loaded", "the stored position is not loaded at open", rules=("KV-54",),
               backends=_ROCKSDB)
class _PositionNotLoaded:
    """The position starts empty at every open; the stored one is overwritten by the next commit (KV-54)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._position: dict[str, dict[int, int]] = {}


@_mixin_mutant("kv-position-advanced-by-put-only", "delete, putAll and putIfAbsent do not advance the position",
               rules=("KV-54",), backends=_ROCKSDB)
class _OnlyPutAdvancesPosition:
    """Only ``put`` advances the position; delete, putAll and putIfAbsent do not (KV-54)."""

    @contextlib.contextmanager
    def _no_position(self) -> Iterator[None]:
        context = self._record_context  # type: ignore[has-type]
        self._record_context = None
        try:
            yield
        finally:
            self._record_context = context

    def delete(self, key: bytes) -> bytes | None:
        with self._no_position():
            return super().delete(key)  # type: ignore[misc,no-any-return]

    def put_all(self, entries: Sequence[tuple[bytes, bytes | None]]) -> None:
        with self._no_position():
            super().put_all(entries)  # type: ignore[misc]

    def put_if_absent(self, key: bytes, value: bytes | None) -> bytes | None:
        with self._no_position():
            return super().put_if_absent(key, value)  # type: ignore[misc,no-any-return]


def _checkpoint_path(options: Mapping[str, Any]) -> Path | None:
    if options.get("state_dir") is None:
        return None
    return task_directory(options["state_dir"], options.get("application_id", "app"),
                          options.get("task_id", "0_0")) / ".checkpoint"


@_opening_mutant("kv-checkpoint-deleted-whole", "migrating a store's .checkpoint entries deletes the other stores' too",
                 rules=("KV-55",))
def _open_deleting_whole_checkpoint(store_type: StoreType, backend: Backend, **options: Any) -> KeyValueBytesStore:
    path = _checkpoint_path(options) if Backend(backend) is Backend.ROCKSDB else None
    before = path.read_bytes() if path is not None and path.is_file() else None
    store = open_kv_store(store_type, backend, **options)
    if path is not None and before is not None and (not path.exists() or path.read_bytes() != before):
        path.unlink(missing_ok=True)  # "Kafka deletes the file": but other stores' entries were in it
    return store


@_opening_mutant("kv-checkpoint-unknown-offset-committed", "a .checkpoint's -4 (unknown) offset is committed as -4",
                 rules=("KV-55", "OFF-19"))
def _open_committing_unknown(store_type: StoreType, backend: Backend, **options: Any) -> KeyValueBytesStore:
    from kstate.storage_files import read_checkpoint_file

    path = _checkpoint_path(options) if Backend(backend) is Backend.ROCKSDB else None
    before = read_checkpoint_file(path) if path is not None and path.is_file() else {}
    store = open_kv_store(store_type, backend, **options)
    unknown = {TopicPartition(t, p): -4 for (t, p), offset in before.items()
               if offset in (None, -4) and (t, p) in {(tp.topic, tp.partition) for tp in store.changelog_partitions}}  # type: ignore[attr-defined]
    if unknown:
        store.commit(unknown)  # the -4 sentinel taken for an offset
    return store


@_opening_mutant("kv-refused-open-writes-closed", "a refused open closes the store on its way out, writing CLOSED",
                 rules=("KV-56",))
def _open_closing_on_refusal(store_type: StoreType, backend: Backend, **options: Any) -> KeyValueBytesStore:
    from kstate.stores.api import ProcessorStateError

    try:
        return open_kv_store(store_type, backend, **options)
    except ProcessorStateError:
        if Backend(backend) is Backend.ROCKSDB and not options.get("ignore_invalid_state"):
            # The error path's "finally: close()": it writes CLOSED for a store this instance never opened.
            open_kv_store(store_type, backend, **{**options, "ignore_invalid_state": True}).close()
        raise


# KV-60 .. KV-62: the typed facades ---------------------------------------------------------------------------------


def _plain_facade_as_timestamped(payload: JsonDict, out: JsonDict) -> JsonDict:
    handle = _handle_of(payload)
    value = out.get("value")
    if handle is None or handle.store_type is not StoreType.KEY_VALUE or value is None or len(value) < 16:
        return out
    return {**out, "value": value[16:]}


@mutant("kv-plain-facade-strips-timestamp", "the plain facade reads values of 8+ bytes as [ts][value]", FAMILY,
        rules=("KV-60",))
def _plain_facade_strips_timestamp() -> dict[str, Handler]:
    return _answer("store.get_typed", _plain_facade_as_timestamped)


def _timestamp_little_endian(payload: JsonDict, out: JsonDict) -> JsonDict:
    handle = _handle_of(payload)
    if handle is None or handle.store_type is not StoreType.TIMESTAMPED_KV or not out.get("found"):
        return out
    raw = call("store.get", {"handle": payload.get("handle"), "key": payload.get("key")})["value"]
    return {**out, "timestamp": int.from_bytes(bytes.fromhex(raw)[:8], "little", signed=True)}


@mutant("kv-timestamp-facade-little-endian", "the timestamped facade decodes the timestamp little-endian", FAMILY,
        rules=("KV-61",))
def _timestamp_facade_little_endian() -> dict[str, Handler]:
    return _answer("store.get_typed", _timestamp_little_endian)


def _no_headers_as_null(payload: JsonDict, out: JsonDict) -> JsonDict:
    return {**out, "headers": None} if out.get("headers") == [] else out


@mutant("kv-facade-no-headers-null", "the headers facade answers null headers for a value stored without headers",
        FAMILY, rules=("KV-62", "HV-7"))
def _facade_no_headers_null() -> dict[str, Handler]:
    return _answer("store.get_typed", _no_headers_as_null)


# KV-17, UPG-3, UPG-4 -------------------------------------------------------------------------------------------------


def _peek_by_next(payload: JsonDict) -> JsonDict:
    out = call("store.iterator_next", {"iterator": payload.get("iterator"), "max": 1})
    if "error" in out:
        return out
    entries = out["entries"]
    return {"key": entries[0][0] if entries else None}


@mutant("kv-peek-consumes", "peekNextKey is next() keeping only the key: the entry is consumed", FAMILY,
        rules=("KV-17",))
def _peek_consumes() -> dict[str, Handler]:
    return {"store.iterator_peek_next_key": _peek_by_next}


def _wipe_entries_only(payload: JsonDict) -> JsonDict:
    from kstate.stores.engine import WriteBatch, list_column_families

    path = store_directory(str(payload["state_dir"]), str(payload.get("application_id", "app")),
                           str(payload.get("task_id", "0_0")), str(payload["name"]))
    if not list_column_families(path):
        return {}
    engine = RocksDBEngine(path)
    try:
        batch = WriteBatch()
        for cf in engine.column_families():
            cursor = engine.iterate(cf)
            try:
                for key, _ in cursor:
                    batch.delete(cf, key)
            finally:
                cursor.close()
        engine.write(batch)
    finally:
        engine.close()
    return {}


@mutant("kv-wipe-keeps-column-families", "wiping a refused store deletes its entries but keeps the database", FAMILY,
        rules=("UPG-3",))
def _wipe_keeps_column_families() -> dict[str, Handler]:
    return {"store.wipe": _wipe_entries_only}


def _rewrite_checkpoint(store: Any, keep: Callable[[tuple[str, int], int | None], bool]) -> None:
    from kstate.storage_files import read_checkpoint_file, task_checkpoint_path, write_checkpoint_file

    if store.task_dir is None:
        return
    path = task_checkpoint_path(store.task_dir)
    entries = read_checkpoint_file(path)
    write_checkpoint_file(path, {tp: -4 if off is None else off for tp, off in entries.items()
                                 if keep((tp[0], tp[1]), off)})


@_mixin_mutant("kv-downgrade-checkpoint-overwritten", "the downgrade .checkpoint drops the other stores' entries",
               rules=("UPG-4", "OFF-20"), backends=_ROCKSDB)
class _DowngradeOverwritesCheckpoint:
    """The downgrade ``.checkpoint`` holds this store's partitions only: other stores' entries are lost (OFF-20)."""

    def close_for_downgrade(self) -> None:
        super().close_for_downgrade()  # type: ignore[misc]
        mine = {(tp.topic, tp.partition) for tp in self.changelog_partitions}  # type: ignore[attr-defined]
        _rewrite_checkpoint(self, lambda tp, _offset: tp in mine)


@_mixin_mutant("kv-downgrade-omits-uncommitted", "the downgrade .checkpoint leaves out partitions without an offset",
               rules=("UPG-4", "OFF-20"), backends=_ROCKSDB)
class _DowngradeOmitsUncommitted:
    """A partition without a committed offset is left out of the downgrade ``.checkpoint``, not written -4 (OFF-20)."""

    def close_for_downgrade(self) -> None:
        super().close_for_downgrade()  # type: ignore[misc]
        _rewrite_checkpoint(self, lambda _tp, offset: offset not in (None, -4))


# KV-23 .. KV-26, KV-57: store faults (issue 15) ----------------------------------------------------------------------


@_mixin_mutant("kv-refused-open-writes-database", "the open's checks run after the database is opened for writing",
               rules=("KV-23",), backends=_ROCKSDB, wrap=_on_instance)
class _ChecksOnWritableDatabase:
    """No read-only pass: the open's checks run once the database is open for writing, its offsets family
    created first, as a port of Kafka's open sequence does; a refused open has already rewritten RocksDB's
    files (KV-23). The same refusals, the same messages."""

    def _refuse_unopenable(self, engine: Any, ignore_invalid_state: bool) -> None:
        if getattr(engine, "read_only", False):
            return  # "checked below, on the open store"
        if self.manage_offsets:  # type: ignore[attr-defined]
            engine.create_column_family(OFFSETS_CF)
        super()._refuse_unopenable(engine, ignore_invalid_state)  # type: ignore[misc]


@_mixin_mutant("kv-lost-metadata-recreated", "a store directory without CURRENT is recreated by create_if_missing",
               rules=("KV-24",), backends=_ROCKSDB, wrap=_on_instance)
class _RecreatesLostMetadata:
    """A store directory without ``CURRENT`` is opened with ``create_if_missing``, as Kafka's options say:
    RocksDB writes a fresh ``CURRENT`` and ``MANIFEST`` beside the table files it no longer knows (KV-24)."""

    def _preflight(self, ignore_invalid_state: bool, migrate_legacy_files: bool, checked: Any) -> Path | None:
        import gc

        import rocksdict

        path: Path = self.path  # type: ignore[attr-defined]
        if path.is_dir() and not path.is_symlink() and any(path.iterdir()) and not (path / "CURRENT").exists():
            try:
                db = rocksdict.Rdict(str(path), rocksdb_options())
            except Exception as exc:  # "wal_dir contains existing log file": typed, as the engine types it
                raise storage_error(self.name, f"opening {path}", exc) from exc  # type: ignore[attr-defined]
            db.close()
            del db
            gc.collect()  # rocksdict keeps the LOCK while the object lives
        return super()._preflight(ignore_invalid_state, migrate_legacy_files, checked)  # type: ignore[misc,no-any-return]


@_mixin_mutant("kv-scan-stops-silently-at-read-error", "a scan ends silently at a damaged table block",
               rules=("KV-25",), backends=_ROCKSDB)
class _IterationEndUnchecked:
    """Iterators stop where rocksdict's iteration stops, without asking RocksDB why: a read error ends a scan
    early and silently (KV-25)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.engine.check_iteration_end = lambda *_args: None  # type: ignore[attr-defined]


def _file_name_safe(payload: JsonDict) -> JsonDict:
    name = payload.get("name")
    if not isinstance(name, str) or name in ("", ".", ".."):
        return payload
    return {**payload, "name": "".join(c if c.isascii() and (c.isalnum() or c in "._-") else "_" for c in name)}


@mutant("kv-store-name-sanitized", "a store name Kafka refuses is made file-name safe (a/b -> a_b) and opened",
        FAMILY, rules=("KV-26",))
def _store_name_sanitized() -> dict[str, Handler]:
    return _asking("store.open", _file_name_safe)


@contextlib.contextmanager
def _locations_unchecked() -> Iterator[None]:
    """The reference with its location check off: the application id and task id joined into the path as given."""
    from kstate.stores import factory

    checked = factory.validate_task_location

    def as_given(application_id: object, task_id: object) -> tuple[str, str]:
        return cast(str, application_id), cast(str, task_id)

    factory.validate_task_location = as_given
    try:
        yield
    finally:
        factory.validate_task_location = checked


def _unchecked(op_name: str) -> Handler:
    def handler(payload: JsonDict) -> JsonDict:
        with _locations_unchecked():
            return call(op_name, payload)

    return handler


_LOCATION_OPS = ("store.open", "store.wipe", "store.write_task_file", "store.task_files", "store.dump")


@mutant("kv-location-joined-as-given", "the application id and task id are joined into the path unchecked: "
        "'../esc' or '/abs' opens, wipes and writes outside the state directory", FAMILY, rules=("LAY-11",))
def _location_joined_as_given() -> dict[str, Handler]:
    return {op_name: _unchecked(op_name) for op_name in _LOCATION_OPS}


@mutant("kv-wipe-location-unchecked", "the store name is checked before a wipe, the application id and task id "
        "are not: a wipe by '..' deletes another directory's store", FAMILY, rules=("LAY-11", "UPG-3"))
def _wipe_location_unchecked() -> dict[str, Handler]:
    return {"store.wipe": _unchecked("store.wipe")}


class _LongOffsetsView:
    """An engine whose ``offsets`` family shows only the committed offsets that are 8 bytes long."""

    def __init__(self, engine: Any) -> None:
        self._engine = engine

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._engine, attr)

    def iterate(self, cf: str, *args: Any, **kwargs: Any) -> Any:
        from kstate.codecs.offsets import POSITION_KEY, STATUS_KEY

        cursor = self._engine.iterate(cf, *args, **kwargs)
        if cf != OFFSETS_CF:
            return cursor
        try:
            entries = [(k, v) for k, v in cursor if k in (STATUS_KEY, POSITION_KEY) or len(v) == 8]
        finally:
            cursor.close()
        return _SnapshotCursor(entries, None)


@_mixin_mutant("kv-short-offset-accepted-at-open", "a committed offset that is not 8 bytes long is not refused at open",
               rules=("KV-57",), backends=_ROCKSDB, wrap=_on_instance)
class _OffsetsDecodedLazily:
    """Committed offsets are decoded when asked for, as Kafka's ``committedOffset`` does: one that is not
    8 bytes long opens, and the store then cannot answer for it (KV-57)."""

    def _refuse_unopenable(self, engine: Any, ignore_invalid_state: bool) -> None:
        super()._refuse_unopenable(_LongOffsetsView(engine), ignore_invalid_state)  # type: ignore[misc]


# --- paired mutants (caught beside a model only: kstate conformance --model; mutants/paired_mutants.py) ---------

paired_mutant("paired-range-drops-upper-bound", "range answers the entries below 'to', leaving out the key equal to it",
              "kv", ("KV-9",), {"store.range": changed_answer("store.range", lambda p, out: {
                  "entries": [e for e in out["entries"] if p.get("to") is None or e[0] != p["to"]]})})
paired_mutant("paired-memory-count-one-more", "approximate_num_entries of a non-empty store answers one more",
              "kv", ("KV-15",), {"store.approximate_num_entries": changed_answer(
                  "store.approximate_num_entries", lambda _p, out: {"count": out["count"] + 1 if out["count"] else 0})})
paired_mutant("paired-changelog-drops-headers", "the changelog records of a header-aware store lose their headers",
              "kv", ("CL-8",), {"store.changelog": changed_answer("store.changelog", lambda _p, out: {
                  **out, "records": [{**r, "headers": []} for r in out["records"]]})})
paired_mutant("paired-put-if-absent-answers-null",
              "put_if_absent answers no previous value even when the key is present",
              "kv", ("KV-6",), {"store.put_if_absent": changed_answer(
                  "store.put_if_absent", lambda _p, _out: {"previous": None})})
