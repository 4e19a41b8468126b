"""The session family's operations: over its store keys (spec/session-keys.md, SESS-*), and its stores'.

Each Kafka schema class gets its own operation prefix: ``session.key_schema`` (``SessionKeySchema``),
``session.time_first`` and ``session.key_first`` (``PrefixedSessionKeySchemas``).

The session family's ``session_store.*`` operations: put, remove, fetch_session, find_sessions, fetch.

Each operation names a handle that ``store.open`` opened with ``store_type`` ``session`` or ``session_with_headers``
and ``options`` ``{"retention_ms": ..., "segment_interval_ms"?: ...}``. Keys and values are hex, values in the
type's layout (the aggregate, or ``[varint hsize][headers][aggregation]``); times are int64 JSON numbers; entries
are ``[key, start, end, value]`` (spec/ops.md; spec/session-store.md SS-*).
"""

from __future__ import annotations

from typing import cast

from kstate.codecs import changelog as cl
from kstate.codecs import session_keys as sk
from kstate.codecs.store_types import Family
from kstate.errors import EncodeError
from kstate.ops import INDEX_STATE_DIR, JsonDict, LeniencyCheck, capture, index_store, key_schema_ops, op, tohex
from kstate.ops.changelog_ops import ChangelogWrite, changelog_writes, maybe_record, record_context
from kstate.ops.fields import Output, Request, bool_field, deferred, int_field, nullable_hex
from kstate.ops.inputs import require_int
from kstate.ops.key_schema_ops import BYTES, KEY
from kstate.ops.store_ops import family_handle
from kstate.stores.session import SessionIterator, SessionStore

#: Read after the key's END is decoded, so that a bad key is refused before a bad interval.
_DEFERRED_INTERVAL = deferred(int_field("segment_interval"))

#: The Kafka method and operation that rewrite a plain session key in each prefixed layout (SESS-9).
_FROM_NON_PREFIX = {
    sk.TIME_FIRST: ("extract_window_bytes_from_non_prefix_session_key", "extractWindowBytesFromNonPrefixSessionKey"),
    sk.KEY_FIRST: ("prefix_non_prefix_session_key", "prefixNonPrefixSessionKey"),
}


def _lenient_unvalidated_window(schema: sk.SessionSchema) -> LeniencyCheck:
    def check(payload: JsonDict) -> str | None:
        start, end = require_int(payload, "start"), require_int(payload, "end")
        refused_anyway = payload["key"] is None and not schema.accepts_null_key
        if (start < 0 or end < start) and not refused_anyway:
            return f"Kafka writes the key of an invalid session window (start {start}, end {end}) without checking it"
        return None

    return check


def _register(schema: sk.SessionSchema) -> None:
    key_schema_ops.register_to_store_key(
        schema, "to_binary", ("start", "end"), ["SESS-5", "SESS-6"], "toBinary",
        "Session key of (key, start, end); the window is not validated.", lenient=_lenient_unvalidated_window(schema))

    def extract(request: Request) -> JsonDict:
        """Key, start and end of a session key, and its window or the window's refusal."""
        decoded = schema.decode(request.bytes)

        def window() -> JsonDict:
            sk.validate_session_window(decoded.start, decoded.end)
            return {"start": decoded.start, "end": decoded.end}

        return {"key": tohex(decoded.key), "start": decoded.start, "end": decoded.end, "window": capture(window)}

    op(
        f"session.{schema.name}.extract",
        rules=[schema.layout_rule, "SESS-4"],
        java=[f"{schema.kafka_class}.extractKeyBytes+extractStartTimestamp+extractEndTimestamp+extractWindow"],
        lenient=key_schema_ops.lenient_prefix(schema),
        inputs=[BYTES],
        outputs=[Output("key", "hex"), Output("start", "int"), Output("end", "int"),
                 Output("window", "{end: int, start: int} | error", "the window, or why it is refused")],
    )(extract)

    ordered_bytes = ["SESS-8"] if key_schema_ops.orders_by_key(schema) else []
    key_schema_ops.register_ranges(schema, ["SESS-7", "SESS-6", *ordered_bytes])

    def key_segment_id(request: Request) -> JsonDict:
        """Segment timestamp (the session END) and segment id of a session key."""
        data = request.bytes
        # The END is decoded before the interval is read, so a bad key is refused first.
        segment_timestamp = schema.segment_timestamp(data)
        return {"segment_timestamp": segment_timestamp,
                "segment_id": schema.segment_id(data, _DEFERRED_INTERVAL.parse(request.payload))}

    op(f"session.{schema.name}.segment_id", rules=[schema.layout_rule, "SESS-11"],
       inputs=[BYTES, _DEFERRED_INTERVAL],
       outputs=[Output("segment_timestamp", "int"), Output("segment_id", "int")])(key_segment_id)


for _schema in sk.SCHEMAS:
    _register(_schema)

for _schema, (_name, _java_method) in _FROM_NON_PREFIX.items():
    key_schema_ops.register_from_non_prefix_key(
        _schema, _name, _java_method, "SESS-9",
        f"A plain session key rewritten in the {_schema.name.replace('_', '-')} layout.")


@op(
    "session.to_binary_windowed",
    rules=["SESS-10", "SESS-1", "SESS-2", "SESS-3", "SESS-6"],
    java=["SessionKeySchema/TimeFirst/KeyFirst.toBinary(Windowed,Serializer)"],
    inputs=[KEY, int_field("start"), int_field("end")],
    outputs=[Output(name, "hex | error") for name in ("session_key_schema", "time_first", "key_first")],
)
def to_binary_windowed(request: Request) -> JsonDict:
    """The three schemas' bytes of a windowed key; a refused window refuses all three."""
    key, start, end = request.key, request.start, request.end
    sk.validate_session_window(start, end, error=EncodeError)

    def encoded(schema: sk.SessionSchema) -> JsonDict | str | None:
        result = capture(lambda: {"bytes": tohex(schema.to_binary_windowed(key, start, end))})
        return result if "error" in result else result["bytes"]

    # The plain schema's field is named after its class, SessionKeySchema.
    return {("session_key_schema" if schema is sk.PLAIN else schema.name): encoded(schema) for schema in sk.SCHEMAS}


@op("session.segment_interval", rules=["SESS-11"], inputs=[int_field("retention")],
    outputs=[Output("segment_interval", "int")])
def segment_interval(request: Request) -> JsonDict:
    """The default segment interval of a persistent session store with this retention."""
    return {"segment_interval": sk.default_segment_interval(request.retention)}


# --- the store's operations ------------------------------------------------------------------------------------------

_HANDLE = family_handle(Family.SESSION)
_KEY = nullable_hex("key", "the session's key (a null key is refused as Kafka does)", type="hex")
_WINDOW = (int_field("start", "the session start (>= 0)"), int_field("end", "the session end (>= start)"))
_BACKWARD = bool_field("backward", "", False)
_KEY_FROM = nullable_hex("key_from", "the key, or the range's lower bound")
_KEY_TO = nullable_hex("key_to", "null: the single-key form")
_ENTRIES = (Output("entries", "list[[hex, int, int, hex]]", "[key, start, end, value] in Kafka's iteration order"),)


def _session_store(request: Request) -> SessionStore:
    """The outermost layer of the session store the handle names (another family's store is refused)."""
    return cast(SessionStore, request.handle[1])


def _entries(iterator: SessionIterator) -> JsonDict:
    """``{"entries": [[key, start, end, value], ...]}`` of everything ``iterator`` has left; it is closed."""
    with iterator:
        return {"entries": [[r.key.hex(), r.start, r.end, r.value.hex()] for r in iterator]}


@op("session_store.put", rules=["SS-2", "SS-3", "SS-4", "SS-26"], java=["SessionStore.put"], inputs=(
    _HANDLE, _KEY, *_WINDOW, nullable_hex("value", "in the store type's layout; null removes")))
def session_store_put(request: Request) -> JsonDict:
    """``put(Windowed(key, SessionWindow(start, end)), value)``; a null value removes the session."""
    _session_store(request).put(request.key, request.start, request.end, request.value)
    return {}


@op("session_store.remove", rules=["SS-4", "SS-27"], java=["SessionStore.remove"], inputs=(_HANDLE, _KEY, *_WINDOW))
def session_store_remove(request: Request) -> JsonDict:
    """``remove(Windowed(key, SessionWindow(start, end)))``; logged as a tombstone."""
    _session_store(request).remove(request.key, request.start, request.end)
    return {}


@op("session_store.fetch_session", rules=["SS-16"], java=["SessionStore.fetchSession"],
    inputs=(_HANDLE, _KEY, int_field("start"), int_field("end")), outputs=(Output("value", "hex | null"),))
def session_store_fetch_session(request: Request) -> JsonDict:
    """``fetchSession(key, start, end)``: ``{"value": hex | null}``."""
    return {"value": tohex(_session_store(request).fetch_session(request.key, request.start, request.end))}


@op("session_store.find_sessions", rules=["SS-5", "SS-6", "SS-7", "SS-9", "SS-13"],
    java=["SessionStore.findSessions", "SessionStore.backwardFindSessions"], inputs=(
        _HANDLE, int_field("earliest_end", "sessions ending at or after it"),
        int_field("latest_start", "sessions starting at or before it"), _BACKWARD, _KEY_TO, _KEY_FROM),
    outputs=_ENTRIES)
def session_store_find_sessions(request: Request) -> JsonDict:
    """``findSessions(key_from[, key_to], earliest_end, latest_start)``; ``key_to`` null = the single-key form."""
    store, earliest, latest, backward = _session_store(request), request.earliest_end, request.latest_start, request.backward
    if request.key_to is None:
        return _entries(store.find_sessions(request.key_from, earliest, latest, backward=backward))
    return _entries(store.find_sessions_range(request.key_from, request.key_to, earliest, latest, backward=backward))


@op("session_store.fetch", rules=["SS-8", "SS-9"], java=["SessionStore.fetch", "SessionStore.backwardFetch"],
    inputs=(_HANDLE, _BACKWARD, _KEY_TO, _KEY_FROM), outputs=_ENTRIES)
def session_store_fetch(request: Request) -> JsonDict:
    """``fetch(key_from[, key_to])``: every live session of the key (or key range); ``key_to`` null = single key."""
    store = _session_store(request)
    if request.key_to is None:
        return _entries(store.fetch(request.key_from, backward=request.backward))
    return _entries(store.fetch_range(request.key_from, request.key_to, backward=request.backward))


def _changelog_record(write: ChangelogWrite) -> JsonDict:
    """``put(session, agg)`` logs the session key and the aggregate, ``remove`` a tombstone (CL-7, CL-8)."""
    context = record_context(write.payload)
    stored = None if write.operation == "remove" else write.value
    record = cl.segmented_put_record(write.store_type, write.key, require_int(write.payload, "start"),
                                     require_int(write.payload, "end"), stored, context, write.position,
                                     family=Family.SESSION)
    return {"record": maybe_record(record)}


changelog_writes(Family.SESSION, ("put", "remove"), _changelog_record)

index_store(
    Family.SESSION, "h5",
    ("store.open", {"store_type": "session", "backend": "rocksdb", "name": "sessions", "state_dir": INDEX_STATE_DIR,
                    "application_id": "app", "task_id": "0_0", "options": {"retention_ms": 600000}}),
    ("store.set_context", {"handle": "$h5", "timestamp": 100}),
    ("session_store.put", {"handle": "$h5", "key": "6b", "start": 10, "end": 20, "value": "01"}),
    ("session_store.put", {"handle": "$h5", "key": "6b", "start": 30, "end": 40, "value": "02"}),
    ("session_store.fetch_session", {"handle": "$h5", "key": "6b", "start": 10, "end": 20}),
    ("session_store.find_sessions", {"handle": "$h5", "key_from": "6b", "key_to": None, "earliest_end": 15,
                                     "latest_start": 35}),
    ("session_store.fetch", {"handle": "$h5", "key_from": "6a", "key_to": "6c", "backward": True}),
    ("session_store.remove", {"handle": "$h5", "key": "6b", "start": 10, "end": 20}),
    ("store.close", {"handle": "$h5"}),
)
