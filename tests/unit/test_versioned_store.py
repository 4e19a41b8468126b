"""The versioned key-value stores (spec/versioned-store.md, VS-*): RocksDB rows against the codecs, both backends,
restart, crash, restore, offsets, the headers variant, the migration function, refusals."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from kstate.app.migration import MigrationResult, migrate_to_versioned, versioned_compaction_lag_ms
from kstate.codecs import changelog as cl
from kstate.codecs import versioned as v
from kstate.codecs.header_values import encode_aggregation_with_headers
from kstate.codecs.primitives import INT64_MIN, encode_int64
from kstate.codecs.store_types import StoreType
from kstate.errors import InvalidArgumentError, KStateError, NullKeyError
from kstate.storage_files import directory_digest
from kstate.stores.api import Backend, InvalidStateStoreError, ProcessorStateError, StoreCorruptedError, TopicPartition
from kstate.stores.changelogging import ChangeLoggingVersionedKeyValueBytesStore, RecordContextHolder
from kstate.stores.factory import open_bytes_store, open_kv_store, task_directory
from kstate.stores.restore import restore
from kstate.stores.type_check import WrongStoreTypeError
from kstate.stores.versioned import (
    InMemoryVersionedStore,
    RocksDBVersionedStore,
    VersionedRecord,
)
from kstate_conformance.raw_rocksdb import put_rows

NOT_PUT = INT64_MIN
TP = TopicPartition("app-v-changelog", 0)

Opener = Callable[..., RocksDBVersionedStore]


@pytest.fixture(params=[Backend.ROCKSDB, Backend.MEMORY], ids=lambda b: b.value)
def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    """Open a versioned store of the parametrized backend; every opened store is closed at the end."""
    opened: list[RocksDBVersionedStore] = []
    names = iter(range(1000))

    def opener(history_retention_ms: int = 100, segment_interval_ms: int | None = 10, **kwargs: Any) -> RocksDBVersionedStore:
        options: dict[str, Any] = {"history_retention_ms": history_retention_ms}
        if segment_interval_ms is not None:
            options["segment_interval_ms"] = segment_interval_ms
        store = open_bytes_store(kwargs.pop("store_type", StoreType.VERSIONED_KV), request.param,
                                 name=f"v{next(names)}", state_dir=tmp_path, options=options, **kwargs)
        assert isinstance(store, RocksDBVersionedStore)
        opened.append(store)
        return store

    yield opener
    for store in opened:
        store.close()


def _rocksdb(tmp_path: Path, **options: Any) -> RocksDBVersionedStore:
    store = open_bytes_store(StoreType.VERSIONED_KV, Backend.ROCKSDB, name="v", state_dir=tmp_path,
                             options={"history_retention_ms": 100, "segment_interval_ms": 10, **options})
    assert isinstance(store, RocksDBVersionedStore)
    return store


def _rows(store: RocksDBVersionedStore) -> dict[bytes, bytes]:
    return dict(store.column_family_rows()["default"])


# --- put, get, get as of, delete (VS-6 .. VS-10) -------------------------------------------------------------------


def test_put_returns_valid_to_and_reads_answer_versions(open_store: Opener) -> None:
    store = open_store()
    assert store.put(b"k", b"a", 1) == -1  # VS-7: latest
    assert store.put(b"k", b"bc", 5) == -1
    assert store.put(b"k", b"x", 3) == 5  # out of order: validTo is the next version
    assert store.put(b"k", b"y", 3) == 5  # same timestamp: replaced
    assert store.get(b"k") == VersionedRecord(b"bc", 5)  # VS-8: no validTo
    assert store.get(b"k", 4) == VersionedRecord(b"y", 3, 5)  # VS-9
    assert store.get(b"k", 0) is None
    assert store.get(b"k", 99) == VersionedRecord(b"bc", 5)
    assert store.delete(b"k", 7) == VersionedRecord(b"bc", 5)  # VS-10: the version valid at 7, before the delete
    assert store.get(b"k") is None and store.get(b"k", 8) is None
    assert store.get(b"k", 6) == VersionedRecord(b"bc", 5, 7)
    assert store.delete(b"absent", 7) is None


def test_an_expired_write_is_refused_and_changes_nothing(open_store: Opener) -> None:
    store = open_store(history_retention_ms=100)
    store.put(b"k", b"a", 500)
    before = store.get_versions(b"k")
    assert store.put(b"k", b"old", 399) == NOT_PUT  # VS-6: 399 < 500 - 100
    assert store.delete(b"k", 399) is None
    assert store.observed_stream_time == 500 and store.get_versions(b"k") == before
    assert store.put(b"k", b"edge", 400) == 500  # exactly the grace bound is accepted


def test_the_stream_time_is_store_wide(open_store: Opener) -> None:
    store = open_store(history_retention_ms=100, segment_interval_ms=10)
    store.put(b"k1", b"a", 1)
    store.put(b"k1", b"b", 50)  # "a" moves to segment 5 with validTo 50
    assert store.get(b"k1", 10) == VersionedRecord(b"a", 1, 50)
    store.put(b"k2", b"z", 1000)  # VS-5: another key advances the one stream time; VS-13: segment 5 expires
    assert store.get(b"k1", 10) is None
    assert store.get_versions(b"k1") == [VersionedRecord(b"b", 50)]  # VS-34: the latest value never expires
    assert store.put(b"k1", b"late", 800) == NOT_PUT


def test_versions_query_orders_and_bounds(open_store: Opener) -> None:
    store = open_store(history_retention_ms=1000, segment_interval_ms=10)
    for ts, value in ((1, b"a"), (15, b"b"), (30, b"c")):
        store.put(b"k", value, ts)
    store.delete(b"k", 40)
    store.put(b"k", b"d", 50)
    a, b, c, d = (VersionedRecord(b"a", 1, 15), VersionedRecord(b"b", 15, 30), VersionedRecord(b"c", 30, 40),
                  VersionedRecord(b"d", 50))
    assert store.get_versions(b"k") == [d, c, b, a]  # VS-12: any = descending
    assert store.get_versions(b"k", order="descending") == [d, c, b, a]
    assert store.get_versions(b"k", order="ascending") == [a, b, c, d]
    # VS-11: validFrom <= to and validTo > from, in the segments up to segmentId(to) only: "b" (valid 15..30) is
    # filed in segment 3 by its validTo, so a query to 29 (segment 2) does not see it, one to 30 does.
    assert store.get_versions(b"k", 15, 29, "ascending") == []
    assert store.get_versions(b"k", 15, 30, "ascending") == [b]
    assert store.get_versions(b"k", 14, 15, "ascending") == [a]
    assert store.get_versions(b"k", 41, 49) == []  # the tombstone is not a record
    assert store.get_versions(b"k", 60, 70) == [d]  # the latest: from is not checked
    with pytest.raises(InvalidArgumentError, match="order"):
        store.get_versions(b"k", order="sideways")


def test_past_history_retention_the_versions_query_sees_only_the_latest(open_store: Opener) -> None:
    store = open_store(history_retention_ms=100, segment_interval_ms=1000)
    store.put(b"k", b"a", 1)
    store.put(b"k", b"b", 2)
    store.put(b"k", b"c", 150)  # T = 150; segment 0 stays live (expiry is by whole segments)
    assert store.get_versions(b"k", to_ms=49) == []  # VS-11: 49 < 150 - 100: latest store only, c is too new
    assert store.get_versions(b"k", to_ms=50) == [VersionedRecord(b"b", 2, 150), VersionedRecord(b"a", 1, 2)]
    assert store.get(b"k", 1) is None  # VS-9: expired get, though segment 0 still holds "a"


def test_java_truncating_division_files_a_negative_valid_to_in_segment_zero(tmp_path: Path) -> None:
    store = _rocksdb(tmp_path)
    store.put(b"k", b"a", -15)  # only the latest store: accepted (VS-36)
    store.put(b"k", b"b", -5)  # "a" moves to segmentId(-5) = -5 / 10 = 0 (floor would be -1)
    assert _rows(store)[encode_int64(0) + b"k"] == v.new_segment_value_with_record(b"a", -15, -5).serialize()
    with pytest.raises(KStateError, match="reserved"):
        store.put(b"k", b"x", -25)  # needs segment -2 (VS-36)
    assert store.observed_stream_time == -1 and store.get(b"k", -6) == VersionedRecord(b"a", -15, -5)
    store.close()


# --- the rows of the RocksDB store (VS-1 .. VS-3) --------------------------------------------------------------------


def test_rows_are_the_codecs_rows(tmp_path: Path) -> None:
    store = _rocksdb(tmp_path, segment_interval_ms=100)
    for ts, value in ((1, b"a"), (5, b"bc"), (9, b"x")):
        store.put(b"k", value, ts)
    rows = _rows(store)
    # kafka-formats 5.3's worked example: "a"@1 and "bc"@5 in one segment row whose next is 9.
    assert rows[encode_int64(0) + b"k"].hex() == (
        "0000000000000009" "0000000000000001" "000000000000000500000002" "000000000000000100000001" "61" "6263")
    assert rows[v.latest_value_key(b"k")] == v.encode_latest_value(b"x", 9)  # VS-2
    assert set(rows) == {encode_int64(0) + b"k", b"\xff" * 8 + b"k"}
    store.close()


def test_random_writes_leave_exactly_the_rows_the_per_key_procedure_computes(tmp_path: Path) -> None:
    """The store's rows are the union of the per-key procedure's rows (VER-25..VER-34) with the store-wide stream time
    (VS-5) and store-wide expiry (VS-13)."""
    rng = random.Random(11)
    retention, interval = 300, 40
    store = _rocksdb(tmp_path, history_retention_ms=retention, segment_interval_ms=interval)
    models = {key: v.KeyVersions(store.config) for key in (b"a", b"b", b"c")}
    stream_time = -1
    for _ in range(400):
        key = rng.choice(list(models))
        ts = rng.randrange(max(0, stream_time - retention - 20), stream_time + 60)
        value = None if rng.random() < 0.15 else bytes([rng.randrange(256)]) * rng.randrange(3)
        if ts < stream_time - retention:
            expected = NOT_PUT
        else:
            stream_time = max(stream_time, ts)
            models[key].observed_stream_time = stream_time
            expected = models[key].apply_put(value, ts)
        assert store.put(key, value, ts) == expected
    live = store.segments.min_live_segment_id(stream_time)
    expected_rows = {physical: row for key, model in models.items() for physical, row in model.physical_rows(key)
                     if physical[:8] == b"\xff" * 8 or int.from_bytes(physical[:8], "big") >= live}
    assert _rows(store) == expected_rows
    store.close()


# --- restart, crash, offsets (VS-14, VS-17) -------------------------------------------------------------------------


def test_a_reopened_store_answers_its_history(tmp_path: Path) -> None:
    store = _rocksdb(tmp_path)
    for ts, value in ((1, b"a"), (15, b"b"), (27, b"c")):
        store.put(b"k", value, ts)
    answers = [store.get(b"k", t) for t in range(0, 30)]
    store.commit({TP: 7})
    store.close()
    reopened = _rocksdb(tmp_path)
    assert reopened.segment_ids() == [1, 2]  # VS-14: found again
    assert reopened.observed_stream_time == -1  # VS-5: not persisted
    assert [reopened.get(b"k", t) for t in range(0, 30)] == answers
    assert reopened.committed_offset(TP) == 7
    reopened.close()


def test_a_crash_loses_uncommitted_rows_and_is_detected(tmp_path: Path) -> None:
    store = _rocksdb(tmp_path)
    store.put(b"k", b"a", 1)
    store.commit({TP: 0})
    store.put(b"k", b"b", 20)
    store.simulate_crash()
    with pytest.raises(InvalidStateStoreError):
        store.get(b"k")
    with pytest.raises(ProcessorStateError):
        _rocksdb(tmp_path)
    reopened = open_bytes_store(StoreType.VERSIONED_KV, Backend.ROCKSDB, name="v", state_dir=tmp_path,
                                ignore_invalid_state=True, options={"history_retention_ms": 100})
    assert isinstance(reopened, RocksDBVersionedStore)
    assert reopened.get(b"k") == VersionedRecord(b"a", 1) and reopened.committed_offset(TP) == 0
    reopened.close()


@pytest.mark.parametrize("short_key", [b"k", b"\x00\x00\x00", b"\x7f" * 7, b"\x00" * 6 + b"\x01"],
                         ids=["k", "3-zero-bytes", "7-bytes", "7-zeros-then-1"])
def test_a_row_shorter_than_a_segment_prefix_is_a_typed_corruption_error_not_a_hang(
        tmp_path: Path, short_key: bytes) -> None:
    """VS-14: a row whose key cannot hold the 8-byte segment id (``b"k"`` reads as segment 107 and sorts after the
    next seek's start, so the seek finds it again for ever) refuses the open as corrupt, before anything is
    written: the status stays CLOSED, and no file changes."""
    store = _rocksdb(tmp_path)
    store.put(b"key", b"a", 1)
    store.commit({TP: 0})
    store.close()
    path = tmp_path / "app" / "0_0" / "rocksdb" / "v"
    put_rows(path, {"default": {short_key: b"x"}})
    before = directory_digest(tmp_path)
    # The type check of LAY-14 meets the short row first; behind hundreds of well-formed rows, the segment scan
    # does (the conformance suite's test_a_short_row_behind_hundreds_of_versioned_rows_still_refuses_the_open).
    with pytest.raises((StoreCorruptedError, WrongStoreTypeError), match=r"segment|versioned rows"):
        _rocksdb(tmp_path)
    assert directory_digest(tmp_path) == before


def test_a_key_value_directory_with_a_short_key_opened_as_versioned_is_refused_not_a_hang(tmp_path: Path) -> None:
    """VS-14, issue 25: ``b"k"`` in a key-value store, the directory then opened as versioned: a typed refusal,
    nothing written (the open looped for ever)."""
    kv = open_kv_store(StoreType.KEY_VALUE, Backend.ROCKSDB, name="v", state_dir=tmp_path)
    kv.put(b"k", b"v")
    kv.close()
    before = directory_digest(tmp_path)
    with pytest.raises(ProcessorStateError):
        _rocksdb(tmp_path)
    assert directory_digest(tmp_path) == before


def test_in_memory_store_keeps_no_offsets_and_forgets_on_close() -> None:
    store = InMemoryVersionedStore("m", history_retention_ms=10)
    store.put(b"k", b"a", 1)
    store.commit({TP: 3})
    assert not store.manages_offsets() and store.committed_offset(TP) is None and not store.persistent()
    store.close()
    with pytest.raises(InvalidStateStoreError):
        store.get(b"k")


# --- restore (VS-15, VS-16) ----------------------------------------------------------------------------------------


def _records(*items: tuple[bytes, bytes | None, int]) -> list[cl.ChangelogRecord]:
    return [cl.ChangelogRecord(k, val, ts, ()) for k, val, ts in items]


def test_restore_uses_the_stream_time_at_the_end_of_each_batch(open_store: Opener) -> None:
    # Worked by hand from VS-15 (interval 100, retention 100): r@95 comes before "p"'s row (min 100). In one batch
    # the end-of-batch stream time is 250 and 100 < 250 - 100, so r is not put; in batches of 3 it is (T = 120).
    records = _records((b"k", b"p", 100), (b"k", b"q", 120), (b"k", b"r", 95), (b"k", b"s", 250))
    whole, batched = open_store(segment_interval_ms=100), open_store(segment_interval_ms=100)
    restore(whole, StoreType.VERSIONED_KV, records, batch_size=10)
    restore(batched, StoreType.VERSIONED_KV, records, batch_size=3)
    p, q, s = VersionedRecord(b"p", 100, 120), VersionedRecord(b"q", 120, 250), VersionedRecord(b"s", 250)
    assert whole.get_versions(b"k") == [s, q, p]
    assert batched.get_versions(b"k") == [s, q, p, VersionedRecord(b"r", 95, 100)]
    assert whole.observed_stream_time == batched.observed_stream_time == 250


def test_restore_skips_records_older_than_the_running_grace_period(open_store: Opener) -> None:
    store = open_store()
    restore(store, StoreType.VERSIONED_KV, _records((b"k", b"a", 500), (b"k", b"old", 300), (b"k", None, 600)))
    assert store.get(b"k") is None and store.get(b"k", 550) == VersionedRecord(b"a", 500, 600)
    assert store.get_versions(b"k") == [VersionedRecord(b"a", 500, 600)]


def test_restore_with_logging_reaches_the_store_and_logs_nothing(open_store: Opener) -> None:
    sink: list[cl.ChangelogRecord] = []
    logged = ChangeLoggingVersionedKeyValueBytesStore(open_store(), None, RecordContextHolder(), sink)
    restore(logged, StoreType.VERSIONED_KV, _records((b"k", b"a", 1)))
    assert sink == [] and logged.get(b"k") == VersionedRecord(b"a", 1)
    with pytest.raises(InvalidArgumentError):
        logged.restore_batch([(b"k", b"a")])  # VS-16: a versioned store restores records, not pairs


# --- change logging, refusals (VS-18, VS-19, VS-35) -----------------------------------------------------------------


def test_every_put_and_delete_is_logged_at_the_version_timestamp(open_store: Opener) -> None:
    sink: list[cl.ChangelogRecord] = []
    store = ChangeLoggingVersionedKeyValueBytesStore(open_store(), None, RecordContextHolder(), sink)
    store.put(b"k", b"a", 500)
    assert store.put(b"k", b"expired", 1) == NOT_PUT
    store.delete(b"k", 2)
    store.delete(b"k", 600)
    assert sink == _records((b"k", b"a", 500), (b"k", b"expired", 1), (b"k", None, 2), (b"k", None, 600))


@pytest.mark.parametrize(("key", "value", "timestamp", "error"), [
    (None, b"v", 1, NullKeyError), ("k", b"v", 1, InvalidArgumentError), (b"k", 7, 1, InvalidArgumentError),
    (b"k", b"v", "1", InvalidArgumentError), (b"k", b"v", 2**63, InvalidArgumentError), (b"k", b"v", -1, KStateError),
])
def test_a_refused_write_reaches_neither_store_nor_changelog(open_store: Opener, key: Any, value: Any, timestamp: Any,
                                                              error: type[Exception]) -> None:
    sink: list[cl.ChangelogRecord] = []
    inner = open_store()
    inner.put(b"k", b"first", 5)
    store = ChangeLoggingVersionedKeyValueBytesStore(inner, None, RecordContextHolder(), sink)
    with pytest.raises(error):
        store.put(key, value, timestamp)
    if value == b"v":  # the bad field is the key or the timestamp: a delete is refused as well
        with pytest.raises(error):
            store.delete(key, timestamp)
    assert sink == [] and inner.get_versions(b"k") == [VersionedRecord(b"first", 5)] and inner.observed_stream_time == 5


def test_reads_refuse_bad_input(open_store: Opener) -> None:
    store = open_store()
    with pytest.raises(NullKeyError):
        store.get(None)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="as_of"):
        store.get(b"k", "late")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="from_ms"):
        store.get_versions(b"k", from_ms=1.5)  # type: ignore[arg-type]


def test_options_are_checked_by_name(tmp_path: Path) -> None:
    with pytest.raises(KStateError, match="history_retention_ms"):
        open_bytes_store(StoreType.VERSIONED_KV, Backend.ROCKSDB, name="v", state_dir=tmp_path, options={})
    with pytest.raises(KStateError, match="historyRetention"):
        open_bytes_store(StoreType.VERSIONED_KV, Backend.MEMORY, name="v", options={"history_retention_ms": -1})
    with pytest.raises(KStateError, match="segmentInterval"):
        open_bytes_store(StoreType.VERSIONED_KV, Backend.MEMORY, name="v",
                         options={"history_retention_ms": 1, "segment_interval_ms": 0})
    assert not (tmp_path / "app").exists()
    default = open_bytes_store(StoreType.VERSIONED_KV, Backend.MEMORY, name="v", options={"history_retention_ms": 600_000})
    assert isinstance(default, RocksDBVersionedStore) and default.segment_interval == 60_000  # VER-23


# --- the headers variant (VS-25 .. VS-29) ---------------------------------------------------------------------------


def test_headers_variant_stores_logs_and_restores_headers(open_store: Opener) -> None:
    sink: list[cl.ChangelogRecord] = []
    inner = open_store(store_type=StoreType.VERSIONED_KV_WITH_HEADERS)
    store = ChangeLoggingVersionedKeyValueBytesStore(inner, None, RecordContextHolder(), sink)
    headers = [("h", b"1"), ("h", None)]
    assert store.put(b"k", encode_aggregation_with_headers(b"v", headers), 5) == -1
    store.delete(b"k", 9)
    assert inner.get(b"k", 6) == VersionedRecord(b"\x10\x04\x02h\x021\x02h\x01v", 5, 9)  # VS-25: hsize 8 = zig-zag 0x10
    assert sink == [cl.ChangelogRecord(b"k", b"v", 5, (("h", b"1"), ("h", None))), cl.ChangelogRecord(b"k", None, 9, ())]
    again = open_store(store_type=StoreType.VERSIONED_KV_WITH_HEADERS)
    restore(again, StoreType.VERSIONED_KV_WITH_HEADERS, sink)  # VS-27
    assert again.get_versions(b"k") == inner.get_versions(b"k")


# --- migration (VS-30 .. VS-33) ---------------------------------------------------------------------------------------


class FakeAdmin:
    def __init__(self, config: Mapping[str, str] | None = None) -> None:
        self.config = dict(config or {"cleanup.policy": "compact"})
        self.calls: list[tuple[str, str, dict[str, str]]] = []

    def describe_topic_config(self, topic: str) -> dict[str, str]:
        self.calls.append(("describe", topic, {}))
        return dict(self.config)

    def alter_topic_config(self, topic: str, config: Mapping[str, str]) -> None:
        self.calls.append(("alter", topic, dict(config)))
        self.config.update(config)


def test_migration_wipes_sets_the_topic_and_restores_a_versioned_store(tmp_path: Path) -> None:
    kv = open_kv_store(StoreType.KEY_VALUE, Backend.ROCKSDB, name="prices", state_dir=tmp_path, application_id="shop")
    kv.put(b"k", b"2")
    kv.close()
    (task_directory(tmp_path, "shop", "0_0") / "other.position").write_text("keep")
    # offsets with a gap, as compaction leaves them
    changelog = list(zip((0, 4, 9), _records((b"k", b"1", 100), (b"k", b"2", 200), (b"j", b"x", 150)), strict=True))
    admin = FakeAdmin()
    stopped: list[bool] = []
    result = migrate_to_versioned(store_name="prices", history_retention_ms=3_600_000, changelog_records=changelog,
                                  admin=admin, state_dir=tmp_path, application_id="shop",
                                  stop=lambda: stopped.append(True), batch_size=2)
    assert isinstance(result, MigrationResult) and stopped == [True]
    assert admin.calls == [("describe", "shop-prices-changelog", {}),
                           ("alter", "shop-prices-changelog", {"min.compaction.lag.ms": str(3_600_000 + 86_400_000)})]
    assert admin.config["cleanup.policy"] == "compact" and result.restored.records == 3
    assert (task_directory(tmp_path, "shop", "0_0") / "other.position").read_text() == "keep"
    store = open_bytes_store(StoreType.VERSIONED_KV, Backend.ROCKSDB, name="prices", state_dir=tmp_path,
                             application_id="shop", options={"history_retention_ms": 3_600_000})
    assert isinstance(store, RocksDBVersionedStore)
    assert store.get(b"k", 150) == VersionedRecord(b"1", 100, 200) and store.get(b"j") == VersionedRecord(b"x", 150)
    assert store.committed_offset(TopicPartition("shop-prices-changelog", 0)) == 9
    store.close()


def test_a_refused_migration_changes_nothing(tmp_path: Path) -> None:
    kv = open_kv_store(StoreType.KEY_VALUE, Backend.ROCKSDB, name="prices", state_dir=tmp_path, application_id="shop")
    kv.put(b"k", b"2")
    kv.close()
    admin = FakeAdmin()
    with pytest.raises(InvalidArgumentError, match="history_retention_ms"):
        migrate_to_versioned(store_name="prices", history_retention_ms=-1, changelog_records=[], admin=admin,
                             state_dir=tmp_path, application_id="shop")
    assert admin.calls == []
    kv = open_kv_store(StoreType.KEY_VALUE, Backend.ROCKSDB, name="prices", state_dir=tmp_path, application_id="shop")
    assert kv.get(b"k") == b"2"
    kv.close()
    assert versioned_compaction_lag_ms(2**63 - 1) == 2**63 - 1  # saturating (VS-24)
