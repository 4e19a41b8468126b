"""The key-value family's ``store.*`` operations: writes, reads, range scans, live iterators, typed reads.

Each operation names a handle that :mod:`kstate.ops.store_ops` opened; keys and values are hex, values in
the store type's layout (spec/ops.md, OPS-*; spec/kv-stores.md KV-*, caching.md CACHE-*).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kstate.codecs.store_types import STORE_TYPES, ValueFormat
from kstate.ops import JsonDict, headers_to_json, op, tohex
from kstate.ops.inputs import (
    INT32_MAX,
    as_hex,
    as_str,
    as_tuple,
    require_choice,
    require_hex,
    require_int,
    require_list,
)
from kstate.ops.store_ops import (
    drain,
    entries_of,
    handle_for,
    iterator_for,
    key_from,
    register_iterator,
    store_for,
)
from kstate.stores.api import InvalidStateStoreError, KeyValueIterator
from kstate.stores.families import store_classes

# --- writes -----------------------------------------------------------------------------------------------------


@op("store.put", rules=["CACHE-2"])
def store_put(payload: JsonDict) -> JsonDict:
    """``put(key, value)``; a null value deletes."""
    _, store = store_for(payload)
    store.put(key_from(payload), require_hex(payload, "value", None))
    return {}


@op("store.put_if_absent", rules=["CACHE-2"])
def store_put_if_absent(payload: JsonDict) -> JsonDict:
    """``putIfAbsent(key, value)``: answers the previous value."""
    _, store = store_for(payload)
    return {"previous": tohex(store.put_if_absent(key_from(payload), require_hex(payload, "value", None)))}


@op("store.put_all", rules=["CACHE-2"])
def store_put_all(payload: JsonDict) -> JsonDict:
    """``putAll([[key, value], ...])``."""
    _, store = store_for(payload)
    entries = []
    for i, item in enumerate(require_list(payload, "entries", None) or []):
        key, value = as_tuple(item, 2, f"entries[{i}]")
        entries.append((as_hex(key, f"entries[{i}][0]"), as_hex(value, f"entries[{i}][1]")))
    store.put_all(entries)
    return {}


@op("store.delete", rules=["CACHE-2"])
def store_delete(payload: JsonDict) -> JsonDict:
    """``delete(key)``: answers the previous value."""
    _, store = store_for(payload)
    return {"previous": tohex(store.delete(key_from(payload)))}


# --- reads ------------------------------------------------------------------------------------------------------


@op("store.get", rules=["CACHE-1"])
def store_get(payload: JsonDict) -> JsonDict:
    """``get(key)``."""
    _, store = store_for(payload)
    return {"value": tohex(store.get(key_from(payload)))}


@op("store.range", rules=["CACHE-7"])
def store_range(payload: JsonDict) -> JsonDict:
    """``range(from, to)``, both inclusive, null unbounded: ``{"entries": [[key, value], ...]}``."""
    _, store = store_for(payload)
    return drain(store.range(require_hex(payload, "from", None), require_hex(payload, "to", None)))


@op("store.reverse_range", rules=["CACHE-7"])
def store_reverse_range(payload: JsonDict) -> JsonDict:
    """``reverseRange(from, to)``."""
    _, store = store_for(payload)
    return drain(store.reverse_range(require_hex(payload, "from", None), require_hex(payload, "to", None)))


@op("store.all", rules=["CACHE-7"])
def store_all(payload: JsonDict) -> JsonDict:
    """``all()``."""
    _, store = store_for(payload)
    return drain(store.all())


@op("store.reverse_all", rules=["CACHE-7"])
def store_reverse_all(payload: JsonDict) -> JsonDict:
    """``reverseAll()``."""
    _, store = store_for(payload)
    return drain(store.reverse_all())


@op("store.prefix_scan", rules=["CACHE-8"])
def store_prefix_scan(payload: JsonDict) -> JsonDict:
    """``prefixScan(prefix)`` with the bytes serializer."""
    _, store = store_for(payload)
    return drain(store.prefix_scan(key_from(payload, "prefix")))


@op("store.approximate_num_entries", rules=["CACHE-10"])
def store_approximate_num_entries(payload: JsonDict) -> JsonDict:
    """``approximateNumEntries()``: ``{"count": n}``."""
    _, store = store_for(payload)
    return {"count": store.approximate_num_entries()}


# --- live iterators ----------------------------------------------------------------------------------------------


_ITERATOR_KINDS = ("range", "reverse_range", "all", "reverse_all", "prefix_scan")


@op("store.iterator_open", rules=["CACHE-7"])
def store_iterator_open(payload: JsonDict) -> JsonDict:
    """Open an iterator: ``kind`` range, reverse_range, all, reverse_all or prefix_scan (``from``, ``to``, ``prefix``)."""
    handle, store = store_for(payload)
    kind = require_choice(payload, "kind", _ITERATOR_KINDS, "all")
    iterator: KeyValueIterator
    if kind == "range":
        iterator = store.range(require_hex(payload, "from", None), require_hex(payload, "to", None))
    elif kind == "reverse_range":
        iterator = store.reverse_range(require_hex(payload, "from", None), require_hex(payload, "to", None))
    elif kind == "all":
        iterator = store.all()
    elif kind == "reverse_all":
        iterator = store.reverse_all()
    elif kind == "prefix_scan":
        iterator = store.prefix_scan(key_from(payload, "prefix"))
    else:
        raise InvalidStateStoreError(f"unknown iterator kind {kind!r}")
    return {"iterator": register_iterator(handle, iterator)}


@op("store.iterator_next", rules=["CACHE-7"])
def store_iterator_next(payload: JsonDict) -> JsonDict:
    """Up to ``max`` (default 1) more entries; fewer at the end; an error once the iterator is closed."""
    iterator = iterator_for(payload)
    limit = require_int(payload, "max", 1, minimum=1, maximum=INT32_MAX)
    return {"entries": entries_of(iterator, limit)}


@op("store.iterator_peek_next_key", rules=["CACHE-7", "KV-17"])
def store_iterator_peek_next_key(payload: JsonDict) -> JsonDict:
    """The next key without consuming it (null at the end)."""
    return {"key": tohex(iterator_for(payload).peek_next_key())}


@op("store.iterator_close", rules=["CACHE-7"])
def store_iterator_close(payload: JsonDict) -> JsonDict:
    """Close the iterator; later reads of it are refused."""
    iterator_for(payload).close()
    return {}


# --- typed reads ------------------------------------------------------------------------------------------------


@op("store.get_typed", rules=["KV-60", "KV-61", "KV-62"])
def store_get_typed(payload: JsonDict) -> JsonDict:
    """``get`` through the store type's value facade; only the ``fields`` asked for are decoded and answered.

    On every store type, as the Kafka testee answers them; a plain store's miss answers its null ``value``."""
    handle = handle_for(payload)
    fields = [as_str(f, f"fields[{i}]") for i, f in enumerate(require_list(payload, "fields", None)
                                                                  or ["value", "timestamp", "headers"])]
    facade = store_classes(handle.store_type).facade
    if facade is None:
        raise InvalidStateStoreError(f"store {handle.name} has no typed view")
    value = facade(handle.store).get(key_from(payload))
    return _TYPED_TO_JSON[STORE_TYPES[handle.store_type].value_format](value, fields)


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
