"""The surface every store family shares (spec/kv-stores.md, KV-3, KV-12, KV-26, KV-44, KV-50..KV-55).

Argument and name checks (KV-3, KV-26), the default changelog partition, ``commit``'s argument checks (OFF-3),
the position a store advances from the record being processed, the open state and its refusal (KV-12), the
closing of open iterators (KV-12, KV-52), what an in-memory store answers about offsets (KV-44), and the one
options object every RocksDB store opens with (KV-52, KV-55, UPG-2). Every family's module imports these from
here, none from another family.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol, TypeVar

from kstate.codecs import changelog as cl
from kstate.codecs.layout import MAX_NAME_LENGTH, name_problem
from kstate.codecs.offsets import committed_offset_problem
from kstate.codecs.position import Position, merge_positions
from kstate.errors import InvalidArgumentError, NullKeyError
from kstate.stores.api import InvalidStoreNameError, RecordContext, TopicPartition
from kstate.stores.life import LifeCycle, Op, OpClass, answer

LOG = logging.getLogger("kstate.stores")

#: A changelog partition as the codecs spell it: ``(topic, partition)``.
CodecTopicPartition = tuple[str, int]

#: ``Named.MAX_NAME_LENGTH``: the longest store name Kafka Streams accepts (KV-26).
MAX_STORE_NAME_LENGTH = MAX_NAME_LENGTH


def validate_store_name(name: object) -> str:
    """Kafka's ``Named.validate``: non-empty, not ``.`` or ``..``, at most 249 characters, each an ASCII
    letter or digit, ``.``, ``_`` or ``-`` (KV-26); so a name never leaves ``rocksdb/``."""
    if not isinstance(name, str):
        raise InvalidArgumentError("name", f"a store name is a str, got {type(name).__name__}")
    problem = name_problem(name)
    if problem is not None:
        raise InvalidStoreNameError(problem)
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


def check_value(value: object, expected: str = "values are bytes or None") -> bytes | None:
    """A value argument: bytes (a bytearray or memoryview is copied), or None for a tombstone; anything else is
    an :class:`InvalidArgumentError` naming ``value`` and saying ``expected`` (WS-35, VS-35)."""
    if value is None or type(value) is bytes:
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    raise InvalidArgumentError("value", f"{expected}, got {type(value).__name__}")


def check_bound(name: str, key: object, expected: str = "keys are bytes or None") -> bytes | None:
    """A key-range bound: bytes, or None for unbounded; anything else is an :class:`InvalidArgumentError` naming
    ``name`` and saying ``expected`` (WS-34)."""
    if key is None:
        return None
    if isinstance(key, (bytes, bytearray, memoryview)):
        return bytes(key)
    raise InvalidArgumentError(name, f"{expected}, got {type(key).__name__}")


def default_changelog_partitions(task_dir: Path, store_name: str) -> tuple[TopicPartition, ...]:
    """``<application.id>-<store>-changelog`` on the task's partition, read from the directory names
    ``<application.id>/<subtopology>_<partition>``; none when they do not have that form (a partition is ASCII
    digits)."""
    _, sep, partition = task_dir.name.rpartition("_")
    if not sep or not partition.isascii() or not partition.isdigit():
        return ()
    # The parent's name is not checked as a topic name: a store opens wherever its task directory is.
    return (TopicPartition(f"{task_dir.parent.name}-{store_name}-changelog", int(partition)),)


# --- commit's arguments ----------------------------------------------------------------------------------------


def to_codec_tp(tp: object, argument: str = "partition") -> tuple[str, int]:
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


def check_changelog_offsets(changelog_offsets: object) -> dict[tuple[str, int], int | None]:
    """``commit``'s argument checked: a mapping of partitions to int offsets or None."""
    if not isinstance(changelog_offsets, Mapping):
        raise InvalidArgumentError(
            "changelog_offsets", f"expected a mapping of TopicPartition to offset, got {type(changelog_offsets).__name__}"
        )
    out: dict[tuple[str, int], int | None] = {}
    for tp, offset in changelog_offsets.items():
        key = to_codec_tp(tp, "changelog_offsets")
        if offset is not None and (not isinstance(offset, int) or isinstance(offset, bool)):
            raise InvalidArgumentError(
                "changelog_offsets", f"the offset of {key[0]}-{key[1]} is {type(offset).__name__}, not an int or None"
            )
        problem = None if offset is None else committed_offset_problem(offset)
        if problem is not None:  # OFF-25: refused before anything is staged, as the reopen would refuse it
            raise InvalidArgumentError("changelog_offsets", f"{key[0]}-{key[1]}: the {problem}")
        out[key] = offset
    return out


# --- the shared store surface ---------------------------------------------------------------------------------


_C = TypeVar("_C", bound="ClosesOnExit")


class ClosesOnExit:
    """``with store:`` or ``with iterator:`` closes it when the block ends, as Java's try-with-resources (KV-12)."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self: _C) -> _C:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class PositionTracker:
    """A store's position (IQ consistency): advanced by each write from the record being processed."""

    def __init__(self) -> None:
        self._position: Position = {}
        self._record_context: RecordContext | None = None

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


class OpenState(LifeCycle):
    """``is_open``, and the store's answer to each operation in each life state, from the one table of
    :mod:`kstate.stores.life` (KV-12, KV-52)."""


class StoreState(OpenState, PositionTracker):
    """What a window or session bytes store keeps besides its data: its name, checked as Kafka's ``Named.validate``
    checks it (KV-26), whether it is open (KV-12) and its position."""

    def __init__(self, name: object) -> None:
        super().__init__()
        self.name = validate_store_name(name)


class ClosesItsIterators(OpenState):
    """A store that tracks its open iterators: closing it closes them first, with Kafka's WARN "Closing N open
    iterators for store X"; a crash closes them silently. Both are no-ops on a closed store (KV-12, KV-52)."""

    _iterators: Collection[Any]

    def _close_database(self) -> None:
        """Write the staged data, the position and status CLOSED; release the database."""
        raise NotImplementedError

    def _abandon_database(self) -> None:
        """Release the database as a killed process would: staged data lost, status left OPEN."""
        raise NotImplementedError

    def _close_iterators(self) -> None:
        if self._iterators:
            LOG.warning("Closing %d open iterators for store %s", len(self._iterators), self.name)
            for iterator in list(self._iterators):
                iterator.close()

    def close(self) -> None:
        if answer(self._life, Op.CLOSE).noop:
            return
        self._close_iterators()
        self._open = False
        self._close_database()

    def simulate_crash(self) -> None:
        if answer(self._life, Op.CRASH).noop:
            return
        for iterator in list(self._iterators):
            iterator.close()
        self._crashed()
        self._abandon_database()


class InMemoryOffsets:
    """What every in-memory store answers about offsets: it keeps none, and commits and flushes nothing (KV-44)."""

    #: The store's own check (declared only: the class this is mixed into defines it).
    _allow: Callable[[OpClass], None]

    def manages_offsets(self) -> bool:
        """In-memory stores keep no offsets (KV-44)."""
        return False

    def commit(self, changelog_offsets: Mapping[TopicPartition, int | None]) -> None:
        """Nothing to persist (KV-44)."""
        check_changelog_offsets(changelog_offsets)
        self._allow(Op.COMMIT)

    def flush(self) -> None:
        self._allow(Op.COMMIT)

    def committed_offset(self, partition: TopicPartition) -> int | None:
        """Always None: the offsets are not managed by an in-memory store (KV-44)."""
        to_codec_tp(partition, "partition")
        self._allow(Op.OFFSETS)
        return None


# --- the record being processed, and where its changelog records go -------------------------------------------


class ChangelogSink(Protocol):
    """Where changelog records go: Kafka's record collector; a ``list`` will do."""

    def append(self, record: cl.ChangelogRecord, /) -> None: ...


class RecordContextHolder:
    """The record context the layers of one store share, as Kafka's ``InternalProcessorContext`` is shared.

    The caching layer swaps in each cached entry's own context while it flushes it (CACHE-3).
    """

    __slots__ = ("_current", "_subscribers")

    def __init__(self, context: RecordContext | None = None) -> None:
        self._current = context if context is not None else RecordContext(timestamp=0)
        self._subscribers: list[Callable[[RecordContext], None]] = []

    @property
    def current(self) -> RecordContext:
        return self._current

    @current.setter
    def current(self, context: RecordContext) -> None:
        self._current = context
        for subscriber in self._subscribers:
            subscriber(context)

    def subscribe(self, subscriber: Callable[[RecordContext], None]) -> None:
        """Call ``subscriber`` with every new context, and now with the current one (a store's position tracking)."""
        self._subscribers.append(subscriber)
        subscriber(self._current)

    def codec_context(self) -> cl.RecordContext:
        return cl.RecordContext(self.current.timestamp, tuple(self.current.headers))


# --- opening a RocksDB store ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RocksDBOptions:
    """How any RocksDB store opens (key-value, window, session, versioned): ``ignore_invalid_state`` opens after an
    unclean shutdown (KV-52); ``migrate_legacy_files`` imports a task's ``.checkpoint`` / ``<store>.position`` on
    first open (KV-55); ``manage_offsets=False`` opens as a pre-4.3 Kafka would (UPG-2); ``changelog_partitions``
    None means the task's own (:func:`default_changelog_partitions`)."""

    ignore_invalid_state: bool = False
    migrate_legacy_files: bool = True
    manage_offsets: bool = True
    changelog_partitions: tuple[TopicPartition, ...] | None = None

    def __post_init__(self) -> None:
        for flag in ("ignore_invalid_state", "migrate_legacy_files", "manage_offsets"):
            if not isinstance(getattr(self, flag), bool):
                raise InvalidArgumentError(flag, f"expected a bool, got {type(getattr(self, flag)).__name__}")
        partitions = self.changelog_partitions
        if partitions is not None:
            if isinstance(partitions, (str, bytes)) or not isinstance(partitions, Iterable):
                raise InvalidArgumentError(
                    "changelog_partitions", f"expected TopicPartitions, got {type(partitions).__name__}")
            checked = tuple(TopicPartition(*to_codec_tp(tp, "changelog_partitions")) for tp in partitions)
            object.__setattr__(self, "changelog_partitions", checked)

    def partitions_for(self, task_dir: Path | None, store_name: str) -> tuple[TopicPartition, ...]:
        """The store's changelog partitions: the ones given, else the task's own (none without a task)."""
        if self.changelog_partitions is not None:
            return self.changelog_partitions
        return () if task_dir is None else default_changelog_partitions(task_dir, store_name)


#: The options of a store opened as Kafka 4.3+ opens it.
DEFAULT_ROCKSDB_OPTIONS = RocksDBOptions()


__all__ = [
    "DEFAULT_ROCKSDB_OPTIONS",
    "LOG",
    "MAX_STORE_NAME_LENGTH",
    "ChangelogSink",
    "ClosesItsIterators",
    "ClosesOnExit",
    "CodecTopicPartition",
    "InMemoryOffsets",
    "OpenState",
    "PositionTracker",
    "RecordContextHolder",
    "RocksDBOptions",
    "StoreState",
    "check_bound",
    "check_changelog_offsets",
    "check_value",
    "default_changelog_partitions",
    "require_key",
    "to_codec_tp",
    "validate_store_name",
]
