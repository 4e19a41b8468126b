"""Kafka's ``InMemoryWindowStore`` (spec/window-store.md, WS-16 to WS-20, WS-26, WS-36).

A map window start -> (key -> value); with duplicates the inner key is ``[key][seqnum int32]`` (WS-16).
Expiry is per window start, not per segment: a put at or below ``observed - retention`` is dropped, and every
operation first forgets the windows below ``max(0, observed - retention + 1)`` (WS-17). Scans go window start
first, then key bytes (WS-18). Nothing is persistent and no offsets are managed (WS-36).
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Iterable, Mapping, Sequence

from kstate.codecs.primitives import INT32_MAX, encode_int32
from kstate.codecs.store_types import StoreType
from kstate.errors import NullKeyError
from kstate.stores.api import Backend, TopicPartition
from kstate.stores.life import Op
from kstate.stores.surface import check_changelog_offsets, to_codec_tp
from kstate.stores.window import (
    SCHEMA,
    TimedValue,
    WindowedEntry,
    WindowStoreBase,
)

LOG = logging.getLogger("kstate.stores")
SEQNUM_SIZE = 4


def _wrap_for_dups(key: bytes, seqnum: int) -> bytes:
    """``wrapForDups``: ``[key][seqnum int32]`` (WS-16)."""
    return key + encode_int32(seqnum)


class InMemoryWindowStore(WindowStoreBase):
    """Kafka's ``InMemoryWindowStore`` (WS-16..WS-20); ``segment_interval_ms`` is accepted and unused, as the
    in-memory supplier has no segments (WS-37)."""

    backend = Backend.MEMORY
    store_type = StoreType.WINDOW

    def __init__(
        self,
        name: str,
        *,
        retention_ms: int,
        window_size_ms: int,
        retain_duplicates: bool = False,
        segment_interval_ms: int | None = None,
    ) -> None:
        super().__init__(name, retention_ms, window_size_ms, retain_duplicates, segment_interval_ms)
        self._windows: dict[int, dict[bytes, bytes]] = {}
        self._starts: list[int] = []  # the window starts of ``_windows``, ascending

    def _clamped_from(self, time_from: int, time_to: int) -> int | None:
        """What every ranged read does first: expired windows forgotten, ``from`` clamped to ``T - R + 1``; None
        when ``to`` is below it (WS-17, WS-18)."""
        self._remove_expired()
        min_time = max(time_from, self._earliest_live())
        return None if time_to < min_time else min_time

    # expiry ---------------------------------------------------------------------------------------------------------

    def _remove_expired(self) -> None:
        """``removeExpiredSegments``: forget every window below ``max(0, observed - retention + 1)`` (WS-17)."""
        min_live = max(0, self._earliest_live())
        cut = bisect.bisect_left(self._starts, min_live)
        for start in self._starts[:cut]:
            del self._windows[start]
        del self._starts[:cut]

    # the hooks: the maps ----------------------------------------------------------------------------------------

    def _put(self, key: bytes, value: bytes | None, window_start: int) -> None:
        """``InMemoryWindowStore.put`` (WS-4, WS-9, WS-16, WS-17): expired windows dropped, a null value with
        duplicates ignored, else a null value removes the key's entry of that window."""
        self._remove_expired()
        self.observed_stream_time = max(self.observed_stream_time, window_start)
        if window_start <= self.observed_stream_time - self.retention_period:
            self.dropped_records += 1
            LOG.warning("Skipping record for expired segment.")
        elif value is not None:
            inner_key = _wrap_for_dups(key, self._next_seqnum()) if self.retain_duplicates else key
            window = self._windows.get(window_start)
            if window is None:
                window = self._windows[window_start] = {}
                bisect.insort(self._starts, window_start)
            window[inner_key] = value
        elif not self.retain_duplicates:
            window = self._windows.get(window_start)
            if window is not None:
                window.pop(key, None)
                if not window:
                    del self._windows[window_start]
                    self._starts.remove(window_start)
        self._update_position()

    def _get(self, key: bytes, time: int) -> bytes | None:
        """``fetch(key, time)``: the entry under the plain key, so a store with duplicates answers null (WS-19)."""
        self._remove_expired()
        if time <= self.observed_stream_time - self.retention_period:
            return None
        window = self._windows.get(time)
        return None if window is None else window.get(key)

    def _fetch_key(self, key: bytes, time_from: int, time_to: int, backward: bool) -> list[TimedValue]:
        """``fetch(key, from, to)``: window starts from the clamped ``from`` (WS-11, WS-18)."""
        return [(start, value) for _key, start, value in self._scan(key, key, time_from, time_to, not backward)]

    def _scan(self, key_from: bytes | None, key_to: bytes | None, time_from: int, time_to: int,
              forward: bool) -> list[WindowedEntry]:
        """The windows from the clamped ``from`` to ``to``, window start first, then key (WS-13, WS-14, WS-18)."""
        min_time = self._clamped_from(time_from, time_to)
        if min_time is None:
            return []
        low, high = bisect.bisect_left(self._starts, min_time), bisect.bisect_right(self._starts, time_to)
        return self._entries(self._starts[low:high], key_from, key_to, not forward)

    def _all(self, forward: bool) -> list[WindowedEntry]:
        """``all``/``backwardAll``: every window start above ``observed - retention`` (WS-20)."""
        self._remove_expired()
        first = bisect.bisect_right(self._starts, self.observed_stream_time - self.retention_period)
        return self._entries(self._starts[first:], None, None, not forward)

    def _entries(self, starts: list[int], key_from: bytes | None, key_to: bytes | None,
                 backward: bool) -> list[WindowedEntry]:
        """``InMemoryWindowStoreIteratorWrapper``: per window start, the keys in ``[keyFrom, keyTo]`` (wrapped with
        seqnum 0 and Integer.MAX with duplicates, then unwrapped and checked again) (WS-16, WS-18)."""
        dups = self.retain_duplicates
        lower = key_from if key_from is None or not dups else _wrap_for_dups(key_from, 0)
        upper = key_to if key_to is None or not dups else _wrap_for_dups(key_to, INT32_MAX)
        out: list[WindowedEntry] = []
        for start in (reversed(starts) if backward else starts):
            window = self._windows[start]
            for inner_key in sorted(window, reverse=backward):
                if (lower is not None and inner_key < lower) or (upper is not None and inner_key > upper):
                    continue
                key = inner_key[:-SEQNUM_SIZE] if dups else inner_key
                if dups and ((key_from is not None and key < key_from) or (key_to is not None and key > key_to)):
                    continue
                out.append((key, start, window[inner_key]))
        return out

    def _restore(self, entries: Sequence[tuple[bytes, bytes | None]]) -> None:
        """The restore callback: each changelog key split into key and window start, its seqnum dropped, then
        ``put`` (a fresh local seqnum with duplicates) (WS-26). Keys are checked before anything changes."""
        parsed = []
        for key, value in entries:
            if key is None:
                raise NullKeyError("key cannot be null")
            decoded = SCHEMA.decode(bytes(key))
            parsed.append((decoded.key, value, decoded.timestamp))
        # No record is being processed while restoring: the puts leave the position alone.
        context, self._record_context = self._record_context, None
        try:
            for key, value, start in parsed:
                self.put(key, value, start)
        finally:
            self._record_context = context

    # life-cycle -----------------------------------------------------------------------------------------------------

    def manages_offsets(self) -> bool:
        return False

    def commit(self, changelog_offsets: Mapping[TopicPartition, int | None]) -> None:
        check_changelog_offsets(changelog_offsets)
        self._allow(Op.COMMIT)

    def committed_offset(self, partition: TopicPartition) -> int | None:
        to_codec_tp(partition, "partition")
        self._allow(Op.OFFSETS)
        return None

    def flush(self) -> None:
        self._allow(Op.COMMIT)

    def close(self) -> None:
        """``close``: the data is cleared (WS-36)."""
        self._windows.clear()
        self._starts.clear()
        self._open = False

    def simulate_crash(self) -> None:
        """A killed process loses an in-memory store as a closed one does (WS-36)."""
        self.close()

    def window_starts(self) -> Iterable[int]:
        """The window starts held, ascending (tests)."""
        return tuple(self._starts)


class InMemoryTimestampedWindowStore(InMemoryWindowStore):
    """The in-memory timestamped window store: values held as ``[ts][value]`` (WS-21)."""

    store_type = StoreType.TIMESTAMPED_WINDOW


class InMemoryTimestampedWindowStoreWithHeaders(InMemoryWindowStore):
    """The in-memory header-aware window store: values held as ``[hsize][headers][ts][value]`` (WS-21)."""

    store_type = StoreType.TIMESTAMPED_WINDOW_WITH_HEADERS


__all__ = ["InMemoryTimestampedWindowStore", "InMemoryTimestampedWindowStoreWithHeaders", "InMemoryWindowStore"]
