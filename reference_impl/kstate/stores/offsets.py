"""KIP-1035 store-managed offsets of a RocksDB store: the ``offsets`` column family (spec/kv-stores.md KV-50..KV-57).

The entry encodings and the commit/open/close rules are the pure functions of
:mod:`kstate.codecs.offsets` (OFF-*), which work on an image of the column family; this module keeps
that image for an open store and turns each change into writes of a :class:`WriteBatch` that the
store applies **together with its staged data** (KV-50). Only ``open``'s status write is applied on
its own, at once, so that a crash before the first commit is still detected (KV-52).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Protocol

from kstate.codecs.offsets import (
    OFFSET_UNKNOWN,
    OFFSETS_COLUMN_FAMILY,
    POSITION_KEY,
    STATUS_KEY,
    UncleanShutdownError,
    close_offsets,
    commit_offsets,
    commit_position,
    committed_offset,
    committed_offset_problem,
    decode_offset_value,
    encode_status,
    migrate_checkpoint_offsets,
    open_offsets,
)
from kstate.codecs.position import Position, decode_position, merge_positions
from kstate.errors import DecodeError, StateFileError
from kstate.storage_files import (
    delete_state_file,
    legacy_file_exists,
    position_file_path,
    read_checkpoint_file,
    read_position_file,
    state_file_kind,
    task_checkpoint_path,
    write_checkpoint_file,
    write_position_file,
)
from kstate.stores.api import ProcessorStateError, StoreCorruptedError, StoreStorageError, TopicPartition
from kstate.stores.engine import Engine, WriteBatch, refuse_wrong_kind, storage_error
from kstate.stores.surface import LOG, CodecTopicPartition

OffsetsImage = dict[bytes, bytes]


class _NamedStore(Protocol):
    name: str


def diff_batch(before: Mapping[bytes, bytes], after: Mapping[bytes, bytes]) -> WriteBatch:
    """The writes that turn the ``before`` image of the offsets family into ``after``."""
    batch = WriteBatch()
    for key, value in after.items():
        if before.get(key) != value:
            batch.put(OFFSETS_COLUMN_FAMILY, key, value)
    for key in before:
        if key not in after:
            batch.delete(OFFSETS_COLUMN_FAMILY, key)
    return batch


def _parse_topic_partition_key(key: bytes) -> CodecTopicPartition | None:
    # "<topic>-<partition>": Kafka never parses these back; the last '-' splits, as a topic may contain '-'.
    text = key.decode("utf-8", "replace")
    topic, sep, partition = text.rpartition("-")
    if not sep:
        return None
    try:
        return topic, int(partition)
    except ValueError:
        return None


def read_offsets_image(engine: Engine) -> OffsetsImage:
    """The committed content of the engine's ``offsets`` family (empty when it has none)."""
    if not engine.has_column_family(OFFSETS_COLUMN_FAMILY):
        return {}
    cursor = engine.iterate(OFFSETS_COLUMN_FAMILY)
    try:
        return dict(cursor)
    finally:
        cursor.close()


def check_offsets_image(image: Mapping[bytes, bytes], store: str, ignore_invalid_state: bool) -> None:
    """Refuse, before anything is written, an ``offsets`` family the store cannot open (KV-52, KV-57, OFF-6).

    ``status`` OPEN is an unclean shutdown; any other value but CLOSED is a damaged status, refused with its
    own message (both skipped under ``ignore_invalid_state``, as Kafka skips the comparison). A committed
    offset that is not an 8-byte long and an undecodable ``position`` are refused in every case.
    """
    status = image.get(STATUS_KEY)
    if not ignore_invalid_state and status is not None and status != encode_status(False):
        if status == encode_status(True):
            # The cause says which refusal this is: the host's unclean-shutdown policy (KV-52) acts on it.
            message = "Invalid state during store open. Expected state to be either empty or closed"
            raise ProcessorStateError(message) from UncleanShutdownError(message)
        raise StoreCorruptedError(
            store, f"Error opening store {store}: the offsets status {status[:16].hex()!r} is neither OPEN nor CLOSED"
        )
    for key, value in image.items():
        if key in (STATUS_KEY, POSITION_KEY):
            continue
        if len(value) != 8:
            raise StoreCorruptedError(
                store,
                f"Error opening store {store}: the committed offset of {key[:64].decode('utf-8', 'replace')!r} "
                f"is {len(value)} bytes, not an 8-byte long",
            )
        problem = committed_offset_problem(decode_offset_value(value))
        if problem is not None:  # OFF-25: not an offset Kafka's task could restore from
            raise StoreCorruptedError(
                store, f"Error opening store {store}: the {problem}, of {key[:64].decode('utf-8', 'replace')!r}")
    raw_position = image.get(POSITION_KEY)
    if raw_position is not None:
        try:
            decode_position(raw_position)
        except DecodeError as exc:
            raise StoreCorruptedError(store, f"corrupt offsets column family in store {store}: {exc}") from exc


def has_committed_offsets(image: Mapping[bytes, bytes]) -> bool:
    """Whether any changelog offset is committed (a key other than ``status`` and ``position``)."""
    return any(key not in (STATUS_KEY, POSITION_KEY) for key in image)


def check_legacy_file(path: Path, store: str) -> None:
    """A legacy ``.checkpoint`` or ``<store>.position`` that exists but is not a regular file (a directory, a
    dangling link, a link at all, a FIFO) is refused with a typed error naming the store, before anything reads or
    writes (KV-25, LAY-15: a link is never followed, a FIFO never opened)."""
    refuse_wrong_kind(store, path, str(path), state_file_kind, StateFileError)


def read_legacy_position(task_dir: Path, store: str) -> Position:
    """The task's pre-4.3 ``<store>.position`` file as a position, empty when there is none; one that is not a
    regular file, cannot be read or does not parse is refused with a typed error (KV-25, WS-29)."""
    path = position_file_path(task_dir, store)
    try:
        if not legacy_file_exists(path):  # as Java's File.exists: a name too long for the system is no file (KV-26)
            return {}
        check_legacy_file(path, store)
        return read_position_file(task_dir, store)
    except DecodeError as exc:
        raise ProcessorStateError(f"Error reading the position file of store {store}: {exc}") from exc
    except (OSError, StateFileError) as exc:
        raise storage_error(store, f"reading the position file of {task_dir}", exc) from exc


def check_legacy_files(task_dir: Path, store: str, changelog_partitions: Iterable[TopicPartition]) -> None:
    """Refuse, before anything is written, legacy files the store could not migrate (KV-25, KV-55, OFF-19).

    A ``.checkpoint`` or ``<store>.position`` that is not a regular file, that cannot be read or parsed, or a
    task directory that is not writable when there is something to migrate (the files could not be
    rewritten or removed once the offsets were in the store).
    """
    checkpoint_path = task_checkpoint_path(task_dir)
    position_path = position_file_path(task_dir, store)
    partitions = {(tp.topic, tp.partition) for tp in changelog_partitions}
    try:
        for path in (checkpoint_path, position_path):
            check_legacy_file(path, store)
        checkpoint = read_checkpoint_file(checkpoint_path)
        read_position_file(task_dir, store)
        migrates = legacy_file_exists(position_path) or any(
            tp in partitions and off is not None for tp, off in checkpoint.items()
        )
        if migrates and not os.access(task_dir, os.W_OK | os.X_OK):
            raise StoreStorageError(
                store,
                f"Error opening store {store}: the task directory {task_dir} is not writable, so its legacy "
                "offset files could not be migrated",
            )
    except DecodeError as exc:
        raise ProcessorStateError(f"Error migrating checkpoint file for task '{task_dir.name}': {exc}") from exc
    except (OSError, StateFileError) as exc:
        raise storage_error(store, f"reading the legacy offset files of {task_dir}", exc) from exc


def read_checkpoint_entries(task_dir: Path, store: str,
                            changelog_partitions: Iterable[TopicPartition]) -> dict[CodecTopicPartition, int]:
    """The entries of the task's ``.checkpoint`` for ``store``'s changelog partitions (-4, unknown, skipped), read
    before the store opens, as Kafka 4.4's ``migrateLegacyOffsets`` reads it for every store of the task that
    manages offsets (KV-55, OFF-19). One that is not a regular file (a link, a FIFO, a directory), that cannot be
    read or does not parse is refused with a typed error naming the store (KV-25, LAY-15)."""
    path = task_checkpoint_path(task_dir)
    partitions = {(tp.topic, tp.partition) for tp in changelog_partitions}
    check_legacy_file(path, store)
    try:
        checkpoint = read_checkpoint_file(path)
    except DecodeError as exc:
        raise ProcessorStateError(f"Error migrating checkpoint file for task '{task_dir.name}': {exc}") from exc
    except StateFileError as exc:
        raise storage_error(store, f"reading the checkpoint file of {task_dir}", exc) from exc
    return {tp: off for tp, off in checkpoint.items() if tp in partitions and off is not None and off != OFFSET_UNKNOWN}


def remove_checkpoint_entries(task_dir: Path, store: str, migrated: Iterable[CodecTopicPartition]) -> None:
    """Rewrite the task's ``.checkpoint`` without the ``migrated`` entries, deleting it once empty (KV-55)."""
    path = task_checkpoint_path(task_dir)
    gone = set(migrated)
    try:
        remaining = {tp: (OFFSET_UNKNOWN if off is None else off)
                     for tp, off in read_checkpoint_file(path).items() if tp not in gone}
        write_checkpoint_file(path, remaining)
    except (OSError, StateFileError) as exc:
        raise storage_error(store, f"rewriting the legacy offset files of {task_dir}", exc) from exc


def write_downgrade_checkpoint(task_dir: Path, store: str,
                               offsets: Mapping[CodecTopicPartition, int | None]) -> None:
    """For a downgrade below 4.3: merge ``store``'s committed ``offsets`` into the task's ``.checkpoint``, an offset
    unknown written as -4 (OFF-20, OFF-14, OFF-13), as a store that closes alone does (the key-value store's
    :meth:`StoreOffsets.write_legacy_files` too): the other stores' entries stay."""
    path = task_checkpoint_path(task_dir)
    try:
        existing = read_checkpoint_file(path)
    except DecodeError:
        existing = {}
    except StateFileError as exc:
        raise storage_error(store, f"reading the checkpoint file of {task_dir}", exc) from exc
    merged = {tp: (OFFSET_UNKNOWN if off is None else off) for tp, off in existing.items()}
    merged.update({tp: (OFFSET_UNKNOWN if off is None else off) for tp, off in offsets.items()})
    try:
        write_checkpoint_file(path, merged)
    except StateFileError as exc:
        raise storage_error(store, f"writing the legacy offset files of {task_dir}", exc) from exc


class StoreOffsets:
    """The ``offsets`` column family of one open store: status, position and committed changelog offsets."""

    def __init__(self, store: _NamedStore, engine: Engine) -> None:
        self._store = store
        self._engine = engine
        self._image: OffsetsImage = self._read_image()
        self._opened = False

    def _read_image(self) -> OffsetsImage:
        return read_offsets_image(self._engine)

    @property
    def image(self) -> OffsetsImage:
        """A copy of the family's committed content, key -> value bytes."""
        return dict(self._image)

    def open(self, ignore_invalid_state: bool) -> Position:
        """Refuse a status left OPEN (an unclean shutdown) unless asked to ignore it, write OPEN at once,
        and return the stored position (KV-52, OFF-6)."""
        try:
            after, position = open_offsets(self._image, ignore_invalid_state)
        except UncleanShutdownError as exc:
            raise ProcessorStateError(str(exc)) from exc
        except DecodeError as exc:
            raise ProcessorStateError(f"corrupt offsets column family in store {self._store.name}: {exc}") from exc
        self._engine.write(diff_batch(self._image, after))
        self._image = after
        self._opened = True
        return position

    @contextlib.contextmanager
    def tentative(self) -> Iterator[None]:
        """The image as it was if the write of the batches made inside fails: the store answers what is on disk,
        and a later commit writes the same offsets again (OFF-23)."""
        image, opened = self._image, self._opened
        try:
            yield
        except BaseException:
            self._image, self._opened = image, opened
            raise

    def commit_batch(self, offsets: Mapping[CodecTopicPartition, int | None], position: Position) -> WriteBatch:
        """The offsets-family writes of ``commit(offsets)``: the offsets (None removes one, an empty map wipes
        every offset and the position, OFF-4, KV-53), then the position, on every commit, an empty one included
        (OFF-5: Kafka 4.4.0's ``AbstractColumnFamilyAccessor.commit`` writes it after ``wipeOffsets`` too). The
        caller applies them with its staged data (KV-50)."""
        after = commit_position(commit_offsets(self._image, offsets), position)
        batch = diff_batch(self._image, after)
        self._image = after
        return batch

    def position_batch(self, position: Position) -> WriteBatch:
        """A flush writes nothing to the ``offsets`` family: Kafka 4.4.0's ``RocksDBStore`` inherits the
        no-op ``StateStore.flush``, and only ``commit(offsets)`` writes ``position`` (OFF-5, KV-63)."""
        del position
        return WriteBatch()

    def close_batch(self, position: Position) -> WriteBatch:
        """The writes of a clean close: CLOSED if this instance opened the store, and nothing else; the
        position is written only by a commit, as ``AbstractColumnFamilyAccessor.close`` does (OFF-7, KV-56)."""
        del position
        after = close_offsets(self._image, self._opened)
        batch = diff_batch(self._image, after)
        self._image = after
        self._opened = False
        return batch

    def committed_offset(self, partition: CodecTopicPartition) -> int | None:
        """``committedOffset(tp)`` (OFF-3)."""
        return committed_offset(self._image, partition[0], partition[1])

    def all_committed(self) -> dict[CodecTopicPartition, int]:
        """Every ``<topic>-<partition>`` entry, parsed at its last ``-``."""
        out: dict[CodecTopicPartition, int] = {}
        for key, value in self._image.items():
            if key in (STATUS_KEY, POSITION_KEY):
                continue
            tp = _parse_topic_partition_key(key)
            if tp is not None:
                out[tp] = decode_offset_value(value)
        return out

    # legacy files -------------------------------------------------------------------------------------------

    def migrate_legacy_files(self, task_dir: Path, changelog_partitions: Iterable[TopicPartition]) -> Position | None:
        """Import the task's ``.checkpoint`` entries for this store's changelog partitions (-4 skipped) and a
        ``<store>.position`` file into the family, then remove what was imported (KV-55, OFF-19).

        Kafka migrates a whole task at once and deletes ``.checkpoint``; per store, the entries of the other
        stores stay in the file until their stores migrate them. Returns the merged position if a position
        file was imported, else None. The writes are applied at once, in one batch.
        """
        partitions = [(tp.topic, tp.partition) for tp in changelog_partitions]
        checkpoint_path = task_checkpoint_path(task_dir)
        batch = WriteBatch()
        remaining: dict[CodecTopicPartition, int | None] | None = None
        try:
            checkpoint = read_checkpoint_file(checkpoint_path)
        except DecodeError as exc:
            raise ProcessorStateError(f"Error migrating checkpoint file for task '{task_dir.name}': {exc}") from exc
        except StateFileError as exc:
            raise storage_error(self._store.name, f"reading the checkpoint file of {task_dir}", exc) from exc
        mine = {tp: off for tp, off in checkpoint.items() if tp in partitions and off is not None}
        if mine:
            after = migrate_checkpoint_offsets(self._image, {tp: off for tp, off in mine.items() if off is not None}, partitions)
            batch = diff_batch(self._image, after)
            self._image = after
            remaining = {tp: off for tp, off in checkpoint.items() if tp not in mine}
            LOG.info("Migrated legacy checkpoint offsets %s into store %s", sorted(mine), self._store.name)

        migrated_position: Position | None = None
        position_path = position_file_path(task_dir, self._store.name)
        if legacy_file_exists(position_path):
            try:
                file_position = read_position_file(task_dir, self._store.name)
            except DecodeError as exc:
                raise ProcessorStateError(f"Error migrating position file of store {self._store.name}: {exc}") from exc
            except StateFileError as exc:
                raise storage_error(self._store.name, f"reading the position file of {task_dir}", exc) from exc
            stored = self._image.get(POSITION_KEY)
            base: Position = decode_position(stored)[0] if stored is not None else {}
            migrated_position = merge_positions(base, file_position)
            after = commit_position(self._image, migrated_position)
            for cf, ops in diff_batch(self._image, after).ops.items():
                batch.column_family(cf).update(ops)
            self._image = after

        if len(batch):
            self._engine.write(batch)
        # Files are removed only once the family holds their content.
        try:
            if remaining is not None:
                write_checkpoint_file(
                    checkpoint_path, {tp: (OFFSET_UNKNOWN if off is None else off) for tp, off in remaining.items()}
                )
            if migrated_position is not None:
                delete_state_file(position_path)
        except (OSError, StateFileError) as exc:
            raise storage_error(self._store.name, f"rewriting the legacy offset files of {task_dir}", exc) from exc
        return migrated_position

    def write_legacy_files(
        self, task_dir: Path, position: Position, changelog_partitions: Iterable[TopicPartition]
    ) -> None:
        """For a downgrade below 4.3: merge this store's committed offsets into the task ``.checkpoint``
        (a changelog partition without one written as -4) and write ``<store>.position`` (UPG-4, OFF-20)."""
        offsets: dict[CodecTopicPartition, int | None] = {(tp.topic, tp.partition): None for tp in changelog_partitions}
        offsets.update(self.all_committed())
        write_downgrade_checkpoint(task_dir, self._store.name, offsets)
        try:
            write_position_file(task_dir, self._store.name, position)
        except StateFileError as exc:
            raise storage_error(self._store.name, f"writing the legacy offset files of {task_dir}", exc) from exc
