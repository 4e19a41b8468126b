"""The versioned store's basic contract through the ``versioned_store.*`` operations (spec/versioned-store.md, VS-*).

Every expected value here is worked out by hand from the rule text (segment interval 10 unless said otherwise);
the model-based state machine and Kafka's pinned examples live in the versioned conformance modules.
"""

from __future__ import annotations

from typing import Any

import pytest

from kstate.storage_files import store_digest
from kstate_conformance import raw_rocksdb, rules
from kstate_conformance import store_types as types
from kstate_conformance.harness import BACKENDS, FF8, ROCKSDB, Kit, Store, i64, kit, record
from kstate_conformance.store_types import KV

__all__ = ["kit"]

VKV, VKVH = types.VERSIONED_TYPES
NOT_PUT = -(2**63)
VERSIONED_OPS = ("versioned_store.put", "versioned_store.get", "versioned_store.delete", "versioned_store.get_versions")


def _open(kit: Kit, backend: str, retention: int = 100, interval: int | None = 10, store_type: str = VKV,
          **extra: Any) -> Store:
    for name in VERSIONED_OPS:
        if not kit.implementation.supports(name):
            pytest.skip(f"the implementation does not offer {name}")
    options: dict[str, Any] = {"history_retention_ms": retention}
    if interval is not None:
        options["segment_interval_ms"] = interval
    return kit.open(store_type, backend, options=options, **extra)


def put(store: Store, key: str, value: str | None, ts: int, **extra: Any) -> int:
    out: int = store.ok("versioned_store.put", key=key, value=value, timestamp=ts, **extra)["valid_to"]
    return out


def get(store: Store, key: str, as_of: int | None = None) -> dict[str, Any] | None:
    payload: dict[str, Any] = {"key": key} if as_of is None else {"key": key, "as_of": as_of}
    out: dict[str, Any] | None = store.ok("versioned_store.get", **payload)["record"]
    return out


def versions(store: Store, key: str, order: str = "descending", **bounds: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = store.ok("versioned_store.get_versions", key=key, order=order, **bounds)["records"]
    return out


def rec(value: str, ts: int, valid_to: int | None = None) -> dict[str, Any]:
    return {"value": value, "timestamp": ts, "valid_to": valid_to}


# --- writes and reads --------------------------------------------------------------------------------------------


@rules("VS-6", "VS-7", "VS-8", "VS-9", "VS-22", "VS-39")
@BACKENDS
def test_put_answers_valid_to_and_get_answers_versions(kit: Kit, backend: str) -> None:
    store = _open(kit, backend)
    assert put(store, "6b", "61", 1) == -1
    assert put(store, "6b", "62", 5) == -1
    assert put(store, "6b", "63", 3) == 5
    assert get(store, "6b") == rec("62", 5)
    assert get(store, "6b", 4) == rec("63", 3, 5)
    assert get(store, "6b", 2) == rec("61", 1, 3)
    assert get(store, "6b", 0) is None
    assert put(store, "6b", "64", 200) == -1
    assert put(store, "6b", "65", 99) == NOT_PUT  # 99 < 200 - 100
    assert get(store, "6b", 99) is None


@rules("VS-5", "VS-6", "VS-7")
@BACKENDS
def test_the_grace_period_is_judged_by_the_store_wide_stream_time(kit: Kit, backend: str) -> None:
    store = _open(kit, backend)
    assert put(store, "01", "61", 200) == -1
    assert put(store, "02", "62", 99) == NOT_PUT  # key "02" has no history, but 99 < 200 - 100
    assert get(store, "02") is None
    assert put(store, "01", "63", 100) == 200  # exactly at 200 - 100: still accepted, valid until 200
    assert get(store, "01", 150) == rec("63", 100, 200)


@rules("VER-34", "VS-7")
@BACKENDS
def test_a_tombstone_at_the_latest_timestamp_is_recorded_nowhere(kit: Kit, backend: str) -> None:
    store = _open(kit, backend, retention=1000)
    put(store, "6b", "61", 10)
    put(store, "6b", None, 20)  # "61" is [10, 20) in segment 2
    put(store, "6b", "62", 30)
    put(store, "6b", None, 30)  # deletes the latest row, records nothing
    assert put(store, "6b", "63", 25) == -1  # segment 2's row ends at 20: nothing later is known
    assert get(store, "6b") == rec("63", 25)


@rules("VS-10")
@BACKENDS
def test_delete_answers_the_version_valid_before_it(kit: Kit, backend: str) -> None:
    store = _open(kit, backend)
    put(store, "6b", "61", 1)
    assert store.ok("versioned_store.delete", key="6b", timestamp=7)["record"] == rec("61", 1)
    assert get(store, "6b") is None and get(store, "6b", 6) == rec("61", 1, 7)
    assert store.ok("versioned_store.delete", key="6b", timestamp=8)["record"] is None


@rules("VS-10")
@BACKENDS
def test_delete_before_the_latest_answers_the_older_version(kit: Kit, backend: str) -> None:
    store = _open(kit, backend)
    put(store, "6b", "61", 1)
    put(store, "6b", "62", 10)  # "61" is now valid 1..10
    # VS-10: the version valid at 5, with its old validTo or none (Kafka's MeteredVersionedKeyValueStore.delete answers
    # a VersionedRecord of the inner ValueAndTimestamp: value and timestamp, as VersionedKeyValueStore.delete promises).
    assert store.ok("versioned_store.delete", key="6b", timestamp=5)["record"] in (rec("61", 1, 10), rec("61", 1))
    assert get(store, "6b", 4) == rec("61", 1, 5) and get(store, "6b", 7) is None
    assert get(store, "6b") == rec("62", 10)


@rules("VS-5", "VS-13", "VS-34")
@BACKENDS
def test_one_stream_time_expires_every_key(kit: Kit, backend: str) -> None:
    store = _open(kit, backend)
    put(store, "01", "61", 1)
    put(store, "01", "62", 50)  # "61" goes to segment 5, valid 1..50
    assert get(store, "01", 10) == rec("61", 1, 50)
    put(store, "02", "7a", 1000)  # another key: stream time 1000, segments below 90 dropped
    assert get(store, "01", 10) is None
    assert versions(store, "01") == [rec("62", 50)]
    assert get(store, "01", 60) == rec("62", 50)


@rules("VS-11", "VS-12")
@BACKENDS
def test_versions_query_orders_and_bounds(kit: Kit, backend: str) -> None:
    store = _open(kit, backend, retention=1000)
    for ts, value in ((1, "61"), (15, "62"), (30, "63")):
        put(store, "6b", value, ts)
    store.ok("versioned_store.delete", key="6b", timestamp=40)
    put(store, "6b", "64", 50)
    a, b, c, d = rec("61", 1, 15), rec("62", 15, 30), rec("63", 30, 40), rec("64", 50)
    assert versions(store, "6b", "any") == [d, c, b, a]
    assert versions(store, "6b", "ascending") == [a, b, c, d]
    assert versions(store, "6b", "ascending", from_ms=15, to_ms=30) == [b]
    assert versions(store, "6b", "ascending", from_ms=15, to_ms=29) == []  # "62" is in segment 3, beyond 29's
    assert versions(store, "6b", from_ms=60, to_ms=70) == [d]


def _three_versions_committed(kit: Kit) -> Store:
    """Versions 61@1, 6263@5, 78@9 of key 6b (segment interval 100: both older ones in segment 0), committed at 3."""
    store = _open(kit, ROCKSDB, interval=100)
    for ts, value in ((1, "61"), (5, "6263"), (9, "78")):
        put(store, "6b", value, ts)
    store.commit(3)
    return store


@rules("VS-17", "VS-1", "VS-2", "VS-3")
def test_rows_are_written_in_their_format_and_the_commit_survives_a_reopen(kit: Kit) -> None:
    """VS-2, VS-3: the latest row under FF*8 and the older versions in segment 0's row; VS-17: the committed offset
    is answered after a reopen (what the reopened store finds in its segments is VS-14's, the next test)."""
    store = _three_versions_committed(kit)
    dump = store.dump()["default"]
    assert dump == {i64(0) + "6b": "0000000000000009" "0000000000000001" "000000000000000500000002"
                    "000000000000000100000001" "61" "6263", FF8 + "6b": i64(9) + "78"}
    store.close()
    again = _open(kit, ROCKSDB, interval=100)
    assert again.committed() == 3


@rules("VS-14")
def test_rows_survive_a_reopen_and_are_found_again(kit: Kit) -> None:
    """VS-14: reopened, the store finds the versions of segment 0 again."""
    _three_versions_committed(kit).close()
    again = _open(kit, ROCKSDB, interval=100)
    assert get(again, "6b", 2) == rec("61", 1, 5) and get(again, "6b", 6) == rec("6263", 5, 9)


@rules("VS-15", "VS-16")
@BACKENDS
def test_restore_uses_the_end_of_batch_stream_time(kit: Kit, backend: str) -> None:
    records = [record("6b", "70", 100), record("6b", "71", 120), record("6b", "72", 95), record("6b", "73", 250)]
    whole = _open(kit, backend, interval=100, name="whole")
    batched = _open(kit, backend, interval=100, name="batched")
    whole.restore(records, batch_size=10)
    batched.restore(records, batch_size=3)
    p, q, s = rec("70", 100, 120), rec("71", 120, 250), rec("73", 250)
    assert versions(whole, "6b") == [s, q, p]
    assert versions(batched, "6b") == [s, q, p, rec("72", 95, 100)]
    assert whole.changelog() == []


@rules("VS-18", "VS-19")
@BACKENDS
def test_every_write_is_logged_and_a_refused_one_is_not(kit: Kit, backend: str) -> None:
    store = _open(kit, backend)
    put(store, "6b", "61", 500)
    assert put(store, "6b", "62", 1) == NOT_PUT
    store.ok("versioned_store.delete", key="6b", timestamp=2)
    assert store.refused("versioned_store.put", key="6b", value="63", timestamp=-1)
    assert store.refused("versioned_store.put", key=None, value="63", timestamp=600)
    assert store.changelog() == [record("6b", "61", 500), record("6b", "62", 1), record("6b", None, 2)]
    assert versions(store, "6b") == [rec("61", 500)]


@pytest.mark.kstate_level("hardened")
@rules("VS-40")
@BACKENDS
def test_a_put_the_changelog_refuses_changes_nothing(kit: Kit, backend: str) -> None:
    store = _open(kit, backend)
    assert store.refused("versioned_store.put", key="6b", value="61", timestamp=-5)  # no negative record timestamps
    assert get(store, "6b") is None and get(store, "6b", -5) is None and versions(store, "6b") == []
    assert store.changelog() == []


@rules("VS-20")
def test_in_memory_store_manages_no_offsets(kit: Kit) -> None:
    store = _open(kit, "memory")
    put(store, "6b", "61", 1)
    store.commit(5)
    assert store.committed() is None and not store.info["manages_offsets"]


@rules("VS-21", "VS-37")
@BACKENDS
def test_other_operations_and_a_closed_store_are_refused(kit: Kit, backend: str) -> None:
    store = _open(kit, backend)
    assert store.refused("store.put", key="6b", value="61")
    assert store.refused("store.get", key="6b")
    store.close()
    assert store.refused("versioned_store.get", key="6b")


@rules("VS-4", "VS-23")
def test_the_history_retention_is_required(kit: Kit) -> None:
    kit.require(VKV, ROCKSDB)
    refused = kit.open_refused(VKV, ROCKSDB, options={})
    assert "history_retention_ms" in refused["error"]["message"]
    assert "error" in kit.open_refused(VKV, ROCKSDB, options={"history_retention_ms": -1})
    assert not (kit.state_dir / "app").exists()


@pytest.mark.kstate_level("hardened")
@rules("VS-1", "KV-23")
@pytest.mark.parametrize("short_key", [b"k", b"\x00\x00\x00", b"\x7f" * 7],
                         ids=["k", "3-zero-bytes-before-segment-0", "7-bytes"])
def test_a_row_shorter_than_a_segment_id_refuses_the_open_and_changes_nothing(kit: Kit, short_key: bytes) -> None:
    """Every row starts with an 8-byte segment id (VER-1): a shorter key, written into the closed database, refuses
    the open as corrupt before anything is written; the open ends (``b"k"`` once made it seek for ever)."""
    kit.require(VKV, ROCKSDB)
    store = _open(kit, ROCKSDB)
    put(store, "61", "78", 5)
    store.commit(3)
    store.close()
    raw_rocksdb.put_rows(kit.state_dir / "app" / "0_0" / "rocksdb" / "store", {"default": {short_key: b"x"}})
    before = store_digest(kit.state_dir)
    out = kit.open_refused(VKV, ROCKSDB, options={"history_retention_ms": 100, "segment_interval_ms": 10})
    assert "error" in out, f"a versioned store opened over the row {short_key.hex()}: {out}"
    assert store_digest(kit.state_dir) == before, "the refused open changed the state directory"


@pytest.mark.kstate_level("hardened")
@rules("VS-1", "KV-23")
@pytest.mark.parametrize("short_key", [b"k", b"\x7f" * 7], ids=["k", "7-bytes"])
def test_a_short_row_behind_hundreds_of_versioned_rows_still_refuses_the_open(kit: Kit, short_key: bytes) -> None:
    """VS-1 holds for every row, not only for the first ones an implementation happens to look at: 300 well-formed
    rows of segment 0 sort before the short key, and the open is still refused without a change."""
    kit.require(VKV, ROCKSDB)
    store = _open(kit, ROCKSDB)
    put(store, "61", "78", 5)
    put(store, "61", "79", 6)  # the version [5, 6) moves to segment 6 // 10 = 0
    store.commit(3)
    store.close()
    path = kit.state_dir / "app" / "0_0" / "rocksdb" / "store"
    segment_zero = bytes(8)
    (row,) = [v for k, v in raw_rocksdb.column_family_maps(path)["default"].items() if k.startswith(segment_zero)]
    rows = {segment_zero + f"k{n:03d}".encode(): row for n in range(300)}
    raw_rocksdb.put_rows(path, {"default": {**rows, short_key: b"x"}})
    before = store_digest(kit.state_dir)
    out = kit.open_refused(VKV, ROCKSDB, options={"history_retention_ms": 100, "segment_interval_ms": 10})
    assert "error" in out, f"a versioned store opened over the row {short_key.hex()} behind 300 others: {out}"
    assert store_digest(kit.state_dir) == before, "the refused open changed the state directory"


@rules("VS-24", "VS-32")
def test_the_changelog_keeps_history_for_a_day_more(kit: Kit) -> None:
    if not kit.implementation.supports("changelog.topic_config"):
        pytest.skip("no changelog.topic_config")
    out = kit.implementation.call("changelog.topic_config", {"store_type": VKV, "history_retention_ms": 3_600_000})
    assert out["config"]["min.compaction.lag.ms"] == str(3_600_000 + 86_400_000)


@rules("VS-30", "VS-31", "VS-33")
def test_a_key_value_store_migrates_by_wipe_and_restore(kit: Kit) -> None:
    old = kit.open(KV, ROCKSDB, name="prices")
    old.put("6b", "32")
    old.close()
    kit.implementation.call("store.wipe", {"state_dir": str(kit.state_dir), "name": "prices", "application_id": "app",
                                  "task_id": "0_0"})
    store = _open(kit, ROCKSDB, retention=3_600_000, interval=None, name="prices")
    store.restore([record("6b", "31", 100), record("6b", "32", 200)])
    assert get(store, "6b", 150) == rec("31", 100, 200) and get(store, "6b") == rec("32", 200)


@rules("VS-35", "VS-36")
@BACKENDS
def test_null_keys_and_reserved_segments_are_refused(kit: Kit, backend: str) -> None:
    store = _open(kit, backend)
    assert store.refused("versioned_store.get", key=None)
    put(store, "6b", "", 5)
    assert get(store, "6b") == rec("", 5)  # an empty value is a value
    other = _open(kit, backend, name="neg", logging=False)
    assert put(other, "6b", "61", -15) == -1
    assert put(other, "6b", "62", -5) == -1  # "61" moves to segment -5 / 10 = 0
    assert other.refused("versioned_store.put", key="6b", value="63", timestamp=-25)
    assert get(other, "6b", -6) == rec("61", -15, -5)


@rules("VS-36")
@BACKENDS
def test_a_version_moved_to_a_negative_segment_is_refused(kit: Kit, backend: str) -> None:
    store = _open(kit, backend, logging=False)
    assert put(store, "6b", "61", -35) == -1  # reaches only the latest-value store
    assert store.refused("versioned_store.put", key="6b", value="62", timestamp=-25)  # "61" would go to -25 / 10 = -2
    assert get(store, "6b") == rec("61", -35) and versions(store, "6b") == [rec("61", -35)]


@rules("VS-38")
def test_writes_advance_the_position(kit: Kit) -> None:
    store = _open(kit, ROCKSDB)
    store.ok("store.set_context", timestamp=5, topic="in", partition=0, offset=7)
    put(store, "6b", "61", 5)
    store.commit(0)
    position = store.dump()["offsets"]["706f736974696f6e"]  # the "position" entry (OFF-2)
    assert "696e" + "00000001" + "00000000" + i64(7) in position  # topic "in", one partition: 0 at offset 7


@rules("VS-25", "VS-26", "VS-27", "VS-28", "VS-29")
@BACKENDS
def test_the_headers_variant_keeps_headers(kit: Kit, backend: str) -> None:
    store = _open(kit, backend, store_type=VKVH)
    headers: list[list[Any]] = [["h", "31"], ["h", None]]
    assert put(store, "6b", "76", 5, headers=headers) == -1
    assert put(store, "6b", "77", 3) == 5
    assert get(store, "6b", 6) == {**rec("76", 5), "headers": headers}
    assert get(store, "6b", 4) == {**rec("77", 3, 5), "headers": []}
    assert store.changelog() == [record("6b", "76", 5, headers), record("6b", "77", 3, [])]
    again = _open(kit, backend, store_type=VKVH, name="again")
    again.restore([record("6b", "76", 5, headers)])
    assert get(again, "6b") == {**rec("76", 5), "headers": headers}
