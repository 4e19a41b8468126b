"""The window family's processor, a tumbling-window aggregation, found by :mod:`kstate.app.processors` by this
module's name.

``groupByKey().windowedBy(TimeWindows.ofSizeAndGrace(size, grace)).aggregate(...)`` as Kafka's
``KStreamWindowAggregate`` writes its window store: fetch the window's aggregate, add the record, put it back with
``max(old timestamp, record timestamp)``; a record whose window has closed is dropped.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from kstate.app.processor_base import (
    Headers,
    ProcessorConfigError,
    WindowedAggregation,
    aggregate,
    decode_stored,
    encode_stored,
    option,
    parse_aggregate,
)
from kstate.codecs.store_types import Family, StoreType


class WindowAggregateProcessor(WindowedAggregation):
    """``KStreamWindowAggregate`` over tumbling windows of the store's ``window_size_ms``.

    ``grace_ms`` (default: retention - window size, the most the store's retention allows) closes a window at
    ``window end <= observed stream time - grace``; a record for a closed window is dropped, not written.
    ``kstate demo`` runs windows of a second kept ten minutes.
    """

    FAMILY = Family.WINDOW
    OPTIONS = ("grace_ms",)
    DEMO_STORE_OPTIONS = MappingProxyType({"retention_ms": 600_000, "window_size_ms": 1_000, "segment_interval_ms": 60_000})

    def __init__(self, store: Any, store_type: StoreType, store_options: Mapping[str, Any],
                 options: Mapping[str, int]) -> None:
        super().__init__(store, store_type, store_options, options)
        self.window_size = option(store_options, "window_size_ms")
        retention = option(store_options, "retention_ms")
        if self.window_size < 1:
            raise ProcessorConfigError("window_size_ms", "a tumbling window is at least 1 ms long")
        self.grace = option(options, "grace_ms", retention - self.window_size)
        if self.window_size + self.grace > retention:
            raise ProcessorConfigError("grace_ms", f"window size + grace exceeds the store's retention {retention}")

    def aggregate_record(self, key: bytes, value: bytes, timestamp: int, headers: Headers) -> None:
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


PROCESSOR = WindowAggregateProcessor
