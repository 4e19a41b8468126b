"""The versioned family's ``versioned_store.*`` operations on a handle from ``store.open`` (spec/versioned-store.md).

``store_type`` ``versioned_kv`` or ``versioned_kv_with_headers``, ``options`` ``history_retention_ms`` (required) and
``segment_interval_ms``. Keys and values are hex; records are ``{value, timestamp, valid_to, headers?}``; a put
answers Kafka's return code ``valid_to`` (VS-7). On the headers variant ``put`` takes ``headers`` and records carry
them (VS-25, tentative).
"""

from __future__ import annotations

from typing import Any

from kstate.codecs import changelog as cl
from kstate.codecs.store_types import (
    STORE_TYPES,
    Family,
    Source,
    StoreType,
    decode_stored_value,
    encode_stored_value,
)
from kstate.ops import JsonDict, headers_to_json, index_store, op, tohex
from kstate.ops.changelog_ops import ChangelogWrite, changelog_writes, maybe_record, record_context
from kstate.ops.fields import Field, Output, Request, choice_field, int_field, nullable_hex
from kstate.ops.inputs import require_headers, require_int
from kstate.ops.store_ops import StoreHandle, family_handle, handle_for
from kstate.stores.api import InvalidStateStoreError
from kstate.stores.versioned import ResultOrder, RocksDBVersionedStore, VersionedRecord

_ORDERS = tuple(o.value for o in ResultOrder)


_HANDLE = family_handle(Family.VERSIONED)
_KEY = nullable_hex("key", "the key")
_RECORD = "{value: hex, timestamp: int, valid_to: int | null, headers?: list[[string, hex | null]]}"


def _store(request: Request) -> tuple[StoreHandle, Any, StoreType]:
    handle, store = request.handle
    return handle, store, handle.store_type


def _put_headers(payload: JsonDict, name: str, _default: Any) -> Any:
    # Only a type whose layout keeps headers reads them, for a value (not a tombstone); the plain type ignores the
    # field, as it always has. ``value`` was read before, so a non-null one is valid hex.
    if payload.get("value") is None or not STORE_TYPES[handle_for(payload).store_type].stores_headers:
        return None
    return require_headers(payload, name, None)


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


@op("versioned_store.put", rules=["VS-6", "VS-7", "VS-18", "VS-25"], java=["VersionedKeyValueStore.put"], inputs=(
    _HANDLE, nullable_hex("value", "null: a tombstone"), int_field("timestamp", "the version's timestamp"),
    Field("headers", "list[[string, hex | null]]", "the headers variant's headers", None, _put_headers), _KEY),
    outputs=(Output("valid_to", "int", "the new version's validTo, -1 if latest, -9223372036854775808 if not put"),))
def versioned_put(request: Request) -> JsonDict:
    """``put(key, value, timestamp)``: ``{"valid_to"}``, -1 if the new version is the latest, Long.MIN_VALUE if
    not put (expired); the headers variant takes ``headers``."""
    _, store, store_type = _store(request)
    value, timestamp = request.value, request.timestamp
    if value is not None:
        value = encode_stored_value(store_type, value, timestamp, request.headers or [])
    return {"valid_to": store.put(request.key, value, timestamp)}


@op("versioned_store.get", rules=["VS-8", "VS-9"], java=["VersionedKeyValueStore.get"], inputs=(
    _HANDLE, int_field("as_of", "the timestamp (absent: the latest value)", None, nullable=True, type="int | null"),
    _KEY), outputs=(Output("record", f"{_RECORD} | null"),))
def versioned_get(request: Request) -> JsonDict:
    """``get(key)`` or, with ``as_of``, ``get(key, asOfTimestamp)``: ``{"record": {...} | null}``."""
    _, store, store_type = _store(request)
    return {"record": record_to_json(store.get(request.key, request.as_of), store_type)}


@op("versioned_store.delete", rules=["VS-10", "VS-18"], java=["VersionedKeyValueStore.delete"], inputs=(
    _HANDLE, int_field("timestamp", "the tombstone's"), _KEY),
    outputs=(Output("record", f"{_RECORD} | null", "the version valid at timestamp before"),))
def versioned_delete(request: Request) -> JsonDict:
    """``delete(key, timestamp)``: the record valid at ``timestamp`` before the delete, ``{"record"}``."""
    _, store, store_type = _store(request)
    return {"record": record_to_json(store.delete(request.key, request.timestamp), store_type)}


@op("versioned_store.get_versions", rules=["VS-11", "VS-12"], java=["MultiVersionedKeyQuery"], inputs=(
    _HANDLE, int_field("from_ms", "lower bound (absent: unbounded)", None, nullable=True, type="int | null"),
    int_field("to_ms", "upper bound (absent: unbounded)", None, nullable=True, type="int | null"),
    choice_field("order", _ORDERS, "ascending, descending or any", ResultOrder.ANY.value), _KEY),
    outputs=(Output("records", f"list[{_RECORD}]"),))
def versioned_get_versions(request: Request) -> JsonDict:
    """KIP-968's versions of one key between ``from_ms`` and ``to_ms`` (null: unbounded), in ``order``."""
    _, store, store_type = _store(request)
    records = store.get_versions(request.key, request.from_ms, request.to_ms, request.order)
    return {"records": [record_to_json(r, store_type) for r in records]}


@op("versioned_store.stream_time", rules=["VS-5"], level="recommended", inputs=(_HANDLE,),
    outputs=(Output("stream_time", "int", "the observed stream time, -1 at first"),))
def versioned_stream_time(request: Request) -> JsonDict:
    """The store's observed stream time (-1 before any write): ``{"stream_time"}``; not a Kafka method."""
    _, store, _ = _store(request)
    return {"stream_time": store.observed_stream_time}


@op("versioned_store.segments", rules=["VS-13", "VS-14"], level="recommended", inputs=(_HANDLE,),
    outputs=(Output("segments", "list[int]", "the segment ids held, ascending"),))
def versioned_segments(request: Request) -> JsonDict:
    """The regular segment ids the store holds, ascending: ``{"segments": [...]}``; not a Kafka method."""
    handle, _, _ = _store(request)
    store = handle.bytes_store
    if not isinstance(store, RocksDBVersionedStore):
        raise InvalidStateStoreError(f"store {handle.name} does not list its segments")
    return {"segments": store.segment_ids()}


def _changelog_record(write: ChangelogWrite) -> JsonDict:
    """``put(k, v, ts)`` logs the value at the version's timestamp, ``delete(k, ts)`` a tombstone (CL-5, VS-26)."""
    logged = None if write.operation == "delete" else write.value
    # The context matters only where a tombstone logs its headers (VS-26); plain versioned records never read it.
    fields = STORE_TYPES[write.store_type].changelog
    context = record_context(write.payload) if fields is not None and fields.headers is Source.VALUE else None
    record = cl.versioned_write_record(write.store_type, write.key, logged, require_int(write.payload, "timestamp"),
                                       context, write.position)
    return {"record": maybe_record(record)}


changelog_writes(Family.VERSIONED, ("put", "delete"), _changelog_record)

index_store(
    Family.VERSIONED, "h6",
    ("store.open", {"store_type": "versioned_kv_with_headers", "backend": "memory", "name": "prices",
                    "options": {"history_retention_ms": 60000, "segment_interval_ms": 10000}}),
    ("versioned_store.put", {"handle": "$h6", "key": "6b", "value": "01", "timestamp": 1000, "headers": [["h", "02"]]}),
    ("versioned_store.put", {"handle": "$h6", "key": "6b", "value": "03", "timestamp": 5000}),
    ("versioned_store.get", {"handle": "$h6", "key": "6b", "as_of": 2000}),
    ("versioned_store.delete", {"handle": "$h6", "key": "6b", "timestamp": 9000}),
    ("versioned_store.get_versions", {"handle": "$h6", "key": "6b", "from_ms": 0, "to_ms": 9999, "order": "ascending"}),
    ("versioned_store.stream_time", {"handle": "$h6"}),
    ("versioned_store.segments", {"handle": "$h6"}),
)
