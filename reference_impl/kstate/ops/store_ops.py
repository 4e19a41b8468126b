"""The neutral ``store.*`` operations shared by every store family: handles, life cycle, changelog, restore, dump.

``store.open`` builds a store as Kafka's builders do (the bytes store, then change-logging, then the
record cache) and answers a handle; every other operation names the handle. Bytes are hex, values are
in the store type's layout (plain value, ``[ts][value]``, or ``[hsize][headers][ts][value]``), headers
are ``[[key, hex-or-null], ...]``, changelog records are ``{key, value, timestamp, headers}``
(spec/ops.md, OPS-*; spec/kv-stores.md, changelog.md, caching.md, restore.md).

Handles and open iterators live in registries inside this module; a family's own operations (the
key-value ones are in :mod:`kstate.ops.kv_store_ops`) find their store with :func:`store_for`. The store
types come from :mod:`kstate.codecs.store_types` (either spelling of the headers type is accepted) and
their classes from :mod:`kstate.stores.families`. Mutants reuse every handler but ``store.open``, which
they replace with :func:`make_open_handler` over a :class:`StoreBuilder` whose layers carry one bug.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from kstate.codecs import changelog as cl
from kstate.codecs.store_types import BUILT_TYPES, LEGACY_ALIASES, STORE_TYPES, Family, StoreType
from kstate.errors import InvalidArgumentError, KStateError
from kstate.ops import JsonDict, headers_from_json, headers_to_json, op, tohex
from kstate.ops.inputs import (
    INT32_MAX,
    INT32_MIN,
    as_hex,
    as_int,
    as_object,
    as_str,
    as_tuple,
    require_bool,
    require_choice,
    require_hex,
    require_int,
    require_list,
    require_str,
)
from kstate.store_dump import Rows, is_database, read_database, segment_databases
from kstate.stores.api import (
    Backend,
    ColumnFamilyStore,
    Crashable,
    Downgradable,
    Flushable,
    InvalidStateStoreError,
    KeyValueBytesStore,
    KeyValueIterator,
    PositionTracking,
    ProcessorStateError,
    RecordContext,
    SegmentedStore,
    StateStore,
    TopicPartition,
)
from kstate.stores.caching import DEFAULT_CACHE_MAX_BYTES, CachingKeyValueStore, FlushedEntry, FlushListener
from kstate.stores.changelogging import ChangelogSink, RecordContextHolder
from kstate.stores.factory import open_bytes_store, store_directory, task_directory, wipe_store
from kstate.stores.families import changelogging_store, store_classes
from kstate.stores.restore import DEFAULT_RESTORE_BATCH_SIZE, RestoreResult, restore

#: The names ``store.open`` accepts: every store type and the legacy alias (a type not built is refused by name).
STORE_TYPE_NAMES = tuple(t.value for t in StoreType) + tuple(LEGACY_ALIASES)
BACKENDS = tuple(b.value for b in Backend)

# The stores are of the opened type's family (key-value, versioned, window, session): typed by its protocol.
OpenBytesStore = Callable[..., Any]
LoggingLayer = Callable[[Any, StoreType, RecordContextHolder, ChangelogSink], Any]
CachingLayer = Callable[[KeyValueBytesStore, RecordContextHolder, int, "FlushListener | None"], CachingKeyValueStore]
AfterBatch = Callable[[RestoreResult], None] | None
Restorer = Callable[[Any, StoreType, Sequence[cl.ChangelogRecord], int, AfterBatch], RestoreResult]


def _caching_layer(
    inner: KeyValueBytesStore, context: RecordContextHolder, max_bytes: int, listener: FlushListener | None
) -> CachingKeyValueStore:
    return CachingKeyValueStore(inner, context, max_bytes=max_bytes, flush_listener=listener)


def _restorer(
    store: StateStore, store_type: StoreType, records: Sequence[cl.ChangelogRecord], batch_size: int,
    after_batch: AfterBatch,
) -> RestoreResult:
    return restore(store, store_type, records, batch_size=batch_size, after_batch=after_batch)


@dataclass(frozen=True)
class StoreBuilder:
    """The layers ``store.open`` stacks, as Kafka's ``KeyValueStoreBuilder`` family does; mutants swap one."""

    open_bytes_store: OpenBytesStore = open_bytes_store
    logging_layer: LoggingLayer = changelogging_store
    caching_layer: CachingLayer = _caching_layer
    restorer: Restorer = _restorer


DEFAULT_BUILDER = StoreBuilder()


@dataclass
class StoreHandle:
    """One open (or closed) store and what surrounds it: its context, its changelog sink, its layers."""

    id: str
    store_type: StoreType
    backend: Backend
    name: str
    state_dir: str | None
    application_id: str
    task_id: str
    builder: StoreBuilder
    context: RecordContextHolder
    bytes_store: StateStore
    store: StateStore
    caching: CachingKeyValueStore | None
    changelog: list[cl.ChangelogRecord] = field(default_factory=list)
    forwarded: list[FlushedEntry] = field(default_factory=list)
    iterators: set[str] = field(default_factory=set)
    closed: bool = False

    @property
    def changelog_partition(self) -> TopicPartition:
        """``<application.id>-<store>-changelog``, the task's partition."""
        try:
            partition = int(self.task_id.rsplit("_", 1)[1])
        except (IndexError, ValueError):
            partition = 0
        return TopicPartition(cl.changelog_topic_name(self.application_id, self.name), partition)

    def store_path(self) -> Path | None:
        if self.backend is not Backend.ROCKSDB or self.state_dir is None:
            return None
        return store_directory(self.state_dir, self.application_id, self.task_id, self.name, self.store_type)


_HANDLES: dict[str, StoreHandle] = {}
_ITERATORS: dict[str, tuple[str, KeyValueIterator]] = {}
_IDS = itertools.count(1)


def handle_for(payload: JsonDict) -> StoreHandle:
    """The handle ``payload["handle"]`` names."""
    handle_id = payload.get("handle")
    handle = _HANDLES.get(str(handle_id))
    if handle is None:
        raise InvalidStateStoreError(f"no store handle {handle_id!r}")
    return handle


def store_for(payload: JsonDict) -> tuple[StoreHandle, KeyValueBytesStore]:
    """The handle ``payload["handle"]`` names and its outermost store layer, which must be a key-value store."""
    return family_store_for(payload, Family.KEY_VALUE)


def family_store_for(payload: JsonDict, family: Family) -> tuple[StoreHandle, Any]:
    """The handle ``payload["handle"]`` names and its outermost store layer; a store of another family than
    ``family`` is refused by name (OPS-2)."""
    handle = handle_for(payload)
    if STORE_TYPES[handle.store_type].family is not family:
        raise InvalidStateStoreError(
            f"store {handle.name} is a {handle.store_type.value} store; this operation needs a {family.value} store")
    return handle, handle.store


def key_from(payload: JsonDict, field_name: str = "key") -> bytes:
    """The hex key field ``field_name``."""
    # A null key reaches the store, which refuses it as Kafka does (NullKeyError).
    return require_hex(payload, field_name, None)  # type: ignore[no-any-return]


def context_from_json(data: JsonDict | None, where: str = "context") -> RecordContext:
    """``{timestamp, headers, offset, topic, partition}`` (all optional) to a :class:`RecordContext`."""
    data = as_object(data, where, nullable=True) or {}
    prefix = "" if where == "" else f"{where}."
    headers = headers_from_json(data.get("headers"), f"{prefix}headers") or []
    return RecordContext(
        timestamp=as_int(data.get("timestamp", 0), f"{prefix}timestamp"),
        headers=tuple(headers),
        offset=as_int(data.get("offset", -1), f"{prefix}offset"),
        topic=as_str(data.get("topic", ""), f"{prefix}topic"),
        partition=as_int(data.get("partition", -1), f"{prefix}partition", minimum=INT32_MIN, maximum=INT32_MAX),
    )


def record_to_json(record: cl.ChangelogRecord) -> JsonDict:
    return {
        "key": record.key.hex(),
        "value": tohex(record.value),
        "timestamp": record.timestamp,
        "headers": headers_to_json(list(record.headers)),
    }


def record_from_json(data: Any, where: str = "record") -> cl.ChangelogRecord:
    data = as_object(data, where)
    key = as_hex(data.get("key"), f"{where}.key")
    if key is None:
        raise ProcessorStateError("a changelog record of a key-value store has a key")
    headers = headers_from_json(data.get("headers"), f"{where}.headers") or []
    return cl.ChangelogRecord(key, as_hex(data.get("value"), f"{where}.value"),
                              as_int(data.get("timestamp", 0), f"{where}.timestamp"), tuple(headers))


def entries_of(iterator: KeyValueIterator, limit: int | None = None) -> list[list[str]]:
    """Up to ``limit`` of ``iterator``'s next entries as ``[key hex, value hex]``."""
    out: list[list[str]] = []
    for key, value in iterator:
        out.append([key.hex(), value.hex()])
        if limit is not None and len(out) >= limit:
            break
    return out


def drain(iterator: KeyValueIterator) -> JsonDict:
    """``{"entries": [...]}`` of everything ``iterator`` has left; the iterator is closed."""
    try:
        return {"entries": entries_of(iterator)}
    finally:
        iterator.close()


# --- opening and closing -----------------------------------------------------------------------------------------


def open_store(payload: JsonDict, builder: StoreBuilder = DEFAULT_BUILDER) -> JsonDict:
    """``store.open`` over ``builder``'s layers (see the module docstring for the fields)."""
    store_type = StoreType(require_choice(payload, "store_type", STORE_TYPE_NAMES, StoreType.KEY_VALUE.value))
    store_classes(store_type)  # a type without a built store is refused by name before anything is opened
    backend = Backend(require_choice(payload, "backend", BACKENDS, Backend.ROCKSDB.value))
    name = require_str(payload, "name", "store")
    state_dir = require_str(payload, "state_dir", None)
    application_id = require_str(payload, "application_id", "app")
    task_id = require_str(payload, "task_id", "0_0")
    logging = require_bool(payload, "logging", True)
    caching_on = require_bool(payload, "caching", False)
    flush_listener = require_bool(payload, "cache_flush_listener", False)
    cache_max_bytes = require_int(payload, "cache_max_bytes", DEFAULT_CACHE_MAX_BYTES, minimum=0)
    initial_context = context_from_json(payload.get("context"))
    options = as_object(payload.get("options"), "options", nullable=True) or {}
    if caching_on and STORE_TYPES[store_type].family is not Family.KEY_VALUE:
        raise InvalidArgumentError("caching", f"the reference has no record cache for {store_type.value} stores")
    bytes_store = builder.open_bytes_store(
        store_type,
        backend,
        name=name,
        state_dir=state_dir,
        application_id=application_id,
        task_id=task_id,
        ignore_invalid_state=require_bool(payload, "ignore_invalid_state", False),
        **({"options": options} if options else {}),
        # A pre-4.3 reader knows no ``offsets`` family (UPG-2).
        **({"manage_offsets": False} if require_bool(payload, "pre_4_3_reader", False) else {}),
    )
    context = RecordContextHolder(initial_context)
    if isinstance(bytes_store, PositionTracking):
        context.subscribe(bytes_store.set_record_context)
    handle_id = f"h{next(_IDS)}"
    sink: list[cl.ChangelogRecord] = []
    store: StateStore = bytes_store
    if logging:
        store = builder.logging_layer(store, store_type, context, sink)
    caching: CachingKeyValueStore | None = None
    forwarded: list[FlushedEntry] = []
    if caching_on:
        listener: FlushListener | None = forwarded.append if flush_listener else None
        caching = builder.caching_layer(cast(KeyValueBytesStore, store), context, cache_max_bytes, listener)
        store = caching
    handle = StoreHandle(
        id=handle_id, store_type=store_type, backend=backend, name=name,
        state_dir=None if state_dir is None else str(state_dir), application_id=application_id, task_id=task_id,
        builder=builder, context=context, bytes_store=bytes_store, store=store, caching=caching,
        changelog=sink, forwarded=forwarded,
    )
    _HANDLES[handle_id] = handle
    partition = handle.changelog_partition
    return {
        "handle": handle_id,
        "manages_offsets": bytes_store.manages_offsets(),
        "mode": bytes_store.mode if isinstance(bytes_store, ColumnFamilyStore) else None,
        "changelog_topic": partition.topic,
        "changelog_partition": partition.partition,
    }


def make_open_handler(builder: StoreBuilder) -> Callable[[JsonDict], JsonDict]:
    """A ``store.open`` handler building its stores with ``builder`` (how mutants plug a broken layer in)."""
    return lambda payload: open_store(payload, builder)


@op("store.open", rules=["CACHE-2", "RST-4", "LAY-11"])
def store_open(payload: JsonDict) -> JsonDict:
    """Open a store (type, backend, location, the family's options, logging, caching, context); answers a handle."""
    return open_store(payload)


def register_iterator(handle: StoreHandle, iterator: KeyValueIterator) -> str:
    """Keep ``iterator`` open under a new id, closed with its store."""
    iterator_id = f"{handle.id}-i{next(_IDS)}"
    _ITERATORS[iterator_id] = (handle.id, iterator)
    handle.iterators.add(iterator_id)
    return iterator_id


def iterator_for(payload: JsonDict) -> KeyValueIterator:
    """The open iterator ``payload["iterator"]`` names."""
    entry = _ITERATORS.get(str(payload.get("iterator")))
    if entry is None:
        raise InvalidStateStoreError(f"no iterator {payload.get('iterator')!r}")
    return entry[1]


def _forget_iterators(handle: StoreHandle) -> None:
    for iterator_id in list(handle.iterators):
        entry = _ITERATORS.get(iterator_id)
        if entry is not None and handle.backend is Backend.ROCKSDB:
            entry[1].close()  # RocksDB closes open iterators with the store; in-memory ones just end


@op("store.close", rules=["CACHE-9"])
def store_close(payload: JsonDict) -> JsonDict:
    """Close cleanly: flush the cache, commit what the store stages, release it."""
    handle = handle_for(payload)
    try:
        if require_bool(payload, "downgrade", False):
            _close_for_downgrade(handle)
        else:
            handle.store.close()
    finally:
        handle.closed = True
        _forget_iterators(handle)
    return {}


def _close_for_downgrade(handle: StoreHandle) -> None:
    # UPG-4: the layers above flush first, then the bytes store writes the legacy files as it closes.
    if handle.caching is not None:
        handle.caching.flush()
    if not isinstance(handle.bytes_store, Downgradable):
        raise InvalidStateStoreError(f"store {handle.name} does not support a downgrade close")
    handle.bytes_store.close_for_downgrade()


@op("store.crash", rules=["CACHE-9"])
def store_crash(payload: JsonDict) -> JsonDict:
    """Abandon the store as a killed process would: no cache flush, no clean close."""
    handle = handle_for(payload)
    if handle.caching is not None:
        handle.caching.drop_cache()
    if not isinstance(handle.bytes_store, Crashable):
        raise InvalidStateStoreError(f"store {handle.name} cannot simulate a crash")
    try:
        handle.bytes_store.simulate_crash()
    finally:
        handle.closed = True
        _forget_iterators(handle)
    return {}


@op("store.capabilities", rules=["OPS-1"])
def store_capabilities(payload: JsonDict) -> JsonDict:
    """What this implementation offers: store types, backends, layers and lifecycle operations."""
    return {
        "store_types": [t.value for t in BUILT_TYPES],
        "backends": list(BACKENDS),
        "logging": True,
        "caching": True,
        "cache_flush_listener": True,
        "crash": True,
        "dump": [Backend.ROCKSDB.value],
        "offsets": [Backend.ROCKSDB.value],
        "iterators": True,
        "upgrade": [Backend.ROCKSDB.value, Backend.MEMORY.value],
    }


# --- context, changelog, commit ---------------------------------------------------------------------------------


@op("store.set_context", rules=["CACHE-2"])
def store_set_context(payload: JsonDict) -> JsonDict:
    """Make ``{timestamp, headers, offset, topic, partition}`` the current record context."""
    handle = handle_for(payload)
    handle.context.current = context_from_json(payload, "")
    return {}


@op("store.changelog", rules=["CACHE-3", "CACHE-4"])
def store_changelog(payload: JsonDict) -> JsonDict:
    """The changelog records sent since the previous call, in order (also after close or crash)."""
    handle = handle_for(payload)
    records = [record_to_json(r) for r in handle.changelog]
    handle.changelog.clear()
    partition = handle.changelog_partition
    return {"topic": partition.topic, "partition": partition.partition, "records": records}


@op("store.flush", rules=["CACHE-9"])
def store_flush(payload: JsonDict) -> JsonDict:
    """Flush the cache into the store (and the changelog), then the store itself."""
    handle = handle_for(payload)
    store = handle.store
    if not isinstance(store, Flushable):
        raise InvalidStateStoreError(f"store {handle.name} cannot be flushed")
    store.flush()
    return {}


@op("store.flush_cache", rules=["CACHE-3", "CACHE-9"])
def store_flush_cache(payload: JsonDict) -> JsonDict:
    """``flushCache``: write the cache's dirty entries through (and to the changelog), nothing more; a no-op
    without a cache. A task does this before it commits."""
    handle = handle_for(payload)
    if handle.caching is not None:
        handle.caching.flush_cache()
    elif handle.closed or not handle.store.is_open:
        raise InvalidStateStoreError(f"Store {handle.name} is currently closed.")
    return {}


def _offsets_from_json(payload: JsonDict, name: str) -> dict[TopicPartition, int | None]:
    """``[[topic, partition, offset-or-null], ...]`` (null or absent: an empty map)."""
    out: dict[TopicPartition, int | None] = {}
    for i, item in enumerate(require_list(payload, name, None) or []):
        topic, partition, offset = as_tuple(item, 3, f"{name}[{i}]")
        out[TopicPartition(as_str(topic, f"{name}[{i}][0]"), as_int(partition, f"{name}[{i}][1]"))] = as_int(
            offset, f"{name}[{i}][2]", nullable=True)
    return out


@op("store.commit", rules=["CACHE-9"])
def store_commit(payload: JsonDict) -> JsonDict:
    """``commit(changelog_offsets)``: ``[[topic, partition, offset-or-null], ...]``; the cache is flushed first."""
    handle_for(payload).store.commit(_offsets_from_json(payload, "changelog_offsets"))
    return {}


@op("store.committed_offset", rules=["KV-50", "KV-44"])
def store_committed_offset(payload: JsonDict) -> JsonDict:
    """``committedOffset(topic-partition)``; null when none is stored (always for in-memory stores)."""
    store = handle_for(payload).store
    return {"offset": store.committed_offset(TopicPartition(require_str(payload, "topic"), require_int(payload, "partition")))}


# --- restore and dump -------------------------------------------------------------------------------------------


@op("store.restore", rules=["RST-1", "RST-2", "RST-3", "RST-4", "RST-8"])
def store_restore(payload: JsonDict) -> JsonDict:
    """Restore changelog records ``[{key, value, timestamp, headers}, ...]`` in batches of ``batch_size``.

    With ``commit_offsets`` true each batch is committed as Kafka records a restored batch: the store's changelog
    partition at the offset of the batch's last record, a record's offset being its index in ``records`` (RST-8).
    """
    handle = handle_for(payload)
    records = [record_from_json(r, f"records[{i}]") for i, r in enumerate(require_list(payload, "records", None) or [])]
    batch_size = require_int(payload, "batch_size", DEFAULT_RESTORE_BATCH_SIZE, maximum=INT32_MAX)
    if batch_size < 1:
        raise ProcessorStateError("a restore batch holds at least one record")
    after_batch: AfterBatch = None
    if require_bool(payload, "commit_offsets", False):
        store, partition = handle.store, handle.changelog_partition

        def after_batch(progress: RestoreResult) -> None:
            store.commit({partition: progress.records - 1})

    result = handle.builder.restorer(handle.store, handle.store_type, records, batch_size, after_batch)
    return {"restored": result.records, "batches": result.batches}


def _dump_open(store: StateStore) -> dict[str, list[list[str]]]:
    # The column families as the open store presents them: what it has written plus what it has staged.
    if not isinstance(store, ColumnFamilyStore):
        raise InvalidStateStoreError("this store has no column families to dump")
    return _hex_rows(store.column_family_rows())


def _hex_rows(rows: Rows) -> dict[str, list[list[str]]]:
    return {cf: [[k.hex(), v.hex()] for k, v in cf_rows] for cf, cf_rows in rows.items()}


def _dump_path(path: Path) -> dict[str, list[list[str]]]:
    if not is_database(path):
        raise InvalidStateStoreError(f"no RocksDB store at {path}")
    return _hex_rows(read_database(path))


def _dump_segments(path: Path) -> dict[str, dict[str, list[list[str]]]]:
    # A segmented store's directory holds one RocksDB database per segment, named <store>.<segment start> (LAY-3).
    if not path.is_dir():
        raise InvalidStateStoreError(f"no segmented store at {path}")
    return {db.name: _hex_rows(read_database(db)) for db, _ in segment_databases(path)}


@op("store.dump", rules=["KV-20", "RST-5", "LAY-3"])
def store_dump(payload: JsonDict) -> JsonDict:
    """Every column family's raw entries, of an open handle as it presents them, of a closed one as on disk.

    A segmented store (window, session) answers ``segments``: each segment's column families by segment name.
    """
    if "handle" in payload:
        handle = handle_for(payload)
        store_type = handle.store_type
        if handle.backend is not Backend.ROCKSDB:
            raise InvalidStateStoreError("an in-memory store has no column families")
        if not handle.closed and handle.bytes_store.is_open:
            if isinstance(handle.bytes_store, SegmentedStore):
                return {"segments": {segment: _hex_rows(cfs)
                                     for segment, cfs in handle.bytes_store.segment_rows().items()}}
            return {"column_families": _dump_open(handle.bytes_store)}
        path = handle.store_path()
    else:
        store_type = StoreType(require_choice(payload, "store_type", STORE_TYPE_NAMES, StoreType.KEY_VALUE.value))
        path = store_directory(
            require_str(payload, "state_dir"), require_str(payload, "application_id", "app"),
            require_str(payload, "task_id", "0_0"), require_str(payload, "name"), store_type,
        )
    if path is None:
        raise InvalidStateStoreError("the store has no directory")
    if not STORE_TYPES[store_type].single_database:
        return {"segments": _dump_segments(path)}
    return {"column_families": _dump_path(path)}


@op("store.wipe", rules=["UPG-3", "LAY-11"])
def store_wipe(payload: JsonDict) -> JsonDict:
    """Delete a closed RocksDB store's directory and its ``<store>.position`` file, as Kafka wipes a refused
    store before restoring it from the changelog (UPG-3); refused while a handle on it is open."""
    state_dir, name = require_str(payload, "state_dir"), require_str(payload, "name")
    application_id, task_id = require_str(payload, "application_id", "app"), require_str(payload, "task_id", "0_0")
    store_type = StoreType(require_choice(payload, "store_type", STORE_TYPE_NAMES, StoreType.KEY_VALUE.value))
    path = store_directory(state_dir, application_id, task_id, name, store_type)
    for handle in _HANDLES.values():
        if not handle.closed and handle.store_path() == path:
            raise InvalidStateStoreError(f"store {name} is open (handle {handle.id}); close it before wiping it")
    wipe_store(state_dir, name=name, application_id=application_id, task_id=task_id, store_type=store_type)
    return {}


def reset() -> None:
    """Forget every handle and iterator, closing what is still open (test isolation)."""
    for handle in list(_HANDLES.values()):
        if not handle.closed:
            with contextlib.suppress(KStateError):
                handle.store.close()
    _HANDLES.clear()
    _ITERATORS.clear()


# --- task files, table options ---------------------------------------------------------------------------

_TASK_FILE_NAMES = (".checkpoint",)


def _task_dir(payload: JsonDict) -> Path:
    if "handle" in payload:
        handle = handle_for(payload)
        if handle.state_dir is None:
            raise InvalidStateStoreError("the store has no state directory")
        return task_directory(handle.state_dir, handle.application_id, handle.task_id)
    return task_directory(require_str(payload, "state_dir"), require_str(payload, "application_id", "app"),
                          require_str(payload, "task_id", "0_0"))


def _check_task_file_name(name: str) -> None:
    if not (name in _TASK_FILE_NAMES or (name.endswith(".position") and "/" not in name and name != ".position")):
        raise InvalidStateStoreError(f"not a legacy task file name: {name!r} (.checkpoint or <store>.position)")


@op("store.task_files", rules=["KV-55", "UPG-4", "LAY-1", "LAY-11"])
def store_task_files(payload: JsonDict) -> JsonDict:
    """The task directory's entries, with the text of its ``.checkpoint`` and ``<store>.position`` files."""
    directory = _task_dir(payload)
    names = sorted(p.name for p in directory.iterdir()) if directory.is_dir() else []
    texts = {n: (directory / n).read_text(encoding="utf-8") for n in names
             if n == ".checkpoint" or (n.endswith(".position") and (directory / n).is_file())}
    return {"entries": names, "files": texts}


@op("store.write_task_file", rules=["KV-55", "LAY-11"])
def store_write_task_file(payload: JsonDict) -> JsonDict:
    """Place a legacy ``.checkpoint`` or ``<store>.position`` file in the task directory (before an open)."""
    name = require_str(payload, "file")
    _check_task_file_name(name)
    text = require_str(payload, "text")
    directory = _task_dir(payload)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / name).write_text(text, encoding="utf-8")
    return {}


@op("store.table_options", rules=["KV-21", "LAY-9"])
def store_table_options(payload: JsonDict) -> JsonDict:
    """Per column family, the block-based table ``format_version`` and comparator of a closed RocksDB store."""
    handle = handle_for(payload)
    path = handle.store_path()
    if path is None or not handle.closed:
        raise InvalidStateStoreError("table options are read from a closed RocksDB store's OPTIONS file")
    options = sorted(path.glob("OPTIONS-*"), key=lambda p: int(p.name.split("-", 1)[1]))
    if not options:
        raise InvalidStateStoreError(f"no OPTIONS file in {path}")
    families: dict[str, dict[str, str]] = {}
    section = ""
    for line in options[-1].read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line
            continue
        key, _, value = line.partition("=")
        name = section.split('"')[1] if '"' in section else ""
        if section.startswith("[TableOptions/BlockBasedTable") and key == "format_version":
            families.setdefault(name, {})["format_version"] = value
        elif section.startswith("[CFOptions") and key == "comparator":
            families.setdefault(name, {})["comparator"] = value
    return {"column_families": families}
