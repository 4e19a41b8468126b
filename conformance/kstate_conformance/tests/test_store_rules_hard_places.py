"""Rules checked where they are hard to reach (issue 32, section E): each test reaches a rule at a place the rest of
the suite did not, the rule x place matrix of ``kstate spec check`` names the place (spec/README.md, "Places").

Each test was written against a mutant of ``mutants/hard_places_mutants.py`` that the rest of the suite let through.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from typing import Any

import pytest

from kstate.storage_files import directory_digest
from kstate_conformance import rules
from kstate_conformance.harness import BACKENDS, ROCKSDB, TOPIC, Kit, Store, h, header_bytes, i64, kit, record, varint
from kstate_conformance.probes import Probe
from kstate_conformance.store_types import (
    FAMILY_NAMES,
    SEGMENTED_FAMILIES,
    TIMESTAMPED_WINDOW_WITH_HEADERS,
    VERSIONED_KV_WITH_HEADERS,
)
from kstate_conformance.tests import test_segmented_store_faults as faults
from kstate_conformance.tests.test_store_rules_every_family import FAMILIES, K, _context, _open, _positions

__all__ = ["kit"]


def _location(kit: Kit) -> dict[str, Any]:
    return {"state_dir": str(kit.state_dir), "application_id": "app", "task_id": "0_0"}


def _merged(positions: list[dict[str, dict[int, int]]]) -> dict[str, dict[int, int]]:
    """The store's position from its databases' (WS-29, SS-21): per partition the larger offset."""
    merged: dict[str, dict[int, int]] = {}
    for position in positions:
        for topic, partitions in position.items():
            for partition, offset in partitions.items():
                merged.setdefault(topic, {})[partition] = max(offset, merged.get(topic, {}).get(partition, offset))
    return merged


# --- OFF-22: a <store>.position file merged into a store that already holds a position ---------------------------


@rules("OFF-22", "WS-29")
@pytest.mark.kstate_level("tentative")
@pytest.mark.parametrize("name", ["kv", "window"])
def test_a_position_file_merges_into_the_stored_position(kit: Kit, name: str) -> None:
    """Place: a store that already committed a position, reopened with a ``<store>.position`` beside it: the file's
    offsets are merged in (per partition the larger), not put in the stored position's place, and the merge survives
    a reopen. The file may be deleted once merged (OFF-22, the reference's key-value store) or left as it was (Kafka's
    ``maybeMigrateExistingPositionFile``, WS-29), so merging it again changes nothing; it is never rewritten."""
    family = FAMILIES[name]
    kit.require(family.store_type, ROCKSDB, "offsets", "dump")
    kit.require_ops("store.write_task_file", "store.task_files", "position.deserialize")
    store = _open(kit, family, ROCKSDB)
    _context(store, 9)
    family.put(store, h("a"))
    _context(store, 1, partition=1)
    family.put(store, h("b"))
    store.commit(1)
    store.close()
    legacy = "0\n3\nin 0 5\nin 1 4\nx 0 2\n"
    kit.implementation.call("store.write_task_file", {**_location(kit), "file": "store.position", "text": legacy})
    expected = {"in": {0: 9, 1: 4}, "x": {0: 2}}
    again = _open(kit, family, ROCKSDB)
    again.commit(2)
    assert _merged(_positions(kit, again)) == expected, _positions(kit, again)
    files = kit.implementation.call("store.task_files", _location(kit))
    assert files["files"].get("store.position", legacy) == legacy, files
    again.close()
    reopened = _open(kit, family, ROCKSDB)
    reopened.commit(3)
    assert _merged(_positions(kit, reopened)) == expected, _positions(kit, reopened)


# --- WS-29, SS-21: the position after flush, then a crash ----------------------------------------------------------


def _present(store: Store, family: Probe, key: str) -> bool:
    read, payload = family.reads[0]
    out = store.ok(read, **{**payload, "key": key})
    return bool(out.get("value") or out.get("entries"))


@rules("WS-29", "SS-21", "KV-52", "KV-63")
@pytest.mark.parametrize("name", SEGMENTED_FAMILIES)
def test_the_position_after_a_flush_and_a_crash_covers_the_rows_that_survived(kit: Kit, name: str) -> None:
    """Place: after a crash. Rows written at offsets 7 and 8 after a commit at 3, flushed, then the process dies.
    Whether a flush makes them durable or not (KV-63 allows both; Kafka 4.4.0's flush does nothing), it never writes
    the position, so the reopened store answers the committed position of offset 3, never one ahead of it; or, where
    the commit itself did not survive (KV-50 allows it, KV-67 does not), the store as created, with no row and no
    position."""
    family = FAMILIES[name]
    kit.require(family.store_type, ROCKSDB, "offsets", "dump", "crash")
    kit.require_ops("position.deserialize")
    store = _open(kit, family, ROCKSDB)
    _context(store, 3)
    family.put(store, h("a"))
    store.commit(1)
    _context(store, 7)
    family.put(store, h("b"))
    _context(store, 8)
    family.put(store, h("c"))
    store.flush()
    store.crash()
    again = _open(kit, family, ROCKSDB, ignore_invalid_state=True)
    kept = [_present(again, family, h(k)) for k in ("b", "c")]
    position = _merged(_positions(kit, again))
    if not _present(again, family, h("a")):
        # Rolled back past the commit: nothing of it, nor of what followed, nor any position may survive.
        assert (kept, position) == ([False, False], {}), (kept, _positions(kit, again))
        return
    assert kept in ([True, True], [False, False]), f"the crash kept a part of one flush: {kept}"
    assert position == {"in": {0: 3}}, (kept, _positions(kit, again))


# --- WS-23: a tombstone through the header-aware window store ------------------------------------------------------


def _header_value(headers: list[tuple[str, bytes | None]], rest: str) -> str:
    """``[varint size][header bytes][rest]`` (HV-1)."""
    section = header_bytes(headers)
    return varint(len(section) // 2) + section + rest


@rules("WS-23", "WS-25", "CL-11", "RST-4", "RST-6")
@BACKENDS
def test_a_tombstone_through_the_header_aware_window_store(kit: Kit, backend: str) -> None:
    """Place: a store of the header-aware window type. A put logs the stored timestamp and headers; a null put logs a
    tombstone at the context's timestamp with the context's headers. Restored into a fresh store of the type (place:
    after a restore), the put comes back byte for byte and the tombstone leaves nothing."""
    family = replace(FAMILIES["window"], store_type=TIMESTAMPED_WINDOW_WITH_HEADERS)
    kit.require(TIMESTAMPED_WINDOW_WITH_HEADERS, backend)
    store = _open(kit, family, backend)
    stored = _header_value([("a", b"x")], i64(7) + h("v"))
    store.ok("store.set_context", timestamp=42, headers=[["h", "01"]], topic="in", partition=0, offset=1)
    store.ok("window_store.put", key=h("k"), value=stored, window_start=1)
    store.ok("window_store.put", key=h("t"), value=None, window_start=1)
    logged = store.changelog()
    assert [(r["value"], r["timestamp"], r["headers"]) for r in logged] == [
        (h("v"), 7, [["a", "78"]]), (None, 42, [["h", "01"]])], logged
    fresh = _open(kit, family, backend, name="restored")
    fresh.restore(logged)
    assert fresh.ok("window_store.all")["entries"] == store.ok("window_store.all")["entries"] == [[h("k"), 1, stored]]
    assert fresh.changelog() == [], "a restore was logged (RST-4)"


# --- VS-27, CL-18: a restore of the versioned store with headers ----------------------------------------------------


@rules("VS-27", "CL-18", "VS-25", "RST-1", "RST-4")
@pytest.mark.kstate_level("tentative")
@BACKENDS
def test_a_versioned_with_headers_restore_keeps_every_header_and_the_tombstone(kit: Kit, backend: str) -> None:
    """Place: after a restore, then (RocksDB) after a reopen. Every record header is put in front of the value, the
    consistency headers ``v`` and ``c`` too (CL-18); a null value stays a tombstone, ending the version before it."""
    kit.require(VERSIONED_KV_WITH_HEADERS, backend)
    kit.require_ops("versioned_store.get")
    options = {"history_retention_ms": 100, "segment_interval_ms": 10}
    store = kit.open(VERSIONED_KV_WITH_HEADERS, backend, options=options)
    headers: list[list[Any]] = [["h", "31"], ["v", "00"], ["c", "0102"]]
    store.restore([record(h("k"), h("v"), 5, headers), record(h("k"), None, 8, [["v", "00"]])])
    expected = {"value": h("v"), "timestamp": 5, "valid_to": 8, "headers": headers}
    assert store.changelog() == [], "a restore was logged (RST-4)"

    def check(opened: Store) -> None:
        assert opened.ok("versioned_store.get", key=h("k"), as_of=6)["record"] == expected
        assert opened.ok("versioned_store.get", key=h("k"))["record"] is None, "the restored tombstone was lost"

    check(store)
    if backend == ROCKSDB:
        store.commit(1)
        store.close()
        check(kit.open(VERSIONED_KV_WITH_HEADERS, backend, options=options))


# --- LAY-12: a regular file named like a segment --------------------------------------------------------------------


@rules("LAY-12", "KV-25")
@pytest.mark.parametrize("family", SEGMENTED_FAMILIES)
def test_a_regular_file_named_like_a_segment_refuses_the_open(kit: Kit, family: str) -> None:
    """Place: a store of each segmented family, reopened. A regular file ``store.180000`` names segment 3: the store
    would not open it under its name, so its data would be ignored silently; the open is refused with a typed error
    (a name that parses is no "junk" entry to skip)."""
    directory = faults._filled(kit, family)
    (directory / "store.180000").write_bytes(b"not a segment database")
    out = kit.open_refused(family, ROCKSDB, options=faults.OPTIONS[family])
    assert "error" in out, f"a regular file named like a segment was skipped: {out}"


@rules("KV-66", "KV-23")  # the refusal itself (LAY-12) is the previous test's
@pytest.mark.kstate_level("hardened")
@pytest.mark.parametrize("family", SEGMENTED_FAMILIES)
def test_a_regular_file_named_like_a_segment_refuses_the_open_changing_nothing(kit: Kit, family: str) -> None:
    """The same refusal changes nothing (KV-66, hardened): Kafka 4.4.0 opens the older segments one by one before it
    meets ``store.180000``, so its refusal leaves their new RocksDB files behind."""
    directory = faults._filled(kit, family)
    (directory / "store.180000").write_bytes(b"not a segment database")
    before = directory_digest(kit.state_dir)
    out = kit.open_refused(family, ROCKSDB, options=faults.OPTIONS[family])
    assert "error" in out, f"a regular file named like a segment was skipped: {out}"
    assert directory_digest(kit.state_dir) == before, "the refused open changed the state directory"


# --- LAY-13: the segment lists after a commit and a crash; ignore_invalid_state ------------------------------------


@pytest.mark.kstate_level("hardened")
@rules("LAY-13", "KV-52", "WS-28", "SS-23")
@pytest.mark.parametrize("family", SEGMENTED_FAMILIES)
def test_a_segment_created_after_the_last_close_is_missed_after_a_crash(kit: Kit, family: str) -> None:
    """Places: after a crash, and opened with ``ignore_invalid_state``. A segment created and committed after the
    last clean close, then the process dies: the commit wrote it into the segment lists, so when it is deleted the
    others' offset claims it and the open is refused; ``ignore_invalid_state`` lifts the unclean-shutdown check
    (KV-52), never this one."""
    faults._filled(kit, family)
    store = faults._open(kit, family)
    faults._put(store, family, "k3", 3 * faults.INTERVAL)
    store.commit(8)
    store.crash()
    shutil.rmtree(faults._segment_dir(kit) / "store.180000")
    before = directory_digest(kit.state_dir)
    out = kit.open_refused(family, ROCKSDB, options=faults.OPTIONS[family], ignore_invalid_state=True)
    assert "error" in out, f"a store that lost a committed segment opened: {out}"
    assert directory_digest(kit.state_dir) == before, "the refused open changed the state directory"


# --- UPG-3, VS-31: a wipe and the store's .position file -----------------------------------------------------------


def _committed_store_with_position_file(kit: Kit, family: Probe, store_name: str) -> None:
    """A closed RocksDB store of ``family`` that committed once, and a legacy ``<store>.position`` naming an old
    position beside it."""
    store = _open(kit, family, ROCKSDB, name=store_name)
    _context(store, 9)
    family.put(store, h("a"))
    store.commit(1)
    store.close()
    kit.implementation.call("store.write_task_file", {**_location(kit), "file": f"{store_name}.position",
                                                      "text": "0\n1\nold 0 99\n"})


@rules("UPG-3", "OFF-22")
@pytest.mark.parametrize("name", FAMILY_NAMES)
def test_a_wipe_deletes_the_stores_position_file(kit: Kit, name: str) -> None:
    """Place: a store of each family, alone in its task, wiped, then reopened. The wipe deletes the store's
    directory and its ``<store>.position`` file: a file left behind would be merged into the rebuilt store at its
    first open (OFF-22), giving it the position of the state the wipe threw away."""
    family = FAMILIES[name]
    kit.require(family.store_type, ROCKSDB, "offsets", "dump")
    kit.require_ops("store.wipe", "store.write_task_file", "store.task_files", "position.deserialize")
    _committed_store_with_position_file(kit, family, "store")
    out = kit.implementation.call("store.wipe", {**_location(kit), "name": "store", "store_type": family.store_type})
    assert "error" not in out, out
    files = kit.implementation.call("store.task_files", _location(kit))
    assert "store.position" not in files["entries"], f"the wipe left the store's position file: {files}"
    rebuilt = _open(kit, family, ROCKSDB)
    assert rebuilt.committed() is None, "a wiped store starts without committed offsets"
    rebuilt.commit(2)
    assert "old" not in _merged(_positions(kit, rebuilt)), _positions(kit, rebuilt)


@rules("VS-31")
@pytest.mark.kstate_level("hardened")
@pytest.mark.parametrize("name", FAMILY_NAMES)
def test_a_wipe_deletes_the_stores_position_file_and_nothing_else(kit: Kit, name: str) -> None:
    """Place: two stores of each family in one task, one wiped. The wipe deletes that store's directory and its
    ``<store>.position`` file; the other store's directory and position file stay (VS-31; Kafka's own wipe is the
    whole task's, UPG-3)."""
    family = FAMILIES[name]
    kit.require(family.store_type, ROCKSDB, "offsets", "dump", "store_wipe")
    kit.require_ops("store.wipe", "store.write_task_file", "store.task_files")
    for store_name in ("store", "other"):
        _committed_store_with_position_file(kit, family, store_name)
    task = kit.state_dir / "app" / "0_0"
    other_dir = next(p for p in (task / "rocksdb" / "other", task / "other") if p.exists())
    before = directory_digest(other_dir)
    out = kit.implementation.call("store.wipe", {**_location(kit), "name": "store", "store_type": family.store_type})
    assert "error" not in out, out
    files = kit.implementation.call("store.task_files", _location(kit))
    assert "store.position" not in files["entries"], f"the wipe left the store's position file: {files}"
    assert files["files"].get("other.position") == "0\n1\nold 0 99\n", files
    assert directory_digest(other_dir) == before, "the wipe changed another store of the task"


# --- OFF-1, OFF-2, OFF-4, LAY-5, LAY-6: the offsets rows of every database of every family ------------------------


def _put_at(store: Store, family: Probe, key: str, time: int) -> None:
    """The family's write of ``key`` at ``time`` (a window start, a session's start and end, a version)."""
    op, payload = family.write
    store.ok(op, **{**payload, "key": key, **dict.fromkeys(family.time_fields, time)})


def _offsets_rows(store: Store) -> list[dict[str, dict[str, str]]]:
    """Per database of the store (one; or one per segment): its column families, each as ``{key: value}``."""
    dumped = store.ok("store.dump")
    databases = dumped["segments"].values() if "segments" in dumped else [dumped["column_families"]]
    return [{cf: dict(entries) for cf, entries in families.items()} for families in databases]


@pytest.mark.kstate_level("hardened")
@rules("OFF-1", "OFF-2", "OFF-4", "LAY-5", "LAY-6", "KV-67")
@pytest.mark.parametrize("name", FAMILY_NAMES)
def test_every_database_keeps_the_committed_offsets_through_a_null_a_crash_and_an_empty_commit(
        kit: Kit, name: str) -> None:
    """Place: every family's store, each of its databases (two segments of a window or session store), after a
    crash and a reopen. Every database holds ``default`` and ``offsets`` in one database (OFF-1, LAY-5, LAY-6); the
    offsets family's keys are ``status``, ``position`` and ``<topic>-<partition>`` with the offset as an int64
    (OFF-2); a null offset deletes its row and an empty map wipes them all, in every database (OFF-4); a crash
    loses nothing committed."""
    family = FAMILIES[name]
    kit.require(family.store_type, ROCKSDB, "offsets", "dump")
    store = _open(kit, family, ROCKSDB)
    _put_at(store, family, h("a"), 1)
    _put_at(store, family, h("b"), 600)  # a second segment of a segmented store
    store.ok("store.commit", changelog_offsets=[[TOPIC, 0, 5], [TOPIC, 1, 7]])
    databases = _offsets_rows(store)
    assert len(databases) == (2 if name in SEGMENTED_FAMILIES else 1), list(databases)
    tp0, tp1 = h(f"{TOPIC}-0"), h(f"{TOPIC}-1")
    for families in databases:
        assert {"default", "offsets"} <= set(families), sorted(families)
        assert set(families["offsets"]) == {h("status"), h("position"), tp0, tp1}, families["offsets"]
        assert (families["offsets"][tp0], families["offsets"][tp1]) == (i64(5), i64(7)), families["offsets"]
    store.ok("store.commit", changelog_offsets=[[TOPIC, 1, None]])
    for families in _offsets_rows(store):
        assert set(families["offsets"]) == {h("status"), h("position"), tp0}, families["offsets"]
    store.crash()
    again = _open(kit, family, ROCKSDB, ignore_invalid_state=True)
    assert again.ok("store.committed_offset", topic=TOPIC, partition=0)["offset"] == 5
    assert again.ok("store.committed_offset", topic=TOPIC, partition=1)["offset"] is None
    again.ok("store.commit", changelog_offsets=[])
    for families in _offsets_rows(again):
        assert not set(families["offsets"]) - {h("status"), h("position")}, families["offsets"]
    assert again.ok("store.committed_offset", topic=TOPIC, partition=0)["offset"] is None


# --- WS-4, WIN-6: the seqnum restarts at 0 with the store ---------------------------------------------------------


@rules("WS-4", "WIN-6")
def test_a_reopened_window_store_with_duplicates_numbers_its_puts_from_one_again(kit: Kit) -> None:
    """Place: a reopened window store that retains duplicates. The seqnum lives in memory and starts at 0 when the
    store opens (WS-4, WIN-6), so the first put after a reopen gets seqnum 1 again and replaces the row of the
    first put before it, at the same key and window start; a store that resumed its count would keep three rows."""
    family = FAMILIES["window"]
    kit.require(family.store_type, ROCKSDB)
    options = {**family.options, "retain_duplicates": True}
    store = kit.open(family.store_type, ROCKSDB, options=options)
    for value in ("a1", "a2"):
        store.ok("window_store.put", key=K, value=value, window_start=1)
    store.close()
    again = kit.open(family.store_type, ROCKSDB, options=options)
    again.ok("window_store.put", key=K, value="b1", window_start=1)
    fetched = again.ok("window_store.fetch_range", key=K, from_ms=0, to_ms=10)
    assert [value for _, value in fetched["entries"]] == ["b1", "a2"], fetched
