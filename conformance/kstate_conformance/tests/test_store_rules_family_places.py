"""Store rules checked at the families and moments of the rule x place matrix no case reached yet (issue 32,
section E; spec/README.md, "Places"): the task's legacy files a store migrates at open (OFF-15 to OFF-19), a
segmented store's offsets and its rows after a restore (RST-8), its segment directories (LAY-10, LAY-15, LAY-16).

The cases name no family: they are parametrized from the suite's table of families (``store_types.FAMILIES``), and
each family's expected data is its model's (``FAMILY_PLACES``, ``probes.FamilyPlaces``). A case of one family's
alone is in that family's contract module (RST-7, WS-42, SS-15, VS-17, VS-20, VS-36, PRIM-2).

The expected offsets, files and rows are worked out from the spec rules' text. The mutants of
``mutants/family_places_mutants.py`` are the bugs these cases catch that the rest of the suite let through.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kstate_conformance import rules
from kstate_conformance import store_types as types
from kstate_conformance.harness import ROCKSDB, TOPIC, Kit, h, kit
from kstate_conformance.probes import FamilyPlaces, RestoredRows
from kstate_conformance.tests.test_store_rules_every_family import FAMILIES, K, _context, _open, _positions
from kstate_conformance.tests.test_store_rules_places import _task_files, _write_task_file

__all__ = ["kit"]

#: Each family's data for these cases (its model's ``FAMILY_PLACES``), in the table's order; None for a family whose
#: cases of these places are elsewhere (the key-value store's are ``test_store_rules_places``').
_PLACES: dict[str, FamilyPlaces | None] = {f.name: types.family_model(f).FAMILY_PLACES for f in types.FAMILIES}
#: The families these cases reach: their stores keep their offsets in segments or logical segments.
PLACES_FAMILIES = tuple(name for name, places in _PLACES.items() if places is not None)
#: The families whose RocksDB stores keep a database per segment.
SEGMENTED = types.SEGMENTED_FAMILIES
#: The segmented families' restores over two segments (RST-8).
RESTORED: dict[str, RestoredRows] = {name: places.restored for name, places in _PLACES.items()
                                     if places is not None and places.restored is not None}


def _family_places(name: str) -> FamilyPlaces:
    places = _PLACES[name]
    assert places is not None, f"the family {name!r} declares no FAMILY_PLACES"
    return places


def _written_and_closed(kit: Kit, name: str, offset: int) -> None:
    """A store of family ``name`` holding one row and a committed offset, closed: it has a database to migrate into."""
    family = FAMILIES[name]
    store = _open(kit, family, ROCKSDB)
    family.put(store, K)
    store.commit(offset)
    store.close()


@rules("OFF-16", "OFF-17", "OFF-19", "OFF-15")
@pytest.mark.kstate_places("reopen")
@pytest.mark.parametrize("name", PLACES_FAMILIES)
def test_a_segmented_or_versioned_store_migrates_the_tasks_checkpoint_by_javas_rules(kit: Kit, name: str) -> None:
    """Place: a RocksDB store of each family of :data:`PLACES_FAMILIES` reopening over a task's pre-4.3
    ``.checkpoint``. Its fields are split on any run of Java whitespace (OFF-16: a tab, two spaces); the entry at
    offset -2 is skipped and the expected count decremented, so two declared entries with one skipped read as one
    (OFF-17); the store's own entry becomes its committed offset and the file is deleted once empty (OFF-19, OFF-15).
    A checkpoint whose count is off is refused at open and left as it was."""
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
@pytest.mark.kstate_places("reopen")
@pytest.mark.parametrize("name", SEGMENTED)
def test_a_segmented_store_takes_its_position_from_the_legacy_position_file(kit: Kit, name: str) -> None:
    """Place: a RocksDB store of each segmented family opening over a pre-4.3 ``<store>.position`` file, read as a checkpoint
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


# --- RST-8: a segmented store rebuilt by a restore ----------------------------------------------------------------


@rules("RST-8", "RST-3")
@pytest.mark.kstate_places("restore", "crash")
@pytest.mark.parametrize("name", tuple(RESTORED))
def test_a_crash_right_after_a_window_or_session_restore_keeps_all_or_none_of_it(kit: Kit, name: str) -> None:
    """Place: a RocksDB store of each segmented family restored in batches, each committed with its last offset, then
    killed as the restore returns. The reopened store holds the whole restore with its last offset, or (Kafka,
    which ends no restore with a flush) none of it and no committed offset (RST-8): never a part of it."""
    family = FAMILIES[name]
    kit.require(family.store_type, ROCKSDB, "crash", "offsets")
    store = _open(kit, family, ROCKSDB)
    restored = RESTORED[name]
    records = list(restored.records)
    store.restore(records, batch_size=3, commit_offsets=True)
    expected = restored.rows(store)
    store.crash()
    after = _open(kit, family, ROCKSDB, ignore_invalid_state=True)
    kept = (after.committed(), restored.rows(after))
    nothing = list(restored.nothing)
    assert kept in ((len(records) - 1, expected), (None, nothing)), f"after a crash the restored store holds {kept}"


@pytest.mark.kstate_level("hardened")
@rules("RST-8", "RST-3", "KV-67")
@pytest.mark.kstate_places("restore", "crash")
@pytest.mark.parametrize("name", tuple(RESTORED))
def test_a_crash_right_after_a_window_or_session_restore_keeps_all_of_it(kit: Kit, name: str) -> None:
    """Place: a RocksDB store of each segmented family restored in batches, each committed with its last offset, then
    killed as the restore returns. Restored with the write-ahead log off, every segment was flushed before the
    restore returned (KV-67, the reference's): the reopened store has every restored row and the last offset."""
    family = FAMILIES[name]
    kit.require(family.store_type, ROCKSDB, "crash", "offsets")
    store = _open(kit, family, ROCKSDB)
    restored = RESTORED[name]
    records = list(restored.records)
    store.restore(records, batch_size=3, commit_offsets=True)
    assert store.committed() == len(records) - 1
    expected = restored.rows(store)
    assert len([row for row in expected if row is not None]) == 5, expected
    store.crash()
    after = _open(kit, family, ROCKSDB, ignore_invalid_state=True)
    assert after.committed() == len(records) - 1
    assert restored.rows(after) == expected


# --- OPS-2: zero bytes are not null, at every family of the places ------------------------------------------------------------


@rules("OPS-2")
@pytest.mark.parametrize("name", PLACES_FAMILIES)
def test_an_empty_value_is_stored_and_answered_as_zero_bytes_not_null(kit: Kit, name: str) -> None:
    """Place: a RocksDB store of each family of :data:`PLACES_FAMILIES`. ``""`` is zero bytes and ``null`` a Java
    null (OPS-2): a value of zero bytes is stored and read back as ``""`` (the family's first read of the probe, as
    its model expects it), where a null would be a tombstone and read as absent."""
    family = FAMILIES[name]
    kit.require(family.store_type, ROCKSDB)
    store = _open(kit, family, ROCKSDB)
    op, payload = family.write
    store.ok(op, **{**payload, "value": ""})
    read, read_payload = family.reads[0]
    field, expected = _family_places(name).empty_value_answer
    found = store.ok(read, **read_payload)[field]
    assert found == expected, found


# --- LAY-15, LAY-16: links planted in a segmented store's directories -------------------------------------------


def _committed_segment(kit: Kit, name: str) -> Path:
    """A segmented store holding one row in segment 0, committed at 7 and closed; its segment directory."""
    _written_and_closed(kit, name, 7)
    segment = kit.state_dir / "app" / "0_0" / "store" / "store.0"
    assert (segment / "CURRENT").is_file(), sorted(p.name for p in segment.parent.iterdir())
    return segment


@pytest.mark.kstate_level("hardened")
@rules("LAY-16", "KV-23")
@pytest.mark.kstate_places("reopen")
@pytest.mark.parametrize("name", SEGMENTED)
def test_a_dangling_lock_link_in_a_segment_refuses_the_open_before_rocksdb_follows_it(kit: Kit, name: str) -> None:
    """Place: a RocksDB store of each segmented family reopened over a segment whose ``LOCK`` is a dangling link out of
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
@pytest.mark.kstate_places("reopen")
@pytest.mark.parametrize("name", SEGMENTED)
def test_a_linked_task_checkpoint_refuses_a_segmented_store_open_and_is_never_read(kit: Kit, name: str) -> None:
    """Place: a RocksDB store of each segmented family reopened over a task ``.checkpoint`` that is a link to a
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
@pytest.mark.parametrize("name", SEGMENTED)
def test_every_file_of_a_segment_directory_is_rocksdbs_or_a_sidecar_the_layout_names(kit: Kit, name: str) -> None:
    """Place: a RocksDB store of each segmented family of two segments, committed and closed. Every file in each segment
    directory is RocksDB's own or a sidecar LAY-10 sets aside (the binding's ``rocksdict-config.json``, the
    reference's ``kstate-segments``), as ``layout.classify_store_file`` tells them: none is ``unknown``."""
    family = FAMILIES[name]
    kit.require(family.store_type, ROCKSDB)
    kit.require_ops("layout.classify_store_file")
    store = _open(kit, family, ROCKSDB)
    family.put(store, K)
    op, payload = family.write
    later = {time: 600 + i for i, time in enumerate(family.time_fields)}  # a window start 600, a session 600..601
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
@pytest.mark.kstate_places("crash")
@pytest.mark.parametrize("name", SEGMENTED)
def test_a_segment_list_swapped_for_a_link_after_a_crash_refuses_the_reopen(kit: Kit, name: str) -> None:
    """Place: a RocksDB store of each segmented family that keeps segment lists (LAY-13), killed after a commit, its list
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
