"""The session family's ``session_store.*`` operations: put, remove, fetch_session, find_sessions, fetch.

Each operation names a handle that ``store.open`` opened with ``store_type`` ``session`` or ``session_with_headers``
and ``options`` ``{"retention_ms": ..., "segment_interval_ms"?: ...}``. Keys and values are hex, values in the
type's layout (the aggregate, or ``[varint hsize][headers][aggregation]``); times are int64 JSON numbers; entries
are ``[key, start, end, value]`` (spec/ops.md; spec/session-store.md SS-*).
"""

from __future__ import annotations

from typing import cast

from kstate.codecs.store_types import Family
from kstate.ops import JsonDict, op, tohex
from kstate.ops.inputs import require_bool, require_hex, require_int
from kstate.ops.store_ops import family_store_for, key_from
from kstate.stores.session import SessionIterator, SessionStore


def _session_store(payload: JsonDict) -> SessionStore:
    """The outermost layer of the session store the handle names (another family's store is refused)."""
    return cast(SessionStore, family_store_for(payload, Family.SESSION)[1])


def _entries(iterator: SessionIterator) -> JsonDict:
    """``{"entries": [[key, start, end, value], ...]}`` of everything ``iterator`` has left; it is closed."""
    with iterator:
        return {"entries": [[r.key.hex(), r.start, r.end, r.value.hex()] for r in iterator]}


@op("session_store.put", rules=["SS-2", "SS-3", "SS-4", "SS-26"], java=["SessionStore.put"])
def session_store_put(payload: JsonDict) -> JsonDict:
    """``put(Windowed(key, SessionWindow(start, end)), value)``; a null value removes the session."""
    store = _session_store(payload)
    store.put(key_from(payload), require_int(payload, "start"), require_int(payload, "end"),
              require_hex(payload, "value", None))
    return {}


@op("session_store.remove", rules=["SS-4", "SS-27"], java=["SessionStore.remove"])
def session_store_remove(payload: JsonDict) -> JsonDict:
    """``remove(Windowed(key, SessionWindow(start, end)))``; logged as a tombstone."""
    store = _session_store(payload)
    store.remove(key_from(payload), require_int(payload, "start"), require_int(payload, "end"))
    return {}


@op("session_store.fetch_session", rules=["SS-16"], java=["SessionStore.fetchSession"])
def session_store_fetch_session(payload: JsonDict) -> JsonDict:
    """``fetchSession(key, start, end)``: ``{"value": hex | null}``."""
    store = _session_store(payload)
    value = store.fetch_session(key_from(payload), require_int(payload, "start"),
                                require_int(payload, "end"))
    return {"value": tohex(value)}


@op("session_store.find_sessions", rules=["SS-5", "SS-6", "SS-7", "SS-9", "SS-13"],
    java=["SessionStore.findSessions", "SessionStore.backwardFindSessions"])
def session_store_find_sessions(payload: JsonDict) -> JsonDict:
    """``findSessions(key_from[, key_to], earliest_end, latest_start)``; ``key_to`` null = the single-key form."""
    store = _session_store(payload)
    earliest, latest = require_int(payload, "earliest_end"), require_int(payload, "latest_start")
    backward = require_bool(payload, "backward", False)
    key_to = require_hex(payload, "key_to", None)
    if key_to is None:
        return _entries(store.find_sessions(key_from(payload, "key_from"), earliest, latest,
                                            backward=backward))
    return _entries(store.find_sessions_range(require_hex(payload, "key_from", None), key_to,
                                              earliest, latest, backward=backward))


@op("session_store.fetch", rules=["SS-8", "SS-9"], java=["SessionStore.fetch", "SessionStore.backwardFetch"])
def session_store_fetch(payload: JsonDict) -> JsonDict:
    """``fetch(key_from[, key_to])``: every live session of the key (or key range); ``key_to`` null = single key."""
    store = _session_store(payload)
    backward = require_bool(payload, "backward", False)
    key_to = require_hex(payload, "key_to", None)
    if key_to is None:
        return _entries(store.fetch(key_from(payload, "key_from"), backward=backward))
    return _entries(store.fetch_range(require_hex(payload, "key_from", None), key_to,
                                      backward=backward))
