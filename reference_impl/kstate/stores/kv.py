"""Kafka's plain key-value bytes stores: ``RocksDBStore`` and ``InMemoryKeyValueStore`` (spec/kv-stores.md, KV-*).

Both take byte keys and byte values exactly as given (KV-2). Shared behaviour: a null key is a
:class:`~kstate.errors.NullKeyError` (KV-3), a null value deletes (KV-4), ranges are inclusive with
null meaning unbounded (KV-9), ``from > to`` gives an empty iterator and Kafka's WARN text (KV-10).

RocksDB stores stage their writes and apply them, with the KIP-1035 offsets, in one atomic write
batch at ``commit`` (KV-50); reads see staged writes (KV-51). The column-family accessors below are
Kafka's ``SingleColumnFamilyAccessor`` and ``DualColumnFamilyAccessor`` (the lazy upgrade, KV-30..KV-37),
used by :mod:`kstate.stores.timestamped` and :mod:`kstate.stores.headers`.
"""

from __future__ import annotations

import logging
import shutil
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from types import TracebackType

from kstate.codecs.layout import ColumnFamilyPlan, LayoutError, column_family_plan
from kstate.codecs.position import Position, merge_positions
from kstate.codecs.primitives import INT64_MAX, increment, increment_without_overflow
from kstate.codecs.store_types import LEGACY_CONVERSIONS, StoreType
from kstate.errors import EncodeError, InvalidArgumentError, NullKeyError
from kstate.stores.api import (
    Backend,
    InvalidPrefixError,
    InvalidStateStoreError,
    InvalidStoreNameError,
    ProcessorStateError,
    RecordContext,
    StoreCorruptedError,
    TopicPartition,
    UnknownColumnFamilyError,
)
from kstate.stores.engine import (
    DEFAULT_CF,
    Engine,
    EngineCursor,
    MemoryEngine,
    RocksDBEngine,
    WriteBatch,
    check_directory,
    list_column_families,
    rocksdb_directory_state,
    storage_error,
)

LOG = logging.getLogger("kstate.stores")

#: The WARN Kafka logs for ``range``/``reverseRange`` with ``from > to`` (KV-10), word for word.
INVALID_RANGE_WARNING = (
    "Returning empty iterator for fetch with invalid key range: from > to. "
    "This may be due to range arguments set in the wrong order, "
    "or serdes that don't preserve ordering when lexicographically comparing the serialized bytes. "
    "Note that the built-in numerical serdes do not follow this for negative numbers"
)
ROCKSDB_DIR = "rocksdb"
OFFSETS_CF = "offsets"

__all__ = [
    "INVALID_RANGE_WARNING",
    "DualColumnFamilyAccessor",
    "InMemoryKeyValueStore",
    "RocksDBStore",
    "SingleColumnFamilyAccessor",
    "StoreIterator",
    "UnknownColumnFamilyError",
]

Entry = tuple[bytes, bytes]
Converter = Callable[[bytes], bytes]

#: ``Named.MAX_NAME_LENGTH``: the longest store name Kafka Streams accepts (KV-26).
MAX_STORE_NAME_LENGTH = 249
_STORE_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def validate_store_name(name: object) -> str:
    """Kafka's ``Named.validate``: non-empty, not ``.`` or ``..``, at most 249 characters, each an ASCII
    letter or digit, ``.``, ``_`` or ``-`` (KV-26); so a name never leaves ``rocksdb/``."""
    if not isinstance(name, str):
        raise InvalidArgumentError("name", f"a store name is a str, got {type(name).__name__}")
    if not name:
        raise InvalidStoreNameError("Name is illegal, it can't be empty")
    if name in (".", ".."):
        raise InvalidStoreNameError('Name cannot be "." or ".."')
    if len(name) > MAX_STORE_NAME_LENGTH:
        raise InvalidStoreNameError(
            f"Name is illegal, it can't be longer than {MAX_STORE_NAME_LENGTH} characters, name: {name}"
        )
    if not _STORE_NAME_CHARS.issuperset(name):
        raise InvalidStoreNameError(
            f'Name "{name}" is illegal, it contains a character other than ASCII alphanumerics, \'.\', \'_\' and \'-\''
        )
    return name


def require_key(key: bytes | None) -> bytes:
    """Kafka's ``Objects.requireNonNull(key, "key cannot be null")`` (KV-3)."""
    if key is None:
        raise NullKeyError("key cannot be null")
    if not isinstance(key, bytes):
        if isinstance(key, (bytearray, memoryview)):
            return bytes(key)
        raise InvalidArgumentError("key", f"keys are bytes, got {type(key).__name__}")
    return key


def _value_bytes(value: bytes | None) -> bytes | None:
    if value is None or type(value) is bytes:
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    raise InvalidArgumentError("value", f"values are bytes or None, got {type(value).__name__}")


def in_bounds(key: bytes, lower: bytes | None, upper: bytes | None, lower_inclusive: bool, upper_inclusive: bool) -> bool:
    """Whether ``key`` lies between the bounds (None = unbounded), unsigned lexicographic (PRIM-2)."""
    if lower is not None and (key < lower or (not lower_inclusive and key == lower)):
        return False
    return not (upper is not None and (key > upper or (not upper_inclusive and key == upper)))


def merge_sorted(
    primary: Iterable[tuple[bytes, bytes | None]], secondary: Iterable[Entry], reverse: bool
) -> Iterator[Entry]:
    """Merge two key-ordered streams; on equal keys ``primary`` wins and a None value there hides the key.

    Used for staged writes over the engine (KV-51) and for the new over the legacy column family (KV-35).
    """
    p_iter = iter(primary)
    s_iter = iter(secondary)
    p = next(p_iter, None)
    s = next(s_iter, None)
    while p is not None and s is not None:
        pk = p[0]
        sk = s[0]
        if pk == sk:
            if p[1] is not None:
                yield pk, p[1]
            p = next(p_iter, None)
            s = next(s_iter, None)
        elif (pk < sk) != reverse:
            if p[1] is not None:
                yield pk, p[1]
            p = next(p_iter, None)
        else:
            yield s
            s = next(s_iter, None)
    while p is not None:
        if p[1] is not None:
            yield p[0], p[1]
        p = next(p_iter, None)
    while s is not None:
        yield s
        s = next(s_iter, None)


# --- iterators ----------------------------------------------------------------------------------------


class StoreIterator:
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
        self._cursors = list(cursors)
        self._on_close = on_close
        self._peeked: Entry | None = None
        self._closed_message = closed_message or f"RocksDB iterator for store {store_name} has closed"

    def _live_source(self) -> Iterator[Entry]:
        if self._source is None:
            raise InvalidStateStoreError(self._closed_message)
        return self._source

    def __iter__(self) -> StoreIterator:
        return self

    def __next__(self) -> Entry:
        source = self._live_source()
        peeked = self._peeked
        if peeked is not None:
            self._peeked = None
            if self._reread is None:
                return peeked
            value = self._reread(peeked[0])
            if value is not None:
                return peeked[0], value
        return next(source)

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
        self._source = None
        self._peeked = None
        for cursor in self._cursors:
            cursor.close()
        self._cursors.clear()
        on_close = self._on_close
        self._on_close = None
        if on_close is not None:
            on_close(self)

    def __enter__(self) -> StoreIterator:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def empty_iterator(store_name: str) -> StoreIterator:
    """``KeyValueIterators.emptyIterator()``: nothing to read, and closing it changes nothing (KV-10)."""
    return StoreIterator(store_name, iter(()), closed_message="empty iterator")


def _warn_if_invalid_range(from_key: bytes | None, to_key: bytes | None) -> bool:
    if from_key is not None and to_key is not None and from_key > to_key:
        LOG.warning(INVALID_RANGE_WARNING)
        return True
    return False


# --- staged writes over an engine -------------------------------------------------------------------------


class StagedEngine:
    """An engine plus the writes staged since the last commit; reads see staged writes first (KV-51)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.pending = WriteBatch()

    def read(self, cf: str, key: bytes) -> bytes | None:
        ops = self.pending.ops.get(cf)
        if ops is not None and key in ops:
            return ops[key]
        return self.engine.get(cf, key)

    def stage(self, cf: str, key: bytes, value: bytes | None) -> None:
        self.pending.put(cf, key, value)

    def staged(self, cf: str) -> dict[bytes, bytes | None]:
        return self.pending.column_family(cf)

    def scan(
        self,
        cf: str,
        lower: bytes | None,
        upper: bytes | None,
        lower_inclusive: bool,
        upper_inclusive: bool,
        reverse: bool,
    ) -> tuple[Iterator[Entry], EngineCursor]:
        """Entries of ``cf`` in range as of now: staged writes are copied, the engine cursor is a snapshot."""
        cursor = self.engine.iterate(
            cf, lower, upper, lower_inclusive=lower_inclusive, upper_inclusive=upper_inclusive, reverse=reverse
        )
        ops = self.pending.ops.get(cf)
        if not ops:
            return cursor, cursor
        staged = sorted(
            ((k, v) for k, v in ops.items() if in_bounds(k, lower, upper, lower_inclusive, upper_inclusive)),
            reverse=reverse,
        )
        return merge_sorted(staged, cursor, reverse), cursor

    def is_empty(self, cf: str) -> bool:
        source, cursor = self.scan(cf, None, None, True, True, False)
        try:
            return next(source, None) is None
        finally:
            cursor.close()

    def count(self, cf: str) -> int:
        """The engine's estimate for ``cf`` corrected by the staged writes (exact over exact engines)."""
        estimate = self.engine.approximate_count(cf)
        ops = self.pending.ops.get(cf)
        if ops:
            get = self.engine.get
            for key, value in ops.items():
                present = get(cf, key) is not None
                if value is None and present:
                    estimate -= 1
                elif value is not None and not present:
                    estimate += 1
        return min(max(estimate, 0), INT64_MAX)

    def apply(self, extra: WriteBatch | None = None) -> None:
        """Write the staged writes plus ``extra`` in one atomic engine batch, then forget them (KV-50)."""
        batch = self.pending
        if extra is not None:
            for cf, ops in extra.ops.items():
                batch.column_family(cf).update(ops)
        batch.ops = {cf: ops for cf, ops in batch.ops.items() if ops}
        try:
            self.engine.write(batch)
        finally:
            self.pending = WriteBatch()

    def discard(self) -> None:
        self.pending = WriteBatch()


# --- column-family accessors ---------------------------------------------------------------------------


class SingleColumnFamilyAccessor:
    """All data in one column family (Kafka's ``SingleColumnFamilyAccessor``)."""

    def __init__(self, staged: StagedEngine, cf: str) -> None:
        self.staged = staged
        self.cf = cf
        # The engine's bound reader of this family: the hot path of get (released with the store).
        self._engine_get: Callable[[bytes], bytes | None] | None = staged.engine.getter(cf)

    @property
    def column_families(self) -> tuple[str, ...]:
        return (self.cf,)

    def get(self, key: bytes) -> bytes | None:
        ops = self.staged.pending.ops.get(self.cf)
        if ops and key in ops:
            return ops[key]
        engine_get = self._engine_get
        if engine_get is None:
            raise InvalidStateStoreError("the store is closed")
        try:
            return engine_get(key)
        except Exception as exc:  # the engine's raw reader raises the binding's own errors (KV-25)
            raise storage_error(getattr(self.staged.engine, "store", self.cf), "getting a value", exc) from exc

    def release(self) -> None:
        """Drop the engine reader, which would otherwise keep a closed RocksDB's ``LOCK``."""
        self._engine_get = None

    def get_only(self, key: bytes) -> bytes | None:
        return self.staged.read(self.cf, key)

    def put(self, key: bytes, value: bytes | None) -> None:
        self.staged.stage(self.cf, key, value)

    def put_all(self, entries: Mapping[bytes, bytes | None]) -> None:
        self.staged.staged(self.cf).update(entries)

    def scan(
        self, lower: bytes | None, upper: bytes | None, lower_inclusive: bool, upper_inclusive: bool, reverse: bool
    ) -> tuple[Iterator[Entry], list[EngineCursor]]:
        source, cursor = self.staged.scan(self.cf, lower, upper, lower_inclusive, upper_inclusive, reverse)
        return source, [cursor]

    def approximate_count(self) -> int:
        return self.staged.count(self.cf)


class DualColumnFamilyAccessor:
    """Kafka's ``DualColumnFamilyAccessor``: the lazy upgrade from a legacy column family (KV-31..KV-37).

    ``get`` migrates a legacy entry (converted, written to the new family, deleted from the old);
    ``get_only`` does not; every write deletes from the old family; scans merge both families in
    byte order without migrating, the new family winning on equal keys.
    """

    def __init__(self, staged: StagedEngine, old_cf: str, new_cf: str, convert: Converter) -> None:
        self.staged = staged
        self.old_cf = old_cf
        self.new_cf = new_cf
        self.convert = convert

    @property
    def column_families(self) -> tuple[str, ...]:
        return (self.old_cf, self.new_cf)

    def get(self, key: bytes) -> bytes | None:
        value = self.staged.read(self.new_cf, key)
        if value is not None:
            return value
        legacy = self.staged.read(self.old_cf, key)
        if legacy is None:
            return None
        converted = self.convert(legacy)
        # Safe only because the changelog already holds the data (Kafka's own comment): a crash before
        # the next commit loses the migration, not the value.
        self.put(key, converted)
        return converted

    def get_only(self, key: bytes) -> bytes | None:
        value = self.staged.read(self.new_cf, key)
        if value is not None:
            return value
        legacy = self.staged.read(self.old_cf, key)
        return None if legacy is None else self.convert(legacy)

    def put(self, key: bytes, value: bytes | None) -> None:
        self.staged.stage(self.old_cf, key, None)
        self.staged.stage(self.new_cf, key, value)

    def put_all(self, entries: Mapping[bytes, bytes | None]) -> None:
        self.staged.staged(self.old_cf).update(dict.fromkeys(entries))
        self.staged.staged(self.new_cf).update(entries)

    def scan(
        self, lower: bytes | None, upper: bytes | None, lower_inclusive: bool, upper_inclusive: bool, reverse: bool
    ) -> tuple[Iterator[Entry], list[EngineCursor]]:
        new_source, new_cursor = self.staged.scan(self.new_cf, lower, upper, lower_inclusive, upper_inclusive, reverse)
        old_source, old_cursor = self.staged.scan(self.old_cf, lower, upper, lower_inclusive, upper_inclusive, reverse)
        convert = self.convert
        converted = ((k, convert(v)) for k, v in old_source)
        return merge_sorted(new_source, converted, reverse), [new_cursor, old_cursor]

    def approximate_count(self) -> int:
        return min(self.staged.count(self.old_cf) + self.staged.count(self.new_cf), INT64_MAX)

    def release(self) -> None:
        """Nothing cached: reads go through the staged engine."""


Accessor = SingleColumnFamilyAccessor | DualColumnFamilyAccessor


def _non_null(convert: Callable[[bytes | None], bytes | None]) -> Converter:
    def converted(value: bytes) -> bytes:
        out = convert(value)
        assert out is not None  # the conversions map only null to null
        return out

    return converted


#: The legacy-value conversions of the dual accessor, by the layout plan's name (TSKV-5, HV-8).
CONVERTERS: dict[str, Converter] = {name: _non_null(convert) for name, convert in LEGACY_CONVERSIONS.items()}


def _converter(name: str | None) -> Converter:
    if name is None or name not in CONVERTERS:
        raise ProcessorStateError(f"no legacy conversion named {name!r}")
    return CONVERTERS[name]


def _to_codec_tp(tp: object, argument: str = "partition") -> tuple[str, int]:
    """A ``TopicPartition`` or a ``(topic, partition)`` pair; anything else is refused naming ``argument``."""
    if isinstance(tp, TopicPartition):
        topic, partition = tp.topic, tp.partition
    elif isinstance(tp, tuple) and len(tp) == 2:
        topic, partition = tp
    else:
        raise InvalidArgumentError(argument, f"expected a TopicPartition, got {type(tp).__name__} {tp!r:.80}")
    if not isinstance(topic, str) or not isinstance(partition, int) or isinstance(partition, bool):
        raise InvalidArgumentError(argument, f"expected a str topic and an int partition, got {tp!r:.80}")
    return topic, partition


def _changelog_offsets(changelog_offsets: object) -> dict[tuple[str, int], int | None]:
    """``commit``'s argument checked: a mapping of partitions to int offsets or None."""
    if not isinstance(changelog_offsets, Mapping):
        raise InvalidArgumentError(
            "changelog_offsets", f"expected a mapping of TopicPartition to offset, got {type(changelog_offsets).__name__}"
        )
    out: dict[tuple[str, int], int | None] = {}
    for tp, offset in changelog_offsets.items():
        key = _to_codec_tp(tp, "changelog_offsets")
        if offset is not None and (not isinstance(offset, int) or isinstance(offset, bool)):
            raise InvalidArgumentError(
                "changelog_offsets", f"the offset of {key[0]}-{key[1]} is {type(offset).__name__}, not an int or None"
            )
        out[key] = offset
    return out


# --- the shared store surface ---------------------------------------------------------------------------


class _KeyValueOperations:
    """The operations every bytes store offers, over ``_get``/``_get_only``/``_write``/``_scan`` hooks."""

    name: str
    store_type: StoreType = StoreType.KEY_VALUE
    backend: Backend

    def __init__(self, name: str) -> None:
        self.name = name
        self._position: Position = {}
        self._record_context: RecordContext | None = None

    # hooks
    def _check_open(self) -> None:
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

    # position (IQ consistency) ---------------------------------------------------------------------------

    def set_record_context(self, context: RecordContext | None) -> None:
        """The record being processed; writes then advance the store position (``StoreQueryUtils.updatePosition``)."""
        self._record_context = context

    def _update_position(self) -> None:
        context = self._record_context
        if context is not None and context.topic and context.offset >= 0:
            partitions = self._position.setdefault(context.topic, {})
            partitions[context.partition] = max(partitions.get(context.partition, context.offset), context.offset)

    def merge_position(self, other: Position) -> None:
        """``Position.merge``: per partition the larger offset wins (restore with consistency headers)."""
        self._position = merge_positions(self._position, other)

    @property
    def position(self) -> Position:
        """A copy of the store's position: input topic -> partition -> highest offset applied."""
        return {topic: dict(parts) for topic, parts in self._position.items()}

    # KeyValueStore ------------------------------------------------------------------------------------------

    def get(self, key: bytes) -> bytes | None:
        """The value, or None; on a store in upgrade mode a legacy entry is migrated (KV-5, KV-32)."""
        key = require_key(key)
        self._check_open()
        return self._get(key)

    def put(self, key: bytes, value: bytes | None) -> None:
        """Insert or replace; a None value deletes (KV-4)."""
        key = require_key(key)
        value = _value_bytes(value)
        self._check_open()
        self._write(key, value)
        self._update_position()

    def put_if_absent(self, key: bytes, value: bytes | None) -> bytes | None:
        """``get``, then ``put`` only if that returned None (even a None value); returns the original (KV-6)."""
        key = require_key(key)
        value = _value_bytes(value)
        self._check_open()
        original = self._get(key)
        if original is None:
            self._write(key, value)
            self._update_position()
        return original

    def put_all(self, entries: Sequence[tuple[bytes, bytes | None]]) -> None:
        """All entries at once, later entries for a key winning; a None value deletes; a None key fails first (KV-7)."""
        staged: dict[bytes, bytes | None] = {}
        for key, value in entries:
            staged[require_key(key)] = _value_bytes(value)
        self._check_open()
        self._write_all(staged)
        for _ in staged:
            self._update_position()

    def delete(self, key: bytes) -> bytes | None:
        """Remove the key; returns the old value, read without migrating (KV-8, KV-33)."""
        key = require_key(key)
        self._check_open()
        old = self._get_only(key)
        self._write(key, None)
        self._update_position()
        return old

    def range(self, from_key: bytes | None, to_key: bytes | None) -> StoreIterator:
        """Keys in ``[from_key, to_key]``, ascending; None is unbounded; ``from > to`` is empty + WARN (KV-9, KV-10)."""
        self._check_open()
        if _warn_if_invalid_range(from_key, to_key):
            return empty_iterator(self.name)
        return self._iterator(from_key, to_key, True, False)

    def reverse_range(self, from_key: bytes | None, to_key: bytes | None) -> StoreIterator:
        """Keys in ``[from_key, to_key]``, descending (KV-9, KV-10)."""
        self._check_open()
        if _warn_if_invalid_range(from_key, to_key):
            return empty_iterator(self.name)
        return self._iterator(from_key, to_key, True, True)

    def all(self) -> StoreIterator:
        """Every entry, ascending (KV-9)."""
        self._check_open()
        return self._iterator(None, None, True, False)

    def reverse_all(self) -> StoreIterator:
        """Every entry, descending (KV-9)."""
        self._check_open()
        return self._iterator(None, None, True, True)

    def prefix_scan(self, prefix: bytes) -> StoreIterator:
        """Keys starting with ``prefix``: ``[prefix, increment(prefix))`` (KV-13, KV-14)."""
        if prefix is None:
            raise NullKeyError("prefix cannot be null")
        self._check_open()
        return self._prefix_iterator(bytes(prefix))

    def _prefix_iterator(self, prefix: bytes) -> StoreIterator:
        upper = increment_without_overflow(prefix)
        return self._iterator(prefix, upper, upper is None, False)

    def __enter__(self) -> _KeyValueOperations:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        close = getattr(self, "close", None)
        if close is not None:
            close()


# --- RocksDB ------------------------------------------------------------------------------------------------


class RocksDBStore(_KeyValueOperations):
    """Kafka's ``RocksDBStore``: data in column family ``default``, KIP-1035 offsets in ``offsets`` (KV-20).

    ``RocksDBStore(name, task_dir)`` opens ``<task_dir>/rocksdb/<name>``; pass ``engine`` to run the same
    logic over another :class:`~kstate.stores.engine.Engine` (tests use :class:`MemoryEngine`).
    ``manage_offsets=False`` models a pre-4.3 store: it knows no ``offsets`` column family, so it refuses
    a directory that has one (UPG-2). Writes are staged until :meth:`commit` or :meth:`close` (KV-50).
    Opening raises :class:`ProcessorStateError` for an unknown column family (UPG-1) or an unclean
    shutdown (KV-52) unless ``ignore_invalid_state``.
    """

    backend = Backend.ROCKSDB
    store_type = StoreType.KEY_VALUE
    #: The column families this store type knows, besides ``offsets`` (UPG-1).
    DATA_COLUMN_FAMILIES: tuple[str, ...] = (DEFAULT_CF,)

    def __init__(
        self,
        name: str,
        task_dir: str | Path | None = None,
        *,
        ignore_invalid_state: bool = False,
        migrate_legacy_files: bool = True,
        manage_offsets: bool = True,
        changelog_partitions: Iterable[TopicPartition] | None = None,
        engine: Engine | None = None,
    ) -> None:
        super().__init__(validate_store_name(name))
        if task_dir is None and engine is None:
            raise InvalidArgumentError("task_dir", "a RocksDB store needs a task directory or an engine")
        self.task_dir = Path(task_dir) if task_dir is not None else None
        self.path = self.task_dir / ROCKSDB_DIR / name if self.task_dir is not None else None
        self._manage_offsets = manage_offsets
        self.changelog_partitions = (
            tuple(changelog_partitions) if changelog_partitions is not None else self._default_changelog_partitions()
        )
        self._iterators: weakref.WeakSet[StoreIterator] = weakref.WeakSet()
        self._open = False
        self.mode = "regular"
        from kstate.stores.offsets import StoreOffsets  # offsets.py builds on the stores' staging

        # Every refusal is decided before anything is written: a refused open leaves the directory as it was (KV-23).
        created: Path | None = None
        if engine is None:
            assert self.path is not None
            created = self._preflight(ignore_invalid_state, migrate_legacy_files)
            try:
                engine = RocksDBEngine(self.path, store_name=name)
            except BaseException:
                self._remove_created(created)
                raise
        else:
            self._check_known_column_families(engine.column_families())
        self._engine = engine
        self._staged = StagedEngine(engine)

        self._offsets: StoreOffsets | None = None
        try:
            self._check_open_allowed(engine, ignore_invalid_state)
            self._accessor: Accessor = self._open_column_families()
            if manage_offsets:
                engine.create_column_family(OFFSETS_CF)
                self._offsets = StoreOffsets(self, engine)
                self._position = self._offsets.open(ignore_invalid_state)
            self._open = True
            if manage_offsets and migrate_legacy_files and self.task_dir is not None:
                assert self._offsets is not None
                migrated = self._offsets.migrate_legacy_files(self.task_dir, self.changelog_partitions)
                if migrated is not None:
                    self._position = migrated
        except BaseException:
            self._open = False
            accessor = self.__dict__.get("_accessor")
            if accessor is not None:
                accessor.release()
            engine.close()
            self._remove_created(created)
            raise

    # opening ------------------------------------------------------------------------------------------------

    def _preflight(self, ignore_invalid_state: bool, migrate_legacy_files: bool) -> Path | None:
        """Every check of an open that needs no write: paths, RocksDB metadata, legacy files, and (through a
        read-only open) the column families and the offsets status (KV-23..KV-25, KV-52, KV-57).

        Returns the topmost directory the open will create (removed again if the open fails), or None.
        """
        assert self.path is not None and self.task_dir is not None
        from kstate.stores.offsets import check_legacy_files

        check_directory(self.task_dir, self.name, "task directory")
        check_directory(self.task_dir / ROCKSDB_DIR, self.name, "rocksdb directory")
        exists = rocksdb_directory_state(self.path, self.name)
        if self._manage_offsets and migrate_legacy_files and self.task_dir.is_dir():
            check_legacy_files(self.task_dir, self.name, self.changelog_partitions)
        if exists:
            self._check_known_column_families(list_column_families(self.path, self.name))
            reader = RocksDBEngine(self.path, store_name=self.name, read_only=True)
            try:
                self._check_open_allowed(reader, ignore_invalid_state)
                self._check_table_files(reader)
            finally:
                reader.close()
        created: Path | None = None
        candidate = self.path
        while not candidate.exists() and not candidate.is_symlink() and candidate.parent != candidate:
            created = candidate
            candidate = candidate.parent
        return created

    def _check_table_files(self, reader: RocksDBEngine) -> None:
        """Table files the database does not list, and no ``status`` entry: RocksDB's metadata lost edits (a
        truncated ``MANIFEST`` reads as a shorter one), so the database would open without data it had (KV-24).

        A crash in the middle of a flush also leaves an unlisted table file, but the status is then OPEN.
        """
        from kstate.codecs.offsets import STATUS_KEY
        from kstate.stores.offsets import read_offsets_image

        unlisted = reader.unreferenced_table_files()
        if unlisted and STATUS_KEY not in read_offsets_image(reader):
            raise StoreCorruptedError(
                self.name,
                f"Error opening store {self.name} at location {self.path}: table files {', '.join(unlisted[:5])} "
                "are not in the database and the offsets status is missing: its metadata lost data",
            )

    def _remove_created(self, created: Path | None) -> None:
        """Remove what a refused first open created: the directories that did not exist before it (KV-23)."""
        if created is not None:
            shutil.rmtree(created, ignore_errors=True)

    def _check_open_allowed(self, engine: Engine, ignore_invalid_state: bool) -> None:
        """The refusals that depend on the database's content, checked before any family is created or
        any status written: the layout (LAY-7, LAY-8), the offsets family (KV-52, OFF-6) and offsets ahead
        of data (KV-57)."""
        from kstate.stores.offsets import check_offsets_image, has_committed_offsets, read_offsets_image

        existing = {cf: not engine.is_empty(cf) for cf in engine.column_families()}
        try:
            plan = column_family_plan(self.store_type, existing)
        except LayoutError as exc:
            raise ProcessorStateError(self._layout_error_message(exc)) from exc
        if not self._manage_offsets or OFFSETS_CF not in existing:
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

    def _default_changelog_partitions(self) -> tuple[TopicPartition, ...]:
        """``<application.id>-<store>-changelog``, partition = the task's partition (from the directory names)."""
        if self.task_dir is None:
            return ()
        application_id = self.task_dir.parent.name
        task = self.task_dir.name
        try:
            partition = int(task.rsplit("_", 1)[1])
        except (IndexError, ValueError):
            return ()
        return (TopicPartition(f"{application_id}-{self.name}-changelog", partition),)

    @classmethod
    def known_column_families(cls, manage_offsets: bool = True) -> frozenset[str]:
        """Every column family this store type can open; any other is a downgrade (UPG-1)."""
        known = {DEFAULT_CF, *cls.DATA_COLUMN_FAMILIES}
        if manage_offsets:
            known.add(OFFSETS_CF)
        return frozenset(known)

    def _check_known_column_families(self, existing: Iterable[str]) -> None:
        known = self.known_column_families(self._manage_offsets)
        unknown = sorted(cf for cf in existing if cf not in known)
        if unknown:
            # RocksDB refuses to open a database without all of its column families; Kafka wraps it (UPG-1).
            raise UnknownColumnFamilyError(
                f"Error opening store {self.name} at location {self.path}: "
                f"Column families not opened: {', '.join(unknown)}",
                tuple(unknown),
            )

    def _open_column_families(self) -> Accessor:
        """Decide the accessor once, at open, from the families present and whether they hold data (KV-30, LAY-*)."""
        engine = self._engine
        existing = {cf: not engine.is_empty(cf) for cf in engine.column_families()}
        try:
            plan = column_family_plan(self.store_type, existing)
        except LayoutError as exc:
            raise ProcessorStateError(self._layout_error_message(exc)) from exc
        for cf in plan.open:
            if cf != OFFSETS_CF:
                engine.create_column_family(cf)
        for cf in plan.dropped:
            engine.drop_column_family(cf)  # an empty legacy family is dropped at open (UPG-6)
        self.mode = plan.mode
        message = self._mode_message(plan)
        if message is not None:
            LOG.info(message, self.name)
        if plan.legacy_cf is None:
            return SingleColumnFamilyAccessor(self._staged, plan.data_cf)
        return DualColumnFamilyAccessor(self._staged, plan.legacy_cf, plan.data_cf, _converter(plan.conversion))

    def _layout_error_message(self, exc: LayoutError) -> str:
        return f"Error opening store {self.name} at location {self.path}: {exc}"

    def _mode_message(self, plan: ColumnFamilyPlan) -> str | None:
        """The INFO line Kafka logs for the mode (``%s`` = the store name); the plain store logs none."""
        return None

    # state ----------------------------------------------------------------------------------------------------

    @property
    def is_open(self) -> bool:
        return self._open

    @property
    def engine(self) -> Engine:
        return self._engine

    @property
    def column_families(self) -> tuple[str, ...]:
        """The data column families in use: one in regular mode, (old, new) in upgrade mode (KV-30)."""
        return self._accessor.column_families

    def _check_open(self) -> None:
        if not self._open:
            raise InvalidStateStoreError(f"Store {self.name} is currently closed.")

    def persistent(self) -> bool:
        return True

    # hot paths (same contract as the shared ones, fewer calls) ----------------------------------------------------

    def get(self, key: bytes) -> bytes | None:
        """The value, or None; in upgrade mode a legacy entry is migrated (KV-5, KV-32)."""
        if type(key) is not bytes:
            key = require_key(key)
        if not self._open:
            self._check_open()
        return self._accessor.get(key)

    def put(self, key: bytes, value: bytes | None) -> None:
        """Insert or replace; a None value deletes (KV-4). Staged until commit or close (KV-50)."""
        if type(key) is not bytes:
            key = require_key(key)
        if value is not None and type(value) is not bytes:
            value = _value_bytes(value)
        if not self._open:
            self._check_open()
        self._accessor.put(key, value)
        if self._record_context is not None:
            self._update_position()

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
        self._check_open()
        return self._accessor.approximate_count()

    # restore ------------------------------------------------------------------------------------------------------

    def restore_batch(self, entries: Sequence[tuple[bytes, bytes | None]]) -> None:
        """Stage one restore batch (values already in this store's layout); ``commit`` writes it atomically (KV-16)."""
        self._check_open()
        staged = dict(entries)
        if None in staged:
            raise NullKeyError("key cannot be null")
        self._accessor.put_all(staged)

    def restoring(self) -> AbstractContextManager[None]:
        """Restore's commits skip the WAL, as Kafka writes, until a flush when restore ends (RST-8)."""
        self._check_open()
        return self._engine.unlogged_writes()

    # KIP-1035 ----------------------------------------------------------------------------------------------------

    def manages_offsets(self) -> bool:
        """True: the changelog offsets live in the store's ``offsets`` column family (KV-50); False if pre-4.3."""
        return self._offsets is not None

    def commit(self, changelog_offsets: Mapping[TopicPartition, int | None]) -> None:
        """Write the staged data, the position and ``changelog_offsets`` in ONE atomic batch (KV-50, OFF-4).

        An empty mapping wipes every committed offset; a None value removes that partition's offset.
        """
        offsets = _changelog_offsets(changelog_offsets)
        self._check_open()
        if self._offsets is None:
            self._staged.apply()
            return
        self._staged.apply(self._offsets.commit_batch(offsets, self._position))

    def flush(self) -> None:
        """Kafka's deprecated ``flush``: write the staged data without touching the committed offsets."""
        self._check_open()
        if self._offsets is None:
            self._staged.apply()
        else:
            self._staged.apply(self._offsets.position_batch(self._position))

    def committed_offset(self, partition: TopicPartition) -> int | None:
        """The committed changelog offset of ``partition``, or None (OFF-3)."""
        tp = _to_codec_tp(partition, "partition")
        self._check_open()
        if self._offsets is None:
            return None
        return self._offsets.committed_offset(tp)

    def committed_offsets(self) -> dict[TopicPartition, int]:
        """Every committed changelog offset, by partition (parsed from the ``<topic>-<partition>`` keys)."""
        self._check_open()
        if self._offsets is None:
            return {}
        return {TopicPartition(t, p): o for (t, p), o in self._offsets.all_committed().items()}

    def offsets_entries(self) -> dict[bytes, bytes]:
        """The committed content of the ``offsets`` family, key -> value bytes (empty if pre-4.3) (OFF-2)."""
        return {} if self._offsets is None else self._offsets.image

    # closing --------------------------------------------------------------------------------------------------

    def _close_iterators(self) -> None:
        if self._iterators:
            LOG.warning("Closing %d open iterators for store %s", len(self._iterators), self.name)
            for iterator in list(self._iterators):
                iterator.close()

    def close(self) -> None:
        """Force-close open iterators, write staged data, the position and status CLOSED in one batch, release
        the database (KV-12, OFF-7). Idempotent."""
        if not self._open:
            return
        self._close_iterators()
        self._open = False
        try:
            extra = self._offsets.close_batch(self._position) if self._offsets is not None else None
            self._staged.apply(extra)
        finally:
            self._accessor.release()
            self._engine.close()

    def close_for_downgrade(self) -> None:
        """Close for a downgrade below 4.3 (UPG-4, tentative): legacy ``.checkpoint`` / ``<store>.position``
        files are written from the committed offsets and position, and the ``offsets`` family is dropped."""
        self._check_open()
        if self._offsets is None or self.task_dir is None:
            self.close()
            return
        self._close_iterators()
        self._staged.apply(self._offsets.close_batch(self._position))
        self._offsets.write_legacy_files(self.task_dir, self._position, self.changelog_partitions)
        self._open = False
        self._accessor.release()
        try:
            self._engine.drop_column_family(OFFSETS_CF)
        finally:
            self._engine.close()

    def simulate_crash(self) -> None:
        """Abandon the store as a killed process would: staged writes are lost and status stays OPEN (KV-52)."""
        if not self._open:
            return
        for iterator in list(self._iterators):
            iterator.close()
        self._open = False
        self._staged.discard()
        self._accessor.release()
        self._engine.abandon()


# --- in memory ------------------------------------------------------------------------------------------------


class InMemoryKeyValueStore(_KeyValueOperations):
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

    @property
    def is_open(self) -> bool:
        return self._open

    def _check_open(self) -> None:
        if not self._open:
            raise InvalidStateStoreError(f"Store {self.name} is currently closed.")

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
        self._check_open()
        return self._map.approximate_count(DEFAULT_CF)

    def restore_batch(self, entries: Sequence[tuple[bytes, bytes | None]]) -> None:
        """Put each record in turn (null deletes), as Kafka's restore callback does (KV-16)."""
        self._check_open()
        checked = [(require_key(key), _value_bytes(value)) for key, value in entries]  # refuse before writing
        for key, value in checked:
            self._write(key, value)

    def manages_offsets(self) -> bool:
        """In-memory stores keep no offsets (KV-44)."""
        return False

    def commit(self, changelog_offsets: Mapping[TopicPartition, int | None]) -> None:
        """Nothing to persist (KV-44)."""
        _changelog_offsets(changelog_offsets)
        self._check_open()

    def flush(self) -> None:
        self._check_open()

    def committed_offset(self, partition: TopicPartition) -> int | None:
        """Always None: the offsets are not managed by an in-memory store (KV-44)."""
        _to_codec_tp(partition, "partition")
        self._check_open()
        return None

    def close(self) -> None:
        """Clear the contents and mark the store closed (KV-43)."""
        if not self._open:
            return
        self._open = False
        self._map.clear()

    def simulate_crash(self) -> None:
        """A killed process loses an in-memory store's contents entirely."""
        self.close()
