"""What an application instance does with each input record, chosen by the store's family (a table, not an if-chain).

- key-value: ``table()``: the value in the store type's layout is put, a null value deletes the key.
- versioned: ``table()`` over a versioned store: ``put(key, value, record timestamp)``, the headers variant's
  value with the record's headers; a null value is a tombstone put at the record's timestamp (VER-*: a
  tombstone is a version).
- window: ``groupByKey().windowedBy(TimeWindows.ofSizeAndGrace(size, grace)).aggregate(...)`` as Kafka's
  ``KStreamWindowAggregate`` writes its window store: fetch the window's aggregate, add the record, put it
  back with ``max(old timestamp, record timestamp)``; a record whose window has closed is dropped.
- session: ``windowedBy(SessionWindows.ofInactivityGapAndGrace(gap, grace)).aggregate(...)`` as
  ``KStreamSessionWindowAggregate``: find the key's sessions overlapping ``[ts - gap, ts + gap]``, merge them
  with the record into one session, remove the merged ones (when the merged window differs from
  ``[ts, ts]``) and put the merged one.

The aggregate of both windowed processors is ``b"<count>:<last value>"``: the number of records aggregated
and the value of the last one, so that a test can tell a lost record from a late one. Records with a null value
are skipped by both before anything is read or written: Kafka's processors skip only a null key and hand a null
value to the aggregator, and this application's aggregation ignores it (a choice of the application, not a rule
of the stores).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Protocol

from kstate.codecs.store_types import (
    STORE_TYPES,
    VALUE_DECODERS,
    Family,
    StoredValue,
    StoreType,
    encode_stored_value,
)
from kstate.errors import KStateError

Headers = tuple[tuple[str, bytes | None], ...]
#: ``ConsumerRecord.NO_TIMESTAMP``: a processor's observed stream time before its first record.
NO_TIMESTAMP = -1


class ProcessorConfigError(KStateError, ValueError):
    """A processor option that is unknown, missing or out of range; ``option`` names it."""

    def __init__(self, option: str, message: str) -> None:
        self.option = option
        super().__init__(f"processor option {option!r}: {message}")


# --- stored values ---------------------------------------------------------------------------------------------


def decode_stored(store_type: StoreType, data: bytes) -> StoredValue:
    """``data`` in ``store_type``'s value layout, taken apart."""
    value_format = STORE_TYPES[StoreType(store_type)].value_format
    if value_format is None:
        raise ProcessorConfigError("store_type", f"{StoreType(store_type).value} has no value layout")
    return VALUE_DECODERS[value_format](data)


def encode_stored(store_type: StoreType, value: bytes, timestamp: int, headers: Headers) -> bytes:
    out = encode_stored_value(store_type, value, timestamp, list(headers))
    assert out is not None
    return out


# --- the aggregate ---------------------------------------------------------------------------------------------


def aggregate(count: int, last_value: bytes) -> bytes:
    """The windowed processors' aggregate: ``b"<count>:<last value>"``."""
    return b"%d:" % count + last_value


def parse_aggregate(data: bytes) -> tuple[int, bytes]:
    """``(count, last value)`` of an aggregate."""
    count, _, last = data.partition(b":")
    return int(count), last


# --- processors --------------------------------------------------------------------------------------------------


class Processor(Protocol):
    """Applies one input record to a task's store (the change-logging layer, so every write is logged)."""

    def process(self, key: bytes, value: bytes | None, timestamp: int, headers: Headers) -> None: ...


def _option(options: Mapping[str, int], name: str, default: int | None = None) -> int:
    value = options.get(name, default)
    if value is None:
        raise ProcessorConfigError(name, "required")
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ProcessorConfigError(name, f"expected a non-negative int, got {value!r:.80}")
    return value


def _check_known(options: Mapping[str, Any], known: tuple[str, ...]) -> None:
    for name in options:
        if name not in known:
            raise ProcessorConfigError(name, f"not an option of this processor (accepted: {', '.join(known) or 'none'})")


class _ProcessorBase:
    """A processor's store (the change-logging layer) and store type; its own options checked by name."""

    OPTIONS: tuple[str, ...] = ()

    def __init__(self, store: Any, store_type: StoreType, store_options: Mapping[str, Any],
                 options: Mapping[str, int]) -> None:
        _check_known(options, self.OPTIONS)
        self.store = store
        self.store_type = store_type


class TableProcessor(_ProcessorBase):
    """``table()`` over a key-value store: put the value in the type's layout, delete on a null value."""

    def process(self, key: bytes, value: bytes | None, timestamp: int, headers: Headers) -> None:
        if value is None:
            self.store.delete(key)
        else:
            self.store.put(key, encode_stored(self.store_type, value, timestamp, headers))


class VersionedTableProcessor(_ProcessorBase):
    """``table()`` over a versioned store: every record a version at its timestamp, in the type's value layout
    (the headers variant: the record's headers with the value); a null value a tombstone (INST-22)."""

    def process(self, key: bytes, value: bytes | None, timestamp: int, headers: Headers) -> None:
        self.store.put(key, None if value is None else encode_stored(self.store_type, value, timestamp, headers),
                       timestamp)


class _WindowedAggregation(_ProcessorBase):
    """What both windowed aggregations keep: the processor's own observed stream time (not the store's, and not
    persisted: -1 again after a restart, as in Kafka) and the count of records dropped for a closed window."""

    def __init__(self, store: Any, store_type: StoreType, store_options: Mapping[str, Any],
                 options: Mapping[str, int]) -> None:
        super().__init__(store, store_type, store_options, options)
        self.observed_stream_time = NO_TIMESTAMP
        self.dropped = 0


class WindowAggregateProcessor(_WindowedAggregation):
    """``KStreamWindowAggregate`` over tumbling windows of the store's ``window_size_ms``.

    ``grace_ms`` (default: retention - window size, the most the store's retention allows) closes a window at
    ``window end <= observed stream time - grace``; a record for a closed window is dropped, not written.
    """

    OPTIONS = ("grace_ms",)

    def __init__(self, store: Any, store_type: StoreType, store_options: Mapping[str, Any],
                 options: Mapping[str, int]) -> None:
        super().__init__(store, store_type, store_options, options)
        self.window_size = _option(store_options, "window_size_ms")
        retention = _option(store_options, "retention_ms")
        if self.window_size < 1:
            raise ProcessorConfigError("window_size_ms", "a tumbling window is at least 1 ms long")
        self.grace = _option(options, "grace_ms", retention - self.window_size)
        if self.window_size + self.grace > retention:
            raise ProcessorConfigError("grace_ms", f"window size + grace exceeds the store's retention {retention}")

    def process(self, key: bytes, value: bytes | None, timestamp: int, headers: Headers) -> None:
        if value is None:
            return
        self.observed_stream_time = max(self.observed_stream_time, timestamp)
        window_start = timestamp - timestamp % self.window_size
        if window_start + self.window_size <= self.observed_stream_time - self.grace:
            self.dropped += 1
            return
        old = self.store.fetch(key, window_start)
        count, new_timestamp = 0, timestamp
        if old is not None:
            stored = decode_stored(self.store_type, old)
            count = parse_aggregate(stored.value)[0]
            if stored.timestamp is not None:
                new_timestamp = max(stored.timestamp, timestamp)
        self.store.put(key, encode_stored(self.store_type, aggregate(count + 1, value), new_timestamp, headers),
                       window_start)


class SessionAggregateProcessor(_WindowedAggregation):
    """``KStreamSessionWindowAggregate`` with inactivity gap ``inactivity_gap_ms``.

    ``grace_ms`` (default: retention - gap) closes a session at ``end < observed stream time - grace``.
    """

    OPTIONS = ("inactivity_gap_ms", "grace_ms")

    def __init__(self, store: Any, store_type: StoreType, store_options: Mapping[str, Any],
                 options: Mapping[str, int]) -> None:
        super().__init__(store, store_type, store_options, options)
        self.gap = _option(options, "inactivity_gap_ms")
        retention = _option(store_options, "retention_ms")
        self.grace = _option(options, "grace_ms", max(retention - self.gap, 0))

    def process(self, key: bytes, value: bytes | None, timestamp: int, headers: Headers) -> None:
        if value is None:
            return
        self.observed_stream_time = max(self.observed_stream_time, timestamp)
        close_time = self.observed_stream_time - self.grace
        start = end = timestamp
        count = 0
        with self.store.find_sessions(key, timestamp - self.gap, timestamp + self.gap) as sessions:
            merged = list(sessions)  # read to the end before the store changes
        for session in merged:
            count += parse_aggregate(decode_stored(self.store_type, session.value).value)[0]
            start, end = min(start, session.start), max(end, session.end)
        if end < close_time:
            self.dropped += 1
            return
        if (start, end) != (timestamp, timestamp):
            for session in merged:
                self.store.remove(key, session.start, session.end)
        self.store.put(key, start, end, encode_stored(self.store_type, aggregate(count + 1, value), timestamp, headers))


ProcessorFactory = Callable[[Any, StoreType, Mapping[str, Any], Mapping[str, int]], Processor]

#: The processor of each store family.
PROCESSORS: Mapping[Family, ProcessorFactory] = MappingProxyType({
    Family.KEY_VALUE: TableProcessor,
    Family.VERSIONED: VersionedTableProcessor,
    Family.WINDOW: WindowAggregateProcessor,
    Family.SESSION: SessionAggregateProcessor,
})


def processor_for(store: Any, store_type: StoreType, store_options: Mapping[str, Any],
                  options: Mapping[str, int]) -> Processor:
    """The processor ``store_type``'s family applies to each input record, writing to ``store``."""
    store_type = StoreType(store_type)
    return PROCESSORS[STORE_TYPES[store_type].family](store, store_type, store_options, options)


__all__ = [
    "PROCESSORS",
    "VALUE_DECODERS",
    "Processor",
    "ProcessorConfigError",
    "SessionAggregateProcessor",
    "StoredValue",
    "TableProcessor",
    "VersionedTableProcessor",
    "WindowAggregateProcessor",
    "aggregate",
    "decode_stored",
    "parse_aggregate",
    "processor_for",
]
