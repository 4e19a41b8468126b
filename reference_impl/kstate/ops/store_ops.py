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
from kstate.ops import JsonDict, headers_from_json, op
from kstate.ops.changelog_ops import record_to_json
from kstate.ops.fields import (
    Field,
    Output,
    Request,
    bool_field,
    choice_field,
    int_field,
    object_field,
    parse_request,
    str_field,
)
from kstate.ops.inputs import (
    INT32_MAX,
    INT32_MIN,
    as_hex,
    as_int,
    as_object,
    as_str,
    as_tuple,
    require_headers,
    require_hex,
    require_int,
    require_list,
    require_str,
)
from kstate.storage_files import read_state_file, state_file_kind, write_state_file
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
from kstate.stores.engine import check_directory
from kstate.stores.factory import open_bytes_store, store_directory, task_directory, wipe_store
from kstate.stores.families import changelogging_store, store_classes
from kstate.stores.life import LifeState, Op, answer
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


# --- declared fields shared by the store.* operations (the index renders them, spec/ops-index.md) -----------------

HANDLE_DOC = "the handle store.open answered"
#: The handle a ``store.*`` operation names, resolved (an unknown one refused, OPS-2) before any other field is read.
HANDLE = Field("handle", "string", HANDLE_DOC, read=lambda payload, _name, _default: handle_for(payload))
#: The handle of a key-value store (another family's is refused by name).
KV_HANDLE = Field("handle", "string", HANDLE_DOC, read=lambda payload, _name, _default: store_for(payload)[0])


def family_handle(family: Family, doc: str = HANDLE_DOC) -> Field:
    """The handle of a ``family`` store, resolved to ``(handle, store)``; another family's is refused by name."""
    return Field("handle", "string", doc, read=lambda payload, _name, _default: family_store_for(payload, family))


def _unless_handle(inner: Field) -> Field:
    # A location field: read only when the operation names no handle (then the handle's location is used).
    def read(payload: Any, _name: str, _default: Any) -> Any:
        return None if "handle" in payload else inner.parse(payload)

    return Field(inner.name, inner.type, inner.doc, inner.default, read, optional=True)


#: ``store_type``: every type of every family the reference builds, from the table of store types (OPS-2).
STORE_TYPE_DOC = ("one of " + ", ".join(t.value for t in BUILT_TYPES) + " (legacy alias " + ", ".join(LEGACY_ALIASES)
                  + "); a type of the spec that is not built is refused by name")
STORE_TYPE = choice_field("store_type", STORE_TYPE_NAMES, STORE_TYPE_DOC, StoreType.KEY_VALUE.value)
APPLICATION_ID = str_field("application_id", "a name of [a-zA-Z0-9._-], not . or .. (LAY-11)", "app")
TASK_ID = str_field("task_id", "<subtopology>_<partition>, ASCII digits (LAY-11)", "0_0")
#: Where a closed store or a task directory is, when no handle names it.
LOCATION = (_unless_handle(str_field("state_dir", "(with no handle) the instances' state.dir")),
            _unless_handle(APPLICATION_ID), _unless_handle(TASK_ID))
RECORD_TYPE = "{key: hex, value: hex | null, timestamp: int, headers: list[[string, hex | null]]}"
HEADERS_TYPE = "list[[string, hex | null]]"


def _built_store_type(payload: Any, name: str, default: Any) -> StoreType:
    store_type = StoreType(STORE_TYPE.parse(payload))
    store_classes(store_type)  # a type without a built store is refused by name before anything else is read
    return store_type


def _context(payload: Any, name: str, default: Any) -> RecordContext:
    return context_from_json(payload.get(name))


OPEN_FIELDS: tuple[Field, ...] = (
    Field("store_type", "string", STORE_TYPE_DOC, StoreType.KEY_VALUE.value, _built_store_type),
    choice_field("backend", BACKENDS, "rocksdb or memory", Backend.ROCKSDB.value),
    str_field("name", "the store name", "store"),
    str_field("state_dir", "the instances' state.dir (a rocksdb store)", None),
    APPLICATION_ID,
    TASK_ID,
    bool_field("logging", "write a changelog", True),
    bool_field("caching", "put the record cache on top", False),
    bool_field("cache_flush_listener", "record what the cache forwards", False),
    int_field("cache_max_bytes", "the cache size", DEFAULT_CACHE_MAX_BYTES, minimum=0),
    Field("context", "{timestamp?: int, headers?: list[[string, hex | null]], offset?: int, topic?: string, "
          "partition?: int}", "the first record context", None, _context),
    object_field("options", "object", "the store family's own options, named as its spec names them (versioned: "
                 "history_retention_ms, segment_interval_ms; window: retention_ms, window_size_ms, "
                 "retain_duplicates, segment_interval_ms; session: retention_ms, segment_interval_ms)", None),
    bool_field("ignore_invalid_state", "open a store whose offsets say it is corrupt", False),
    bool_field("pre_4_3_reader", "open as a Kafka before 4.3 would (no offsets column family)", False),
)


# --- opening and closing -----------------------------------------------------------------------------------------


def open_store(payload: JsonDict, builder: StoreBuilder = DEFAULT_BUILDER) -> JsonDict:
    """``store.open`` over ``builder``'s layers (:data:`OPEN_FIELDS` are its fields)."""
    return _open(parse_request(OPEN_FIELDS, payload), builder)


def _open(request: Request, builder: StoreBuilder) -> JsonDict:
    store_type, backend, name, state_dir = request.store_type, Backend(request.backend), request.name, request.state_dir
    application_id, task_id = request.application_id, request.task_id
    caching_on, initial_context, options = request.caching, request.context, request.options or {}
    if caching_on and STORE_TYPES[store_type].family is not Family.KEY_VALUE:
        raise InvalidArgumentError("caching", f"the reference has no record cache for {store_type.value} stores")
    bytes_store = builder.open_bytes_store(
        store_type,
        backend,
        name=name,
        state_dir=state_dir,
        application_id=application_id,
        task_id=task_id,
        ignore_invalid_state=request.ignore_invalid_state,
        **({"options": options} if options else {}),
        # A pre-4.3 reader knows no ``offsets`` family (UPG-2).
        **({"manage_offsets": False} if request.pre_4_3_reader else {}),
    )
    context = RecordContextHolder(initial_context)
    if isinstance(bytes_store, PositionTracking):
        context.subscribe(bytes_store.set_record_context)
    handle_id = f"h{next(_IDS)}"
    sink: list[cl.ChangelogRecord] = []
    store: StateStore = bytes_store
    if request.logging:
        store = builder.logging_layer(store, store_type, context, sink)
    caching: CachingKeyValueStore | None = None
    forwarded: list[FlushedEntry] = []
    if caching_on:
        listener: FlushListener | None = forwarded.append if request.cache_flush_listener else None
        caching = builder.caching_layer(cast(KeyValueBytesStore, store), context, request.cache_max_bytes, listener)
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


@op("store.open", rules=["CACHE-2", "RST-4", "LAY-11"], inputs=OPEN_FIELDS, outputs=(
    Output("handle", "string", "names the store in every later operation"),
    Output("manages_offsets", "bool", "the store keeps its changelog offsets itself (KIP-1035)"),
    Output("mode", "string | null", "how the column families were opened (regular, upgrade, ...)"),
    Output("changelog_topic", "string"), Output("changelog_partition", "int")))
def store_open(request: Request) -> JsonDict:
    """Open a store (type, backend, location, the family's options, logging, caching, context); answers a handle."""
    return _open(request, DEFAULT_BUILDER)


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


@op("store.close", rules=["CACHE-9"], inputs=(
    HANDLE, bool_field("downgrade", "close writing the files an older Kafka reads", False)))
def store_close(request: Request) -> JsonDict:
    """Close cleanly: flush the cache, commit what the store stages, release it."""
    handle = request.handle
    try:
        if request.downgrade:
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


@op("store.crash", rules=["CACHE-9"], inputs=(HANDLE,))
def store_crash(request: Request) -> JsonDict:
    """Abandon the store as a killed process would: no cache flush, no clean close."""
    handle = request.handle
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


@op("store.capabilities", rules=["OPS-1"], inputs=(), outputs=(
    Output("store_types", "list[string]", "store types it can open"),
    Output("backends", "list[string]", "rocksdb and/or memory"),
    Output("logging", "bool"), Output("caching", "bool"), Output("cache_flush_listener", "bool"),
    Output("crash", "bool"), Output("dump", "list[string]", "backends store.dump works on"),
    Output("offsets", "list[string]", "backends that manage offsets"), Output("iterators", "bool"),
    Output("upgrade", "list[string]", "backends that upgrade in place"),
    Output("store_backends", "object", "store type -> the backends it opens on, for a type that opens on some of "
           "backends only (a missing type opens on all)", optional=True),
    Output("lazy_headers", "bool", "HV-10's lazy header decoding (Kafka 4.4 has none); absent is false",
           optional=True),
    Output("store_wipe", "bool", "VS-31's wipe of one store that keeps the task's other stores (Kafka wipes whole "
           "tasks); absent is false", optional=True),
    Output("segment_interval_option", "bool", "WS-2's segment interval given to a window store and checked at open "
           "(Kafka's public Stores takes none); absent is false", optional=True)))
def store_capabilities(request: Request) -> JsonDict:
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
        # The reference reads value and timestamp without parsing the header bytes (HV-10, hardened).
        "lazy_headers": True,
        # store.wipe removes one store and keeps the task's others (VS-31, hardened).
        "store_wipe": True,
        # segment_interval_ms is a window store option, checked at open (WS-2).
        "segment_interval_option": True,
    }


# --- context, changelog, commit ---------------------------------------------------------------------------------


#: A record context's fields, in the order :func:`context_from_json` reads them.
CONTEXT_FIELDS: tuple[Field, ...] = (
    Field("headers", HEADERS_TYPE, default=None, read=lambda payload, name, _default: require_headers(payload, name, None)),
    int_field("timestamp", default=0),
    int_field("offset", default=-1),
    str_field("topic", default=""),
    int_field("partition", default=-1, minimum=INT32_MIN, maximum=INT32_MAX),
)


@op("store.set_context", rules=["CACHE-2"], inputs=(HANDLE, *CONTEXT_FIELDS))
def store_set_context(request: Request) -> JsonDict:
    """Make ``{timestamp, headers, offset, topic, partition}`` the current record context."""
    request.handle.context.current = RecordContext(
        timestamp=request.timestamp, headers=tuple(request.headers or []), offset=request.offset,
        topic=request.topic, partition=request.partition)
    return {}


@op("store.changelog", rules=["CACHE-3", "CACHE-4"], inputs=(HANDLE,), outputs=(
    Output("topic", "string"), Output("partition", "int"),
    Output("records", f"list[{RECORD_TYPE}]", "sent since the last call, in order")))
def store_changelog(request: Request) -> JsonDict:
    """The changelog records sent since the previous call, in order (also after close or crash)."""
    handle = request.handle
    records = [record_to_json(r) for r in handle.changelog]
    handle.changelog.clear()
    partition = handle.changelog_partition
    return {"topic": partition.topic, "partition": partition.partition, "records": records}


@op("store.flush", rules=["CACHE-9"], inputs=(HANDLE,))
def store_flush(request: Request) -> JsonDict:
    """Flush the cache into the store (and the changelog), then the store itself."""
    handle = request.handle
    store = handle.store
    if not isinstance(store, Flushable):
        raise InvalidStateStoreError(f"store {handle.name} cannot be flushed")
    store.flush()
    return {}


@op("store.flush_cache", rules=["CACHE-3", "CACHE-9"], inputs=(HANDLE,))
def store_flush_cache(request: Request) -> JsonDict:
    """``flushCache``: write the cache's dirty entries through (and to the changelog), nothing more; a no-op
    without a cache. A task does this before it commits."""
    handle = request.handle
    if handle.caching is not None:
        handle.caching.flush_cache()
    elif handle.closed or not handle.store.is_open:
        raise answer(LifeState.CLOSED, Op.COMMIT).refusal(handle.name)
    return {}


def _offsets_from_json(payload: JsonDict, name: str, _default: Any = None) -> dict[TopicPartition, int | None]:
    """``[[topic, partition, offset-or-null], ...]`` (null or absent: an empty map)."""
    out: dict[TopicPartition, int | None] = {}
    for i, item in enumerate(require_list(payload, name, None) or []):
        topic, partition, offset = as_tuple(item, 3, f"{name}[{i}]")
        out[TopicPartition(as_str(topic, f"{name}[{i}][0]"), as_int(partition, f"{name}[{i}][1]"))] = as_int(
            offset, f"{name}[{i}][2]", nullable=True)
    return out


@op("store.commit", rules=["CACHE-9"], inputs=(
    HANDLE, Field("changelog_offsets", "list[[string, int, int | null]]", "[topic, partition, offset]",
                  read=_offsets_from_json)))
def store_commit(request: Request) -> JsonDict:
    """``commit(changelog_offsets)``: ``[[topic, partition, offset-or-null], ...]``; the cache is flushed first."""
    request.handle.store.commit(request.changelog_offsets)
    return {}


@op("store.committed_offset", rules=["KV-50", "KV-44"], inputs=(HANDLE, str_field("topic"), int_field("partition")),
    outputs=(Output("offset", "int | null"),))
def store_committed_offset(request: Request) -> JsonDict:
    """``committedOffset(topic-partition)``; null when none is stored (always for in-memory stores)."""
    return {"offset": request.handle.store.committed_offset(TopicPartition(request.topic, request.partition))}


# --- restore and dump -------------------------------------------------------------------------------------------


def _records(payload: JsonDict, name: str, _default: Any) -> list[cl.ChangelogRecord]:
    return [record_from_json(r, f"{name}[{i}]") for i, r in enumerate(require_list(payload, name, None) or [])]


def _batch_size(payload: JsonDict, name: str, default: Any) -> int:
    batch_size: int = require_int(payload, name, default, maximum=INT32_MAX)
    if batch_size < 1:
        raise ProcessorStateError("a restore batch holds at least one record")
    return batch_size


@op("store.restore", rules=["RST-1", "RST-2", "RST-3", "RST-4", "RST-8"], inputs=(
    HANDLE, Field("records", f"list[{RECORD_TYPE}]", "changelog records, offset = index", read=_records),
    Field("batch_size", "int", default=DEFAULT_RESTORE_BATCH_SIZE, read=_batch_size),
    bool_field("commit_offsets", "commit each batch", False)),
    outputs=(Output("restored", "int"), Output("batches", "int")))
def store_restore(request: Request) -> JsonDict:
    """Restore changelog records ``[{key, value, timestamp, headers}, ...]`` in batches of ``batch_size``.

    With ``commit_offsets`` true each batch is committed as Kafka records a restored batch: the store's changelog
    partition at the offset of the batch's last record, a record's offset being its index in ``records`` (RST-8).
    """
    handle, records, batch_size = request.handle, request.records, request.batch_size
    after_batch: AfterBatch = None
    if request.commit_offsets:
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


def _optional_handle(payload: JsonDict, _name: str, _default: Any) -> StoreHandle | None:
    return handle_for(payload) if "handle" in payload else None


#: A handle, or (without one) the location of a closed store or a task.
OPTIONAL_HANDLE = Field("handle", "string", "(or name the store by location)", read=_optional_handle, optional=True)


@op("store.dump", rules=["KV-20", "RST-5", "LAY-3"], inputs=(
    OPTIONAL_HANDLE, _unless_handle(STORE_TYPE), *LOCATION, _unless_handle(str_field("name", "the store's name"))),
    outputs=(Output("column_families", "object", "column family name -> list[[hex, hex]] raw entries", optional=True),
             Output("segments", "object", "a segmented store's: segment name -> its column_families", optional=True)))
def store_dump(request: Request) -> JsonDict:
    """Every column family's raw entries, of an open handle as it presents them, of a closed one as on disk.

    A segmented store (window, session) answers ``segments``: each segment's column families by segment name.
    """
    if request.handle is not None:
        handle = request.handle
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
        store_type = StoreType(request.store_type)
        path = store_directory(request.state_dir, request.application_id, request.task_id, request.name, store_type)
    if path is None:
        raise InvalidStateStoreError("the store has no directory")
    if not STORE_TYPES[store_type].single_database:
        return {"segments": _dump_segments(path)}
    return {"column_families": _dump_path(path)}


@op("store.wipe", rules=["UPG-3", "LAY-11"], inputs=(
    str_field("state_dir"), str_field("name", "a closed store's name"), APPLICATION_ID, TASK_ID, STORE_TYPE))
def store_wipe(request: Request) -> JsonDict:
    """Delete a closed RocksDB store's directory and its ``<store>.position`` file, as Kafka wipes a refused
    store before restoring it from the changelog (UPG-3); refused while a handle on it is open."""
    state_dir, name, application_id, task_id = request.state_dir, request.name, request.application_id, request.task_id
    store_type = StoreType(request.store_type)
    path = store_directory(state_dir, application_id, task_id, name, store_type)
    for handle in _HANDLES.values():
        if not handle.closed and handle.store_path() == path:
            raise InvalidStateStoreError(f"store {name} is open (handle {handle.id}); close it before wiping it")
    wipe_store(state_dir, name=name, application_id=application_id, task_id=task_id, store_type=store_type)
    return {}


def forget_closed() -> None:
    """Forget the closed handles and their iterators, as a new test of the suite starts (a handle is named only by
    the calls of the test that opened it); open handles are kept. Kept, every store a run ever opened would stay
    reachable, and each full garbage collection would walk them all (issue 35)."""
    closed = [handle_id for handle_id, handle in _HANDLES.items() if handle.closed]
    for handle_id in closed:
        handle = _HANDLES.pop(handle_id)
        for iterator_id in handle.iterators:
            _ITERATORS.pop(iterator_id, None)


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


def _task_dir(request: Request) -> Path:
    handle = request.handle
    if handle is not None:
        if handle.state_dir is None:
            raise InvalidStateStoreError("the store has no state directory")
        return task_directory(handle.state_dir, handle.application_id, handle.task_id)
    return task_directory(request.state_dir, request.application_id, request.task_id)


def _task_file_name(payload: JsonDict, name: str, _default: Any) -> str:
    file_name: str = require_str(payload, name)
    if not (file_name in _TASK_FILE_NAMES
            or (file_name.endswith(".position") and "/" not in file_name and file_name != ".position")):
        raise InvalidStateStoreError(f"not a legacy task file name: {file_name!r} (.checkpoint or <store>.position)")
    return file_name


_TASK_HANDLE = Field("handle", "string", "(or name the task by location)", read=_optional_handle, optional=True)


@op("store.task_files", rules=["KV-55", "UPG-4", "LAY-1", "LAY-11"], inputs=(_TASK_HANDLE, *LOCATION), outputs=(
    Output("entries", "list[string]", "the task directory's entries"),
    Output("files", "object", ".checkpoint and <store>.position file name -> text")))
def store_task_files(request: Request) -> JsonDict:
    """The task directory's entries, with the text of its ``.checkpoint`` and ``<store>.position`` files."""
    directory = _task_dir(request)
    names = sorted(p.name for p in directory.iterdir()) if directory.is_dir() else []
    texts: dict[str, str] = {}
    for n in names:
        # Only regular files are read, capped, never through a link or from a FIFO (LAY-15); others are entries.
        if (n == ".checkpoint" or n.endswith(".position")) and state_file_kind(directory / n) is None:
            data = read_state_file(directory / n)
            if data is not None:
                texts[n] = data.decode("utf-8", "replace")
    return {"entries": names, "files": texts}


@op("store.write_task_file", rules=["KV-55", "LAY-11", "LAY-15"], inputs=(
    Field("file", "string", ".checkpoint or <store>.position", read=_task_file_name), str_field("text"),
    _TASK_HANDLE, *LOCATION))
def store_write_task_file(request: Request) -> JsonDict:
    """Place a legacy ``.checkpoint`` or ``<store>.position`` file in the task directory (before an open); an
    application or task directory that is a link or a file is refused before anything is made (LAY-15)."""
    directory = _task_dir(request)
    for what, path in (("application directory", directory.parent), ("task directory", directory)):
        check_directory(path, request.file, what)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InvalidStateStoreError(f"cannot create the task directory {directory}: {exc.strerror or exc}") from exc
    write_state_file(directory / request.file, request.text.encode("utf-8"))  # nothing planted written through (LAY-15)
    return {}


@op("store.table_options", rules=["KV-21", "LAY-9"],
    inputs=(Field("handle", "string", "a closed RocksDB store", read=HANDLE.read),),
    outputs=(Output("column_families", "object", "name -> {format_version: string, comparator: string}"),))
def store_table_options(request: Request) -> JsonDict:
    """Per column family, the block-based table ``format_version`` and comparator of a closed RocksDB store."""
    handle = request.handle
    path = handle.store_path()
    if path is None or not handle.closed:
        raise InvalidStateStoreError("table options are read from a closed RocksDB store's OPTIONS file")
    options = sorted((p for p in path.glob("OPTIONS-*") if p.name[8:].isdigit()), key=lambda p: int(p.name[8:]))
    if not options:
        raise InvalidStateStoreError(f"no OPTIONS file in {path}")
    families: dict[str, dict[str, str]] = {}
    section = ""
    text = (read_state_file(options[-1]) or b"").decode("utf-8", "replace")  # never a FIFO or a link (LAY-15)
    for line in text.splitlines():
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
