"""The versioned family's ``versioned_store.*`` operations on a handle from ``store.open`` (spec/versioned-store.md).

``store_type`` ``versioned_kv`` or ``versioned_kv_with_headers``, ``options`` ``history_retention_ms`` (required) and
``segment_interval_ms``. Keys and values are hex; records are ``{value, timestamp, valid_to, headers?}``; a put
answers Kafka's return code ``valid_to`` (VS-7). On the headers variant ``put`` takes ``headers`` and records carry
them (VS-25, tentative).
"""

from __future__ import annotations

from typing import Any

from kstate.codecs.store_types import STORE_TYPES, Family, StoreType, decode_stored_value, encode_stored_value
from kstate.ops import JsonDict, headers_to_json, op, tohex
from kstate.ops.inputs import require_choice, require_headers, require_hex, require_int
from kstate.ops.store_ops import StoreHandle, family_store_for, key_from
from kstate.stores.api import InvalidStateStoreError
from kstate.stores.versioned import ResultOrder, RocksDBVersionedStore, VersionedRecord

_ORDERS = tuple(o.value for o in ResultOrder)


def _store(payload: JsonDict) -> tuple[StoreHandle, Any, StoreType]:
    handle, store = family_store_for(payload, Family.VERSIONED)
    return handle, store, handle.store_type


def record_to_json(record: VersionedRecord | None, store_type: StoreType) -> JsonDict | None:
    """``{value, timestamp, valid_to}``, the value split by the type's layout: ``headers`` where it keeps them
    (VS-22, VS-28); None for no record."""
    if record is None:
        return None
    parts = decode_stored_value(store_type, record.value)
    out: JsonDict = {"value": tohex(parts.value), "timestamp": record.timestamp, "valid_to": record.valid_to}
    if parts.headers is not None:
        out["headers"] = headers_to_json(list(parts.headers))
    return out


@op("versioned_store.put", rules=["VS-6", "VS-7", "VS-18", "VS-25"], java=["VersionedKeyValueStore.put"])
def versioned_put(payload: JsonDict) -> JsonDict:
    """``put(key, value, timestamp)``: ``{"valid_to"}``, -1 if the new version is the latest, Long.MIN_VALUE if
    not put (expired); the headers variant takes ``headers``."""
    _, store, store_type = _store(payload)
    value = require_hex(payload, "value", None)
    timestamp = require_int(payload, "timestamp")
    if value is not None:
        # Only a type whose layout keeps headers reads them; the plain type ignores the field, as it always has.
        headers = require_headers(payload, "headers", None) if STORE_TYPES[store_type].stores_headers else None
        value = encode_stored_value(store_type, value, timestamp, headers or [])
    return {"valid_to": store.put(key_from(payload), value, timestamp)}


@op("versioned_store.get", rules=["VS-8", "VS-9"], java=["VersionedKeyValueStore.get"])
def versioned_get(payload: JsonDict) -> JsonDict:
    """``get(key)`` or, with ``as_of``, ``get(key, asOfTimestamp)``: ``{"record": {...} | null}``."""
    _, store, store_type = _store(payload)
    as_of = require_int(payload, "as_of", None, nullable=True)
    return {"record": record_to_json(store.get(key_from(payload), as_of), store_type)}


@op("versioned_store.delete", rules=["VS-10", "VS-18"], java=["VersionedKeyValueStore.delete"])
def versioned_delete(payload: JsonDict) -> JsonDict:
    """``delete(key, timestamp)``: the record valid at ``timestamp`` before the delete, ``{"record"}``."""
    _, store, store_type = _store(payload)
    timestamp = require_int(payload, "timestamp")
    return {"record": record_to_json(store.delete(key_from(payload), timestamp), store_type)}


@op("versioned_store.get_versions", rules=["VS-11", "VS-12"], java=["MultiVersionedKeyQuery"])
def versioned_get_versions(payload: JsonDict) -> JsonDict:
    """KIP-968's versions of one key between ``from_ms`` and ``to_ms`` (null: unbounded), in ``order``."""
    _, store, store_type = _store(payload)
    from_ms = require_int(payload, "from_ms", None, nullable=True)
    to_ms = require_int(payload, "to_ms", None, nullable=True)
    order = require_choice(payload, "order", _ORDERS, ResultOrder.ANY.value)
    records = store.get_versions(key_from(payload), from_ms, to_ms, order)
    return {"records": [record_to_json(r, store_type) for r in records]}


@op("versioned_store.stream_time", rules=["VS-5"], level="recommended")
def versioned_stream_time(payload: JsonDict) -> JsonDict:
    """The store's observed stream time (-1 before any write): ``{"stream_time"}``; not a Kafka method."""
    _, store, _ = _store(payload)
    return {"stream_time": store.observed_stream_time}


@op("versioned_store.segments", rules=["VS-13", "VS-14"], level="recommended")
def versioned_segments(payload: JsonDict) -> JsonDict:
    """The regular segment ids the store holds, ascending: ``{"segments": [...]}``; not a Kafka method."""
    handle, _, _ = _store(payload)
    store = handle.bytes_store
    if not isinstance(store, RocksDBVersionedStore):
        raise InvalidStateStoreError(f"store {handle.name} does not list its segments")
    return {"segments": store.segment_ids()}
