"""The key-value family's ``store.*`` operations: writes, reads, range scans, live iterators, typed reads.

Each operation names a handle that :mod:`kstate.ops.store_ops` opened; keys and values are hex, values in
the store type's layout (spec/ops.md, OPS-*; spec/kv-stores.md KV-*, caching.md CACHE-*).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kstate.codecs import changelog as cl
from kstate.codecs.store_types import STORE_TYPES, Family, ValueFormat
from kstate.ops import INDEX_STATE_DIR, JsonDict, headers_to_json, index_store, op, tohex
from kstate.ops.changelog_ops import ChangelogWrite, changelog_writes, maybe_record, record_context
from kstate.ops.fields import Field, Output, Request, choice_field, int_field, nullable_hex
from kstate.ops.inputs import INT32_MAX, as_hex, as_str, as_tuple, require_hex, require_list
from kstate.ops.store_ops import HANDLE, KV_HANDLE, drain, entries_of, iterator_for, register_iterator
from kstate.stores.api import InvalidStateStoreError, KeyValueIterator
from kstate.stores.families import store_classes

_KEY = nullable_hex("key", "the key (a null key is refused as Kafka does)")
_VALUE = nullable_hex("value")
_RANGE = (KV_HANDLE, nullable_hex("from", "lower bound, inclusive; null is unbounded"),
          nullable_hex("to", "upper bound, inclusive; null is unbounded"))
_ENTRIES = (Output("entries", "list[[hex, hex]]", "[key, value] pairs in iteration order"),)
_PREVIOUS = (Output("previous", "hex | null", "the value before, null if none"),)


def _store(request: Request) -> Any:
    return request.handle.store


# --- writes -----------------------------------------------------------------------------------------------------


@op("store.put", rules=["CACHE-2"], inputs=(
    KV_HANDLE, _KEY, nullable_hex("value", "in the store type's layout; null deletes")))
def store_put(request: Request) -> JsonDict:
    """``put(key, value)``; a null value deletes."""
    _store(request).put(request.key, request.value)
    return {}


@op("store.put_if_absent", rules=["CACHE-2"], inputs=(KV_HANDLE, _KEY, _VALUE), outputs=_PREVIOUS)
def store_put_if_absent(request: Request) -> JsonDict:
    """``putIfAbsent(key, value)``: answers the previous value."""
    return {"previous": tohex(_store(request).put_if_absent(request.key, request.value))}


def _entries(payload: JsonDict, name: str, _default: Any) -> list[tuple[bytes | None, bytes | None]]:
    entries = []
    for i, item in enumerate(require_list(payload, name, None) or []):
        key, value = as_tuple(item, 2, f"{name}[{i}]")
        entries.append((as_hex(key, f"{name}[{i}][0]"), as_hex(value, f"{name}[{i}][1]")))
    return entries


@op("store.put_all", rules=["CACHE-2"], inputs=(
    KV_HANDLE, Field("entries", "list[[hex, hex | null]]", "[key, value] pairs", read=_entries)))
def store_put_all(request: Request) -> JsonDict:
    """``putAll([[key, value], ...])``."""
    _store(request).put_all(request.entries)
    return {}


@op("store.delete", rules=["CACHE-2"], inputs=(KV_HANDLE, _KEY), outputs=_PREVIOUS)
def store_delete(request: Request) -> JsonDict:
    """``delete(key)``: answers the previous value."""
    return {"previous": tohex(_store(request).delete(request.key))}


# --- reads ------------------------------------------------------------------------------------------------------


@op("store.get", rules=["CACHE-1"], inputs=(KV_HANDLE, _KEY), outputs=(Output("value", "hex | null"),))
def store_get(request: Request) -> JsonDict:
    """``get(key)``."""
    return {"value": tohex(_store(request).get(request.key))}


@op("store.range", rules=["CACHE-7"], inputs=_RANGE, outputs=_ENTRIES)
def store_range(request: Request) -> JsonDict:
    """``range(from, to)``, both inclusive, null unbounded: ``{"entries": [[key, value], ...]}``."""
    return drain(_store(request).range(request["from"], request.to))


@op("store.reverse_range", rules=["CACHE-7"], inputs=_RANGE, outputs=_ENTRIES)
def store_reverse_range(request: Request) -> JsonDict:
    """``reverseRange(from, to)``."""
    return drain(_store(request).reverse_range(request["from"], request.to))


@op("store.all", rules=["CACHE-7"], inputs=(KV_HANDLE,), outputs=_ENTRIES)
def store_all(request: Request) -> JsonDict:
    """``all()``."""
    return drain(_store(request).all())


@op("store.reverse_all", rules=["CACHE-7"], inputs=(KV_HANDLE,), outputs=_ENTRIES)
def store_reverse_all(request: Request) -> JsonDict:
    """``reverseAll()``."""
    return drain(_store(request).reverse_all())


@op("store.prefix_scan", rules=["CACHE-8"], inputs=(KV_HANDLE, nullable_hex("prefix", type="hex")), outputs=_ENTRIES)
def store_prefix_scan(request: Request) -> JsonDict:
    """``prefixScan(prefix)`` with the bytes serializer."""
    return drain(_store(request).prefix_scan(request.prefix))


@op("store.approximate_num_entries", rules=["CACHE-10"], inputs=(KV_HANDLE,), outputs=(Output("count", "int"),))
def store_approximate_num_entries(request: Request) -> JsonDict:
    """``approximateNumEntries()``: ``{"count": n}``."""
    return {"count": _store(request).approximate_num_entries()}


# --- live iterators ----------------------------------------------------------------------------------------------


_ITERATOR_KINDS = ("range", "reverse_range", "all", "reverse_all", "prefix_scan")


def _for_kinds(inner: Field, kinds: tuple[str, ...]) -> Field:
    # A bound only some iterator kinds read: the others leave it unread, as their Kafka methods take no such argument.
    def read(payload: Any, _name: str, _default: Any) -> Any:
        return inner.parse(payload) if payload.get("kind", "all") in kinds else None

    return Field(inner.name, inner.type, inner.doc, inner.default, read, optional=True)


@op("store.iterator_open", rules=["CACHE-7"], inputs=(
    KV_HANDLE, choice_field("kind", _ITERATOR_KINDS, "range, reverse_range, all, reverse_all or prefix_scan", "all"),
    _for_kinds(nullable_hex("from", "lower bound of a range, inclusive; null is unbounded"), ("range", "reverse_range")),
    _for_kinds(nullable_hex("to", "upper bound of a range, inclusive; null is unbounded"), ("range", "reverse_range")),
    _for_kinds(nullable_hex("prefix", "for prefix_scan", type="hex"), ("prefix_scan",))),
    outputs=(Output("iterator", "string", "names the iterator"),))
def store_iterator_open(request: Request) -> JsonDict:
    """Open an iterator: ``kind`` range, reverse_range, all, reverse_all or prefix_scan (``from``, ``to``, ``prefix``)."""
    store, kind = _store(request), request.kind
    iterator: KeyValueIterator
    if kind == "range":
        iterator = store.range(request["from"], request.to)
    elif kind == "reverse_range":
        iterator = store.reverse_range(request["from"], request.to)
    elif kind == "all":
        iterator = store.all()
    elif kind == "reverse_all":
        iterator = store.reverse_all()
    elif kind == "prefix_scan":
        iterator = store.prefix_scan(request.prefix)
    else:
        raise InvalidStateStoreError(f"unknown iterator kind {kind!r}")
    return {"iterator": register_iterator(request.handle, iterator)}


_ITERATOR = Field("iterator", "string", "the iterator store.iterator_open answered",
                  read=lambda payload, _name, _default: iterator_for(payload))


@op("store.iterator_next", rules=["CACHE-7"], inputs=(
    _ITERATOR, int_field("max", "how many entries", 1, minimum=1, maximum=INT32_MAX)), outputs=_ENTRIES)
def store_iterator_next(request: Request) -> JsonDict:
    """Up to ``max`` (default 1) more entries; fewer at the end; an error once the iterator is closed."""
    return {"entries": entries_of(request.iterator, request.max)}


@op("store.iterator_peek_next_key", rules=["CACHE-7", "KV-17"], inputs=(_ITERATOR,),
    outputs=(Output("key", "hex | null", "null at the end"),))
def store_iterator_peek_next_key(request: Request) -> JsonDict:
    """The next key without consuming it (null at the end)."""
    return {"key": tohex(request.iterator.peek_next_key())}


@op("store.iterator_close", rules=["CACHE-7"], inputs=(_ITERATOR,))
def store_iterator_close(request: Request) -> JsonDict:
    """Close the iterator; later reads of it are refused."""
    request.iterator.close()
    return {}


# --- typed reads ------------------------------------------------------------------------------------------------

_ALL_TYPED = ["value", "timestamp", "headers"]


def _typed_fields(payload: JsonDict, name: str, _default: Any) -> list[str]:
    return [as_str(f, f"{name}[{i}]") for i, f in enumerate(require_list(payload, name, None) or _ALL_TYPED)]


@op("store.get_typed", rules=["KV-60", "KV-61", "KV-62"], inputs=(
    HANDLE, Field("fields", "list[string]", "of value, timestamp, headers (default all)", read=_typed_fields,
                  optional=True), _KEY),
    outputs=(Output("found", "bool"), Output("value", "hex | null", "when asked for and found", optional=True),
             Output("timestamp", "int", "timestamped stores", optional=True),
             Output("headers", "list[[string, hex | null]]", optional=True)))
def store_get_typed(request: Request) -> JsonDict:
    """``get`` through the store type's value facade; only the ``fields`` asked for are decoded and answered.

    On every store type, as the Kafka testee answers them; a plain store's miss answers its null ``value``."""
    handle = request.handle
    facade = store_classes(handle.store_type).facade
    if facade is None:
        raise InvalidStateStoreError(f"store {handle.name} has no typed view")
    value = facade(handle.store).get(request.key)
    return _TYPED_TO_JSON[STORE_TYPES[handle.store_type].value_format](value, request.fields)


def _plain_to_json(value: Any, fields: list[str]) -> JsonDict:
    # Only the fields asked for are answered, as for the other facades; a miss answers the null bytes (KV-60).
    if value is None:
        return {"found": False, "value": None}
    return {"found": True, **({"value": tohex(value)} if "value" in fields else {})}


def _timestamped_to_json(pair: Any, fields: list[str]) -> JsonDict:
    if pair is None:
        return {"found": False}
    out: JsonDict = {"found": True}
    if "value" in fields:
        out["value"] = tohex(pair[0])
    if "timestamp" in fields:
        out["timestamp"] = pair[1]
    return out


def _with_headers_to_json(vth: Any, fields: list[str]) -> JsonDict:
    if vth is None:
        return {"found": False}
    # Only the fields asked for are decoded: a header-aware value parses its headers lazily (HV-10).
    out: JsonDict = {"found": True}
    if "value" in fields:
        out["value"] = tohex(vth.value)
    if "timestamp" in fields:
        out["timestamp"] = vth.timestamp
    if "headers" in fields:
        out["headers"] = headers_to_json(list(vth.headers))
    return out


_TYPED_TO_JSON: dict[ValueFormat | None, Callable[[Any, list[str]], JsonDict]] = {
    ValueFormat.PLAIN: _plain_to_json,
    ValueFormat.TIMESTAMPED: _timestamped_to_json,
    ValueFormat.TIMESTAMPED_WITH_HEADERS: _with_headers_to_json,
}


# --- changelog records and the operation index's example run ---------------------------------------------------------


def _changelog_record(write: ChangelogWrite) -> JsonDict:
    """``put``/``putAll`` and ``delete`` log the stored value or a tombstone; ``putIfAbsent`` only when the previous
    value was null (CL-3, CL-4, CL-8)."""
    context = record_context(write.payload)
    record: cl.ChangelogRecord | None
    if write.operation == "delete":
        record = cl.kv_delete_record(write.store_type, write.key, context, write.position)
    elif write.operation == "put_if_absent":
        previous = require_hex(write.payload, "previous", None)
        record = cl.kv_put_if_absent_record(write.store_type, write.key, write.value, previous, context, write.position)
    else:
        record = cl.kv_put_record(write.store_type, write.key, write.value, context, write.position)
    return {"record": maybe_record(record)}


changelog_writes(Family.KEY_VALUE, ("put", "put_if_absent", "delete"), _changelog_record)

# A caching timestamped store in memory: the family's reads, writes and iterators, and its changelog.
index_store(
    Family.KEY_VALUE, "h1",
    ("store.open", {"store_type": "timestamped_kv", "backend": "memory", "name": "counts", "application_id": "app",
                    "task_id": "0_1", "caching": True}),
    ("store.set_context", {"handle": "$h1", "timestamp": 42, "headers": [["source", "01"]], "offset": 7,
                           "topic": "input", "partition": 1}),
    ("store.put", {"handle": "$h1", "key": "6b31", "value": "000000000000002a7631"}),
    ("store.put_if_absent", {"handle": "$h1", "key": "6b31", "value": "000000000000002b7632"}),
    ("store.put_all", {"handle": "$h1", "entries": [["6b32", "000000000000002a7632"], ["6b33", "000000000000002a7633"]]}),
    ("store.delete", {"handle": "$h1", "key": "6b33"}),
    ("store.get", {"handle": "$h1", "key": "6b31"}),
    ("store.get_typed", {"handle": "$h1", "key": "6b31", "fields": ["value", "timestamp"]}),
    ("store.range", {"handle": "$h1", "from": "6b31", "to": "6b32"}),
    ("store.reverse_range", {"handle": "$h1", "from": "6b31", "to": None}),
    ("store.all", {"handle": "$h1"}),
    ("store.reverse_all", {"handle": "$h1"}),
    ("store.prefix_scan", {"handle": "$h1", "prefix": "6b"}),
    ("store.approximate_num_entries", {"handle": "$h1"}),
    ("store.iterator_open", {"handle": "$h1", "kind": "range", "from": "6b31", "to": None}),
    ("store.iterator_peek_next_key", {"iterator": "$h1-i1"}),
    ("store.iterator_next", {"iterator": "$h1-i1", "max": 1}),
    ("store.iterator_close", {"iterator": "$h1-i1"}),
    ("store.flush_cache", {"handle": "$h1"}),
    ("store.changelog", {"handle": "$h1"}),
    ("store.flush", {"handle": "$h1"}),
    ("store.close", {"handle": "$h1"}),
)
# A persistent store in a task directory: its checkpoint, restore, commit and files on disk.
index_store(
    Family.KEY_VALUE, "h2",
    ("store.write_task_file", {"state_dir": INDEX_STATE_DIR, "application_id": "app", "task_id": "0_0",
                               "file": ".checkpoint", "text": "0\n1\napp-orders-changelog 0 41\n"}),
    ("store.open", {"store_type": "kv", "backend": "rocksdb", "name": "orders", "state_dir": INDEX_STATE_DIR,
                    "application_id": "app", "task_id": "0_0"}),
    ("store.committed_offset", {"handle": "$h2", "topic": "app-orders-changelog", "partition": 0}),
    ("store.restore", {"handle": "$h2", "records": [
        {"key": "6f31", "value": "01", "timestamp": 10, "headers": []},
        {"key": "6f32", "value": "02", "timestamp": 11, "headers": [["h", None]]},
        {"key": "6f31", "value": None, "timestamp": 12, "headers": []}], "batch_size": 2, "commit_offsets": True}),
    ("store.commit", {"handle": "$h2", "changelog_offsets": [["app-orders-changelog", 0, 44]]}),
    ("store.dump", {"handle": "$h2"}),
    ("store.task_files", {"handle": "$h2"}),
    ("store.close", {"handle": "$h2"}),
    ("store.table_options", {"handle": "$h2"}),
)
# The same store reopened and crashed, then wiped as Kafka wipes a task's stores after a crash.
index_store(
    Family.KEY_VALUE, "h3",
    ("store.open", {"store_type": "kv", "backend": "rocksdb", "name": "orders", "state_dir": INDEX_STATE_DIR,
                    "application_id": "app", "task_id": "0_0"}),
    ("store.crash", {"handle": "$h3"}),
    ("store.wipe", {"state_dir": INDEX_STATE_DIR, "name": "orders", "application_id": "app", "task_id": "0_0"}),
)
# A scenario: the harness expands it into the store's own operations (OPS-5).
index_store(
    Family.KEY_VALUE, None,
    ("store.scenario", {"store_type": "kv", "backend": "memory", "steps": [
        {"op": "store.put", "input": {"key": "01", "value": "0a"}}, {"op": "store.get", "input": {"key": "01"}}]}),
)
