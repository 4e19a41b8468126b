"""Storage engines with column families: RocksDB through ``rocksdict`` (raw bytes only) and a sorted map.

Both order keys unsigned-lexicographically (PRIM-2), apply a :class:`WriteBatch` atomically across
column families, and iterate a column family forward or in reverse between optional bounds, each
inclusive or exclusive. Stores (``kv``, ``timestamped``, ``headers``) hold all of Kafka's semantics;
the engines only store bytes. The RocksDB engine writes stores that the RocksDB versions Kafka ships
can open (block-based table ``format_version`` 5, KV-21) with Kafka's table options (KV-22), and releases
the ``LOCK`` file on close. Every RocksDB error reaches the caller as a typed error naming the store, and
an iteration that ends checks why it ended (KV-25); a directory whose metadata is lost is refused (KV-24).
"""

from __future__ import annotations

import bisect
import contextlib
import gc
import os
import re
import shutil
import stat
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Generator, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from kstate.codecs.layout import ROCKSDICT_SIDECAR
from kstate.codecs.primitives import INT64_MAX
from kstate.codecs.store_types import OFFSETS_CF
from kstate.errors import KStateError, StateFileError
from kstate.storage_files import STATE_FILE_CAP, describe_kind, read_state_file
from kstate.stores.api import InvalidStateStoreError, ProcessorStateError, StoreCorruptedError, StoreStorageError

DEFAULT_CF = "default"
#: The block-based table format written; RocksDB before 8.6 (Kafka 3.x ships 7.9.2) cannot read 6 (KV-21).
TABLE_FORMAT_VERSION = 5


class WriteBatch:
    """Writes to apply at once: per column family, key -> value (None deletes); the last write to a key wins.

    Writes to distinct keys commute, so one map per column family is an exact record of a batch.
    """

    __slots__ = ("ops",)

    def __init__(self) -> None:
        self.ops: dict[str, dict[bytes, bytes | None]] = {}

    def put(self, cf: str, key: bytes, value: bytes | None) -> None:
        ops = self.ops.get(cf)
        if ops is None:
            ops = self.ops[cf] = {}
        ops[key] = value

    def delete(self, cf: str, key: bytes) -> None:
        self.put(cf, key, None)

    def column_family(self, cf: str) -> dict[bytes, bytes | None]:
        """The pending writes of ``cf`` (a live view; empty when there are none)."""
        ops = self.ops.get(cf)
        if ops is None:
            ops = self.ops[cf] = {}
        return ops

    def lookup(self, cf: str, key: bytes) -> tuple[bool, bytes | None]:
        """``(True, value-or-None)`` when the batch writes ``key`` in ``cf``, else ``(False, None)``."""
        ops = self.ops.get(cf)
        if ops is None or key not in ops:
            return False, None
        return True, ops[key]

    def __len__(self) -> int:
        return sum(len(ops) for ops in self.ops.values())

    def clear(self) -> None:
        self.ops.clear()


class EngineCursor(Iterator[tuple[bytes, bytes]]):
    """An ordered iteration over one column family; ``close`` releases it (and is idempotent)."""

    @abstractmethod
    def close(self) -> None: ...


class Engine(ABC):
    """Column-family key-value storage: the operations Kafka's stores need from RocksDB."""

    @property
    @abstractmethod
    def is_open(self) -> bool: ...

    @abstractmethod
    def column_families(self) -> list[str]:
        """Every column family, ``default`` included."""

    def has_column_family(self, cf: str) -> bool:
        return cf in self.column_families()

    @abstractmethod
    def create_column_family(self, cf: str) -> None:
        """Create ``cf`` if missing (no-op when it exists)."""

    @abstractmethod
    def drop_column_family(self, cf: str) -> None: ...

    @abstractmethod
    def get(self, cf: str, key: bytes) -> bytes | None: ...

    def getter(self, cf: str) -> Callable[[bytes], bytes | None]:
        """A reader of ``cf`` bound once (the hot path of ``get``); drop it before :meth:`close`."""
        return lambda key: self.get(cf, key)

    @abstractmethod
    def put(self, cf: str, key: bytes, value: bytes) -> None: ...

    @abstractmethod
    def delete(self, cf: str, key: bytes) -> None: ...

    @abstractmethod
    def write(self, batch: WriteBatch) -> None:
        """Apply every write of ``batch`` atomically (all column families or none)."""

    def iterate(
        self,
        cf: str,
        lower: bytes | None = None,
        upper: bytes | None = None,
        *,
        lower_inclusive: bool = True,
        upper_inclusive: bool = True,
        reverse: bool = False,
    ) -> EngineCursor:
        """Entries of ``cf`` with ``lower <= key <= upper`` (bounds None = open), ascending or descending."""
        return self._cursor(cf, lower, upper, lower_inclusive, upper_inclusive, reverse)

    @abstractmethod
    def _cursor(self, cf: str, lower: bytes | None, upper: bytes | None, lower_inclusive: bool,
                upper_inclusive: bool, reverse: bool) -> EngineCursor:
        """:meth:`iterate` of this engine, its arguments all given; the engine tracks the cursor until it closes."""

    def is_empty(self, cf: str) -> bool:
        cursor = self.iterate(cf)
        try:
            return next(cursor, None) is None
        finally:
            cursor.close()

    @abstractmethod
    def approximate_count(self, cf: str) -> int:
        """The engine's estimate of the number of keys in ``cf``, at most ``INT64_MAX``."""

    @abstractmethod
    def flush(self) -> None:
        """Persist memory buffers (no-op where there are none)."""

    def unlogged_writes(self) -> contextlib.AbstractContextManager[None]:
        """Writes inside skip the write-ahead log and are made durable by a flush at exit (RST-8)."""
        return contextlib.nullcontext()

    def abandon(self) -> None:
        """Stop as a killed process stops: nothing is flushed or written on the way out (KV-52)."""
        self.close()

    @abstractmethod
    def close(self) -> None:
        """Release the engine; open cursors are closed first. Idempotent."""


_Family = TypeVar("_Family")


def _family(families: dict[str, _Family], cf: str, where: str) -> _Family:
    """The open column family ``cf`` of an engine, either engine: one that was never opened or created is a
    :class:`ProcessorStateError`, as RocksDB's unknown family handle is (UPG-1)."""
    try:
        return families[cf]
    except KeyError:
        raise ProcessorStateError(f"unknown column family {cf!r}{where}") from None


# --- memory -----------------------------------------------------------------------------------------


#: How often :meth:`RocksDBEngine.abandon` copies a directory that background work keeps changing.
_ABANDON_COPY_ATTEMPTS = 50


def _file_names(directory: Path) -> set[str]:
    return {entry.name for entry in directory.iterdir() if entry.is_file()}


class _SortedMap:
    __slots__ = ("data", "keys")

    def __init__(self) -> None:
        self.keys: list[bytes] = []
        self.data: dict[bytes, bytes] = {}

    def put(self, key: bytes, value: bytes) -> None:
        if key not in self.data:
            bisect.insort(self.keys, key)
        self.data[key] = value

    def delete(self, key: bytes) -> None:
        if self.data.pop(key, None) is not None:
            del self.keys[bisect.bisect_left(self.keys, key)]

    def key_slice(
        self, lower: bytes | None, upper: bytes | None, lower_inclusive: bool, upper_inclusive: bool
    ) -> list[bytes]:
        """The sorted keys between the bounds, copied (Python's bytes order is unsigned lexicographic)."""
        keys = self.keys
        if lower is None:
            start = 0
        else:
            start = bisect.bisect_left(keys, lower) if lower_inclusive else bisect.bisect_right(keys, lower)
        if upper is None:
            stop = len(keys)
        else:
            stop = bisect.bisect_right(keys, upper) if upper_inclusive else bisect.bisect_left(keys, upper)
        return keys[start:stop] if start < stop else []


class _SnapshotCursor(EngineCursor):
    """Iterates a list of entries taken when the cursor was created (RocksDB's implicit snapshot)."""

    def __init__(self, entries: list[tuple[bytes, bytes]], owner: MemoryEngine | None) -> None:
        self._entries: Iterator[tuple[bytes, bytes]] | None = iter(entries)
        self._owner = owner

    def __next__(self) -> tuple[bytes, bytes]:
        if self._entries is None:
            raise StopIteration
        try:
            return next(self._entries)
        except StopIteration:
            self.close()
            raise

    def close(self) -> None:
        self._entries = None
        if self._owner is not None:
            self._owner._cursors.discard(self)
            self._owner = None


class MemoryEngine(Engine):
    """A sorted map per column family; cursors iterate a copy taken at creation, as RocksDB's do."""

    def __init__(self, column_families: Iterable[str] = ()) -> None:
        self._cfs: dict[str, _SortedMap] = {DEFAULT_CF: _SortedMap()}
        for cf in column_families:
            self._cfs.setdefault(cf, _SortedMap())
        self._open = True
        self._cursors: weakref.WeakSet[_SnapshotCursor] = weakref.WeakSet()

    @property
    def is_open(self) -> bool:
        return self._open

    def _check(self) -> None:
        if not self._open:
            raise InvalidStateStoreError("the memory engine is closed")

    def _cf(self, cf: str) -> _SortedMap:
        self._check()
        return _family(self._cfs, cf, "")

    def column_families(self) -> list[str]:
        return list(self._cfs)

    def create_column_family(self, cf: str) -> None:
        self._check()
        self._cfs.setdefault(cf, _SortedMap())

    def drop_column_family(self, cf: str) -> None:
        self._check()
        if cf == DEFAULT_CF:
            raise ProcessorStateError("the default column family cannot be dropped")
        self._cfs.pop(cf, None)

    def get(self, cf: str, key: bytes) -> bytes | None:
        return self._cf(cf).data.get(key)

    def getter(self, cf: str) -> Callable[[bytes], bytes | None]:
        getter: Callable[[bytes], bytes | None] = self._cf(cf).data.get
        return getter

    def put(self, cf: str, key: bytes, value: bytes) -> None:
        self._cf(cf).put(bytes(key), bytes(value))

    def delete(self, cf: str, key: bytes) -> None:
        self._cf(cf).delete(key)

    def write(self, batch: WriteBatch) -> None:
        targets = [(self._cf(cf), ops) for cf, ops in batch.ops.items()]  # unknown CFs fail before any write
        for target, ops in targets:
            for key, value in ops.items():
                if value is None:
                    target.delete(key)
                else:
                    target.put(bytes(key), bytes(value))

    def _cursor(self, cf: str, lower: bytes | None, upper: bytes | None, lower_inclusive: bool,
                upper_inclusive: bool, reverse: bool) -> EngineCursor:
        target = self._cf(cf)
        keys = target.key_slice(lower, upper, lower_inclusive, upper_inclusive)
        if reverse:
            keys.reverse()
        data = target.data
        cursor = _SnapshotCursor([(k, data[k]) for k in keys], self)
        self._cursors.add(cursor)
        return cursor

    def is_empty(self, cf: str) -> bool:
        return not self._cf(cf).keys

    def approximate_count(self, cf: str) -> int:
        return len(self._cf(cf).keys)

    def key_range(self, cf: str, lower: bytes | None = None, upper: bytes | None = None, *,
                  lower_inclusive: bool = True, upper_inclusive: bool = True) -> list[bytes]:
        """A copy of the sorted keys of ``cf`` between the bounds (the in-memory store's key-set snapshot)."""
        return self._cf(cf).key_slice(lower, upper, lower_inclusive, upper_inclusive)

    def live_map(self, cf: str) -> dict[bytes, bytes]:
        """The live key -> value map of ``cf``: later writes show through it, :meth:`clear` empties it."""
        return self._cf(cf).data

    def contents(self, cf: str) -> dict[bytes, bytes]:
        """A sorted copy of ``cf``, readable even after :meth:`close` (for inspecting what a store left)."""
        target = self._cfs.get(cf)
        return {} if target is None else {k: target.data[k] for k in target.keys}

    def clear(self) -> None:
        """Empty every column family in place (Kafka's ``map.clear()`` on close)."""
        for target in self._cfs.values():
            target.keys.clear()
            target.data.clear()

    def flush(self) -> None:
        """Nothing is buffered."""

    def close(self) -> None:
        for cursor in list(self._cursors):
            cursor.close()
        self._open = False


# --- RocksDB ----------------------------------------------------------------------------------------


def _rocksdict() -> Any:
    import rocksdict

    return rocksdict


#: ``RocksDBStore``'s constants: ``WRITE_BUFFER_SIZE``, ``MAX_WRITE_BUFFERS``, ``BLOCK_SIZE``, ``BLOCK_CACHE_SIZE``.
WRITE_BUFFER_SIZE = 16 * 1024 * 1024
MAX_WRITE_BUFFERS = 3
BLOCK_SIZE = 4096
BLOCK_CACHE_SIZE = 50 * 1024 * 1024
#: RocksJava's ``new BloomFilter()``: 10 bits a key, a full (format) filter (RocksDB 7+ builds no other kind).
BLOOM_BITS_PER_KEY = 10
#: ``RocksDBStore.openDB``'s ``offsetsCfOptions``: the offsets family's write buffer (1 MiB).
OFFSETS_WRITE_BUFFER_SIZE = 1024 * 1024


def block_cache() -> Any:
    """A fresh LRU block cache of Kafka's size (``new LRUCache(BLOCK_CACHE_SIZE)``), one per store (KV-22)."""
    return _rocksdict().Cache(BLOCK_CACHE_SIZE)


def rocksdb_options(cache: Any = None, *, format_version: int = TABLE_FORMAT_VERSION) -> Any:
    """The database's options and every data family's: raw bytes, table ``format_version`` 5, Kafka's table options
    (KV-21, KV-22); the ``offsets`` family has :func:`offsets_options`.

    Kafka's ``RocksDBStore.openDB``: a block-based table with an LRU block cache of 50 MiB, 4 KiB blocks and a
    10-bit bloom filter, ``optimizeFiltersForHits``, no compression, universal compaction, 16 MiB write buffers
    (3 at most), ``increaseParallelism(max(cpus, 2))``. None changes a byte of the keys or values. The reference's
    own choices are ``format_version`` 5 and atomic flush. ``cache`` is shared by the families of one store, as
    Kafka shares one table config; None creates one. ``format_version`` other than 5 is for tests.
    """
    rd = _rocksdict()
    options = rd.Options(raw_mode=True)
    options.create_if_missing(True)
    options.create_missing_column_families(True)
    table = rd.BlockBasedOptions()
    table.set_format_version(format_version)
    table.set_block_size(BLOCK_SIZE)
    table.set_block_cache(cache if cache is not None else block_cache())
    table.set_bloom_filter(BLOOM_BITS_PER_KEY, False)
    options.set_block_based_table_factory(table)
    options.set_optimize_filters_for_hits(True)
    options.increase_parallelism(max(os.cpu_count() or 1, 2))
    options.set_compression_type(rd.DBCompressionType.none())
    options.set_compaction_style(rd.DBCompactionStyle.universal())
    options.set_write_buffer_size(WRITE_BUFFER_SIZE)
    options.set_max_write_buffer_number(MAX_WRITE_BUFFERS)
    # Cross-CF atomicity of memtable flushes, as Kafka 4.3 configures it for the offsets CF.
    options.set_atomic_flush(True)
    return options


def offsets_options(*, format_version: int = TABLE_FORMAT_VERSION) -> Any:
    """The ``offsets`` family's options, Kafka's ``offsetsCfOptions`` of ``RocksDBStore.openDB`` (KV-22).

    A fresh ``ColumnFamilyOptions`` with no compression and a 1 MiB write buffer, and otherwise RocksDB's defaults:
    the default block-based table (no filter, its own block cache), no ``optimize_filters_for_hits``, level
    compaction, 2 write buffers at most. The table ``format_version`` is the reference's 5, as in every family
    (KV-21). Column-family options only: the database's options are :func:`rocksdb_options`'.
    """
    rd = _rocksdict()
    options = rd.Options(raw_mode=True)
    table = rd.BlockBasedOptions()
    table.set_format_version(format_version)
    options.set_block_based_table_factory(table)
    options.set_compression_type(rd.DBCompressionType.none())
    options.set_write_buffer_size(OFFSETS_WRITE_BUFFER_SIZE)
    return options


def storage_error(store: str, what: str, exc: BaseException) -> KStateError:
    """A RocksDB or file-system error as a typed error naming the store; a kstate error is returned as is (KV-25).

    rocksdict raises a bare ``Exception`` whose text starts with RocksDB's status ("Corruption: ...").
    """
    if isinstance(exc, StateFileError):  # a planted link, FIFO or oversized file: typed, naming the store (LAY-15)
        return StoreStorageError(store, f"Error {what} (store {store}): {exc}")
    if isinstance(exc, KStateError):
        return exc
    text = str(exc) or type(exc).__name__
    cls = StoreCorruptedError if "Corruption" in text else StoreStorageError
    return cls(store, f"Error {what} (store {store}): {text}")


def _kind(path: Path) -> str | None:
    """None for a directory or nothing at all; else what the path is instead (a link, even to a directory)."""
    if path.is_symlink():
        if not path.exists():
            return "a dangling symbolic link"
        return (f"a symbolic link to {os.readlink(path)!r:.200}; no link is followed in the middle of a path in the "
                "state directory (LAY-15): a task, store, segments or segment directory that is a link is refused")
    if path.exists() and not path.is_dir():
        return "a file, not a directory"
    return None


def check_directory(path: Path, store: str, what: str) -> None:
    """Refuse a directory the store needs that is a file or a link (dangling or not), before anything is written
    (KV-25, LAY-15: a link in the middle of a path would take every write below it out of the state directory)."""
    refuse_wrong_kind(store, path, f"the {what} {path}", _kind, OSError)


def refuse_wrong_kind(store: str, path: Path, named: str, kind_of: Callable[[Path], str | None],
                      inspect_errors: type[Exception]) -> None:
    """Refuse ``path`` (``named`` so in the messages) when ``kind_of`` says what it is instead of what the store
    needs; ``inspect_errors`` raised while looking is a typed error naming the store too (KV-25, LAY-15)."""
    try:
        kind = kind_of(path)
    except inspect_errors as exc:
        raise storage_error(store, f"inspecting {named}", exc) from exc
    if kind is not None:
        raise StoreStorageError(store, f"Error opening store {store}: {named} is {kind}")


#: The files RocksDB (and the binding, and the kit) keep in a database directory, by name (LAY-16).
_DATABASE_FILE = re.compile(
    r"(LOCK|CURRENT|IDENTITY|LOG|LOG\.old\.\d+|MANIFEST-\d+|OPTIONS-\d+|\d+\.(sst|ldb|log|blob|dbtmp)"
    r"|[A-Z]+-?\d*\.dbtmp|rocksdict-config\.json|kstate-segments)\Z")
#: Files RocksDB reads whole into memory at an open: each is refused over its cap (an OPTIONS file of a
#: thousand column families is well under 16 MiB; CURRENT names one MANIFEST).
_READ_WHOLE_CAPS = ((re.compile(r"CURRENT|IDENTITY\Z"), 64 << 10), (re.compile(r"OPTIONS-\d+\Z"), STATE_FILE_CAP),
                    (re.compile(r"rocksdict-config\.json\Z"), 1 << 20))


def is_database_file_name(name: str) -> bool:
    """Whether ``name`` is a file RocksDB, rocksdict or the kit keeps in a database directory (LAY-16)."""
    return bool(_DATABASE_FILE.match(name))


def check_database_files(path: str | Path, store: str | None = None) -> None:
    """Refuse a database directory whose files RocksDB would follow or block on, before RocksDB opens it (LAY-16).

    Every entry that is a symbolic link, a FIFO, a device or a socket is refused (RocksDB follows a ``LOCK``
    link and creates its target, reads an ``OPTIONS-*`` FIFO forever and one linked to ``/dev/zero`` until it
    aborts), as is a directory named like one of its files, and a file RocksDB reads whole over its cap. The
    error is a :class:`StoreStorageError` naming the store and the file; nothing is opened or written.
    """
    path = Path(path)
    store = store or path.name
    try:
        entries = list(os.scandir(path))
    except (FileNotFoundError, NotADirectoryError):
        return
    except OSError as exc:
        raise storage_error(store, f"listing the store directory {path}", exc) from exc
    for entry in sorted(entries, key=lambda e: e.name):
        try:
            status = entry.stat(follow_symlinks=False)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise storage_error(store, f"inspecting {entry.path}", exc) from exc
        mode = status.st_mode
        if stat.S_ISREG(mode):
            for pattern, cap in _READ_WHOLE_CAPS:
                if pattern.match(entry.name) and status.st_size > cap:
                    raise StoreStorageError(
                        store, f"Error opening store {store} at location {path}: {entry.name} holds "
                        f"{status.st_size} bytes, over the cap of {cap} bytes for a file RocksDB reads whole")
            continue
        if stat.S_ISDIR(mode) and not is_database_file_name(entry.name):
            continue  # RocksDB's own subdirectories (archive/), or the kit's segment list's parent
        raise StoreStorageError(
            store, f"Error opening store {store} at location {path}: {entry.name} is "
            f"{describe_kind(entry.path, mode)}; a database directory holds regular files only: refused before "
            "RocksDB opens it")


def rocksdb_directory_state(path: str | Path, store: str | None = None) -> bool:
    """True when ``path`` holds a database, False when it is absent or empty; anything else is refused (KV-24).

    A directory with entries but no ``CURRENT`` naming an existing ``MANIFEST`` has lost RocksDB's metadata:
    opening it with ``create_if_missing`` would recreate it empty over its table files.
    """
    path = Path(path)
    store = store or path.name
    check_directory(path, store, "store directory")
    try:
        if not path.exists():
            return False
        names = sorted(entry.name for entry in path.iterdir())
        if not names:
            return False
        check_database_files(path, store)
        raw = read_state_file(path / "CURRENT", cap=64 << 10)
    except (OSError, StateFileError) as exc:
        raise storage_error(store, f"inspecting the store directory {path}", exc) from exc
    manifest = raw[:-1] if raw is not None and raw.endswith(b"\n") else None
    if (
        manifest is None
        or not manifest.startswith(b"MANIFEST-")
        or not manifest[9:].isdigit()
        or not (path / manifest.decode("ascii")).is_file()
    ):
        found = "no CURRENT file" if raw is None else f"a CURRENT file naming no MANIFEST ({raw[:40]!r})"
        raise StoreCorruptedError(
            store,
            f"Error opening store {store} at location {path}: the directory holds {', '.join(names[:8])}"
            f"{' ...' if len(names) > 8 else ''} but {found}; refused rather than recreated empty",
        )
    return True


def list_column_families(path: str | Path, store: str | None = None) -> list[str]:
    """The column families of the RocksDB at ``path``; empty if there is no database there. Its files are checked
    first (LAY-16)."""
    if not os.path.lexists(Path(path) / "CURRENT"):
        return []
    check_database_files(path, store)
    try:
        return [str(cf) for cf in _rocksdict().Rdict.list_cf(str(path))]
    except Exception as exc:  # rocksdict raises a bare Exception for I/O and corruption errors
        raise storage_error(store or Path(path).name, f"listing the column families of {path}", exc) from exc


def _bounded_rows(owner: RocksDBEngine, cf: str, items: Any, lower: bytes | None, upper: bytes | None,
                  lower_inclusive: bool, upper_inclusive: bool,
                  reverse: bool) -> Generator[tuple[bytes, bytes], None, None]:
    """The rows of ``items`` (``Rdict.items`` from the seek bound) up to the other bound, as :meth:`Engine.iterate`
    defines them; a storage failure on the way, or at the end (KV-25), is a typed error.

    Only the first row can sit on an exclusive seek bound (a seek lands on it or past it), so it alone is checked
    for that; the rest run through a loop specialised for the direction and the far bound: per row a generator
    resume, one comparison and the row tuple rocksdict built, handed on as is (issue 35); the last row read, which
    the end check needs, is the loop's own variable once the rows run out. A module function, not
    a method: the generator holds no reference to its cursor (no cycle to wait for the collector).
    """
    last: bytes | None = None
    row: tuple[bytes, bytes] | None = None
    try:
        if reverse:
            # seek_for_prev lands on an exclusive upper bound itself, or below it; the lower bound ends.
            skip, stop, stop_inclusive = (None if upper_inclusive else upper), lower, lower_inclusive
        else:
            skip, stop, stop_inclusive = (None if lower_inclusive else lower), upper, upper_inclusive
        for row in items:
            key = row[0]
            last = key
            if key == skip:
                continue
            if stop is not None and (((key < stop) if reverse else (key > stop))
                                     or (key == stop and not stop_inclusive)):
                return
            yield row
            break
        else:
            items = None
        if items is not None:
            # The last row read is the loop variable once the rows run out: no store per row (issue 35).
            row = None
            if stop is None:
                for row in items:
                    yield row
            elif reverse:
                if stop_inclusive:
                    for row in items:
                        if row[0] < stop:
                            return
                        yield row
                else:
                    for row in items:
                        if row[0] <= stop:
                            return
                        yield row
            elif stop_inclusive:
                for row in items:
                    if row[0] > stop:
                        return
                    yield row
            else:
                for row in items:
                    if row[0] >= stop:
                        return
                    yield row
            if row is not None:
                last = row[0]
    except Exception as exc:
        raise storage_error(owner.store, f"iterating column family {cf}", exc) from exc
    # rocksdict's items end silently when the native iterator fails: check why it ended (KV-25).
    items = None
    owner.check_iteration_end(cf, last, lower, upper, reverse)


class _RocksCursor(EngineCursor):
    """Wraps ``Rdict.items``; bounds are enforced here because rocksdict's ReadOptions bounds are not raw.

    The rows come from :func:`_bounded_rows`; iterating the cursor iterates that generator directly (no Python
    frame per row). ``close`` closes the generator, which releases the native iterator.
    """

    __slots__ = ("_owner", "_ref", "_rows")

    def __init__(
        self,
        owner: RocksDBEngine,
        cf: str,
        items: Any,
        lower: bytes | None,
        upper: bytes | None,
        lower_inclusive: bool,
        upper_inclusive: bool,
        reverse: bool,
    ) -> None:
        self._owner: RocksDBEngine | None = owner
        self._ref: weakref.ref[_RocksCursor] | None = None  # the owner's reference to it
        self._rows: Generator[tuple[bytes, bytes], None, None] | None = _bounded_rows(
            owner, cf, items, lower, upper, lower_inclusive, upper_inclusive, reverse)

    def __iter__(self) -> Iterator[tuple[bytes, bytes]]:
        rows = self._rows
        return _NO_ROWS if rows is None else rows

    def __next__(self) -> tuple[bytes, bytes]:
        rows = self._rows
        if rows is None:
            raise StopIteration
        return next(rows)

    def close(self) -> None:
        rows = self._rows
        if rows is None:
            return
        self._rows = None
        rows.close()
        owner = self._owner
        if owner is not None:
            owner._cursors.discard(self._ref)
            self._owner = None


#: What a closed cursor iterates: nothing.
_NO_ROWS: Iterator[tuple[bytes, bytes]] = iter(())


#: RocksDB's refusal to open a database whose LOCK this process holds (runtime-notes §4).
_HELD_BY_THIS_PROCESS = "lock hold by current process"


class RocksDBEngine(Engine):
    """A RocksDB database through rocksdict in raw mode, every existing column family opened.

    ``options`` makes the database's options and every data family's (:func:`rocksdb_options` by default, with one
    block cache for the store); ``offsets`` the ``offsets`` family's (:func:`offsets_options` by default), as
    Kafka's ``RocksDBStore.openDB`` gives that family its own (KV-22), whether it is created or opened. ``create``
    names the families a new database is created with (an existing one opens with the families it has).

    ``close`` closes cursors, column-family objects and handles before the database and drops it: rocksdict keeps
    the ``LOCK`` while anything refers to the database (runtime-notes §4), so an open that finds the LOCK held by
    this process collects garbage and tries again.
    """

    def __init__(
        self,
        path: str | Path,
        options: Callable[[], Any] | None = None,
        *,
        offsets: Callable[[], Any] | None = None,
        store_name: str | None = None,
        read_only: bool = False,
        create: Iterable[str] = (),
    ) -> None:
        rd = _rocksdict()
        self.path = Path(path)
        self.store = store_name or self.path.name
        self.read_only = read_only
        exists = rocksdb_directory_state(self.path, self.store)
        if read_only and not exists:
            raise StoreStorageError(self.store, f"Error opening store {self.store}: no database at {self.path}")
        if not read_only:
            try:
                self.path.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise storage_error(self.store, f"creating the directory {self.path}", exc) from exc
        if options is None:
            cache = block_cache()  # one cache for every family of the store, as Kafka's one table config
            self._options: Callable[[], Any] = lambda: rocksdb_options(cache)
        else:
            self._options = options
        self._offsets_options: Callable[[], Any] = offsets if offsets is not None else offsets_options
        existing = list_column_families(self.path, self.store) or [DEFAULT_CF]
        db_options = self._options()
        if exists:
            # Metadata lost between the check and here must fail the open, not create an empty database (KV-24).
            db_options.create_if_missing(False)
        elif not read_only:
            # A new database gets its families in the open, as Kafka's RocksDB.open with createMissingColumnFamilies
            # makes them: one OPTIONS file and MANIFEST write, not one more per family afterwards (issue 35).
            existing += [cf for cf in dict.fromkeys(create) if cf not in existing]
        extra: dict[str, Any] = {"access_type": rd.AccessType.read_only()} if read_only else {}
        # rocksdict writes its sidecar at every open, a read-only one included: a read-only open (how every check
        # before a refusal reads the database) removes the one it created, so that it writes nothing (KV-23).
        sidecar = self.path / ROCKSDICT_SIDECAR
        created_sidecar = read_only and not os.path.lexists(sidecar)
        try:
            try:
                self._db: Any = rd.Rdict(
                    str(self.path), db_options, column_families={cf: self._family_options(cf) for cf in existing}, **extra
                )
            except Exception as exc:
                if _HELD_BY_THIS_PROCESS not in str(exc):
                    raise
                # A database this process closed is still referred to by garbage (a cycle, a traceback): collect
                # it, which releases its LOCK, and try once more. Collecting here, not at every close, keeps a
                # close cheap in a large heap (runtime-notes §4).
                gc.collect()
                self._db = rd.Rdict(
                    str(self.path), db_options, column_families={cf: self._family_options(cf) for cf in existing}, **extra
                )
        except Exception as exc:  # the LOCK held by another process, corruption, unreadable options
            cls = StoreCorruptedError if "Corruption" in str(exc) else StoreStorageError
            raise cls(self.store, f"Error opening store {self.store} at location {self.path}: {exc}") from exc
        finally:
            if created_sidecar:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(sidecar)
        self._cf_objects: dict[str, Any] = {}
        self._handles: dict[str, Any] = {}
        for cf in existing:
            self._cf_objects[cf] = self._db.get_column_family(cf)
        # Weak: a cursor nobody holds is collected with its native iterator; close() closes the live ones.
        # A set of weak references, each removing itself when its cursor is collected: WeakSet's bookkeeping in C
        # calls (every read opens a cursor, issue 35).
        self._cursors: set[weakref.ref[_RocksCursor]] = set()
        self._write_options = rd.WriteOptions()
        self._unlogged_depth = 0

    @property
    def is_open(self) -> bool:
        return self._db is not None

    def _check(self) -> Any:
        if self._db is None:
            raise InvalidStateStoreError(f"RocksDB at {self.path} is closed")
        return self._db

    def _cf(self, cf: str) -> Any:
        self._check()
        return _family(self._cf_objects, cf, f" in {self.path}")

    def _handle(self, cf: str) -> Any:
        handle = self._handles.get(cf)
        if handle is None:
            self._cf(cf)
            handle = self._handles[cf] = self._db.get_column_family_handle(cf)
        return handle

    def column_families(self) -> list[str]:
        self._check()
        return list(self._cf_objects)

    def _family_options(self, cf: str) -> Any:
        """Kafka's offsets options for the ``offsets`` family, on create and on open; the data options for others."""
        return self._offsets_options() if cf == OFFSETS_CF else self._options()

    def _error(self, what: str, exc: BaseException) -> KStateError:
        return storage_error(self.store, what, exc)

    def create_column_family(self, cf: str) -> None:
        db = self._check()
        if cf not in self._cf_objects:
            try:
                self._cf_objects[cf] = db.create_column_family(cf, self._family_options(cf))
            except Exception as exc:
                raise self._error(f"creating column family {cf}", exc) from exc

    def drop_column_family(self, cf: str) -> None:
        db = self._check()
        if cf == DEFAULT_CF:
            raise ProcessorStateError("the default column family cannot be dropped")
        if cf not in self._cf_objects:
            return
        # Dropped CF objects cannot be closed (rocksdict raises "Column family dropped"): forget them first.
        del self._cf_objects[cf]
        self._handles.pop(cf, None)
        gc.collect()
        try:
            db.drop_column_family(cf)
        except Exception as exc:
            raise self._error(f"dropping column family {cf}", exc) from exc

    def get(self, cf: str, key: bytes) -> bytes | None:
        target = self._cf(cf)
        try:
            value: bytes | None = target.get(key)
        except Exception as exc:
            raise self._error("getting a value", exc) from exc
        return value

    def getter(self, cf: str) -> Callable[[bytes], bytes | None]:
        # The column family's own bound method (the hot path): it references the database, so holders must
        # drop it, and it raises rocksdict's bare Exception, which holders translate with storage_error.
        getter: Callable[[bytes], bytes | None] = self._cf(cf).get
        return getter

    def put(self, cf: str, key: bytes, value: bytes) -> None:
        target = self._cf(cf)
        try:
            target.put(key, value, self._write_options)
        except Exception as exc:
            raise self._error("putting a value", exc) from exc

    def delete(self, cf: str, key: bytes) -> None:
        target = self._cf(cf)
        try:
            target.delete(key, self._write_options)
        except Exception as exc:
            raise self._error("deleting a key", exc) from exc

    def write(self, batch: WriteBatch) -> None:
        db = self._check()
        if not len(batch):
            return
        native = _rocksdict().WriteBatch(raw_mode=True)
        for cf, ops in batch.ops.items():
            handle = self._handle(cf)
            put = native.put
            delete = native.delete
            for key, value in ops.items():
                if value is None:
                    delete(key, handle)
                else:
                    put(key, value, handle)
        try:
            db.write(native, self._write_options)
        except Exception as exc:
            raise self._error("writing a batch", exc) from exc

    def _cursor(self, cf: str, lower: bytes | None, upper: bytes | None, lower_inclusive: bool,
                upper_inclusive: bool, reverse: bool) -> EngineCursor:
        target = self._cf_objects.get(cf) if self._db is not None else None
        if target is None:
            target = self._cf(cf)  # raises the closed or the unknown column family's error
        # from_key seeks (forward) or seeks-for-prev (reverse): never rely on ReadOptions lower bounds.
        try:
            items = target.items(backwards=True, from_key=upper) if reverse else target.items(from_key=lower)
        except Exception as exc:
            raise self._error(f"iterating column family {cf}", exc) from exc
        cursor = _RocksCursor(self, cf, items, lower, upper, lower_inclusive, upper_inclusive, reverse)
        cursors = self._cursors
        cursor._ref = ref = weakref.ref(cursor, cursors.discard)
        cursors.add(ref)
        return cursor

    def check_iteration_end(
        self, cf: str, last: bytes | None, lower: bytes | None, upper: bytes | None, reverse: bool
    ) -> None:
        """Raise a typed error if an iteration of ``cf`` that ran out after ``last`` ended on an error (KV-25).

        A fresh iterator is placed just past ``last``: corruption there fails it again, with its status.
        """
        if self._db is None:
            return
        target = self._cf(cf)
        try:
            native = target.iter()
            if reverse:
                start = last if last is not None else upper
                native.seek_for_prev(start) if start is not None else native.seek_to_last()
                if last is not None and native.valid() and native.key() == last:
                    native.prev()
            else:
                start = last if last is not None else lower
                native.seek(start) if start is not None else native.seek_to_first()
                if last is not None and native.valid() and native.key() == last:
                    native.next()
            if not native.valid():
                native.status()
        except Exception as exc:
            raise self._error(f"iterating column family {cf}", exc) from exc
        finally:
            native = None

    def unreferenced_table_files(self) -> list[str]:
        """The ``*.sst`` files of the directory that the database does not list as live (KV-24)."""
        db = self._check()
        try:
            live = {Path(str(file["name"])).name for file in db.live_files()}
            return sorted(file.name for file in self.path.glob("*.sst") if file.name not in live)
        except Exception as exc:
            raise self._error("listing the table files", exc) from exc

    def approximate_count(self, cf: str) -> int:
        target = self._cf(cf)
        try:
            estimate = target.property_int_value("rocksdb.estimate-num-keys")
        except Exception as exc:
            raise self._error("reading the entry count", exc) from exc
        if estimate is None:
            return 0
        # RocksDB reports an unsigned 64-bit value; Kafka maps a negative long (overflow) to Long.MAX_VALUE.
        return INT64_MAX if estimate > INT64_MAX or estimate < 0 else int(estimate)

    def flush(self) -> None:
        db = self._check()
        try:
            db.flush()
        except Exception as exc:
            raise self._error("flushing", exc) from exc

    @contextlib.contextmanager
    def unlogged_writes(self) -> Iterator[None]:
        """WAL off, as Kafka writes every batch; at exit every family is flushed in one atomic flush (RST-8).

        Nested uses flush once, at the outer exit. Data and the offsets that cover it reach disk together, and
        before any later write goes through the WAL again.
        """
        self._check()
        self._unlogged_depth += 1
        self._write_options.disable_wal = True
        try:
            yield
        finally:
            self._unlogged_depth -= 1
            if self._unlogged_depth == 0:
                self._write_options.disable_wal = False
                if self._db is not None:
                    try:
                        offsets = self._cf_objects.get(OFFSETS_CF)
                        if offsets is not None:
                            # rocksdict flushes one family at a time: a kill between the data's flush and the
                            # offsets' would leave data ahead of its offsets. A manual compaction of the small
                            # offsets family makes RocksDB, with atomic flush on, flush every family at once.
                            offsets.compact_range(None, None)
                        for cf in sorted(self._cf_objects, key=lambda name: name == OFFSETS_CF):
                            self._cf_objects[cf].flush()
                    except Exception as exc:
                        raise self._error("flushing after restore", exc) from exc

    def abandon(self) -> None:
        """Leave the directory as a SIGKILL would: the files as they are now, memtables lost (KV-52, RST-8).

        RocksDB flushes unlogged memtables when it closes, so the files are copied first and put back after.
        """
        if self._db is None:
            return
        crashed = self.path.with_name(self.path.name + ".crashed")
        # A kill sees the files at one instant; a copy file by file does not: a background flush or compaction
        # between copying the MANIFEST and a table file it names leaves a copy no RocksDB can open. Copy again
        # until the directory held the same files before and after one whole copy.
        for _ in range(_ABANDON_COPY_ATTEMPTS):
            shutil.rmtree(crashed, ignore_errors=True)
            crashed.mkdir()
            before = _file_names(self.path)
            copied = set()
            # CURRENT and the MANIFEST first: a table file finished after them is one they do not name yet.
            for name in sorted(before, key=lambda n: (not (n == "CURRENT" or n.startswith("MANIFEST")), n)):
                with contextlib.suppress(FileNotFoundError):  # an obsolete file deleted meanwhile
                    shutil.copy2(self.path / name, crashed / name)
                    copied.add(name)
            if copied == before == _file_names(self.path):
                break
        with contextlib.suppress(KStateError):  # a killed process does not close: its close's failure is moot
            self.close()
        shutil.rmtree(self.path)
        crashed.rename(self.path)

    def close(self) -> None:
        db = self._db
        if db is None:
            return
        for ref in list(self._cursors):
            cursor = ref()
            if cursor is not None:
                cursor.close()
        self._cursors.clear()
        self._handles.clear()
        for cf_object in self._cf_objects.values():
            with contextlib.suppress(Exception):  # a CF object that refuses to close must not keep the LOCK
                cf_object.close()
        self._cf_objects.clear()
        self._db = None
        try:
            db.close()
        except Exception as exc:
            # RocksDB flushes its memtables at close: a full or failing disk fails it, with rocksdict's bare
            # Exception. The database is released all the same; what its WAL holds is read at the next open.
            raise self._error("closing the database", exc) from exc
        finally:
            # Dropping the last reference frees the database and its LOCK; garbage still referring to it is
            # collected by the next open of the same path in this process (see __init__).
            del db
