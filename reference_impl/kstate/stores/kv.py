"""Kafka's plain key-value bytes stores: ``RocksDBStore`` and ``InMemoryKeyValueStore`` (spec/kv-stores.md, KV-*).

Both take byte keys and byte values exactly as given (KV-2). Shared behaviour: a null key is a
:class:`~kstate.errors.NullKeyError` (KV-3), a null value deletes (KV-4), ranges are inclusive with
null meaning unbounded (KV-9), ``from > to`` gives an empty iterator and Kafka's WARN text (KV-10).

RocksDB stores are the key-value operations over a :class:`~kstate.stores.rocksdb_instance.RocksDBInstance`,
which stages their writes and applies them, with the KIP-1035 offsets, in one atomic write batch at
``commit`` (KV-50); reads see staged writes (KV-51) through the column-family accessors of
:mod:`kstate.stores.column_families` (the lazy upgrade, KV-30..KV-37).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path

from kstate.codecs.primitives import increment, increment_without_overflow
from kstate.codecs.store_types import StoreType
from kstate.errors import EncodeError, InvalidArgumentError, NullKeyError
from kstate.stores.api import (
    Backend,
    InvalidPrefixError,
    InvalidStateStoreError,
    TopicPartition,
    UnknownColumnFamilyError,
)
from kstate.stores.column_families import KEY_VALUE_LAYOUT, Accessor, ColumnFamilyLayout
from kstate.stores.engine import DEFAULT_CF, Engine, EngineCursor, MemoryEngine
from kstate.stores.life import OPEN, Op, answer
from kstate.stores.rocksdb_instance import RocksDBInstance
from kstate.stores.surface import (
    DEFAULT_ROCKSDB_OPTIONS,
    LOG,
    ClosesItsIterators,
    ClosesOnExit,
    InMemoryOffsets,
    OpenState,
    PositionTracker,
    RocksDBOptions,
    check_changelog_offsets,
    check_value,
    require_key,
    to_codec_tp,
    validate_store_name,
)

#: The WARN Kafka logs for ``range``/``reverseRange`` with ``from > to`` (KV-10), word for word.
INVALID_RANGE_WARNING = (
    "Returning empty iterator for fetch with invalid key range: from > to. "
    "This may be due to range arguments set in the wrong order, "
    "or serdes that don't preserve ordering when lexicographically comparing the serialized bytes. "
    "Note that the built-in numerical serdes do not follow this for negative numbers"
)
ROCKSDB_DIR = "rocksdb"

__all__ = [
    "INVALID_RANGE_WARNING",
    "InMemoryKeyValueStore",
    "RocksDBStore",
    "StoreIterator",
    "UnknownColumnFamilyError",
]

Entry = tuple[bytes, bytes]

# --- iterators ----------------------------------------------------------------------------------------


class StoreIterator(ClosesOnExit):
    """Kafka's ``KeyValueIterator<Bytes, byte[]>`` over a store (KV-11, KV-12).

    Iterate it, or call :meth:`has_next` / :meth:`peek_next_key` / ``next``; :meth:`close` releases it
    and any later read raises :class:`InvalidStateStoreError` (Kafka: "RocksDB iterator for store X
    has closed"). A store closes its open iterators when it closes.
    """

    def __init__(
        self,
        store_name: str,
        source: Iterator[Entry],
        cursors: Sequence[EngineCursor] = (),
        on_close: Callable[[StoreIterator], None] | None = None,
        closed_message: str | None = None,
        reread: Callable[[bytes], bytes | None] | None = None,
    ) -> None:
        self._store_name = store_name
        # In memory, values are read live when ``next`` hands them out, even after a peek (KV-41).
        self._reread = reread
        self._source: Iterator[Entry] | None = source
        # The source's own ``__next__`` (C for a generator), called by ``next`` while nothing is peeked; a closed
        # iterator's refuses (issue 35: one Python frame per row).
        self._next: Callable[[], Entry] = source.__next__
        self._cursors = cursors
        self._on_close = on_close
        self._peeked: Entry | None = None
        self._closed_message = closed_message  # None: Kafka's RocksDB message, formatted when it is needed
        self._tracked: weakref.ref[StoreIterator] | None = None  # the store's reference to it (OpenIterators)

    def _refusal(self) -> InvalidStateStoreError:
        message = self._closed_message or f"RocksDB iterator for store {self._store_name} has closed"
        return InvalidStateStoreError(message)

    def _live_source(self) -> Iterator[Entry]:
        if self._source is None:
            raise self._refusal()
        return self._source

    def _refuse(self) -> Entry:
        raise self._refusal()

    def __iter__(self) -> Iterator[Entry]:
        # A ``for`` loop reads the source itself while nothing is peeked: no Python frame of this class per row
        # (issue 35). ``next`` keeps this class's checks; a peeked row (and, in memory, its live re-read, KV-41)
        # goes through ``__next__``; a closed iterator refuses through it (KV-12). Closing closes the source, so a
        # loop whose body closes its iterator ends there.
        source = self._source
        if source is None or self._peeked is not None:
            return self
        return source

    def __next__(self) -> Entry:
        peeked = self._peeked
        if peeked is None:
            return self._next()
        self._live_source()
        self._peeked = None
        if self._reread is None:
            return peeked
        value = self._reread(peeked[0])
        if value is not None:
            return peeked[0], value
        return self._next()

    def has_next(self) -> bool:
        return self.peek_next_key() is not None

    def peek_next_key(self) -> bytes | None:
        """The next key without consuming it; None at the end (Kafka throws ``NoSuchElementException``)."""
        source = self._live_source()
        if self._peeked is None:
            self._peeked = next(source, None)
        return None if self._peeked is None else self._peeked[0]

    @property
    def is_closed(self) -> bool:
        return self._source is None

    def close(self) -> None:
        if self._source is None:
            return
        source = self._source
        self._source = None
        self._next = self._refuse
        self._peeked = None
        close_source = getattr(source, "close", None)
        if close_source is not None:
            close_source()  # a generator over live values (in memory) ends with its iterator
        for cursor in self._cursors:
            cursor.close()
        self._cursors = ()
        on_close = self._on_close
        self._on_close = None
        if on_close is not None:
            on_close(self)



class OpenIterators:
    """A store's open iterators, held weakly (an iterator nobody holds is collected with its native one).

    A set of weak references that remove themselves when their iterator is collected; each iterator keeps its own
    reference, so ``add`` and ``discard`` are one set operation each, not ``WeakSet``'s bookkeeping (every range
    opens an iterator, issue 35). Iterating it gives the live iterators.
    """

    __slots__ = ("_refs",)

    def __init__(self) -> None:
        self._refs: set[weakref.ref[StoreIterator]] = set()

    def add(self, iterator: StoreIterator) -> None:
        refs = self._refs
        iterator._tracked = ref = weakref.ref(iterator, refs.discard)
        refs.add(ref)

    def discard(self, iterator: StoreIterator) -> None:
        ref = iterator._tracked
        if ref is not None:
            self._refs.discard(ref)

    def __len__(self) -> int:
        return len(self._refs)

    def __bool__(self) -> bool:
        return bool(self._refs)

    def __iter__(self) -> Iterator[StoreIterator]:
        return iter([it for ref in list(self._refs) if (it := ref()) is not None])

    def __contains__(self, iterator: object) -> bool:
        ref = getattr(iterator, "_tracked", None)
        return ref is not None and ref in self._refs


def empty_iterator(store_name: str) -> StoreIterator:
    """``KeyValueIterators.emptyIterator()``: nothing to read, and closing it changes nothing (KV-10)."""
    return StoreIterator(store_name, iter(()), closed_message="empty iterator")


def _warn_if_invalid_range(from_key: bytes | None, to_key: bytes | None) -> bool:
    if from_key is not None and to_key is not None and from_key > to_key:
        LOG.warning(INVALID_RANGE_WARNING)
        return True
    return False


class _KeyValueOperations(OpenState, PositionTracker, ClosesOnExit):
    """The operations every bytes store offers, over ``_get``/``_get_only``/``_write``/``_scan`` hooks."""

    #: Whether ``putAll`` advances the position once per call, even with no entries (``RocksDBStore.putAll``
    #: updates it after writing its batch); ``InMemoryKeyValueStore.putAll`` advances it per entry (KV-54).
    POSITION_PER_PUT_ALL = False

    name: str
    store_type: StoreType = StoreType.KEY_VALUE
    backend: Backend

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name

    # hooks
    def close(self) -> None:
        raise NotImplementedError

    def _get(self, key: bytes) -> bytes | None:
        raise NotImplementedError

    def _get_only(self, key: bytes) -> bytes | None:
        raise NotImplementedError

    def _write(self, key: bytes, value: bytes | None) -> None:
        raise NotImplementedError

    def _write_all(self, entries: dict[bytes, bytes | None]) -> None:
        for key, value in entries.items():
            self._write(key, value)

    def _iterator(
        self, lower: bytes | None, upper: bytes | None, upper_inclusive: bool, reverse: bool
    ) -> StoreIterator:
        raise NotImplementedError


    # KeyValueStore ------------------------------------------------------------------------------------------

    def get(self, key: bytes) -> bytes | None:
        """The value, or None; on a store in upgrade mode a legacy entry is migrated (KV-5, KV-32)."""
        key = require_key(key)
        self._allow(Op.READ)
        return self._get(key)

    def put(self, key: bytes, value: bytes | None) -> None:
        """Insert or replace; a None value deletes (KV-4)."""
        key = require_key(key)
        value = check_value(value)
        self._allow(Op.WRITE)
        self._write(key, value)
        self._update_position()

    def put_if_absent(self, key: bytes, value: bytes | None) -> bytes | None:
        """``get``, then ``put`` only if that returned None (even a None value); returns the original (KV-6)."""
        key = require_key(key)
        value = check_value(value)
        self._allow(Op.WRITE)
        original = self._get(key)
        if original is None:
            self._write(key, value)
            self._update_position()
        return original

    def put_all(self, entries: Sequence[tuple[bytes, bytes | None]]) -> None:
        """All entries at once, later entries for a key winning; a None value deletes; a None key fails first (KV-7)."""
        staged: dict[bytes, bytes | None] = {}
        for key, value in entries:
            staged[require_key(key)] = check_value(value)
        self._allow(Op.WRITE)
        self._write_all(staged)
        if staged or self.POSITION_PER_PUT_ALL:
            self._update_position()

    def delete(self, key: bytes) -> bytes | None:
        """Remove the key; returns the old value, read without migrating (KV-8, KV-33)."""
        key = require_key(key)
        self._allow(Op.WRITE)
        old = self._get_only(key)
        self._write(key, None)
        self._update_position()
        return old

    def range(self, from_key: bytes | None, to_key: bytes | None) -> StoreIterator:
        """Keys in ``[from_key, to_key]``, ascending; None is unbounded; ``from > to`` is empty + WARN (KV-9, KV-10)."""
        self._allow(Op.READ)
        if _warn_if_invalid_range(from_key, to_key):
            return empty_iterator(self.name)
        return self._iterator(from_key, to_key, True, False)

    def reverse_range(self, from_key: bytes | None, to_key: bytes | None) -> StoreIterator:
        """Keys in ``[from_key, to_key]``, descending (KV-9, KV-10)."""
        self._allow(Op.READ)
        if _warn_if_invalid_range(from_key, to_key):
            return empty_iterator(self.name)
        return self._iterator(from_key, to_key, True, True)

    def all(self) -> StoreIterator:
        """Every entry, ascending (KV-9)."""
        self._allow(Op.READ)
        return self._iterator(None, None, True, False)

    def reverse_all(self) -> StoreIterator:
        """Every entry, descending (KV-9)."""
        self._allow(Op.READ)
        return self._iterator(None, None, True, True)

    def prefix_scan(self, prefix: bytes) -> StoreIterator:
        """Keys starting with ``prefix``: ``[prefix, increment(prefix))`` (KV-13, KV-14)."""
        if prefix is None:
            raise NullKeyError("prefix cannot be null")
        self._allow(Op.READ)
        return self._prefix_iterator(bytes(prefix))

    def _prefix_iterator(self, prefix: bytes) -> StoreIterator:
        upper = increment_without_overflow(prefix)
        return self._iterator(prefix, upper, upper is None, False)



# --- RocksDB ------------------------------------------------------------------------------------------------


class RocksDBStore(ClosesItsIterators, _KeyValueOperations):
    """Kafka's ``RocksDBStore``: data in column family ``default``, KIP-1035 offsets in ``offsets`` (KV-20).

    ``RocksDBStore(name, task_dir)`` opens ``<task_dir>/rocksdb/<name>``; pass ``engine`` to run the same
    logic over another :class:`~kstate.stores.engine.Engine` (tests use :class:`MemoryEngine`).
    ``options`` (:class:`~kstate.stores.surface.RocksDBOptions`) say how it opens; ``manage_offsets=False`` models
    a pre-4.3 store: it knows no ``offsets`` column family, so it refuses
    a directory that has one (UPG-2). Writes are staged until :meth:`commit` or :meth:`close` (KV-50).
    Opening raises :class:`ProcessorStateError` for an unknown column family (UPG-1) or an unclean
    shutdown (KV-52) unless ``ignore_invalid_state``. The database's life is a
    :class:`~kstate.stores.rocksdb_instance.RocksDBInstance`; this class is the key-value operations over it.
    """

    POSITION_PER_PUT_ALL = True

    backend = Backend.ROCKSDB
    store_type = StoreType.KEY_VALUE
    #: The column families of this store type: layout rules, known families, mode messages (spec/layout.md).
    COLUMN_FAMILY_LAYOUT: ColumnFamilyLayout = KEY_VALUE_LAYOUT
    #: The class that opens and owns the database (a test or mutant may put a subclass here).
    INSTANCE_CLASS: type[RocksDBInstance] = RocksDBInstance

    def __init__(
        self,
        name: str,
        task_dir: str | Path | None = None,
        *,
        options: RocksDBOptions = DEFAULT_ROCKSDB_OPTIONS,
        engine: Engine | None = None,
    ) -> None:
        super().__init__(validate_store_name(name))
        if task_dir is None and engine is None:
            raise InvalidArgumentError("task_dir", "a RocksDB store needs a task directory or an engine")
        self.task_dir = Path(task_dir) if task_dir is not None else None
        self.path = self.task_dir / ROCKSDB_DIR / name if self.task_dir is not None else None
        self.changelog_partitions = options.partitions_for(self.task_dir, self.name)
        self._iterators: OpenIterators = OpenIterators()
        self._open = False
        checked = (
            ((self.task_dir, "task directory"), (self.task_dir / ROCKSDB_DIR, "rocksdb directory"))
            if self.task_dir is not None
            else ()
        )
        self._instance = self.INSTANCE_CLASS(
            name,
            self.path,
            self.COLUMN_FAMILY_LAYOUT,
            checked_directories=checked,
            task_dir=self.task_dir,
            options=options,
            changelog_partitions=self.changelog_partitions,
            engine=engine,
        )
        self._accessor: Accessor = self._instance.accessor
        self._position = self._instance.position
        self._open = True

    # state ----------------------------------------------------------------------------------------------------

    @property
    def mode(self) -> str:
        """``"upgrade"`` when a legacy family held data at open, else ``"regular"`` (KV-30)."""
        return self._instance.mode

    @property
    def engine(self) -> Engine:
        return self._instance.engine

    @property
    def instance(self) -> RocksDBInstance:
        """The database this store operates on."""
        return self._instance

    @property
    def column_families(self) -> tuple[str, ...]:
        """The data column families in use: one in regular mode, (old, new) in upgrade mode (KV-30)."""
        return self._accessor.column_families

    def column_family_rows(self) -> dict[str, list[tuple[bytes, bytes]]]:
        """Every column family's entries, as the open store presents them: written plus staged (KV-51)."""
        self._allow(Op.READ)
        return self._instance.column_family_rows()

    def persistent(self) -> bool:
        return True

    # hot paths (same contract as the shared ones, fewer calls) ----------------------------------------------------

    def get(self, key: bytes) -> bytes | None:
        """The value, or None; in upgrade mode a legacy entry is migrated (KV-5, KV-32)."""
        if type(key) is not bytes:
            key = require_key(key)
        if self._life is not OPEN:
            self._allow(Op.READ)
        return self._accessor.get(key)

    def put(self, key: bytes, value: bytes | None) -> None:
        """Insert or replace; a None value deletes (KV-4). Staged until commit or close (KV-50)."""
        if type(key) is not bytes:
            key = require_key(key)
        if value is not None and type(value) is not bytes:
            value = check_value(value)
        if self._life is not OPEN:
            self._allow(Op.WRITE)
        self._accessor.put(key, value)
        if self._record_context is not None:
            self._update_position()

    def range(self, from_key: bytes | None, to_key: bytes | None) -> StoreIterator:
        """Keys in ``[from_key, to_key]``, ascending; None is unbounded; ``from > to`` is empty + WARN (KV-9, KV-10).

        The shared ``range`` with its checks inline (issue 35); the rows still come from ``_iterator``.
        """
        if not self._open:
            self._allow(Op.READ)
        if from_key is not None and to_key is not None and from_key > to_key:
            LOG.warning(INVALID_RANGE_WARNING)
            return empty_iterator(self.name)
        return self._iterator(from_key, to_key, True, False)

    def all(self) -> StoreIterator:
        """Every entry, ascending (KV-9)."""
        if not self._open:
            self._allow(Op.READ)
        return self._iterator(None, None, True, False)

    def prefix_scan(self, prefix: bytes) -> StoreIterator:
        """Keys starting with ``prefix``: ``[prefix, increment(prefix))`` (KV-13, KV-14); the checks inline."""
        if prefix is None:
            raise NullKeyError("prefix cannot be null")
        if not self._open:
            self._allow(Op.READ)
        return self._prefix_iterator(prefix if type(prefix) is bytes else bytes(prefix))

    # hooks ------------------------------------------------------------------------------------------------------

    def _get(self, key: bytes) -> bytes | None:
        return self._accessor.get(key)

    def _get_only(self, key: bytes) -> bytes | None:
        return self._accessor.get_only(key)

    def _write(self, key: bytes, value: bytes | None) -> None:
        self._accessor.put(key, value)

    def _write_all(self, entries: dict[bytes, bytes | None]) -> None:
        self._accessor.put_all(entries)

    def _iterator(
        self, lower: bytes | None, upper: bytes | None, upper_inclusive: bool, reverse: bool
    ) -> StoreIterator:
        source, cursors = self._accessor.scan(lower, upper, True, upper_inclusive, reverse)
        iterator = StoreIterator(self.name, source, cursors, self._iterators.discard)
        self._iterators.add(iterator)
        return iterator

    def approximate_num_entries(self) -> int:
        """RocksDB's ``rocksdb.estimate-num-keys`` (old + new family in upgrade mode), capped at Long.MAX (KV-15)."""
        self._allow(Op.READ)
        return self._accessor.approximate_count()

    # restore ------------------------------------------------------------------------------------------------------

    def restore_batch(self, entries: Sequence[tuple[bytes, bytes | None]]) -> None:
        """Stage one restore batch (values already in this store's layout); ``commit`` writes it atomically (KV-16)."""
        self._allow(Op.RESTORE)
        staged = dict(entries)
        if None in staged:
            raise NullKeyError("key cannot be null")
        self._accessor.put_all(staged)

    def restoring(self) -> AbstractContextManager[None]:
        """Restore's commits skip the WAL, as Kafka writes, until a flush when restore ends (RST-8)."""
        self._allow(Op.RESTORE)
        return self._instance.restoring()

    # KIP-1035 ----------------------------------------------------------------------------------------------------

    def manages_offsets(self) -> bool:
        """True: the changelog offsets live in the store's ``offsets`` column family (KV-50); False if pre-4.3."""
        return self._instance.offsets is not None

    def commit(self, changelog_offsets: Mapping[TopicPartition, int | None]) -> None:
        """Write the staged data, the position and ``changelog_offsets`` in ONE atomic batch (KV-50, OFF-4).

        An empty mapping wipes every committed offset; a None value removes that partition's offset.
        """
        offsets = check_changelog_offsets(changelog_offsets)
        self._allow(Op.COMMIT)
        self._instance.commit(offsets, self._position)

    def flush(self) -> None:
        """Kafka's deprecated ``flush``: write the staged data without touching the committed offsets."""
        self._allow(Op.COMMIT)
        self._instance.flush(self._position)

    def committed_offset(self, partition: TopicPartition) -> int | None:
        """The committed changelog offset of ``partition``, or None (OFF-3)."""
        tp = to_codec_tp(partition, "partition")
        self._allow(Op.OFFSETS)
        return self._instance.committed_offset(tp)

    def committed_offsets(self) -> dict[TopicPartition, int]:
        """Every committed changelog offset, by partition (parsed from the ``<topic>-<partition>`` keys)."""
        self._allow(Op.OFFSETS)
        return {TopicPartition(t, p): o for (t, p), o in self._instance.committed_offsets().items()}

    def offsets_entries(self) -> dict[bytes, bytes]:
        """The committed content of the ``offsets`` family, key -> value bytes (empty if pre-4.3) (OFF-2)."""
        return self._instance.offsets_entries()

    # closing --------------------------------------------------------------------------------------------------

    def _close_database(self) -> None:
        """Staged data, the position and status CLOSED in one batch; the database released (KV-12, OFF-7)."""
        self._instance.close(self._position)

    def close_for_downgrade(self) -> None:
        """Close for a downgrade below 4.3 (UPG-4, tentative): legacy ``.checkpoint`` / ``<store>.position``
        files are written from the committed offsets and position, and the ``offsets`` family is dropped."""
        self._allow(Op.DOWNGRADE)
        if self._instance.offsets is None or self._instance.task_dir is None:
            self.close()
            return
        self._close_iterators()
        try:
            self._instance.close_for_downgrade(self._position)
        finally:
            self._open = self._instance.is_open

    def _abandon_database(self) -> None:
        """Staged writes lost, status left OPEN (KV-52)."""
        self._instance.simulate_crash()


# --- in memory ------------------------------------------------------------------------------------------------


class InMemoryKeyValueStore(InMemoryOffsets, _KeyValueOperations):
    """Kafka's ``InMemoryKeyValueStore``: a sorted map written through, no offsets managed (KV-40..KV-44).

    Iterators copy the key set when created and read values live, skipping keys deleted since (KV-41).
    Closing clears the map; open iterators then end (KV-43). Use after close raises
    :class:`InvalidStateStoreError`.
    """

    backend = Backend.MEMORY
    store_type = StoreType.KEY_VALUE

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self._map = MemoryEngine()
        self._open = True

    def persistent(self) -> bool:
        return False

    def _get(self, key: bytes) -> bytes | None:
        return self._map.get(DEFAULT_CF, key)

    def _get_only(self, key: bytes) -> bytes | None:
        return self._map.get(DEFAULT_CF, key)

    def _write(self, key: bytes, value: bytes | None) -> None:
        if value is None:
            self._map.delete(DEFAULT_CF, key)
        else:
            self._map.put(DEFAULT_CF, key, value)

    def _iterator(
        self, lower: bytes | None, upper: bytes | None, upper_inclusive: bool, reverse: bool
    ) -> StoreIterator:
        keys = self._map.key_range(DEFAULT_CF, lower, upper, upper_inclusive=upper_inclusive)
        if reverse:
            keys.reverse()
        return StoreIterator(
            self.name,
            self._live_values(keys),
            closed_message=f"Iterator for store {self.name} has already been closed.",
            reread=self._map.live_map(DEFAULT_CF).get,
        )

    def _live_values(self, keys: list[bytes]) -> Iterator[Entry]:
        data = self._map.live_map(DEFAULT_CF)
        for key in keys:
            value = data.get(key)
            if value is not None:  # deleted since the iterator was created
                yield key, value

    def _prefix_iterator(self, prefix: bytes) -> StoreIterator:
        try:
            upper = increment(prefix)
        except EncodeError as exc:
            # Kafka: Bytes.increment throws IndexOutOfBoundsException for an empty or all-FF prefix (KV-14).
            raise InvalidPrefixError(f"cannot prefix-scan {prefix.hex() or 'an empty prefix'}: {exc.reason}") from exc
        return self._iterator(prefix, upper, False, False)

    def approximate_num_entries(self) -> int:
        """Exact: the map's size (KV-15)."""
        self._allow(Op.READ)
        return self._map.approximate_count(DEFAULT_CF)

    def restore_batch(self, entries: Sequence[tuple[bytes, bytes | None]]) -> None:
        """Put each record in turn (null deletes), as Kafka's restore callback does (KV-16)."""
        self._allow(Op.RESTORE)
        checked = [(require_key(key), check_value(value)) for key, value in entries]  # refuse before writing
        for key, value in checked:
            self._write(key, value)

    def close(self) -> None:
        """Clear the contents and mark the store closed (KV-43)."""
        if answer(self._life, Op.CLOSE).noop:
            return
        self._open = False
        self._map.clear()

    def simulate_crash(self) -> None:
        """A killed process loses an in-memory store's contents entirely: the crash is the close (KV-43)."""
        self.close()
