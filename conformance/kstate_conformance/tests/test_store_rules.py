"""The store's own copy of the cache, offsets, legacy-file and change-logging rules, edge cases included,
through the neutral ``store.*`` operations (CACHE-6, CACHE-9, OFF-5..7, OFF-19, OFF-20, CL-1, CL-2).

Each test here was written against a mutant of ``mutants/store_rules_mutants.py`` that the happy-path
tests of ``test_kv_contract`` let through.
"""

from __future__ import annotations

from typing import Any

import pytest

from kstate_conformance import rules
from kstate_conformance.harness import BACKENDS, FF8, MEMORY, ROCKSDB, TOPIC, Kit, i64, kit, record
from kstate_conformance.tests.test_kv_contract import HDR, KV, TS, value_for

__all__ = ["kit"]

#: A one-byte key and value, no topic, no headers: 1 + 24 + 1 + 1 + 8 + 8 + 4 (CACHE-6).
ENTRY = 47
STATUS, POSITION = b"status".hex(), b"position".hex()
OPEN = i64(1)
LOCATION = {"application_id": "app", "task_id": "0_0"}


def _fill(store: Any, *keys: str) -> None:
    for key in keys:
        store.put(key, key)


# --- CACHE-6: what an entry counts, in which unit, and when eviction starts -------------------------------------


@rules("CACHE-6")
@BACKENDS
def test_a_cache_filled_exactly_to_its_limit_evicts_nothing(kit: Kit, backend: str) -> None:
    """Eviction starts only when the cache holds MORE than its maximum size."""
    store = kit.open(KV, backend, caching=True, cache_max_bytes=2 * ENTRY)
    _fill(store, "01", "02")
    assert store.changelog() == [], "two entries of 47 bytes fit a 94-byte cache exactly"
    _fill(store, "03")
    assert store.changelog() == [record("01", "01", 0), record("02", "02", 0), record("03", "03", 0)]


@rules("CACHE-6")
@BACKENDS
def test_the_topic_counts_in_java_chars(kit: Kit, backend: str) -> None:
    """The captured topic counts its UTF-16 code units: 'é𝄞' is 3 chars (6 UTF-8 bytes, 2 code points)."""
    entry = ENTRY + 3
    roomy = kit.open(KV, backend, name="roomy", caching=True, cache_max_bytes=2 * entry + 2)
    roomy.context(0, topic="é𝄞")
    _fill(roomy, "01", "02")
    assert roomy.changelog() == [], "2 x 50 bytes fit in 102; counted in UTF-8 bytes they would not"
    tight = kit.open(KV, backend, name="tight", caching=True, cache_max_bytes=2 * entry - 1)
    tight.context(0, topic="é𝄞")
    _fill(tight, "01", "02")
    assert tight.changelog() == [record("01", "01", 0), record("02", "02", 0)], \
        "2 x 50 bytes exceed 99; counted in code points they would not"


@rules("CACHE-6")
@BACKENDS
def test_context_headers_count_in_entry_size(kit: Kit, backend: str) -> None:
    """Each header of the captured context counts its key's chars and its value's bytes."""
    store = kit.open(KV, backend, caching=True, cache_max_bytes=2 * (ENTRY + 1 + 10) - 1)
    store.context(0, [["k", "00" * 10]])
    _fill(store, "01")
    assert store.changelog() == []
    _fill(store, "02")
    assert store.changelog() == [record("01", "01", 0), record("02", "02", 0)]


@rules("CACHE-6", "RST-4")
@BACKENDS
def test_a_clean_entry_is_sized_without_the_readers_context(kit: Kit, backend: str) -> None:
    """A value cached by a read has no topic and no headers, whatever the current context is."""
    store = kit.open(KV, backend, caching=True, cache_max_bytes=2 * ENTRY + 6)
    store.restore([record("01", "01", 0), record("02", "02", 0)])  # in the store, not in the cache
    _fill(store, "03")
    store.context(0, [["h", "00" * 8]], topic="x" * 40)
    assert store.get("01") == "01"
    assert store.changelog() == [], "47 + 47 bytes fit in 100: the clean entry must not count the reader's context"
    assert store.get("02") == "02"
    assert store.changelog() == [record("03", "03", 0)], "a third entry evicts the eldest, the dirty 03"


# --- CACHE-9: commit flushes the cache before the offsets -----------------------------------------------------


@pytest.mark.kstate_level("hardened")
@rules("CACHE-9", "KV-50", "KV-67")
def test_commit_without_an_explicit_flush_covers_the_cached_writes(kit: Kit) -> None:
    """``commit`` flushes the cache first, so a crash right after it loses none of the writes it covers."""
    kit.require(KV, ROCKSDB, "crash", "offsets", "caching")
    store = kit.open(KV, ROCKSDB, caching=True)
    _fill(store, "01", "02")
    store.commit(5)
    assert store.changelog() == [record("01", "01", 0), record("02", "02", 0)]
    store.crash()
    after = kit.open(KV, ROCKSDB, ignore_invalid_state=True)
    assert after.committed() == 5
    assert after.all() == [("01", "01"), ("02", "02")]


@pytest.mark.kstate_level("hardened")
@rules("RST-8", "KV-50", "KV-67")
def test_writes_after_a_restore_are_durable_again(kit: Kit) -> None:
    """The WAL is off only while restoring: a write committed after the restore survives a crash."""
    kit.require(KV, ROCKSDB, "crash", "offsets")
    store = kit.open(KV, ROCKSDB)
    store.restore([record("01", "01", 0), record("02", "02", 0)], commit_offsets=True)
    assert store.committed() == 1
    _fill(store, "03")
    store.commit(2)
    store.crash()
    after = kit.open(KV, ROCKSDB, ignore_invalid_state=True)
    assert after.committed() == 2
    assert after.all() == [("01", "01"), ("02", "02"), ("03", "03")]


# --- OFF-5, OFF-6, OFF-7 at the store ---------------------------------------------------------------------------


def _offsets_family(store: Any) -> dict[str, str]:
    family: dict[str, str] = store.dump()["offsets"]
    return family


def _position_bytes(topic: str, partition: int, offset: int) -> str:
    name = topic.encode().hex()
    return "00" + "00000001" + f"{len(topic):08x}" + name + "00000001" + f"{partition:08x}" + i64(offset)


@pytest.mark.kstate_level("hardened")
@rules("OFF-5", "KV-54", "KV-67")
def test_the_position_is_persisted_by_commit_itself(kit: Kit) -> None:
    """The position reaches disk with the commit, not only at close: a crash after the commit keeps it."""
    kit.require(KV, ROCKSDB, "crash", "offsets", "dump")
    store = kit.open(KV, ROCKSDB, context={"timestamp": 1, "topic": "in", "partition": 2, "offset": 9})
    _fill(store, "01")
    store.commit(0)
    store.crash()
    after = kit.open(KV, ROCKSDB, ignore_invalid_state=True)
    position = _offsets_family(after).get(POSITION)
    assert position is not None and position.startswith(_position_bytes("in", 2, 9)), position


@rules("OFF-5", "OFF-4")
def test_an_empty_commit_wipes_the_offsets_and_writes_the_position(kit: Kit) -> None:
    """An empty commit takes the wipe path (every offset and the position go), then writes the position, as every
    commit does (Kafka 4.4.0's AbstractColumnFamilyAccessor.commit): status and the store's position stay."""
    kit.require(KV, ROCKSDB, "offsets", "dump")
    store = kit.open(KV, ROCKSDB, context={"timestamp": 1, "topic": "in", "partition": 0, "offset": 3})
    _fill(store, "01")
    store.commit(7)
    before = _offsets_family(store)
    assert POSITION in before
    store.ok("store.commit", changelog_offsets=[])
    assert _offsets_family(store) == {STATUS: OPEN, POSITION: before[POSITION]}


@pytest.mark.kstate_level("hardened")
@rules("OFF-6", "KV-52", "KV-67")
def test_a_crash_before_the_first_commit_is_detected(kit: Kit) -> None:
    """OPEN is persisted at open, so a store killed before it ever committed is refused on reopen."""
    kit.require(KV, ROCKSDB, "crash", "offsets")
    store = kit.open(KV, ROCKSDB)
    _fill(store, "01")
    store.crash()
    assert "error" in kit.open_refused(KV, ROCKSDB), "an unclean shutdown before any commit must be detected"
    kit.open(KV, ROCKSDB, ignore_invalid_state=True)


@pytest.mark.kstate_level("hardened")
@rules("OFF-7", "OFF-6", "KV-56", "KV-67")
def test_a_refused_open_retried_is_refused_again(kit: Kit) -> None:
    """A refused open never opened the store, so it writes no CLOSED: retrying without ignoring fails again."""
    kit.require(KV, ROCKSDB, "crash", "offsets")
    store = kit.open(KV, ROCKSDB)
    _fill(store, "01")
    store.commit(1)
    store.crash()
    assert "error" in kit.open_refused(KV, ROCKSDB)
    assert "error" in kit.open_refused(KV, ROCKSDB), "the refused open must leave the status OPEN"
    after = kit.open(KV, ROCKSDB, ignore_invalid_state=True)
    assert after.committed() == 1


# --- OFF-19: migrating a task's legacy .checkpoint --------------------------------------------------------------


def _require_task_files(kit: Kit) -> None:
    kit.require(KV, ROCKSDB, "offsets")
    for name in ("store.write_task_file", "store.task_files"):
        if not kit.implementation.supports(name):
            pytest.skip(f"the implementation does not offer {name}")


def _write_checkpoint(kit: Kit, text: str) -> None:
    out = kit.implementation.call("store.write_task_file", {"state_dir": str(kit.state_dir), **LOCATION, "file": ".checkpoint",
                                                   "text": text})
    assert "error" not in out, out


def _task_checkpoint(kit: Kit) -> str | None:
    files = kit.implementation.call("store.task_files", {"state_dir": str(kit.state_dir), **LOCATION})["files"]
    text: str | None = files.get(".checkpoint")
    return text


def _committed_and_closed(kit: Kit, offset: int) -> None:
    store = kit.open(KV, ROCKSDB)
    _fill(store, "01")
    store.commit(offset)
    store.close()


@rules("OFF-19")
def test_a_checkpoint_without_this_stores_partitions_commits_nothing(kit: Kit) -> None:
    """A store that receives no offset from the file is not committed to (an empty commit would wipe it)."""
    _require_task_files(kit)
    _committed_and_closed(kit, 7)
    _write_checkpoint(kit, "0\n1\napp-other-changelog 0 3\n")
    assert kit.open(KV, ROCKSDB).committed() == 7


@rules("OFF-19", "OFF-14")
def test_unknown_offsets_in_the_checkpoint_are_dropped(kit: Kit) -> None:
    """A -4 entry of the store's own partition is dropped, not committed as "no offset"."""
    _require_task_files(kit)
    _committed_and_closed(kit, 7)
    _write_checkpoint(kit, f"0\n1\n{TOPIC} 0 -4\n")
    assert kit.open(KV, ROCKSDB).committed() == 7


@rules("OFF-19")
@pytest.mark.kstate_level("hardened")
def test_each_store_of_a_task_receives_its_own_offsets(kit: Kit) -> None:
    """One file holds the task's partitions: every store gets its own, whichever store opens first. Hardened
    (KV-55): stores opened one at a time each migrate their own entries; Kafka's task migrates all its stores at
    once and deletes the file, so a store it did not open with the others finds nothing left."""
    _require_task_files(kit)
    _write_checkpoint(kit, "0\n2\napp-s1-changelog 0 11\napp-s2-changelog 0 22\n")
    first = kit.open(KV, ROCKSDB, name="s1")
    assert first.ok("store.committed_offset", topic="app-s1-changelog", partition=0)["offset"] == 11
    second = kit.open(KV, ROCKSDB, name="s2")
    assert second.ok("store.committed_offset", topic="app-s2-changelog", partition=0)["offset"] == 22


# --- OFF-20: the downgrade .checkpoint ----------------------------------------------------------------------


@rules("OFF-20", "OFF-14")
def test_a_downgrade_close_writes_minus_four_for_a_partition_never_committed(kit: Kit) -> None:
    _require_task_files(kit)
    store = kit.open(KV, ROCKSDB)
    _fill(store, "01")
    store.ok("store.close", downgrade=True)
    assert _task_checkpoint(kit) == f"0\n1\n{TOPIC} 0 -4\n"


@rules("OFF-20")
@pytest.mark.kstate_level("hardened")
def test_a_downgrade_checkpoint_consolidates_the_tasks_stores(kit: Kit) -> None:
    """One per-task file with every store's partition, whichever store closes last. Hardened (OFF-20): stores that
    close one at a time each merge into the file; Kafka's task closes all its stores at once and writes their
    offsets only (LegacyCheckpointingStateStore.maybeDowngradeOffsets), so the last close's file holds its own."""
    _require_task_files(kit)
    for name, offset in (("s1", 5), ("s2", 6)):
        store = kit.open(KV, ROCKSDB, name=name)
        _fill(store, "01")
        store.ok("store.commit", changelog_offsets=[[f"app-{name}-changelog", 0, offset]])
    for opened in kit.opened:
        opened.ok("store.close", downgrade=True)
    text = _task_checkpoint(kit)
    assert text is not None
    lines = text.split("\n")
    assert lines[:2] == ["0", "2"] and lines[-1] == ""
    assert sorted(lines[2:-1]) == ["app-s1-changelog 0 5", "app-s2-changelog 0 6"]


# --- CL-1, CL-2 at the store -----------------------------------------------------------------------------------


@rules("CL-2", "CL-4")
@pytest.mark.parametrize("store_type", [TS, HDR])
@BACKENDS
def test_a_stored_timestamp_of_minus_one_cannot_be_logged(kit: Kit, store_type: str, backend: str) -> None:
    """-1 is a negative record timestamp like any other: the write is refused, not logged at the context's time."""
    store = kit.open(store_type, backend)
    store.context(5)
    value = value_for(store_type, "aa", -1)
    assert value.find(FF8) >= 0
    assert store.refused("store.put", key="01", value=value)
    assert store.changelog() == []


@rules("CL-1")
@pytest.mark.parametrize("backend", [ROCKSDB, MEMORY])
def test_put_all_logs_one_record_per_entry(kit: Kit, backend: str) -> None:
    """A putAll logs every entry in order, a key written twice included."""
    store = kit.open(KV, backend)
    store.context(3)
    store.put_all([("01", "aa"), ("02", "bb"), ("01", "cc")])
    assert store.changelog() == [record("01", "aa", 3), record("02", "bb", 3), record("01", "cc", 3)]
    assert store.all() == [("01", "cc"), ("02", "bb")]
