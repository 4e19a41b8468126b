"""The window family's operations: over its store keys (spec/window-keys.md, WIN-*), and its stores'.

Each Kafka schema class gets its own operation prefix: ``window.key_schema`` (``WindowKeySchema``),
``window.time_first`` and ``window.key_first`` (``PrefixedWindowKeySchemas``).

The window family's ``window_store.*`` operations (spec/ops.md; spec/window-store.md WS-*).

Each names a handle that ``store.open`` opened with a window store type (``window``, ``timestamped_window``,
``timestamped_window_with_headers``) and its ``options``; keys and values are hex, values in the type's
stored layout, times Java longs. Scans answer ``entries`` in the store's own order (WS-11 to WS-18).
"""

from __future__ import annotations

from typing import Any

from kstate.codecs import changelog as cl
from kstate.codecs import window_keys as wk
from kstate.codecs.store_types import Family
from kstate.errors import EncodeError
from kstate.ops import INDEX_STATE_DIR, JsonDict, index_store, key_schema_ops, op, tohex
from kstate.ops.changelog_ops import ChangelogWrite, changelog_writes, maybe_record, record_context
from kstate.ops.fields import Output, Request, bool_field, deferred, int_field, nullable_hex
from kstate.ops.inputs import require_bool, require_int
from kstate.ops.key_schema_ops import BYTES, KEY
from kstate.ops.store_ops import family_handle
from kstate.stores.window import TimedValue, WindowedEntry

#: The window's start and end (ms) an output reports.
_WINDOW_OUTPUTS = (Output("start", "int"), Output("end", "int"))


def _register(schema: wk.WindowSchema) -> None:
    name = f"window.{schema.name}"
    java = schema.kafka_class
    layout = schema.layout_rule
    key_schema_ops.register_to_store_key(
        schema, "to_store_key_binary", ("timestamp", "seqnum"), ["WIN-6", "WIN-7"], "toStoreKeyBinary",
        "Store key of (key, window start, seqnum).")

    def extract_store_key(request: Request) -> JsonDict:
        """Key bytes, window start and seqnum of a store key."""
        data = request.bytes
        decoded = schema.decode(data)
        out: JsonDict = {"key": tohex(decoded.key), "timestamp": decoded.timestamp, "seqnum": decoded.seqnum}
        if schema.prefix is not None:
            out["is_time_first"] = wk.is_time_first_schema_key(data)
        return out

    op(
        f"{name}.extract_store_key",
        rules=[layout, "WIN-4"],
        java=[f"{java}.extractStoreKeyBytes+extractStoreTimestamp+extractStoreSequence"],
        lenient=key_schema_ops.lenient_prefix(schema),
        inputs=[BYTES],
        outputs=[Output("key", "hex"), Output("timestamp", "int"), Output("seqnum", "int"),
                 *([Output("is_time_first", "bool")] if schema.prefix is not None else [])],
    )(extract_store_key)

    def extract_store_window(request: Request) -> JsonDict:
        """Time window of a store key for a fixed window size."""
        window = schema.extract_store_window(request.bytes, request.window_size)
        return {"start": window.start, "end": window.end}

    op(
        f"{name}.extract_store_window",
        rules=[layout, "WIN-8", "WIN-9"],
        java=[f"{java}.extractStoreWindow"],
        lenient=key_schema_ops.lenient_prefix(schema),
        inputs=[BYTES, int_field("window_size")],
        outputs=_WINDOW_OUTPUTS,
    )(extract_store_window)

    ordered_bytes = ["WIN-11"] if key_schema_ops.orders_by_key(schema) else []
    key_schema_ops.register_ranges(schema, ["WIN-10", "WIN-7", *ordered_bytes])

    def store_key_segment_id(request: Request) -> JsonDict:
        """Segment timestamp (window start) and segment id of a store key."""
        data, interval = request.bytes, request.segment_interval
        return {"segment_timestamp": schema.segment_timestamp(data), "segment_id": schema.segment_id(data, interval)}

    op(f"{name}.segment_id", rules=[layout, "WIN-15"], inputs=[BYTES, int_field("segment_interval")],
       outputs=[Output("segment_timestamp", "int"), Output("segment_id", "int")])(store_key_segment_id)

    if schema.prefix is not None:
        key_schema_ops.register_from_non_prefix_key(
            schema, "from_non_prefix_window_key", "fromNonPrefixWindowKey", "WIN-12",
            "A plain store key rewritten in this prefixed layout.")


for _schema in wk.SCHEMAS:
    _register(_schema)


#: Read after the window is checked: a bad window is refused before a bad key, as Kafka builds the window first.
_DEFERRED_KEY = deferred(KEY)


@op("window.key_schema.to_binary", rules=["WIN-5", "WIN-8", "WIN-7"], java=["WindowKeySchema.toBinary"],
    inputs=[int_field("window_start"), int_field("window_end"), _DEFERRED_KEY], outputs=[Output("bytes", "hex")])
def to_binary(request: Request) -> JsonDict:
    """Pipe-serde bytes ``[key][start]`` of a windowed key whose ``TimeWindow(start, end)`` is valid."""
    start, end = request.window_start, request.window_end
    wk.validate_window(start, end, time_window=True, error=EncodeError)
    return {"bytes": tohex(wk.to_binary(_DEFERRED_KEY.parse(request.payload), start))}


@op("window.key_schema.from_binary", rules=["WIN-5", "WIN-8", "WIN-9"], java=["WindowKeySchema.from"],
    inputs=[BYTES, int_field("window_size")], outputs=[Output("key", "hex"), *_WINDOW_OUTPUTS])
def from_binary(request: Request) -> JsonDict:
    """Key and time window of pipe-serde bytes, for a fixed window size."""
    key, window = wk.from_binary(request.bytes, request.window_size)
    return {"key": tohex(key), "start": window.start, "end": window.end}


@op("window.is_time_first_schema_key", rules=["WIN-2"], inputs=[BYTES], outputs=[Output("result", "bool")])
def is_time_first_schema_key(request: Request) -> JsonDict:
    """Whether a prefixed store key carries the time-first prefix."""
    return {"result": wk.is_time_first_schema_key(request.bytes)}


@op("window.next_seqnum", rules=["WIN-6"], inputs=[int_field("seqnum"), bool_field("retain_duplicates")],
    outputs=[Output("seqnum", "int")])
def next_seqnum(request: Request) -> JsonDict:
    """The seqnum the next put uses, given the current one."""
    return {"seqnum": wk.next_seqnum(request.seqnum, request.retain_duplicates)}


@op("window.segment_interval", rules=["WIN-16"],
    inputs=[int_field("retention"), int_field("window_size"),
            int_field("segment_interval", "the default interval when left out or null", default=None)],
    outputs=[Output("segment_interval", "int")])
def segment_interval(request: Request) -> JsonDict:
    """Checked store parameters: the segment interval in use (the default when none is given)."""
    return {"segment_interval": wk.validate_store_params(request.retention, request.window_size, request.segment_interval)}


# --- the store's operations ------------------------------------------------------------------------------------------

_HANDLE = family_handle(Family.WINDOW, "the handle store.open answered (a window store)")
_KEY = nullable_hex("key", "the key (a null key is refused as Kafka does)")
_BACKWARD = bool_field("backward", "the backward* variant", False)
_TIMES = (int_field("from_ms", "earliest window start, inclusive"), int_field("to_ms", "latest window start, inclusive"))
_WINDOWED = (Output("entries", "list[[hex, int, hex]]", "[key, window start, value] in the store's order"),)


def _window_store(request: Request) -> Any:
    return request.handle[1]


def _timed(entries: list[TimedValue]) -> JsonDict:
    return {"entries": [[start, value.hex()] for start, value in entries]}


def _windowed(entries: list[WindowedEntry]) -> JsonDict:
    return {"entries": [[key.hex(), start, value.hex()] for key, start, value in entries]}


@op("window_store.put", rules=["WS-4", "WS-7", "WS-9", "WS-22", "WS-24"], java=["WindowStore.put"], inputs=(
    _HANDLE, _KEY, nullable_hex("value", "in the type's layout; null deletes"), int_field("window_start")))
def window_store_put(request: Request) -> JsonDict:
    """``put(key, value, windowStart)``; a null value deletes (a no-op with duplicates)."""
    _window_store(request).put(request.key, request.value, request.window_start)
    return {}


@op("window_store.fetch", rules=["WS-10", "WS-19"], java=["ReadOnlyWindowStore.fetch"], inputs=(
    _HANDLE, _KEY, int_field("time", "the window start")), outputs=(Output("value", "hex | null"),))
def window_store_fetch(request: Request) -> JsonDict:
    """``fetch(key, time)``: the value of the key's window starting at ``time``, or null."""
    return {"value": tohex(_window_store(request).fetch(request.key, request.time))}


@op("window_store.fetch_range", rules=["WS-11", "WS-12", "WS-18"],
    java=["ReadOnlyWindowStore.fetch", "ReadOnlyWindowStore.backwardFetch"], inputs=(_HANDLE, _KEY, *_TIMES, _BACKWARD),
    outputs=(Output("entries", "list[[int, hex]]", "[window start, value] in the store's order"),))
def window_store_fetch_range(request: Request) -> JsonDict:
    """``fetch(key, from, to)`` (``backwardFetch`` with ``backward``): ``[[window_start, value], ...]``."""
    return _timed(_window_store(request).fetch_range(request.key, request.from_ms, request.to_ms, request.backward))


@op("window_store.fetch_keys", rules=["WS-13", "WS-18", "WS-34"],
    java=["ReadOnlyWindowStore.fetch", "ReadOnlyWindowStore.backwardFetch"], inputs=(
        _HANDLE, nullable_hex("key_from", "inclusive, null unbounded"), nullable_hex("key_to", "inclusive, null unbounded"),
        *_TIMES, _BACKWARD), outputs=_WINDOWED)
def window_store_fetch_keys(request: Request) -> JsonDict:
    """``fetch(keyFrom, keyTo, from, to)`` (null bounds unbounded): ``[[key, window_start, value], ...]``."""
    return _windowed(_window_store(request).fetch_keys(request.key_from, request.key_to, request.from_ms, request.to_ms,
                                                       request.backward))


@op("window_store.fetch_all", rules=["WS-14", "WS-18"],
    java=["ReadOnlyWindowStore.fetchAll", "ReadOnlyWindowStore.backwardFetchAll"], inputs=(_HANDLE, *_TIMES, _BACKWARD),
    outputs=_WINDOWED)
def window_store_fetch_all(request: Request) -> JsonDict:
    """``fetchAll(from, to)`` (``backwardFetchAll`` with ``backward``): ``[[key, window_start, value], ...]``."""
    return _windowed(_window_store(request).fetch_all(request.from_ms, request.to_ms, request.backward))


@op("window_store.all", rules=["WS-15", "WS-18", "WS-20"], java=["ReadOnlyWindowStore.all", "ReadOnlyWindowStore.backwardAll"],
    inputs=(_HANDLE, _BACKWARD), outputs=_WINDOWED)
def window_store_all(request: Request) -> JsonDict:
    """``all()`` (``backwardAll`` with ``backward``): ``[[key, window_start, value], ...]``."""
    return _windowed(_window_store(request).all(request.backward))


# --- changelog records and the operation index's example run ---------------------------------------------------------


def _changelog_record(write: ChangelogWrite) -> JsonDict:
    """``put(k, v, windowStart)`` logs the store key with the layer's next seqnum, which it reports (CL-6, CL-8)."""
    context = record_context(write.payload)
    payload = write.payload
    seqnum = cl.next_seqnum(require_int(payload, "seqnum", 0), require_bool(payload, "retain_duplicates", False))
    record = cl.window_put_record(write.store_type, write.key, require_int(payload, "window_start"), seqnum, write.value,
                                  context, write.position)
    return {"record": maybe_record(record), "seqnum": seqnum}


changelog_writes(Family.WINDOW, ("put",), _changelog_record)

index_store(
    Family.WINDOW, "h4",
    ("store.open", {"store_type": "window", "backend": "rocksdb", "name": "clicks", "state_dir": INDEX_STATE_DIR,
                    "application_id": "app", "task_id": "0_0",
                    "options": {"retention_ms": 120000, "window_size_ms": 1000}}),
    ("window_store.put", {"handle": "$h4", "key": "6b31", "value": "0a", "window_start": 1000}),
    ("window_store.put", {"handle": "$h4", "key": "6b32", "value": "0b", "window_start": 1000}),
    ("window_store.put", {"handle": "$h4", "key": "6b31", "value": "0c", "window_start": 61000}),
    ("window_store.fetch", {"handle": "$h4", "key": "6b31", "time": 1000}),
    ("window_store.fetch_range", {"handle": "$h4", "key": "6b31", "from_ms": 0, "to_ms": 100000, "backward": True}),
    ("window_store.fetch_keys", {"handle": "$h4", "key_from": "6b31", "key_to": None, "from_ms": 0, "to_ms": 100000}),
    ("window_store.fetch_all", {"handle": "$h4", "from_ms": 1000, "to_ms": 1000}),
    ("window_store.all", {"handle": "$h4"}),
    ("store.close", {"handle": "$h4"}),
)
