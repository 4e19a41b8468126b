"""One RocksDB database's life at any path: open, column families, KIP-1035 offsets, commit, close (spec/kv-stores.md).

A :class:`RocksDBInstance` is what a RocksDB key-value store (``rocksdb/<store>``, LAY-2) and each segment
of a window or session store (``<store>/<store>.<start>``, LAY-3) have in common: the refusals decided
before anything is written (KV-23..KV-26, KV-52, KV-57, UPG-1), the column families its
:class:`~kstate.stores.column_families.ColumnFamilyLayout` plans (LAY-5..LAY-8), the ``offsets`` family
(KV-50..KV-57), staged writes applied with the offsets in one batch (KV-50), restore mode (RST-8), clean,
downgrade (UPG-4) and crashed (KV-52) closes, and a read-only view of its families for dumps.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path

from kstate.codecs.layout import ColumnFamilyPlan, LayoutError, column_family_plan
from kstate.codecs.offsets import STATUS_KEY
from kstate.codecs.position import Position
from kstate.codecs.store_types import OFFSETS_CF
from kstate.stores.api import ProcessorStateError, StoreCorruptedError, TopicPartition, UnknownColumnFamilyError
from kstate.stores.column_families import (
    Accessor,
    ColumnFamilyLayout,
    StagedEngine,
    existing_column_families,
    open_accessor,
)
from kstate.stores.engine import (
    DEFAULT_CF,
    Engine,
    RocksDBEngine,
    check_directory,
    list_column_families,
    rocksdb_directory_state,
)
from kstate.stores.offsets import (
    StoreOffsets,
    check_legacy_files,
    check_offsets_image,
    has_committed_offsets,
    read_offsets_image,
)
from kstate.stores.surface import DEFAULT_ROCKSDB_OPTIONS, LOG, CodecTopicPartition, RocksDBOptions


class ExistingDatabaseChecks:
    """The refusals of opening an existing database that need no write, decided from its column families and a
    read-only look at its content (KV-23..KV-25, KV-52, KV-57, UPG-1): what a refused open must decide before it
    changes anything; a store of several databases checks each before it opens any (SS-20)."""

    def __init__(self, name: str, path: Path | None, layout: ColumnFamilyLayout, manage_offsets: bool) -> None:
        self.name = name
        self.path = path
        self.layout = layout
        self.manage_offsets = manage_offsets

    def check_existing(self, ignore_invalid_state: bool) -> None:
        """Every refusal of the database at ``path`` (which exists) that needs no write."""
        path = self.path
        assert path is not None
        self._check_known_column_families(list_column_families(path, self.name))
        reader = RocksDBEngine(path, store_name=self.name, read_only=True)
        try:
            self._refuse_unopenable(reader, ignore_invalid_state)
            self._check_table_files(reader)
        finally:
            reader.close()

    def _check_table_files(self, reader: RocksDBEngine) -> None:
        """Table files the database does not list, and no ``status`` entry: RocksDB's metadata lost edits (a
        truncated ``MANIFEST`` reads as a shorter one), so the database would open without data it had (KV-24).

        A crash in the middle of a flush also leaves an unlisted table file, but the status is then OPEN.
        """
        unlisted = reader.unreferenced_table_files()
        if unlisted and STATUS_KEY not in read_offsets_image(reader):
            raise StoreCorruptedError(
                self.name,
                f"Error opening store {self.name} at location {self.path}: table files {', '.join(unlisted[:5])} "
                "are not in the database and the offsets status is missing: its metadata lost data",
            )

    def _plan(self, existing: Mapping[str, bool]) -> ColumnFamilyPlan:
        try:
            return column_family_plan(self.layout.layout_type, existing)
        except LayoutError as exc:
            message = self.layout.layout_message(self.name, exc)
            raise ProcessorStateError(
                message if message is not None else f"Error opening store {self.name} at location {self.path}: {exc}"
            ) from exc

    def _refuse_unopenable(self, engine: Engine, ignore_invalid_state: bool) -> None:
        """The refusals that depend on the database's content, checked before any family is created or
        any status written: the layout (LAY-7, LAY-8), the offsets family (KV-52, OFF-6) and offsets ahead
        of data (KV-57)."""
        existing = existing_column_families(engine)
        plan = self._plan(existing)
        if not self.manage_offsets or OFFSETS_CF not in existing:
            return
        image = read_offsets_image(engine)
        check_offsets_image(image, self.name, ignore_invalid_state)
        if (
            plan.data_cf not in existing
            and has_committed_offsets(image)
            and not any(has_data for cf, has_data in existing.items() if cf != OFFSETS_CF)
            # An older type's own family, even emptied by deletes, is an upgrade Kafka opens (KV-57, UPG-*).
            and not any(cf not in (OFFSETS_CF, "default") for cf in existing)
        ):
            raise StoreCorruptedError(
                self.name,
                f"Error opening store {self.name} at location {self.path}: the offsets family holds committed "
                f"changelog offsets but the data column family {plan.data_cf} is missing and no family holds "
                "data (offsets ahead of data)",
            )

    def _check_known_column_families(self, existing: Iterable[str]) -> None:
        known = self.layout.known_column_families(self.manage_offsets)
        unknown = sorted(cf for cf in existing if cf not in known)
        if unknown:
            # RocksDB refuses to open a database without all of its column families; Kafka wraps it (UPG-1).
            raise UnknownColumnFamilyError(
                f"Error opening store {self.name} at location {self.path}: "
                f"Column families not opened: {', '.join(unknown)}",
                tuple(unknown),
            )


class RocksDBInstance(ExistingDatabaseChecks):
    """One open RocksDB database named ``name`` at ``path``, its column families planned by ``layout``.

    ``checked_directories`` are the parents refused, before anything is written, if they are not directories
    (``(path, what)``, KV-25). ``task_dir`` is where the legacy ``.checkpoint`` and ``<name>.position`` files
    are migrated from (None: none are). ``engine`` runs the same logic over another engine (``path`` may then
    be None). ``manage_offsets=False`` models a pre-4.3 store that knows no ``offsets`` family (UPG-2).
    Opening raises :class:`ProcessorStateError` for an unknown column family (UPG-1) or an unclean shutdown
    (KV-52) unless ``ignore_invalid_state``; a refused open leaves the directory as it was (KV-23).
    """

    def __init__(
        self,
        name: str,
        path: Path | None,
        layout: ColumnFamilyLayout,
        *,
        checked_directories: Sequence[tuple[Path, str]] = (),
        task_dir: Path | None = None,
        options: RocksDBOptions = DEFAULT_ROCKSDB_OPTIONS,
        changelog_partitions: Iterable[TopicPartition] = (),
        engine: Engine | None = None,
    ) -> None:
        ignore_invalid_state = options.ignore_invalid_state
        migrate_legacy_files = options.migrate_legacy_files
        manage_offsets = options.manage_offsets
        super().__init__(name, path, layout, manage_offsets)
        self.task_dir = task_dir
        self.changelog_partitions = tuple(changelog_partitions)
        self.mode = "regular"
        #: The position as of open, then as last written with the offsets (KV-50); its owner keeps the live one.
        self.position: Position = {}
        self.offsets: StoreOffsets | None = None
        self.is_open = False

        # Every refusal is decided before anything is written: a refused open leaves the directory as it was (KV-23).
        created: Path | None = None
        if engine is None:
            assert path is not None
            created = self._preflight(ignore_invalid_state, migrate_legacy_files, checked_directories)
            try:
                engine = RocksDBEngine(path, store_name=name, create=self._new_database_families())
            except BaseException:
                _remove_created(created)
                raise
        else:
            self._check_known_column_families(engine.column_families())
        self.engine = engine
        self.staged = StagedEngine(engine)

        accessor: Accessor | None = None
        try:
            self._refuse_unopenable(engine, ignore_invalid_state)
            accessor = self._open_column_families()
            self.accessor = accessor
            if manage_offsets:
                engine.create_column_family(OFFSETS_CF)
                self.offsets = StoreOffsets(self, engine)
                self.position = self.offsets.open(ignore_invalid_state)
            self.is_open = True
            if self.offsets is not None and migrate_legacy_files and task_dir is not None:
                migrated = self.offsets.migrate_legacy_files(task_dir, self.changelog_partitions)
                if migrated is not None:
                    self.position = migrated
        except BaseException:
            self.is_open = False
            if accessor is not None:
                accessor.release()
            engine.close()
            _remove_created(created)
            raise

    # opening ------------------------------------------------------------------------------------------------

    def _preflight(
        self, ignore_invalid_state: bool, migrate_legacy_files: bool, checked_directories: Sequence[tuple[Path, str]]
    ) -> Path | None:
        """Every check of an open that needs no write: paths, RocksDB metadata, legacy files, and (through a
        read-only open) the column families and the offsets status (KV-23..KV-25, KV-52, KV-57).

        Returns the topmost directory the open will create (removed again if the open fails), or None.
        """
        path = self.path
        assert path is not None
        for directory, what in checked_directories:
            check_directory(directory, self.name, what)
        exists = rocksdb_directory_state(path, self.name)
        if self.manage_offsets and migrate_legacy_files and self.task_dir is not None and self.task_dir.is_dir():
            check_legacy_files(self.task_dir, self.name, self.changelog_partitions)
        if exists:
            self.check_existing(ignore_invalid_state)
        created: Path | None = None
        candidate = path
        while not candidate.exists() and not candidate.is_symlink() and candidate.parent != candidate:
            created = candidate
            candidate = candidate.parent
        return created

    def _new_database_families(self) -> list[str]:
        """The families a new database at ``path`` is created with: those the plan opens in an empty database, then
        ``offsets`` (LAY-5..LAY-8, KV-50), the order :meth:`_open_column_families` and the open create them in
        (an existing database ignores them: the plan over its families decides)."""
        families = [cf for cf in self._plan({DEFAULT_CF: False}).open if cf != OFFSETS_CF]
        return [*families, OFFSETS_CF] if self.manage_offsets else families

    def _open_column_families(self) -> Accessor:
        """Decide the accessor once, at open, from the families present and whether they hold data (KV-30, LAY-*)."""
        engine = self.engine
        plan = self._plan(existing_column_families(engine))
        for cf in plan.open:
            if cf != OFFSETS_CF:
                engine.create_column_family(cf)
        for cf in plan.dropped:
            engine.drop_column_family(cf)  # an empty legacy family is dropped at open (UPG-6)
        self.mode = plan.mode
        message = self.layout.mode_message(plan)
        if message is not None:
            LOG.info(message, self.name)
        return open_accessor(self.staged, plan)

    # the column families, read-only ------------------------------------------------------------------------

    def column_family_rows(self) -> dict[str, list[tuple[bytes, bytes]]]:
        """Every column family's entries in key order, as the open database presents them: written plus staged."""
        out: dict[str, list[tuple[bytes, bytes]]] = {}
        for cf in self.engine.column_families():
            source, cursor = self.staged.scan(cf, None, None, True, True, False)
            try:
                out[cf] = list(source)
            finally:
                cursor.close()
        return out

    # restore, commit, offsets ---------------------------------------------------------------------------------

    def restoring(self) -> AbstractContextManager[None]:
        """Restore's commits skip the WAL, as Kafka writes, until a flush when restore ends (RST-8)."""
        return self.engine.unlogged_writes()

    def commit(self, offsets: Mapping[CodecTopicPartition, int | None], position: Position) -> None:
        """Write the staged data, ``position`` and ``offsets`` in ONE atomic batch (KV-50, OFF-4); a failed write
        changes neither the offsets answered nor the writes staged (OFF-23)."""
        if self.offsets is None:
            self.staged.apply()
            return
        with self.offsets.tentative():
            self.staged.apply(self.offsets.commit_batch(offsets, position))
        self.position = position

    def has_staged_writes(self) -> bool:
        """Whether a write is staged since the last commit."""
        return self.staged.has_writes()

    def write_staged(self) -> None:
        """Write the staged data alone, offsets and position untouched: a segmented store's data goes to disk
        before any segment's offsets (OFF-23)."""
        self.staged.apply()

    def flush(self, position: Position) -> None:
        """Write the staged data and ``position`` without touching the committed offsets."""
        if self.offsets is None:
            self.staged.apply()
            return
        with self.offsets.tentative():
            self.staged.apply(self.offsets.position_batch(position))
        self.position = position

    def committed_offset(self, partition: CodecTopicPartition) -> int | None:
        """The committed changelog offset of ``partition``, or None (OFF-3)."""
        return None if self.offsets is None else self.offsets.committed_offset(partition)

    def committed_offsets(self) -> dict[CodecTopicPartition, int]:
        return {} if self.offsets is None else self.offsets.all_committed()

    def offsets_entries(self) -> dict[bytes, bytes]:
        """The committed content of the ``offsets`` family, key -> value bytes (empty if pre-4.3) (OFF-2)."""
        return {} if self.offsets is None else self.offsets.image

    # closing --------------------------------------------------------------------------------------------------

    def close(self, position: Position) -> None:
        """Write staged data, ``position`` and status CLOSED in one batch, then release the database (OFF-7)."""
        if not self.is_open:
            return
        self.is_open = False
        try:
            extra = self.offsets.close_batch(position) if self.offsets is not None else None
            self.staged.apply(extra)
            self.position = position
        finally:
            self.accessor.release()
            self.engine.close()

    def close_for_downgrade(self, position: Position) -> None:
        """Close for a downgrade below 4.3 (UPG-4, tentative): legacy ``.checkpoint`` / ``<store>.position``
        files are written from the committed offsets and position, and the ``offsets`` family is dropped."""
        if self.offsets is None or self.task_dir is None:
            self.close(position)
            return
        self.staged.apply(self.offsets.close_batch(position))
        self.position = position
        self.offsets.write_legacy_files(self.task_dir, position, self.changelog_partitions)
        self.is_open = False
        self.accessor.release()
        try:
            self.engine.drop_column_family(OFFSETS_CF)
        finally:
            self.engine.close()

    def simulate_crash(self) -> None:
        """Abandon the database as a killed process would: staged writes are lost and status stays OPEN (KV-52)."""
        if not self.is_open:
            return
        self.is_open = False
        self.staged.discard()
        self.accessor.release()
        self.engine.abandon()


def _remove_created(created: Path | None) -> None:
    """Remove what a refused first open created: the directories that did not exist before it (KV-23)."""
    if created is not None:
        shutil.rmtree(created, ignore_errors=True)
