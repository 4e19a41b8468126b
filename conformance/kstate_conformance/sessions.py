"""Session store helpers over the neutral ``session_store.*`` operations (spec/ops.md), for the session tests.

A :class:`SessionStore` wraps a :class:`harness.Store` opened with a session store type; keys and values are
hex strings, sessions answer as ``(key, start, end, value)`` tuples, as the operations speak them.
"""

from __future__ import annotations

from typing import Any

from kstate_conformance import harness
from kstate_conformance import store_types as types
from kstate_conformance.harness import Kit, Store

SESSION, SESSION_WITH_HEADERS = types.SESSION, types.SESSION_WITH_HEADERS
SESSION_TYPES = types.SESSION_TYPES
INT64_MAX = (1 << 63) - 1
#: ``AbstractSessionBytesStoreTest``'s retention and the segment interval Kafka derives from it.
RETENTION_PERIOD = 10_000
SEGMENT_INTERVAL = 60_000

SessionEntry = tuple[str, int, int, str]


def long_value(value: int) -> str:
    """Hex of a ``Serdes.Long()`` aggregate, as Kafka's tests store them."""
    return harness.i64(value)


def open_session_store(kit: Kit, store_type: str, backend: str, retention_ms: int = RETENTION_PERIOD,
                       segment_interval_ms: int | None = None, **extra: Any) -> SessionStore:
    options: dict[str, Any] = {"retention_ms": retention_ms}
    if segment_interval_ms is not None:
        options["segment_interval_ms"] = segment_interval_ms
    return SessionStore(kit.open(store_type, backend, options=options, **extra))


def _entries(out: dict[str, Any]) -> list[SessionEntry]:
    return [(k, int(s), int(e), v) for k, s, e, v in out["entries"]]


class SessionStore:
    """One open session store of the implementation under test."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def call(self, op: str, **payload: Any) -> dict[str, Any]:
        return self.store.call(op, **payload)

    def ok(self, op: str, **payload: Any) -> dict[str, Any]:
        return self.store.ok(op, **payload)

    def put(self, key: str, start: int, end: int, value: str | None) -> None:
        self.ok("session_store.put", key=key, start=start, end=end, value=value)

    def remove(self, key: str, start: int, end: int) -> None:
        self.ok("session_store.remove", key=key, start=start, end=end)

    def fetch_session(self, key: str, start: int, end: int) -> str | None:
        value: str | None = self.ok("session_store.fetch_session", key=key, start=start, end=end)["value"]
        return value

    def find_sessions(self, key: str, earliest_end: int, latest_start: int, backward: bool = False) -> list[SessionEntry]:
        """``findSessions(key, earliestSessionEndTime, latestSessionStartTime)`` of one key."""
        return _entries(self.ok("session_store.find_sessions", key_from=key, key_to=None, earliest_end=earliest_end,
                                latest_start=latest_start, backward=backward))

    def find_range(self, key_from: str | None, key_to: str | None, earliest_end: int, latest_start: int,
                   backward: bool = False) -> list[SessionEntry]:
        """``findSessions(keyFrom, keyTo, ...)``: a key range, a null bound unbounded."""
        return _entries(self.ok("session_store.find_sessions", **range_payload(key_from, key_to),
                                earliest_end=earliest_end, latest_start=latest_start, backward=backward))

    def fetch(self, key: str, backward: bool = False) -> list[SessionEntry]:
        """``fetch(key)`` / ``backwardFetch(key)``."""
        return _entries(self.ok("session_store.fetch", key_from=key, key_to=None, backward=backward))

    def fetch_range(self, key_from: str | None, key_to: str | None, backward: bool = False) -> list[SessionEntry]:
        """``fetch(keyFrom, keyTo)`` / ``backwardFetch(keyFrom, keyTo)``."""
        return _entries(self.ok("session_store.fetch", **range_payload(key_from, key_to), backward=backward))

    def context(self, timestamp: int, headers: list[list[Any]] | None = None) -> None:
        self.store.context(timestamp, headers)

    def changelog(self) -> list[dict[str, Any]]:
        return self.store.changelog()

    def segments(self) -> dict[str, dict[str, dict[str, str]]]:
        """``store.dump`` of a RocksDB store: segment name -> column family -> {key: value} (non-empty families)."""
        out = self.ok("store.dump")["segments"]
        return {name: {cf: dict(rows) for cf, rows in cfs.items() if rows and cf != "offsets"} for name, cfs in out.items()}

    def close(self) -> None:
        self.store.close()


#: The vocabulary's ``key_to`` null names the single-key form, so an unbounded upper key is sent as a key above
#: every key the tests write (16 bytes of FF): Kafka's ``fetch(keyFrom, null)`` answers the same sessions.
ABOVE_EVERY_KEY = "ff" * 16


def range_payload(key_from: str | None, key_to: str | None) -> dict[str, Any]:
    """A key range as ``find_sessions``/``fetch`` take it; a null ``key_to`` becomes :data:`ABOVE_EVERY_KEY`."""
    return {"key_from": key_from, "key_to": ABOVE_EVERY_KEY if key_to is None else key_to}
