"""Contract tests: what Kafka's own window store suites assert, through the neutral operations only.

Mirrors ``AbstractWindowBytesStoreTest`` (run by Kafka on RocksDB and in memory), ``AbstractRocksDBWindowStoreTest``
(segments, rolling, restore), ``ChangeLoggingWindowBytesStoreTest`` / ``ChangeLoggingTimestampedWindowBytesStoreTest``
and the store side of ``WindowKeySchemaTest`` (shared/reference/kafka-formats.md §6 and §11). Each test names the
Kafka test it mirrors; the expected answers are worked out here from Kafka's assertions and the spec rules, never
read back from the reference. Keys are 4-byte big-endian ints (Kafka's ``Serdes.Integer``) unless a test says
otherwise; values are UTF-8 strings. A test needing a store type, backend or feature the implementation lacks is
skipped, saying so.
"""

from __future__ import annotations

from typing import Any

import pytest

from kstate.storage_files import store_digest
from kstate_conformance import rules
from kstate_conformance import store_types as types
from kstate_conformance.harness import BACKENDS, MEMORY, ROCKSDB, TOPIC, Kit, Store, h, i64, is_refusal, kit, record

__all__ = ["kit"]

WINDOW, TIMESTAMPED = types.WINDOW, types.TIMESTAMPED_WINDOW
# AbstractWindowBytesStoreTest's constants.
WINDOW_SIZE = 3
SEGMENT_INTERVAL = 60_000
RETENTION_PERIOD = 2 * SEGMENT_INTERVAL
DEFAULT_START = SEGMENT_INTERVAL - 4
INT64_MAX = (1 << 63) - 1


def ik(n: int) -> str:
    """An int key as ``Serdes.Integer`` writes it: 4 bytes big-endian, two's complement."""
    return (n & 0xFFFFFFFF).to_bytes(4, "big").hex()


def store_key(key: str, start: int, seqnum: int) -> str:
    """``[key][start int64][seqnum int32]`` (WIN-1), hex."""
    return key + i64(start) + seqnum.to_bytes(4, "big").hex()


class Win:
    """A window store of the implementation, with hex-level helpers for the ``window_store.*`` operations."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def put(self, key: str | None, value: str | None, start: int) -> None:
        self.store.ok("window_store.put", key=key, value=None if value is None else h(value), window_start=start)

    def put_hex(self, key: str, value: str | None, start: int) -> None:
        self.store.ok("window_store.put", key=key, value=value, window_start=start)

    def fetch(self, key: str, time: int) -> str | None:
        value: str | None = self.store.ok("window_store.fetch", key=key, time=time)["value"]
        return value

    def fetch_range(self, key: str, time_from: int, time_to: int, backward: bool = False) -> list[tuple[int, str]]:
        out = self.store.ok("window_store.fetch_range", key=key, from_ms=time_from, to_ms=time_to, backward=backward)
        return [(int(t), v) for t, v in out["entries"]]

    def values(self, key: str, time_from: int, time_to: int, backward: bool = False) -> list[str]:
        return [bytes.fromhex(v).decode() for _, v in self.fetch_range(key, time_from, time_to, backward)]

    def fetch_keys(self, key_from: str | None, key_to: str | None, time_from: int, time_to: int,
                   backward: bool = False) -> list[tuple[str, int, str]]:
        out = self.store.ok("window_store.fetch_keys", key_from=key_from, key_to=key_to, from_ms=time_from,
                            to_ms=time_to, backward=backward)
        return [(k, int(t), v) for k, t, v in out["entries"]]

    def fetch_all(self, time_from: int, time_to: int, backward: bool = False) -> list[tuple[str, int, str]]:
        out = self.store.ok("window_store.fetch_all", from_ms=time_from, to_ms=time_to, backward=backward)
        return [(k, int(t), v) for k, t, v in out["entries"]]

    def all(self, backward: bool = False) -> list[tuple[str, int, str]]:
        out = self.store.ok("window_store.all", backward=backward)
        return [(k, int(t), v) for k, t, v in out["entries"]]

    def segments(self) -> dict[str, dict[str, dict[str, str]]]:
        """``store.dump``: the segment databases by directory name, each family's rows (LAY-3)."""
        out = self.store.ok("store.dump")
        assert "segments" in out, f"a window store dumps by segment, got {sorted(out)}"
        return {name: {cf: dict(rows) for cf, rows in cfs.items()} for name, cfs in out["segments"].items()}

    def segment_names(self) -> set[str]:
        return set(self.segments())


def open_window(kit: Kit, backend: str, store_type: str = WINDOW, *, retention: int = RETENTION_PERIOD,
                window_size: int = WINDOW_SIZE, duplicates: bool = False, segment_interval: int | None = SEGMENT_INTERVAL,
                **extra: Any) -> Win:
    if not kit.implementation.supports("window_store.put"):
        pytest.skip("the implementation offers no window store operations")
    options: dict[str, Any] = {"retention_ms": retention, "window_size_ms": window_size, "retain_duplicates": duplicates}
    if segment_interval is not None:
        options["segment_interval_ms"] = segment_interval
    store = kit.open(store_type, backend, options=options, **extra)
    store.context(1)  # context.setTime(1L)
    return Win(store)


def e(key: int, value: str, start: int) -> tuple[str, int, str]:
    """An entry of a multi-key fetch: (key, window start, value)."""
    return ik(key), start, h(value)


def put_first_batch(win: Win, start: int = DEFAULT_START) -> None:
    """``AbstractWindowBytesStoreTest.putFirstBatch``."""
    for key, value, offset in [(0, "zero", 0), (1, "one", 1), (2, "two", 2), (3, "three", 2), (4, "four", 4),
                               (5, "five", 5)]:
        win.put(ik(key), value, start + offset)


FIRST_BATCH = [e(0, "zero", DEFAULT_START), e(1, "one", DEFAULT_START + 1), e(2, "two", DEFAULT_START + 2),
               e(3, "three", DEFAULT_START + 2), e(4, "four", DEFAULT_START + 4), e(5, "five", DEFAULT_START + 5)]
ZERO, ONE, TWO, THREE, FOUR, FIVE = FIRST_BATCH


# --- checks cheap enough to run first -------------------------------------------------------------------------------


@rules("WS-2")
@BACKENDS
def test_window_size_larger_than_retention_is_refused(kit: Kit, backend: str) -> None:
    """Mirrors ``StoresTest.shouldThrowIfWindowSizeIsLargerThanRetention`` on both suppliers: a window of 4 ms cannot
    be kept for 3 ms; a window as long as the retention can."""
    if not kit.implementation.supports("window_store.put"):
        pytest.skip("the implementation offers no window store operations")
    kit.require(WINDOW, backend)
    options = {"retention_ms": 3, "window_size_ms": 4, "retain_duplicates": False}
    assert "error" in kit.open_refused(WINDOW, backend, options=options)
    assert "error" not in kit.open_refused(WINDOW, backend, options={**options, "window_size_ms": 3})


@rules("WS-2", "WS-43")
@BACKENDS
def test_window_size_zero_answers_starts_and_refuses_windows(kit: Kit, backend: str) -> None:
    """A window of 0 ms opens (``Stores`` refuses only a negative size) and the single-key fetches answer it, but the
    reads that answer ``Windowed`` keys build ``TimeWindow(start, start)``, which Kafka refuses once an entry is
    answered; empty answers stay empty."""
    win = open_window(kit, backend, retention=10, window_size=0, segment_interval=100)
    assert win.all() == [] and win.fetch_all(0, 10) == []
    win.put(ik(1), "a", 5)
    assert win.fetch(ik(1), 5) == h("a")
    assert win.fetch_range(ik(1), 0, 10) == [(5, h("a"))]
    assert win.fetch_range(ik(1), 0, 10, backward=True) == [(5, h("a"))]
    assert win.fetch_all(6, 10) == [] and win.fetch_keys(ik(2), ik(3), 0, 10) == []
    for backward in (False, True):
        assert win.store.refused("window_store.all", backward=backward)
        assert win.store.refused("window_store.fetch_all", from_ms=0, to_ms=10, backward=backward)
        assert win.store.refused("window_store.fetch_keys", key_from=ik(0), key_to=ik(1), from_ms=0, to_ms=10,
                                 backward=backward)
    assert win.fetch(ik(1), 5) == h("a")


@rules("WS-21")
@BACKENDS
def test_timestamped_window_store_keeps_the_timestamp(kit: Kit, backend: str) -> None:
    """The bytes-level side of Kafka's ``TimestampedWindowStore`` (what ``MeteredTimestampedWindowStore`` reads back as
    ``ValueAndTimestamp``): the store holds and answers the ``[timestamp][value]`` it was given, in every segment."""
    kit.require(TIMESTAMPED, backend)
    win = open_window(kit, backend, TIMESTAMPED)
    stored = i64(42) + h("a")
    win.put_hex(ik(1), stored, 10)
    win.put_hex(ik(1), stored, SEGMENT_INTERVAL + 10)
    assert win.fetch(ik(1), 10) == stored
    assert win.fetch_range(ik(1), 0, 2 * SEGMENT_INTERVAL) == [(10, stored), (SEGMENT_INTERVAL + 10, stored)]


@pytest.mark.kstate_level("hardened")
@rules("WS-24")
@BACKENDS
def test_value_the_changelog_refuses_is_not_stored(kit: Kit, backend: str) -> None:
    """Where ``ChangeLoggingTimestampedWindowBytesStore.log`` would throw after the store was written (a value shorter
    than its 8-byte timestamp), the write is refused first: nothing stored, nothing logged."""
    kit.require(TIMESTAMPED, backend)
    win = open_window(kit, backend, TIMESTAMPED)
    assert win.store.refused("window_store.put", key=ik(1), value="0a0b0c", window_start=10)
    assert win.fetch(ik(1), 10) is None
    assert win.all() == []
    assert win.store.changelog() == []


@rules("WS-32")
def test_changelog_topic_of_a_window_store(kit: Kit) -> None:
    """``WindowStoreBuilder`` over a supplier keeping duplicates logs with ``cleanup.policy=delete``; otherwise (and
    for the timestamped builder) the windowed changelog is ``compact,delete``, retention + one day either way."""
    if not kit.implementation.supports("changelog.topic_config"):
        pytest.skip("the implementation offers no changelog.topic_config")

    def config(store_type: str, duplicates: bool) -> dict[str, str]:
        out: dict[str, str] = kit.implementation.call("changelog.topic_config", {
            "store_type": store_type, "retention_ms": 1000, "retain_duplicates": duplicates})["config"]
        return out

    day_later = str(1000 + 86_400_000)
    assert config(WINDOW, True) == {"cleanup.policy": "delete", "message.timestamp.type": "CreateTime",
                                    "retention.ms": day_later}
    assert config(WINDOW, False)["cleanup.policy"] == "compact,delete"
    assert config(TIMESTAMPED, True)["cleanup.policy"] == "compact,delete"


@rules("WS-25", "WS-26", "WS-41")
@BACKENDS
def test_restored_duplicates_and_the_next_put(kit: Kit, backend: str) -> None:
    """After restoring changelog seqnums 1 and 3 (2 was a skipped tombstone), a put with duplicates gets seqnum 1 on
    RocksDB (restore wrote below the store's counter) and replaces the restored row 1; in memory restore went
    through ``put``, which renumbered the records 1 and 2, so the put gets 3 and all three are kept."""
    source = open_window(kit, backend, duplicates=True, name="source")
    source.put(ik(1), "a", 5)
    source.put(ik(1), None, 5)
    source.put(ik(1), "b", 5)
    records = source.store.changelog()
    assert [r["key"] for r in records] == [store_key(ik(1), 5, s) for s in (1, 2, 3)]
    target = open_window(kit, backend, duplicates=True, name="target")
    target.store.restore(records)
    target.put(ik(1), "c", 5)
    assert target.values(ik(1), 0, 10) == (["c", "b"] if backend == ROCKSDB else ["a", "b", "c"])


@pytest.mark.kstate_level("hardened")
@rules("WS-28", "WS-30", "WS-31", "KV-67")
def test_commit_and_close_reach_every_segment(kit: Kit) -> None:
    """``AbstractSegments.commit`` and ``close`` go through every segment (KIP-1035): rows of two segments committed,
    then a crash, are all found again; so are rows of two segments written before a clean close."""
    kit.require(WINDOW, ROCKSDB, "offsets")
    win = open_window(kit, ROCKSDB)
    win.put(ik(1), "a", 5)
    win.put(ik(1), "b", SEGMENT_INTERVAL + 5)
    win.store.commit(7)
    win.store.crash()
    win = open_window(kit, ROCKSDB, ignore_invalid_state=True)  # a crash leaves status OPEN (OFF-6)
    assert win.all() == [e(1, "a", 5), e(1, "b", SEGMENT_INTERVAL + 5)]
    assert win.store.committed() == 7
    win.put(ik(2), "c", 6)
    win.put(ik(2), "d", SEGMENT_INTERVAL + 6)
    win.store.close()
    win = open_window(kit, ROCKSDB)
    assert win.all() == [e(1, "a", 5), e(2, "c", 6), e(1, "b", SEGMENT_INTERVAL + 5), e(2, "d", SEGMENT_INTERVAL + 6)]


@rules("WS-7", "WS-8")
def test_expired_put_creates_no_segment(kit: Kit) -> None:
    """Mirrors ``AbstractRocksDBSegmentedBytesStoreTest.shouldLogAndMeasureExpiredRecords`` with ``testRolling``'s
    directory check: a put into a segment below ``segmentId(T - R)`` is dropped, its segment never created."""
    kit.require(WINDOW, ROCKSDB, "dump")
    win = open_window(kit, ROCKSDB)
    win.put(ik(1), "on time", 2 * RETENTION_PERIOD)
    assert win.segment_names() == {"store.240000"}
    win.put(ik(1), "late", 0)
    assert win.segment_names() == {"store.240000"}
    assert win.fetch_all(0, INT64_MAX) == [e(1, "on time", 2 * RETENTION_PERIOD)]


# --- AbstractWindowBytesStoreTest ---------------------------------------------------------------------------------


@rules("WS-12", "WS-15", "WS-20", "WIN-15")
@BACKENDS
def test_get_all_and_backward_all(kit: Kit, backend: str) -> None:
    """Mirrors ``shouldGetAll`` and ``shouldGetBackwardAll``: the first batch crosses a segment boundary
    (59996..59999 in segment 0, 60000..60001 in segment 1); keys 2 and 3 share a window start."""
    win = open_window(kit, backend)
    put_first_batch(win)
    assert win.all() == FIRST_BATCH
    assert win.all(backward=True) == FIRST_BATCH[::-1]


@rules("WS-9", "WS-15")
@BACKENDS
def test_all_skips_deleted_records(kit: Kit, backend: str) -> None:
    """Mirrors ``shouldGetAllNonDeletedRecords``: a null put deletes the window."""
    win = open_window(kit, backend)
    for n, name in enumerate(["zero", "one", "two", "three", "four"]):
        win.put(ik(n), name, DEFAULT_START + n)
    win.put(ik(1), None, DEFAULT_START + 1)
    win.put(ik(3), None, DEFAULT_START + 3)
    assert win.all() == [e(0, "zero", DEFAULT_START), e(2, "two", DEFAULT_START + 2), e(4, "four", DEFAULT_START + 4)]


@rules("WS-15", "WS-18")
@BACKENDS
def test_all_is_timestamp_ordered_whatever_the_put_order(kit: Kit, backend: str) -> None:
    """Mirrors ``shouldGetAllReturnTimestampOrderedRecords``."""
    win = open_window(kit, backend)
    for n in (4, 0, 2, 3, 1):
        win.put(ik(n), str(n), DEFAULT_START + n)
    assert win.all() == [e(n, str(n), DEFAULT_START + n) for n in range(5)]


@rules("WS-12", "WS-14", "WS-18")
@BACKENDS
def test_fetch_all_in_time_range_both_directions(kit: Kit, backend: str) -> None:
    """Mirrors ``shouldFetchAllInTimeRange`` and ``shouldBackwardFetchAllInTimeRange``."""
    win = open_window(kit, backend)
    put_first_batch(win)
    cases = [(1, 4, [ONE, TWO, THREE, FOUR]), (0, 3, [ZERO, ONE, TWO, THREE]), (1, 5, [ONE, TWO, THREE, FOUR, FIVE])]
    for low, high, expected in cases:
        assert win.fetch_all(DEFAULT_START + low, DEFAULT_START + high) == expected
        assert win.fetch_all(DEFAULT_START + low, DEFAULT_START + high, backward=True) == expected[::-1]


@rules("WS-12", "WS-13", "WS-18")
@BACKENDS
def test_key_range_fetch_both_directions(kit: Kit, backend: str) -> None:
    """Mirrors ``testFetchRange`` and ``testBackwardFetchRange`` (a selection of their assertions)."""
    win = open_window(kit, backend)
    put_first_batch(win)
    t = DEFAULT_START
    cases = [
        (0, 1, t - WINDOW_SIZE, t + WINDOW_SIZE, [ZERO, ONE]),
        (1, 1, t - WINDOW_SIZE, t + WINDOW_SIZE, [ONE]),
        (1, 3, t - WINDOW_SIZE, t + WINDOW_SIZE, [ONE, TWO, THREE]),
        (0, 5, t - WINDOW_SIZE, t + WINDOW_SIZE, [ZERO, ONE, TWO, THREE]),
        (0, 5, t - WINDOW_SIZE, t + WINDOW_SIZE + 5, [ZERO, ONE, TWO, THREE, FOUR, FIVE]),
        (0, 5, t + 2, t + WINDOW_SIZE + 5, [TWO, THREE, FOUR, FIVE]),
        (4, 5, t + 2, t + WINDOW_SIZE, []),
        (0, 3, t + 3, t + WINDOW_SIZE + 5, []),
    ]
    for low_key, high_key, time_from, time_to, expected in cases:
        assert win.fetch_keys(ik(low_key), ik(high_key), time_from, time_to) == expected
        assert win.fetch_keys(ik(low_key), ik(high_key), time_from, time_to, backward=True) == expected[::-1]


@rules("WS-13", "WS-34")
@BACKENDS
def test_key_range_fetch_with_open_bounds(kit: Kit, backend: str) -> None:
    """Mirrors ``testFetchRange``'s null-bound cases (``fetch(null, key, ...)``, ``fetch(key, null, ...)``)."""
    win = open_window(kit, backend)
    put_first_batch(win)
    t = DEFAULT_START
    assert win.fetch_keys(None, ik(2), t - WINDOW_SIZE, t + WINDOW_SIZE + 2) == [ZERO, ONE, TWO]
    assert win.fetch_keys(ik(2), None, t - WINDOW_SIZE, t + WINDOW_SIZE + 5) == [TWO, THREE, FOUR, FIVE]
    assert win.fetch_keys(None, None, t - WINDOW_SIZE, t + WINDOW_SIZE + 5) == FIRST_BATCH
    assert win.fetch_keys(None, ik(2), t - WINDOW_SIZE, t + WINDOW_SIZE + 2, backward=True) == [TWO, ONE, ZERO]


@rules("WS-10", "WS-11", "WS-19")
@BACKENDS
def test_single_key_fetch_before_and_after(kit: Kit, backend: str) -> None:
    """Mirrors ``testPutAndFetchBefore`` / ``testPutAndFetchAfter`` and ``testRangeAndSinglePointFetch``: a
    window is found from every time range that contains its start, and by its exact start."""
    win = open_window(kit, backend)
    put_first_batch(win)
    t = DEFAULT_START
    assert win.values(ik(0), t - WINDOW_SIZE, t) == ["zero"]
    assert win.values(ik(0), t + 1 - WINDOW_SIZE, t + 1) == ["zero"]
    assert win.values(ik(0), t + 1, t + 1 + WINDOW_SIZE) == []
    assert win.values(ik(2), t + 2, t + 2 + WINDOW_SIZE) == ["two"]
    assert win.values(ik(4), t + 4 - WINDOW_SIZE, t + 4 + WINDOW_SIZE) == ["four"]
    assert win.values(ik(6), t, t + 10) == []
    assert win.fetch(ik(0), t) == h("zero")
    assert win.fetch(ik(0), t + 1) is None
    assert win.fetch(ik(3), t + 2) == h("three")


@rules("WS-4", "WS-11", "WS-22", "WIN-1")
@BACKENDS
def test_same_key_and_timestamp_with_duplicates(kit: Kit, backend: str) -> None:
    """Mirrors ``testPutSameKeyTimestamp``: four puts of one window are four rows, in put order, and the
    changelog has four records whose keys carry seqnums 1..4 (ChangeLoggingWindowBytesStoreTest
    ``shouldRetainDuplicatesWhenSet``)."""
    win = open_window(kit, backend, duplicates=True)
    t = DEFAULT_START
    for value in ("zero", "zero", "zero+", "zero++"):
        win.put(ik(0), value, t)
    for shift in (0, 1, 2, 3):
        assert win.values(ik(0), t + shift - WINDOW_SIZE, t + shift + WINDOW_SIZE) == ["zero", "zero", "zero+", "zero++"]
    assert win.values(ik(0), t + 4 - WINDOW_SIZE, t + 4 + WINDOW_SIZE) == []
    logged = win.store.changelog()
    assert [(r["key"], r["value"], r["timestamp"]) for r in logged] == [
        (store_key(ik(0), t, seq), h(value), 1) for seq, value in enumerate(("zero", "zero", "zero+", "zero++"), 1)]


@rules("WS-4", "WS-11", "WS-12", "WS-16")
@BACKENDS
def test_fetch_duplicates_in_order(kit: Kit, backend: str) -> None:
    """Mirrors ``testFetchDuplicates``."""
    win = open_window(kit, backend, duplicates=True)
    for start, values in ((0, ("one", "one-2")), (30, ("two", "two-2")), (60, ("three", "three-2"))):
        for value in values:
            win.put(ik(1), value, start)
    assert win.fetch_range(ik(1), 0, 30) == [(0, h("one")), (0, h("one-2")), (30, h("two")), (30, h("two-2"))]
    assert win.fetch_range(ik(1), 0, 30, backward=True) == [(30, h("two-2")), (30, h("two")), (0, h("one-2")), (0, h("one"))]


@rules("WS-2", "WS-11", "WS-13")
@BACKENDS
def test_exact_string_keys_are_not_confused_with_their_extensions(kit: Kit, backend: str) -> None:
    """Mirrors ``shouldFetchAndIterateOverExactKeys``: keys ``a`` and ``aa`` with a huge retention (its default
    segment interval puts the last window in the second segment)."""
    huge = 0x7A00000000000000
    win = open_window(kit, backend, retention=huge, window_size=huge, segment_interval=None)
    a, aa = h("a"), h("aa")
    for key, value, start in [(a, "0001", 0), (aa, "0002", 0), (a, "0003", 1), (aa, "0004", 1), (a, "0005", huge - 1)]:
        win.put(key, value, start)
    assert win.values(a, 0, INT64_MAX) == ["0001", "0003", "0005"]
    assert win.fetch_keys(a, a, 0, INT64_MAX) == [(a, 0, h("0001")), (a, 1, h("0003")), (a, huge - 1, h("0005"))]
    assert win.fetch_keys(aa, aa, 0, INT64_MAX) == [(aa, 0, h("0002")), (aa, 1, h("0004"))]


@rules("WS-11", "WS-16")
@BACKENDS
def test_exact_binary_keys_with_duplicates(kit: Kit, backend: str) -> None:
    """Mirrors ``shouldFetchAndIterateOverExactBinaryKeys``: keys 00, 0000, 000000 with retained duplicates."""
    win = open_window(kit, backend, duplicates=True)
    k1, k2, k3 = "00", "0000", "000000"
    for key, value, start in [(k1, "1", 0), (k2, "2", 0), (k3, "3", 0), (k1, "4", 1), (k2, "5", 1), (k3, "6", 59999),
                              (k1, "7", 59999), (k2, "8", 59999), (k3, "9", 59999)]:
        win.put(key, value, start)
    assert win.values(k1, 0, INT64_MAX) == ["1", "4", "7"]
    assert win.values(k2, 0, INT64_MAX) == ["2", "5", "8"]
    assert win.values(k3, 0, INT64_MAX) == ["3", "6", "9"]


@rules("WS-4", "WS-9")
@BACKENDS
def test_delete_and_update(kit: Kit, backend: str) -> None:
    """Mirrors ``testDeleteAndUpdate``: a second put replaces the window, a null put deletes it."""
    win = open_window(kit, backend)
    win.put(ik(1), "one", 0)
    win.put(ik(1), "one v2", 0)
    assert win.fetch_range(ik(1), 0, 0) == [(0, h("one v2"))]
    win.put(ik(1), None, 0)
    assert win.fetch_range(ik(1), 0, 0) == []


@rules("WS-10", "WS-35")
@BACKENDS
def test_missing_window_and_null_keys(kit: Kit, backend: str) -> None:
    """Mirrors ``shouldReturnNullOnWindowNotFound`` and the ``shouldThrowNullPointerException...`` tests: a
    null key is refused by put and fetch, and a refused put logs nothing."""
    win = open_window(kit, backend)
    assert win.fetch(ik(1), 0) is None
    assert win.store.refused("window_store.put", key=None, value=h("anyValue"), window_start=0)
    assert win.store.refused("window_store.fetch_range", key=None, from_ms=1, to_ms=2)
    assert win.store.changelog() == []


@rules("WS-22")
@BACKENDS
def test_a_null_key_put_into_an_expired_window_logs_no_record_and_the_seqnums_advance(kit: Kit, backend: str) -> None:
    """WS-22: the refused null-key put logs no record, and each logged put's key carries the logging layer's own
    seqnum: 1, then a larger one (2 where the refused put counted none, the hardened WS-24 of the next test; 3 where
    it used one up, as Kafka's in-memory store does)."""
    win = open_window(kit, backend, retention=10, window_size=1, duplicates=True, segment_interval=100)
    win.put(ik(1), "a", 100)
    assert win.store.refused("window_store.put", key=None, value=h("x"), window_start=0)
    win.put(ik(1), "b", 100)
    keys = [r["key"] for r in win.store.changelog()]
    assert len(keys) == 2 and keys[0] == store_key(ik(1), 100, 1), keys
    assert keys[1] in (store_key(ik(1), 100, 2), store_key(ik(1), 100, 3)), keys
    assert win.all() == [e(1, "a", 100), e(1, "b", 100)]


@pytest.mark.kstate_level("hardened")
@rules("WS-24", "WS-35")
@BACKENDS
def test_a_null_key_put_into_an_expired_window_logs_nothing(kit: Kit, backend: str) -> None:
    """A null-key put is refused and changes nothing, also where the store would drop the put as expired: the
    change-logging layer's seqnum does not move, so the next duplicate is logged with seqnum 2."""
    win = open_window(kit, backend, retention=10, window_size=1, duplicates=True, segment_interval=100)
    win.put(ik(1), "a", 100)
    assert win.store.refused("window_store.put", key=None, value=h("x"), window_start=0)
    win.put(ik(1), "b", 100)
    assert [r["key"] for r in win.store.changelog()] == [store_key(ik(1), 100, 1), store_key(ik(1), 100, 2)]
    assert win.all() == [e(1, "a", 100), e(1, "b", 100)]


@rules("WS-11", "WS-13")
@BACKENDS
def test_single_key_fetch_equals_equal_key_range_fetch(kit: Kit, backend: str) -> None:
    """Mirrors ``shouldReturnSameResultsForSingleKeyFetchAndEqualKeyRangeFetch``."""
    win = open_window(kit, backend)
    for key, value, start in [(1, "one", 0), (2, "two", 1), (2, "two", 2), (3, "three", 3)]:
        win.put(ik(key), value, start)
    single = win.fetch_range(ik(2), 0, 5)
    assert single == [(1, h("two")), (2, h("two"))]
    assert [(t, v) for _, t, v in win.fetch_keys(ik(2), ik(2), 0, 5)] == single


@rules("WS-13")
@BACKENDS
def test_inverted_key_range_is_empty(kit: Kit, backend: str) -> None:
    """Mirrors ``shouldNotThrowInvalidRangeExceptionWithNegativeFromKey``: -1 serializes as ``ffffffff``, above
    1, so the range is inverted: empty, not refused."""
    win = open_window(kit, backend)
    win.put(ik(0), "zero", 1)
    assert win.fetch_keys(ik(-1), ik(1), 0, 10) == []
    assert win.fetch_keys(ik(-1), ik(1), 0, 10, backward=True) == []


@rules("WS-7", "WS-17", "WS-22", "WS-38")
@BACKENDS
def test_expired_record_is_dropped_but_logged(kit: Kit, backend: str) -> None:
    """Mirrors ``shouldMeasureExpiredRecords``: after stream time 2 x retention a put at 0 is dropped (Kafka
    counts it in ``dropped-records``); the change-logging layer above still logs it."""
    win = open_window(kit, backend)
    win.put(ik(1), "initial record", 2 * RETENTION_PERIOD)
    win.put(ik(1), "late record", 0)
    win.put(ik(1), "another on-time record", RETENTION_PERIOD + 1)
    assert win.all() == [e(1, "another on-time record", RETENTION_PERIOD + 1), e(1, "initial record", 2 * RETENTION_PERIOD)]
    assert [r["key"] for r in win.store.changelog()] == [
        store_key(ik(1), 2 * RETENTION_PERIOD, 0), store_key(ik(1), 0, 0), store_key(ik(1), RETENTION_PERIOD + 1, 0)]


@rules("WS-11", "WS-13", "WS-14")
@BACKENDS
def test_expired_fetch_range_is_empty(kit: Kit, backend: str) -> None:
    """Mirrors ``shouldNotThrowExceptionWhenFetchRangeIsExpired``."""
    win = open_window(kit, backend)
    win.put(ik(1), "one", 0)
    win.put(ik(1), "two", 4 * RETENTION_PERIOD)
    assert win.fetch_range(ik(1), 0, 10) == []
    assert win.fetch_keys(ik(1), ik(1), 0, 10) == []
    assert win.fetch_all(0, 10) == []


# --- AbstractRocksDBWindowStoreTest -------------------------------------------------------------------------------


def segment(start: int) -> str:
    return f"store.{start}"


@rules("WS-5", "WS-7", "WS-8", "WS-11", "WIN-15", "WIN-16")
def test_rolling_segments(kit: Kit) -> None:
    """Mirrors ``testRolling``: one database per segment, named by its start time; a put advancing stream time
    past the retention deletes the expired segments; fetches clamp ``from`` to ``observed - retention + 1``."""
    win = open_window(kit, ROCKSDB)
    kit.require(WINDOW, ROCKSDB, "dump")
    start, inc = SEGMENT_INTERVAL * 2, SEGMENT_INTERVAL // 2
    win.put(ik(0), "zero", start)
    assert win.segment_names() == {segment(120_000)}
    win.put(ik(1), "one", start + inc)
    assert win.segment_names() == {segment(120_000)}
    win.put(ik(2), "two", start + inc * 2)
    assert win.segment_names() == {segment(120_000), segment(180_000)}
    win.put(ik(4), "four", start + inc * 4)
    assert win.segment_names() == {segment(120_000), segment(180_000), segment(240_000)}
    win.put(ik(5), "five", start + inc * 5)
    assert win.segment_names() == {segment(120_000), segment(180_000), segment(240_000)}
    # observed 270000: actualFrom = 150001, so "one" at 150000 is no longer visible although its segment lives.
    assert win.values(ik(0), start - WINDOW_SIZE, start + WINDOW_SIZE) == []
    assert win.values(ik(1), start + inc - WINDOW_SIZE, start + inc + WINDOW_SIZE) == []
    assert win.values(ik(2), start + inc * 2 - WINDOW_SIZE, start + inc * 2 + WINDOW_SIZE) == ["two"]
    assert win.values(ik(5), start + inc * 5 - WINDOW_SIZE, start + inc * 5 + WINDOW_SIZE) == ["five"]
    win.put(ik(6), "six", start + inc * 6)
    assert win.segment_names() == {segment(180_000), segment(240_000), segment(300_000)}


@rules("WS-3", "WS-5", "WS-27")
def test_segment_rows_are_store_keys_in_their_segment(kit: Kit) -> None:
    """Mirrors ``testSegmentMaintenance`` and ``WindowKeySchemaTest.testStoreKeyBinary``: each row is
    ``[key][start][seqnum]`` in the segment of its start, in the ``default`` family of a plain window store."""
    win = open_window(kit, ROCKSDB, duplicates=True, segment_interval=10, retention=100)
    kit.require(WINDOW, ROCKSDB, "dump")
    win.put(ik(7), "a", 9)
    win.put(ik(7), "b", 10)
    segments = win.segments()
    assert set(segments) == {"store.0", "store.10"}
    assert segments["store.0"]["default"] == {store_key(ik(7), 9, 1): h("a")}
    assert segments["store.10"]["default"] == {store_key(ik(7), 10, 2): h("b")}


@rules("WS-25", "WS-26", "RST-1")
@BACKENDS
def test_restore_rebuilds_what_was_logged(kit: Kit, backend: str) -> None:
    """Mirrors ``testRestore`` (and ``testInitialLoading``): restoring the changelog into an empty store gives back
    every window the restored stream time (the batch's largest start) has not expired."""
    win = open_window(kit, backend, name="source")
    for n in range(6):
        win.put(ik(n), str(n), n * SEGMENT_INTERVAL // 2)
    records = win.store.changelog()
    target = open_window(kit, backend, name="target")
    out = target.store.restore(records, batch_size=100)
    assert out["restored"] == len(records)
    # Stream time 150000 (the batch maximum): actualFrom 30001; windows at 0 and 30000 are not visible.
    assert target.all() == [e(n, str(n), n * SEGMENT_INTERVAL // 2) for n in range(2, 6)]
    assert target.store.changelog() == []


@rules("WS-22", "WS-25", "WS-41")
def test_rocksdb_restore_keeps_the_changelog_seqnum(kit: Kit) -> None:
    """``AbstractRocksDBSegmentedBytesStore.restoreAllInternal`` writes each changelog key verbatim: the logging
    layer's seqnum (which counted a skipped duplicate tombstone) becomes the row's seqnum."""
    win = open_window(kit, ROCKSDB, duplicates=True, name="source")
    win.put(ik(1), "a", 5)
    win.put(ik(1), None, 5)  # skipped by the store, logged with seqnum 2
    win.put(ik(1), "b", 5)   # store seqnum 2, logged with seqnum 3
    records = win.store.changelog()
    assert [r["key"] for r in records] == [store_key(ik(1), 5, s) for s in (1, 2, 3)]
    assert [r["value"] for r in records] == [h("a"), None, h("b")]
    target = open_window(kit, ROCKSDB, duplicates=True, name="target")
    kit.require(WINDOW, ROCKSDB, "dump")
    target.store.restore(records)
    assert target.segments()["target.0"]["default"] == {store_key(ik(1), 5, 1): h("a"), store_key(ik(1), 5, 3): h("b")}
    assert win.segments()["source.0"]["default"] == {store_key(ik(1), 5, 1): h("a"), store_key(ik(1), 5, 2): h("b")}


@rules("WS-6", "WS-31", "WS-42")
def test_reopened_store_forgets_its_stream_time(kit: Kit) -> None:
    """``observedStreamTime`` lives in memory (NO_TIMESTAMP after an open): a row of a live segment that was
    clamped away before the close is visible again until the next put advances the time."""
    kit.require(WINDOW, ROCKSDB)
    win = open_window(kit, ROCKSDB, retention=10, window_size=1, segment_interval=100)
    win.put(ik(1), "old", 5)
    win.put(ik(1), "new", 50)
    assert win.all() == [e(1, "new", 50)]
    win.store.close()
    win = open_window(kit, ROCKSDB, retention=10, window_size=1, segment_interval=100)
    assert win.all() == [e(1, "old", 5), e(1, "new", 50)]
    win.put(ik(2), "x", 51)
    assert win.all() == [e(1, "new", 50), e(2, "x", 51)]


# --- ordering: segments then store-key bytes (RocksDB), window start then key (memory) -----------------------------


#: The same three puts in each backend's order: RocksDB's ``SegmentIterator`` visits segments oldest first and each
#: segment in store-key byte order (a smaller key first whatever its start); ``InMemoryWindowStore`` iterates a map
#: of window start to keys, by start, then by key.
ORDERS = {ROCKSDB: [e(1, "a7", 7), e(2, "b5", 5), e(0, "z12", 12)], MEMORY: [e(2, "b5", 5), e(1, "a7", 7), e(0, "z12", 12)]}


@rules("WS-12", "WS-13", "WS-14", "WS-18", "WS-20")
@BACKENDS
def test_order_segment_then_key_or_start_then_key(kit: Kit, backend: str) -> None:
    """Interval 10: 02@5 and 01@7 share segment 0, 00@12 is in segment 1 (AbstractWindowBytesStoreTest
    ``shouldGetAllReturnTimestampOrderedRecords`` with keys out of time order)."""
    win = open_window(kit, backend, segment_interval=10, retention=100)
    win.put(ik(2), "b5", 5)
    win.put(ik(1), "a7", 7)
    win.put(ik(0), "z12", 12)
    assert win.all() == ORDERS[backend]
    assert win.fetch_all(0, 20, backward=True) == ORDERS[backend][::-1]
    assert win.fetch_keys(None, None, 0, 20) == ORDERS[backend]


# --- ChangeLoggingWindowBytesStoreTest / ChangeLoggingTimestampedWindowBytesStoreTest -----------------------------


@rules("WS-22", "WS-23")
@BACKENDS
def test_changelog_of_a_plain_window_store(kit: Kit, backend: str) -> None:
    """Mirrors ``shouldLogPuts`` and ``shouldLogPutsWithPosition``: key ``[key][start][0]``, the raw value, the
    context's timestamp; a null put logs a tombstone."""
    win = open_window(kit, backend)
    win.store.context(42)
    win.put(ik(1), "v", 100)
    win.put(ik(1), None, 100)
    logged = win.store.changelog()
    assert [(r["key"], r["value"], r["timestamp"]) for r in logged] == [
        (store_key(ik(1), 100, 0), h("v"), 42), (store_key(ik(1), 100, 0), None, 42)]


@rules("WS-23", "WS-25")
@BACKENDS
def test_changelog_of_a_timestamped_window_store(kit: Kit, backend: str) -> None:
    """Mirrors ``ChangeLoggingTimestampedWindowBytesStoreTest.shouldLogPuts``: the raw value with the
    timestamp taken from the stored value; a tombstone takes the context's timestamp. Restore prepends the
    record's timestamp again."""
    win = open_window(kit, backend, TIMESTAMPED, name="source")
    win.store.context(42)
    win.put_hex(ik(1), i64(7) + h("v"), 100)
    win.put_hex(ik(2), None, 100)
    logged = win.store.changelog()
    assert [(r["key"], r["value"], r["timestamp"]) for r in logged] == [
        (store_key(ik(1), 100, 0), h("v"), 7), (store_key(ik(2), 100, 0), None, 42)]
    target = open_window(kit, backend, TIMESTAMPED, name="target")
    target.store.restore(logged)
    assert target.all() == [(ik(1), 100, i64(7) + h("v"))]


@rules("WS-4", "WS-22")
def test_duplicate_tombstone_is_logged_but_not_stored(kit: Kit) -> None:
    """Mirrors ``shouldRetainDuplicatesWhenSet``: with duplicates the change-logging layer bumps its own seqnum
    for every put, a null one included, while the store skips the null put."""
    for backend in (ROCKSDB, MEMORY):
        win = open_window(kit, backend, duplicates=True, name=f"dups-{backend}")
        win.put(ik(1), "a", 0)
        win.put(ik(1), None, 0)
        win.put(ik(1), "b", 0)
        assert [r["key"] for r in win.store.changelog()] == [store_key(ik(1), 0, s) for s in (1, 2, 3)]
        assert win.values(ik(1), 0, 0) == ["a", "b"]


@rules("WS-10", "WS-19")
def test_fetch_of_a_duplicate_window(kit: Kit) -> None:
    """``RocksDBWindowStore.fetch(key, time)`` reads the row of the store's *current* seqnum: with duplicates
    only the last put's row, if it is that window; ``InMemoryWindowStore`` looks the bare key up and finds none."""
    rocks = open_window(kit, ROCKSDB, duplicates=True, name="rocks")
    rocks.put(ik(1), "a", 0)
    rocks.put(ik(1), "b", 0)
    assert rocks.fetch(ik(1), 0) == h("b")
    rocks.put(ik(2), "c", 0)
    assert rocks.fetch(ik(1), 0) is None
    memory = open_window(kit, MEMORY, duplicates=True, name="mem")
    memory.put(ik(1), "a", 0)
    assert memory.fetch(ik(1), 0) is None


@rules("WS-28", "WS-36")
@pytest.mark.parametrize("backend", [ROCKSDB, MEMORY])
def test_committed_offset_of_a_window_store(kit: Kit, backend: str) -> None:
    """A RocksDB window store keeps the committed changelog offset in its segments (KIP-1035); memory keeps none."""
    if backend == ROCKSDB:
        kit.require(WINDOW, backend, "offsets")
    win = open_window(kit, backend)
    win.put(ik(1), "a", 0)
    win.store.flush()
    win.store.commit(0)
    expected = 0 if backend == ROCKSDB else None
    assert win.store.committed() == expected
    assert win.store.ok("store.committed_offset", topic=TOPIC, partition=0)["offset"] == expected


@rules("WS-29", "WS-31")
def test_position_is_the_merge_of_the_segments(kit: Kit) -> None:
    """Mirrors ``AbstractRocksDBWindowStoreTest.shouldMatchPositionAfterPut``: a reopened store's position is the
    merge of its segments' positions, so a segment first written after the restart commits both partitions."""
    kit.require(WINDOW, ROCKSDB, "dump")
    if not kit.implementation.supports("position.deserialize"):
        pytest.skip("the implementation offers no position.deserialize")
    win = open_window(kit, ROCKSDB)
    win.store.ok("store.set_context", timestamp=1, headers=[], topic="in", partition=0, offset=4)
    win.put(ik(1), "a", 1_000)
    win.store.commit(0)
    win.store.close()
    win = open_window(kit, ROCKSDB)
    win.store.ok("store.set_context", timestamp=1, headers=[], topic="in", partition=1, offset=9)
    win.put(ik(1), "b", SEGMENT_INTERVAL)
    win.store.commit(1)
    stored = dict(win.segments()[segment(SEGMENT_INTERVAL)]["offsets"])
    position = kit.implementation.call("position.deserialize", {"bytes": stored[h("position")]})["position"]
    assert position == [["in", [[0, 4], [1, 9]]]]


@pytest.mark.kstate_level("hardened")
@rules("WS-29", "KV-25", "KV-66")
@pytest.mark.parametrize("with_segments", [False, True], ids=["new", "existing"])
def test_a_position_path_that_is_a_directory_refuses_the_open(kit: Kit, with_segments: bool) -> None:
    """A pre-4.3 ``<store>.position`` that cannot be read refuses the open before any segment is opened: here
    a directory in its place, refused (not an internal error), and nothing in the state directory changes."""
    kit.require(WINDOW, ROCKSDB)
    if with_segments:
        win = open_window(kit, ROCKSDB)
        win.put(ik(1), "a", 1_000)
        win.store.commit(0)
        win.store.close()
    (kit.state_dir / "app" / "0_0" / "store.position").mkdir(parents=True)
    before = store_digest(kit.state_dir)
    options = {"retention_ms": RETENTION_PERIOD, "window_size_ms": WINDOW_SIZE, "retain_duplicates": False,
               "segment_interval_ms": SEGMENT_INTERVAL}
    out = kit.open_refused(WINDOW, ROCKSDB, options=options)
    assert "error" in out, f"a window store opened with a directory as its position file: {out}"
    assert store_digest(kit.state_dir) == before, "the refused open changed the state directory"


@rules("WS-39", "WS-15", "WS-17")
@BACKENDS
def test_negative_window_start_is_accepted_but_not_listed(kit: Kit, backend: str) -> None:
    """Kafka refuses no negative window start (WS-39, tentative): the put succeeds and is logged; ``all()`` of
    either backend does not list it (RocksDB reads from 0, memory forgets it)."""
    win = open_window(kit, backend)
    win.put(ik(1), "n", -5)
    assert win.all() == []
    assert [r["key"] for r in win.store.changelog()] == [store_key(ik(1), -5, 0)]


@rules("WS-6", "WS-17")
@BACKENDS
def test_late_record_does_not_move_stream_time_back(kit: Kit, backend: str) -> None:
    """Observed stream time is the largest window start seen, not the last: after 20, late puts at 5 and 8 leave it
    at 20 (retention 10), so neither is answered (RocksDB stores them in the live segment 0 but clamps reads
    from 11; memory drops them)."""
    win = open_window(kit, backend, retention=10, window_size=1, segment_interval=100)
    win.put(ik(1), "a", 20)
    win.put(ik(2), "b", 5)
    win.put(ik(4), "c", 8)
    assert win.all() == [e(1, "a", 20)]
    assert win.fetch_all(0, 100) == [e(1, "a", 20)]


@rules("WS-27")
def test_upgrade_to_timestamped_reaches_every_segment(kit: Kit) -> None:
    """Mirrors ``StoreUpgradeIntegrationTest`` for window stores: a plain window store reopened as a timestamped
    one reads the legacy rows of every segment as ``[ts -1][value]``, not only the first segment's."""
    kit.require(TIMESTAMPED, ROCKSDB)
    win = open_window(kit, ROCKSDB)
    win.put(ik(1), "a", 5)
    win.put(ik(1), "b", SEGMENT_INTERVAL + 5)
    win.put(ik(2), "c", 2 * SEGMENT_INTERVAL + 5)
    win.store.close()
    upgraded = open_window(kit, ROCKSDB, TIMESTAMPED)
    legacy = "ff" * 8
    assert upgraded.all() == [(ik(1), 5, legacy + h("a")), (ik(1), SEGMENT_INTERVAL + 5, legacy + h("b")),
                              (ik(2), 2 * SEGMENT_INTERVAL + 5, legacy + h("c"))]


@rules("WS-13", "WS-18", "WS-40", "WIN-11")
@BACKENDS
def test_key_range_fetch_answers_only_rows_inside_the_scan_bounds(kit: Kit, backend: str) -> None:
    """Mirrors ``WindowKeySchemaTest.testUpperBoundWithKeyBytesLargerThanFirstTimestampByte`` at store level: the
    RocksDB scan of ``fetch(00, 010000, 0, 100)`` ends at ``010000 [100][MAX]``, below the row of key 01 at 7, so
    that row is not answered; the in-memory store compares keys only and answers it."""
    win = open_window(kit, backend, retention=1000, segment_interval=1000)
    win.put("01", "a", 7)
    expected = [] if backend == ROCKSDB else [("01", 7, h("a"))]
    assert win.fetch_keys("00", "010000", 0, 100) == expected
    assert win.fetch_keys("00", "010000", 0, 100, backward=True) == expected
    assert win.fetch_keys("00", "02", 0, 100) == [("01", 7, h("a"))]


@rules("WS-33")
def test_a_window_store_opened_with_a_cache_is_refused_or_serves_what_it_was_given(kit: Kit) -> None:
    """WS-33: a window store MAY offer Kafka's record cache (``CachingWindowStore``) or refuse ``caching`` with a
    typed error (the reference); either way an open never half-works: a cached store answers its writes, before and
    after a flush."""
    kit.require(WINDOW, ROCKSDB)
    out = kit.open_refused(WINDOW, ROCKSDB, caching=True, options={"retention_ms": RETENTION_PERIOD,
                                                                   "window_size_ms": WINDOW_SIZE})
    if is_refusal(out):
        assert out["error"].get("type"), f"the refusal of caching is untyped: {out}"
        return
    window = Win(Store(kit.implementation, out["handle"], out))
    window.store.context(DEFAULT_START)
    window.put(ik(1), "one", DEFAULT_START)
    assert window.fetch(ik(1), DEFAULT_START) == h("one")
    window.store.flush()
    assert window.fetch(ik(1), DEFAULT_START) == h("one")


# --- moved from test_store_rules_family_places (issue 33): RST-7, WS-42, PRIM-2 ---------------------------------------

#: The key of the cases moved from ``test_store_rules_family_places`` (issue 33), as there: nine bytes.
K = h("kkkkkkkkk")
WINDOW_OPTIONS = {"retention_ms": 1_000, "window_size_ms": 10, "segment_interval_ms": 500}


def _window_key(key: str, start: int) -> str:
    """CL-6: the changelog key ``[key][windowStart][seqnum 0]`` of a window store without duplicates."""
    return key + i64(start) + "00000000"


@rules("RST-7")
@pytest.mark.kstate_places("store:window", "restore", "reopen")
def test_a_timestamped_window_store_rebuilt_from_a_plain_changelog_differs_from_one_upgraded_in_place(
        kit: Kit) -> None:
    """Place: a plain RocksDB window store's changelog restored into a new timestamped window store, and the same
    directory opened as a timestamped window store. The rebuilt row carries its record's timestamp, the one upgraded
    in place timestamp -1 (``FF``x8): neither invents nor drops a timestamp (RST-7)."""
    kit.require("window", ROCKSDB)
    kit.require("timestamped_window", ROCKSDB)
    plain = kit.open("window", ROCKSDB, name="orders", options=WINDOW_OPTIONS)
    plain.ok("store.set_context", timestamp=50, headers=[], topic="in", partition=0, offset=1)
    plain.ok("window_store.put", key=K, value="aa", window_start=20)
    log = plain.changelog()
    assert log == [record(_window_key(K, 20), "aa", 50)], log
    plain.commit(1)
    plain.close()
    rebuilt = kit.open("timestamped_window", ROCKSDB, name="rebuilt", options=WINDOW_OPTIONS)
    rebuilt.restore(log)
    assert rebuilt.ok("window_store.fetch", key=K, time=20)["value"] == i64(50) + "aa"
    in_place = kit.open("timestamped_window", ROCKSDB, name="orders", options=WINDOW_OPTIONS)
    assert in_place.ok("window_store.fetch", key=K, time=20)["value"] == "ff" * 8 + "aa"


@rules("WS-42", "WS-8")
@pytest.mark.kstate_places("store:window", "reopen", "restore")
def test_a_reopened_window_store_answers_clamped_rows_until_a_restore_batch_advances_stream_time(kit: Kit) -> None:
    """Place: a RocksDB window store reopened, then restored into. A row of a live segment below ``T - R + 1`` is
    clamped away before the restart and answered after it (T is -1, WS-42); a restore batch advances T, and only
    then is the expired segment deleted with its row (WS-8), while a row still live stays."""
    kit.require("window", ROCKSDB)
    store = kit.open("window", ROCKSDB, options=WINDOW_OPTIONS)
    store.ok("window_store.put", key=K, value="aa", window_start=700)  # segment 1
    store.ok("window_store.put", key=K, value="bb", window_start=1_800)  # T = 1800: reads start at 801
    assert store.ok("window_store.fetch", key=K, time=700)["value"] is None
    store.commit(1)
    store.close()
    again = kit.open("window", ROCKSDB, options=WINDOW_OPTIONS)
    assert again.ok("window_store.fetch", key=K, time=700)["value"] == "aa"
    segment = kit.state_dir / "app" / "0_0" / "store" / "store.500"
    assert segment.is_dir(), sorted(p.name for p in segment.parent.iterdir())
    again.restore([record(_window_key(h("z"), 2_600), "cc", 2_600)])  # T = 2600: segment 1 expires
    assert again.ok("window_store.fetch", key=K, time=700)["value"] is None
    assert again.ok("window_store.fetch", key=K, time=1_800)["value"] == "bb"
    assert again.ok("window_store.fetch", key=h("z"), time=2_600)["value"] == "cc"
    assert not segment.exists()


#: Keys whose signed and unsigned orders differ, and a key that is a prefix of another: unsigned, ``01`` < ``0100``
#: < ``7f`` < ``80`` < ``ff`` (signed, ``80`` and ``ff`` would sort first).
UNSIGNED_ORDER = ["01", "0100", "7f", "80", "ff"]


@rules("PRIM-2")
@pytest.mark.kstate_places("store:window")
@pytest.mark.parametrize("backend", (ROCKSDB, "memory"))
def test_a_window_stores_all_orders_keys_as_unsigned_bytes(kit: Kit, backend: str) -> None:
    """Place: a window store's ``all`` (one window start) on each backend. Keys order as unsigned bytes (PRIM-2:
    ``Bytes.BYTES_LEXICO_COMPARATOR``), whatever the write order."""
    kit.require("window", backend)
    windows = kit.open("window", backend, name="windows", options=WINDOW_OPTIONS)
    # No prefix key here: a RocksDB window row's key is the key then the window start (WIN-7), so a key that is a
    # prefix of another compares on the other's next byte against the start's first.
    same_length = [k for k in UNSIGNED_ORDER if len(k) == 2]
    for key in reversed(same_length):
        windows.ok("window_store.put", key=key, value="aa", window_start=20)
    assert [entry[0] for entry in windows.ok("window_store.all")["entries"]] == same_length
