"""The change-logging layer of every store family: each logged write also sends the changelog record Kafka would.

Kafka's ``ChangeLogging*BytesStore`` classes (spec/changelog.md, CL-*; WS-22..WS-24; SS-26..SS-29; VS-18, VS-19,
VS-26) have one shape here, :class:`ChangeLoggingStore`: built as ``(inner, store_type, context, sink)``, each
logged write builds its record first, by :mod:`kstate.codecs.changelog` from the store type's changelog fields and
the current :class:`~kstate.stores.api.RecordContext`, then writes the store beneath, then appends the record to
the :class:`~kstate.stores.surface.ChangelogSink`. Building the record first means a write the log would refuse (a
value of the wrong layout, a negative timestamp) changes nothing (CL-1); Kafka writes the inner store first and
then throws. Reads, restore (never logged again, RST-4) and the life-cycle are the store's beneath. A family may
keep its layer in its own module (issue 33), found through :mod:`kstate.stores.families` like its stores.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from kstate.codecs import changelog as cl
from kstate.codecs import window_keys
from kstate.codecs.changelog import ChangelogRecord
from kstate.codecs.store_types import StoreType
from kstate.errors import KStateError
from kstate.stores.api import KeyValueBytesStore, StateStore
from kstate.stores.surface import ChangelogSink, RecordContextHolder, check_value, require_key
from kstate.stores.versioned import (
    ResultOrder,
    RocksDBVersionedStore,
    VersionedRecord,
    check_key,
    check_timestamp,
)
from kstate.stores.window import TimedValue, WindowBytesStore, WindowedEntry, check_time
from kstate.stores.wrapping import WrappedKeyValueBytesStore, WrappedStore

S = TypeVar("S", bound=StateStore)


class ChangeLoggingStore(WrappedStore[S]):
    """The one shape of a change-logging layer over ``inner``: the store type whose changelog fields make its records
    (``store_type``, or the inner store's), the shared record context, and the sink its records go to (CL-1)."""

    def __init__(self, inner: S, store_type: StoreType | None, context: RecordContextHolder,
                 sink: ChangelogSink) -> None:
        super().__init__(inner)
        self.store_type = StoreType(store_type if store_type is not None else inner.store_type)  # type: ignore[attr-defined]
        self.context = context
        self.sink = sink


# --- key-value stores ---------------------------------------------------------------------------------------------


class ChangeLoggingKeyValueBytesStore(ChangeLoggingStore[KeyValueBytesStore], WrappedKeyValueBytesStore):
    """Logs ``put``, ``putIfAbsent`` (only when absent), ``putAll`` (per entry) and ``delete`` (always) (CL-3, CL-4, CL-8).

    One class serves the three store types: what differs (raw value, stored or context timestamp,
    stored or context headers) is decided by the changelog codec from the store type. Reads, restore
    (not logged again, RST-4) and the life-cycle are the wrapped store's.
    """

    #: The store type of a subclass named after one type; None: the one given, else the inner store's.
    STORE_TYPE: StoreType | None = None

    def __init__(self, inner: KeyValueBytesStore, store_type: StoreType | None, context: RecordContextHolder,
                 sink: ChangelogSink) -> None:
        super().__init__(inner, self.STORE_TYPE if self.STORE_TYPE is not None else store_type, context, sink)
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

    STORE_TYPE = StoreType.TIMESTAMPED_KV


class ChangeLoggingTimestampedKeyValueBytesStoreWithHeaders(ChangeLoggingKeyValueBytesStore):
    """Logs the raw value at the value's timestamp with the value's headers; a tombstone with the context's (CL-8)."""

    STORE_TYPE = StoreType.TIMESTAMPED_KV_WITH_HEADERS

# --- window stores ----------------------------------------------------------------------------------------------------


class ChangeLoggingWindowBytesStore(ChangeLoggingStore[WindowBytesStore]):
    """Logs every ``put`` of the window store beneath; reads, restore and the life-cycle are the store's (WS-22)."""

    def __init__(self, inner: WindowBytesStore, store_type: StoreType | None, context: RecordContextHolder,
                 sink: ChangelogSink) -> None:
        super().__init__(inner, store_type, context, sink)
        self.retain_duplicates = inner.retain_duplicates
        #: The layer's own duplicate counter (WS-22).
        self.seqnum = 0

    def check_write(self, key: bytes | None, value: bytes | None, window_start: int = 0) -> None:
        """Refuse, as :meth:`put` would, a write whose changelog record cannot be built (WS-24)."""
        self._record(key, value, window_start, self.seqnum)

    def _record(self, key: bytes | None, value: bytes | None, window_start: int, seqnum: int) -> cl.ChangelogRecord:
        key = require_key(key)  # None: NullKeyError; not bytes: refused by name, never bytes(key) (WS-35)
        check_time("window_start", window_start)
        return cl.window_put_record(self.store_type, key, window_start, seqnum, check_value(value),
                                    self.context.codec_context())

    def put(self, key: bytes, value: bytes | None, window_start: int) -> None:
        """The store's put, then the record with the layer's next seqnum (WS-22, WS-23, WS-24)."""
        seqnum = window_keys.next_seqnum(self.seqnum, self.retain_duplicates)
        record = self._record(key, value, window_start, seqnum)
        self.inner.put(key, value, window_start)
        self.seqnum = seqnum
        self.sink.append(record)

    # reads: the store's ------------------------------------------------------------------------------------------

    def fetch(self, key: bytes, time: int) -> bytes | None:
        return self.inner.fetch(key, time)

    def fetch_range(self, key: bytes, time_from: int, time_to: int, backward: bool = False) -> list[TimedValue]:
        return self.inner.fetch_range(key, time_from, time_to, backward)

    def fetch_keys(self, key_from: bytes | None, key_to: bytes | None, time_from: int, time_to: int,
                   backward: bool = False) -> list[WindowedEntry]:
        return self.inner.fetch_keys(key_from, key_to, time_from, time_to, backward)

    def fetch_all(self, time_from: int, time_to: int, backward: bool = False) -> list[WindowedEntry]:
        return self.inner.fetch_all(time_from, time_to, backward)

    def all(self, backward: bool = False) -> list[WindowedEntry]:
        return self.inner.all(backward)

    def restore_records(self, records: Sequence[cl.ChangelogRecord]) -> None:
        """Restore goes to the store beneath, never logged again (RST-4, WS-25)."""
        self.inner.restore_records(records)

# --- versioned stores -------------------------------------------------------------------------------------------------


class ChangeLoggingVersionedKeyValueBytesStore(ChangeLoggingStore[RocksDBVersionedStore]):
    """Kafka's ``ChangeLoggingVersionedKeyValueBytesStore``: every ``put`` and ``delete`` is logged as the raw value
    at the version's timestamp, even a put refused as expired (VS-18); the headers variant logs the version's
    headers, and a tombstone the context's (VS-26). The record is built first: a write the log refuses changes
    nothing (VS-19)."""

    def _record(self, key: bytes, value: bytes | None, timestamp: int) -> ChangelogRecord:
        """The record the type's changelog fields make of the write, as ``changelog.record_for_write`` (CL-5, VS-26)."""
        key, value, timestamp = check_key(key), check_value(value), check_timestamp(timestamp)
        return cl.versioned_write_record(self.store_type, key, value, timestamp, self.context.codec_context())

    def put(self, key: bytes, value: bytes | None, timestamp: int) -> int:
        record = self._record(key, value, timestamp)
        valid_to = self.inner.put(key, value, timestamp)
        self.sink.append(record)
        return valid_to

    def delete(self, key: bytes, timestamp: int) -> VersionedRecord | None:
        record = self._record(key, None, timestamp)
        previous = self.inner.delete(key, timestamp)
        self.sink.append(record)
        return previous

    def get(self, key: bytes, as_of: int | None = None) -> VersionedRecord | None:
        return self.inner.get(key, as_of)

    def get_versions(self, key: bytes, from_ms: int | None = None, to_ms: int | None = None,
                     order: ResultOrder | str = ResultOrder.ANY) -> list[VersionedRecord]:
        return self.inner.get_versions(key, from_ms, to_ms, order)

    @property
    def observed_stream_time(self) -> int:
        return self.inner.observed_stream_time

    def restore_records(self, records: Sequence[ChangelogRecord]) -> None:
        """Restore reaches the store beneath and is not logged again (VS-16, RST-4)."""
        self.inner.restore_records(records)



__all__ = [
    "ChangeLoggingKeyValueBytesStore",
    "ChangeLoggingStore",
    "ChangeLoggingTimestampedKeyValueBytesStore",
    "ChangeLoggingTimestampedKeyValueBytesStoreWithHeaders",
    "ChangeLoggingVersionedKeyValueBytesStore",
    "ChangeLoggingWindowBytesStore",
    "ChangelogSink",
    "RecordContextHolder",
]
