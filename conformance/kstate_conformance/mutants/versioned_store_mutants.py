"""Mutants of the versioned stores (VER-22..VER-34, the changelog of a versioned store): each a porting mistake of
Kafka's ``RocksDBVersionedStore`` that a plausible port could make.

Each replaces ``store.open`` only: its builder opens the reference's versioned store classes with one mistake mixed
in front (the RocksDB and the in-memory store alike, so the in-memory store cannot hide it), or wraps the
change-logging layer. Their tests are the versioned conformance tests (``test_versioned_store_contract``,
``test_versioned_state_machine``) and the hand-worked ``fixtures/spec/versioned_store.json`` cases.
"""

from __future__ import annotations

import contextlib
import struct
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from kstate.codecs import versioned as v
from kstate.codecs.changelog import ChangelogRecord
from kstate.codecs.primitives import INT64_MIN, segment_id
from kstate.codecs.store_types import StoreType
from kstate.ops.store_ops import DEFAULT_BUILDER, StoreBuilder, make_open_handler
from kstate.stores.api import Backend, StateStore
from kstate.stores.changelogging import ChangelogSink, RecordContextHolder
from kstate.stores.factory import open_bytes_store, task_directory
from kstate.stores.families import store_classes
from kstate.stores.versioned import ChangeLoggingVersionedKeyValueBytesStore, RocksDBVersionedStore, _KeyRows
from kstate_conformance.adapter import Handler
from kstate_conformance.mutants import mutant
from kstate_conformance.mutants.versioned_mutants import _reorder_values

FAMILY = "versioned_store"
VERSIONED_TYPES = (StoreType.VERSIONED_KV, StoreType.VERSIONED_KV_WITH_HEADERS)


def _open_with(builder: StoreBuilder) -> dict[str, Handler]:
    return {"store.open": make_open_handler(builder)}


def _with_mixin(mixin: type) -> dict[str, Handler]:
    """``store.open`` whose versioned stores (both types, both backends) have ``mixin`` in front of their class."""
    classes = {(t, b): type(f"{mixin.__name__}{base.__name__}", (mixin, base), {})
               for t in VERSIONED_TYPES
               for b, base in ((Backend.ROCKSDB, store_classes(t).rocksdb), (Backend.MEMORY, store_classes(t).memory))}

    def open_store(store_type: StoreType, backend: Backend, *, name: str, state_dir: str | Path | None = None,
                   application_id: str = "app", task_id: str = "0_0", ignore_invalid_state: bool = False,
                   options: Mapping[str, Any] | None = None, **rest: Any) -> StateStore:
        cls = classes.get((StoreType(store_type), Backend(backend)))
        if cls is None:
            return open_bytes_store(store_type, backend, name=name, state_dir=state_dir, application_id=application_id,
                                    task_id=task_id, ignore_invalid_state=ignore_invalid_state, options=options, **rest)
        family_options = store_classes(StoreType(store_type)).check_options(options or {})
        if Backend(backend) is Backend.MEMORY:
            return cls(name, **family_options)  # type: ignore[no-any-return]
        task_dir = task_directory(state_dir or tempfile.mkdtemp(prefix="kstate-"), application_id, task_id)
        return cls(name, task_dir, ignore_invalid_state=ignore_invalid_state, **family_options)  # type: ignore[no-any-return]

    return _open_with(replace(DEFAULT_BUILDER, open_bytes_store=open_store))


def _with_key_versions(key_versions: type[v.KeyVersions]) -> dict[str, Handler]:
    """Versioned stores whose per-key procedure is ``key_versions`` (a broken ``KeyVersions``)."""

    class BrokenProcedure(RocksDBVersionedStore):
        def _put_in_order(self, key: bytes, value: bytes, timestamp: int) -> bool:
            return False  # every put through the broken procedure (the fast path writes the same rows)

        def _key_versions(self, key: bytes, stream_time: int) -> v.KeyVersions:
            honest = super()._key_versions(key, stream_time)
            return key_versions(honest.config, honest.observed_stream_time, honest.latest, honest.segments)

    return _with_mixin(BrokenProcedure)


def _with_row_rewrite(rewrite: Callable[[bytes], bytes]) -> dict[str, Handler]:
    """Versioned stores that pass every segment row they write through ``rewrite`` (a broken row writer)."""

    class RewrittenRows(_KeyRows):
        def __setitem__(self, sid: int, row: bytes) -> None:
            super().__setitem__(sid, rewrite(row))

    class BrokenRows(RocksDBVersionedStore):
        def _put_in_order(self, key: bytes, value: bytes, timestamp: int) -> bool:
            return False  # every row through the broken writer (the fast path writes the same rows)

        def _key_versions(self, key: bytes, stream_time: int) -> v.KeyVersions:
            honest = super()._key_versions(key, stream_time)
            return v.KeyVersions(honest.config, honest.observed_stream_time, honest.latest,
                                 RewrittenRows(self.segments, key))

    return _with_mixin(BrokenRows)


@mutant("versioned-store-filed-by-valid-from", "a version moved out of the latest-value store (or split off) goes to "
        "the segment of its validFrom instead of its validTo", FAMILY, rules=("VER-22", "VER-28"))
def _filed_by_valid_from() -> dict[str, Handler]:
    class ByValidFrom(v.KeyVersions):
        def _insert_as_latest(self, sid: int, valid_from: int, valid_to: int, value: bytes | None) -> None:
            by_valid_from = segment_id(valid_from, self.config.segment_interval)
            super()._insert_as_latest(max(by_valid_from, self._min_live_segment()), valid_from, valid_to, value)

    return _with_key_versions(ByValidFrom)


@mutant("versioned-store-grace-off-by-one", "a put or delete exactly at observed stream time minus the grace period "
        "is refused as expired (<= instead of <)", FAMILY, rules=("VER-26", "VER-33"))
def _grace_off_by_one() -> dict[str, Handler]:
    class GraceOffByOne(RocksDBVersionedStore):
        def put(self, key: bytes, value: bytes | None, timestamp: int) -> int:
            if timestamp == self.observed_stream_time - self.config.grace_period:
                return v.PUT_RETURN_CODE_NOT_PUT
            return super().put(key, value, timestamp)

        def delete(self, key: bytes, timestamp: int) -> Any:
            if timestamp == self.observed_stream_time - self.config.grace_period:
                return None
            return super().delete(key, timestamp)

    return _with_mixin(GraceOffByOne)


@mutant("versioned-store-expiry-off-by-one", "expired-segment cleanup also drops the first live segment (segment ids "
        "<= segmentId(streamTime - retention) instead of <)", FAMILY, rules=("VER-30",))
def _expiry_off_by_one() -> dict[str, Handler]:
    class ExpiryOffByOne(RocksDBVersionedStore):
        def _cleanup(self, stream_time: int) -> None:
            self.segments.cleanup_expired_segments(stream_time + self.segment_interval)

    return _with_mixin(ExpiryOffByOne)


def _tombstone_sizes_zero(row: bytes) -> bytes:
    """The row with every index entry's value size -1 (tombstone) written as 0 (an empty value)."""
    minimum = struct.unpack_from(">q", row, 8)[0]
    out = bytearray(row)
    position = 16
    while position + 12 <= len(row):
        valid_from, size = struct.unpack_from(">qi", row, position)
        if size == -1:
            struct.pack_into(">i", out, position + 8, 0)
        position += 12
        if valid_from == minimum:
            break
    return bytes(out)


@mutant("versioned-store-tombstone-as-empty", "segment rows store a tombstone as an empty value (size 0 instead of "
        "-1), so it reads back as a version with an empty value", FAMILY, rules=("VER-8", "VER-32"))
def _tombstone_as_empty() -> dict[str, Handler]:
    return _with_row_rewrite(_tombstone_sizes_zero)


@mutant("versioned-store-values-newest-first", "segment rows are written with the values region newest first (the "
        "index's order) instead of oldest first", FAMILY, rules=("VER-6",))
def _values_newest_first() -> dict[str, Handler]:
    return _with_row_rewrite(lambda row: _reorder_values(row, newest_first=True))


@mutant("versioned-store-per-key-stream-time", "the observed stream time is kept per key instead of store-wide: a "
        "put is judged expired, and segments expire, by its own key's history only", FAMILY, rules=("VER-25", "VER-26"))
def _per_key_stream_time() -> dict[str, Handler]:
    class PerKeyStreamTime(RocksDBVersionedStore):
        @contextlib.contextmanager
        def _key_time(self, key: bytes) -> Iterator[None]:
            times: dict[bytes, int] = self.__dict__.setdefault("_per_key_time", {})
            store_wide = self.observed_stream_time
            self.observed_stream_time = times.get(key, v.NO_TIMESTAMP)
            try:
                yield
            finally:
                times[key] = self.observed_stream_time
                self.observed_stream_time = max(store_wide, self.observed_stream_time)

        def put(self, key: bytes, value: bytes | None, timestamp: int) -> int:
            with self._key_time(key):
                return super().put(key, value, timestamp)

        def delete(self, key: bytes, timestamp: int) -> Any:
            with self._key_time(key):
                return super().delete(key, timestamp)

        def get(self, key: bytes, as_of: int | None = None) -> Any:
            with self._key_time(key):
                return super().get(key, as_of)

    return _with_mixin(PerKeyStreamTime)


@mutant("versioned-store-sentinel-returned", "a put that becomes the latest version through the fall-through path "
        "(no latest value yet) returns the internal sentinel Long.MIN_VALUE instead of -1", FAMILY, rules=("VER-27",))
def _sentinel_returned() -> dict[str, Handler]:
    class SentinelReturned(v.KeyVersions):
        def _do_put(self, value: bytes | None, timestamp: int) -> int:
            min_live = self._min_live_segment()
            for sid in [s for s in self.segments if s < min_live]:
                del self.segments[sid]
            complete, found = self._put_to_latest(value, timestamp)
            if not complete:
                complete, found = self._put_to_segments(value, timestamp, found)
            if not complete:
                return self._finish_put(value, timestamp, found)  # the sentinel is not turned into -1
            return v.PUT_RETURN_CODE_VALID_TO_UNDEFINED if found == INT64_MIN else found

    return _with_key_versions(SentinelReturned)


@mutant("versioned-store-versions-from-inclusive", "the versions query also returns a version whose validTo equals "
        "the lower bound (validTo >= from instead of >)", FAMILY, rules=("VER-12",))
def _versions_from_inclusive() -> dict[str, Handler]:
    class FromInclusive(RocksDBVersionedStore):
        def get_versions(self, key: bytes, from_ms: int | None = None, to_ms: int | None = None,
                         order: Any = "any") -> Any:
            lower = from_ms - 1 if from_ms is not None and from_ms > INT64_MIN else from_ms
            return super().get_versions(key, lower, to_ms, order)

    return _with_mixin(FromInclusive)


@mutant("versioned-store-restore-per-record-stream-time", "restore puts each record with the stream time reached so "
        "far instead of the end-of-batch stream time, so versions the batch expires are written", FAMILY,
        rules=("VER-25", "VER-30"))
def _restore_per_record() -> dict[str, Handler]:
    class PerRecordRestore(RocksDBVersionedStore):
        def restore_records(self, records: Sequence[ChangelogRecord]) -> None:
            for record in records:
                super().restore_records([record])

    return _with_mixin(PerRecordRestore)


@mutant("versioned-store-restore-skips-by-end-of-batch", "restore skips every record older than the grace period "
        "at the END of its batch, instead of at the stream time reached so far", FAMILY, rules=("VER-25",))
def _restore_skips_by_end_of_batch() -> dict[str, Handler]:
    class SkipsByEndOfBatch(RocksDBVersionedStore):
        def restore_records(self, records: Sequence[ChangelogRecord]) -> None:
            self.observed_stream_time = max([self.observed_stream_time, *(r.timestamp for r in records)])
            super().restore_records(records)

    return _with_mixin(SkipsByEndOfBatch)


@mutant("versioned-store-tombstone-at-latest-recorded", "a tombstone at exactly the latest version's timestamp is also "
        "recorded in its segment (a 'fix' of Kafka), so a later older put is no longer the latest", FAMILY,
        rules=("VER-34",))
def _tombstone_at_latest_recorded() -> dict[str, Handler]:
    class RecordsIt(v.KeyVersions):
        def _put_to_latest(self, value: bytes | None, timestamp: int) -> tuple[bool, int]:
            at_latest = (value is None and self.latest is not None
                         and v.decode_latest_value(self.latest)[1] == timestamp)
            complete, found = super()._put_to_latest(value, timestamp)
            if at_latest:
                self._finish_put(None, timestamp, INT64_MIN)
            return complete, found

    return _with_key_versions(RecordsIt)


@mutant("versioned-store-get-ignores-retention", "get(key, asOf) beyond history retention still reads the segments "
        "instead of answering only the latest version", FAMILY, rules=("VER-32",))
def _get_ignores_retention() -> dict[str, Handler]:
    class IgnoresRetention(RocksDBVersionedStore):
        def get(self, key: bytes, as_of: int | None = None) -> Any:
            if as_of is None:
                return super().get(key)
            observed, self.observed_stream_time = self.observed_stream_time, v.NO_TIMESTAMP
            try:
                return super().get(key, as_of)
            finally:
                self.observed_stream_time = observed

    return _with_mixin(IgnoresRetention)


@mutant("versioned-store-expired-writes-not-logged", "the change-logging layer logs a put or delete only when the "
        "store applied it, not unconditionally as Kafka does", FAMILY, rules=("VER-26", "VER-33"))
def _expired_writes_not_logged() -> dict[str, Handler]:
    class LogsAppliedOnly(ChangeLoggingVersionedKeyValueBytesStore):
        def _expired(self, timestamp: int) -> bool:
            inner = self.inner
            return timestamp < inner.observed_stream_time - inner.config.grace_period

        def put(self, key: bytes, value: bytes | None, timestamp: int) -> int:
            if self._expired(timestamp):
                return self.inner.put(key, value, timestamp)
            return super().put(key, value, timestamp)

        def delete(self, key: bytes, timestamp: int) -> Any:
            if self._expired(timestamp):
                return self.inner.delete(key, timestamp)
            return super().delete(key, timestamp)

    honest = DEFAULT_BUILDER.logging_layer

    def layer(inner: Any, store_type: StoreType, context: RecordContextHolder, sink: ChangelogSink) -> Any:
        if isinstance(inner, RocksDBVersionedStore):
            return LogsAppliedOnly(inner, context, sink)
        return honest(inner, store_type, context, sink)

    return _open_with(replace(DEFAULT_BUILDER, logging_layer=layer))
