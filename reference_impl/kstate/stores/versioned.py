"""Versioned key-value bytes stores (KIP-889): Kafka's ``RocksDBVersionedStore`` and an in-memory store (spec/versioned-store.md).

:class:`RocksDBVersionedStore` keeps one database at ``<task>/rocksdb/<store>`` (VS-1) through
:class:`~kstate.stores.segments.LogicalKeyValueSegments`: the latest value of each key under the reserved segment
-1 (VS-2), older versions in segment rows filed by their validTo (VS-3). The per-key put/get/delete procedure is
:class:`kstate.codecs.versioned.KeyVersions`, run over this store's rows; the store adds what is store-wide: the
observed stream time (VS-5), expired-segment cleanup (VS-13), the versions query (VS-11, VS-12), restore (VS-15),
offsets (VS-17) and the life-cycle.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from contextlib import AbstractContextManager
from enum import Enum
from pathlib import Path
from struct import Struct
from typing import Any, NamedTuple

from kstate.codecs import changelog as cl
from kstate.codecs import versioned as v
from kstate.codecs.changelog import ChangelogRecord
from kstate.codecs.position import Position
from kstate.codecs.primitives import INT64_MAX, INT64_MIN, encode_int64, segment_id
from kstate.codecs.store_types import DEFAULT_CF, StoreType
from kstate.errors import InvalidArgumentError, KStateError, NullKeyError
from kstate.stores.api import RecordContext, TopicPartition
from kstate.stores.engine import Engine, MemoryEngine
from kstate.stores.life import OPEN, LifeCycle, Op, answer
from kstate.stores.offsets import read_checkpoint_entries, remove_checkpoint_entries, write_downgrade_checkpoint
from kstate.stores.segments import AbstractSegments, LogicalKeyValueSegments
from kstate.stores.store_classes import OpenOption, StoreClasses
from kstate.stores.surface import (
    DEFAULT_ROCKSDB_OPTIONS,
    PositionTracker,
    RocksDBOptions,
    check_changelog_offsets,
    check_value,
    to_codec_tp,
    validate_store_name,
)

LOG = logging.getLogger("kstate.stores")

_INT64 = Struct(">q")
_ROW_HEADER = Struct(">qq")
_ENTRY = Struct(">qi")  # a segment row's index entry: validFrom, value size (VER-6)
_NEW_ROW = Struct(">qqi")  # a new row after its nextTimestamp: minTimestamp, then its one entry (VER-6)
#: The bytes of keys and values the latest-version cache holds at most (then it starts again empty).
_LATEST_CACHE_BYTES = 16 << 20
_LATEST_PREFIX = v.LATEST_VALUE_PREFIX
#: ``VersionedRecord`` built without its Python-level ``__new__`` (the latest-value read's hot path).
_new_record = tuple.__new__

PUT_RETURN_CODE_NOT_PUT = v.PUT_RETURN_CODE_NOT_PUT
PUT_RETURN_CODE_VALID_TO_UNDEFINED = v.PUT_RETURN_CODE_VALID_TO_UNDEFINED


class ResultOrder(str, Enum):
    """KIP-968's ``ResultOrder``: ``ANY`` is served newest first, as ``DESCENDING`` (VS-12)."""

    ANY = "any"
    ASCENDING = "ascending"
    DESCENDING = "descending"


class VersionedRecord(NamedTuple):
    """Kafka's ``VersionedRecord``: a non-null value, its validFrom timestamp, and validTo (None: still valid) (VS-22).

    A named tuple: built on every read, it costs a third of a frozen dataclass.
    """

    value: bytes
    timestamp: int
    valid_to: int | None = None


def check_key(key: object) -> bytes:
    """Kafka's ``Objects.requireNonNull(key, "key cannot be null")``; keys are bytes (VS-35)."""
    if key is None:
        raise NullKeyError("key cannot be null")
    if type(key) is bytes:
        return key
    if isinstance(key, (bytearray, memoryview)):
        return bytes(key)
    raise InvalidArgumentError("key", f"keys are bytes, got {type(key).__name__}")


def check_timestamp(timestamp: object, argument: str = "timestamp") -> int:
    """A timestamp is a Java long (VS-36)."""
    if isinstance(timestamp, bool) or not isinstance(timestamp, int) or not INT64_MIN <= timestamp <= INT64_MAX:
        raise InvalidArgumentError(argument, f"a timestamp is an int64, got {timestamp!r:.40}")
    return timestamp


def _record(found: v.VersionedRecord | None) -> VersionedRecord | None:
    return None if found is None else VersionedRecord(found.value, found.timestamp, found.valid_to)


class _KeyRows(MutableMapping[int, bytes]):
    """One key's rows in the store's regular segments, by segment id: what :class:`KeyVersions` edits (VS-3).

    Iterating lists the segments the store holds (Kafka's segment map), not only those with a row for the key;
    ``get`` reads the key's row in any segment; setting a row creates its segment (``getOrCreateSegment``).
    """

    __slots__ = ("_key", "_segments")

    def __init__(self, segments: LogicalKeyValueSegments, key: bytes) -> None:
        self._segments = segments
        self._key = key

    def __iter__(self) -> Iterator[int]:
        return iter(self._segments.segment_ids())

    def __len__(self) -> int:
        return len(self._segments.segment_ids())

    def get(self, sid: int, default: bytes | None = None) -> bytes | None:  # type: ignore[override]
        row = self._segments.physical.accessor.get(encode_int64(sid) + self._key)
        return default if row is None else row

    def __getitem__(self, sid: int) -> bytes:
        row = self.get(sid)
        if row is None:
            raise KeyError(sid)
        return row

    def __setitem__(self, sid: int, row: bytes) -> None:
        self._segments.get_or_create_segment(sid).physical.accessor.put(encode_int64(sid) + self._key, row)

    def __delitem__(self, sid: int) -> None:
        self._segments.physical.accessor.put(encode_int64(sid) + self._key, None)


class RocksDBVersionedStore(LifeCycle, PositionTracker):
    """Kafka's ``RocksDBVersionedStore``: one database, logical segments, store-wide observed stream time (VS-1..VS-17).

    ``RocksDBVersionedStore(name, task_dir, history_retention_ms=...)`` opens ``<task_dir>/rocksdb/<name>``;
    ``segment_interval_ms`` defaults by VER-23. Writes are staged until :meth:`commit` or :meth:`close` (VS-17).
    ``engine`` runs the same logic over another engine (the in-memory store does).
    """

    store_type = StoreType.VERSIONED_KV
    mode = "regular"

    def __init__(
        self,
        name: str,
        task_dir: str | Path | None = None,
        *,
        history_retention_ms: int,
        segment_interval_ms: int | None = None,
        options: RocksDBOptions = DEFAULT_ROCKSDB_OPTIONS,
        engine: Engine | None = None,
    ) -> None:
        self.name = validate_store_name(name)
        self.config = v.store_config(history_retention_ms, segment_interval_ms)  # VS-4
        self.history_retention = self.config.history_retention
        self.segment_interval = self.config.segment_interval
        self.observed_stream_time = v.NO_TIMESTAMP  # VS-5: not persisted
        self._record_context: RecordContext | None = None
        self._segments = LogicalKeyValueSegments(
            self.name, task_dir, self.history_retention, self.segment_interval,
            options=options, changelog_partitions=options.changelog_partitions or (), engine=engine,
        )
        # KV-55, OFF-19 for this family too: Kafka 4.4's task migrates the legacy .checkpoint into every store that
        # manages offsets, the versioned one included; read before the database opens, so a refusal changes nothing.
        # A versioned store never wrote a <store>.position file, and Kafka's versioned store reads none.
        legacy_dir = Path(task_dir) if task_dir is not None and engine is None else None
        migrate = legacy_dir is not None and options.manage_offsets and options.migrate_legacy_files \
            and legacy_dir.is_dir()
        #: The task directory and the changelog partitions of the legacy files (OFF-19 at open, OFF-20 at close).
        self._legacy_dir = legacy_dir if legacy_dir is not None and options.manage_offsets else None
        self._legacy_partitions = options.partitions_for(legacy_dir, self.name) if legacy_dir is not None else ()
        legacy = read_checkpoint_entries(legacy_dir, self.name, self._legacy_partitions) \
            if migrate and legacy_dir is not None else {}
        self._segments.open_existing(self.observed_stream_time)  # VS-14: segments on disk are found again
        self._latest = self._segments.latest_value_segment()
        self._position: Position = self._segments.position()
        if legacy and legacy_dir is not None:
            try:
                self._segments.commit(legacy, self._position)
            except BaseException:
                self._segments.close()
                raise
            remove_checkpoint_entries(legacy_dir, self.name, legacy)  # only once the database holds them
        physical = self._segments.physical
        accessor = physical.accessor
        self._row_get, self._row_put = accessor.get, accessor.put
        # The plain key-value layout has one family (VS-1): its staged writes are the rows written since the last
        # commit, which the in-order put reads and writes directly (what ``accessor.get``/``put`` do, minus calls).
        (self._cf,) = accessor.column_families
        self._staged = physical.staged
        #: The latest version of each key the in-order put wrote or read, decoded: a mirror of its latest-value row
        #: (VS-2) kept by every write of that row; ``_latest_cache_bytes`` bounds what it holds (over-counting only).
        self._latest_cache: dict[bytes, VersionedRecord] = {}
        self._latest_cache_bytes = 0
        self._cleaned_below = self._segments.min_live_segment_id(self.observed_stream_time)
        self._cleanup_due = self._first_stream_time_past(self._cleaned_below)
        self._open = True

    # --- state --------------------------------------------------------------------------------------------------

    def persistent(self) -> bool:
        return True

    @property
    def segments(self) -> LogicalKeyValueSegments:
        return self._segments

    def segment_ids(self) -> list[int]:
        """The ids of the regular segments the store holds, ascending (VS-13, VS-14)."""
        return self._segments.segment_ids()

    # --- the per-key procedure over this store's rows -----------------------------------------------------------

    def _key_versions(self, key: bytes, stream_time: int) -> v.KeyVersions:
        return v.KeyVersions(self.config, stream_time, self._latest_row(key), _KeyRows(self._segments, key))

    def _latest_row(self, key: bytes) -> bytes | None:
        return self._row_get(_LATEST_PREFIX + key)

    def _write_latest(self, key: bytes, before: bytes | None, after: bytes | None) -> None:
        if after != before:
            self._latest_cache.pop(key, None)
            self._row_put(_LATEST_PREFIX + key, after)

    def _do_put(self, key: bytes, value: bytes | None, timestamp: int, stream_time: int) -> int:
        """Kafka's ``doPut``: the per-key procedure, and expired segments dropped store-wide (VS-7, VS-13).

        Kafka drops the expired segments first; the per-key procedure drops this key's rows in them itself and
        never writes there, so dropping them after it gives the same rows, and a put refused midway (VS-36) has
        then written nothing.
        """
        versions = self._key_versions(key, stream_time)
        before = versions.latest
        found = versions.apply_put(value, timestamp)
        self._write_latest(key, before, versions.latest)
        self._cleanup(stream_time)
        return found

    def _cleanup(self, stream_time: int) -> None:
        """Drop the segments expired at ``stream_time`` (VS-13); nothing to do while the earliest live id stays."""
        if stream_time < self._cleanup_due:  # the earliest live id is still ``_cleaned_below``
            return
        bound = self._segments.min_live_segment_id(stream_time)
        if bound > self._cleaned_below:  # stream times only grow: no segment below an earlier bound is created
            self._segments.cleanup_expired_segments(stream_time)
            self._cleaned_below = bound
            self._cleanup_due = self._first_stream_time_past(bound)

    def _first_stream_time_past(self, segment_id_: int) -> int:
        """The least stream time whose earliest live segment id (``segmentId(streamTime - retention)``, Java
        truncation, VER-30) exceeds ``segment_id_``."""
        next_id = segment_id_ + 1
        interval = self.segment_interval
        first = next_id * interval if next_id > 0 else (next_id - 1) * interval + 1  # truncation toward zero
        return first + self.history_retention

    def _latest_version(self, key: bytes) -> VersionedRecord | None:
        """The key's latest version decoded from its latest-value row (VS-2, VS-8): a read the cache missed, which
        does not fill the cache (puts do), so reading many keys once costs one lookup more."""
        row = self._row_get(_LATEST_PREFIX + key)
        if row is None:
            return None
        if len(row) < 8:
            v.decode_latest_value(row)  # raises the typed decode error
        return _new_record(VersionedRecord, (row[8:], _INT64.unpack_from(row)[0], None))

    def _cache_latest(self, key: bytes, row: bytes) -> VersionedRecord:
        """Decode a latest-value row of at least 8 bytes, ``[validFrom int64][value]`` (VS-2), into the cache."""
        if self._latest_cache_bytes > _LATEST_CACHE_BYTES:
            self._drop_latest_cache()
        self._latest_cache_bytes += len(key) + len(row)
        found = self._latest_cache[key] = _new_record(VersionedRecord, (row[8:], _INT64.unpack_from(row)[0], None))
        return found

    def _drop_latest_cache(self) -> None:
        self._latest_cache.clear()
        self._latest_cache_bytes = 0

    def _put_in_order(self, key: bytes, value: bytes, timestamp: int) -> bool:
        """The common put, written out: a newer value over an existing latest value whose previous version ends
        exactly where it starts. Returns False, having changed nothing, for any other case; the rows are those
        :meth:`KeyVersions.apply_put` writes (VER-28, ``insertAsLatest`` at index 0, VS-3)."""
        cache = self._latest_cache
        latest = cache.get(key)
        if latest is None:
            row = self._row_get(_LATEST_PREFIX + key)
            if row is None or len(row) < 8:
                return False
            latest = self._cache_latest(key, row)  # the key is in the cache from here on
        old_value, old_ts, _ = latest
        if timestamp < old_ts:
            return False
        observed = self.observed_stream_time
        stream_time = timestamp if timestamp > observed else observed
        # the writes since the last commit (a live view): what the accessor's get and put read and write
        rows = self._staged.pending.ops.get(self._cf)
        if rows is None:
            rows = self._staged.staged(self._cf)
        stamp = _INT64.pack(timestamp)
        if timestamp > old_ts:
            sid = timestamp // self.segment_interval  # timestamp >= 0: floor is Java's truncation
            # a put at the stream time or later files into a live segment (retention >= 0)
            if timestamp < stream_time and sid < self._segments.min_live_segment_id(stream_time):
                return False
            segment_key = _INT64.pack(sid) + key
            row = rows[segment_key] if segment_key in rows else self._row_get(segment_key)
            if row is None:
                row = stamp + _NEW_ROW.pack(old_ts, old_ts, len(old_value)) + old_value
            else:
                if len(row) < 16:
                    return False
                next_ts, min_ts = _ROW_HEADER.unpack_from(row)
                if next_ts != old_ts or next_ts == min_ts:  # a gap, an inconsistency or a degenerate row
                    return False
                row = b"".join((stamp, row[8:16], _ENTRY.pack(old_ts, len(old_value)), row[16:], old_value))
            self._segments.get_or_create_segment(sid)
            rows[segment_key] = row
        rows[_LATEST_PREFIX + key] = stamp + value
        cache[key] = _new_record(VersionedRecord, (value, timestamp, None))  # the key is cached: replaced in place
        self._latest_cache_bytes += len(value) - len(old_value)
        if self._latest_cache_bytes > _LATEST_CACHE_BYTES:
            self._drop_latest_cache()
        self.observed_stream_time = stream_time
        if stream_time >= self._cleanup_due:
            self._cleanup(stream_time)
        return True

    def _advance_and_put(self, key: bytes, value: bytes | None, timestamp: int) -> int:
        """Advance the stream time and put; a refused put leaves the stream time as it was (VS-5, VS-36)."""
        previous = self.observed_stream_time
        self.observed_stream_time = max(previous, timestamp)
        try:
            return self._do_put(key, value, timestamp, self.observed_stream_time)
        except KStateError:
            self.observed_stream_time = previous
            raise

    # --- VersionedKeyValueStore ---------------------------------------------------------------------------------

    def put(self, key: bytes, value: bytes | None, timestamp: int) -> int:
        """``put(key, value, timestamp)``: the new version's validTo, -1 if it is the latest, ``Long.MIN_VALUE`` if
        older than the grace period (VS-6, VS-7)."""
        if type(key) is not bytes:
            key = check_key(key)
        if value is not None and type(value) is not bytes:
            value = check_value(value)
        if type(timestamp) is not int or not INT64_MIN <= timestamp <= INT64_MAX:
            timestamp = check_timestamp(timestamp)
        if self._life is not OPEN:
            self._allow(Op.WRITE)
        if timestamp < self.observed_stream_time - self.history_retention:  # grace period = history retention
            LOG.warning("Skipping record for expired put.")
            self._update_position()
            return PUT_RETURN_CODE_NOT_PUT
        if value is not None and timestamp >= 0 and self._put_in_order(key, value, timestamp):
            found = PUT_RETURN_CODE_VALID_TO_UNDEFINED
        else:
            found = self._advance_and_put(key, value, timestamp)
        if self._record_context is not None:
            self._update_position()
        return found

    def delete(self, key: bytes, timestamp: int) -> VersionedRecord | None:
        """``delete(key, timestamp)``: ``get(key, timestamp)``, then a tombstone put; None and no change when
        expired (VS-10)."""
        key, timestamp = check_key(key), check_timestamp(timestamp)
        self._allow(Op.WRITE)
        if timestamp < self.observed_stream_time - self.config.grace_period:
            LOG.warning("Skipping record for expired delete.")
            return None
        existing = self.get(key, timestamp)
        self._advance_and_put(key, None, timestamp)
        self._update_position()
        return existing

    def get(self, key: bytes, as_of: int | None = None) -> VersionedRecord | None:
        """``get(key)``: the latest value store only (VS-8); ``get(key, as_of)``: the version valid at ``as_of``
        within history retention, the latest one always (VS-9)."""
        if type(key) is not bytes:
            key = check_key(key)
        if self._life is not OPEN:
            self._allow(Op.READ)
        if as_of is None:
            found = self._latest_cache.get(key)
            if found is not None:
                return found
            return self._latest_version(key)
        as_of = check_timestamp(as_of, "as_of")
        return self._get_as_of(key, as_of)

    def _get_as_of(self, key: bytes, as_of: int) -> VersionedRecord | None:
        """:meth:`kstate.codecs.versioned.KeyVersions.get_as_of` (VS-9, VER-32) read in place: the latest version
        from the latest-value cache or row, then the key's rows newest segment first, each version found in the
        row's index as ``SegmentValue.find`` finds it (VER-11), the value sliced out, nothing else decoded. A row
        that is not well formed goes to the codec's procedure, which refuses it with its typed error."""
        cached = self._latest_cache.get(key)
        if cached is not None:
            if cached.timestamp <= as_of:
                return cached
        else:
            row = self._row_get(_LATEST_PREFIX + key)
            if row is not None:
                if len(row) < 8:
                    return self._codec_get_as_of(key, as_of)
                valid_from = _INT64.unpack_from(row)[0]
                if valid_from <= as_of:
                    return _new_record(VersionedRecord, (row[8:], valid_from, None))
        if as_of < self.observed_stream_time - self.history_retention:
            LOG.warning("Returning null for expired get.")
            return None
        low = segment_id(as_of, self.segment_interval)
        row_get, key_of = self._row_get, _INT64.pack
        ids = self._segments.segment_ids()
        for sid in reversed(ids):
            if sid < low:
                break
            row = row_get(key_of(sid) + key)
            if row is None:
                continue
            size_of_row = len(row)
            if size_of_row < 16:
                return self._codec_get_as_of(key, as_of)
            valid_to, min_timestamp = _ROW_HEADER.unpack_from(row)
            if valid_to <= as_of:
                return None
            if min_timestamp > as_of:
                continue
            position, cumulative = 16, 0
            while True:  # ends: min_timestamp <= as_of, and the entry of min_timestamp ends the row's index
                if position + 12 > size_of_row:
                    return self._codec_get_as_of(key, as_of)
                valid_from, size = _ENTRY.unpack_from(row, position)
                position += 12
                if size > 0:
                    cumulative += size
                elif size < -1:
                    return self._codec_get_as_of(key, as_of)
                if cumulative > size_of_row - position:
                    return self._codec_get_as_of(key, as_of)
                if valid_from <= as_of:
                    if size < 0:
                        return None  # a tombstone
                    start = size_of_row - cumulative
                    return _new_record(VersionedRecord, (row[start:start + size], valid_from, valid_to))
                if valid_from == min_timestamp:  # cannot be: min_timestamp <= as_of; the codec says why
                    return self._codec_get_as_of(key, as_of)
                valid_to = valid_from
        return None

    def _codec_get_as_of(self, key: bytes, as_of: int) -> VersionedRecord | None:
        """The get as of through the codec's per-key procedure (VER-32): where a row is not well formed."""
        return _record(self._key_versions(key, self.observed_stream_time).get_as_of(as_of))

    def get_versions(self, key: bytes, from_ms: int | None = None, to_ms: int | None = None,
                     order: ResultOrder | str = ResultOrder.ANY) -> list[VersionedRecord]:
        """KIP-968's ``get(key, fromTime, toTime, order)``: every version with validFrom <= ``to_ms`` and validTo >
        ``from_ms`` (the latest: its validFrom <= ``to_ms``); past history retention only the latest (VS-11, VS-12)."""
        key = check_key(key)
        from_ms = INT64_MIN if from_ms is None else check_timestamp(from_ms, "from_ms")
        to_ms = INT64_MAX if to_ms is None else check_timestamp(to_ms, "to_ms")
        order = _order(order)
        self._allow(Op.READ)
        ascending = order is ResultOrder.ASCENDING
        latest = self._latest_row(key)
        newest: list[VersionedRecord] = []
        if latest is not None:
            value, timestamp = v.decode_latest_value(latest)
            if timestamp <= to_ms:
                newest.append(VersionedRecord(value, timestamp))
        if to_ms < self.observed_stream_time - self.history_retention:
            return newest
        low, high = segment_id(INT64_MIN, self.segment_interval), segment_id(to_ms, self.segment_interval)
        rows = _KeyRows(self._segments, key)
        groups: list[list[VersionedRecord]] = [newest]
        for sid in sorted((s for s in self._segments.segment_ids() if low <= s <= high), reverse=True):
            row = rows.get(sid)
            if row is not None:
                groups.append([VersionedRecord(r.value, r.valid_from, r.valid_to)  # type: ignore[arg-type]
                               for r in v.SegmentValue.deserialize(row).find_all(from_ms, to_ms)])
        out = [record for group in groups for record in group]
        return out[::-1] if ascending else out

    # --- restore (VS-15) ----------------------------------------------------------------------------------------

    def restore_records(self, records: Sequence[ChangelogRecord]) -> None:
        """Kafka's ``restoreBatch``: each record not beyond the grace period is put with the stream time of the
        END of the batch, so versions the batch will expire are dropped early (VS-15). Nothing is logged (VS-16)."""
        self._allow(Op.RESTORE)
        checked = [(check_key(r.key), check_value(r.value), check_timestamp(r.timestamp)) for r in records]
        end_of_batch = max([self.observed_stream_time, *(ts for _, _, ts in checked)])
        for key, value, timestamp in checked:
            if timestamp < self.observed_stream_time - self.config.grace_period:
                continue
            self.observed_stream_time = max(self.observed_stream_time, timestamp)
            self._do_put(key, value, timestamp, end_of_batch)

    def restore_batch(self, entries: Sequence[tuple[bytes, bytes | None]]) -> None:
        """Refused: a versioned store restores whole records, whose timestamps are its versions (VS-15)."""
        raise InvalidArgumentError("entries", "a versioned store restores changelog records (restore_records), "
                                   "not (key, value) pairs: the record timestamp is the version")

    def restoring(self) -> AbstractContextManager[None]:
        """Restore's commits skip the WAL until the flush that ends restore (RST-8)."""
        self._allow(Op.RESTORE)
        return self._segments.physical.restoring()

    # --- dump ---------------------------------------------------------------------------------------------------

    @property
    def column_families(self) -> tuple[str, ...]:
        return (DEFAULT_CF,)

    def column_family_rows(self) -> dict[str, list[tuple[bytes, bytes]]]:
        """Every column family's rows as the open store presents them: written plus staged (VS-1)."""
        self._allow(Op.READ)
        return self._segments.physical.column_family_rows()

    # --- KIP-1035 (VS-17) ---------------------------------------------------------------------------------------

    def manages_offsets(self) -> bool:
        return self._segments.physical.offsets is not None

    def commit(self, changelog_offsets: Mapping[TopicPartition, int | None]) -> None:
        """Write the staged rows, the position and ``changelog_offsets`` in ONE atomic batch (VS-17)."""
        offsets = check_changelog_offsets(changelog_offsets)
        self._allow(Op.COMMIT)
        self._segments.commit(offsets, self._position)

    def flush(self) -> None:
        self._allow(Op.COMMIT)
        self._segments.physical.flush(self._position)

    def committed_offset(self, partition: TopicPartition) -> int | None:
        tp = to_codec_tp(partition, "partition")
        self._allow(Op.OFFSETS)
        return self._segments.physical.committed_offset(tp)

    def committed_offsets(self) -> dict[TopicPartition, int]:
        self._allow(Op.OFFSETS)
        return {TopicPartition(t, p): o for (t, p), o in self._segments.physical.committed_offsets().items()}

    def offsets_entries(self) -> dict[bytes, bytes]:
        return self._segments.physical.offsets_entries()

    # --- closing ------------------------------------------------------------------------------------------------

    def close_for_downgrade(self) -> None:
        """Close for a downgrade below 4.3 (OFF-20, UPG-4): the committed offsets, noted while the store is open
        (-4 for a partition with none, OFF-14), are merged into the task's ``.checkpoint`` once it has closed, as
        Kafka's task writes it after closing its stores (``LegacyCheckpointingStateStore``)."""
        self._allow(Op.DOWNGRADE)
        legacy_dir = self._legacy_dir
        offsets = {(tp.topic, tp.partition): self.committed_offset(tp) for tp in self._legacy_partitions} \
            if legacy_dir is not None else {}
        self.close()
        if legacy_dir is not None and offsets:
            write_downgrade_checkpoint(legacy_dir, self.name, offsets)

    def close(self) -> None:
        """Write staged rows, the position and status CLOSED, then release the database (VS-17). Idempotent."""
        if answer(self._life, Op.CLOSE).noop:
            return
        self._open = False
        self._segments.close(self._position)

    def simulate_crash(self) -> None:
        """Abandon the store as a killed process would: staged rows are lost, status stays OPEN (VS-17)."""
        if answer(self._life, Op.CRASH).noop:
            return
        self._crashed()
        self._segments.simulate_crash()


def _order(order: object) -> ResultOrder:
    try:
        return ResultOrder(order)
    except ValueError:
        accepted = ", ".join(repr(o.value) for o in ResultOrder)
        raise InvalidArgumentError("order", f"unknown result order {order!r:.40}; expected one of {accepted}") from None


class InMemoryVersionedStore(RocksDBVersionedStore):
    """An in-memory versioned store with the RocksDB store's observable behaviour (VS-20): the same per-key procedure
    over a sorted in-memory map (what Kafka answers depends on which tombstones its rows record, VER-34, so a plain
    list of versions would have to track the rows again); no offsets are managed and closing (or a crash) loses the
    contents."""

    def __init__(self, name: str, *, history_retention_ms: int, segment_interval_ms: int | None = None) -> None:
        super().__init__(name, history_retention_ms=history_retention_ms, segment_interval_ms=segment_interval_ms,
                         options=RocksDBOptions(manage_offsets=False), engine=MemoryEngine())

    def persistent(self) -> bool:
        return False

    def commit(self, changelog_offsets: Mapping[TopicPartition, int | None]) -> None:
        """Nothing to persist beyond memory (VS-20); writes become visible at once either way."""
        offsets = check_changelog_offsets(changelog_offsets)
        self._allow(Op.COMMIT)
        self._segments.commit(offsets, self._position)

    def committed_offset(self, partition: TopicPartition) -> int | None:
        """Always None: an in-memory store keeps no offsets (VS-20)."""
        to_codec_tp(partition, "partition")
        self._allow(Op.OFFSETS)
        return None

    def close(self) -> None:
        """Close and forget the contents (VS-20)."""
        if self._open:
            self._open = False
            self._segments.simulate_crash()

    def simulate_crash(self) -> None:
        self.close()


class RocksDBVersionedStoreWithHeaders(RocksDBVersionedStore):
    """KIP-1271's versioned store with headers (tentative, VS-25): the same store, each version's value held as
    ``[varint hsize][headers][value]`` (the header-aware value layout without a timestamp: the version is the
    timestamp). A tombstone stays a tombstone."""

    store_type = StoreType.VERSIONED_KV_WITH_HEADERS

    def restore_records(self, records: Sequence[ChangelogRecord]) -> None:
        """Each record's value gets the record's headers in front, as header-aware restore converts (VS-27)."""
        super().restore_records(_converted(self.store_type, records))


class InMemoryVersionedStoreWithHeaders(InMemoryVersionedStore):
    """The in-memory versioned store with headers (tentative, VS-25, VS-20)."""

    store_type = StoreType.VERSIONED_KV_WITH_HEADERS

    def restore_records(self, records: Sequence[ChangelogRecord]) -> None:
        super().restore_records(_converted(self.store_type, records))


def _converted(store_type: StoreType, records: Sequence[ChangelogRecord]) -> list[ChangelogRecord]:
    """The records with their values in the type's layout, by the table's restore conversion (CL-9, VS-27)."""
    convert = cl.record_converter(store_type)
    return [ChangelogRecord(r.key, convert(r.value, r.timestamp, r.headers), r.timestamp, r.headers) for r in records]


# --- what kstate.stores.families collects for the family (issue 33) ------------------------------------------------

#: The options of the versioned types (VS-4): history retention required, segment interval defaulted by VER-23.
VERSIONED_OPTIONS = (OpenOption("history_retention_ms", int, required=True), OpenOption("segment_interval_ms", int))


def family_store_classes() -> Mapping[StoreType, StoreClasses]:
    """The classes of each versioned type (VS-4); its change-logging layer imported here, as it imports this module."""
    from kstate.stores.changelogging import ChangeLoggingVersionedKeyValueBytesStore

    return {
        StoreType.VERSIONED_KV: StoreClasses(RocksDBVersionedStore, InMemoryVersionedStore,
                                             ChangeLoggingVersionedKeyValueBytesStore, options=VERSIONED_OPTIONS),
        StoreType.VERSIONED_KV_WITH_HEADERS: StoreClasses(
            RocksDBVersionedStoreWithHeaders, InMemoryVersionedStoreWithHeaders,
            ChangeLoggingVersionedKeyValueBytesStore, options=VERSIONED_OPTIONS),
    }


def family_segment_managers() -> Mapping[StoreType, type[AbstractSegments[Any]]]:
    """Key-prefix segments in one database, as Kafka's versioned supplier keeps them (VER-1)."""
    return {StoreType.VERSIONED_KV: LogicalKeyValueSegments, StoreType.VERSIONED_KV_WITH_HEADERS: LogicalKeyValueSegments}
