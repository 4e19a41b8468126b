"""Contract tests of session stores, each mirroring a Kafka test (named in its docstring).

Kafka's ``AbstractSessionBytesStoreTest`` runs on ``RocksDBSessionStoreTest`` and ``InMemorySessionStoreTest``
with ``String`` keys, ``Long`` aggregates, retention 10 000 ms (segment interval 60 000 ms); the same cases run
here on every session store type and backend the implementation offers, through the neutral operations.
Where Kafka's test compares sets, these compare the exact order the spec gives (SS rules); where Kafka's
RocksDB and in-memory stores differ, each backend is held to its own answer.
"""

from __future__ import annotations

from typing import Any

import pytest

from kstate_conformance import rules
from kstate_conformance.harness import (
    MEMORY,
    ROCKSDB,
    Kit,
    Store,
    h,
    header_bytes,
    i64,
    is_refusal,
    kit,
    record,
    varint,
)
from kstate_conformance.models.session import HEADERS as SESSION_WITH_HEADERS
from kstate_conformance.models.session import (
    INT64_MAX,
    RETENTION_PERIOD,
    SEGMENT_INTERVAL,
    SESSION,
    SessionEntry,
    SessionStore,
    open_session_store,
)
from kstate_conformance.models.session import STORE_TYPES as SESSION_TYPES

__all__ = ["kit"]

BACKEND_AND_TYPE = pytest.mark.parametrize(
    ("store_type", "backend"), [(t, b) for t in SESSION_TYPES for b in (ROCKSDB, MEMORY)])


def header_value(headers: list[tuple[str, bytes | None]], aggregate: str) -> str:
    """``AggregationWithHeaders`` hex: ``[varint size][header bytes][aggregate]`` (SS-30, HV-1)."""
    section = header_bytes(headers)
    return varint(len(section) // 2) + section + aggregate


def agg(store_type: str, value: int) -> str:
    """A ``Long`` aggregate in the store type's layout: header-aware values carry an empty header section."""
    raw = i64(value)
    return raw if store_type == "session" else "00" + raw


@pytest.fixture
def opened(kit: Kit, store_type: str, backend: str) -> Any:
    """Opens a store of the parametrized type on the parametrized backend (retention 10 000 ms)."""

    def open_store(retention_ms: int = RETENTION_PERIOD, segment_interval_ms: int | None = None,
                   **extra: Any) -> SessionStore:
        store = open_session_store(kit, store_type, backend, retention_ms, segment_interval_ms, **extra)
        store.context(1)
        return store

    return open_store


def windowed(store_type: str, *sessions: tuple[str, int, int, int]) -> list[SessionEntry]:
    """Expected entries ``(key, start, end, value)`` from ``(text key, start, end, long)``."""
    return [(h(k), s, e, agg(store_type, v)) for k, s, e, v in sessions]


def put_all(store: SessionStore, store_type: str, *sessions: tuple[str, int, int, int]) -> None:
    for key, start, end, value in sessions:
        store.put(h(key), start, end, agg(store_type, value))


# --- findSessions ----------------------------------------------------------------------------------------------


@rules("SS-2", "SS-5", "SS-6", "SS-7")
@BACKEND_AND_TYPE
def test_put_and_find_sessions_in_range(opened: Any, store_type: str, backend: str) -> None:
    """AbstractSessionBytesStoreTest.shouldPutAndFindSessionsInRange / shouldPutAndBackwardFindSessionsInRange."""
    store = opened()
    sessions = [("a", 10, 10, 1), ("a", 500, 1000, 2), ("a", 1500, 2000, 1), ("a", 2500, 3000, 2)]
    put_all(store, store_type, *sessions)
    expected = windowed(store_type, *sessions[:2])
    assert store.find_sessions(h("a"), 0, 1000) == expected
    assert store.find_sessions(h("a"), 0, 1000, backward=True) == expected[::-1]
    assert store.find_sessions(h("a"), 400, 600) == windowed(store_type, sessions[1])
    assert store.find_sessions(h("a"), 400, 600, backward=True) == windowed(store_type, sessions[1])


@rules("SS-8", "SS-6", "SS-7")
@BACKEND_AND_TYPE
def test_fetch_all_sessions_with_same_record_key(opened: Any, store_type: str, backend: str) -> None:
    """AbstractSessionBytesStoreTest.shouldFetchAllSessionsWithSameRecordKey / shouldBackwardFetchAllSessionsWithSameRecordKey."""
    store = opened()
    sessions = [("a", 0, 0, 1), ("a", 10, 10, 2), ("a", 100, 100, 3), ("a", 1000, 1000, 4)]
    put_all(store, store_type, *sessions, ("aa", 0, 0, 5))
    assert store.fetch(h("a")) == windowed(store_type, *sessions)
    assert store.fetch(h("a"), backward=True) == windowed(store_type, *sessions)[::-1]


@rules("SS-8", "SS-9", "SS-5")
@BACKEND_AND_TYPE
def test_fetch_all_sessions_within_key_range(opened: Any, store_type: str, backend: str) -> None:
    """AbstractSessionBytesStoreTest.shouldFetchAllSessionsWithinKeyRange / shouldBackwardFetchAllSessionsWithinKeyRange:
    a key range, and each bound null (unbounded)."""
    store = opened()
    inside = [("aa", 10, 10, 2), ("aaa", 100, 100, 3), ("aaaa", 100, 100, 6), ("b", 1000, 1000, 4), ("bb", 1500, 2000, 5)]
    first, last = ("a", 0, 0, 1), ("bbb", 2500, 3000, 6)
    put_all(store, store_type, *inside, first, last)
    cases: list[tuple[str | None, str | None, list[tuple[str, int, int, int]]]] = [
        ("aa", "bb", inside), (None, "bb", [first, *inside]), ("aa", None, [*inside, last]),
        (None, None, [first, *inside, last]),
    ]
    for key_from, key_to, sessions in cases:
        lower, upper = (None if k is None else h(k) for k in (key_from, key_to))
        expected = windowed(store_type, *sessions)
        assert store.fetch_range(lower, upper) == expected, (key_from, key_to)
        assert store.fetch_range(lower, upper, backward=True) == expected[::-1], (key_from, key_to)
    expected = windowed(store_type, *inside)
    assert store.find_range(h("aa"), h("bb"), 0, INT64_MAX) == expected
    assert store.find_range(h("aa"), h("bb"), 0, INT64_MAX, backward=True) == expected[::-1]


@rules("SS-16")
@BACKEND_AND_TYPE
def test_fetch_exact_session(opened: Any, store_type: str, backend: str) -> None:
    """AbstractSessionBytesStoreTest.shouldFetchExactSession and shouldReturnNullOnSessionNotFound."""
    store = opened()
    assert store.fetch_session(h("any key"), 0, 5) is None
    put_all(store, store_type, ("a", 0, 4, 1), ("aa", 0, 3, 2), ("aa", 0, 4, 3), ("aa", 1, 4, 4), ("aaa", 0, 4, 5))
    assert store.fetch_session(h("aa"), 0, 4) == agg(store_type, 3)
    assert store.fetch_session(h("aa"), 0, 5) is None  # same key and start, another end


@rules("SS-5")
@BACKEND_AND_TYPE
def test_find_values_within_merging_session_window_range(opened: Any, store_type: str, backend: str) -> None:
    """AbstractSessionBytesStoreTest.shouldFindValuesWithinMergingSessionWindowRange (and the backward one): a
    negative earliest end is allowed."""
    store = opened()
    sessions = [("a", 0, 0, 1), ("a", 1000, 1000, 2)]
    put_all(store, store_type, *sessions)
    assert store.find_sessions(h("a"), -1, 1000) == windowed(store_type, *sessions)
    assert store.find_sessions(h("a"), -1, 1000, backward=True) == windowed(store_type, *sessions)[::-1]


@rules("SS-5")
@BACKEND_AND_TYPE
def test_find_sessions_to_merge(opened: Any, store_type: str, backend: str) -> None:
    """AbstractSessionBytesStoreTest.shouldFindSessionsToMerge / shouldBackwardFindSessionsToMerge: the overlap
    rule's bounds are inclusive on both sides (end 200 >= 150, start 201 <= 300)."""
    store = opened()
    sessions = [("a", 0, 100, 1), ("a", 101, 200, 2), ("a", 201, 300, 3), ("a", 301, 400, 4), ("a", 401, 500, 5)]
    put_all(store, store_type, *sessions)
    assert store.find_sessions(h("a"), 150, 300) == windowed(store_type, sessions[1], sessions[2])
    assert store.find_sessions(h("a"), 150, 300, backward=True) == windowed(store_type, sessions[2], sessions[1])
    # The boundaries themselves: a session ending exactly at earliest end, one starting exactly at latest start.
    assert store.find_sessions(h("a"), 200, 201) == windowed(store_type, sessions[1], sessions[2])


@rules("SS-5", "SS-9")
@BACKEND_AND_TYPE
def test_fetch_exact_keys(opened: Any, store_type: str, backend: str) -> None:
    """AbstractSessionBytesStoreTest.shouldFetchExactKeys / shouldBackwardFetchExactKeys (retention 0x7a00000000000000)."""
    retention = 0x7A00000000000000
    store = opened(retention)
    put_all(store, store_type, ("a", 0, 0, 1), ("aa", 0, 10, 2), ("a", 10, 20, 3), ("aa", 10, 20, 4),
            ("a", retention - 2, retention - 1, 5))
    for backward in (False, True):
        def values(entries: list[SessionEntry]) -> set[str]:
            return {v for *_, v in entries}

        assert values(store.find_sessions(h("a"), 0, INT64_MAX, backward)) == {agg(store_type, v) for v in (1, 3, 5)}
        assert values(store.find_sessions(h("aa"), 0, INT64_MAX, backward)) == {agg(store_type, v) for v in (2, 4)}
        everything = {agg(store_type, v) for v in (1, 2, 3, 4, 5)}
        for lower, upper in (("a", "aa"), (None, "aa"), ("a", None), (None, None)):
            bounds = [None if k is None else h(k) for k in (lower, upper)]
            assert values(store.find_range(bounds[0], bounds[1], 0, INT64_MAX, backward)) == everything
        assert values(store.find_range(h("a"), h("aa"), 10, 0, backward)) == {agg(store_type, 2)}


@rules("SS-6", "SS-7")
@BACKEND_AND_TYPE
def test_fetch_and_iterate_over_exact_binary_keys(opened: Any, store_type: str, backend: str) -> None:
    """AbstractSessionBytesStoreTest.shouldFetchAndIterateOverExactBinaryKeys (and the backward one): keys that are
    prefixes of each other (00, 0000, 000000) are told apart. Kafka compares sets; the order here is the spec's:
    one key and one end, so RocksDB answers by start ascending, the in-memory iterator by start descending."""
    store = opened()
    keys = ["00", "0000", "000000"]
    for i in range(9):
        store.put(keys[i % 3], i + 1, 100, agg(store_type, i + 1))
    for n, key in enumerate(keys):
        expected = [(key, s, 100, agg(store_type, s)) for s in (n + 1, n + 4, n + 7)]
        if backend == MEMORY:
            expected.reverse()
        assert store.find_sessions(key, 0, INT64_MAX) == expected
        assert store.find_sessions(key, 0, INT64_MAX, backward=True) == expected[::-1]


@rules("SS-6", "SS-7", "SS-8")
@BACKEND_AND_TYPE
def test_exact_keys_skipping_longer_and_shorter_keys(opened: Any, store_type: str, backend: str) -> None:
    """SessionKeySchemaTest.shouldFetchExactKeysSkippingLongerKeys / shouldFetchExactKeySkippingShorterKeys /
    shouldFetchAllKeysUsingNullKeys, as store reads: the same six sessions through ``fetch``."""
    store = opened()
    sessions = [("0000", 0, 0, 1), ("00", 0, 0, 2), ("000000", 0, 0, 3), ("00", 10, 20, 4), ("0000", 10, 20, 5),
                ("000000", 10, 20, 6)]
    for key, start, end, value in sessions:
        store.put(key, start, end, agg(store_type, value))

    def values(entries: list[SessionEntry]) -> list[int]:
        return [int(v[-16:], 16) for *_, v in entries]

    assert values(store.fetch("00")) == [2, 4]
    assert values(store.fetch("0000")) == [1, 5]
    # All six: RocksDB in store-key byte order within the one segment (a shorter key of zeros sorts first at
    # end 0, last at end 20), in memory by end, then key, then start.
    everything = values(store.fetch_range(None, None))
    if backend == ROCKSDB:
        assert everything == [2, 1, 3, 6, 5, 4]
    else:
        assert everything == [2, 1, 3, 4, 5, 6]


@rules("SS-5", "SS-9")
@BACKEND_AND_TYPE
def test_single_key_find_sessions_equals_equal_key_range(opened: Any, store_type: str, backend: str) -> None:
    """AbstractSessionBytesStoreTest.shouldReturnSameResultsForSingleKeyFindSessionsAndEqualKeyRangeFindSessions."""
    store = opened()
    put_all(store, store_type, ("a", 0, 1, 0), ("aa", 2, 3, 1), ("aa", 4, 5, 2), ("aaa", 6, 7, 3))
    single = store.find_sessions(h("aa"), 0, 10)
    assert single == windowed(store_type, ("aa", 2, 3, 1), ("aa", 4, 5, 2))
    assert store.find_range(h("aa"), h("aa"), 0, 10) == single


@rules("SS-9")
@BACKEND_AND_TYPE
def test_inverted_key_range_is_empty(opened: Any, store_type: str, backend: str) -> None:
    """AbstractSessionBytesStoreTest.shouldNotThrowInvalidRangeExceptionWithNegativeFromKey: findSessions with from >
    to answers no sessions (Kafka logs a warning), in both directions. ``fetch(from, to)`` does the same on RocksDB
    (it is findSessions(from, to, 0, MAX)); the in-memory ``fetch`` has no such check and its ``subMap`` throws."""
    store = opened()
    key_from, key_to = "ffffffff", "00000001"  # Serdes.Integer() of -1 and 1
    store.put(key_to, 0, 5, agg(store_type, 1))
    assert store.find_range(key_from, key_to, 0, 10) == []
    assert store.find_range(key_from, key_to, 0, 10, backward=True) == []
    fetched = store.call("session_store.fetch", key_from=key_from, key_to=key_to)
    if backend == ROCKSDB:
        assert fetched == {"entries": []}
    else:
        assert is_refusal(fetched)
    assert store.fetch_range(None, None) == [(key_to, 0, 5, agg(store_type, 1))]


# --- remove ------------------------------------------------------------------------------------------------------


@rules("SS-4")
@BACKEND_AND_TYPE
def test_remove_and_remove_on_null_aggregate(opened: Any, store_type: str, backend: str) -> None:
    """AbstractSessionBytesStoreTest.shouldRemove / shouldRemoveOnNullAggValue /
    shouldNotThrowExceptionRemovingNonexistentKey."""
    store = opened()
    for remove_by_null_put in (False, True):
        put_all(store, store_type, ("a", 0, 1000, 1), ("a", 1500, 2500, 2))
        if remove_by_null_put:
            store.put(h("a"), 0, 1000, None)
        else:
            store.remove(h("a"), 0, 1000)
        assert store.find_sessions(h("a"), 0, 1000) == []
        assert store.find_sessions(h("a"), 1500, 2500) == windowed(store_type, ("a", 1500, 2500, 2))
        assert store.fetch_session(h("a"), 0, 1000) is None
    store.remove(h("never"), 0, 1)


@rules("SS-2", "SS-4")
@BACKEND_AND_TYPE
def test_null_keys_refused(opened: Any, store_type: str, backend: str) -> None:
    """AbstractSessionBytesStoreTest.shouldThrowNullPointerExceptionOnFindSessionsNullKey / OnFetchNullKey /
    OnRemoveNullKey / OnPutNullKey: each refused, and the refused put writes nothing."""
    store = opened()
    inner = store.store
    assert is_refusal(inner.call("session_store.find_sessions", key_from=None, key_to=None, earliest_end=1, latest_start=2))
    assert is_refusal(inner.call("session_store.fetch", key_from=None, key_to=None))
    assert is_refusal(inner.call("session_store.remove", key=None, start=0, end=1))
    assert is_refusal(inner.call("session_store.put", key=None, start=0, end=1, value=agg(store_type, 1)))
    assert is_refusal(inner.call("session_store.fetch_session", key=None, start=0, end=1))
    assert store.fetch_range(None, None) == []
    assert store.changelog() == []


@rules("SS-3")
@BACKEND_AND_TYPE
def test_session_window_must_be_valid(opened: Any, store_type: str, backend: str) -> None:
    """SessionWindow's constructor (used by every test above): start after end, or a negative start, is refused;
    start == end is a valid session."""
    store = opened()
    assert is_refusal(store.call("session_store.put", key=h("a"), start=5, end=4, value=agg(store_type, 1)))
    assert is_refusal(store.call("session_store.put", key=h("a"), start=-1, end=4, value=agg(store_type, 1)))
    store.put(h("a"), 4, 4, agg(store_type, 1))
    assert store.fetch(h("a")) == windowed(store_type, ("a", 4, 4, 1))
    assert len(store.changelog()) == 1


# --- retention -----------------------------------------------------------------------------------------------------


@rules("SS-13", "SS-14", "SS-17")
@BACKEND_AND_TYPE
def test_remove_expired(opened: Any, store_type: str, backend: str) -> None:
    """AbstractSessionBytesStoreTest.shouldRemoveExpired: the in-memory store expires single sessions, RocksDB whole
    segments, and reads of both hide sessions ending at or before observed stream time - retention."""
    store = opened()
    store.put(h("a"), 0, 0, agg(store_type, 1))
    if backend == MEMORY:
        put_all(store, store_type, ("aa", 0, 10, 2), ("a", 10, 20, 3), ("aa", 10, RETENTION_PERIOD, 4))
        assert {v for *_, v in store.find_range(h("a"), h("b"), 0, INT64_MAX)} == {agg(store_type, v) for v in (2, 3, 4)}
    else:
        put_all(store, store_type, ("aa", 0, SEGMENT_INTERVAL, 2), ("a", 10, SEGMENT_INTERVAL, 3),
                ("aa", 10, 2 * SEGMENT_INTERVAL, 4))
        # 2 and 3 end before observed stream time - retention + 1: hidden although their segment is alive.
        assert store.find_range(h("a"), h("b"), 0, INT64_MAX) == windowed(store_type, ("aa", 10, 2 * SEGMENT_INTERVAL, 4))


@rules("SS-14", "SS-17", "SS-28")
@BACKEND_AND_TYPE
def test_expired_records_are_dropped_but_logged(opened: Any, store_type: str, backend: str) -> None:
    """AbstractSessionBytesStoreTest.shouldMeasureExpiredRecords: a put of an expired session is skipped (Kafka counts
    it as dropped) while on-time puts of the same start are stored; the change-logging layer still logs it."""
    store = opened()
    late_start, late_end = 0, 0
    put_all(store, store_type, ("initial record", 0, 2 * SEGMENT_INTERVAL, 0))
    store.put(h("late record"), late_start, late_end, agg(store_type, 0))
    put_all(store, store_type, ("another on-time record", 0, 2 * SEGMENT_INTERVAL, 0))
    found = store.fetch_range(None, None)
    assert [k for k, *_ in found] == [h("another on-time record"), h("initial record")]
    assert len(store.changelog()) == 3


@rules("SS-13", "SS-16")
@BACKEND_AND_TYPE
def test_not_fetch_expired_sessions(opened: Any, store_type: str, backend: str) -> None:
    """AbstractSessionBytesStoreTest.shouldNotFetchExpiredSessions (with a fixed ``systemTime``)."""
    now, r = 1_700_000_000_000, RETENTION_PERIOD
    store = opened()
    put_all(store, store_type, ("p", now - 3 * r, now - 2 * r, 1), ("q", now - 2 * r, now - r, 4),
            ("r", now - r, now - r // 2, 3), ("p", now - r, now - r // 2, 2))

    def values(entries: list[SessionEntry]) -> set[int]:
        return {int(v[-16:], 16) for *_, v in entries}

    assert values(store.find_sessions(h("p"), now - 2 * r, now - r)) == {2}
    assert store.find_sessions(h("p"), now - 5 * r, now - 4 * r, backward=True) == []
    assert store.find_range(h("p"), h("r"), now - 5 * r, now - 4 * r) == []
    assert values(store.find_range(h("p"), h("r"), now - r, now - r // 2)) == {2, 3, 4}
    assert values(store.find_range(h("p"), h("r"), now - 2 * r, now - r)) == {2, 3, 4}
    assert values(store.find_range(h("p"), h("r"), now - 2 * r, now - r, backward=True)) == {2, 3, 4}
    assert store.fetch_session(h("p"), now - 3 * r, now - 2 * r) is None


# --- changelog and restore --------------------------------------------------------------------------------------------


@rules("SS-26", "SS-27")
@BACKEND_AND_TYPE
def test_logs_puts_and_removes(opened: Any, store_type: str, backend: str) -> None:
    """ChangeLoggingSessionBytesStoreTest.shouldLogPuts / shouldLogRemoves: key ``[key][end][start]``, the raw
    aggregate, the record context's timestamp; a remove logs a tombstone, each time."""
    store = opened()
    store.context(42)
    store.put(h("k"), 1, 2, agg(store_type, 7))
    store.remove(h("k"), 1, 2)
    store.remove(h("k"), 1, 2)
    key = h("k") + i64(2) + i64(1)
    assert store.changelog() == [
        {"key": key, "value": i64(7), "timestamp": 42, "headers": []},
        {"key": key, "value": None, "timestamp": 42, "headers": []},
        {"key": key, "value": None, "timestamp": 42, "headers": []},
    ]


@rules("SS-24", "SS-25", "RST-4", "RST-6")
@BACKEND_AND_TYPE
def test_restore(opened: Any, store_type: str, backend: str) -> None:
    """AbstractSessionBytesStoreTest.shouldRestore: the changelog of four puts, restored into a fresh store,
    reads back the same sessions; a restore logs nothing."""
    store = opened()
    sessions = [("a", 0, 0, 1), ("a", 10, 10, 2), ("a", 100, 100, 3), ("a", 1000, 1000, 4)]
    put_all(store, store_type, *sessions)
    assert store.fetch(h("a")) == windowed(store_type, *sessions)
    changelog = store.changelog()
    store.close()
    fresh = opened(name="restored")
    out = fresh.store.restore(changelog, batch_size=2)
    assert out["restored"] == 4
    assert fresh.fetch(h("a")) == windowed(store_type, *sessions)
    assert fresh.changelog() == []


@rules("SS-34", "SS-26")
@pytest.mark.parametrize("backend", [ROCKSDB, MEMORY])
@pytest.mark.parametrize("store_type", [SESSION_WITH_HEADERS])
def test_restore_with_headers_round_trip(opened: Any, store_type: str, backend: str) -> None:
    """AbstractSessionBytesStoreTest.shouldRestore for the header-aware store (KIP-1271 RecordConverters): the
    headers travel as record headers and come back into the stored value; the round trip gives the same bytes."""
    store = opened()
    with_headers = header_value([("a", b"x"), ("b", None)], i64(7))
    store.put(h("a"), 0, 5, with_headers)
    store.put(h("b"), 1, 7, "00" + i64(8))
    changelog = store.changelog()
    assert changelog[0]["headers"] == [["a", "78"], ["b", None]] and changelog[0]["value"] == i64(7)
    fresh = opened(name="restored")
    fresh.store.restore(changelog, batch_size=1)
    assert fresh.fetch_range(None, None) == [(h("a"), 0, 5, with_headers), (h("b"), 1, 7, "00" + i64(8))]


@rules("SS-24", "SS-12")
def test_a_session_restore_ending_in_a_later_tombstone_advances_stream_time(kit: Kit) -> None:
    """Place: after a restore (issue 32 E, the hard places). A RocksDB restore batch advances stream time to its
    largest session end, a tombstone's too, before any record is written: two sessions ending at 10 and 20, then a
    tombstone ending at 20 000 with a retention of 1 000. The two sessions' segment is expired by then: neither is
    written, nor answered."""
    kit.require(SESSION, ROCKSDB)
    store = open_session_store(kit, SESSION, ROCKSDB, retention_ms=1_000, segment_interval_ms=500).store

    def session_key(key: str, start: int, end: int) -> str:
        return h(key) + i64(end) + i64(start)

    store.restore([record(session_key("a", 0, 10), i64(1), 1), record(session_key("b", 5, 20), i64(2), 1),
                   record(session_key("c", 0, 20_000), None, 1)], batch_size=10)
    found = [e for key in ("a", "b") for e in store.ok("session_store.find_sessions", key_from=h(key), key_to=None,
                                                       earliest_end=0, latest_start=30_000)["entries"]]
    assert found == [], f"sessions of an expired segment were restored: {found}"


@rules("SS-1", "SS-10", "SS-11", "SS-31")
@pytest.mark.parametrize("backend", [ROCKSDB])
@pytest.mark.parametrize("store_type", SESSION_TYPES)
def test_segments_named_by_start_time(opened: Any, store_type: str, backend: str) -> None:
    """RocksDBSessionStoreTest (via AbstractRocksDBSegmentedBytesStoreTest's segment checks): one database per
    segment named ``<store>.<segment id * interval>``, the segment chosen by the session's end; the default
    interval for retention 10 000 is 60 000."""
    store = opened()
    put_all(store, store_type, ("a", 0, 59_999, 1), ("a", 59_999, 60_000, 2))
    segments = store.segments()
    assert sorted(segments) == ["store.0", "store.60000"]
    home = "default" if store_type == "session" else "sessionKeyValueWithHeaders"
    assert segments["store.0"] == {home: {h("a") + i64(59_999) + i64(0): agg(store_type, 1)}}
    assert segments["store.60000"] == {home: {h("a") + i64(60_000) + i64(59_999): agg(store_type, 2)}}



@rules("SS-32", "SS-31")
@pytest.mark.parametrize("backend", [ROCKSDB])
@pytest.mark.parametrize("store_type", ["session"])
def test_upgrade_to_headers_reads_every_segment(kit: Kit, opened: Any, store_type: str, backend: str) -> None:
    """RocksDBMigratingSessionStoreWithHeadersTest (KIP-1271, PR #21571): a plain session store reopened as
    ``session_with_headers`` reads the plain aggregates of EVERY segment as ``[0x00][aggregate]`` (empty headers),
    lazily: the rows stay in ``default`` until written; a new write lands in ``sessionKeyValueWithHeaders``."""
    retention, interval = 1_000_000, 60_000  # nothing expires; three segments
    store = opened(retention, segment_interval_ms=interval)
    sessions = [("a", 0, 10, 1), ("a", 60_000, 60_000, 2), ("b", 60_001, 120_000, 3)]
    put_all(store, "session", *sessions)
    store.close()
    upgraded = open_session_store(kit, SESSION_WITH_HEADERS, backend, retention, interval)
    expected = windowed(SESSION_WITH_HEADERS, *sessions)
    assert upgraded.fetch_range(None, None) == expected
    assert upgraded.fetch_range(None, None, backward=True) == expected[::-1]
    segments = upgraded.segments()
    assert sorted(segments) == ["store.0", "store.120000", "store.60000"]
    assert all(set(cfs) == {"default"} for cfs in segments.values()), segments
    upgraded.put(h("b"), 60_001, 120_000, "00" + i64(4))
    after = upgraded.segments()["store.120000"]
    assert after == {"sessionKeyValueWithHeaders": {h("b") + i64(120_000) + i64(60_001): "00" + i64(4)}}


@rules("SS-36")
def test_a_session_store_opened_with_a_cache_is_refused_or_serves_what_it_was_given(kit: Kit) -> None:
    """SS-36: a session store MAY offer Kafka's record cache (``CachingSessionStore``) or refuse ``caching`` with a
    typed error (the reference); a cached store answers its writes, before and after a flush."""
    kit.require("session", ROCKSDB)
    out = kit.open_refused("session", ROCKSDB, caching=True, options={"retention_ms": RETENTION_PERIOD})
    if is_refusal(out):
        assert out["error"].get("type"), f"the refusal of caching is untyped: {out}"
        return
    sessions = SessionStore(Store(kit.implementation, out["handle"], out))
    sessions.store.context(1)
    sessions.put(h("k"), 0, 5, agg("session", 7))
    assert sessions.fetch(h("k")) == [(h("k"), 0, 5, agg("session", 7))]
    sessions.store.flush()
    assert sessions.fetch(h("k")) == [(h("k"), 0, 5, agg("session", 7))]


# --- moved from test_store_rules_family_places (issue 33): SS-15 ------------------------------------------------------

#: The key of the cases moved from ``test_store_rules_family_places`` (issue 33), as there: nine bytes.
K = h("kkkkkkkkk")
SESSION_OPTIONS = {"retention_ms": 1_000, "segment_interval_ms": 500}


def _session_key(key: str, start: int, end: int) -> str:
    """CL-7: the changelog key ``[key][end][start]``, end first."""
    return key + i64(end) + i64(start)


@rules("SS-15")
@pytest.mark.kstate_places("store:session", "reopen", "restore")
@pytest.mark.parametrize("store_type", ("session", "session_with_headers"))
def test_a_restore_batch_into_a_reopened_session_store_deletes_its_expired_segments(kit: Kit,
                                                                                     store_type: str) -> None:
    """Place: a RocksDB session store reopened, then restored into. The reopened store's stream time is -1, so the
    open deletes no segment; a restored session ending at 2000 makes every segment below
    ``segmentId(2000 - 1000)`` expire, deleted with its data (SS-15), and the restored session is answered."""
    kit.require(store_type, ROCKSDB)
    store = kit.open(store_type, ROCKSDB, options=SESSION_OPTIONS)
    stored = "aa" if store_type == "session" else "00aa"  # SS-30: no header bytes but their count
    store.ok("session_store.put", key=K, value=stored, start=10, end=30)  # segment 0
    store.commit(1)
    store.close()
    again = kit.open(store_type, ROCKSDB, options=SESSION_OPTIONS)
    assert again.ok("session_store.fetch_session", key=K, start=10, end=30)["value"] == stored
    segment = kit.state_dir / "app" / "0_0" / "store" / "store.0"
    assert segment.is_dir(), sorted(p.name for p in segment.parent.iterdir())
    again.restore([record(_session_key(h("z"), 1_990, 2_000), "cc", 2_000)])
    assert again.ok("session_store.fetch_session", key=K, start=10, end=30)["value"] is None
    restored = "cc" if store_type == "session" else "00cc"
    assert again.ok("session_store.fetch_session", key=h("z"), start=1_990, end=2_000)["value"] == restored
    assert not segment.exists()
