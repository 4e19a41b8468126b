"""Mutants of rules at the places of the rule x place matrix the suite reached last (issue 32, section E): the pure
changelog and position operations stay right, one family's store gets one realistic bug.

Each swaps one layer of ``store.open`` (the logging layer, the restorer, or a store class's commit); the tests that
kill them are ``tests/test_store_rules_places.py``.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any
from unittest import mock

from kstate.codecs import changelog as cl
from kstate.codecs.offsets import CHECKPOINT_FORMAT, POSITION_KEY
from kstate.codecs.position import meaningful_bytes
from kstate.codecs.store_types import VERSIONED_TYPES, WINDOW_TYPES, StoreType
from kstate.errors import DecodeError, InvalidArgumentError, KStateError
from kstate.ops.store_ops import DEFAULT_BUILDER, StoreBuilder
from kstate.storage_files import read_checkpoint_file
from kstate.stores.api import Backend, ProcessorStateError
from kstate.stores.factory import open_bytes_store
from kstate.stores.families import changelogging_store
from kstate.stores.life import LifeState
from kstate.stores.restore import RestoreResult
from kstate_conformance.adapter import Handler
from kstate_conformance.mutants import mutant
from kstate_conformance.mutants.hard_places_mutants import SEGMENTED_TYPES, _open_with, _rocksdb_with
from kstate_conformance.mutants.store_rules_mutants import _with_patched
from kstate_conformance.store_types import STORE_OP_PREFIXES

FAMILY = "store_rules"


def _logging_for(types: frozenset[StoreType], cls: type) -> dict[str, Handler]:
    """``store.open`` whose logging layer for ``types`` is ``cls``; every other type logs as the reference does."""

    def logging_layer(inner: Any, store_type: StoreType, context: Any, sink: Any) -> Any:
        if StoreType(store_type) in types:
            return cls(inner, store_type, context, sink)
        return changelogging_store(inner, store_type, context, sink)

    return _open_with(replace(DEFAULT_BUILDER, logging_layer=logging_layer))


def _restoring_for(types: frozenset[StoreType],
                   change: Callable[[cl.ChangelogRecord], cl.ChangelogRecord]) -> dict[str, Handler]:
    """``store.open`` whose restore of ``types`` passes every record through ``change`` first."""

    def restorer(store: Any, store_type: StoreType, records: Sequence[cl.ChangelogRecord], batch_size: int,
                 after_batch: Any) -> RestoreResult:
        if StoreType(store_type) in types:
            records = [change(r) for r in records]
        return DEFAULT_BUILDER.restorer(store, store_type, records, batch_size, after_batch)

    builder: StoreBuilder = replace(DEFAULT_BUILDER, restorer=restorer)
    return _open_with(builder)


def _everywhere(patches: dict[str, Any]) -> dict[str, Handler]:
    """Every store operation run with ``patches`` in place (the stores read them at any call, not only at open)."""
    from kstate.ops import load_all

    return {name: _with_patched(name, patches) for name in load_all()
            if name.startswith(STORE_OP_PREFIXES)}


# --- CL-2: a store without headers logs none ------------------------------------------------------------------------


class _SinkWithContextHeaders:
    """The changelog sink of one store: every record it takes gets the record context's headers, as a Kafka record
    forwarded downstream does, though a store without headers logs none (CL-2)."""

    def __init__(self, sink: Any, context: Any) -> None:
        self._sink, self._context = sink, context

    def append(self, record: cl.ChangelogRecord) -> None:
        self._sink.append(dataclasses.replace(record, headers=tuple(self._context.current.headers)))

    def extend(self, records: Any) -> None:
        for record in records:
            self.append(record)


#: The window and versioned types without headers (the key-value and session ones are checked elsewhere).
_PLAIN_WINDOW_AND_VERSIONED = frozenset(StoreType(t) for t in ("window", "timestamped_window", "versioned_kv"))


@mutant("plain-window-and-versioned-log-context-headers", "a window, timestamped window or versioned store without "
        "headers logs the record context's headers", FAMILY, rules=("CL-2",))
def _plain_window_and_versioned_log_context_headers() -> dict[str, Handler]:
    def logging_layer(inner: Any, store_type: StoreType, context: Any, sink: Any) -> Any:
        if StoreType(store_type) in _PLAIN_WINDOW_AND_VERSIONED:
            sink = _SinkWithContextHeaders(sink, context)
        return changelogging_store(inner, store_type, context, sink)

    return _open_with(replace(DEFAULT_BUILDER, logging_layer=logging_layer))


# --- VS-37, KV-12: a crashed store and a restore batch -------------------------------------------------------------


class _CrashedAcceptsRestore:
    """A crashed store takes a restore batch and drops it, as Kafka's segmented stores check no open flag: the
    close path refuses (the easy place), the crash path answers."""

    _life: Any

    def restoring(self) -> Any:
        if self._life is LifeState.CRASHED:
            return contextlib.nullcontext()
        return super().restoring()  # type: ignore[misc]

    def restore_batch(self, entries: Any) -> None:
        if self._life is not LifeState.CRASHED:
            super().restore_batch(entries)  # type: ignore[misc]

    def restore_records(self, records: Any) -> None:
        if self._life is not LifeState.CRASHED:
            super().restore_records(records)  # type: ignore[misc]


@mutant("crashed-store-accepts-restore", "a crashed RocksDB versioned, window or session store answers a restore "
        "batch, dropping it, instead of refusing it", FAMILY, rules=("VS-37", "SS-37"))
def _crashed_store_accepts_restore() -> dict[str, Handler]:
    return _rocksdb_with(_CrashedAcceptsRestore, SEGMENTED_TYPES | frozenset(VERSIONED_TYPES))


# --- OFF-9: the position row of a versioned store -----------------------------------------------------------------


def _unpadded(cf: Any, position: Any) -> Any:
    return {**cf, POSITION_KEY: meaningful_bytes(position)}


class _CommitsUnpaddedPosition:
    """A commit writes the position's meaningful bytes only, without the zeros of Kafka's capacity: the pure
    ``position`` operations stay right, and every reader decodes the row (OFF-10)."""

    def commit(self, changelog_offsets: Any) -> Any:
        with mock.patch("kstate.stores.offsets.commit_position", _unpadded):
            return super().commit(changelog_offsets)  # type: ignore[misc]


@mutant("versioned-position-unpadded", "a versioned store commits the position without Kafka's zero padding",
        FAMILY, rules=("OFF-9",))
def _versioned_position_unpadded() -> dict[str, Handler]:
    return _rocksdb_with(_CommitsUnpaddedPosition, frozenset(VERSIONED_TYPES))


# --- RST-1, RST-3: a tombstone in a restore batch of its own -------------------------------------------------------


class _BatchLocalTombstones:
    """A window restore batch skips a tombstone for a key the batch itself did not write, taking it to
    delete nothing: right for a restore in one batch, wrong when an earlier batch wrote the key."""

    def _restore_rows(self, entries: Any, checked: Any) -> None:
        entries = list(entries)
        written = {key for key, value in entries if value is not None}
        super()._restore_rows([(k, v) for k, v in entries if v is not None or k in written],  # type: ignore[misc]
                              checked)


@mutant("window-restore-batch-local-tombstones", "a window restore batch skips the tombstones of keys it did not "
        "write itself", FAMILY, rules=("RST-1", "RST-3"))
def _window_restore_batch_local_tombstones() -> dict[str, Handler]:
    return _rocksdb_with(_BatchLocalTombstones, frozenset(WINDOW_TYPES))


# --- OFF-24: a committed -4 -----------------------------------------------------------------------------------------


class _UnknownOffsetAsNone:
    """A store answers a committed -4 (``OFFSET_UNKNOWN``) as no offset, doing the task's reading in the store: the
    key-value store stays right."""

    def committed_offset(self, partition: Any) -> int | None:
        offset: int | None = super().committed_offset(partition)  # type: ignore[misc]
        return None if offset == -4 else offset


@mutant("segmented-and-versioned-unknown-offset-as-none", "a window, session or versioned store answers a committed "
        "-4 as null", FAMILY, rules=("OFF-24",))
def _segmented_and_versioned_unknown_offset_as_none() -> dict[str, Handler]:
    return _rocksdb_with(_UnknownOffsetAsNone, SEGMENTED_TYPES | frozenset(VERSIONED_TYPES))


# --- WS-35: a restore batch checked record by record ----------------------------------------------------------------


class _RestoreRecordByRecord:
    """A window restore writes its batch one record at a time, each checked as it comes: a bad record is refused
    after the records before it were written."""

    def _restore_rows(self, entries: Any, checked: Any) -> None:
        for entry in list(entries):
            super()._restore_rows([entry], checked)  # type: ignore[misc]


@mutant("window-restore-record-by-record", "a window restore batch is written record by record, so a bad record is "
        "refused after the ones before it were stored", FAMILY, rules=("WS-35",))
def _window_restore_record_by_record() -> dict[str, Handler]:
    return _rocksdb_with(_RestoreRecordByRecord, frozenset(WINDOW_TYPES))


# --- OFF-17: the store's migration reads the expected count ---------------------------------------------------------


def _checkpoint_counting_skipped(path: Any, *, unknown_as_none: bool = False) -> Any:
    """``OffsetCheckpoint.read`` that does not decrement the expected count for a skipped negative offset: a file
    with one refuses as short of entries (the pure ``checkpoint`` operations stay right)."""
    entries = read_checkpoint_file(path, unknown_as_none=unknown_as_none)
    if entries:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
        skipped = [f for f in (line.split() for line in lines[2:]) if len(f) == 3 and f[2].lstrip("-").isdigit()
                   and int(f[2]) < 0 and int(f[2]) != -4]
        if skipped:
            raise DecodeError(CHECKPOINT_FORMAT,
                              f"Expected {len(entries) + len(skipped)} entries but found only {len(entries)}")
    return entries


@mutant("store-checkpoint-counts-skipped-entries", "the legacy .checkpoint a store migrates at open counts a skipped "
        "negative offset against the expected count", FAMILY, rules=("OFF-17",))
def _store_checkpoint_counts_skipped_entries() -> dict[str, Handler]:
    return _everywhere({"kstate.stores.offsets.read_checkpoint_file": _checkpoint_counting_skipped})


# --- LAY-1: the task directory of a segmented store ---------------------------------------------------------------


@mutant("segmented-task-directory-partition-first", "a window or session store reads its task id as "
        "<partition>_<subtopology>, so task 1_2's segments go under 2_1", FAMILY, rules=("LAY-1",))
def _segmented_task_directory_partition_first() -> dict[str, Handler]:
    def open_store(store_type: StoreType, backend: Backend, *, task_id: str = "0_0", **rest: Any) -> Any:
        if StoreType(store_type) in SEGMENTED_TYPES and Backend(backend) is Backend.ROCKSDB:
            task_id = "_".join(reversed(task_id.split("_", 1)))
        return open_bytes_store(store_type, backend, task_id=task_id, **rest)

    return _open_with(replace(DEFAULT_BUILDER, open_bytes_store=open_store))


# --- WIN-9: the window whose truncated end equals its start -------------------------------------------------------


def _windowed_refusing_size_zero_only(self: Any, entries: Any) -> Any:
    """``WindowStoreBase._windowed`` that refuses an answer at window size 0 only: the window at start
    Long.MAX_VALUE, whose end is truncated to its start, is answered as a window."""
    if entries and self.window_size == 0:
        raise InvalidArgumentError("window_size_ms", "a window of size 0 cannot be answered")
    return entries


@mutant("window-at-long-max-answered", "a window store answers the window at start Long.MAX_VALUE, whose end is "
        "truncated to Long.MAX_VALUE, equal to its start", FAMILY, rules=("WIN-9",))
def _window_at_long_max_answered() -> dict[str, Handler]:
    return _everywhere({"kstate.stores.window.WindowStoreBase._windowed": _windowed_refusing_size_zero_only})


# --- OFF-19, OFF-18, OFF-16: the task's legacy files at a versioned, window or session store ----------------------


def _no_checkpoint_entries(task_dir: Any, store: str, changelog_partitions: Any) -> dict[Any, int]:
    """``read_checkpoint_entries`` that finds none: the store leaves the task's ``.checkpoint`` to the others."""
    return {}


@mutant("versioned-ignores-task-checkpoint", "a versioned store does not migrate its entries of the task's legacy "
        ".checkpoint at open, as if it had never had any (the key-value, window and session stores do)", FAMILY,
        rules=("OFF-19",))
def _versioned_ignores_task_checkpoint() -> dict[str, Handler]:
    return _everywhere({"kstate.stores.versioned.read_checkpoint_entries": _no_checkpoint_entries})


def _entries_split_on_one_space(task_dir: Any, store: str, changelog_partitions: Any) -> Any:
    """``read_checkpoint_entries`` whose entry lines are split on single spaces (``line.split(" ")``), not on runs
    of Java whitespace: a tab or two spaces between fields make the line malformed (the pure reader stays right)."""
    from kstate.storage_files import task_checkpoint_path
    from kstate.stores.offsets import read_checkpoint_entries

    path = task_checkpoint_path(task_dir)
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines()[2:]:
            fields = line.split(" ")
            if len(fields) != 3 or not all(f.lstrip("-").isdigit() for f in fields[1:]):
                raise ProcessorStateError(f"Error migrating checkpoint file for task '{task_dir.name}': "
                                          f"Malformed line in checkpoint file: {line!r}")
    return read_checkpoint_entries(task_dir, store, changelog_partitions)


@mutant("segmented-checkpoint-split-on-one-space", "a window or session store migrating the task's .checkpoint "
        "splits its lines on single spaces, refusing a tab or two spaces Java reads", FAMILY, rules=("OFF-16",))
def _segmented_checkpoint_split_on_one_space() -> dict[str, Handler]:
    return _everywhere({"kstate.stores.segmented.read_checkpoint_entries": _entries_split_on_one_space})


# --- OFF-20, OFF-14, OFF-13: the downgrade .checkpoint of a versioned, window or session store --------------------


def _downgrade_patches(write: Callable[..., None]) -> dict[str, Handler]:
    """Every store operation with the versioned and segmented stores' downgrade writer replaced by ``write`` (the
    key-value store's writer, ``StoreOffsets.write_legacy_files``, stays the reference's)."""
    return _everywhere({"kstate.stores.segmented.write_downgrade_checkpoint": write,
                        "kstate.stores.versioned.write_downgrade_checkpoint": write})


@mutant("segmented-and-versioned-downgrade-writes-nothing", "a versioned, window or session store closed for a "
        "downgrade closes as usual and writes no .checkpoint", FAMILY, rules=("OFF-20",))
def _segmented_and_versioned_downgrade_writes_nothing() -> dict[str, Handler]:
    return _downgrade_patches(lambda task_dir, store, offsets: None)


def _downgrade_without_unknown(task_dir: Any, store: str, offsets: Any) -> None:
    from kstate.stores.offsets import write_downgrade_checkpoint

    write_downgrade_checkpoint(task_dir, store, {tp: off for tp, off in offsets.items() if off is not None})


@mutant("segmented-and-versioned-downgrade-drops-unknown", "a versioned, window or session store closed for a "
        "downgrade leaves out a partition it never committed, instead of writing -4", FAMILY, rules=("OFF-14",))
def _segmented_and_versioned_downgrade_drops_unknown() -> dict[str, Handler]:
    return _downgrade_patches(_downgrade_without_unknown)


def _downgrade_without_final_newline(task_dir: Any, store: str, offsets: Any) -> None:
    """The file written as ``"\\n".join(lines)``: the last line has no terminator (Java reads it; no writer of
    Kafka's writes it, OFF-13)."""
    from kstate.storage_files import task_checkpoint_path
    from kstate.stores.offsets import write_downgrade_checkpoint

    write_downgrade_checkpoint(task_dir, store, offsets)
    path = task_checkpoint_path(task_dir)
    path.write_text(path.read_text(encoding="utf-8").rstrip("\n"), encoding="utf-8")


@mutant("segmented-and-versioned-downgrade-no-final-newline", "a versioned, window or session store closed for a "
        "downgrade writes the .checkpoint without the last line's newline", FAMILY, rules=("OFF-13",))
def _segmented_and_versioned_downgrade_no_final_newline() -> dict[str, Handler]:
    return _downgrade_patches(_downgrade_without_final_newline)


# --- RST-7: a timestamped window store rebuilt from a plain store's changelog -------------------------------------


@mutant("timestamped-window-rebuilt-at-minus-one", "a timestamped window store restored from a changelog stamps "
        "every row -1, as an upgrade in place does, instead of the record's timestamp", FAMILY, rules=("RST-7",))
def _timestamped_window_rebuilt_at_minus_one() -> dict[str, Handler]:
    return _restoring_for(frozenset({StoreType("timestamped_window")}),
                          lambda r: dataclasses.replace(r, timestamp=-1))


# --- RST-8: the segments a restore writes ------------------------------------------------------------------------


def _segment_unlogged_writes_unflushed(self: Any) -> Any:
    """``RocksDBEngine.unlogged_writes`` that, in a segment's database (``<task>/<store>/<store>.<id>``, not
    ``<task>/rocksdb/<store>``), turns the WAL off and never flushes: a restore's rows and offsets stay in the
    memtables a kill loses. The key-value and versioned databases keep the reference's flush."""
    from kstate.stores.engine import RocksDBEngine

    if self.path.parent.name == "rocksdb":
        return _ORIGINAL_UNLOGGED_WRITES(self)

    @contextlib.contextmanager
    def wal_off() -> Any:
        RocksDBEngine._check(self)
        self._write_options.disable_wal = True
        try:
            yield
        finally:
            self._write_options.disable_wal = False

    return wal_off()


def _original_unlogged_writes() -> Any:
    from kstate.stores.engine import RocksDBEngine

    return RocksDBEngine.unlogged_writes


_ORIGINAL_UNLOGGED_WRITES = _original_unlogged_writes()


@mutant("segment-restore-never-flushed", "a window or session store restores with the WAL off and never flushes "
        "its segments when the restore ends", FAMILY, rules=("RST-8",))
def _segment_restore_never_flushed() -> dict[str, Handler]:
    return _everywhere({"kstate.stores.engine.RocksDBEngine.unlogged_writes": _segment_unlogged_writes_unflushed})


# --- WS-8, WS-42, SS-15: the segments a restore batch expires ------------------------------------------------------


class _RestoreExpiresNothing:
    """A restore batch advances the stream time but deletes no expired segment (processing writes still do)."""

    segments: Any

    def _restore_rows(self, entries: Any, checked: Any) -> None:
        with mock.patch.object(self.segments, "cleanup_expired_segments", lambda stream_time: None):
            super()._restore_rows(entries, checked)  # type: ignore[misc]


@mutant("segmented-restore-expires-nothing", "a window or session restore batch advances the stream time but "
        "deletes no expired segment", FAMILY, rules=("WS-8", "SS-15"))
def _segmented_restore_expires_nothing() -> dict[str, Handler]:
    return _rocksdb_with(_RestoreExpiresNothing, SEGMENTED_TYPES)


# --- VS-36, VS-17, VS-20: a versioned store's restore ----------------------------------------------------------------


class _RestoreSkipsUnplaceable:
    """A versioned restore skips, record by record, a record whose version cannot be placed (a negative segment),
    answering the batch as restored."""

    def restore_records(self, records: Any) -> None:
        for r in records:
            try:
                super().restore_records([r])  # type: ignore[misc]
            except KStateError:
                continue


@mutant("versioned-restore-skips-negative-segment", "a versioned restore skips a record that would move a version "
        "to a negative segment instead of refusing the batch", FAMILY, rules=("VS-36",))
def _versioned_restore_skips_negative_segment() -> dict[str, Handler]:
    return _rocksdb_with(_RestoreSkipsUnplaceable, frozenset(VERSIONED_TYPES))


class _RestoreCommitsNoOffsets:
    """A versioned store's commit within a restore writes the rows but drops the changelog offsets."""

    _in_restore = False

    def restoring(self) -> Any:
        inner = super().restoring()  # type: ignore[misc]

        @contextlib.contextmanager
        def mode() -> Any:
            self._in_restore = True
            try:
                with inner:
                    yield
            finally:
                self._in_restore = False

        return mode()

    def commit(self, changelog_offsets: Any) -> Any:
        return super().commit({} if self._in_restore else changelog_offsets)  # type: ignore[misc]


@mutant("versioned-restore-commits-no-offsets", "a versioned store's commits within a restore write its rows but "
        "no changelog offset", FAMILY, rules=("VS-17",))
def _versioned_restore_commits_no_offsets() -> dict[str, Handler]:
    return _rocksdb_with(_RestoreCommitsNoOffsets, frozenset(VERSIONED_TYPES))


def _memory_restore_without_tombstones(self: Any, records: Any) -> None:
    """The in-memory versioned store's restore skips tombstones, taking a deleted key to need no row."""
    from kstate.stores.versioned import RocksDBVersionedStore

    RocksDBVersionedStore.restore_records(self, [r for r in records if r.value is not None])


@mutant("in-memory-versioned-restore-skips-tombstones", "the in-memory versioned store's restore skips tombstones "
        "(the RocksDB one applies them)", FAMILY, rules=("VS-20",))
def _in_memory_versioned_restore_skips_tombstones() -> dict[str, Handler]:
    return _everywhere({"kstate.stores.versioned.InMemoryVersionedStore.restore_records":
                        _memory_restore_without_tombstones})


def _downgrade_beside_the_store(task_dir: Any, store: str, offsets: Any) -> None:
    """The downgrade ``.checkpoint`` written in the store's own directory (``<task>/<store>/`` for a window or
    session store, ``<task>/rocksdb/`` for a versioned one), where no older version looks for it (LAY-4)."""
    from kstate.stores.offsets import write_downgrade_checkpoint

    beside = task_dir / store if (task_dir / store).is_dir() else task_dir / "rocksdb"
    write_downgrade_checkpoint(beside, store, offsets)


@mutant("segmented-and-versioned-downgrade-checkpoint-beside-the-store", "a versioned, window or session store "
        "closed for a downgrade writes the .checkpoint in its own directory, not the task's", FAMILY,
        rules=("LAY-4",))
def _segmented_and_versioned_downgrade_checkpoint_beside_the_store() -> dict[str, Handler]:
    return _downgrade_patches(_downgrade_beside_the_store)


# --- OPS-2: zero bytes taken for null ----------------------------------------------------------------------------


class _EmptyWindowValueAsNull:
    """``if not value`` for ``if value is None``: a window put of zero bytes deletes."""

    def put(self, key: bytes, value: bytes | None, window_start: int) -> None:
        super().put(key, value or None, window_start)  # type: ignore[misc]


class _EmptyVersionedValueAsNull:
    """``if not value`` for ``if value is None``: a versioned put of zero bytes is a tombstone."""

    def put(self, key: bytes, value: bytes | None, timestamp: int) -> int:
        result: int = super().put(key, value or None, timestamp)  # type: ignore[misc]
        return result


@mutant("window-empty-value-as-null", "a window store takes a value of zero bytes for null, deleting the window "
        "instead of storing it", FAMILY, rules=("OPS-2",))
def _window_empty_value_as_null() -> dict[str, Handler]:
    return _rocksdb_with(_EmptyWindowValueAsNull, frozenset(WINDOW_TYPES))


@mutant("versioned-empty-value-as-null", "a versioned store takes a value of zero bytes for null, writing a "
        "tombstone instead of the value", FAMILY, rules=("OPS-2",))
def _versioned_empty_value_as_null() -> dict[str, Handler]:
    return _rocksdb_with(_EmptyVersionedValueAsNull, frozenset(VERSIONED_TYPES))


# --- LAY-16, LAY-15: links planted in a window or session store's directories -------------------------------------


def _check_database_files_but_segments(path: Any, store: str | None = None) -> None:
    """``check_database_files`` run for a key-value or versioned database (``<task>/rocksdb/<store>``) only: a
    segment's directory goes to RocksDB unchecked, which follows a ``LOCK`` link and creates its target."""
    if Path(path).parent.name == "rocksdb":
        _ORIGINAL_CHECK_DATABASE_FILES(path, store)


def _original_check_database_files() -> Any:
    from kstate.stores.engine import check_database_files

    return check_database_files


_ORIGINAL_CHECK_DATABASE_FILES = _original_check_database_files()


@mutant("segment-database-files-unchecked", "a window or session store opens its segments without checking their "
        "files first, so RocksDB follows a LOCK link", FAMILY, rules=("LAY-16",))
def _segment_database_files_unchecked() -> dict[str, Handler]:
    return _everywhere({"kstate.stores.engine.check_database_files": _check_database_files_but_segments})


def _entries_following_links(task_dir: Any, store: str, changelog_partitions: Any) -> Any:
    """``read_checkpoint_entries`` that follows a ``.checkpoint`` link, as ``Files.newBufferedReader`` does, and
    reads its target's entries for the store."""
    import os

    from kstate.storage_files import read_checkpoint_file, task_checkpoint_path
    from kstate.stores.offsets import read_checkpoint_entries

    path = task_checkpoint_path(task_dir)
    if path.is_symlink():
        partitions = {(tp.topic, tp.partition) for tp in changelog_partitions}
        entries = read_checkpoint_file(os.path.realpath(path))
        return {tp: off for tp, off in entries.items() if tp in partitions and off is not None and off >= 0}
    return read_checkpoint_entries(task_dir, store, changelog_partitions)


@mutant("segmented-checkpoint-read-through-a-link", "a window or session store migrating the task's .checkpoint "
        "follows a link and reads its target", FAMILY, rules=("LAY-15",))
def _segmented_checkpoint_read_through_a_link() -> dict[str, Handler]:
    return _everywhere({"kstate.stores.segmented.read_checkpoint_entries": _entries_following_links})


# --- LAY-10: a segment list under a name the layout does not set aside ---------------------------------------------


@mutant("segment-list-under-an-unknown-name", "a window or session store writes its segment lists as "
        "kstate-segments.json, a file the layout does not set aside, in each segment directory", FAMILY,
        rules=("LAY-10",))
def _segment_list_under_an_unknown_name() -> dict[str, Handler]:
    return _everywhere({"kstate.stores.segments.SEGMENT_LIST_SIDECAR": "kstate-segments.json"})



# --- LAY-15, LAY-16 after a crash: a segment list read through a link ---------------------------------------------


def _read_segment_list_following_links(segment_dir: Path, store_name: str) -> list[str]:
    """``read_segment_list`` that opens the list with ``open()``, following a link out of the store."""
    from kstate.codecs.layout import SEGMENT_LIST_SIDECAR

    path = segment_dir / SEGMENT_LIST_SIDECAR
    if not path.exists():
        return []
    return path.read_text(encoding="utf-8").splitlines()


@mutant("segment-list-followed-through-a-link", "a window or session store opens its segments without checking "
        "their files and reads its segment lists following a link (each check alone masks the other's absence)",
        FAMILY, rules=("LAY-15", "LAY-16"))
def _segment_list_followed_through_a_link() -> dict[str, Handler]:
    return _everywhere({"kstate.stores.engine.check_database_files": _check_database_files_but_segments,
                        "kstate.stores.segments.read_segment_list": _read_segment_list_following_links})


# --- PRIM-2: keys in signed byte order --------------------------------------------------------------------------


def _signed(hex_key: str) -> bytes:
    """The key with each byte's sign bit flipped: unsigned order of these is Java's signed ``byte`` order."""
    return bytes(b ^ 0x80 for b in bytes.fromhex(hex_key))


def _signed_order(name: str, reverse: bool) -> Handler:
    from kstate_conformance.mutants.store_rules_mutants import _reference_handler

    handler = _reference_handler(name)

    def run(payload: Any) -> Any:
        out = handler(payload)
        if isinstance(out, dict) and isinstance(out.get("entries"), list):
            out = {**out, "entries": sorted(out["entries"], key=lambda e: _signed(e[0]), reverse=reverse)}
        return out

    return run


@mutant("scans-in-signed-byte-order", "a key-value store answers all and reverse_all with keys compared as signed "
        "bytes (Java's Byte.compareTo), so 80..ff sort before 00..7f", FAMILY, rules=("PRIM-2",))
def _scans_in_signed_byte_order() -> dict[str, Handler]:
    return {"store.all": _signed_order("store.all", False), "store.reverse_all": _signed_order("store.reverse_all", True)}
