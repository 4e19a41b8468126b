"""Store rules checked at the families and moments of the rule x place matrix no case reached yet (issue 32,
section E; spec/README.md, "Places"): the task's legacy files a versioned, window or session store migrates at open
(OFF-15 to OFF-19), the same store's offsets and its rows after a restore (RST-8, VS-17, VS-20, VS-36, WS-42,
SS-15).

The expected offsets, files and rows are worked out from the spec rules' text. The mutants of
``mutants/family_places_mutants.py`` are the bugs these cases catch that the rest of the suite let through.
"""

from __future__ import annotations

import pytest

from kstate_conformance import rules
from kstate_conformance.harness import ROCKSDB, TOPIC, Kit, h, kit
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


@rules("OFF-20", "OFF-13", "OFF-14")
@pytest.mark.kstate_places("store:versioned", "store:window", "store:session")
@pytest.mark.parametrize("name", SEGMENTED_AND_VERSIONED)
def test_a_segmented_or_versioned_store_closed_for_a_downgrade_writes_the_tasks_checkpoint(kit: Kit,
                                                                                           name: str) -> None:
    """Place: a RocksDB versioned, window or session store closed with ``upgrade.from`` before 4.3. The task's
    ``.checkpoint`` holds the store's committed changelog offset (OFF-20) in OFF-13's text: version ``0``, the count,
    ``<topic> <partition> <offset>``, every line ending in ``\\n``; a store that never committed writes -4 (OFF-14)."""
    family = FAMILIES[name]
    kit.require(family.store_type, ROCKSDB, "offsets")
    kit.require_ops("store.task_files", "store.write_task_file")
    store = _open(kit, family, ROCKSDB)
    _context(store, 3)
    family.put(store, K)
    store.commit(5)
    store.ok("store.close", downgrade=True)
    assert _task_files(kit)["files"].get(".checkpoint") == f"0\n1\n{TOPIC} 0 5\n"
    _write_task_file(kit, ".checkpoint", "0\n0\n")  # the next close is the only store in the file
    fresh = kit.open(family.store_type, ROCKSDB, name="fresh",
                     **({"options": family.options} if family.options else {}))
    family.put(fresh, K)
    fresh.ok("store.close", downgrade=True)
    assert _task_files(kit)["files"].get(".checkpoint") == "0\n1\napp-fresh-changelog 0 -4\n"
