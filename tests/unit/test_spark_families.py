"""The Spark oracle's versioned, window and session semantics (kstate.spark.semantics, each family's
kstate.spark.<family>_semantics): changelogs written by hand,
store directories written with the codecs and rocksdict, expected entries worked out by hand in each test's
comments, and a mutated store the oracle must find every difference in. One local SparkSession for the module."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kstate.codecs import header_values, versioned
from kstate.codecs.changelog import segmented_changelog_key, window_changelog_key
from kstate.codecs.store_types import Family, StoreType
from kstate.spark.semantics import (
    AuditSetupError,
    FamilyParameters,
    actual_frame,
    check_parameters,
    compare_changelog,
    expected_entries,
    read_store_entries,
    semantics_for,
)

pytest.importorskip("pyspark")
pytestmark = [pytest.mark.spark, pytest.mark.slow]

Record = tuple[int, bytes, bytes | None, int, list[tuple[str, bytes | None]]]


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    from kstate.spark.session import spark_session

    session = spark_session("local[2]", app_name="kstate-unit-families",
                            conf={"spark.ui.showConsoleProgress": "false", "spark.sql.shuffle.partitions": "2"})
    yield session


def _changelog(spark: Any, partitions: dict[int, list[Record]]) -> Any:
    """The Kafka source's columns; offsets in list order per partition."""
    from kstate.spark.kafka_source import SCHEMA

    rows = [("t", partition, offset, timestamp, 1, key, value, headers)
            for partition, records in partitions.items()
            for offset, (_, key, value, timestamp, headers) in enumerate(records)]
    return spark.createDataFrame(rows, SCHEMA)


def _write_db(path: Path, families: dict[str, dict[bytes, bytes]]) -> None:
    import rocksdict

    path.mkdir(parents=True)
    options = rocksdict.Options(raw_mode=True)
    options.create_if_missing(True)
    db: Any = rocksdict.Rdict(str(path), options)
    handles = []
    for cf, rows in families.items():
        handle = db if cf == "default" else db.create_column_family(cf, rocksdict.Options(raw_mode=True))
        for key, value in rows.items():
            handle[key] = value
        handles.append(handle)
    for handle in handles:
        if handle is not db:
            handle.close()
    del handles, handle
    db.close()
    del db
    gc.collect()


def _kinds(found: Any) -> list[tuple[int, bytes, str, str]]:
    return [(d.partition, d.key, d.entry, d.kind) for d in found.differences]


def _mutated_differences(spark: Any, log: dict[int, list[Record]], store_type: StoreType, params: FamilyParameters,
                         store_rows: Callable[[bool], list[Any]], entries: int) -> Any:
    """Compare the changelog ``log`` with the store ``store_rows(mutated)`` writes, first as the changelog leaves it
    (``entries`` on both sides, no difference), then mutated; the mutated comparison is returned to be checked."""
    changelog = _changelog(spark, log)
    for mutated in (False, True):
        rows = store_rows(mutated)
        found = compare_changelog(spark, changelog, store_type, params, actual_frame(spark, store_type, rows))
        if not mutated:
            assert (found.expected_entries, found.actual_entries, found.differences) == (entries, entries, [])
    return found


# --- versioned ------------------------------------------------------------------------------------------

HISTORY = 20
_VERSIONED_LOG: dict[int, list[Record]] = {
    0: [(0, b"k1", b"a", 10, []),
        (0, b"k1", b"b", 20, []),
        (0, b"k5", b"m", 21, []),
        (0, b"k5", None, 25, []),     # m [21,25) ends exactly at 45 - 20: no longer queryable, not in the store
        (0, b"k2", b"x", 5, []),      # 5 is not below 25 - 20: put (VER-26 boundary)
        (0, b"k1", None, 30, []),     # tombstone: ends b at 30
        (0, b"k1", b"c", 40, []),
        (0, b"k2", b"y", 30, []),
        (0, b"k2", b"z", 15, []),     # 15 < 40 - 20: not put (VER-26), so x stays valid to 30
        (0, b"k1", b"c2", 40, []),    # same timestamp: replaces c
        (0, b"k3", b"q", 45, [])],    # stream time 45: versions with validTo <= 25 are no longer queryable
    1: [(1, b"k9", b"old", 1, []),
        (1, b"k9", None, 2, []),
        (1, b"k1", b"p1", 100, [])],  # stream time 100 in partition 1 only
}


def _versioned_store(root: Path, mutated: bool) -> dict[int, Path]:
    latest = versioned.latest_value_key
    seg = versioned.segment_key

    def row(value: bytes, valid_from: int, valid_to: int) -> bytes:
        return versioned.new_segment_value_with_record(value, valid_from, valid_to).serialize()

    k1_segment3 = versioned.new_segment_value_with_record(b"b", 20, 30)
    k1_segment3.insert_as_latest(30, 40, None)  # the tombstone gap [30, 40): not a version
    p0 = {
        latest(b"k1"): versioned.encode_latest_value(b"c" if mutated else b"c2", 40),
        latest(b"k2"): versioned.encode_latest_value(b"y", 30),
        seg(2, b"k1"): row(b"a", 10, 20),     # validTo 20 <= 25: kept on disk, not queryable, not compared
        seg(3, b"k1"): k1_segment3.serialize(),
        seg(3, b"k2"): row(b"x", 5, 29 if mutated else 30),
    }
    if not mutated:
        p0[latest(b"k3")] = versioned.encode_latest_value(b"q", 45)
    else:
        p0[latest(b"k4")] = versioned.encode_latest_value(b"never", 44)
    p1 = {latest(b"k1"): versioned.encode_latest_value(b"p1", 100), seg(0, b"k9"): row(b"old", 1, 2)}
    dirs = {0: root / "0_0" / "rocksdb" / "s", 1: root / "0_1" / "rocksdb" / "s"}
    _write_db(dirs[0], {"default": p0})
    _write_db(dirs[1], {"default": p1})
    return dirs


def test_versioned_history_per_key(spark: Any, tmp_path: Path) -> None:
    """VER-25/26/32: expected queryable versions of partition 0 are k1 b [20,30), k1 c2 [40,-), k2 x [5,30),
    k2 y [30,-), k3 q [45,-); of partition 1, k1 p1 [100,-)."""
    store_type = StoreType.VERSIONED_KV

    def store_rows(mutated: bool) -> list[Any]:
        dirs = _versioned_store(tmp_path / str(mutated), mutated)
        return [r for p, d in dirs.items() for r in read_store_entries(store_type, p, d)]

    found = _mutated_differences(spark, _VERSIONED_LOG, store_type, FamilyParameters(history_retention_ms=HISTORY),
                                 store_rows, 6)
    assert _kinds(found) == [(0, b"k1", "valid_from=40", "different value"),
                             (0, b"k2", "valid_from=5", "different valid_to"),
                             (0, b"k3", "valid_from=45", "missing"),
                             (0, b"k4", "valid_from=44", "unexpected")]
    assert found.counts == {"different valid_to": 1, "different value": 1, "missing": 1, "unexpected": 1}
    assert (found.differences[0].expected, found.differences[0].actual) == (b"c2".hex().upper(), b"c".hex().upper())
    assert (found.differences[1].expected, found.differences[1].actual) == ("30", "29")


# --- window ---------------------------------------------------------------------------------------------


def _wk(key: bytes, start: int, seqnum: int = 0) -> bytes:
    return window_changelog_key(key, start, seqnum)


def test_window_with_headers_retention_and_fields(spark: Any, tmp_path: Path) -> None:
    """Stream time 250 (largest window start), retention 100: windows starting above 150 are compared:
    A@180 ("v3", 185, []) and C@250 ("c", 260, [x=]); B@200 was deleted by a tombstone; A@0 and A@100 expired."""
    log: dict[int, list[Record]] = {0: [
        (0, _wk(b"A", 0), b"v1", 5, [("h", b"1")]),
        (0, _wk(b"A", 100), b"v2", 105, []),
        (0, _wk(b"A", 0), b"v1b", 7, [("h", None)]),
        (0, _wk(b"B", 200), b"b", 201, []),
        (0, _wk(b"B", 200), None, 202, []),
        (0, _wk(b"C", 250), b"c", 260, [("x", b"")]),
        (0, _wk(b"A", 180), b"v3", 185, []),
        (0, _wk(b"D", 150), b"d", 151, []),  # starts exactly at 250 - 100: expired, not in the store
    ]}
    store_type = StoreType.TIMESTAMPED_WINDOW_WITH_HEADERS
    cf = "keyValueWithTimestampAndHeaders"
    enc = header_values.encode_value_timestamp_headers

    def store_rows(mutated: bool) -> list[Any]:
        store = tmp_path / str(mutated) / "0_0" / "w"
        _write_db(store / "w.0", {cf: {_wk(b"A", 0): enc(b"v1b", 7, [("h", None)])}})  # type: ignore[dict-item]
        segment_100 = {_wk(b"A", 100): enc(b"v2", 105, []), _wk(b"A", 180): enc(b"v3", 186 if mutated else 185, [])}
        _write_db(store / "w.100", {cf: segment_100})  # type: ignore[dict-item]
        segment_200 = {_wk(b"C", 250): enc(b"c", 260, [("x", b"!" if mutated else b"")])}
        if mutated:
            segment_200[_wk(b"B", 200)] = enc(b"b", 201, [])
        _write_db(store / "w.200", {cf: segment_200})  # type: ignore[dict-item]
        (store / "not-a-segment").mkdir()
        rows = read_store_entries(store_type, 0, store)
        assert len(rows) == (5 if mutated else 4)
        return rows

    found = _mutated_differences(spark, log, store_type, FamilyParameters(retention_ms=100), store_rows, 2)
    assert _kinds(found) == [(0, b"A", "window_start=180 seqnum=0", "different timestamp"),
                             (0, b"B", "window_start=200 seqnum=0", "unexpected"),
                             (0, b"C", "window_start=250 seqnum=0", "different headers")]
    assert (found.differences[2].expected, found.differences[2].actual) == ("[x=]", "[x=21]")


def test_window_duplicates_compare_per_window_not_per_seqnum(spark: Any) -> None:
    """WIN-6: the store's seqnums drift from the changelog's (a null put is logged, not stored): the window
    (K, 10) holds a, a, b whatever their seqnums; dropping one duplicate is a difference."""
    log: dict[int, list[Record]] = {0: [
        (0, _wk(b"K", 10, 1), b"a", 1, []),
        (0, _wk(b"K", 10, 2), b"b", 2, []),
        (0, _wk(b"K", 10, 3), None, 3, []),
        (0, _wk(b"K", 10, 4), b"a", 4, []),
        (0, _wk(b"L", 20, 5), b"z", 5, []),
    ]}
    store_type = StoreType.WINDOW
    params = FamilyParameters(retention_ms=1000, retain_duplicates=True)
    changelog = _changelog(spark, log)
    store = [(0, b"K", 10, 1, b"a", None, None), (0, b"K", 10, 2, b"b", None, None),
             (0, b"K", 10, 3, b"a", None, None), (0, b"L", 20, 4, b"z", None, None)]
    found = compare_changelog(spark, changelog, store_type, params, actual_frame(spark, store_type, store))
    assert (found.expected_entries, found.differences) == (2, [])
    found = compare_changelog(spark, changelog, store_type, params, actual_frame(spark, store_type, store[1:]))
    assert _kinds(found) == [(0, b"K", "window_start=10", "different duplicates")]
    assert (found.differences[0].expected, found.differences[0].actual) == ("61; 61; 62", "61; 62")


# --- session --------------------------------------------------------------------------------------------


def _sk(key: bytes, start: int, end: int) -> bytes:
    return segmented_changelog_key(key, start, end, family=Family.SESSION)


def test_session_merges_removes_and_expiry(spark: Any, tmp_path: Path) -> None:
    """Stream time 110 (largest end), retention 106: sessions ending above 4 are compared. S [0,0] and [5,5]
    were merged into S [0,5] (removes, then the merged put); expected S [0,5] "2" [h=62], S [40,60] "3" [],
    T [100,110] "9" []."""
    log: dict[int, list[Record]] = {0: [
        (0, _sk(b"S", 0, 0), b"1", 0, [("h", b"a")]),
        (0, _sk(b"S", 5, 5), b"1", 5, []),
        (0, _sk(b"S", 0, 0), None, 5, []),
        (0, _sk(b"S", 5, 5), None, 5, []),
        (0, _sk(b"S", 0, 5), b"2", 5, [("h", b"b")]),
        (0, _sk(b"T", 100, 110), b"9", 110, []),
        (0, _sk(b"S", 40, 60), b"3", 60, []),
        (0, _sk(b"V", 0, 4), b"4", 4, []),  # ends exactly at 110 - 106: expired, not in the store
    ]}
    store_type = StoreType.SESSION_WITH_HEADERS
    cf = "sessionKeyValueWithHeaders"
    enc = header_values.encode_aggregation_with_headers

    def store_rows(mutated: bool) -> list[Any]:
        store = tmp_path / str(mutated) / "0_0" / "ss"
        segment_0 = {_sk(b"S", 0, 5): enc(b"1" if mutated else b"2", [("h", b"b")]),
                     _sk(b"U", 0, 2): enc(b"old", [])}  # ended at 2 <= 4: expired, not compared
        if mutated:
            segment_0[_sk(b"S", 5, 5)] = enc(b"1", [])  # a merged session not removed
        _write_db(store / "ss.0", {cf: segment_0})  # type: ignore[dict-item]
        segment_60 = {_sk(b"S", 40, 60): enc(b"3", [])}
        if not mutated:
            segment_60[_sk(b"T", 100, 110)] = enc(b"9", [])
        _write_db(store / "ss.60", {cf: segment_60})  # type: ignore[dict-item]
        return read_store_entries(store_type, 0, store)

    found = _mutated_differences(spark, log, store_type, FamilyParameters(retention_ms=106), store_rows, 3)
    assert _kinds(found) == [(0, b"S", "start=0 end=5", "different value"),
                             (0, b"S", "start=5 end=5", "unexpected"),
                             (0, b"T", "start=100 end=110", "missing")]
    assert found.differences[2].expected == "value=39 headers=[]"


def test_parameters_and_undecodable_rows(tmp_path: Path) -> None:
    """No Spark: a missing retention is refused by name; a row that does not decode is reported, not fatal."""
    with pytest.raises(AuditSetupError, match="history-retention-ms"):
        check_parameters(StoreType.VERSIONED_KV, FamilyParameters(retention_ms=5))
    with pytest.raises(AuditSetupError, match="retain_duplicates"):
        check_parameters(StoreType.SESSION, FamilyParameters(retention_ms=5, retain_duplicates=True))
    with pytest.raises(AuditSetupError, match="kv"):
        check_parameters(StoreType.KEY_VALUE, FamilyParameters(retention_ms=5))
    store = tmp_path / "0_0" / "w"
    _write_db(store / "w.0", {"default": {_wk(b"A", 1): b"v", b"short": b"x"}})
    problems: list[Any] = []
    rows = read_store_entries(StoreType.WINDOW, 0, store, problems)
    assert rows == [(0, b"A", 1, 0, b"v", None, None)]
    assert [(p.key, p.kind) for p in problems] == [(b"short", "undecodable")]
    with pytest.raises(AuditSetupError, match="does not decode"):
        read_store_entries(StoreType.WINDOW, 0, store)


# --- against the reference stores ------------------------------------------------------------------------


def _work_versioned(handle: str, rng: Any, store_type: StoreType) -> None:
    from kstate.ops import call

    clock = 100
    for n in range(250):
        clock += rng.randrange(0, 6)
        timestamp = max(0, clock - rng.randrange(0, 80)) if rng.random() < 0.4 else clock  # some beyond the grace
        value = None if rng.random() < 0.15 else b"v%d" % n
        assert "error" not in call("versioned_store.put", {"handle": handle, "key": (b"k%d" % rng.randrange(6)).hex(),
                                                           "value": value and value.hex(), "timestamp": timestamp,
                                                           "headers": [["h", (b"%d" % n).hex()]]})


def _work_window(handle: str, rng: Any, store_type: StoreType) -> None:
    from kstate.codecs.store_types import encode_stored_value
    from kstate.ops import call

    clock = 100
    for n in range(250):
        clock += rng.randrange(0, 4)
        start = max(0, clock - rng.randrange(0, 150)) // 10 * 10
        call("store.set_context", {"handle": handle, "timestamp": clock, "headers": [["h", (b"%d" % n).hex()]]})
        value = None if rng.random() < 0.1 else encode_stored_value(store_type, b"v%d" % n, clock - 1, [("h", b"x")])
        assert "error" not in call("window_store.put", {"handle": handle, "key": (b"k%d" % rng.randrange(5)).hex(),
                                                        "value": value and value.hex(), "window_start": start})


def _work_session(handle: str, rng: Any, store_type: StoreType) -> None:
    from kstate.codecs.store_types import encode_stored_value
    from kstate.ops import call

    clock, live = 100, []
    for n in range(250):
        clock += rng.randrange(0, 4)
        call("store.set_context", {"handle": handle, "timestamp": clock, "headers": [["h", (b"%d" % n).hex()]]})
        if live and rng.random() < 0.3:  # a merge removes the sessions it merged
            key, start, end = live.pop(rng.randrange(len(live)))
            assert "error" not in call("session_store.remove", {"handle": handle, "key": key.hex(), "start": start,
                                                                "end": end})
            continue
        start = max(0, clock - rng.randrange(0, 150))
        key, end = b"k%d" % rng.randrange(5), start + rng.randrange(0, 20)
        value = encode_stored_value(store_type, b"a%d" % n, clock, [("h", b"y")])
        assert "error" not in call("session_store.put", {"handle": handle, "key": key.hex(), "start": start, "end": end,
                                                         "value": value and value.hex()})
        live.append((key, start, end))


_WORKLOADS = {"versioned": (_work_versioned, {"history_retention_ms": 50, "segment_interval_ms": 20}),
              "window": (_work_window, {"retention_ms": 100, "window_size_ms": 10, "segment_interval_ms": 30}),
              "session": (_work_session, {"retention_ms": 100, "segment_interval_ms": 30})}


def _reference_store_run(tmp_path: Path, store_type: StoreType, options: dict[str, Any],
                         work: Any) -> tuple[list[Record], Path] | None:
    """Drive a reference store of ``store_type`` through ``work``, close it: its changelog and its directory;
    None while the reference does not build the type (its branch not merged)."""
    import random

    from kstate.codecs.layout import store_dir
    from kstate.ops import call, load_all

    load_all()
    opened = call("store.open", {"store_type": store_type.value, "state_dir": str(tmp_path), "name": "s",
                                 "options": options})
    if "handle" not in opened:
        assert opened["error"]["type"] in ("StoreTypeNotBuiltError", "InputError"), opened
        return None
    work(opened["handle"], random.Random(7), store_type)
    log = call("store.changelog", {"handle": opened["handle"]})["records"]
    assert call("store.close", {"handle": opened["handle"]}) == {}
    records: list[Record] = [(0, bytes.fromhex(r["key"]), None if r["value"] is None else bytes.fromhex(r["value"]),
                              r["timestamp"], [(k, None if v is None else bytes.fromhex(v)) for k, v in r["headers"]])
                             for r in log]
    return records, tmp_path / "app" / "0_0" / store_dir(store_type, "s")


#: Every versioned type, the richest window and session types (every field compared), and a window store keeping
#: duplicates.
_REFERENCE_CASES = [("versioned", StoreType.VERSIONED_KV, False),
                    ("versioned", StoreType.VERSIONED_KV_WITH_HEADERS, False),
                    ("window", StoreType.TIMESTAMPED_WINDOW_WITH_HEADERS, False),
                    ("window", StoreType.WINDOW, True),
                    ("session", StoreType.SESSION_WITH_HEADERS, False)]


@pytest.mark.parametrize(("family", "store_type", "duplicates"), _REFERENCE_CASES,
                         ids=[f"{t.value}{'-duplicates' if d else ''}" for _, t, d in _REFERENCE_CASES])
def test_the_reference_stores_hold_what_their_changelog_implies(request: pytest.FixtureRequest, tmp_path: Path,
                                                                 family: str, store_type: StoreType,
                                                                 duplicates: bool) -> None:
    """A reference store driven by random writes (out of order, beyond retention, tombstones, duplicates,
    removes) holds exactly the entries the oracle computes from the changelog it wrote."""
    work, options = _WORKLOADS[family]
    given = {**options, "retain_duplicates": True} if duplicates else options
    run = _reference_store_run(tmp_path, store_type, given, work)
    if run is None:
        pytest.skip(f"the reference builds no {store_type.value} store yet")
    records, store = run
    params = FamilyParameters(retention_ms=options.get("retention_ms"),
                              history_retention_ms=options.get("history_retention_ms"), retain_duplicates=duplicates)
    spark = request.getfixturevalue("spark")
    found = compare_changelog(spark, _changelog(spark, {0: records}), store_type, params,
                              actual_frame(spark, store_type, read_store_entries(store_type, 0, store)))
    assert found.expected_entries > 5
    assert found.differences == [], found.differences[:5]


# --- the Spark plans against a plain-Python reading of the same semantics ----------------------------------


def _python_expected(records: list[tuple[int, int, Record]], store_type: StoreType,
                     params: FamilyParameters) -> list[tuple[Any, ...]]:
    """The semantics of kstate.spark.semantics written out record by record, keys decoded by the codecs: the
    queryable entries per partition, in the family schema."""
    from kstate.codecs import session_keys, window_keys
    from kstate.codecs.store_types import STORE_TYPES, Family, ValueFormat

    info = STORE_TYPES[store_type]
    keeps_time = info.value_format in (ValueFormat.TIMESTAMPED, ValueFormat.TIMESTAMPED_WITH_HEADERS)
    keeps_headers = info.value_format in (ValueFormat.TIMESTAMPED_WITH_HEADERS, ValueFormat.AGGREGATION_WITH_HEADERS)
    out: list[tuple[Any, ...]] = []
    for partition in sorted({p for p, _, _ in records}):
        log = sorted(((o, r) for p, o, r in records if p == partition), key=lambda item: item[0])
        if info.family is Family.VERSIONED:
            observed, latest_at = -1, {}
            for _, (_, key, value, ts, headers) in log:
                if ts >= observed - (params.history_retention_ms or 0):  # VER-26
                    latest_at[(key, ts)] = (value, headers)
                observed = max(observed, ts)
            for key in sorted({k for k, _ in latest_at}):
                times = sorted(t for k, t in latest_at if k == key)
                for ts, after in zip(times, [*times[1:], None], strict=True):
                    value, headers = latest_at[(key, ts)]
                    queryable = after is None or after > observed - (params.history_retention_ms or 0)
                    if value is not None and queryable:
                        out.append((partition, key, ts, after, value, headers if keeps_headers else None))
            continue
        last = {key: (value, ts, headers) for _, (_, key, value, ts, headers) in log}
        if info.family is Family.WINDOW:
            stream = max(window_keys.PLAIN.decode(key).timestamp for _, (_, key, *_rest) in log)
            for store_key, (value, ts, headers) in last.items():
                w = window_keys.PLAIN.decode(store_key)
                if value is not None and w.timestamp > stream - (params.retention_ms or 0):
                    out.append((partition, w.key, w.timestamp, w.seqnum, value, ts if keeps_time else None,
                                headers if keeps_headers else None))
        else:
            stream = max(session_keys.PLAIN.decode(key).end for _, (_, key, *_rest) in log)
            for store_key, (value, _ts, headers) in last.items():
                w2 = session_keys.PLAIN.decode(store_key)
                if value is not None and w2.end > stream - (params.retention_ms or 0):
                    out.append((partition, w2.key, w2.start, w2.end, value, headers if keeps_headers else None))
    return sorted(out, key=repr)


def _random_changelog(store_type: StoreType, seed: int) -> list[tuple[int, int, Record]]:
    """Three partitions of records with keys of every shape (empty, 0xff bytes), times near 0 and beyond 2^31
    and 2^62, seqnums up to 2^31 - 1, out-of-order times, tombstones and headers with null values."""
    import random

    from kstate.codecs.store_types import STORE_TYPES, Family

    rng = random.Random(seed)
    family = STORE_TYPES[store_type].family
    records: list[tuple[int, int, Record]] = []
    for partition in range(3):
        base = rng.choice([5, 2**31 + 7, 2**62])
        clock = base
        for offset in range(120):
            clock += rng.randrange(0, 30)
            when = max(0, clock - rng.randrange(0, 400)) if rng.random() < 0.4 else clock
            key = rng.choice([b"", b"a", b"\xff\xff", b"\x00k\xfe", b"key-long-%d" % rng.randrange(3)])
            value = None if rng.random() < 0.2 else rng.choice([b"", b"v%d" % offset, b"\xff" * 3])
            headers = rng.choice([[], [("h", b"%d" % offset)], [("n", None), ("e", b"")]])
            if family is Family.WINDOW:
                key = _wk(key, when // 10 * 10, rng.choice([0, 1, 0x7FFFFFFF]))
            elif family is Family.SESSION:
                key = _sk(key, max(0, when - rng.randrange(0, 50)), when)
            records.append((partition, offset, (partition, key, value, when, headers)))
    return records


@pytest.mark.parametrize(("store_type", "params"), [
    (StoreType.VERSIONED_KV, FamilyParameters(history_retention_ms=300)),
    (StoreType.TIMESTAMPED_WINDOW_WITH_HEADERS, FamilyParameters(retention_ms=250)),
    (StoreType.SESSION_WITH_HEADERS, FamilyParameters(retention_ms=250)),
], ids=lambda v: getattr(v, "value", ""))
def test_the_spark_plans_agree_with_the_semantics_written_out_in_python(
        spark: Any, store_type: StoreType, params: FamilyParameters) -> None:
    records = _random_changelog(store_type, seed=11)
    changelog = _changelog(spark, {p: [r for q, _, r in records if q == p] for p in range(3)})
    got = sorted((tuple(bytes(v) if isinstance(v, (bytes, bytearray)) else
                        [(h["key"], None if h["value"] is None else bytes(h["value"])) for h in v]
                        if isinstance(v, list) else v for v in row)
                  for row in expected_entries(changelog, store_type, params).collect()), key=repr)
    want = _python_expected(records, store_type, params)
    assert len(want) > 20
    assert got == want


@pytest.mark.parametrize(("store_type", "params"), [
    (StoreType.TIMESTAMPED_WINDOW_WITH_HEADERS, FamilyParameters(retention_ms=250)),
    (StoreType.SESSION_WITH_HEADERS, FamilyParameters(retention_ms=250)),
], ids=lambda v: getattr(v, "value", ""))
def test_window_and_session_entries_come_from_each_keys_latest_record_alone(
        spark: Any, store_type: StoreType, params: FamilyParameters) -> None:
    """What the source's ``latest_per_key`` leaves of a changelog (the last record per changelog key, offsets
    kept, a count added) implies the same entries as the whole changelog: stream time is in the keys (WIN-1,
    SESS-1)."""
    from kstate.spark.kafka_source import COUNTED_SCHEMA

    assert semantics_for(store_type).latest_per_key
    records = _random_changelog(store_type, seed=29)
    whole = _changelog(spark, {p: [r for q, _, r in records if q == p] for p in range(3)})
    latest: dict[tuple[int, bytes], tuple[int, Record, int]] = {}
    for partition, offset, record in records:
        count = latest[(partition, record[1])][2] if (partition, record[1]) in latest else 0
        latest[(partition, record[1])] = (offset, record, count + 1)
    assert len(latest) < len(records)
    reduced = spark.createDataFrame([("t", p, offset, when, 1, key, value, headers, count)
                                     for offset, (p, key, value, when, headers), count in latest.values()],
                                    COUNTED_SCHEMA)

    def entries(changelog: Any) -> list[str]:
        return sorted(map(repr, expected_entries(changelog, store_type, params).collect()))

    assert entries(reduced) == entries(whole) and len(entries(whole)) > 20
