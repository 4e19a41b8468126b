"""Mutants of the KIP-889 versioned family, each a bug a port of Kafka's versioned store could plausibly have: of its
segment rows; of its stores (VER-22..VER-34, spec/versioned-store.md VS-*, the changelog of a versioned store), a
porting mistake of Kafka's ``RocksDBVersionedStore``; and its paired mutants (``paired_mutants``).

Most store mutants replace ``store.open`` only: its builder opens the reference's versioned store classes with one
mistake mixed in front (the RocksDB and the in-memory store alike, so the in-memory store cannot hide it), or wraps
the change-logging layer; a few wrap one operation's answer (the vocabulary, VS-21, VS-24, VS-39). Their tests are
the versioned conformance tests (``test_versioned_store_contract``, ``test_versioned_state_machine``) and the
hand-worked ``fixtures/spec/versioned_store.json`` cases.
"""

from __future__ import annotations

import contextlib
import struct
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

from kstate.codecs import versioned as v
from kstate.codecs.changelog import ChangelogRecord
from kstate.codecs.primitives import INT64_MAX, INT64_MIN, encode_int64, segment_id
from kstate.codecs.store_types import StoreType
from kstate.ops import JsonDict, call, tohex, unhex
from kstate.ops.store_ops import DEFAULT_BUILDER, StoreBuilder, handle_for, key_from, make_open_handler
from kstate.ops.versioned_ops import replay_key_scenario, replay_segment_steps
from kstate.stores.api import Backend, StateStore, TopicPartition
from kstate.stores.changelogging import ChangeLoggingVersionedKeyValueBytesStore, ChangelogSink, RecordContextHolder
from kstate.stores.factory import open_bytes_store, task_directory
from kstate.stores.families import store_classes
from kstate.stores.surface import DEFAULT_ROCKSDB_OPTIONS, RocksDBOptions
from kstate.stores.versioned import (
    InMemoryVersionedStore,
    ResultOrder,
    RocksDBVersionedStore,
    _KeyRows,
)
from kstate_conformance.adapter import Handler
from kstate_conformance.mutants import altered, mutant, registering
from kstate_conformance.mutants.paired_mutants import changed_answer, paired_mutant

SEGMENT_OP = "versioned.segment_scenario"
VERSIONS_OP = "versioned.segment_versions"


def _segment_ops(segment_class: type[v.SegmentValue]) -> dict[str, Handler]:
    """The row operations of the reference, run on a broken ``SegmentValue`` subclass."""

    def scenario(payload: JsonDict) -> JsonDict:
        return {"steps": replay_segment_steps(payload["steps"], segment_class)}

    def versions(payload: JsonDict) -> JsonDict:
        row = segment_class.deserialize(bytes.fromhex(payload["bytes"]))
        return {"next_timestamp": row.next_timestamp, "min_timestamp": row.min_timestamp,
                "versions": [{"index": r.index, "valid_from": r.valid_from, "valid_to": r.valid_to,
                              "value": tohex(r.value)} for r in row.versions()]}

    return {SEGMENT_OP: scenario, VERSIONS_OP: versions}


@mutant("versioned-tombstone-size-zero", "segment rows write a tombstone with value_size 0, so it reads back as an "
        "empty value", "versioned", rules=("VER-8",))
def _tombstone_size_zero() -> dict[str, Handler]:
    class EmptyTombstones(v.SegmentValue):
        @staticmethod
        def stored_value(value: bytes | None) -> tuple[bytes, int]:
            return (b"", 0) if value is None else (bytes(value), len(value))

    return _segment_ops(EmptyTombstones)


@mutant("versioned-no-gap-tombstone", "insertAsLatest past next_timestamp stretches the newest version over the gap "
        "instead of inserting a tombstone", "versioned", rules=("VER-15",))
def _no_gap_tombstone() -> dict[str, Handler]:
    class NoGapTombstone(v.SegmentValue):
        def insert_as_latest(self, valid_from: int, valid_to: int, value: bytes | None) -> None:
            if valid_from > self._next and not self._degenerate:
                self._next = valid_from
                self._row = struct.pack(">q", valid_from) + self._row[8:]
            super().insert_as_latest(valid_from, valid_to, value)

    return _segment_ops(NoGapTombstone)


@mutant("versioned-valid-to-from-older-neighbour", "a version's validTo is taken from the next entry in the index "
        "(the older version) instead of the previous one", "versioned", rules=("VER-7",))
def _valid_to_from_older_neighbour() -> dict[str, Handler]:
    def corrected(row: v.SegmentValue, result: v.SegmentSearchResult) -> v.SegmentSearchResult:
        everything = v.SegmentValue.versions(row)
        older = result.index + 1
        valid_to = everything[older].valid_from if older < len(everything) else row.next_timestamp
        return v.SegmentSearchResult(result.index, result.valid_from, valid_to, result.value)

    class OlderNeighbour(v.SegmentValue):
        def find(self, timestamp: int, include_value: bool) -> v.SegmentSearchResult:
            return corrected(self, super().find(timestamp, include_value))

        def find_all(self, from_time: int, to_time: int) -> list[v.SegmentSearchResult]:
            return [corrected(self, r) for r in super().find_all(from_time, to_time)]

        def versions(self) -> list[v.SegmentSearchResult]:
            return [corrected(self, r) for r in super().versions()]

    return _segment_ops(OlderNeighbour)


def _reorder_values(row: bytes, newest_first: bool) -> bytes:
    """Rewrite the values region oldest-first to newest-first (or back), keeping the index."""
    sizes = [max(r.value_size, 0) for r in _entries(row)]
    chunks: list[bytes] = []
    position = len(row) - sum(sizes)
    region_start = position
    order = sizes if not newest_first else list(reversed(sizes))  # as stored now, first chunk first
    for size in order:
        chunks.append(row[position:position + size])
        position += size
    return row[:region_start] + b"".join(reversed(chunks))


class _Entry:
    def __init__(self, valid_from: int, value_size: int) -> None:
        self.valid_from = valid_from
        self.value_size = value_size


def _entries(row: bytes) -> list[_Entry]:
    out: list[_Entry] = []
    if len(row) < 16:
        return out
    minimum = struct.unpack_from(">q", row, 8)[0]
    position = 16
    while position + 12 <= len(row):
        valid_from, size = struct.unpack_from(">qi", row, position)
        out.append(_Entry(valid_from, size))
        position += 12
        if valid_from == minimum:
            break
    return out


@mutant("versioned-values-newest-first", "segment rows store the values region newest first (reading it back the "
        "same way)", "versioned", rules=("VER-6",))
def _values_newest_first() -> dict[str, Handler]:
    class NewestFirstValues(v.SegmentValue):
        @classmethod
        def deserialize(cls, row: bytes) -> v.SegmentValue:
            return cls(_reorder_values(row, newest_first=True))

        def serialize(self) -> bytes:
            return _reorder_values(super().serialize(), newest_first=False)

    return _segment_ops(NewestFirstValues)


@mutant("versioned-latest-segment-zero", "the latest-value store uses the segment prefix 0 instead of the reserved "
        "-1", "versioned", rules=("VER-2",))
def _latest_segment_zero() -> dict[str, Handler]:
    class LatestAtZero(v.KeyVersions):
        def physical_rows(self, key: bytes) -> list[tuple[bytes, bytes]]:
            rows = [(v.segment_key(sid, key), row) for sid, row in self.segments.items()]
            if self.latest is not None:
                rows.append((v.segment_key(0, key), self.latest))
            return sorted(rows)

    def segment_key(payload: JsonDict) -> JsonDict:
        sid = payload["segment_id"]
        return {"bytes": tohex(v.segment_key(0 if sid == -1 else sid, unhex(payload["key"]) or b""))}

    return {"versioned.key_scenario": lambda payload: replay_key_scenario(payload, LatestAtZero),
            "versioned.segment_key": segment_key}


@mutant("versioned-grace-inclusive", "a put or delete exactly at observedStreamTime - gracePeriod is rejected as "
        "expired", "versioned", rules=("VER-26",))
def _grace_inclusive() -> dict[str, Handler]:
    class InclusiveGrace(v.KeyVersions):
        def put(self, value: bytes | None, timestamp: int) -> int:
            if timestamp <= self.observed_stream_time - self.config.grace_period:
                return v.PUT_RETURN_CODE_NOT_PUT
            return super().put(value, timestamp)

        def delete(self, timestamp: int) -> v.VersionedRecord | None:
            if timestamp <= self.observed_stream_time - self.config.grace_period:
                return None
            return super().delete(timestamp)

    return {"versioned.key_scenario": lambda payload: replay_key_scenario(payload, InclusiveGrace)}


@mutant("versioned-latest-tombstone-accepted", "the latest-value row of a tombstone is written as the bare "
        "timestamp, like an empty value", "versioned", rules=("VER-3",))
def _latest_tombstone_accepted() -> dict[str, Handler]:
    def latest_from(payload: JsonDict) -> JsonDict:
        return {"bytes": (struct.pack(">q", payload["timestamp"]) + (unhex(payload["value"]) or b"")).hex()}

    return {"versioned.latest_from": latest_from}


# --- its stores ----------------------------------------------------------------------------------------------------
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
        return cls(name, task_dir, options=RocksDBOptions(ignore_invalid_state=ignore_invalid_state, **rest),  # type: ignore[no-any-return]
                   **family_options)

    return _open_with(replace(DEFAULT_BUILDER, open_bytes_store=open_store))


def _with_key_versions(key_versions: type[v.KeyVersions]) -> dict[str, Handler]:
    """Versioned stores whose per-key procedure is ``key_versions`` (a broken ``KeyVersions``)."""

    class BrokenProcedure(RocksDBVersionedStore):
        def _put_in_order(self, key: bytes, value: bytes, timestamp: int) -> bool:
            return False  # every put through the broken procedure (the fast path writes the same rows)

        def _get_as_of(self, key: bytes, as_of: int) -> Any:
            return self._codec_get_as_of(key, as_of)  # every get as of through it (the in-place read answers alike)

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


def _logging_layer_with(logging_class: type[ChangeLoggingVersionedKeyValueBytesStore]) -> dict[str, Handler]:
    """``store.open`` whose versioned stores get ``logging_class`` as their change-logging layer."""
    honest = DEFAULT_BUILDER.logging_layer

    def layer(inner: Any, store_type: StoreType, context: RecordContextHolder, sink: ChangelogSink) -> Any:
        if isinstance(inner, RocksDBVersionedStore):
            return logging_class(inner, store_type, context, sink)
        return honest(inner, store_type, context, sink)

    return _open_with(replace(DEFAULT_BUILDER, logging_layer=layer))


#: The decorated mixin in front of the versioned store classes (both types, both backends), or the decorated
#: change-logging layer of the versioned stores.
_mixin_mutant = registering(FAMILY, _with_mixin)
_logging_mutant = registering(FAMILY, _logging_layer_with)


class _DivertedWrites:
    """A mixin of a versioned store or its change-logging layer: a put or delete whose timestamp :meth:`_diverts`
    does what ``_put_instead`` / ``_delete_instead`` do; every other write is the class's own."""

    def _diverts(self, timestamp: int) -> bool:
        raise NotImplementedError

    def _put_instead(self, key: bytes, value: bytes | None, timestamp: int) -> int:
        raise NotImplementedError

    def _delete_instead(self, key: bytes, timestamp: int) -> Any:
        raise NotImplementedError

    def put(self, key: bytes, value: bytes | None, timestamp: int) -> int:
        if self._diverts(timestamp):
            return self._put_instead(key, value, timestamp)
        return super().put(key, value, timestamp)  # type: ignore[misc,no-any-return]

    def delete(self, key: bytes, timestamp: int) -> Any:
        if self._diverts(timestamp):
            return self._delete_instead(key, timestamp)
        return super().delete(key, timestamp)  # type: ignore[misc]


@contextlib.contextmanager
def _patched(owner: Any, attribute: str, replacement: Any) -> Iterator[None]:
    original = getattr(owner, attribute)
    setattr(owner, attribute, replacement)
    try:
        yield
    finally:
        setattr(owner, attribute, original)


def _opening_patched(owner: Any, attribute: str, replacement: Any) -> dict[str, Handler]:
    """``store.open`` run with ``owner.attribute`` replaced: how the versioned store's one database opens."""

    def handler(payload: JsonDict) -> JsonDict:
        with _patched(owner, attribute, replacement):
            return call("store.open", payload)

    return {"store.open": handler}


def _scan_skipping_short_rows(first_key_in: Callable[[bytes, bytes], bytes | None], store: str) -> list[int]:
    """Segment discovery that steps over a key too short to hold a segment id instead of refusing it."""
    found: list[int] = []
    lower = encode_int64(0)
    upper = b"\x80" + bytes(7)
    while (key := first_key_in(lower, upper)) is not None:
        if len(key) < 8:
            lower = key + b"\x00"
            continue
        found.append(int.from_bytes(key[:8], "big", signed=True))
        lower = encode_int64(found[-1] + 1)
    return found


@mutant("versioned-store-short-row-skipped", "a row whose key is shorter than the 8-byte segment id is stepped over "
        "when the store opens, not refused as corrupt", FAMILY, rules=("VS-1",))
def _short_row_skipped() -> dict[str, Handler]:
    from kstate.stores import segments

    return _opening_patched(segments, "scan_segment_ids", _scan_skipping_short_rows)


@mutant("versioned-store-short-row-refused-after-open", "a row shorter than a segment id is refused only once the "
        "database is open for writing: the refused open has written status OPEN and new RocksDB files",
        FAMILY, rules=("VS-1", "KV-23"))
def _short_row_refused_after_open() -> dict[str, Handler]:
    from kstate.stores import segments
    from kstate.stores.rocksdb_instance import RocksDBInstance

    return _opening_patched(segments._LogicalSegmentsDatabase, "_refuse_unopenable",
                            RocksDBInstance._refuse_unopenable)


@mutant("versioned-store-filed-by-valid-from", "a version moved out of the latest-value store (or split off) goes to "
        "the segment of its validFrom instead of its validTo", FAMILY, rules=("VER-22", "VER-28", "VS-3"))
def _filed_by_valid_from() -> dict[str, Handler]:
    class ByValidFrom(v.KeyVersions):
        def _insert_as_latest(self, sid: int, valid_from: int, valid_to: int, value: bytes | None) -> None:
            by_valid_from = segment_id(valid_from, self.config.segment_interval)
            super()._insert_as_latest(max(by_valid_from, self._min_live_segment()), valid_from, valid_to, value)

    return _with_key_versions(ByValidFrom)


@_mixin_mutant("versioned-store-grace-off-by-one", "a put or delete exactly at observed stream time minus the grace "
               "period is refused as expired (<= instead of <)", rules=("VER-26", "VER-33", "VS-6"))
class GraceOffByOne(_DivertedWrites, RocksDBVersionedStore):
    def _diverts(self, timestamp: int) -> bool:
        return timestamp == self.observed_stream_time - self.config.grace_period

    def _put_instead(self, key: bytes, value: bytes | None, timestamp: int) -> int:
        return v.PUT_RETURN_CODE_NOT_PUT

    def _delete_instead(self, key: bytes, timestamp: int) -> Any:
        return None


@_mixin_mutant("versioned-store-expiry-off-by-one", "expired-segment cleanup also drops the first live segment "
               "(segment ids <= segmentId(streamTime - retention) instead of <)", rules=("VER-30", "VS-13"))
class ExpiryOffByOne(RocksDBVersionedStore):
    def _cleanup(self, stream_time: int) -> None:
        self.segments.cleanup_expired_segments(stream_time + self.segment_interval)


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
        "-1), so it reads back as a version with an empty value", FAMILY, rules=("VER-8", "VER-32", "VS-3", "VS-9", "VS-22"))
def _tombstone_as_empty() -> dict[str, Handler]:
    return _with_row_rewrite(_tombstone_sizes_zero)


@mutant("versioned-store-values-newest-first", "segment rows are written with the values region newest first (the "
        "index's order) instead of oldest first", FAMILY, rules=("VER-6", "VS-3"))
def _store_values_newest_first() -> dict[str, Handler]:
    return _with_row_rewrite(lambda row: _reorder_values(row, newest_first=True))


@_mixin_mutant("versioned-store-per-key-stream-time", "the observed stream time is kept per key instead of "
               "store-wide: a put is judged expired, and segments expire, by its own key's history only",
               rules=("VER-25", "VER-26", "VS-5"))
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


@mutant("versioned-store-sentinel-returned", "a put that becomes the latest version through the fall-through path "
        "(no latest value yet) returns the internal sentinel Long.MIN_VALUE instead of -1", FAMILY, rules=("VER-27", "VS-7"))
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


@_mixin_mutant("versioned-store-versions-from-inclusive", "the versions query also returns a version whose validTo "
               "equals the lower bound (validTo >= from instead of >)", rules=("VER-12", "VS-11"))
class FromInclusive(RocksDBVersionedStore):
    def get_versions(self, key: bytes, from_ms: int | None = None, to_ms: int | None = None,
                     order: Any = "any") -> Any:
        lower = from_ms - 1 if from_ms is not None and from_ms > INT64_MIN else from_ms
        return super().get_versions(key, lower, to_ms, order)


@_mixin_mutant("versioned-store-restore-per-record-stream-time", "restore puts each record with the stream time "
               "reached so far instead of the end-of-batch stream time, so versions the batch expires are written",
               rules=("VER-25", "VER-30", "VS-15"))
class PerRecordRestore(RocksDBVersionedStore):
    def restore_records(self, records: Sequence[ChangelogRecord]) -> None:
        for record in records:
            super().restore_records([record])


@_mixin_mutant("versioned-store-restore-skips-by-end-of-batch", "restore skips every record older than the grace "
               "period at the END of its batch, instead of at the stream time reached so far",
               rules=("VER-25", "VS-15"))
class SkipsByEndOfBatch(RocksDBVersionedStore):
    def restore_records(self, records: Sequence[ChangelogRecord]) -> None:
        self.observed_stream_time = max([self.observed_stream_time, *(r.timestamp for r in records)])
        super().restore_records(records)


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


@_mixin_mutant("versioned-store-get-ignores-retention", "get(key, asOf) beyond history retention still reads the "
               "segments instead of answering only the latest version", rules=("VER-32", "VS-9"))
class IgnoresRetention(RocksDBVersionedStore):
    def get(self, key: bytes, as_of: int | None = None) -> Any:
        if as_of is None:
            return super().get(key)
        observed, self.observed_stream_time = self.observed_stream_time, v.NO_TIMESTAMP
        try:
            return super().get(key, as_of)
        finally:
            self.observed_stream_time = observed


@_logging_mutant("versioned-store-expired-writes-not-logged", "the change-logging layer logs a put or delete only "
                 "when the store applied it, not unconditionally as Kafka does", rules=("VER-26", "VER-33", "VS-18"))
class LogsAppliedOnly(_DivertedWrites, ChangeLoggingVersionedKeyValueBytesStore):
    def _diverts(self, timestamp: int) -> bool:  # expired: the inner store drops it, the log is skipped
        inner = self.inner
        return timestamp < inner.observed_stream_time - inner.config.grace_period

    def _put_instead(self, key: bytes, value: bytes | None, timestamp: int) -> int:
        return self.inner.put(key, value, timestamp)

    def _delete_instead(self, key: bytes, timestamp: int) -> Any:
        return self.inner.delete(key, timestamp)


# --- the store's own rules (spec/versioned-store.md, VS-*) ------------------------------------------------------


@_mixin_mutant("versioned-store-no-offsets-family", "the RocksDB versioned store's database is opened without the "
               "KIP-1035 offsets column family (a pre-4.3 port): no committed offsets survive", rules=("VS-1", "VS-17"))
class NoOffsetsFamily(RocksDBVersionedStore):
    def __init__(self, name: str, *args: Any, **kwargs: Any) -> None:
        if not isinstance(self, InMemoryVersionedStore):
            kwargs["options"] = replace(kwargs.get("options", DEFAULT_ROCKSDB_OPTIONS), manage_offsets=False)
        super().__init__(name, *args, **kwargs)


_MISPLACED_LATEST_PREFIX = struct.pack(">q", INT64_MAX)


@mutant("versioned-store-latest-under-max-segment", "the latest values are filed under the reserved segment id "
        "Long.MAX_VALUE (7F FF ...) instead of -1 (FF x 8)", FAMILY, rules=("VS-2",))
def _latest_under_max_segment() -> dict[str, Handler]:
    latest_prefix = struct.pack(">q", v.LATEST_VALUE_SEGMENT_ID)

    def moved(key: bytes) -> bytes:
        return _MISPLACED_LATEST_PREFIX + key[8:] if key.startswith(latest_prefix) else key

    class LatestUnderMax(RocksDBVersionedStore):
        def __init__(self, name: str, *args: Any, **kwargs: Any) -> None:
            super().__init__(name, *args, **kwargs)
            row_get, row_put = self._row_get, self._row_put
            self._row_get = lambda key: row_get(moved(key))
            self._row_put = lambda key, value: row_put(moved(key), value)

    return _with_mixin(LatestUnderMax)


@mutant("versioned-store-history-retention-defaults", "a versioned store opened without history_retention_ms gets a "
        "default of one day instead of being refused", FAMILY, rules=("VS-4", "VS-23"))
def _history_retention_defaults() -> dict[str, Handler]:
    def open_store(store_type: StoreType, backend: Backend, *, options: Mapping[str, Any] | None = None,
                   **rest: Any) -> StateStore:
        if StoreType(store_type) in VERSIONED_TYPES and "history_retention_ms" not in (options or {}):
            options = {**(options or {}), "history_retention_ms": 86_400_000}
        return open_bytes_store(store_type, backend, options=options, **rest)

    return _open_with(replace(DEFAULT_BUILDER, open_bytes_store=open_store))


@_mixin_mutant("versioned-store-latest-valid-to-undefined", "the latest value is answered with validTo -1 (the put "
               "return code PUT_RETURN_CODE_VALID_TO_UNDEFINED) instead of no validTo", rules=("VS-8", "VS-22"))
class ValidToUndefined(RocksDBVersionedStore):
    def get(self, key: bytes, as_of: int | None = None) -> Any:
        found = super().get(key, as_of)
        if found is not None and found.valid_to is None:
            return found._replace(valid_to=v.PUT_RETURN_CODE_VALID_TO_UNDEFINED)
        return found


@_mixin_mutant("versioned-store-delete-answers-latest", "delete(key, ts) answers the latest value instead of the "
               "version valid at ts", rules=("VS-10",))
class AnswersLatest(RocksDBVersionedStore):
    def delete(self, key: bytes, timestamp: int) -> Any:
        latest = self.get(key) if self.is_open and type(key) is bytes else None
        answered = super().delete(key, timestamp)
        return latest if answered is not None else None


@_mixin_mutant("versioned-store-any-is-ascending", "the versions query serves ResultOrder.ANY oldest first instead of "
               "through the descending path", rules=("VS-12",))
class AnyAscending(RocksDBVersionedStore):
    def get_versions(self, key: bytes, from_ms: int | None = None, to_ms: int | None = None,
                     order: Any = "any") -> Any:
        if order in ("any", ResultOrder.ANY):
            order = ResultOrder.ASCENDING
        return super().get_versions(key, from_ms, to_ms, order)


@_logging_mutant("versioned-store-restore-logged", "the change-logging layer logs the records it restores, as if they "
                 "were new writes", rules=("VS-16",))
class LogsRestore(ChangeLoggingVersionedKeyValueBytesStore):
    def restore_records(self, records: Sequence[ChangelogRecord]) -> None:
        super().restore_records(records)
        for record in records:
            self.sink.append(record)


@_logging_mutant("versioned-store-writes-before-logging", "the change-logging layer writes the inner store first and "
                 "builds the changelog record after (Kafka's order): a write the log refuses has already changed the "
                 "store", rules=("VS-19",))
class WritesFirst(ChangeLoggingVersionedKeyValueBytesStore):
    def put(self, key: bytes, value: bytes | None, timestamp: int) -> int:
        valid_to = self.inner.put(key, value, timestamp)
        self.sink.append(self._record(key, value, timestamp))
        return valid_to

    def delete(self, key: bytes, timestamp: int) -> Any:
        previous = self.inner.delete(key, timestamp)
        self.sink.append(self._record(key, None, timestamp))
        return previous


@_mixin_mutant("versioned-store-in-memory-keeps-offsets", "the in-memory versioned store answers the changelog "
               "offsets it was committed with, as if it managed offsets", rules=("VS-20",))
class KeepsOffsets(RocksDBVersionedStore):
    def commit(self, changelog_offsets: Mapping[TopicPartition, int | None]) -> None:
        super().commit(changelog_offsets)
        if isinstance(self, InMemoryVersionedStore):
            kept = self.__dict__.setdefault("_kept_offsets", {})
            kept.update({tp: o for tp, o in changelog_offsets.items() if o is not None})

    def committed_offset(self, partition: TopicPartition) -> int | None:
        committed = super().committed_offset(partition)
        if isinstance(self, InMemoryVersionedStore):
            kept: dict[TopicPartition, int] = self.__dict__.get("_kept_offsets", {})
            return kept.get(partition)
        return committed


@mutant("versioned-store-answers-key-value-get", "a versioned store also answers the key-value store.get, with its "
        "latest value (a port implementing KeyValueStore on the versioned store)", FAMILY, rules=("VS-21",))
def _answers_key_value_get() -> dict[str, Handler]:
    def get(payload: JsonDict) -> JsonDict:
        handle = handle_for(payload)
        if handle.store_type not in VERSIONED_TYPES:
            return call("store.get", payload)
        found = cast(RocksDBVersionedStore, handle.store).get(key_from(payload))
        return {"value": None if found is None else found.value.hex()}

    return {"store.get": get}


@mutant("versioned-store-lag-without-a-day", "a versioned changelog topic gets min.compaction.lag.ms = history "
        "retention, without the extra day", FAMILY, rules=("VS-24",))
def _lag_without_a_day() -> dict[str, Handler]:
    def topic_config(payload: JsonDict, out: JsonDict) -> JsonDict:
        if payload.get("store_type") in [t.value for t in VERSIONED_TYPES] and payload.get("log_config") is None:
            out["config"]["min.compaction.lag.ms"] = str(payload["history_retention_ms"])
        return out

    return altered("changelog.topic_config", topic_config)


@_mixin_mutant("versioned-store-latest-expires", "get(key, asOf) beyond history retention answers null without first "
               "consulting the latest value, so an old latest value expires", rules=("VS-34", "VS-9"))
class LatestExpires(RocksDBVersionedStore):
    def get(self, key: bytes, as_of: int | None = None) -> Any:
        if (self.is_open and type(as_of) is int
                and as_of < self.observed_stream_time - self.history_retention):
            return None
        return super().get(key, as_of)


@_mixin_mutant("versioned-store-empty-value-is-tombstone", "a put of an empty value is stored as a tombstone",
               rules=("VS-35",))
class EmptyIsTombstone(RocksDBVersionedStore):
    def put(self, key: bytes, value: bytes | None, timestamp: int) -> int:
        return super().put(key, None if value == b"" else value, timestamp)


@mutant("versioned-store-negative-segment-accepted", "segment ids are not reserved (getOrCreateSegment without its "
        "negative-id check): a version whose validTo is at or below -segmentInterval is written to a negative segment "
        "(-1 is the latest-value store's) instead of being refused", FAMILY, rules=("VS-36",))
def _negative_segment_accepted() -> dict[str, Handler]:
    class AcceptsNegative(v.KeyVersions):
        def _live_segment(self, sid: int) -> bool:
            return sid >= self._min_live_segment()

    class NegativeRows(_KeyRows):
        def __setitem__(self, sid: int, row: bytes) -> None:
            if sid >= 0:
                super().__setitem__(sid, row)
            else:
                self._segments.physical.accessor.put(encode_int64(sid) + self._key, row)

    class NegativeSegments(RocksDBVersionedStore):
        def _put_in_order(self, key: bytes, value: bytes, timestamp: int) -> bool:
            return False  # every put through the broken procedure

        def _get_as_of(self, key: bytes, as_of: int) -> Any:
            return self._codec_get_as_of(key, as_of)  # every get as of through it

        def _key_versions(self, key: bytes, stream_time: int) -> v.KeyVersions:
            honest = super()._key_versions(key, stream_time)
            return AcceptsNegative(honest.config, honest.observed_stream_time, honest.latest,
                                   NegativeRows(self.segments, key))

    return _with_mixin(NegativeSegments)


@_mixin_mutant("versioned-store-closed-reads-answer-nothing", "a closed store answers reads with nothing (null, no "
               "versions) instead of refusing them", rules=("VS-37",))
class ClosedReadsNothing(RocksDBVersionedStore):
    def get(self, key: bytes, as_of: int | None = None) -> Any:
        return super().get(key, as_of) if self.is_open else None

    def get_versions(self, key: bytes, from_ms: int | None = None, to_ms: int | None = None,
                     order: Any = "any") -> Any:
        return super().get_versions(key, from_ms, to_ms, order) if self.is_open else []


@mutant("versioned-store-get-omits-null-valid-to", "versioned_store.get leaves out valid_to for the latest value "
        "instead of answering it as null", FAMILY, rules=("VS-39",))
def _get_omits_null_valid_to() -> dict[str, Handler]:
    def get(payload: JsonDict, out: JsonDict) -> JsonDict:
        found = out.get("record")
        if isinstance(found, dict) and found.get("valid_to") is None:
            out = {**out, "record": {k: val for k, val in found.items() if k != "valid_to"}}
        return out

    return altered("versioned_store.get", get)


# --- paired mutants (caught beside a model only: kstate conformance --model; mutants/paired_mutants.py) ---------

paired_mutant("paired-versioned-put-answers-latest",
              "a versioned put answers validTo -1 (the latest) even when out of order",
              "versioned", ("VS-7",), {"versioned_store.put": changed_answer("versioned_store.put", lambda _p, out: {
                  **out, "valid_to": -1 if out["valid_to"] != -(1 << 63) else out["valid_to"]})})
