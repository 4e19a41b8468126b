"""Store life-cycle, iterator look-ahead, upgrade-mode counts, the position kept for interactive queries,
legacy offset files and refused opens, through the neutral ``store.*`` operations (issue 15's blind spots:
KV-12, KV-15, KV-17, KV-53..KV-56, KV-62, HV-7, OFF-19, OFF-20, UPG-4)."""

from __future__ import annotations

from typing import Any

import pytest

from kstate_conformance import rules
from kstate_conformance.harness import BACKENDS, ROCKSDB, TOPIC, Kit, Store, h, i64, kit
from kstate_conformance.tests.test_kv_contract import HDR, KV, TS, crashed_after_commit, value_for

__all__ = ["kit"]

LOCATION = {"application_id": "app", "task_id": "0_0"}


def _location(kit: Kit) -> dict[str, Any]:
    return {"state_dir": str(kit.state_dir), **LOCATION}


# --- closing twice, peekNextKey -------------------------------------------------------------------------------


@rules("KV-12", "KV-43")
@BACKENDS
@pytest.mark.parametrize("caching", [False, True], ids=["uncached", "cached"])
def test_a_second_close_is_a_no_op(kit: Kit, backend: str, caching: bool) -> None:
    """Closing a closed store is not an error and changes nothing: the store reopens cleanly with its data."""
    store = kit.open(KV, backend, caching=caching)
    store.put("01", "aa")
    store.close()
    store.close()
    if backend == ROCKSDB:
        again = kit.open(KV, backend, caching=caching)  # no ignore_invalid_state: the second close wrote no OPEN
        assert again.get("01") == "aa"


def _peek(store: Store, iterator: str) -> dict[str, Any]:
    out: dict[str, Any] = store.implementation.call("store.iterator_peek_next_key", {"iterator": iterator})
    return out


@rules("KV-17")
@BACKENDS
def test_peek_next_key_looks_ahead_without_consuming(kit: Kit, backend: str) -> None:
    """peekNextKey twice gives the same key, next then returns that entry; null at the end; refused once closed."""
    kit.require(KV, backend, "iterators")
    kit.require_ops("store.iterator_peek_next_key")
    store = kit.open(KV, backend)
    store.put_all([("01", "a1"), ("02", "a2"), ("03", "a3")])
    iterator = store.iterator("all")
    assert _peek(store, iterator) == {"key": "01"}
    assert _peek(store, iterator) == {"key": "01"}
    assert store.next(iterator, 1)["entries"] == [["01", "a1"]]
    assert _peek(store, iterator) == {"key": "02"}
    assert store.next(iterator, 5)["entries"] == [["02", "a2"], ["03", "a3"]]
    assert _peek(store, iterator) == {"key": None}
    reverse = store.iterator("reverse_range", **{"from": "01", "to": "02"})
    assert _peek(store, reverse) == {"key": "02"}
    assert store.next(reverse, 5)["entries"] == [["02", "a2"], ["01", "a1"]]
    store.ok("store.iterator_close", iterator=reverse)
    assert "error" in _peek(store, reverse)


# --- approximateNumEntries in upgrade mode ---------------------------------------------------------------------


@rules("KV-15", "KV-30")
@pytest.mark.parametrize("store_type", [TS, HDR])
def test_approximate_num_entries_in_upgrade_mode_counts_both_families(kit: Kit, store_type: str) -> None:
    """Over a plain store's three entries the upgraded store counts three, before and after a migration."""
    kit.require(store_type, ROCKSDB)
    plain = kit.open(KV, ROCKSDB)
    plain.put_all([("01", "aa"), ("02", "bb"), ("03", "cc")])
    plain.close()
    store = kit.open(store_type, ROCKSDB)
    assert store.info["mode"] == "upgrade"
    assert store.count() == 3
    assert store.get("01") is not None  # migrates 01 into the new family
    store.flush()
    assert store.count() == 3


# --- headers through the typed facade ----------------------------------------------------------------------------


@rules("KV-62", "HV-7")
@BACKENDS
def test_a_value_stored_without_headers_has_empty_headers(kit: Kit, backend: str) -> None:
    """``00 [ts] value`` read through the headers facade: the headers are an empty list, not null."""
    kit.require_ops("store.get_typed")
    store = kit.open(HDR, backend)
    store.put("01", "00" + i64(4) + h("v"))
    assert store.ok("store.get_typed", key="01") == {"found": True, "value": h("v"), "timestamp": 4, "headers": []}
    assert store.ok("store.get_typed", key="01", fields=["headers"]) == {"found": True, "headers": []}


# --- the position for interactive queries -------------------------------------------------------------------------


def _position(kit: Kit, store: Store) -> Any:
    """The committed position, decoded; None when the offsets family holds no ``position`` entry."""
    kit.require_ops("store.dump", "position.deserialize")
    offsets = dict(store.ok("store.dump")["column_families"].get("offsets", []))
    stored = offsets.get(h("position"))
    if stored is None:
        return None
    out = kit.implementation.call("position.deserialize", {"bytes": stored})
    assert "error" not in out, out
    return out["position"]


def _context(store: Store, offset: int, topic: str = "in", partition: int = 0) -> None:
    store.ok("store.set_context", timestamp=1, headers=[], topic=topic, partition=partition, offset=offset)


@rules("KV-54", "OFF-5", "OFF-6")
def test_the_position_survives_a_reopen_and_is_continued(kit: Kit) -> None:
    """A reopened store loads its position: the next commit keeps the partitions written before the close."""
    kit.require(KV, ROCKSDB, "offsets", "dump")
    store = kit.open(KV, ROCKSDB, context={"timestamp": 1, "topic": "in", "partition": 0, "offset": 9})
    store.put("01", "aa")
    store.commit(0)
    store.close()
    again = kit.open(KV, ROCKSDB, context={"timestamp": 1, "topic": "in", "partition": 1, "offset": 3})
    again.put("02", "bb")
    again.commit(1)
    assert _position(kit, again) == [["in", [[0, 9], [1, 3]]]]


@rules("KV-54")
def test_every_write_advances_the_position_and_reads_do_not(kit: Kit) -> None:
    """delete, putIfAbsent that writes and putAll advance it; get, a putIfAbsent that finds the key, and a write
    without an input topic do not."""
    kit.require(KV, ROCKSDB, "offsets", "dump")
    store = kit.open(KV, ROCKSDB)
    _context(store, 5)
    assert store.delete("01") is None  # a delete of an absent key is still a write
    store.commit(0)
    assert _position(kit, store) == [["in", [[0, 5]]]]
    _context(store, 6)
    assert store.get("02") is None
    assert store.put_if_absent("02", "bb") is None
    _context(store, 7)
    assert store.put_if_absent("02", "cc") == "bb"
    store.commit(1)
    assert _position(kit, store) == [["in", [[0, 6]]]]
    _context(store, 8, partition=2)
    store.put_all([("03", "cc"), ("04", "dd")])
    store.ok("store.set_context", timestamp=1, headers=[], topic="", partition=-1, offset=-1)
    store.put("05", "ee")
    store.commit(2)
    assert _position(kit, store) == [["in", [[0, 6], [2, 8]]]]


@rules("KV-53", "KV-54", "OFF-5")
def test_an_empty_commit_writes_the_position_again(kit: Kit) -> None:
    """commit({}) wipes the offsets and the position, then writes the store's position again, as every commit does
    (OFF-5, Kafka 4.4.0); the next commit writes it too."""
    kit.require(KV, ROCKSDB, "offsets", "dump")
    store = kit.open(KV, ROCKSDB)
    _context(store, 4)
    store.put("01", "aa")
    store.commit(1)
    assert _position(kit, store) == [["in", [[0, 4]]]]
    store.ok("store.commit", changelog_offsets=[])
    assert _position(kit, store) == [["in", [[0, 4]]]]
    assert store.committed() is None
    _context(store, 5)
    store.put("02", "bb")
    store.commit(2)
    assert _position(kit, store) == [["in", [[0, 5]]]]


# --- legacy .checkpoint files and the downgrade file ---------------------------------------------------------------


def _checkpoint_lines(kit: Kit) -> set[str] | None:
    text = kit.implementation.call("store.task_files", _location(kit))["files"].get(".checkpoint")
    if text is None:
        return None
    lines = text.splitlines()
    assert lines[0] == "0" and int(lines[1]) == len(lines) - 2, text
    return set(lines[2:])


def _migrate_a_checkpoint_of_two_stores(kit: Kit) -> None:
    """The task's .checkpoint holds this store's entry (41) and another store's (17); opening this store commits its
    own entry (KV-55, OFF-19)."""
    kit.require(KV, ROCKSDB, "offsets")
    kit.require_ops("store.write_task_file", "store.task_files")
    kit.implementation.call("store.write_task_file", {**_location(kit), "file": ".checkpoint",
                                             "text": f"0\n2\n{TOPIC} 0 41\napp-other-changelog 0 17\n"})
    store = kit.open(KV, ROCKSDB)
    assert store.committed() == 41


@rules("KV-55", "OFF-19")
def test_a_migrated_checkpoint_entry_is_committed_and_leaves_the_file(kit: Kit) -> None:
    """The store's entry of the task's .checkpoint is committed and leaves the file; the file is then rewritten with the
    other stores' entries (a store migrating alone, the reference) or deleted (Kafka's task, which migrates all its
    stores at once: KV-55 accepts either)."""
    _migrate_a_checkpoint_of_two_stores(kit)
    assert _checkpoint_lines(kit) in (None, {"app-other-changelog 0 17"})


@rules("KV-55", "OFF-19")
@pytest.mark.kstate_level("hardened")
def test_migrating_a_checkpoint_keeps_the_other_stores_entries(kit: Kit) -> None:
    """Each store takes its own entries from the task's .checkpoint; the file goes once every entry is in a store.
    Hardened (KV-55): a store that migrates alone keeps the other stores' entries for them; Kafka's task migrates all
    its stores at once and deletes the file."""
    _migrate_a_checkpoint_of_two_stores(kit)
    assert _checkpoint_lines(kit) == {"app-other-changelog 0 17"}
    other = kit.open(KV, ROCKSDB, name="other")
    assert other.ok("store.committed_offset", topic="app-other-changelog", partition=0)["offset"] == 17
    assert _checkpoint_lines(kit) is None


@rules("KV-55", "OFF-19")
def test_an_unknown_checkpoint_offset_is_not_committed(kit: Kit) -> None:
    """A -4 (unknown) entry for the store's partition commits nothing: the store has no committed offset."""
    kit.require(KV, ROCKSDB, "offsets")
    kit.require_ops("store.write_task_file")
    kit.implementation.call("store.write_task_file", {**_location(kit), "file": ".checkpoint", "text": f"0\n1\n{TOPIC} 0 -4\n"})
    store = kit.open(KV, ROCKSDB)
    assert store.committed() is None


@rules("UPG-4", "OFF-20", "KV-55")
@pytest.mark.kstate_level("hardened")
def test_a_downgrade_close_merges_into_the_tasks_checkpoint(kit: Kit) -> None:
    """The downgrade .checkpoint keeps other stores' entries and writes -4 for a partition without an offset.
    Hardened (OFF-20): a store that closes alone merges into the file; Kafka's task closes all its stores and then
    writes the file with their offsets only (LegacyCheckpointingStateStore.maybeDowngradeOffsets)."""
    kit.require(KV, ROCKSDB, "offsets")
    kit.require_ops("store.write_task_file", "store.task_files")
    kit.implementation.call("store.write_task_file", {**_location(kit), "file": ".checkpoint",
                                             "text": "0\n1\napp-other-changelog 0 17\n"})
    store = kit.open(KV, ROCKSDB)
    store.put("01", "aa")
    store.close()
    again = kit.open(KV, ROCKSDB)
    assert again.committed() is None
    assert again.get("01") == "aa"
    again.ok("store.close", downgrade=True)
    assert _checkpoint_lines(kit) == {"app-other-changelog 0 17", f"{TOPIC} 0 -4"}


# --- a refused open ---------------------------------------------------------------------------------------------------


@pytest.mark.kstate_level("hardened")
@rules("KV-56", "KV-52", "OFF-7", "KV-67")
def test_a_refused_open_retried_without_ignoring_is_refused_again(kit: Kit) -> None:
    """A refused open writes nothing: retried without ignore_invalid_state it is refused again."""
    crashed_after_commit(kit, [("01", "aa")], 0)
    assert "error" in kit.open_refused(KV, ROCKSDB)
    assert "error" in kit.open_refused(KV, ROCKSDB), "a refused open must not mark the store CLOSED"
    recovered = kit.open(KV, ROCKSDB, ignore_invalid_state=True)
    assert recovered.get("01") == "aa"
    recovered.close()
    assert kit.open(KV, ROCKSDB).get("01") == "aa"


@rules("UPG-3", "UPG-1", "CL-9")
def test_a_wiped_store_is_rebuilt_by_an_older_store_type(kit: Kit) -> None:
    """Downgrade by rebuild: a plain store refuses a header store's directory; wiped, it opens and the changelog
    restores every key's value (the timestamps and headers the older type has no place for are dropped)."""
    kit.require(HDR, ROCKSDB)
    kit.require_ops("store.wipe")
    store = kit.open(HDR, ROCKSDB)
    store.context(3)
    store.put("01", value_for(HDR, h("aa"), 10, [("h", b"1")]))
    store.put("02", value_for(HDR, h("bb"), 20))
    store.put("03", value_for(HDR, h("cc"), 30))
    store.delete("02")
    store.commit(3)
    changelog = store.changelog()
    store.close()
    assert "error" in kit.open_refused(KV, ROCKSDB)
    assert "error" not in kit.implementation.call("store.wipe", {**_location(kit), "name": "store"})
    rebuilt = kit.open(KV, ROCKSDB)
    assert rebuilt.committed() is None, "a wiped store starts without committed offsets"
    rebuilt.restore(changelog)
    assert rebuilt.all() == [("01", h("aa")), ("03", h("cc"))]
