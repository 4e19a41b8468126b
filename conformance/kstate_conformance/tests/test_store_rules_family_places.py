"""Store rules checked at the families and moments of the rule x place matrix no case reached yet (issue 32,
section E; spec/README.md, "Places"): the task's legacy files a versioned, window or session store migrates at open
(OFF-15 to OFF-19), the same store's offsets and its rows after a restore (RST-8, VS-17, VS-20, VS-36, WS-42,
SS-15).

The expected offsets, files and rows are worked out from the spec rules' text. The mutants of
``mutants/family_places_mutants.py`` are the bugs these cases catch that the rest of the suite let through.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kstate_conformance import rules
from kstate_conformance.harness import ROCKSDB, TOPIC, Kit, Store, h, i64, kit, record
from kstate_conformance.tests.test_store_rules_every_family import FAMILIES, K, _context, _open, _positions
from kstate_conformance.tests.test_store_rules_places import _task_files, _write_task_file

__all__ = ["kit"]

#: The families whose stores keep their offsets in segments or logical segments (the key-value store's case is
#: ``test_store_rules_places.test_a_key_value_store_reads_its_legacy_files_by_javas_rules_at_open``).
SEGMENTED_AND_VERSIONED = ("versioned", "window", "session")


def _written_and_closed(kit: Kit, name: str, offset: int) -> None:
    """A store of family ``name`` holding one row and a committed offset, closed: it has a database to migrate into."""
    family = FAMILIES[name]
    store = _open(kit, family, ROCKSDB)
    family.put(store, K)
    store.commit(offset)
    store.close()


@rules("OFF-16", "OFF-17", "OFF-19", "OFF-15")
@pytest.mark.kstate_places("store:versioned", "store:window", "store:session", "reopen")
@pytest.mark.parametrize("name", SEGMENTED_AND_VERSIONED)
def test_a_segmented_or_versioned_store_migrates_the_tasks_checkpoint_by_javas_rules(kit: Kit, name: str) -> None:
    """Place: a RocksDB versioned, window or session store reopening over a task's pre-4.3 ``.checkpoint``. Its
    fields are split on any run of Java whitespace (OFF-16: a tab, two spaces); the entry at offset -2 is skipped and
    the expected count decremented, so two declared entries with one skipped read as one (OFF-17); the store's own
    entry becomes its committed offset and the file is deleted once empty (OFF-19, OFF-15). A checkpoint whose count
    is off is refused at open and left as it was."""
    family = FAMILIES[name]
    kit.require(family.store_type, ROCKSDB, "offsets")
    kit.require_ops("store.write_task_file", "store.task_files")
    _written_and_closed(kit, name, 7)
    _write_task_file(kit, ".checkpoint", f"0\n2\n{TOPIC}\t0  41\napp-other-changelog 1 -2\n")
    store = _open(kit, family, ROCKSDB)
    assert store.committed() == 41, "the store's .checkpoint entry was not migrated"
    assert ".checkpoint" not in _task_files(kit)["files"], _task_files(kit)["files"]
    read, payload = family.reads[0]
    before = store.ok(read, **payload)
    store.close()
    broken = f"0\n3\n{TOPIC} 0 43\napp-other-changelog 0 8\n"
    _write_task_file(kit, ".checkpoint", broken)
    out = kit.open_refused(family.store_type, ROCKSDB, **({"options": family.options} if family.options else {}))
    assert "error" in out, "a checkpoint with a missing line was read"
    assert _task_files(kit)["files"].get(".checkpoint") == broken
    _write_task_file(kit, ".checkpoint", "0\n0\n")  # nothing to migrate: the store reopens as it was
    again = _open(kit, family, ROCKSDB)
    assert again.committed() == 41
    assert again.ok(read, **payload) == before


@rules("OFF-18", "OFF-16", "OFF-12")
@pytest.mark.kstate_places("store:window", "store:session", "reopen")
@pytest.mark.parametrize("name", ("window", "session"))
def test_a_segmented_store_takes_its_position_from_the_legacy_position_file(kit: Kit, name: str) -> None:
    """Place: a RocksDB window or session store opening over a pre-4.3 ``<store>.position`` file, read as a checkpoint
    (OFF-18, its fields split on a tab and two spaces, OFF-16): its entries become the store's position, merged with
    the position of the records written after (per partition the larger offset), and every segment commits it; the
    rows are compared decoded (OFF-12), and a reopen takes the merge of the segments' positions."""
    family = FAMILIES[name]
    kit.require(family.store_type, ROCKSDB, "offsets", "dump")
    kit.require_ops("store.write_task_file", "store.task_files")
    _write_task_file(kit, "store.position", "0\n2\nin\t0 5\nin 1  3\n")
    store = _open(kit, family, ROCKSDB)
    _context(store, 2)  # lower than the file's offset of partition 0: the file's 5 stays
    family.put(store, K)
    store.commit(1)
    expected = {"in": {0: 5, 1: 3}}
    positions = _positions(kit, store)
    assert positions and all(p == expected for p in positions), positions
    store.close()
    assert _task_files(kit)["files"].get("store.position") in (None, "0\n2\nin\t0 5\nin 1  3\n")
    again = _open(kit, family, ROCKSDB)
    _context(again, 4, partition=1)  # partition 1 moves on; partition 0 keeps what the segments held
    family.put(again, h("b"))
    again.commit(2)
    positions = _positions(kit, again)
    assert positions and all(p == {"in": {0: 5, 1: 4}} for p in positions), positions


@rules("OFF-20", "OFF-13", "OFF-14", "LAY-4")
@pytest.mark.kstate_places("store:kv", "store:versioned", "store:window", "store:session")
@pytest.mark.parametrize("name", FAMILIES)
def test_a_store_of_each_family_closed_for_a_downgrade_writes_the_tasks_checkpoint(kit: Kit, name: str) -> None:
    """Place: a RocksDB store of each family closed with ``upgrade.from`` before 4.3. The task directory's
    ``.checkpoint`` (LAY-4: ``<state.dir>/<application>/<task>/.checkpoint``, not a file of the store's) holds the
    store's committed changelog offset (OFF-20) in OFF-13's text: version ``0``, the count, ``<topic> <partition>
    <offset>``, every line ending in ``\n``; a store that never committed writes -4 (OFF-14)."""
    family = FAMILIES[name]
    kit.require(family.store_type, ROCKSDB, "offsets")
    kit.require_ops("store.task_files", "store.write_task_file")
    store = _open(kit, family, ROCKSDB)
    _context(store, 3)
    family.put(store, K)
    store.commit(5)
    store.ok("store.close", downgrade=True)
    assert _task_files(kit)["files"].get(".checkpoint") == f"0\n1\n{TOPIC} 0 5\n"
    task_dir = kit.state_dir / "app" / "0_0"
    assert (task_dir / ".checkpoint").read_text(encoding="utf-8") == f"0\n1\n{TOPIC} 0 5\n"
    assert sorted(p.relative_to(task_dir).as_posix() for p in task_dir.rglob(".checkpoint*")) == [".checkpoint"]
    _write_task_file(kit, ".checkpoint", "0\n0\n")  # the next close is the only store in the file
    fresh = kit.open(family.store_type, ROCKSDB, name="fresh",
                     **({"options": family.options} if family.options else {}))
    family.put(fresh, K)
    fresh.ok("store.close", downgrade=True)
    assert _task_files(kit)["files"].get(".checkpoint") == "0\n1\napp-fresh-changelog 0 -4\n"


# --- RST-7, RST-8: a window or session store rebuilt by a restore -------------------------------------------------

WINDOW_OPTIONS = {"retention_ms": 1_000, "window_size_ms": 10, "segment_interval_ms": 500}
SESSION_OPTIONS = {"retention_ms": 1_000, "segment_interval_ms": 500}


def _window_key(key: str, start: int) -> str:
    """CL-6: the changelog key ``[key][windowStart][seqnum 0]`` of a window store without duplicates."""
    return key + i64(start) + "00000000"


def _session_key(key: str, start: int, end: int) -> str:
    """CL-7: the changelog key ``[key][end][start]``, end first."""
    return key + i64(end) + i64(start)


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


#: Each family's restore records: keys 1..6 over two segments, one removed by a later tombstone.
_RESTORED = {
    "window": [record(_window_key(h(f"k{i}"), 100 * i), f"{i:02x}", 100 * i) for i in range(1, 7)]
              + [record(_window_key(h("k3"), 300), None, 700)],
    "session": [record(_session_key(h(f"k{i}"), 100 * i, 100 * i + 5), f"{i:02x}", 100 * i + 5) for i in range(1, 7)]
               + [record(_session_key(h("k3"), 300, 305), None, 700)],
}


def _restored_rows(store: Store, name: str) -> list[Any]:
    """What the store answers for the keys of :data:`_RESTORED` (None for one absent)."""
    if name == "window":
        return list(store.ok("window_store.all")["entries"])
    return [store.ok("session_store.fetch_session", key=h(f"k{i}"), start=100 * i, end=100 * i + 5)["value"]
            for i in range(1, 7)]


@rules("RST-8", "RST-3")
@pytest.mark.kstate_places("store:window", "store:session", "restore", "crash")
@pytest.mark.parametrize("name", ("window", "session"))
def test_a_crash_right_after_a_window_or_session_restore_keeps_all_or_none_of_it(kit: Kit, name: str) -> None:
    """Place: a RocksDB window or session store restored in batches, each committed with its last offset, then
    killed as the restore returns. The reopened store holds the whole restore with its last offset, or (Kafka,
    which ends no restore with a flush) none of it and no committed offset (RST-8): never a part of it."""
    family = FAMILIES[name]
    kit.require(family.store_type, ROCKSDB, "crash", "offsets")
    store = _open(kit, family, ROCKSDB)
    records = _RESTORED[name]
    store.restore(records, batch_size=3, commit_offsets=True)
    expected = _restored_rows(store, name)
    store.crash()
    after = _open(kit, family, ROCKSDB, ignore_invalid_state=True)
    kept = (after.committed(), _restored_rows(after, name))
    nothing = [] if name == "window" else [None] * len(expected)
    assert kept in ((len(records) - 1, expected), (None, nothing)), f"after a crash the restored store holds {kept}"


@pytest.mark.kstate_level("hardened")
@rules("RST-8", "RST-3", "KV-67")
@pytest.mark.kstate_places("store:window", "store:session", "restore", "crash")
@pytest.mark.parametrize("name", ("window", "session"))
def test_a_crash_right_after_a_window_or_session_restore_keeps_all_of_it(kit: Kit, name: str) -> None:
    """Place: a RocksDB window or session store restored in batches, each committed with its last offset, then
    killed as the restore returns. Restored with the write-ahead log off, every segment was flushed before the
    restore returned (KV-67, the reference's): the reopened store has every restored row and the last offset."""
    family = FAMILIES[name]
    kit.require(family.store_type, ROCKSDB, "crash", "offsets")
    store = _open(kit, family, ROCKSDB)
    records = _RESTORED[name]
    store.restore(records, batch_size=3, commit_offsets=True)
    assert store.committed() == len(records) - 1
    expected = _restored_rows(store, name)
    assert len([row for row in expected if row is not None]) == 5, expected
    store.crash()
    after = _open(kit, family, ROCKSDB, ignore_invalid_state=True)
    assert after.committed() == len(records) - 1
    assert _restored_rows(after, name) == expected


# --- WS-42, SS-15: what a restore batch expires in a reopened store ---------------------------------------------


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


# --- VS-36, VS-17, VS-20: a versioned store's restore -------------------------------------------------------------

VERSIONED_OPTIONS = {"history_retention_ms": 100, "segment_interval_ms": 10}


def _versions(store: Store, key: str) -> Any:
    return store.ok("versioned_store.get_versions", key=key)["records"]


@rules("VS-36")
@pytest.mark.kstate_places("store:versioned", "restore")
def test_a_restored_version_that_would_go_to_a_negative_segment_is_refused(kit: Kit) -> None:
    """Place: a RocksDB versioned store restoring. A record at -35 reaches only the latest-value store; one at -25
    would move it to segment ``-25 / 10 = -2``: the batch is refused with a typed error and the version at -35 is
    as it was (VS-36)."""
    kit.require("versioned_kv", ROCKSDB)
    store = kit.open("versioned_kv", ROCKSDB, options=VERSIONED_OPTIONS)
    store.restore([record(h("k"), "61", -35)])
    assert _versions(store, h("k")) == [{"value": "61", "timestamp": -35, "valid_to": None}]
    out = store.call("store.restore", records=[record(h("k"), "62", -25)], batch_size=1000)
    assert "error" in out, f"a restored version moved to segment -2 was accepted: {out}"
    assert _versions(store, h("k")) == [{"value": "61", "timestamp": -35, "valid_to": None}]


_VERSIONED_RECORDS = [record(h("k"), "61", 10), record(h("k"), "62", 20), record(h("j"), "63", 15),
                      record(h("k"), None, 30), record(h("j"), "64", 25)]


@rules("VS-17")
@pytest.mark.kstate_places("store:versioned", "restore", "reopen")
def test_a_versioned_restore_commits_its_offsets_with_its_rows_and_keeps_them_after_a_reopen(kit: Kit) -> None:
    """Place: a RocksDB versioned store restored with the offsets committed per batch, then reopened. The committed
    offset is the last record's, and the latest values and the offset are those after the reopen too (VS-17). The
    older versions are compared before the reopen only: after a restart Kafka finds a segment again only once a
    put creates it (VS-14), the reference finds them at open."""
    kit.require("versioned_kv", ROCKSDB, "offsets")
    store = kit.open("versioned_kv", ROCKSDB, options=VERSIONED_OPTIONS)
    store.restore(_VERSIONED_RECORDS, batch_size=2, commit_offsets=True)
    assert store.committed() == len(_VERSIONED_RECORDS) - 1
    versions = (_versions(store, h("k")), _versions(store, h("j")))
    assert versions == ([{"value": "62", "timestamp": 20, "valid_to": 30}, {"value": "61", "timestamp": 10,
                                                                            "valid_to": 20}],
                        [{"value": "64", "timestamp": 25, "valid_to": None},
                         {"value": "63", "timestamp": 15, "valid_to": 25}]), versions
    latest = [store.ok("versioned_store.get", key=key)["record"] for key in (h("k"), h("j"))]
    assert latest == [None, {"value": "64", "timestamp": 25, "valid_to": None}], latest
    store.close()
    again = kit.open("versioned_kv", ROCKSDB, options=VERSIONED_OPTIONS)
    assert again.committed() == len(_VERSIONED_RECORDS) - 1
    assert [again.ok("versioned_store.get", key=key)["record"] for key in (h("k"), h("j"))] == latest


@rules("VS-20")
@pytest.mark.kstate_places("store:versioned", "restore")
def test_an_in_memory_versioned_store_restores_as_the_rocksdb_one_and_keeps_no_offset(kit: Kit) -> None:
    """Place: the in-memory versioned store restored (the reference's; Kafka has none). It answers the restored
    versions exactly as a RocksDB store restored from the same records, and commits no offset (VS-20)."""
    kit.require("versioned_kv", ROCKSDB)
    kit.require("versioned_kv", "memory")
    answers = []
    for backend in (ROCKSDB, "memory"):
        store = kit.open("versioned_kv", backend, name=f"on-{backend}", options=VERSIONED_OPTIONS)
        store.restore(_VERSIONED_RECORDS, batch_size=2, commit_offsets=backend == "memory")
        answers.append((_versions(store, h("k")), _versions(store, h("j")),
                        store.ok("versioned_store.get", key=h("k"), as_of=15)["record"]))
        if backend == "memory":
            assert store.committed() is None
    assert answers[0] == answers[1]


# --- OPS-2: zero bytes are not null, at every family ------------------------------------------------------------


@rules("OPS-2")
@pytest.mark.kstate_places("store:versioned", "store:window", "store:session")
@pytest.mark.parametrize("name", SEGMENTED_AND_VERSIONED)
def test_an_empty_value_is_stored_and_answered_as_zero_bytes_not_null(kit: Kit, name: str) -> None:
    """Place: a RocksDB versioned, window or session store. ``""`` is zero bytes and ``null`` a Java null (OPS-2):
    a value of zero bytes is stored and read back as ``""``, where a null would be a tombstone and read as absent."""
    family = FAMILIES[name]
    kit.require(family.store_type, ROCKSDB)
    store = _open(kit, family, ROCKSDB)
    op, payload = family.write
    store.ok(op, **{**payload, "value": ""})
    if name == "versioned":
        found = store.ok("versioned_store.get", key=K)["record"]
        assert found == {"value": "", "timestamp": 1, "valid_to": None}, found
    elif name == "window":
        assert store.ok("window_store.fetch", key=K, time=1)["value"] == ""
    else:
        assert store.ok("session_store.fetch_session", key=K, start=1, end=2)["value"] == ""


# --- LAY-15, LAY-16: links planted in a window or session store's directories -------------------------------------


def _committed_segment(kit: Kit, name: str) -> Path:
    """A window or session store holding one row in segment 0, committed at 7 and closed; its segment directory."""
    _written_and_closed(kit, name, 7)
    segment = kit.state_dir / "app" / "0_0" / "store" / "store.0"
    assert (segment / "CURRENT").is_file(), sorted(p.name for p in segment.parent.iterdir())
    return segment


@pytest.mark.kstate_level("hardened")
@rules("LAY-16", "KV-23")
@pytest.mark.kstate_places("store:window", "store:session", "reopen")
@pytest.mark.parametrize("name", ("window", "session"))
def test_a_dangling_lock_link_in_a_segment_refuses_the_open_before_rocksdb_follows_it(kit: Kit, name: str) -> None:
    """Place: a RocksDB window or session store reopened over a segment whose ``LOCK`` is a dangling link out of
    the store. The open is refused with a typed error before RocksDB opens the segment (LAY-16: RocksDB's
    ``open(O_CREAT)`` would create the link's target), and nothing is created or changed."""
    family = FAMILIES[name]
    kit.require(family.store_type, ROCKSDB)
    segment = _committed_segment(kit, name)
    (segment / "LOCK").unlink()
    (segment / "LOCK").symlink_to("../../../../created-outside")
    outside = kit.state_dir / "created-outside"
    out = kit.open_refused(family.store_type, ROCKSDB, **({"options": family.options} if family.options else {}))
    assert "error" in out, "a segment whose LOCK is a link was opened"
    assert not outside.exists() and not outside.is_symlink(), "the open created the LOCK link's target"
    assert (segment / "LOCK").is_symlink()


@pytest.mark.kstate_level("hardened")
@rules("LAY-15", "KV-25", "KV-55")
@pytest.mark.kstate_places("store:window", "store:session", "reopen")
@pytest.mark.parametrize("name", ("window", "session"))
def test_a_linked_task_checkpoint_refuses_a_segmented_store_open_and_is_never_read(kit: Kit, name: str) -> None:
    """Place: a RocksDB window or session store reopened over a task ``.checkpoint`` that is a link to a
    checkpoint outside the task directory. The file is read only if it is a regular file (LAY-15): the open is
    refused with a typed error, the link and its target are left as they were, and once the link is gone the
    store opens at its own committed offset, nothing migrated from the target."""
    family = FAMILIES[name]
    kit.require(family.store_type, ROCKSDB, "offsets")
    _committed_segment(kit, name)
    target = kit.state_dir / "elsewhere.checkpoint"
    text = f"0\n1\n{TOPIC} 0 99\n"
    target.write_text(text, encoding="utf-8")
    link = kit.state_dir / "app" / "0_0" / ".checkpoint"
    link.symlink_to(target)
    out = kit.open_refused(family.store_type, ROCKSDB, **({"options": family.options} if family.options else {}))
    assert "error" in out, "a .checkpoint that is a link was read"
    assert link.is_symlink() and target.read_text(encoding="utf-8") == text
    link.unlink()
    assert _open(kit, family, ROCKSDB).committed() == 7


# --- LAY-10: what a segment directory holds beside RocksDB's files ------------------------------------------------


@rules("LAY-10", "LAY-3")
@pytest.mark.kstate_places("store:window", "store:session")
@pytest.mark.parametrize("name", ("window", "session"))
def test_every_file_of_a_segment_directory_is_rocksdbs_or_a_sidecar_the_layout_names(kit: Kit, name: str) -> None:
    """Place: a RocksDB window or session store of two segments, committed and closed. Every file in each segment
    directory is RocksDB's own or a sidecar LAY-10 sets aside (the binding's ``rocksdict-config.json``, the
    reference's ``kstate-segments``), as ``layout.classify_store_file`` tells them: none is ``unknown``."""
    family = FAMILIES[name]
    kit.require(family.store_type, ROCKSDB)
    kit.require_ops("layout.classify_store_file")
    store = _open(kit, family, ROCKSDB)
    family.put(store, K)
    op, payload = family.write
    later = {"window_start": 600} if name == "window" else {"start": 600, "end": 601}
    store.ok(op, **{**payload, "key": h("b"), **later})  # segment 1
    store.commit(3)
    store.close()
    segments = sorted(p for p in (kit.state_dir / "app" / "0_0" / "store").iterdir() if p.is_dir())
    assert [p.name for p in segments] == ["store.0", "store.500"], segments
    for segment in segments:
        kinds = {}
        for entry in sorted(segment.iterdir()):
            out = kit.implementation.call("layout.classify_store_file", {"name": entry.name})
            assert "error" not in out, out
            kinds[entry.name] = out["kind"]
        assert "CURRENT" in kinds and set(kinds.values()) <= {"rocksdb", "not_layout"}, (segment.name, kinds)


# --- LAY-15 after a crash: a segment list that is a link ----------------------------------------------------------


@pytest.mark.kstate_level("hardened")
@rules("LAY-15", "LAY-16", "LAY-13")
@pytest.mark.kstate_places("store:window", "store:session", "crash")
@pytest.mark.parametrize("name", ("window", "session"))
def test_a_segment_list_swapped_for_a_link_after_a_crash_refuses_the_reopen(kit: Kit, name: str) -> None:
    """Place: a RocksDB window or session store that keeps segment lists (LAY-13), killed after a commit, its list
    in segment 0 then replaced by a link to a copy outside the store. The list is read only as a regular file
    (LAY-15), and the segment directory holds regular files only, checked before RocksDB opens it (LAY-16, which
    refuses the link first in the reference): the reopen is refused with a typed error, the link and its target
    left as they were, and once the link is replaced by the copy the store reopens at its committed offset."""
    family = FAMILIES[name]
    kit.require(family.store_type, ROCKSDB, "crash", "offsets")
    store = _open(kit, family, ROCKSDB)
    family.put(store, K)
    store.commit(4)
    store.crash()
    segment = kit.state_dir / "app" / "0_0" / "store" / "store.0"
    listing = sorted(p.name for p in segment.iterdir())
    lists = [n for n in listing if n not in ("rocksdict-config.json",) and not _is_rocksdb_file(n)]
    if not lists:
        pytest.skip("the implementation keeps no segment list beside RocksDB's files")
    (kept,) = lists
    copy = kit.state_dir / "copied-list"
    copy.write_bytes((segment / kept).read_bytes())
    (segment / kept).unlink()
    (segment / kept).symlink_to(copy)
    extra = {"options": family.options} if family.options else {}
    out = kit.open_refused(family.store_type, ROCKSDB, ignore_invalid_state=True, **extra)
    assert "error" in out, f"a segment list that is a link was read: {out}"
    assert (segment / kept).is_symlink() and copy.is_file()
    (segment / kept).unlink()
    (segment / kept).write_bytes(copy.read_bytes())
    assert _open(kit, family, ROCKSDB, ignore_invalid_state=True).committed() == 4


def _is_rocksdb_file(name: str) -> bool:
    """RocksDB's own file names (LAY-10): the fixed ones, ``LOG.old.*``, ``MANIFEST-*``, ``OPTIONS-*``, numbered."""
    import re

    return bool(re.fullmatch(r"CURRENT|IDENTITY|LOCK|LOG|LOG\.old\.\d+|MANIFEST-\d+|OPTIONS-\d+|\d+\.(sst|log|blob)",
                             name))


# --- PRIM-2: keys in unsigned byte order, through the stores' scans -------------------------------------------


#: Keys whose signed and unsigned orders differ, and a key that is a prefix of another: unsigned, ``01`` < ``0100``
#: < ``7f`` < ``80`` < ``ff`` (signed, ``80`` and ``ff`` would sort first).
UNSIGNED_ORDER = ["01", "0100", "7f", "80", "ff"]


@rules("PRIM-2")
@pytest.mark.kstate_places("store:kv", "store:window")
@pytest.mark.parametrize("backend", (ROCKSDB, "memory"))
def test_a_stores_scans_order_keys_as_unsigned_bytes(kit: Kit, backend: str) -> None:
    """Place: a key-value store's ``all`` and ``reverse_all`` and a window store's ``all`` (one window start) on
    each backend. Keys order as unsigned bytes, a prefix first (PRIM-2: ``Bytes.BYTES_LEXICO_COMPARATOR``), whatever
    the write order."""
    kit.require("kv", backend)
    store = kit.open("kv", backend, name="keys")
    for key in reversed(UNSIGNED_ORDER):
        store.put(key, "aa")
    assert [k for k, _ in store.all()] == UNSIGNED_ORDER
    assert [k for k, _ in store.reverse_all()] == UNSIGNED_ORDER[::-1]
    kit.require("window", backend)
    windows = kit.open("window", backend, name="windows", options=WINDOW_OPTIONS)
    # No prefix key here: a RocksDB window row's key is the key then the window start (WIN-7), so a key that is a
    # prefix of another compares on the other's next byte against the start's first.
    same_length = [k for k in UNSIGNED_ORDER if len(k) == 2]
    for key in reversed(same_length):
        windows.ok("window_store.put", key=key, value="aa", window_start=20)
    assert [entry[0] for entry in windows.ok("window_store.all")["entries"]] == same_length
