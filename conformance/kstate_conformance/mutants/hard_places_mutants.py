"""Mutants of rules at the places the suite reached last (issue 32, section E): a rule kept by the pure operation and
by the easy store paths, broken only after a crash, a restore, a reopen or on one family's store.

Each replaces ``store.open`` only, building the reference's store classes with one realistic bug in front; the tests
that kill them are ``tests/test_store_rules_hard_places.py``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any
from unittest import mock

from kstate.codecs import changelog as cl
from kstate.codecs.segments import parse_segment_name
from kstate.codecs.store_types import BUILT_KV_TYPES, VERSIONED_TYPES, WINDOW_TYPES, StoreType, types_where
from kstate.errors import KStateError
from kstate.ops import JsonDict, call
from kstate.ops.store_ops import DEFAULT_BUILDER, StoreBuilder, make_open_handler
from kstate.storage_files import position_file_path, read_position_file
from kstate.stores import segments as segments_module
from kstate.stores.api import Backend, StoreStorageError
from kstate.stores.changelogging import ChangeLoggingWindowBytesStore
from kstate.stores.factory import open_bytes_store, task_directory, validate_task_location
from kstate.stores.families import changelogging_store, store_classes
from kstate.stores.life import Op, OpClass
from kstate.stores.segments import FoundSegment
from kstate.stores.surface import RocksDBOptions, check_changelog_offsets, validate_store_name
from kstate.stores.type_check import check_store_type_on_disk
from kstate_conformance.adapter import Handler
from kstate_conformance.mutants import mutant

FAMILY = "store_rules"
#: The types of the families whose RocksDB stores keep a database per segment (LAY-3), from the table.
SEGMENTED_TYPES = types_where(lambda i: not i.single_database and i.changelog is not None)


def _open_with(builder: StoreBuilder) -> dict[str, Handler]:
    return {"store.open": make_open_handler(builder)}


def _rocksdb_with(mixin: type, types: frozenset[StoreType]) -> dict[str, Handler]:
    """``store.open`` whose RocksDB stores of ``types`` have ``mixin`` in front of their class; every other store
    is the reference's."""

    def open_store(store_type: StoreType, backend: Backend, *, name: str, state_dir: str | Path | None = None,
                   application_id: str = "app", task_id: str = "0_0", ignore_invalid_state: bool = False,
                   options: dict[str, Any] | None = None, **rest: Any) -> Any:
        store_type, backend = StoreType(store_type), Backend(backend)
        if store_type not in types or backend is not Backend.ROCKSDB:
            return open_bytes_store(store_type, backend, name=name, state_dir=state_dir, application_id=application_id,
                                    task_id=task_id, ignore_invalid_state=ignore_invalid_state, options=options, **rest)
        classes = store_classes(store_type)
        validate_store_name(name)
        validate_task_location(application_id, task_id)
        family_options = classes.check_options(options or {})  # as the factory: a required option is refused
        task_dir = task_directory(state_dir or tempfile.mkdtemp(prefix="kstate-"), application_id, task_id)
        check_store_type_on_disk(store_type, task_dir, name, family_options)  # the reference's checks first (LAY-14)
        cls = type(f"{mixin.__name__}{classes.rocksdb.__name__}", (mixin, classes.rocksdb), {})
        return cls(name, task_dir, options=RocksDBOptions(ignore_invalid_state=ignore_invalid_state, **rest),
                   **family_options)

    return _open_with(replace(DEFAULT_BUILDER, open_bytes_store=open_store))


# --- OFF-22: the position file merged into a stored position --------------------------------------------------------


class _PositionFileReplacesStored:
    """The ``<store>.position`` file's position takes the stored position's place instead of merging into it: right
    for a store migrating into an empty position (the easy place), wrong for one that already committed one."""

    def __init__(self, name: str, task_dir: Any = None, **kwargs: Any) -> None:
        file_position = None
        if task_dir is not None and position_file_path(task_dir, name).is_file():
            file_position = read_position_file(task_dir, name)
        super().__init__(name, task_dir, **kwargs)  # type: ignore[call-arg]
        instance = self._instance  # type: ignore[attr-defined]
        if file_position is not None and instance.offsets is not None:
            self._position = file_position
            instance.position = file_position
            instance.staged.apply(instance.offsets.position_batch(file_position))


@mutant("position-file-replaces-stored", "a <store>.position file migrated at open replaces the stored position "
        "instead of merging into it", FAMILY, rules=("OFF-22",))
def _position_file_replaces_stored() -> dict[str, Handler]:
    return _rocksdb_with(_PositionFileReplacesStored, frozenset(BUILT_KV_TYPES))


# --- WS-29, SS-21: flush, then a crash ----------------------------------------------------------------------------


class _FlushWritesPosition:
    """``flush`` writes every segment's staged rows and the store's position (the pre-4.4 reading): after a crash the
    position answers offsets no commit acknowledged."""

    segments: Any
    _allow: Callable[[OpClass], None]
    _position: Any

    def flush(self) -> None:
        self._allow(Op.COMMIT)
        for segment in self.segments.all_segments():
            instance = segment.instance
            if instance.offsets is not None:
                instance.staged.apply(_position_only_batch(instance.offsets, self._position))
            instance.staged.apply()


def _position_only_batch(offsets: Any, position: Any) -> Any:
    """The ``position`` row alone, as a commit writes it (OFF-5), without touching the offsets."""
    from kstate.codecs.offsets import commit_position
    from kstate_conformance.mutants.store_rules_mutants import offsets_batch

    return offsets_batch(offsets, commit_position(offsets._image, position))


@mutant("segmented-flush-writes-position", "a window or session flush writes the store's position with the staged "
        "rows (Kafka 4.4.0's flush writes nothing to the offsets family)", FAMILY, rules=("WS-29", "SS-21", "KV-63"))
def _segmented_flush_writes_position() -> dict[str, Handler]:
    return _rocksdb_with(_FlushWritesPosition, SEGMENTED_TYPES)


# --- WS-23: a tombstone through the header-aware window store -------------------------------------------------------


class _HeaderTombstoneWithoutHeaders(ChangeLoggingWindowBytesStore):
    """The header-aware window store logs a tombstone without the context's headers (as the timestamped type does)."""

    def _record(self, key: bytes | None, value: bytes | None, window_start: int, seqnum: int) -> cl.ChangelogRecord:
        record = super()._record(key, value, window_start, seqnum)
        if value is None and self.store_type is StoreType.TIMESTAMPED_WINDOW_WITH_HEADERS:
            return dataclasses.replace(record, headers=())
        return record


@mutant("window-header-tombstone-without-headers", "the header-aware window store logs a tombstone with no headers "
        "instead of the record context's", FAMILY, rules=("WS-23",))
def _header_tombstone_without_headers() -> dict[str, Handler]:
    def logging_layer(inner: Any, store_type: StoreType, context: Any, sink: Any) -> Any:
        if StoreType(store_type) in WINDOW_TYPES:
            return _HeaderTombstoneWithoutHeaders(inner, store_type, context, sink)
        return changelogging_store(inner, store_type, context, sink)

    return _open_with(replace(DEFAULT_BUILDER, logging_layer=logging_layer))


# --- VS-27, CL-18: the versioned store with headers restores -------------------------------------------------------


class _VersionedHeadersRestore:
    """The versioned store with headers converts restored records with one bug of :attr:`bug`."""

    bug = ""

    def restore_records(self, records: Any) -> None:
        changed = []
        for r in records:
            if self.bug == "tombstone" and r.value is None:
                r = cl.ChangelogRecord(r.key, b"", r.timestamp, r.headers)  # becomes [varint 0][]: an empty value
            elif self.bug == "consistency":
                r = cl.ChangelogRecord(r.key, r.value, r.timestamp, tuple(x for x in r.headers if x[0] not in "vc"))
            changed.append(r)
        super().restore_records(changed)  # type: ignore[misc]


class _RestoredTombstoneAsValue(_VersionedHeadersRestore):
    bug = "tombstone"


class _RestoreDropsConsistencyHeaders(_VersionedHeadersRestore):
    bug = "consistency"


@mutant("versioned-headers-restored-tombstone-as-value", "the versioned store with headers restores a tombstone as "
        "an empty value", FAMILY, rules=("VS-27",))
def _restored_tombstone_as_value() -> dict[str, Handler]:
    return _rocksdb_with(_RestoredTombstoneAsValue, frozenset({StoreType.VERSIONED_KV_WITH_HEADERS}))


@mutant("versioned-headers-restore-drops-consistency", "the versioned store with headers drops the consistency "
        "headers v and c of a restored record", FAMILY, rules=("CL-18",))
def _restore_drops_consistency() -> dict[str, Handler]:
    return _rocksdb_with(_RestoreDropsConsistencyHeaders, frozenset({StoreType.VERSIONED_KV_WITH_HEADERS}))


# --- LAY-12: a regular file named like a segment -----------------------------------------------------------------


def _scan_directories_only(directory: Path, store_name: str, segment_interval: int) -> list[FoundSegment]:
    """A segment directory read that looks at directories only: a regular file named like a segment is passed over
    as if it named none (the data it stands for ignored silently)."""
    found: dict[int, FoundSegment] = {}
    for entry in sorted(p.name for p in directory.iterdir() if p.is_dir()):
        try:
            parsed = parse_segment_name(store_name, entry, segment_interval)
        except KStateError:
            continue
        if parsed.segment_id >= 0:
            found.setdefault(parsed.segment_id, FoundSegment(entry, parsed.segment_id, parsed.rename_to))
    return [found[i] for i in sorted(found)]


@mutant("segment-scan-skips-regular-files", "a regular file named like a segment is skipped, not refused", FAMILY,
        rules=("LAY-12",))
def _segment_scan_skips_regular_files() -> dict[str, Handler]:
    def open_store(payload: JsonDict) -> JsonDict:
        with mock.patch.object(segments_module, "scan_segment_directory", _scan_directories_only):
            return call("store.open", payload)

    return {"store.open": open_store}


# --- LAY-13: the segment lists and ignore_invalid_state -------------------------------------------------------------


class _SegmentListsOnCloseOnly:
    """``commit`` writes every segment's rows and offsets but leaves the segment lists to ``close``: after a crash
    the lists miss every segment created since the last close."""

    segments: Any
    _position: Any
    _allow: Callable[[OpClass], None]

    def commit(self, changelog_offsets: Any) -> None:
        offsets = check_changelog_offsets(changelog_offsets)
        self._allow(Op.COMMIT)
        for segment in self.segments.all_segments():
            segment.instance.commit(offsets, self._position)


@mutant("segment-lists-on-close-only", "the segment lists are written at close, not at each commit", FAMILY,
        rules=("LAY-13",))
def _segment_lists_on_close_only() -> dict[str, Handler]:
    return _rocksdb_with(_SegmentListsOnCloseOnly, SEGMENTED_TYPES)


class _IgnoreInvalidStateLiftsLostSegment:
    """``ignore_invalid_state`` lifts the lost-segment check too, as it lifts the unclean-shutdown one."""

    segments: Any

    def _check_listed_segments(self, found: Any) -> None:
        if not self.segments.ignore_invalid_state:
            super()._check_listed_segments(found)  # type: ignore[misc]


@mutant("ignore-invalid-state-lifts-lost-segment", "a store opened with ignore_invalid_state opens over a lost "
        "segment", FAMILY, rules=("LAY-13",))
def _ignore_invalid_state_lifts_lost_segment() -> dict[str, Handler]:
    return _rocksdb_with(_IgnoreInvalidStateLiftsLostSegment, SEGMENTED_TYPES)


# --- UPG-3, VS-31: the wipe and the position file --------------------------------------------------------------


@mutant("wipe-keeps-position-file", "the wipe deletes the store's directory but leaves its <store>.position file",
        FAMILY, rules=("UPG-3", "VS-31"))
def _wipe_keeps_position_file() -> dict[str, Handler]:
    def wipe(payload: JsonDict) -> JsonDict:
        try:
            path = task_directory(str(payload["state_dir"]), str(payload.get("application_id", "app")),
                                  str(payload.get("task_id", "0_0"))) / f"{payload['name']}.position"
            kept = path.read_bytes() if path.is_file() else None
        except (KeyError, KStateError, OSError):
            kept = None
        out = call("store.wipe", payload)
        if kept is not None and "error" not in out:
            path.write_bytes(kept)
        return out

    return {"store.wipe": wipe}


# --- OFF-4 at the versioned, window and session stores ----------------------------------------------------------


class _NullOffsetKept:
    """``commit`` skips a null offset instead of deleting the partition's row (OFF-4), read as "nothing to say"."""

    def commit(self, changelog_offsets: Any) -> None:
        super().commit({tp: o for tp, o in changelog_offsets.items() if o is not None})  # type: ignore[misc]


@mutant("non-kv-commit-keeps-a-null-offset", "a versioned, window or session commit keeps the row of a partition whose "
        "offset is null instead of deleting it", FAMILY, rules=("OFF-4",))
def _non_kv_commit_keeps_a_null_offset() -> dict[str, Handler]:
    return _rocksdb_with(_NullOffsetKept, SEGMENTED_TYPES | frozenset(VERSIONED_TYPES))


class _EmptyCommitKeepsOffsets:
    """``commit({})`` writes the staged rows only, as a flush would: the committed offsets stay (OFF-4 says it wipes)."""

    def commit(self, changelog_offsets: Any) -> None:
        if not changelog_offsets:
            self.flush()  # type: ignore[attr-defined]
            return
        super().commit(changelog_offsets)  # type: ignore[misc]


@mutant("non-kv-empty-commit-keeps-offsets", "a versioned, window or session commit of an empty map keeps the "
        "committed offsets instead of wiping them", FAMILY, rules=("OFF-4",))
def _non_kv_empty_commit_keeps_offsets() -> dict[str, Handler]:
    return _rocksdb_with(_EmptyCommitKeepsOffsets, SEGMENTED_TYPES | frozenset(VERSIONED_TYPES))


# --- OFF-23: a full disk ------------------------------------------------------------------------------------------


class _CommitFailureSwallowed:
    """A commit whose write fails (a full disk) is logged and answered as done: the caller takes the offset as
    committed, the store's offsets family never got it."""

    def commit(self, changelog_offsets: Any) -> None:
        with contextlib.suppress(StoreStorageError):  # the disk's error only: a refused argument is still refused
            super().commit(changelog_offsets)  # type: ignore[misc]


@mutant("full-disk-commit-failure-swallowed", "a commit that fails on a full disk is answered as done (its offset is "
        "acknowledged and lost)", FAMILY, rules=("OFF-23",))
def _full_disk_commit_failure_swallowed() -> dict[str, Handler]:
    return _rocksdb_with(_CommitFailureSwallowed,
                         frozenset(BUILT_KV_TYPES) | SEGMENTED_TYPES | frozenset(VERSIONED_TYPES))


# --- WS-4, WIN-6: the seqnum across a reopen ----------------------------------------------------------------------

#: The seqnum each closed window store left, by its directory: the mutant's "persisted" counter.
_LAST_SEQNUM: dict[tuple[str, str], int] = {}


class _SeqnumResumedAtOpen:
    """The duplicate counter survives a restart (kept with the store) instead of starting at 0 (WS-4): a reopened
    store keeps every row a put before the close wrote, where Kafka's replaces the first."""

    def __init__(self, name: str, task_dir: Any = None, **kwargs: Any) -> None:
        super().__init__(name, task_dir, **kwargs)  # type: ignore[call-arg]
        self._mutant_key = (str(task_dir), name)
        self.seqnum = _LAST_SEQNUM.get(self._mutant_key, 0)

    def close(self) -> None:
        _LAST_SEQNUM[self._mutant_key] = self.seqnum
        super().close()  # type: ignore[misc]


@mutant("window-seqnum-resumed-at-open", "a reopened window store that retains duplicates resumes its seqnum "
        "instead of starting again at 0", FAMILY, rules=("WS-4", "WIN-6"))
def _window_seqnum_resumed_at_open() -> dict[str, Handler]:
    return _rocksdb_with(_SeqnumResumedAtOpen, frozenset(WINDOW_TYPES))
