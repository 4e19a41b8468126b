"""The interfaces every store layer implements: Kafka's ``KeyValueStore<Bytes, byte[]>`` contract.

Spec: spec/kv-stores.md (KV-*), spec/offsets.md (OFF-*), spec/changelog.md (CL-*).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Protocol, runtime_checkable

from kstate.codecs.changelog import ChangelogRecord
from kstate.errors import KStateError


class Backend(str, Enum):
    ROCKSDB = "rocksdb"
    MEMORY = "memory"


class InvalidStateStoreError(KStateError):
    """Use of a closed store or a closed iterator (Kafka: ``InvalidStateStoreException``)."""


class ProcessorStateError(KStateError):
    """A store that cannot be opened as asked (Kafka: ``ProcessorStateException``): unknown column
    families (a downgrade), plain and timestamped data together, or an unclean shutdown (OFF-*)."""


class UnknownColumnFamilyError(ProcessorStateError):
    """A store directory holding column families this store type does not know: a downgrade (UPG-1).

    ``unknown_column_families`` names them, sorted (Kafka: RocksDB's "Column families not opened: ...").
    """

    def __init__(self, message: str, unknown_column_families: tuple[str, ...]) -> None:
        super().__init__(message)
        self.unknown_column_families = unknown_column_families


class StoreStorageError(ProcessorStateError):
    """The store's files cannot be used: a path of the wrong kind, an I/O or permission error, or an error
    RocksDB reported (KV-25). ``store`` names the store."""

    def __init__(self, store: str, message: str) -> None:
        super().__init__(message)
        self.store = store


class StoreCorruptedError(StoreStorageError):
    """The store's files are damaged: RocksDB found corruption, its metadata is missing or unreadable, or the
    ``offsets`` family holds values that cannot be decoded (KV-24, KV-25, KV-57)."""


class InvalidStoreNameError(KStateError, ValueError):
    """A store name Kafka would refuse: empty, ``.`` or ``..``, over 249 characters, or with a character
    other than ASCII letters, digits, ``.``, ``_`` and ``-`` (KV-26)."""


class InvalidPrefixError(KStateError, IndexError):
    """A prefix scan the in-memory store cannot bound: an empty or all-``FF`` prefix (KV-14).

    Kafka's ``InMemoryKeyValueStore.prefixScan`` throws ``IndexOutOfBoundsException`` from ``Bytes.increment``.
    """


@dataclass(frozen=True, order=True)
class TopicPartition:
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True)
class RecordContext:
    """What Kafka's ``ProcessorContext`` supplies to a write: the current record's timestamp and headers."""

    timestamp: int
    headers: tuple[tuple[str, bytes | None], ...] = ()
    offset: int = -1
    topic: str = ""
    partition: int = -1


class KeyValueIterator(Protocol):
    """Kafka's ``KeyValueIterator``: ``peek_next_key``, iteration, ``close`` (reads after close fail)."""

    def __iter__(self) -> Iterator[tuple[bytes, bytes]]: ...
    def __next__(self) -> tuple[bytes, bytes]: ...
    def peek_next_key(self) -> bytes | None: ...
    def close(self) -> None: ...


class StateStore(Protocol):
    """Kafka's ``StateStore`` life-cycle, shared by every store and every layer over one (KV-*, OFF-*, CL-*)."""

    name: str

    def close(self) -> None: ...
    @property
    def is_open(self) -> bool: ...
    def persistent(self) -> bool: ...
    # KIP-1035: store-managed offsets (in-memory stores return False / None and ignore commit).
    def manages_offsets(self) -> bool: ...
    def commit(self, changelog_offsets: Mapping[TopicPartition, int | None]) -> None: ...
    def committed_offset(self, partition: TopicPartition) -> int | None: ...
    # Restore: one batch of (key, value-in-store-layout) pairs, written atomically (CL-*).
    def restore_batch(self, entries: Sequence[tuple[bytes, bytes | None]]) -> None: ...


class KeyValueBytesStore(StateStore, Protocol):
    """A store of byte keys and byte values; values are already in the store type's layout."""

    def put(self, key: bytes, value: bytes | None) -> None: ...
    def put_if_absent(self, key: bytes, value: bytes | None) -> bytes | None: ...
    def put_all(self, entries: Sequence[tuple[bytes, bytes | None]]) -> None: ...
    def delete(self, key: bytes) -> bytes | None: ...
    def get(self, key: bytes) -> bytes | None: ...
    def range(self, from_key: bytes | None, to_key: bytes | None) -> KeyValueIterator: ...
    def reverse_range(self, from_key: bytes | None, to_key: bytes | None) -> KeyValueIterator: ...
    def all(self) -> KeyValueIterator: ...
    def reverse_all(self) -> KeyValueIterator: ...
    def prefix_scan(self, prefix: bytes) -> KeyValueIterator: ...
    def approximate_num_entries(self) -> int: ...


# --- optional capabilities: a store offers them or not; ask with isinstance ------------------------------------


@runtime_checkable
class Restorable(Protocol):
    """A store with a restore mode: RocksDB writes restore batches without the WAL and flushes at the end (RST-8)."""

    def restoring(self) -> contextlib.AbstractContextManager[None]: ...


@runtime_checkable
class Flushable(Protocol):
    """Kafka's deprecated ``flush``: write what the store holds back, without committing offsets (CACHE-9)."""

    def flush(self) -> None: ...


@runtime_checkable
class Crashable(Protocol):
    """A store that can be abandoned as a killed process abandons it: staged writes lost, no clean close (KV-52)."""

    def simulate_crash(self) -> None: ...


@runtime_checkable
class Downgradable(Protocol):
    """A store that can close for a downgrade below 4.3, writing the legacy offset files (UPG-4)."""

    def close_for_downgrade(self) -> None: ...


@runtime_checkable
class PositionTracking(Protocol):
    """A store whose writes advance its position from the record being processed (IQ consistency)."""

    def set_record_context(self, context: RecordContext | None) -> None: ...


@runtime_checkable
class WriteChecking(Protocol):
    """A layer that can refuse, before anything is written, a write it would refuse later (CL-1, CACHE-2)."""

    def check_write(self, key: bytes | None, value: bytes | None) -> None: ...


@runtime_checkable
class ColumnFamilyStore(Protocol):
    """A store over RocksDB column families: its layout mode, its data families in use, every family's rows (KV-30)."""

    mode: str

    @property
    def column_families(self) -> tuple[str, ...]: ...
    def column_family_rows(self) -> dict[str, list[tuple[bytes, bytes]]]: ...


@runtime_checkable
class RecordRestorable(Protocol):
    """A store that restores whole changelog records, timestamps and headers included, not (key, value) pairs:
    a versioned store's version is the record's timestamp (RST-1, VER-*)."""

    def restore_records(self, records: Sequence[ChangelogRecord]) -> None: ...


@runtime_checkable
class SegmentedStore(Protocol):
    """A store kept in segments: every segment's column families and rows, by segment name (LAY-3, RST-5)."""

    def segment_rows(self) -> dict[str, dict[str, list[tuple[bytes, bytes]]]]: ...


class OffsetsInspectable(Protocol):
    """A store whose KIP-1035 ``offsets`` family can be read back whole (OFF-2, OFF-3)."""

    def committed_offsets(self) -> dict[TopicPartition, int]: ...
    def offsets_entries(self) -> dict[bytes, bytes]: ...


def restore_mode(store: object) -> contextlib.AbstractContextManager[None]:
    """The store's ``restoring()`` if it is :class:`Restorable`, else nothing: RocksDB stores restore with the WAL
    off (RST-8); stores written against the protocols above need not have one."""
    if isinstance(store, Restorable):
        return store.restoring()
    return contextlib.nullcontext()
