"""Mutants of the window store family: the reference window stores and their change-logging layer, each with one
bug a port of Kafka's ``RocksDBWindowStore`` / ``InMemoryWindowStore`` / ``ChangeLoggingWindowBytesStore`` could
plausibly have (spec/window-store.md, WS-*).

Each mutant replaces ``store.open`` only: it builds window stores with a :class:`StoreBuilder` whose bytes store
(a subclass of the reference's, the bug in front) or change-logging layer carries the bug; every other store type
opens as the reference's. The suite's window tests (contract tests, hand-worked cases, the state machine) kill
them.

Not here: a seqnum counter left unmasked (``seqnum + 1`` without ``& 0x7FFFFFFF``). It differs from Kafka only
after 2^31 duplicate puts into one store, and no operation sets the counter, so no bounded test can tell; the
masking itself is checked at the codec (``window.next_seqnum``, WIN-6).
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kstate.codecs import changelog as cl
from kstate.codecs.store_types import WINDOW_TYPES, StoreType
from kstate.ops.store_ops import StoreBuilder, make_open_handler
from kstate.stores.api import Backend
from kstate.stores.factory import open_bytes_store, task_directory
from kstate.stores.families import changelogging_store, store_classes
from kstate.stores.segments import KeyValueSegments, TimestampedSegments
from kstate.stores.window_logging import ChangeLoggingWindowBytesStore
from kstate_conformance.adapter import Handler
from kstate_conformance.mutants import mutant

FAMILY = "window_store"
Mixin = type


def _with(mixin: Mixin, base: type) -> type:
    return type(f"{mixin.__name__}{base.__name__}", (mixin, base), {})


def _opening(mixins: dict[Backend, Mixin | Callable[[type], type]]) -> Callable[..., Any]:
    """``open_bytes_store``, but a window store on a backend of ``mixins`` is the reference's class with the
    mixin in front of it (or the class a function of the reference's class builds)."""

    def mutated(base: type, backend: Backend) -> type:
        change = mixins[backend]
        return _with(change, base) if isinstance(change, type) else change(base)

    def open_store(store_type: StoreType, backend: Backend, *, name: str, state_dir: str | Path | None = None,
                   application_id: str = "app", task_id: str = "0_0", ignore_invalid_state: bool = False,
                   options: dict[str, Any] | None = None, **rest: Any) -> Any:
        store_type, backend = StoreType(store_type), Backend(backend)
        if store_type not in WINDOW_TYPES or backend not in mixins:
            return open_bytes_store(store_type, backend, name=name, state_dir=state_dir, application_id=application_id,
                                    task_id=task_id, ignore_invalid_state=ignore_invalid_state, options=options, **rest)
        classes = store_classes(store_type)
        family_options = classes.check_options(options or {})
        if backend is Backend.MEMORY:
            return mutated(classes.memory, backend)(name, **family_options)
        task_dir = task_directory(state_dir or tempfile.mkdtemp(prefix="kstate-"), application_id, task_id)
        return mutated(classes.rocksdb, backend)(name, task_dir, ignore_invalid_state=ignore_invalid_state,
                                                 **rest, **family_options)

    return open_store


def _open_with(**builder: Any) -> dict[str, Handler]:
    return {"store.open": make_open_handler(StoreBuilder(**builder))}


def _both(mixin: Mixin) -> dict[str, Handler]:
    return _open_with(open_bytes_store=_opening({Backend.ROCKSDB: mixin, Backend.MEMORY: mixin}))


def _rocksdb(mixin: Mixin) -> dict[str, Handler]:
    return _open_with(open_bytes_store=_opening({Backend.ROCKSDB: mixin}))


# --- seqnums (WS-4) ---------------------------------------------------------------------------------------------


class _SeqnumNeverAdvances:
    """The store computes ``seqnum + 1`` for each duplicate but never stores it back: every duplicate gets 1."""

    seqnum: int

    def put(self, key: bytes, value: bytes | None, window_start: int) -> None:
        before = self.seqnum
        super().put(key, value, window_start)  # type: ignore[misc]
        self.seqnum = before


@mutant("window-seqnum-not-incremented", "duplicates all get seqnum 1, so each one replaces the previous",
        FAMILY, rules=("WS-4", "WS-16"))
def _seqnum_not_incremented() -> dict[str, Handler]:
    return _both(_SeqnumNeverAdvances)


class _SeqnumPostIncrement:
    """``seqnum++`` where Kafka has ``++seqnum``: the first duplicate gets 0, the next 1, ..."""

    seqnum: int
    retain_duplicates: bool

    def put(self, key: bytes, value: bytes | None, window_start: int) -> None:
        if self.retain_duplicates and value is not None:
            used = getattr(self, "_post_increment_next", 0)
            self.seqnum = (used - 1) & 0x7FFFFFFF  # the store adds 1 back: the row gets ``used``
            super().put(key, value, window_start)  # type: ignore[misc]
            self._post_increment_next = (used + 1) & 0x7FFFFFFF
            return
        super().put(key, value, window_start)  # type: ignore[misc]


@mutant("window-seqnum-post-increment", "the first duplicate of a store gets seqnum 0 instead of 1", FAMILY,
        rules=("WS-4",))
def _seqnum_post_increment() -> dict[str, Handler]:
    return _rocksdb(_SeqnumPostIncrement)


# --- order (WS-12, WS-13) ----------------------------------------------------------------------------------------


class _KeyBeforeTime:
    """Multi-key scans sorted by key, then window start, across segments (a sorted map of ``(key, start)``),
    not segment by segment."""

    def _scan(self, time_from: int, time_to: int, lower: bytes | None, upper: bytes | None,
              key_from: bytes | None, key_to: bytes | None, forward: bool) -> list[tuple[bytes, int, bytes]]:
        rows = super()._scan(time_from, time_to, lower, upper, key_from, key_to, True)  # type: ignore[misc]
        rows = sorted(rows, key=lambda row: (row[0], row[1]))
        return rows if forward else rows[::-1]


@mutant("window-fetch-key-before-time", "RocksDB key-range fetches, fetchAll and all ordered by key before time, "
        "ignoring segments", FAMILY, rules=("WS-13", "WS-14", "WS-15"))
def _key_before_time() -> dict[str, Handler]:
    return _rocksdb(_KeyBeforeTime)


class _BackwardIsForward:
    """Every backward variant answers the forward order."""

    def fetch_range(self, key: bytes, time_from: int, time_to: int, backward: bool = False) -> Any:
        return super().fetch_range(key, time_from, time_to, False)  # type: ignore[misc]

    def fetch_keys(self, key_from: bytes | None, key_to: bytes | None, time_from: int, time_to: int,
                   backward: bool = False) -> Any:
        return super().fetch_keys(key_from, key_to, time_from, time_to, False)  # type: ignore[misc]

    def fetch_all(self, time_from: int, time_to: int, backward: bool = False) -> Any:
        return super().fetch_all(time_from, time_to, False)  # type: ignore[misc]

    def all(self, backward: bool = False) -> Any:
        return super().all(False)  # type: ignore[misc]


@mutant("window-backward-forward-order", "backwardFetch, backwardFetchAll and backwardAll answer the forward order",
        FAMILY, rules=("WS-12", "WS-18"))
def _backward_is_forward() -> dict[str, Handler]:
    return _both(_BackwardIsForward)


# --- expiry (WS-6, WS-10, WS-11) --------------------------------------------------------------------------------


class _ClampOffByOne:
    """Fetches clamp ``from`` to ``observed - retention`` (Kafka adds 1): the window exactly one retention old is
    still answered."""

    observed_stream_time: int
    retention_period: int

    def _earliest_live(self) -> int:
        return self.observed_stream_time - self.retention_period


@mutant("window-expiry-clamp-off-by-one", "RocksDB fetches clamp from to observed - retention, not observed - "
        "retention + 1", FAMILY, rules=("WS-10", "WS-11", "WS-15"))
def _clamp_off_by_one() -> dict[str, Handler]:
    return _rocksdb(_ClampOffByOne)


class _StreamTimeOfTheLastRecord:
    """Retention measured from the last record's window start, not the largest one observed: a late record moves
    the stream time back and windows it had expired come back."""

    observed_stream_time: int

    def put(self, key: bytes, value: bytes | None, window_start: int) -> None:
        super().put(key, value, window_start)  # type: ignore[misc]
        self.observed_stream_time = window_start


@mutant("window-stream-time-from-last-record", "observed stream time is the last put's window start, not the "
        "largest seen", FAMILY, rules=("WS-6", "WS-17"))
def _stream_time_of_last_record() -> dict[str, Handler]:
    return _both(_StreamTimeOfTheLastRecord)


# --- segments (WS-5, WS-27) -------------------------------------------------------------------------------------


class _NamedById:
    """Segment directories named ``<store>.<segment id>`` instead of ``<store>.<segment start>``."""

    name: str

    def segment_name(self, segment_id_: int) -> str:
        return f"{self.name}.{segment_id_}"


def _segments_named_by_id(base: type) -> type:
    return type(f"NamedById{base.__name__}", (base,), {"SEGMENTS": _with(_NamedById, base.SEGMENTS)})  # type: ignore[attr-defined]


@mutant("window-segment-named-by-id", "segment directories named <store>.<segment id>, not by segment start time",
        FAMILY, rules=("WS-5",))
def _segment_named_by_id() -> dict[str, Handler]:
    return _open_with(open_bytes_store=_opening({Backend.ROCKSDB: _segments_named_by_id}))


class _FirstSegmentPlan(TimestampedSegments):
    """The column-family plan (with its upgrade from ``default``) is given to the first segment opened only; the
    others open with the plain plan and read their legacy rows unconverted."""

    def get_or_create_segment(self, segment_id_: int) -> Any:
        if self._segments and segment_id_ not in self._segments:
            self.LAYOUT = KeyValueSegments.LAYOUT
        return super().get_or_create_segment(segment_id_)


class _UpgradeFirstSegmentOnly:
    SEGMENTS = _FirstSegmentPlan


@mutant("window-upgrade-first-segment-only", "a plain window store reopened as timestamped upgrades its first "
        "segment only", FAMILY, rules=("WS-27",))
def _upgrade_first_segment_only() -> dict[str, Handler]:
    def open_store(store_type: StoreType, backend: Backend, **kwargs: Any) -> Any:
        if StoreType(store_type) is StoreType.TIMESTAMPED_WINDOW:
            return _opening({Backend.ROCKSDB: _UpgradeFirstSegmentOnly})(store_type, backend, **kwargs)
        return open_bytes_store(store_type, backend, **kwargs)

    return _open_with(open_bytes_store=open_store)


# --- the changelog (WS-22) --------------------------------------------------------------------------------------


class _PipeKeyLogging(ChangeLoggingWindowBytesStore):
    """Logs ``WindowKeySchema.toBinary`` (``[key][start]``, the repartition serde) instead of the store key
    ``[key][start][seqnum]``."""

    def _record(self, key: bytes | None, value: bytes | None, window_start: int, seqnum: int) -> cl.ChangelogRecord:
        record = super()._record(key, value, window_start, seqnum)
        return dataclasses.replace(record, key=record.key[:-4])


@mutant("window-changelog-key-without-seqnum", "the changelog key is [key][start] without the logging layer's "
        "seqnum", FAMILY, rules=("WS-22",))
def _changelog_key_without_seqnum() -> dict[str, Handler]:
    def logging_layer(inner: Any, store_type: StoreType, context: Any, sink: Any) -> Any:
        if StoreType(store_type) in WINDOW_TYPES:
            return _PipeKeyLogging(inner, context, sink)
        return changelogging_store(inner, store_type, context, sink)

    return _open_with(logging_layer=logging_layer)


class _NoScanBounds:
    """Key-range fetches scan each segment whole and filter by key: rows outside Kafka's scan bounds are answered."""

    def _scan(self, time_from: int, time_to: int, lower: bytes | None, upper: bytes | None,
              key_from: bytes | None, key_to: bytes | None, forward: bool) -> list[tuple[bytes, int, bytes]]:
        rows: list[tuple[bytes, int, bytes]] = super()._scan(  # type: ignore[misc]
            time_from, time_to, None, None, key_from, key_to, forward)
        return rows


@mutant("window-key-range-without-scan-bounds", "RocksDB key-range fetches filter every row by key instead of "
        "scanning between lowerRange and upperRange", FAMILY, rules=("WS-40",))
def _no_scan_bounds() -> dict[str, Handler]:
    return _rocksdb(_NoScanBounds)
