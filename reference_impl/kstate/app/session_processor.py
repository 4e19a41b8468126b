"""The session family's processor, a session-window aggregation, found by :mod:`kstate.app.processors` by this
module's name.

``windowedBy(SessionWindows.ofInactivityGapAndGrace(gap, grace)).aggregate(...)`` as
``KStreamSessionWindowAggregate``: find the key's sessions overlapping ``[ts - gap, ts + gap]``, merge them with the
record into one session, remove the merged ones (when the merged window differs from ``[ts, ts]``) and put the
merged one.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from kstate.app.processor_base import (
    Headers,
    WindowedAggregation,
    aggregate,
    decode_stored,
    encode_stored,
    option,
    parse_aggregate,
)
from kstate.codecs.store_types import Family, StoreType


class SessionAggregateProcessor(WindowedAggregation):
    """``KStreamSessionWindowAggregate`` with inactivity gap ``inactivity_gap_ms``.

    ``grace_ms`` (default: retention - gap) closes a session at ``end < observed stream time - grace``.
    ``kstate demo`` closes sessions after 100 ms without a record of their key, kept ten minutes.
    """

    FAMILY = Family.SESSION
    OPTIONS = ("inactivity_gap_ms", "grace_ms")
    DEMO_STORE_OPTIONS = MappingProxyType({"retention_ms": 600_000, "segment_interval_ms": 60_000})
    DEMO_PROCESSOR_OPTIONS = MappingProxyType({"inactivity_gap_ms": 100})

    def __init__(self, store: Any, store_type: StoreType, store_options: Mapping[str, Any],
                 options: Mapping[str, int]) -> None:
        super().__init__(store, store_type, store_options, options)
        self.gap = option(options, "inactivity_gap_ms")
        retention = option(store_options, "retention_ms")
        self.grace = option(options, "grace_ms", max(retention - self.gap, 0))

    def aggregate_record(self, key: bytes, value: bytes, timestamp: int, headers: Headers) -> None:
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


PROCESSOR = SessionAggregateProcessor
