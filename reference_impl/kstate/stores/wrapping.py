"""One base for the layers over a store, as Kafka's ``WrappedStateStore``: the change-logging layer, the record
cache and the typed facades forward the shared life-cycle from here and override only what they change.

:class:`WrappedStore` forwards the life-cycle of any :class:`~kstate.stores.api.StateStore`;
:class:`WrappedKeyValueBytesStore` adds the reads of a key-value bytes store. Every method is written out
(no ``__getattr__``): a forwarded ``get`` costs one call, as a hand-written one did. ``wrapped()`` is the
store beneath (``inner`` the same, as an attribute).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Generic, TypeVar

from kstate.stores.api import (
    Flushable,
    KeyValueBytesStore,
    KeyValueIterator,
    Restorable,
    StateStore,
    TopicPartition,
    restore_mode,
)
from kstate.stores.life import Op, check_state, life_of

S = TypeVar("S", bound=StateStore)


class WrappedStore(Generic[S]):
    """A layer over ``inner`` forwarding the life-cycle: open, close, offsets, restore, flush (KV-*, OFF-*, RST-4).

    Restore goes to the store beneath, never through the layer (RST-4); ``flush`` and ``restoring`` reach the
    store beneath when it has them (:class:`~kstate.stores.api.Flushable`, :class:`~kstate.stores.api.Restorable`).
    """

    def __init__(self, inner: S) -> None:
        self.inner = inner
        self.name = inner.name

    def wrapped(self) -> S:
        """The store this layer wraps (Kafka: ``WrappedStateStore.wrapped()``)."""
        return self.inner

    @property
    def is_open(self) -> bool:
        return self.inner.is_open

    def close(self) -> None:
        self.inner.close()

    def persistent(self) -> bool:
        return self.inner.persistent()

    def manages_offsets(self) -> bool:
        return self.inner.manages_offsets()

    def commit(self, changelog_offsets: Mapping[TopicPartition, int | None]) -> None:
        self.inner.commit(changelog_offsets)

    def committed_offset(self, partition: TopicPartition) -> int | None:
        return self.inner.committed_offset(partition)

    def flush(self) -> None:
        if isinstance(self.inner, Flushable):
            self.inner.flush()

    def restore_batch(self, entries: Sequence[tuple[bytes, bytes | None]]) -> None:
        self.inner.restore_batch(entries)

    def restoring(self) -> AbstractContextManager[None]:
        """The restore mode of the store below, which asks the life table itself; a store below without one
        (in-memory) is asked here, so that a closed one refuses as the table says (KV-12, RST-8)."""
        if not isinstance(self.inner, Restorable):
            check_state(life_of(self.inner), Op.RESTORE, self.name)
        return restore_mode(self.inner)


class WrappedKeyValueBytesStore(WrappedStore[KeyValueBytesStore]):
    """A layer over a key-value bytes store that also forwards the reads; it overrides the writes it logs or caches."""

    def get(self, key: bytes) -> bytes | None:
        return self.inner.get(key)

    def range(self, from_key: bytes | None, to_key: bytes | None) -> KeyValueIterator:
        return self.inner.range(from_key, to_key)

    def reverse_range(self, from_key: bytes | None, to_key: bytes | None) -> KeyValueIterator:
        return self.inner.reverse_range(from_key, to_key)

    def all(self) -> KeyValueIterator:
        return self.inner.all()

    def reverse_all(self) -> KeyValueIterator:
        return self.inner.reverse_all()

    def prefix_scan(self, prefix: bytes) -> KeyValueIterator:
        return self.inner.prefix_scan(prefix)

    def approximate_num_entries(self) -> int:
        return self.inner.approximate_num_entries()
