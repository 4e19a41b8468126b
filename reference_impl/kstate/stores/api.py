"""The interfaces every store layer implements: Kafka's ``KeyValueStore<Bytes, byte[]>`` contract.

Spec: spec/kv-stores.md (KV-*), spec/offsets.md (OFF-*), spec/changelog.md (CL-*).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

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


class KeyValueBytesStore(Protocol):
    """A store of byte keys and byte values; values are already in the store type's layout."""

    name: str

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
    def close(self) -> None: ...
    @property
    def is_open(self) -> bool: ...
    # KIP-1035: store-managed offsets (in-memory stores return False / None and ignore commit).
    def manages_offsets(self) -> bool: ...
    def commit(self, changelog_offsets: Mapping[TopicPartition, int | None]) -> None: ...
    def committed_offset(self, partition: TopicPartition) -> int | None: ...
    # Restore: one batch of (key, value-in-store-layout) pairs, written atomically (CL-*).
    def restore_batch(self, entries: Sequence[tuple[bytes, bytes | None]]) -> None: ...


def restore_mode(store: object) -> contextlib.AbstractContextManager[None]:
    """The store's ``restoring()`` if it has one, else nothing: RocksDB stores restore with the WAL off (RST-8).

    Optional, so that stores written against the protocol above keep working unchanged.
    """
    restoring = getattr(store, "restoring", None)
    if restoring is None:
        return contextlib.nullcontext()
    mode: contextlib.AbstractContextManager[None] = restoring()
    return mode
