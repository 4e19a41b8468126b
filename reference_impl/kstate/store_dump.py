"""Every row of every column family of a store's directory, read without writing to it: the kit's one reader.

A RocksDB is opened read-only from a scratch copy in a temporary directory (immutable ``*.sst``/``*.blob`` files
symlinked, the rest copied), so neither RocksDB nor the binding touches the directory read (rocksdict rewrites its
``rocksdict-config.json`` even on a read-only open), and a crashed or running instance's store is read as it is:
opening it through :mod:`kstate.stores.factory` would write its status (OFF-6) and may migrate or drop families.
The logical view is what the store's iterators return: the data family, plus in upgrade mode every legacy entry
converted, the new family winning on equal keys (KV-30, KV-31, KV-35). A segmented store (window, session) is one
such database per segment, ``<task>/<store>/<store>.<segment start>`` (LAY-3), each upgrading its own families:
:func:`dump_segmented_store` reads every segment. A versioned store is one database whose segments are key
prefixes: :meth:`StoreDump.logical_segments` splits them. The inspector (:mod:`kstate.inspect`), ``store.dump``
and the Spark oracle read through :func:`read_database` and :func:`segment_databases`.
"""

from __future__ import annotations

import contextlib
import gc
import os
import re
import sys
import tempfile
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kstate.codecs.layout import SEGMENT_LIST_SIDECAR, column_family_plan
from kstate.codecs.offsets import OFFSETS_COLUMN_FAMILY, POSITION_KEY, STATUS_KEY, STATUS_OPEN, decode_offset_value
from kstate.codecs.primitives import read_int64
from kstate.codecs.segments import parse_segment_name
from kstate.codecs.store_types import DEFAULT_CF, STORE_TYPES, StoreType
from kstate.errors import KStateError, StateFileError, StateFileTooLargeError
from kstate.storage_files import read_state_file
from kstate.stores.column_families import CONVERTERS
from kstate.stores.engine import check_database_files, is_database_file_name
from kstate.stores.factory import store_directory
from kstate.stores.restore import gc_paused

ColumnFamilies = dict[str, dict[bytes, bytes]]
Rows = dict[str, list[tuple[bytes, bytes]]]

# Files RocksDB never rewrites once written: safe to symlink into the scratch copy.
_IMMUTABLE_SUFFIXES = (".sst", ".blob")
# A placeholder interval for parsing segment names: only the separator and the number are wanted.
_NAME_INTERVAL = 1


class DatabaseReadError(KStateError):
    """A directory that is not a RocksDB database, or one RocksDB could not read."""


def is_database(db_dir: str | Path) -> bool:
    """True if ``db_dir`` holds a RocksDB database (its ``CURRENT`` file)."""
    return (Path(db_dir) / "CURRENT").is_file()


#: The most bytes one scratch copy copies (the files RocksDB may still rewrite: MANIFEST, WAL, OPTIONS, CURRENT).
#: A store's live write-ahead logs are a few write buffers (Kafka's: 16 MiB each, at most 3), far below.
SCRATCH_COPY_CAP = 1 << 30
# Files a read-only open never needs: the lock and the info logs (a read-only open writes its own LOG).
_NOT_COPIED_PREFIXES = ("LOCK", "LOG")


@contextlib.contextmanager
def _scratch_copy(db_dir: Path, cap: int | None = None) -> Iterator[Path]:
    """A private copy of a RocksDB directory, always removed: immutable table files hard-linked (or symlinked
    where the temporary directory is on another file system), the rest copied, at most ``cap`` bytes in all.

    The directory's files are checked first as a store open checks them (LAY-16): a link, a FIFO or a device
    is refused, never copied or followed; only regular files RocksDB names are copied, each opened without
    following a link and without blocking, and never past the cap (LAY-15).
    """
    try:
        check_database_files(db_dir)
    except KStateError as exc:
        raise DatabaseReadError(f"cannot read the RocksDB at {db_dir}: {exc}") from exc
    cap = SCRATCH_COPY_CAP if cap is None else cap
    with tempfile.TemporaryDirectory(prefix="kstate-read-", ignore_cleanup_errors=True) as tmp:
        copy = Path(tmp) / "db"
        copy.mkdir()
        budget = cap
        for entry in sorted(os.scandir(db_dir), key=lambda e: e.name):
            if not entry.is_file(follow_symlinks=False) or not is_database_file_name(entry.name):
                continue
            if entry.name.startswith(_NOT_COPIED_PREFIXES) or entry.name == SEGMENT_LIST_SIDECAR:
                continue
            if entry.name.endswith(_IMMUTABLE_SUFFIXES):
                try:
                    os.link(entry.path, copy / entry.name, follow_symlinks=False)
                except OSError:
                    os.symlink(os.path.realpath(entry.path), copy / entry.name)
                continue
            try:
                data = read_state_file(entry.path, cap=budget)
            except StateFileTooLargeError as exc:
                raise DatabaseReadError(f"cannot read the RocksDB at {db_dir}: its files to copy hold more than "
                                        f"{cap} bytes ({entry.name}): refused") from exc
            except StateFileError as exc:
                raise DatabaseReadError(f"cannot read the RocksDB at {db_dir}: {exc}") from exc
            if data is None:  # deleted by a running instance since the listing
                continue
            budget -= len(data)
            (copy / entry.name).write_bytes(data)
        yield copy


#: RocksDB's second sentence after a table file of the wrong size: it blames the MANIFEST, which is sound (the
#: MANIFEST records the size the table file no longer has).
_MANIFEST_BLAME = re.compile(r"\s*The file \S*MANIFEST-\d+ may be corrupted\.?")


def _user_message(message: str, copy: Path, db_dir: Path) -> str:
    """RocksDB's error as the user's files give it: the scratch copy's paths named as the files it copied, and a
    short table file said once, as what it is (issue 34)."""
    message = message.replace(str(copy), str(db_dir))
    if "Sst file size mismatch" in message:
        message = _MANIFEST_BLAME.sub("", message).strip()
        message += " (a table file shorter or longer than the MANIFEST records: truncated, or replaced)"
    return " ".join(message.split())


class OpenDatabase:
    """A RocksDB opened read-only from its scratch copy by :func:`open_database`: its column families, in the order
    RocksDB lists them, and each family's rows in key order, read as they are consumed (issue 35)."""

    def __init__(self, db: Any, families: list[str], copy: Path, db_dir: Path) -> None:
        self._db = db
        self.families = families
        self._copy = copy
        self._db_dir = db_dir

    def rows(self, cf: str, on_error: Callable[[DatabaseReadError], Exception | None] | None = None
             ) -> Iterator[tuple[bytes, bytes]]:
        """``cf``'s rows in key order, as raw ``(key, value)`` bytes; a fresh iterator at each call, valid while the
        database is open. RocksDB's errors, met while iterating, are given as :class:`DatabaseReadError`, or as what
        ``on_error`` makes of it (None: the rows end there)."""
        try:
            handle = self._db.get_column_family(cf)
            # A dump reads every block once: not kept in the block cache (fill_cache off, a little faster).
            options = _scan_options()
            # Raw mode answers (bytes, bytes) rows: handed on as they come.
            yield from handle.items(read_opt=options)
        except Exception as exc:  # rocksdict raises bare Exceptions for corruption and I/O errors
            error = self.error(exc)
            if on_error is None:
                raise error from exc
            replacement = on_error(error)
            if replacement is not None:
                raise replacement from exc

    def error(self, exc: BaseException) -> DatabaseReadError:
        """RocksDB's error as the user's directory gives it (:func:`_user_message`)."""
        return DatabaseReadError(f"cannot read the RocksDB at {self._db_dir}: "
                                 f"{_user_message(str(exc), self._copy, self._db_dir)}")


def _scan_options() -> Any:
    import rocksdict as rd

    options = rd.ReadOptions()
    options.fill_cache(False)  # type: ignore[call-arg]  # the stub omits the flag the binding takes
    return options


@contextlib.contextmanager
def open_database(db_dir: str | Path) -> Iterator[OpenDatabase]:
    """The RocksDB at ``db_dir`` opened read-only from a scratch copy, its families listed and its rows read on
    demand, any number of times (a dump detects a store's type from its rows, then prints them, holding one row at a
    time, issue 35); the directory is not touched. The scratch copy and the database are released at the end.

    Raises :class:`DatabaseReadError` for a directory without a database or one RocksDB cannot open; rows RocksDB
    cannot read raise it from :meth:`OpenDatabase.rows`.
    """
    import rocksdict as rd

    db_dir = Path(db_dir)
    if not is_database(db_dir):
        raise DatabaseReadError(f"{db_dir} is not a RocksDB database (no CURRENT file)")
    with _scratch_copy(db_dir) as copy:
        db: Any = None
        try:
            families = [str(cf) for cf in rd.Rdict.list_cf(str(copy))]
            db = rd.Rdict(str(copy), rd.Options(raw_mode=True),
                          column_families={cf: rd.Options(raw_mode=True) for cf in families},
                          access_type=rd.AccessType.read_only())
        except Exception as exc:  # rocksdict raises bare Exceptions for corruption and I/O errors
            raise DatabaseReadError(f"cannot read the RocksDB at {db_dir}: {_user_message(str(exc), copy, db_dir)}"
                                    ) from exc
        opened = OpenDatabase(db, families, copy, db_dir)
        try:
            yield opened
        finally:
            opened._db = None
            db.close()
            # rocksdict keeps files open while anything refers to the database: collect the garbage when something
            # besides this frame still does (a full collection in a large heap costs a fifth of a second, paid by
            # every dump, issue 35).
            referred = sys.getrefcount(db) > 2  # this frame's name and getrefcount's argument
            del db
            if referred:
                gc.collect()


def iter_database(db_dir: str | Path) -> Generator[tuple[str, Iterator[tuple[bytes, bytes]]], None, None]:
    """Every column family of the RocksDB at ``db_dir`` with an iterator of its rows in key order, read as they are
    consumed (issue 35: a dump holds one row at a time, not every row of a family); the directory is not touched.

    Each family's iterator is valid until the next family is asked for; the scratch copy and the database are
    released when this generator ends or is closed. Raises :class:`DatabaseReadError` for a directory without a
    database or one RocksDB cannot read, from the call or from the iteration that meets the error.
    """
    with open_database(db_dir) as db:
        for cf in db.families:
            yield cf, db.rows(cf)


def read_database(db_dir: str | Path) -> Rows:
    """Every column family of the RocksDB at ``db_dir`` with its rows in key order, held in lists (what
    :func:`iter_database` yields); the directory is not touched.

    Raises :class:`DatabaseReadError` for a directory without a database or one RocksDB cannot read.
    """
    rows: Rows = {}
    # The collector paused while the lists grow (acyclic tuples, freed by reference counting): it would walk them
    # over and over (issue 35).
    with gc_paused():
        for cf, cf_rows in iter_database(db_dir):
            rows[cf] = list(cf_rows)
    return rows


def segment_databases(store_dir: str | Path) -> list[tuple[Path, int]]:
    """A segmented store's segment databases with their segment starts, oldest first (LAY-3): the entries of
    ``store_dir`` whose names Kafka reads as a segment of the store (a legacy name too) and that hold a database."""
    store_dir = Path(store_dir)
    if not store_dir.is_dir():
        return []
    found = []
    for entry in store_dir.iterdir():
        if entry.is_symlink() or not entry.is_dir() or not is_database(entry):
            continue  # a linked segment is never followed out of the state directory (LAY-15)
        try:
            parsed = parse_segment_name(store_dir.name, entry.name, _NAME_INTERVAL)
        except KStateError:
            continue
        if parsed.segment_id >= 0:
            found.append((entry, parsed.segment_id))
    return sorted(found, key=lambda pair: (pair[1], pair[0].name))


@dataclass(frozen=True)
class StoreDump:
    """Every column family of one store directory, key -> value bytes, and its ``offsets`` entries decoded."""

    path: Path
    column_families: ColumnFamilies

    @property
    def offsets(self) -> dict[bytes, bytes]:
        return self.column_families.get(OFFSETS_COLUMN_FAMILY, {})

    @property
    def status_open(self) -> bool | None:
        """True if the store was left OPEN (unclean shutdown, KV-52), False if CLOSED, None if never opened."""
        status = self.offsets.get(STATUS_KEY)
        return None if status is None else decode_offset_value(status) == STATUS_OPEN

    def committed_offset(self, topic: str, partition: int) -> int | None:
        value = self.offsets.get(f"{topic}-{partition}".encode())
        return None if value is None else decode_offset_value(value)

    def data_families(self) -> ColumnFamilies:
        """Every family but ``offsets``; empty families are left out, as they hold no data to compare."""
        return {cf: entries for cf, entries in self.column_families.items()
                if cf != OFFSETS_COLUMN_FAMILY and entries}

    def logical_view(self, store_type: StoreType) -> dict[bytes, bytes]:
        """What ``all()`` of a ``store_type`` store over this directory returns, without migrating anything."""
        return logical_view(store_type, self.column_families)

    def offsets_without_position(self) -> dict[bytes, bytes]:
        return {k: v for k, v in self.offsets.items() if k != POSITION_KEY}

    def logical_segments(self) -> dict[int, dict[bytes, bytes]]:
        """A versioned store's logical segments: its ``default`` rows by their 8-byte segment-id prefix, the key
        without it; segment -1 holds the latest values (VER-1, VER-2)."""
        segments: dict[int, dict[bytes, bytes]] = {}
        for physical_key, value in self.column_families.get(DEFAULT_CF, {}).items():
            segment, _ = read_int64(physical_key, 0, "versioned segment key")
            segments.setdefault(segment, {})[physical_key[8:]] = value
        return dict(sorted(segments.items()))


def dump_store_dir(path: str | Path) -> StoreDump:
    """Every column family of the RocksDB at ``path`` (none if there is no database there), read untouched."""
    path = Path(path)
    if not is_database(path):
        return StoreDump(path, {})
    return StoreDump(path, {cf: dict(rows) for cf, rows in read_database(path).items()})


def dump_store(state_dir: str | Path, application_id: str, task_id: str, store_name: str,
               store_type: StoreType = StoreType.KEY_VALUE) -> StoreDump:
    """The one database of a key-value or versioned store (``<task>/rocksdb/<store>``, LAY-2)."""
    if not STORE_TYPES[StoreType(store_type)].single_database:
        raise ValueError(f"a {StoreType(store_type).value} store is segmented: use dump_segmented_store")
    return dump_store_dir(store_directory(state_dir, application_id, task_id, store_name, store_type))


@dataclass(frozen=True)
class SegmentedStoreDump:
    """Every segment database of a segmented store, by segment name, oldest first (LAY-3)."""

    path: Path
    segments: dict[str, StoreDump]

    def data_families(self) -> dict[str, ColumnFamilies]:
        """Per segment, every non-empty family but ``offsets``; segments without data are left out."""
        out = {name: dump.data_families() for name, dump in self.segments.items()}
        return {name: families for name, families in out.items() if families}

    @property
    def status_open(self) -> bool | None:
        """True if any segment was left OPEN (KV-52), False if every segment is CLOSED, None if none was opened."""
        statuses = [d.status_open for d in self.segments.values() if d.status_open is not None]
        return None if not statuses else any(statuses)

    def committed_offset(self, topic: str, partition: int) -> int | None:
        """The smallest offset a segment committed (a clean commit gives every segment the same one; the stores
        answer the newest segment's, WS-28, or the smallest, SS-23)."""
        found = [o for o in (d.committed_offset(topic, partition) for d in self.segments.values()) if o is not None]
        return min(found) if found else None

    def segment_views(self, store_type: StoreType) -> dict[str, dict[bytes, bytes]]:
        """Each segment's logical view as ``store_type`` reads it, without migrating anything (KV-31)."""
        return {name: dump.logical_view(store_type) for name, dump in self.segments.items()}

    def logical_view(self, store_type: StoreType) -> dict[bytes, bytes]:
        """Every segment's rows together: a store key is in one segment only (its time picks it)."""
        view: dict[bytes, bytes] = {}
        for rows in self.segment_views(store_type).values():
            view.update(rows)
        return view


def dump_segmented_dir(path: str | Path) -> SegmentedStoreDump:
    """Every segment database under a segmented store's directory, read untouched (LAY-3)."""
    segments = {db.name: dump_store_dir(db) for db, _ in segment_databases(path)}
    return SegmentedStoreDump(Path(path), {name: dump for name, dump in segments.items() if dump.column_families})


def dump_segmented_store(state_dir: str | Path, application_id: str, task_id: str, store_name: str,
                         store_type: StoreType) -> SegmentedStoreDump:
    """A window or session store's segments (``<task>/<store>/<store>.<segment start>``, LAY-3)."""
    if STORE_TYPES[StoreType(store_type)].single_database:
        raise ValueError(f"a {StoreType(store_type).value} store is one database: use dump_store")
    return dump_segmented_dir(store_directory(state_dir, application_id, task_id, store_name, store_type))


def logical_view(store_type: StoreType, column_families: ColumnFamilies) -> dict[bytes, bytes]:
    """The data family, plus each legacy entry converted when the store would open in upgrade mode (KV-31, KV-35).

    Raises :class:`kstate.codecs.layout.LayoutError` for a directory the store type refuses (UPG-1, UPG-7).
    """
    existing = {cf: bool(entries) for cf, entries in column_families.items()}
    plan = column_family_plan(StoreType(store_type), existing)
    view = dict(column_families.get(plan.data_cf, {}))
    if plan.legacy_cf is not None and plan.conversion is not None:
        convert = CONVERTERS[plan.conversion]
        for key, value in column_families.get(plan.legacy_cf, {}).items():
            if key not in view:
                view[key] = convert(value)
    return view
