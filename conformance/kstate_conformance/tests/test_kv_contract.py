"""Contract tests: what Kafka's own store suites assert, through the neutral ``store.*`` operations only.

Mirrors ``AbstractKeyValueStoreTest``, ``RocksDBStoreTest``, ``InMemoryKeyValueStoreTest``,
``RocksDBTimestampedStoreTest`` (the migration matrix), the ``ChangeLogging*KeyValueBytesStoreTest``s and
``CachingInMemoryKeyValueStoreTest`` (shared/reference/kafka-formats.md §11), plus the restore and cache
rules of this kit. A test needing a backend, store type or feature the implementation's
``store.capabilities`` lacks is skipped, saying so.
"""

from __future__ import annotations

from typing import Any

import pytest

from kstate_conformance import rules
from kstate_conformance import store_types as types
from kstate_conformance.harness import (
    BACKENDS,
    FF8,
    MEMORY,
    ROCKSDB,
    TOPIC,
    Kit,
    Store,
    h,
    header_bytes,
    i64,
    kit,
    record,
    varint,
)

__all__ = ["kit"]

# The headers type by its legacy spelling, which store.open still accepts (spec/ops.md): these tests exercise
# the alias, and their ids stay as they were.
KV, TS, HDR = types.KV, types.TIMESTAMPED_KV, types.TIMESTAMPED_KV_HEADERS_ALIAS

ALL_STORES = [(t, b) for t in (KV, TS, HDR) for b in (ROCKSDB, MEMORY)]
STORES = pytest.mark.parametrize(("store_type", "backend"), ALL_STORES, ids=[f"{t}-{b}" for t, b in ALL_STORES])


def value_for(store_type: str, raw: str, timestamp: int = 7, headers: list[tuple[str, bytes | None]] | None = None) -> str:
    """``raw`` (hex) in the store type's layout."""
    if store_type == KV:
        return raw
    if store_type == TS:
        return i64(timestamp) + raw
    if store_type != HDR:
        raise ValueError(f"no value layout for store type {store_type!r}")
    hb = header_bytes(headers or [])
    return varint(len(hb) // 2) + hb + i64(timestamp) + raw


# --- AbstractKeyValueStoreTest ------------------------------------------------------------------------------


@rules("KV-1", "KV-2", "KV-5", "KV-9", "KV-40", "KV-51", "CACHE-1", "CACHE-7")
@STORES
@pytest.mark.parametrize("caching", [False, True], ids=["uncached", "cached"])
def test_put_get_range_and_reverse_range_agree(kit: Kit, store_type: str, backend: str, caching: bool) -> None:
    """Values put are read back by get, range and reverseRange, in unsigned key order (testPutGetRange)."""
    store = kit.open(store_type, backend, caching=caching)
    values = {h("zero"): value_for(store_type, h("zero")), h("one"): value_for(store_type, h("one")),
              h("two"): value_for(store_type, h("two")), h("four"): value_for(store_type, h("four")),
              "80": value_for(store_type, ""), "": value_for(store_type, h("empty key"))}
    for key, value in values.items():
        store.put(key, value)
    for key, value in values.items():
        assert store.get(key) == value
    ordered = sorted(values.items(), key=lambda kv: bytes.fromhex(kv[0]))
    assert store.all() == ordered
    assert store.reverse_all() == ordered[::-1]
    assert store.range(h("one"), h("two")) == [e for e in ordered if h("one") <= e[0] <= h("two")]
    assert store.reverse_range(h("one"), h("two")) == [e for e in ordered if h("one") <= e[0] <= h("two")][::-1]
    assert store.get(h("three")) is None


@rules("KV-4", "KV-7", "CACHE-2")
@STORES
@pytest.mark.parametrize("caching", [False, True], ids=["uncached", "cached"])
def test_null_values_delete_in_put_and_put_all(kit: Kit, store_type: str, backend: str, caching: bool) -> None:
    """``put(k, null)`` and a null value in ``putAll`` delete; a later entry for the same key wins."""
    store = kit.open(store_type, backend, caching=caching)
    a, b = value_for(store_type, "0a"), value_for(store_type, "0b")
    store.put_all([("01", a), ("02", b), ("03", a), ("03", b)])
    assert store.all() == [("01", a), ("02", b), ("03", b)]
    store.put("01", None)
    store.put_all([("02", None), ("04", a), ("04", None)])
    assert store.get("01") is None and store.get("02") is None and store.get("04") is None
    assert store.all() == [("03", b)]
    store.put("99", None)  # deleting an absent key is not an error
    assert store.all() == [("03", b)]


@rules("KV-8", "KV-9", "CACHE-7")
@STORES
@pytest.mark.parametrize("caching", [False, True], ids=["uncached", "cached"])
def test_deleted_keys_are_not_in_range_results(kit: Kit, store_type: str, backend: str, caching: bool) -> None:
    """A deleted key is absent from all() and ranges, and delete returns the old value (shouldNotIncludeDeletedFromRangeResult)."""
    store = kit.open(store_type, backend, caching=caching)
    values = {f"0{i}": value_for(store_type, f"1{i}") for i in range(5)}
    for key, value in values.items():
        store.put(key, value)
    if caching:
        store.flush()
    assert store.delete("02") == values["02"]
    assert store.delete("02") is None
    expected = [(k, v) for k, v in sorted(values.items()) if k != "02"]
    assert store.all() == expected
    assert store.range("01", "03") == [("01", values["01"]), ("03", values["03"])]
    assert store.reverse_all() == expected[::-1]


@rules("KV-6", "CACHE-2")
@STORES
@pytest.mark.parametrize("caching", [False, True], ids=["uncached", "cached"])
def test_put_if_absent_writes_only_the_first_value(kit: Kit, store_type: str, backend: str, caching: bool) -> None:
    """putIfAbsent returns null the first time, then the existing value, which it never overwrites."""
    store = kit.open(store_type, backend, caching=caching)
    first, second = value_for(store_type, "01"), value_for(store_type, "02")
    assert store.put_if_absent("aa", first) is None
    assert store.put_if_absent("aa", second) == first
    assert store.get("aa") == first
    assert store.put_if_absent("bb", None) is None  # a null value is a no-op delete
    assert store.get("bb") is None


@rules("KV-3")
@STORES
@pytest.mark.parametrize("caching", [False, True], ids=["uncached", "cached"])
def test_null_keys_are_refused_and_change_nothing(kit: Kit, store_type: str, backend: str, caching: bool) -> None:
    """A null key is refused by put, putIfAbsent, putAll, delete and get; putAll then writes no entry."""
    store = kit.open(store_type, backend, caching=caching)
    value = value_for(store_type, "01")
    for op in ("store.put", "store.put_if_absent", "store.delete", "store.get"):
        assert store.refused(op, key=None, value=value), f"{op} accepted a null key"
    assert store.refused("store.put_all", entries=[["01", value], [None, value]])
    assert store.all() == []
    assert store.changelog() == []


@rules("KV-9")
@STORES
def test_ranges_with_null_bounds(kit: Kit, store_type: str, backend: str) -> None:
    """Null bounds are open: null..k, k..null and null..null, forward and reverse."""
    store = kit.open(store_type, backend)
    entries = [(f"0{i}", value_for(store_type, f"a{i}")) for i in range(1, 6)]
    store.put_all(entries)
    assert store.range(None, "03") == entries[:3]
    assert store.range("03", None) == entries[2:]
    assert store.range(None, None) == entries
    assert store.reverse_range(None, "03") == entries[:3][::-1]
    assert store.reverse_range("03", None) == entries[2:][::-1]
    assert store.reverse_range(None, None) == entries[::-1]


@rules("KV-9")
@STORES
def test_single_key_range_equals_get(kit: Kit, store_type: str, backend: str) -> None:
    """``range(k, k)`` yields exactly the entry ``get(k)`` returns."""
    store = kit.open(store_type, backend)
    value = value_for(store_type, "0102")
    store.put("0a", value)
    store.put("0a00", value)
    assert store.range("0a", "0a") == [("0a", value)]
    assert store.reverse_range("0a", "0a") == [("0a", value)]
    assert store.range("0b", "0b") == []


@rules("KV-10", "CACHE-7")
@STORES
@pytest.mark.parametrize("caching", [False, True], ids=["uncached", "cached"])
def test_inverted_ranges_are_empty(kit: Kit, store_type: str, backend: str, caching: bool) -> None:
    """``range(2, 1)`` and ``range(-1, 1)`` with serialized Integer keys are empty: -1 is FFFFFFFF (from > to)."""
    store = kit.open(store_type, backend, caching=caching)
    one, two, minus_one = "00000001", "00000002", "ffffffff"
    for key in (one, two, minus_one):
        store.put(key, value_for(store_type, key))
    for lower, upper in ((two, one), (minus_one, one)):
        assert store.range(lower, upper) == []
        assert store.reverse_range(lower, upper) == []


@rules("KV-15", "CACHE-10")
@STORES
def test_approximate_num_entries_counts_puts(kit: Kit, store_type: str, backend: str) -> None:
    """0 for a new store, 5 after five puts and a flush."""
    store = kit.open(store_type, backend)
    assert store.count() == 0
    for i in range(5):
        store.put(f"0{i}", value_for(store_type, "ab"))
    store.flush()
    assert store.count() == 5


@rules("KV-11", "KV-41")
@STORES
def test_writing_while_an_iterator_is_open_does_not_fail(kit: Kit, store_type: str, backend: str) -> None:
    """Putting while an iterator is open raises nothing (no ConcurrentModificationException)."""
    kit.require(store_type, backend, "iterators")
    store = kit.open(store_type, backend)
    for i in range(4):
        store.put(f"0{i}", value_for(store_type, "aa"))
    iterator = store.iterator("all")
    first = store.next(iterator, 1)
    assert "error" not in first and len(first["entries"]) == 1
    for i in range(4, 8):
        store.put(f"0{i}", value_for(store_type, "bb"))
    rest = store.next(iterator)
    assert "error" not in rest


@rules("KV-16", "RST-1")
@STORES
def test_restored_entries_are_visible(kit: Kit, store_type: str, backend: str) -> None:
    """Restored records are readable afterwards, and the store counts exactly them (testRestore)."""
    store = kit.open(store_type, backend)
    records = [record(f"0{i}", h(f"v{i}"), 10 + i) for i in range(4)]
    assert store.restore(records)["restored"] == 4
    store.flush()
    for i in range(4):
        assert store.get(f"0{i}") is not None
    if backend == MEMORY:
        assert store.count() == 4
    assert [k for k, _ in store.all()] == [f"0{i}" for i in range(4)]


# --- prefix scans (RocksDBStoreTest, InMemoryKeyValueStoreTest, CachingInMemoryKeyValueStoreTest) ---------------


@rules("KV-13", "CACHE-7")
@STORES
@pytest.mark.parametrize("caching", [False, True], ids=["uncached", "cached"])
def test_prefix_scan_excludes_the_next_larger_key(kit: Kit, store_type: str, backend: str, caching: bool) -> None:
    """``prefixScan("abcd")`` yields abcd and abcdd, not abce (shouldGetRecordsWithPrefixKeyExcludingNextLargestKey)."""
    store = kit.open(store_type, backend, caching=caching)
    for key in ("abc", "abcd", "abcdd", "abce", "abd"):
        store.put(h(key), value_for(store_type, h(key)))
    assert [k for k, _ in store.prefix_scan(h("abcd"))] == [h("abcd"), h("abcdd")]
    assert [k for k, _ in store.prefix_scan(h("p"))] == []


@rules("KV-13")
@STORES
def test_prefix_scan_with_uuid_string_keys(kit: Kit, store_type: str, backend: str) -> None:
    """UUID-string keys sharing a prefix are all found, and only they (shouldReturnUUIDsWithStringPrefix)."""
    store = kit.open(store_type, backend)
    keys = ["6a8b1d5e-0c2f-4d0e-9f37-3c8f2b6a1d01", "6a8b1d5e-7e21-4b6a-8c0d-5f1e2a3b4c02",
            "6a8b1d5f-0000-4000-8000-000000000003", "1f0e2d3c-4b5a-4697-8877-665544332211"]
    for key in keys:
        store.put(h(key), value_for(store_type, "00"))
    assert [bytes.fromhex(k).decode() for k, _ in store.prefix_scan(h("6a8b1d5e"))] == sorted(keys[:2])


@rules("KV-13", "KV-14", "CACHE-8")
@STORES
@pytest.mark.parametrize("caching", [False, True], ids=["uncached", "cached"])
def test_prefix_scan_of_an_unboundable_prefix(kit: Kit, store_type: str, backend: str, caching: bool) -> None:
    """Empty and all-FF prefixes: RocksDB scans open-ended; in memory, and with the cache, they are refused."""
    store = kit.open(store_type, backend, caching=caching)
    entries = [("00", value_for(store_type, "01")), ("ff", value_for(store_type, "02")),
               ("ff00", value_for(store_type, "03")), ("ffff", value_for(store_type, "04"))]
    store.put_all(entries)
    if caching or backend == MEMORY:
        for prefix in ("", "ff", "ffff"):
            assert store.refused("store.prefix_scan", prefix=prefix), f"prefix {prefix!r} should be refused"
    else:
        assert store.prefix_scan("") == entries
        assert store.prefix_scan("ff") == entries[1:]
        assert store.prefix_scan("ffff") == entries[3:]


# --- iterators and closing (RocksDBStoreTest, InMemoryKeyValueStoreTest) -----------------------------------------


@rules("KV-11", "KV-41")
@BACKENDS
def test_iterator_visibility_of_later_writes(kit: Kit, backend: str) -> None:
    """RocksDB iterators read a snapshot; in-memory ones copy the keys and read values live."""
    kit.require(KV, backend, "iterators")
    store = kit.open(KV, backend)
    store.put_all([("01", "a1"), ("02", "a2"), ("03", "a3")])
    iterator = store.iterator("all")
    store.delete("02")
    store.put("03", "b3")
    store.put("04", "a4")
    store.put("00", "a0")
    got = store.next(iterator)
    assert "error" not in got
    if backend == ROCKSDB:
        assert got["entries"] == [["01", "a1"], ["02", "a2"], ["03", "a3"]]
    else:
        assert got["entries"] == [["01", "a1"], ["03", "b3"]]


@rules("KV-12", "KV-41", "KV-43")
@BACKENDS
def test_closing_iterators_and_stores(kit: Kit, backend: str) -> None:
    """A closed iterator refuses reads; closing a RocksDB store closes its iterators; an in-memory one then ends."""
    kit.require(KV, backend, "iterators")
    store = kit.open(KV, backend)
    store.put_all([("01", "a1"), ("02", "a2")])
    closed = store.iterator("all")
    store.ok("store.iterator_close", iterator=closed)
    assert "error" in store.next(closed)
    live = store.iterator("range", **{"from": "00", "to": "09"})
    store.close()
    after = store.next(live)
    if backend == ROCKSDB:
        assert "error" in after, "a RocksDB iterator must be closed with its store"
    else:
        assert "error" in after or after["entries"] == [], "a closed in-memory store returns no data"
    if backend == ROCKSDB:
        for op in ("store.get", "store.put", "store.all", "store.approximate_num_entries"):
            assert store.refused(op, key="01", value="00"), f"{op} on a closed store must be refused"


@rules("KV-12", "CACHE-9")
@BACKENDS
def test_a_closed_caching_store_refuses_operations(kit: Kit, backend: str) -> None:
    """Every operation on a closed caching store is refused (shouldThrowIfTryingTo…ClosedCachingStore)."""
    if backend == MEMORY:
        pytest.skip("Kafka does not refuse calls on a closed in-memory store (KV-43)")
    store = kit.open(KV, backend, caching=True)
    store.put("01", "aa")
    store.close()
    for op, payload in (("store.get", {"key": "01"}), ("store.put", {"key": "01", "value": "bb"}),
                        ("store.put_if_absent", {"key": "02", "value": "cc"}), ("store.delete", {"key": "01"}),
                        ("store.put_all", {"entries": [["01", "aa"]]}), ("store.range", {"from": "00", "to": "09"}),
                        ("store.reverse_range", {"from": "00", "to": "09"}), ("store.all", {}),
                        ("store.reverse_all", {}), ("store.approximate_num_entries", {})):
        assert store.refused(op, **payload), f"{op} on a closed caching store must be refused"


# --- RocksDBTimestampedStoreTest: modes and the migration matrix ------------------------------------------------


@rules("KV-30", "UPG-5")
def test_new_and_empty_legacy_stores_open_in_regular_mode(kit: Kit) -> None:
    """A new timestamped store, and one whose ``default`` family is empty, open in regular mode."""
    kit.require(TS, ROCKSDB, "dump")
    store = kit.open(TS, ROCKSDB)
    assert store.info["mode"] == "regular"
    store.put("01", i64(3) + "aa")
    store.close()
    again = kit.open(TS, ROCKSDB)
    assert again.info["mode"] == "regular"
    again.close()


def _legacy_plain_store(kit: Kit) -> None:
    plain = kit.open(KV, ROCKSDB)
    for i in range(1, 8):
        plain.put(h(f"key{i}"), h(str(i) * i))
    plain.close()


@rules("KV-30", "KV-31", "KV-32", "KV-33", "KV-34", "KV-35", "KV-36", "KV-37", "UPG-5")
def test_timestamped_store_migration_matrix(kit: Kit) -> None:
    """RocksDBTimestampedStoreTest.shouldMigrateDataFromDefaultToTimestampColumnFamily, through the neutral ops."""
    kit.require(TS, ROCKSDB, "dump")
    _legacy_plain_store(kit)
    store = kit.open(TS, ROCKSDB)
    assert store.info["mode"] == "upgrade"
    assert store.get(h("unknown")) is None
    assert store.get(h("key1")) == FF8 + h("1")
    store.put(h("key2"), h("timestamp+22"))
    store.put(h("key3"), None)
    store.put(h("key8"), h("timestamp+88888888"))
    assert store.put_if_absent(h("key4"), h("timestamp+4444")) == FF8 + h("4444")
    assert store.put_if_absent(h("key11"), h("timestamp+11111111111")) is None
    assert store.put_if_absent(h("key5"), None) == FF8 + h("55555")
    assert store.put_if_absent(h("key12"), None) is None
    assert store.delete(h("key6")) == FF8 + h("666666")
    expected_all = [(h("key1"), FF8 + h("1")), (h("key11"), h("timestamp+11111111111")), (h("key2"), h("timestamp+22")),
                    (h("key4"), FF8 + h("4444")), (h("key5"), FF8 + h("55555")), (h("key7"), FF8 + h("7777777")),
                    (h("key8"), h("timestamp+88888888"))]
    assert store.all() == expected_all
    assert store.range(h("key2"), h("key5")) == expected_all[2:5]
    assert store.reverse_all() == expected_all[::-1]
    assert store.reverse_range(h("key2"), h("key5")) == expected_all[2:5][::-1]
    assert store.prefix_scan(h("key1")) == expected_all[:2]
    store.close()
    cfs = store.dump()
    assert cfs["default"] == {h("key7"): h("7777777")}
    assert cfs["keyValueWithTimestamp"] == {
        h("key1"): FF8 + h("1"), h("key2"): h("timestamp+22"), h("key4"): FF8 + h("4444"),
        h("key5"): FF8 + h("55555"), h("key8"): h("timestamp+88888888"), h("key11"): h("timestamp+11111111111"),
    }
    again = kit.open(TS, ROCKSDB)
    assert again.info["mode"] == "upgrade", "the store stays in upgrade mode while default holds data"
    again.close()


@rules("KV-38", "UPG-6")
def test_timestamped_to_headers_upgrade_and_drop_of_an_empty_legacy_family(kit: Kit) -> None:
    """A header store over timestamped data prepends 00 and keeps the timestamp; an empty legacy family is dropped."""
    kit.require(HDR, ROCKSDB, "dump")
    ts = kit.open(TS, ROCKSDB)
    ts.put("01", i64(5) + "aa")
    ts.put("02", i64(6) + "bb")
    ts.close()
    store = kit.open(HDR, ROCKSDB)
    assert store.info["mode"] == "upgrade"
    assert store.get("01") == "00" + i64(5) + "aa"
    assert store.all() == [("01", "00" + i64(5) + "aa"), ("02", "00" + i64(6) + "bb")]
    store.delete("02")
    store.close()
    cfs = store.dump()
    assert cfs["keyValueWithTimestamp"] == {}
    assert cfs["keyValueWithTimestampAndHeaders"] == {"01": "00" + i64(5) + "aa"}
    regular = kit.open(HDR, ROCKSDB)
    assert regular.info["mode"] == "regular"
    regular.close()
    assert "keyValueWithTimestamp" not in regular.dump(), "an empty legacy family is dropped at open"


@rules("KV-38", "UPG-8")
def test_plain_to_headers_upgrade_gives_timestamp_minus_one(kit: Kit) -> None:
    """A header store over plain data returns ``00 FF×8 value``."""
    kit.require(HDR, ROCKSDB)
    plain = kit.open(KV, ROCKSDB)
    plain.put("01", "aa")
    plain.close()
    store = kit.open(HDR, ROCKSDB)
    assert store.info["mode"] == "upgrade"
    assert store.all() == [("01", "00" + FF8 + "aa")]
    assert store.get("01") == "00" + FF8 + "aa"


@rules("UPG-7", "KV-38")
def test_plain_and_timestamped_data_together_are_refused(kit: Kit) -> None:
    """A header store refuses a directory holding both unmigrated plain data and timestamped data."""
    kit.require(HDR, ROCKSDB)
    plain = kit.open(KV, ROCKSDB)
    plain.put_all([("01", "aa"), ("02", "bb")])
    plain.close()
    ts = kit.open(TS, ROCKSDB)
    ts.get("01")  # migrates one key; 02 stays in default
    ts.close()
    assert "error" in kit.open_refused(HDR, ROCKSDB)


@rules("UPG-1")
def test_an_older_store_type_refuses_a_newer_directory(kit: Kit) -> None:
    """A plain store refuses a timestamped or header directory; a timestamped store refuses a header one."""
    kit.require(HDR, ROCKSDB)
    headers = kit.open(HDR, ROCKSDB, name="h")
    headers.put("01", value_for(HDR, "aa"))
    headers.close()
    assert "error" in kit.open_refused(KV, ROCKSDB, name="h")
    assert "error" in kit.open_refused(TS, ROCKSDB, name="h")
    ts = kit.open(TS, ROCKSDB, name="t")
    ts.put("01", value_for(TS, "aa"))
    ts.close()
    assert "error" in kit.open_refused(KV, ROCKSDB, name="t")


# --- ChangeLogging*KeyValueBytesStoreTest ---------------------------------------------------------------------


@rules("CL-1", "CL-3", "CL-14")
@BACKENDS
def test_plain_store_logs_values_at_the_context_timestamp(kit: Kit, backend: str) -> None:
    """put, putAll and delete log the key, the value (null for a delete) and the context timestamp, no headers."""
    store = kit.open(KV, backend)
    assert store.info["changelog_topic"] == TOPIC and store.info["changelog_partition"] == 0
    store.context(42, [["h", "01"]])
    store.put("01", "aa")
    store.put_all([("02", "bb"), ("03", None)])
    store.delete("01")
    assert store.changelog() == [record("01", "aa", 42), record("02", "bb", 42), record("03", None, 42),
                                 record("01", None, 42)]


@rules("CL-1", "CL-4")
@BACKENDS
def test_timestamped_store_logs_the_raw_value_at_the_stored_timestamp(kit: Kit, backend: str) -> None:
    """The timestamp moves from the value to the record; a tombstone carries the context timestamp."""
    store = kit.open(TS, backend)
    store.context(42)
    store.put("01", i64(1000) + "aa")
    store.put("02", i64(0) + "")
    store.put("01", None)
    store.put_all([("03", i64(7) + "cc")])
    assert store.changelog() == [record("01", "aa", 1000), record("02", "", 0), record("01", None, 42),
                                 record("03", "cc", 7)]


@rules("CL-1", "CL-8")
@BACKENDS
def test_headers_store_logs_the_stored_headers(kit: Kit, backend: str) -> None:
    """The record headers are the value's headers; a tombstone carries the context's headers."""
    store = kit.open(HDR, backend)
    store.context(42, [["ctx", "ff"]])
    headers = [("a", b"x"), ("a", None), ("ü", b"")]
    store.put("01", value_for(HDR, "aa", 1000, headers))
    store.put("02", value_for(HDR, "bb", 3))
    store.delete("01")
    store.put("02", None)
    assert store.changelog() == [
        record("01", "aa", 1000, [["a", "78"], ["a", None], ["ü", ""]]),
        record("02", "bb", 3),
        record("01", None, 42, [["ctx", "ff"]]),
        record("02", None, 42, [["ctx", "ff"]]),
    ]


@rules("CL-1", "KV-6")
@STORES
def test_put_if_absent_logs_only_when_absent(kit: Kit, store_type: str, backend: str) -> None:
    """Logged only when the key was absent, even when the new value is null."""
    store = kit.open(store_type, backend)
    store.context(5)
    value = value_for(store_type, "aa", 9)
    store.put_if_absent("01", value)
    store.put_if_absent("01", value_for(store_type, "bb", 9))
    store.put_if_absent("02", None)
    raw_ts = 5 if store_type == KV else 9
    assert store.changelog() == [record("01", "aa", raw_ts), record("02", None, 5)]


@rules("CL-1", "CL-3")
@STORES
def test_delete_always_logs_a_tombstone(kit: Kit, store_type: str, backend: str) -> None:
    """delete logs a tombstone whether or not the key existed."""
    store = kit.open(store_type, backend)
    store.context(11)
    store.delete("01")
    store.put("01", value_for(store_type, "aa", 12))
    store.delete("01")
    store.delete("01")
    logged = store.changelog()
    assert [(r["key"], r["value"], r["timestamp"]) for r in logged] == [
        ("01", None, 11), ("01", "aa", 11 if store_type == KV else 12), ("01", None, 11), ("01", None, 11)]


@rules("CL-2")
@STORES
def test_a_negative_timestamp_cannot_be_logged(kit: Kit, store_type: str, backend: str) -> None:
    """A write whose record would have a negative timestamp is refused (ProducerRecord rejects it)."""
    store = kit.open(store_type, backend)
    store.context(-1)
    assert store.refused("store.delete", key="01")
    if store_type != KV:
        store.context(0)
        assert store.refused("store.put", key="02", value=value_for(store_type, "aa", -5))
    assert store.changelog() == []


@rules("CL-1")
@BACKENDS
def test_a_store_without_logging_sends_nothing(kit: Kit, backend: str) -> None:
    """With logging disabled no write produces a changelog record."""
    store = kit.open(KV, backend, logging=False)
    store.put("01", "aa")
    store.delete("01")
    store.put_all([("02", "bb")])
    assert store.changelog() == []


# --- caching (CachingInMemoryKeyValueStoreTest and CACHE-*) -------------------------------------------------------


ENTRY = 1 + 1 + 45  # a one-byte key and value, no topic, no headers (CACHE-6)


@rules("CACHE-2", "CACHE-3", "CACHE-10")
@BACKENDS
def test_the_cache_holds_writes_until_flushed(kit: Kit, backend: str) -> None:
    """Cached writes reach neither the store nor the changelog before a flush (shouldPutGetToFromCache)."""
    store = kit.open(KV, backend, caching=True)
    store.put("01", "aa")
    store.put("02", "bb")
    assert store.get("01") == "aa" and store.get("02") == "bb"
    assert store.changelog() == []
    if backend == MEMORY:
        assert store.count() == 0
    store.flush()
    assert store.changelog() == [record("01", "aa", 0), record("02", "bb", 0)]
    if backend == MEMORY:
        assert store.count() == 2


@rules("CACHE-3", "CACHE-4")
@BACKENDS
def test_writes_coalesce_and_flush_in_order_of_their_latest_write(kit: Kit, backend: str) -> None:
    """Only the last write per key is logged, with its own context; keys flush in latest-write order."""
    store = kit.open(TS, backend, caching=True)
    store.context(1)
    store.put("01", i64(100) + "a1")
    store.context(2)
    store.put("02", i64(200) + "b1")
    store.context(3)
    store.put("01", i64(300) + "a2")
    store.context(4)
    store.delete("03")
    store.flush()
    assert store.changelog() == [record("02", "b1", 200), record("01", "a2", 300), record("03", None, 4)]
    store.flush()
    assert store.changelog() == []


@rules("CACHE-3")
@BACKENDS
def test_a_flushed_record_carries_the_context_of_its_write(kit: Kit, backend: str) -> None:
    """A plain store's flushed record has the timestamp and headers current when it was written, not at flush."""
    store = kit.open(HDR, backend, caching=True)
    store.context(5, [["w", "01"]])
    store.delete("01")
    store.context(9, [["f", "02"]])
    store.flush()
    assert store.changelog() == [record("01", None, 5, [["w", "01"]])]


@rules("CACHE-5")
@BACKENDS
def test_cached_tombstones_without_a_flush_listener(kit: Kit, backend: str) -> None:
    """Without a flush listener every dirty tombstone is written: put then delete logs a tombstone."""
    store = kit.open(KV, backend, caching=True)
    store.put("01", "aa")
    store.delete("01")
    store.delete("02")
    store.flush()
    assert store.changelog() == [record("01", None, 0), record("02", None, 0)]
    assert store.get("01") is None and store.all() == []


@rules("CACHE-5")
@BACKENDS
def test_cached_tombstones_with_a_flush_listener(kit: Kit, backend: str) -> None:
    """With a flush listener a tombstone for a key absent below is dropped (shouldAvoidFlushingDeletionsWithoutDirtyKeys)."""
    store = kit.open(KV, backend, caching=True, cache_flush_listener=True)
    store.put("01", "aa")
    store.put("01", "bb")
    store.put("01", None)
    store.delete("02")
    store.flush()
    assert store.changelog() == []
    store.put("03", "cc")
    store.flush()
    store.delete("03")
    store.flush()
    assert store.changelog() == [record("03", "cc", 0), record("03", None, 0)]


@rules("CACHE-6")
@BACKENDS
def test_evicting_a_dirty_entry_flushes_every_dirty_entry(kit: Kit, backend: str) -> None:
    """The eldest entry is evicted when the cache is full; if dirty it is flushed first, then all others."""
    store = kit.open(KV, backend, caching=True, cache_max_bytes=2 * ENTRY + 5)
    store.put("01", "aa")
    store.put("02", "bb")
    assert store.changelog() == []
    store.put("03", "cc")
    assert store.changelog() == [record("01", "aa", 0), record("02", "bb", 0), record("03", "cc", 0)]
    store.put("04", "dd")  # evicts the clean 02: nothing is written
    assert store.changelog() == []
    store.flush()
    assert store.changelog() == [record("04", "dd", 0)]


@rules("CACHE-6", "CACHE-1")
@BACKENDS
def test_reads_refresh_recency_and_read_entries_can_evict(kit: Kit, backend: str) -> None:
    """A get makes its key the most recent; a value read from the store is cached clean and can evict."""
    store = kit.open(KV, backend, caching=True, cache_max_bytes=2 * ENTRY + 5)
    store.put("01", "aa")
    store.put("02", "bb")
    assert store.get("01") == "aa"  # 02 is now the eldest
    store.put("03", "cc")
    assert store.changelog() == [record("02", "bb", 0), record("01", "aa", 0), record("03", "cc", 0)]
    store.put("02", "b2")  # cache: 03 clean, 02 dirty
    store.put("04", "dd")  # evicts 03 (clean); cache: 02, 04 dirty
    assert store.changelog() == []
    assert store.get("01") == "aa"  # read from below, cached clean: evicts 02, which flushes 02 and 04
    assert store.changelog() == [record("02", "b2", 0), record("04", "dd", 0)]


@rules("CACHE-1", "CACHE-7")
@BACKENDS
def test_a_cached_delete_hides_a_flushed_value(kit: Kit, backend: str) -> None:
    """shouldNotShowItemsDeletedFromCacheButFlushedToStoreBeforeDelete."""
    store = kit.open(KV, backend, caching=True)
    store.put("0a", "aa")
    store.flush()
    store.delete("0a")
    assert store.get("0a") is None
    assert store.range("0a", "0b") == [] and store.reverse_range("0a", "0b") == []
    assert store.all() == [] and store.reverse_all() == []


@rules("CACHE-7")
@BACKENDS
def test_iterators_merge_the_cache_over_the_store(kit: Kit, backend: str) -> None:
    """Cached values shadow stored ones, cached tombstones hide stored keys, in both directions (KAFKA-18326)."""
    store = kit.open(KV, backend, caching=True)
    store.put_all([("aa00", "a0"), ("aa01", "a1"), ("aa02", "a2"), ("aa03", "a3"), ("ab", "a9")])
    store.flush()
    store.delete("aa01")
    store.put("aa02", "b2")
    store.put("aa04", "b4")
    store.delete("aa00")
    expected = [("aa02", "b2"), ("aa03", "a3"), ("aa04", "b4")]
    assert store.all() == [*expected, ("ab", "a9")]
    assert store.reverse_all() == [("ab", "a9"), *expected[::-1]]
    assert store.range("aa01", "aa03") == expected[:2]
    assert store.prefix_scan("aa") == expected


@rules("CACHE-9", "KV-50", "KV-56")
def test_close_flushes_the_cache_and_a_crash_loses_it(kit: Kit) -> None:
    """Closing writes cached entries through; a crash loses the dirty ones, which were never logged."""
    kit.require(KV, ROCKSDB, "crash")
    store = kit.open(KV, ROCKSDB, caching=True)
    store.put("01", "aa")
    store.close()
    assert store.changelog() == [record("01", "aa", 0)]
    again = kit.open(KV, ROCKSDB, caching=True)
    assert again.get("01") == "aa"
    again.flush()
    again.commit(0)
    again.put("02", "bb")
    again.crash()
    assert again.changelog() == []
    after = kit.open(KV, ROCKSDB, ignore_invalid_state=True)
    assert after.all() == [("01", "aa")]


# --- restore -------------------------------------------------------------------------------------------------


@rules("RST-1", "KV-16")
@STORES
def test_restore_applies_puts_and_tombstones_in_order(kit: Kit, store_type: str, backend: str) -> None:
    """Put, delete, delete then put back, tombstones for absent keys (RocksDBStoreTest restore cases)."""
    store = kit.open(store_type, backend)
    records = [record("01", "aa", 1), record("02", "bb", 2), record("01", None, 3), record("03", "cc", 4),
               record("03", None, 5), record("03", "dd", 6), record("04", None, 7)]
    store.restore(records, batch_size=2)
    assert [(k, v) for k, v in store.all()] == [("02", value_for(store_type, "bb", 2)), ("03", value_for(store_type, "dd", 6))]
    store.delete("03")
    assert store.get("03") is None


@rules("RST-2", "CL-9", "CL-10", "CL-11")
@STORES
def test_restore_converts_each_record_for_the_store_type(kit: Kit, store_type: str, backend: str) -> None:
    """Identity; the record timestamp prepended; every record header plus the timestamp (v/c included)."""
    store = kit.open(store_type, backend)
    headers: list[list[Any]] = [["a", "78"], ["v", "00"], ["a", None]]
    store.restore([record("01", "aa", 77, headers), record("02", "", 0)])
    expected = {KV: ["aa", ""], TS: [i64(77) + "aa", i64(0)],
                HDR: [value_for(HDR, "aa", 77, [("a", b"x"), ("v", b"\x00"), ("a", None)]), "00" + i64(0)]}[store_type]
    assert store.get("01") == expected[0]
    assert store.get("02") == expected[1]


@rules("RST-3")
@STORES
def test_batch_size_does_not_change_the_result(kit: Kit, store_type: str, backend: str) -> None:
    """Restoring the same records in batches of 1, 3 and all gives the same store."""
    records = [record(f"0{i % 4}", None if i % 5 == 0 else h(f"v{i}"), i) for i in range(1, 13)]
    results = []
    for batch in (1, 3, 1000):
        store = kit.open(store_type, backend, name=f"s{batch}")
        out = store.restore(records, batch_size=batch)
        assert out["restored"] == 12 and out["batches"] == -(-12 // batch)
        results.append(store.all())
    assert results[0] == results[1] == results[2]


@rules("RST-4")
@BACKENDS
def test_restore_writes_no_changelog_records(kit: Kit, backend: str) -> None:
    """Restoring does not log, with logging and the cache enabled."""
    store = kit.open(KV, backend, caching=True)
    store.restore([record("01", "aa", 1), record("02", None, 2)])
    store.flush()
    assert store.changelog() == []
    assert store.get("01") == "aa"


@rules("RST-5", "KV-34")
def test_restore_into_a_store_in_upgrade_mode_writes_the_new_family(kit: Kit) -> None:
    """A restored key leaves the legacy family and lands, converted from the record, in the new one."""
    kit.require(TS, ROCKSDB, "dump")
    plain = kit.open(KV, ROCKSDB)
    plain.put_all([("01", "aa"), ("02", "bb"), ("03", "cc")])
    plain.close()
    store = kit.open(TS, ROCKSDB)
    assert store.info["mode"] == "upgrade"
    store.restore([record("01", "a2", 9), record("02", None, 9)])
    store.close()
    cfs = store.dump()
    assert cfs["default"] == {"03": "cc"}
    assert cfs["keyValueWithTimestamp"] == {"01": i64(9) + "a2"}


@rules("RST-6", "CL-1")
@STORES
def test_restoring_a_stores_changelog_reproduces_it(kit: Kit, store_type: str, backend: str) -> None:
    """The changelog a store wrote, restored into a new store of its type, gives back the same contents."""
    store = kit.open(store_type, backend, name="original")
    store.context(3, [["c", "01"]])
    store.put("01", value_for(store_type, "aa", 10, [("x", b"1")]))
    store.put("02", value_for(store_type, "bb", 20))
    store.put_all([("03", value_for(store_type, "cc", 30, [("y", None)])), ("02", None)])
    store.put_if_absent("04", value_for(store_type, "dd", 40))
    store.delete("01")
    store.put("01", value_for(store_type, "", 50))
    copy = kit.open(store_type, backend, name="copy")
    copy.restore(store.changelog(), batch_size=2)
    assert copy.all() == store.all()


@rules("RST-7", "UPG-9", "KV-45")
@BACKENDS
def test_rebuilt_upgraded_stores_keep_record_timestamps(kit: Kit, backend: str) -> None:
    """Rebuilt from a plain store's changelog, a timestamped store has the record timestamps, not -1."""
    plain = kit.open(KV, backend, name="plain")
    plain.context(42)
    plain.put("01", "aa")
    changelog = plain.changelog()
    plain.close()
    rebuilt = kit.open(TS, backend, name="rebuilt")
    rebuilt.restore(changelog)
    assert rebuilt.get("01") == i64(42) + "aa"
    if backend == ROCKSDB:
        in_place = kit.open(TS, backend, name="plain")
        assert in_place.get("01") == FF8 + "aa"


# --- store-managed offsets and crashes (the parts this layer relies on) -------------------------------------


def crashed_after_commit(kit: Kit, committed: list[tuple[str, str]], offset: int,
                         uncommitted: list[tuple[str, str]] | None = None) -> Store:
    """A key-value store on RocksDB that wrote ``committed``, committed ``offset``, wrote ``uncommitted`` and
    crashed (the crashed store; needs the crash and offsets capabilities)."""
    kit.require(KV, ROCKSDB, "crash", "offsets")
    store = kit.open(KV, ROCKSDB)
    for key, value in committed:
        store.put(key, value)
    store.commit(offset)
    for key, value in uncommitted or []:
        store.put(key, value)
    store.crash()
    return store


@pytest.mark.kstate_level("hardened")
@rules("KV-50", "KV-52", "RST-1", "KV-67")
def test_a_crash_keeps_what_was_committed(kit: Kit) -> None:
    """After a crash the committed offset's writes are in the store; reopening needs ignore_invalid_state."""
    store = crashed_after_commit(kit, [("01", "aa"), ("02", "bb")], 1, [("03", "cc")])
    assert store.changelog() == [record("01", "aa", 0), record("02", "bb", 0), record("03", "cc", 0)]
    assert "error" in kit.open_refused(KV, ROCKSDB), "an unclean shutdown must be detected"
    after = kit.open(KV, ROCKSDB, ignore_invalid_state=True)
    assert after.committed() == 1
    contents = dict(after.all())
    assert contents.get("01") == "aa" and contents.get("02") == "bb"
    after.restore([record("03", "cc", 0)])
    assert after.all() == [("01", "aa"), ("02", "bb"), ("03", "cc")]


@rules("KV-50", "KV-52", "OFF-4")
def test_a_crash_keeps_the_last_commit_or_an_earlier_state_with_its_offsets(kit: Kit) -> None:
    """After a crash the store holds the last commit's data and offset (then the open is refused until
    ``ignore_invalid_state``), or, where commits are not durable (Kafka, KV-67), the state of its last clean close
    with that close's offset, opened without a refusal; never data and offsets of two different points."""
    kit.require(KV, ROCKSDB, "crash", "offsets")
    store = kit.open(KV, ROCKSDB)
    store.put("01", "aa")
    store.commit(0)
    store.close()
    store = kit.open(KV, ROCKSDB)
    store.put("02", "bb")
    store.commit(1)
    store.put("03", "cc")
    store.crash()
    first = kit.open_refused(KV, ROCKSDB)
    closed_state = ([("01", "aa")], 0)
    if "error" not in first:
        after = kit.opened[-1]
        kept = (after.all(), after.committed())
        assert kept == closed_state, f"an open that found no unclean shutdown holds {kept}, not its last close's"
        return
    after = kit.open(KV, ROCKSDB, ignore_invalid_state=True)
    kept = (after.all(), after.committed())
    assert kept in (([("01", "aa"), ("02", "bb")], 1), closed_state), f"after a crash the store holds {kept}"


@rules("RST-8", "RST-3")
@pytest.mark.parametrize("store_type", [KV, TS, HDR])
def test_a_crash_right_after_a_restore_keeps_all_or_none_of_it(kit: Kit, store_type: str) -> None:
    """A crash as restore returns leaves every restored batch with its offset, or (no flush ends Kafka's restore,
    KV-67) the store as it was before the restore, with no offset: never a part of a batch, never an offset ahead."""
    kit.require(store_type, ROCKSDB, "crash", "offsets")
    store = kit.open(store_type, ROCKSDB)
    records = [record(f"{i % 20:02d}", None if i % 7 == 6 else f"{i:04x}", i) for i in range(50)]
    store.restore(records, batch_size=8, commit_offsets=True)
    expected = store.all()
    store.crash()
    after = kit.open(store_type, ROCKSDB, ignore_invalid_state=True)
    kept = (after.committed(), after.all())
    assert kept in ((49, expected), (None, [])), f"after a crash the restored store holds {kept}"


@pytest.mark.kstate_level("hardened")
@rules("RST-8", "RST-3", "KV-50", "KV-67")
@pytest.mark.parametrize("store_type", [KV, TS, HDR])
def test_a_crash_right_after_a_restore_keeps_all_of_it(kit: Kit, store_type: str) -> None:
    """Each restored batch committed with its last offset; a crash as restore returns loses none of it."""
    kit.require(store_type, ROCKSDB, "crash", "offsets")
    store = kit.open(store_type, ROCKSDB)
    records = [record(f"{i % 20:02d}", None if i % 7 == 6 else f"{i:04x}", i) for i in range(50)]
    store.restore(records, batch_size=8, commit_offsets=True)
    assert store.committed() == 49
    expected = store.all()
    assert len(expected) == 20 - sum(1 for i in range(30, 50) if i % 7 == 6)
    store.crash()
    after = kit.open(store_type, ROCKSDB, ignore_invalid_state=True)
    assert after.committed() == 49
    assert after.all() == expected


@rules("KV-44")
def test_in_memory_stores_commit_no_offsets(kit: Kit) -> None:
    """An in-memory store keeps no committed offset."""
    store = kit.open(KV, MEMORY)
    store.put("01", "aa")
    store.commit(0)
    assert store.committed() is None
    assert store.info["manages_offsets"] is False


@rules("KV-53")
def test_null_offsets_and_the_empty_map_in_commit(kit: Kit) -> None:
    """A null offset removes that partition's offset; an empty map removes every committed offset."""
    kit.require(KV, ROCKSDB, "offsets")
    store = kit.open(KV, ROCKSDB)
    store.put("01", "aa")
    store.ok("store.commit", changelog_offsets=[[TOPIC, 0, 4], ["other", 1, 9]])
    assert store.committed() == 4
    store.ok("store.commit", changelog_offsets=[[TOPIC, 0, None]])
    assert store.committed() is None
    assert store.ok("store.committed_offset", topic="other", partition=1)["offset"] == 9
    store.ok("store.commit", changelog_offsets=[])
    assert store.ok("store.committed_offset", topic="other", partition=1)["offset"] is None
    assert store.get("01") == "aa"


@rules("KV-20", "LAY-2")
def test_a_store_lives_under_its_task_directory(kit: Kit) -> None:
    """A store written through a handle is found again at ``<state.dir>/<app>/<task>/rocksdb/<name>``."""
    kit.require(KV, ROCKSDB, "dump")
    store = kit.open(KV, ROCKSDB, name="located")
    store.put("01", "aa")
    store.close()
    by_location = kit.implementation.call("store.dump", {"state_dir": str(kit.state_dir), "application_id": "app",
                                                "task_id": "0_0", "name": "located"})
    assert "error" not in by_location
    assert dict(by_location["column_families"]["default"]) == {"01": "aa"}
    elsewhere = kit.implementation.call("store.dump", {"state_dir": str(kit.state_dir), "application_id": "app",
                                              "task_id": "1_0", "name": "located"})
    assert "error" in elsewhere


@rules("UPG-3", "UPG-1", "RST-6")
def test_a_refused_store_is_rebuilt_from_its_changelog(kit: Kit) -> None:
    """When an older reader refuses a directory, wiping it and restoring the changelog rebuilds the content."""
    kit.require(HDR, ROCKSDB)
    store = kit.open(HDR, ROCKSDB, name="newer")
    store.put("01", value_for(HDR, "aa", 10, [("h", b"1")]))
    store.put("02", value_for(HDR, "bb", 20))
    store.delete("02")
    contents = store.all()
    changelog = store.changelog()
    store.close()
    assert "error" in kit.open_refused(KV, ROCKSDB, name="newer")
    rebuilt = kit.open(HDR, ROCKSDB, name="wiped")
    rebuilt.restore(changelog)
    assert rebuilt.all() == contents


# --- moved from test_store_rules_family_places (issue 33): PRIM-2 -----------------------------------------------------

#: Keys whose signed and unsigned orders differ, and a key that is a prefix of another: unsigned, ``01`` < ``0100``
#: < ``7f`` < ``80`` < ``ff`` (signed, ``80`` and ``ff`` would sort first).
UNSIGNED_ORDER = ["01", "0100", "7f", "80", "ff"]


@rules("PRIM-2")
@pytest.mark.kstate_places("store:kv")
@pytest.mark.parametrize("backend", (ROCKSDB, "memory"))
def test_a_key_value_stores_scans_order_keys_as_unsigned_bytes(kit: Kit, backend: str) -> None:
    """Place: a key-value store's ``all`` and ``reverse_all`` on each backend. Keys order as unsigned bytes, a prefix
    first (PRIM-2: ``Bytes.BYTES_LEXICO_COMPARATOR``), whatever the write order."""
    kit.require("kv", backend)
    store = kit.open("kv", backend, name="keys")
    for key in reversed(UNSIGNED_ORDER):
        store.put(key, "aa")
    assert [k for k, _ in store.all()] == UNSIGNED_ORDER
    assert [k for k, _ in store.reverse_all()] == UNSIGNED_ORDER[::-1]
