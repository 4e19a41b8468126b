"""The change-logging layer: every write to a key-value bytes store also sends the changelog record Kafka would.

Kafka's ``ChangeLoggingKeyValueBytesStore``, ``ChangeLoggingTimestampedKeyValueBytesStore`` and
``ChangeLoggingTimestampedKeyValueBytesStoreWithHeaders`` (spec/changelog.md, CL-*): the record is built
by :mod:`kstate.codecs.changelog` from the value and the current :class:`~kstate.stores.api.RecordContext`,
then the inner store is written, then the record is appended to a :class:`ChangelogSink`. Building the
record first means a write the log would refuse (a value of the wrong layout, a negative timestamp)
changes nothing (CL-1); Kafka writes the inner store first and then throws.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from kstate.codecs import changelog as cl
from kstate.codecs.store_types import StoreType
from kstate.errors import KStateError
from kstate.stores.api import KeyValueBytesStore, RecordContext
from kstate.stores.surface import check_value, require_key
from kstate.stores.wrapping import WrappedKeyValueBytesStore


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


class ChangeLoggingKeyValueBytesStore(WrappedKeyValueBytesStore):
    """Logs ``put``, ``putIfAbsent`` (only when absent), ``putAll`` (per entry) and ``delete`` (always) (CL-3, CL-4, CL-8).

    One class serves the three store types: what differs (raw value, stored or context timestamp,
    stored or context headers) is decided by the changelog codec from the store type. Reads, restore
    (not logged again, RST-4) and the life-cycle are the wrapped store's.
    """

    def __init__(
        self,
        inner: KeyValueBytesStore,
        store_type: StoreType,
        context: RecordContextHolder,
        sink: ChangelogSink,
    ) -> None:
        super().__init__(inner)
        self.store_type = StoreType(store_type)
        self.context = context
        self.sink = sink
        self._codec_type = self.store_type

    # --- writes: the record first (a refusal changes nothing), then the inner store, then the log ---------

    def _record(self, key: bytes | None, value: bytes | None) -> cl.ChangelogRecord:
        # A key or value that is not bytes is refused by name before any record is built (KV-26).
        return cl.kv_put_record(self._codec_type, require_key(key), check_value(value), self.context.codec_context())

    def check_write(self, key: bytes | None, value: bytes | None) -> None:
        """Refuse, as :meth:`put` would, a write whose changelog record cannot be built (CL-1, CL-2).

        The caching layer above calls it when it accepts a write, so that the refusal comes at the put
        rather than at a later flush (CACHE-2).
        """
        self._record(key, value)

    def put(self, key: bytes, value: bytes | None) -> None:
        record = self._record(key, value)
        self.inner.put(key, value)
        self.sink.append(record)

    def put_if_absent(self, key: bytes, value: bytes | None) -> bytes | None:
        key, value = require_key(key), check_value(value)  # wrong types are refused, present key or not (KV-26)
        try:
            record = self._record(key, value)
        except KStateError:
            # Kafka never reads the value when the key is present: the put is a no-op, not a refusal.
            previous = None if key is None else self.inner.get(key)
            if previous is None:
                raise
            return previous
        previous = self.inner.put_if_absent(key, value)
        if previous is None:
            self.sink.append(record)  # logged only when absent, even a null value (CL-3)
        return previous

    def put_all(self, entries: Sequence[tuple[bytes, bytes | None]]) -> None:
        entries = list(entries)
        records = [self._record(key, value) for key, value in entries]
        self.inner.put_all(entries)
        for record in records:
            self.sink.append(record)

    def delete(self, key: bytes) -> bytes | None:
        key = require_key(key)
        record = cl.kv_delete_record(self._codec_type, key, self.context.codec_context())
        previous = self.inner.delete(key)
        self.sink.append(record)
        return previous


class ChangeLoggingTimestampedKeyValueBytesStore(ChangeLoggingKeyValueBytesStore):
    """Logs the raw value at the value's own timestamp; a tombstone at the context timestamp (CL-4)."""

    def __init__(self, inner: KeyValueBytesStore, context: RecordContextHolder, sink: ChangelogSink) -> None:
        super().__init__(inner, StoreType.TIMESTAMPED_KV, context, sink)


class ChangeLoggingTimestampedKeyValueBytesStoreWithHeaders(ChangeLoggingKeyValueBytesStore):
    """Logs the raw value at the value's timestamp with the value's headers; a tombstone with the context's (CL-8)."""

    def __init__(self, inner: KeyValueBytesStore, context: RecordContextHolder, sink: ChangelogSink) -> None:
        super().__init__(inner, StoreType.TIMESTAMPED_KV_WITH_HEADERS, context, sink)
