"""The window family's ``window_store.*`` operations (spec/ops.md; spec/window-store.md WS-*).

Each names a handle that ``store.open`` opened with a window store type (``window``, ``timestamped_window``,
``timestamped_window_with_headers``) and its ``options``; keys and values are hex, values in the type's
stored layout, times Java longs. Scans answer ``entries`` in the store's own order (WS-11 to WS-18).
"""

from __future__ import annotations

from typing import Any

from kstate.codecs.store_types import Family
from kstate.ops import JsonDict, op, tohex
from kstate.ops.inputs import require_bool, require_hex, require_int
from kstate.ops.store_ops import family_store_for, key_from
from kstate.stores.window import TimedValue, WindowedEntry


def _window_store(payload: JsonDict) -> Any:
    return family_store_for(payload, Family.WINDOW)[1]


def _timed(entries: list[TimedValue]) -> JsonDict:
    return {"entries": [[start, value.hex()] for start, value in entries]}


def _windowed(entries: list[WindowedEntry]) -> JsonDict:
    return {"entries": [[key.hex(), start, value.hex()] for key, start, value in entries]}


@op("window_store.put", rules=["WS-4", "WS-7", "WS-9", "WS-22", "WS-24"], java=["WindowStore.put"])
def window_store_put(payload: JsonDict) -> JsonDict:
    """``put(key, value, windowStart)``; a null value deletes (a no-op with duplicates)."""
    _window_store(payload).put(key_from(payload), require_hex(payload, "value", None), require_int(payload, "window_start"))
    return {}


@op("window_store.fetch", rules=["WS-10", "WS-19"], java=["ReadOnlyWindowStore.fetch"])
def window_store_fetch(payload: JsonDict) -> JsonDict:
    """``fetch(key, time)``: the value of the key's window starting at ``time``, or null."""
    return {"value": tohex(_window_store(payload).fetch(key_from(payload), require_int(payload, "time")))}


@op("window_store.fetch_range", rules=["WS-11", "WS-12", "WS-18"],
    java=["ReadOnlyWindowStore.fetch", "ReadOnlyWindowStore.backwardFetch"])
def window_store_fetch_range(payload: JsonDict) -> JsonDict:
    """``fetch(key, from, to)`` (``backwardFetch`` with ``backward``): ``[[window_start, value], ...]``."""
    store = _window_store(payload)
    return _timed(store.fetch_range(key_from(payload), require_int(payload, "from_ms"), require_int(payload, "to_ms"),
                                    require_bool(payload, "backward", False)))


@op("window_store.fetch_keys", rules=["WS-13", "WS-18", "WS-34"],
    java=["ReadOnlyWindowStore.fetch", "ReadOnlyWindowStore.backwardFetch"])
def window_store_fetch_keys(payload: JsonDict) -> JsonDict:
    """``fetch(keyFrom, keyTo, from, to)`` (null bounds unbounded): ``[[key, window_start, value], ...]``."""
    store = _window_store(payload)
    return _windowed(store.fetch_keys(
        require_hex(payload, "key_from", None), require_hex(payload, "key_to", None),
        require_int(payload, "from_ms"), require_int(payload, "to_ms"), require_bool(payload, "backward", False)))


@op("window_store.fetch_all", rules=["WS-14", "WS-18"],
    java=["ReadOnlyWindowStore.fetchAll", "ReadOnlyWindowStore.backwardFetchAll"])
def window_store_fetch_all(payload: JsonDict) -> JsonDict:
    """``fetchAll(from, to)`` (``backwardFetchAll`` with ``backward``): ``[[key, window_start, value], ...]``."""
    store = _window_store(payload)
    return _windowed(store.fetch_all(require_int(payload, "from_ms"), require_int(payload, "to_ms"),
                                     require_bool(payload, "backward", False)))


@op("window_store.all", rules=["WS-15", "WS-18", "WS-20"], java=["ReadOnlyWindowStore.all", "ReadOnlyWindowStore.backwardAll"])
def window_store_all(payload: JsonDict) -> JsonDict:
    """``all()`` (``backwardAll`` with ``backward``): ``[[key, window_start, value], ...]``."""
    return _windowed(_window_store(payload).all(require_bool(payload, "backward", False)))


# --- the operation index's declarations and example session (kstate.ops.index) ---------------------------------------

_HANDLE = "string; the handle store.open answered (a window store)"
_KEY = "hex | null; the key (a null key is refused as Kafka does)"
_BACKWARD = "bool; optional, the backward* variant (default false)"
_WINDOWED = {"entries": "list[[hex, int, hex]]; [key, window start, value] in the store's order"}
_TIMES = {"from_ms": "int; earliest window start, inclusive", "to_ms": "int; latest window start, inclusive"}

INDEX_FIELDS: dict[str, tuple[dict[str, str], dict[str, str]]] = {
    "window_store.put": ({"handle": _HANDLE, "key": _KEY, "value": "hex | null; in the type's layout; null deletes",
                          "window_start": "int"}, {}),
    "window_store.fetch": ({"handle": _HANDLE, "key": _KEY, "time": "int; the window start"},
                           {"value": "hex | null"}),
    "window_store.fetch_range": ({"handle": _HANDLE, "key": _KEY, **_TIMES, "backward": _BACKWARD},
                                 {"entries": "list[[int, hex]]; [window start, value] in the store's order"}),
    "window_store.fetch_keys": ({"handle": _HANDLE, "key_from": "hex | null; inclusive, null unbounded",
                                 "key_to": "hex | null; inclusive, null unbounded", **_TIMES, "backward": _BACKWARD},
                                _WINDOWED),
    "window_store.fetch_all": ({"handle": _HANDLE, **_TIMES, "backward": _BACKWARD}, _WINDOWED),
    "window_store.all": ({"handle": _HANDLE, "backward": _BACKWARD}, _WINDOWED),
}

#: Steps of the index's example session; ``$W`` is replaced by the handle the session's window store got.
INDEX_SESSION: tuple[tuple[str, JsonDict], ...] = (
    ("window_store.put", {"handle": "$W", "key": "6b31", "value": "0a", "window_start": 1000}),
    ("window_store.put", {"handle": "$W", "key": "6b32", "value": "0b", "window_start": 1000}),
    ("window_store.put", {"handle": "$W", "key": "6b31", "value": "0c", "window_start": 61000}),
    ("window_store.fetch", {"handle": "$W", "key": "6b31", "time": 1000}),
    ("window_store.fetch_range", {"handle": "$W", "key": "6b31", "from_ms": 0, "to_ms": 100000, "backward": True}),
    ("window_store.fetch_keys", {"handle": "$W", "key_from": "6b31", "key_to": None, "from_ms": 0, "to_ms": 100000}),
    ("window_store.fetch_all", {"handle": "$W", "from_ms": 1000, "to_ms": 1000}),
    ("window_store.all", {"handle": "$W"}),
)
