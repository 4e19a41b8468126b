"""An executable model of the versioned key-value store family (KIP-889; spec/versioned.md VER-22..VER-34,
spec/versioned-store.md).

Written from the spec and from the javadoc of Kafka's ``VersionedKeyValueStore``, independently of the
reference implementation, and speaking only the neutral vocabulary's values (bytes, ints, header pairs).
The model is *versions per key*: each key has at most one latest version (``validTo`` undefined) and a list
of stored versions ``[validFrom, validTo)``, each filed in the segment of its ``validTo`` (VER-22). Tombstone
versions are kept where the spec says a store keeps them (inside a segment row, or as a degenerate
``[T, T)`` point, VER-10); a stretch of time no version covers is an implicit tombstone. From this the model
predicts:

* every put's return code (VER-26, VER-27), every ``get``, ``get(asOf)``, ``delete`` and the KIP-968 versions
  query, in both orders;
* history retention and the store-wide observed stream time (VER-25, VER-30, VER-32), segment by segment;
* the changelog records the change-logging layer sends (one per put or delete, even a refused one);
* restore with Kafka's end-of-batch stream time (versions that will have expired by the end of the batch
  are never written), a restart (the observed stream time is not persisted) and a crash.

Two rules that a plain list of versions would get wrong are followed on purpose: a tombstone at exactly the
latest version's timestamp is recorded nowhere unless a stored version already ends there (VER-34), and the
versions query only looks at segments up to the one of its upper bound.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, rule

from kstate_conformance import store_types as types
from kstate_conformance.bytes_model import header_bytes, int64, zigzag_varint
from kstate_conformance.models.kv import CF_DEFAULT, CF_OFFSETS, HeaderPairs, Record, headers_to_json
from kstate_conformance.paired import excluded
from kstate_conformance.paired_stores import KEYS, RAW, PairedFamily, StorePair, hex_or_none, register
from kstate_conformance.probes import FamilyPlaces, Probe

VERSIONED = "versioned_kv"
VERSIONED_HEADERS = "versioned_kv_with_headers"
STORE_TYPES = (VERSIONED, VERSIONED_HEADERS)

# --- the family's entry in the suite's table of families (store_types.FAMILIES; issue 33) ---------------------

#: Its store types written from spec/ops.md's text, as the rest of the suite reads them (``store_types.VERSIONED_KV``
#: ...); its header-aware type (KIP-1271, tentative) is not one of the merged ones (HV-6, HV-11).
FAMILY = types.StoreFamily(
    name="versioned", order=1, types=STORE_TYPES, op_prefix="versioned_store.", segmented=False,
    codec_ops="versioned", rule_prefixes=("VS", "VER"), rule_terms=r"versioned|\bVS-\d",
    code_names=r"VERSIONED|^VKVH?$", module_part="versioned",
    spellings=(("VERSIONED_KV", VERSIONED), ("VERSIONED_KV_WITH_HEADERS", VERSIONED_HEADERS),
               ("VERSIONED_TYPES", STORE_TYPES)))

#: LAY-5, LAY-6: the column families a fresh database of the plain type opens, and the one its data is in.
LAYOUT_COLUMN_FAMILIES = ((VERSIONED, [CF_DEFAULT, CF_OFFSETS], CF_DEFAULT),)
#: LAY-7: no versioned type has a legacy column family to upgrade from.
LEGACY_UPGRADES: tuple[tuple[str, str, str], ...] = ()
#: LAY-8: a column family no versioned database has, which it refuses.
FOREIGN_COLUMN_FAMILIES = ((VERSIONED, "__offsets"),)
#: TSKV-5, LAY-7, LAY-8: the upgrades in place: none (no legacy column family).
IN_PLACE_UPGRADES: tuple[tuple[str, str, str, str], ...] = ()


# --- the changelog cases over every family (CL-*): what a record of the family's store looks like ---------------

#: CL-5: a write is logged at its version's timestamp, not its context's.
LOGS_AT_CONTEXT_TIME = False
#: The types the consistency-header case (CL-12) tries: none beyond the key-value ones.
CONSISTENCY_CASE_TYPES: tuple[str, ...] = ()
#: CL-1: a write the family does not have, refused.
UNDEFINED_CHANGELOG_WRITES = ((VERSIONED, "put_if_absent"),)


def changelog_stored_value(store_type: str, value: bytes, ts: int, headers: Sequence[tuple[str, bytes | None]]) -> bytes:
    """The bytes a restored record of the plain versioned type gives (CL-9): the value; its timestamp is apart."""
    if store_type == VERSIONED:
        return value
    raise types.UnknownStoreTypeError(store_type, "versioned.changelog_stored_value")


def changelog_shape(start: int, end: int) -> dict[str, Any]:
    """The fields a changelog write of the family takes beyond key and value: none (its timestamp is the caller's)."""
    return {}


def op_examples(handle: str) -> dict[str, dict[str, Any]]:
    """A valid input of each of the family's operations (OPS-2) on the store ``handle`` names, for the cases that
    confuse one field at a time (OPS-3)."""
    return {
        "versioned_store.put": {"handle": handle, "key": "01", "value": "02", "timestamp": 5, "headers": [["h", "01"]]},
        "versioned_store.get": {"handle": handle, "key": "01", "as_of": 4},
        "versioned_store.delete": {"handle": handle, "key": "01", "timestamp": 6},
        "versioned_store.get_versions": {"handle": handle, "key": "01", "from_ms": 0, "to_ms": 9, "order": "ascending"},
        "versioned_store.stream_time": {"handle": handle},
        "versioned_store.segments": {"handle": handle},
    }
ROCKSDB = "rocksdb"
MEMORY = "memory"

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1
#: ``VersionedKeyValueStore.PUT_RETURN_CODE_VALID_TO_UNDEFINED``: the new version is the latest.
VALID_TO_UNDEFINED = -1
#: ``VersionedKeyValueStore.PUT_RETURN_CODE_NOT_PUT``: the put was older than the grace period.
NOT_PUT = INT64_MIN
#: ``ConsumerRecord.NO_TIMESTAMP``: the observed stream time of a store that has seen nothing (VER-25).
NO_TIMESTAMP = -1

ASCENDING, DESCENDING, ANY = "ascending", "descending", "any"


class Refused(Exception):
    """The implementation must refuse this call: its answer is ``{"error": ...}``."""


def java_div(a: int, b: int) -> int:
    """Java ``long`` division: truncates toward zero (PRIM-4)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def segment_id(timestamp: int, segment_interval: int) -> int:
    """``segmentId(ts) = ts / segmentInterval`` with Java truncation (VER-22)."""
    return java_div(timestamp, segment_interval)


def default_segment_interval(history_retention: int) -> int:
    """The segment interval Kafka picks when none is given (VER-23)."""
    hr = history_retention
    if hr <= 60_000:
        return max(hr // 3, 2_000)
    if hr <= 300_000:
        return max(hr // 5, 20_000)
    if hr <= 3_600_000:
        return max(hr // 12, 60_000)
    return max(hr // 24, 300_000)


# --- versions --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Version:
    """A stored (non-latest) version ``[valid_from, valid_to)``; ``value`` None is a tombstone. A degenerate
    tombstone (VER-10) has ``valid_from == valid_to``."""

    valid_from: int
    valid_to: int
    value: bytes | None
    headers: HeaderPairs = ()

    @property
    def degenerate(self) -> bool:
        return self.valid_from == self.valid_to


@dataclass(frozen=True)
class Latest:
    """The latest version of a key: never a tombstone (VER-3)."""

    timestamp: int
    value: bytes
    headers: HeaderPairs = ()


@dataclass(frozen=True)
class VersionedRecord:
    """What a read returns: value, validFrom, validTo (None = the latest, undefined) and headers."""

    value: bytes
    timestamp: int
    valid_to: int | None = None
    headers: HeaderPairs = ()

    def to_json(self, with_headers: bool) -> dict[str, Any]:
        out: dict[str, Any] = {"value": self.value.hex(), "timestamp": self.timestamp, "valid_to": self.valid_to}
        if with_headers:
            out["headers"] = headers_to_json(self.headers)
        return out


@dataclass
class KeyHistory:
    """The versions of one key: the latest (if any) and the stored ones, sorted by validFrom."""

    latest: Latest | None = None
    stored: list[Version] = field(default_factory=list)

    def add(self, version: Version) -> None:
        self.stored.append(version)
        self.stored.sort(key=lambda v: (v.valid_from, v.valid_to))

    def remove(self, version: Version) -> None:
        self.stored.remove(version)


def _int32(value: int) -> bytes:
    return value.to_bytes(4, "big", signed=True)


def _record(version: Version) -> VersionedRecord:
    assert version.value is not None
    return VersionedRecord(version.value, version.valid_from, version.valid_to, version.headers)


def _latest_record(latest: Latest) -> VersionedRecord:
    return VersionedRecord(latest.value, latest.timestamp, None, latest.headers)


# --- the store -------------------------------------------------------------------------------------------


class VersionedStoreModel:
    """One versioned store: its keys' versions, the store-wide observed stream time and the live segments.

    ``registered`` is the set of segment ids the open store knows: a segment is registered when a put
    writes to it, dropped when it expires (VER-30), and after a restart either found again on disk
    (``finds_segments_on_restart``) or forgotten until a put touches it (what Kafka's
    ``LogicalKeyValueSegments.openExisting`` does). Versions in an unregistered segment are invisible.
    """

    def __init__(self, history_retention: int, segment_interval: int | None = None, *,
                 finds_segments_on_restart: bool = True, with_headers: bool = False) -> None:
        if history_retention < 0:
            raise Refused(f"history retention {history_retention} is negative (VER-24)")
        interval = default_segment_interval(history_retention) if segment_interval is None else segment_interval
        if interval < 1:
            raise Refused(f"segment interval {interval} is below 1 ms (VER-24)")
        self.history_retention = history_retention
        self.segment_interval = interval
        self.finds_segments_on_restart = finds_segments_on_restart
        self.with_headers = with_headers
        self.observed = NO_TIMESTAMP
        self.keys: dict[bytes, KeyHistory] = {}
        self.registered: set[int] = set()

    # --- helpers -----------------------------------------------------------------------------------------

    def segment(self, timestamp: int) -> int:
        return segment_id(timestamp, self.segment_interval)

    def segment_of(self, version: Version) -> int:
        """A stored version is filed by its validTo; a degenerate tombstone by its own timestamp (VER-22)."""
        return self.segment(version.valid_to)

    def min_live_segment(self, stream_time: int) -> int:
        return self.segment(stream_time - self.history_retention)

    def _visible(self, history: KeyHistory) -> list[Version]:
        return [v for v in history.stored if self.segment_of(v) in self.registered]

    def _expired(self, timestamp: int) -> bool:
        """A put or delete older than the grace period (= history retention) is refused (VER-26, VER-33)."""
        return timestamp < self.observed - self.history_retention

    def _cleanup(self, stream_time: int) -> None:
        """Drop every registered segment below the first live one, with its versions (VER-30)."""
        bound = self.min_live_segment(stream_time)
        dropped = {sid for sid in self.registered if sid < bound}
        if not dropped:
            return
        self.registered -= dropped
        for history in self.keys.values():
            history.stored = [v for v in history.stored if self.segment_of(v) not in dropped]

    def _live(self, sid: int, stream_time: int) -> bool:
        """``getOrCreateSegmentIfLive``: a live segment is registered on the way (VER-30)."""
        if sid < self.min_live_segment(stream_time):
            return False
        if sid < 0:
            raise Refused(f"segment id {sid} (from a negative timestamp) is reserved (VER-30)")
        self.registered.add(sid)
        return True

    def _row(self, history: KeyHistory, sid: int) -> list[Version]:
        """The versions of this key in segment ``sid``: Kafka's one segment row (VER-4)."""
        return [v for v in self._visible(history) if self.segment_of(v) == sid]

    def _file(self, history: KeyHistory, version: Version) -> None:
        """Write ``version`` into its segment's row, as ``insertAsLatest``/``insertAsEarliest`` do: a gap after
        the row's newest version becomes a tombstone (VER-15), a degenerate row is replaced (VER-10, VER-17)."""
        row = self._row(history, self.segment_of(version))
        if row:
            next_timestamp = max(v.valid_to for v in row)
            if next_timestamp < version.valid_from:
                for v in row:
                    if v.degenerate and v.valid_from == next_timestamp:
                        history.remove(v)
                history.add(Version(next_timestamp, version.valid_from, None))
            for v in row:
                if v.degenerate and v.valid_from in (version.valid_from, version.valid_to) and v in history.stored:
                    history.remove(v)
        history.add(version)

    # --- writes ------------------------------------------------------------------------------------------

    def put(self, key: bytes, value: bytes | None, timestamp: int, headers: HeaderPairs = ()) -> int:
        """``put(key, value, ts)``: the new version's validTo, -1 if it is the latest, ``NOT_PUT`` if expired."""
        if self._expired(timestamp):
            return NOT_PUT
        self.observed = max(self.observed, timestamp)
        return self._do_put(key, value, timestamp, headers, self.observed)

    def delete(self, key: bytes, timestamp: int) -> VersionedRecord | None:
        """``delete(key, ts)``: ``get(key, ts)`` before the stream time moves, then a tombstone put (VER-33)."""
        if self._expired(timestamp):
            return None
        existing = self.get_as_of(key, timestamp)
        self.observed = max(self.observed, timestamp)
        self._do_put(key, None, timestamp, (), self.observed)
        return existing

    def _do_put(self, key: bytes, value: bytes | None, ts: int, headers: HeaderPairs, stream_time: int) -> int:
        self._cleanup(stream_time)
        history = self.keys.setdefault(key, KeyHistory())
        latest = history.latest
        if latest is not None and ts >= latest.timestamp:
            if ts > latest.timestamp and self._live(self.segment(ts), stream_time):
                # The previous latest ends at ts and is filed in ts's segment (VER-28).
                self._file(history, Version(latest.timestamp, ts, latest.value, latest.headers))
            # A tombstone never is a latest value; at the latest's own timestamp it is recorded nowhere (VER-34).
            history.latest = None if value is None else Latest(ts, value, headers)
            return VALID_TO_UNDEFINED
        # Older than the latest (or no latest): walk this key's rows from the newest segment down to ts's (VER-29).
        rows: dict[int, list[Version]] = {}
        for version in self._visible(history):
            rows.setdefault(self.segment_of(version), []).append(version)
        found = latest.timestamp if latest is not None else None
        for sid in sorted((s for s in rows if s >= self.segment(ts)), reverse=True):
            row = rows[sid]
            if max(v.valid_to for v in row) <= ts:
                break
            if min(v.valid_from for v in row) <= ts:
                return self._put_into_row(history, row, value, ts, headers, stream_time)
            found = min(v.valid_from for v in row)
            if found < stream_time - self.history_retention:
                return VALID_TO_UNDEFINED  # older than the retained history (reachable during restore only)
        if found is None:
            return self._put_with_nothing_later(history, value, ts, headers, stream_time)
        if not self._live(self.segment(found), stream_time):
            return VALID_TO_UNDEFINED
        self._file(history, Version(ts, found, value, headers))
        return found

    def _put_into_row(self, history: KeyHistory, row: list[Version], value: bytes | None, ts: int,
                      headers: HeaderPairs, stream_time: int) -> int:
        """The version spanning ``ts`` is replaced (same timestamp) or split at ``ts`` (VER-29)."""
        containing = next((v for v in row if v.valid_from <= ts < v.valid_to), None)
        if containing is None:
            raise AssertionError(f"the model's row has a gap at {ts}: {row}")  # rows are contiguous (VER-7, VER-15)
        history.remove(containing)
        if containing.valid_from == ts:
            history.add(replace(containing, value=value, headers=headers))
            return containing.valid_to
        if self._live(self.segment(ts), stream_time):  # the older part now ends at ts, in ts's segment
            self._file(history, replace(containing, valid_to=ts))
        history.add(Version(ts, containing.valid_to, value, headers))
        return containing.valid_to

    def _put_with_nothing_later(self, history: KeyHistory, value: bytes | None, ts: int, headers: HeaderPairs,
                                stream_time: int) -> int:
        if value is not None:
            history.latest = Latest(ts, value, headers)
            return VALID_TO_UNDEFINED
        # A tombstone with nothing later: the row of its own segment records it (VER-10, VER-29).
        sid = self.segment(ts)
        if not self._live(sid, stream_time):
            return VALID_TO_UNDEFINED
        row = self._row(history, sid)
        if not row:
            history.add(Version(ts, ts, None))
            return VALID_TO_UNDEFINED
        next_timestamp = max(v.valid_to for v in row)
        if next_timestamp != ts:
            for v in row:
                if v.degenerate and v.valid_from == next_timestamp:
                    history.remove(v)
            history.add(Version(next_timestamp, ts, None))
        return VALID_TO_UNDEFINED

    # --- reads -------------------------------------------------------------------------------------------

    def get(self, key: bytes) -> VersionedRecord | None:
        """``get(key)``: the latest version, without validTo (VER-31)."""
        history = self.keys.get(key)
        if history is None or history.latest is None:
            return None
        return _latest_record(history.latest)

    def get_as_of(self, key: bytes, as_of: int) -> VersionedRecord | None:
        """``get(key, asOf)``: the version valid at ``asOf``; beyond history retention only the latest (VER-32)."""
        history = self.keys.get(key)
        if history is None:
            return None
        if history.latest is not None and history.latest.timestamp <= as_of:
            return _latest_record(history.latest)
        if as_of < self.observed - self.history_retention:
            return None
        for version in self._visible(history):
            if version.valid_from <= as_of < version.valid_to:
                return None if version.value is None else _record(version)
        return None

    def get_versions(self, key: bytes, from_ms: int, to_ms: int, order: str) -> list[VersionedRecord]:
        """KIP-968 ``get(key, from, to, order)``: versions with validFrom <= to and validTo > from, from the latest
        store and the segments up to the one of ``to``; beyond history retention only the latest."""
        history = self.keys.get(key)
        if history is None:
            return []
        found: list[VersionedRecord] = []
        if to_ms >= self.observed - self.history_retention:
            last = self.segment(to_ms)
            found = [_record(v) for v in self._visible(history)
                     if v.value is not None and not v.degenerate and self.segment_of(v) <= last
                     and v.valid_from <= to_ms and v.valid_to > from_ms]
        if history.latest is not None and history.latest.timestamp <= to_ms:
            found.append(_latest_record(history.latest))
        return found if order == ASCENDING else found[::-1]

    # --- restore and lifecycle ---------------------------------------------------------------------------

    def restore_batch(self, records: Iterable[Record]) -> None:
        """Kafka's ``restoreBatch``: records older than the grace period (per record) are skipped, the rest are put
        with the stream time of the end of the batch (VER-25, RST)."""
        batch = list(records)
        end_of_batch = max([self.observed, *(r.timestamp for r in batch)])
        for record in batch:
            if self._expired(record.timestamp):
                continue
            self.observed = max(self.observed, record.timestamp)
            headers = record.headers if self.with_headers else ()
            self._do_put(record.key, record.value, record.timestamp, headers, end_of_batch)

    def restore(self, records: list[Record], batch_size: int) -> None:
        for start in range(0, len(records), batch_size):
            self.restore_batch(records[start:start + batch_size])

    def restart(self) -> None:
        """Reopen a persistent store: the data stays, the observed stream time starts again at -1 (VER-25)."""
        self.observed = NO_TIMESTAMP
        self.registered = ({self.segment_of(v) for h in self.keys.values() for v in h.stored}
                           if self.finds_segments_on_restart else set())

    def wipe(self) -> None:
        self.observed = NO_TIMESTAMP
        self.keys = {}
        self.registered = set()

    def stored_value(self, value: bytes, headers: HeaderPairs) -> bytes:
        """A version's value bytes: raw; with headers ``[varint size][header bytes][raw]`` (KIP-1271, tentative)."""
        if not self.with_headers:
            return value
        section = header_bytes(headers)
        return zigzag_varint(len(section)) + section + value

    def physical_rows(self) -> dict[bytes, bytes]:
        """The RocksDB rows of the store (VER-1..VER-8): the latest-value rows under the reserved prefix ``FF``×8,
        ``[validFrom][value]``; one row per key and segment, ``[next][min]``, the index newest first
        ``[validFrom][size]`` (-1 for a tombstone), then the values oldest first."""
        rows: dict[bytes, bytes] = {}
        for key, history in self.keys.items():
            if history.latest is not None:
                latest = history.latest
                rows[int64(-1) + key] = int64(latest.timestamp) + self.stored_value(latest.value, latest.headers)
            by_segment: dict[int, list[Version]] = {}
            for version in history.stored:
                by_segment.setdefault(self.segment_of(version), []).append(version)
            for sid, row in by_segment.items():
                newest_first = sorted(row, key=lambda v: v.valid_from, reverse=True)
                values = [b"" if v.value is None else self.stored_value(v.value, v.headers) for v in newest_first]
                index = b"".join(int64(v.valid_from) + _int32(-1 if v.value is None else len(data))
                                 for v, data in zip(newest_first, values, strict=True))
                head = int64(max(v.valid_to for v in row)) + int64(min(v.valid_from for v in row))
                rows[int64(sid) + key] = head + index + b"".join(reversed(values))
        return rows

    def snapshot(self) -> VersionedStoreModel:
        return copy.deepcopy(self)

    def signature(self, keys: Iterable[bytes]) -> list[Any]:
        """Everything reads can show of ``keys`` with no history expired: to tell crash states apart."""
        return [(k, self.get(k), self.get_versions(k, INT64_MIN, INT64_MAX, ASCENDING)) for k in sorted(keys)]


def changelog_record(key: bytes, value: bytes | None, timestamp: int, headers: HeaderPairs = ()) -> Record:
    """What the change-logging layer sends for a put or a delete: the raw value at the version's timestamp,
    sent even when the put was refused as expired (VER changelog note)."""
    return Record(key, value, timestamp, headers)


#: SESS-1, SESS-11's case of where a family's rows are by segment: not this family's (its keys are checked by its own
#: layout cases).
rows_by_segment = None


def probe(key: str) -> Probe:
    """The family's probe for the store rules checked at every family (probes.Probe), writing ``key`` (hex); VS-37 and VS-38 are its own."""
    return Probe(VERSIONED, {"history_retention_ms": 10_000},
                 ("versioned_store.put", {"key": key, "value": "aa", "timestamp": 1}),
                 (("versioned_store.get", {"key": key}), ("versioned_store.get", {"key": key, "as_of": 1}),
                  ("versioned_store.get_versions", {"key": key})),
                 key, (("versioned_store.delete", {"key": key, "timestamp": 2}),),
                 remove=("versioned_store.delete", {"key": key, "timestamp": 2}),
                 closed_store_rules=("KV-12", "VS-37"), position_rules=("KV-54", "VS-38"),
                 # Its position row after a commit is VS-38's and OFF-5's; its rows before any commit are checked, for
                 # KV-56 and KV-63, by a versioned case of their own, so that a listed bug of one hides neither.
                 position_row_rules=("VS-38", "OFF-5"))


# --- the cases at the family's legacy files, zero-byte values and restores (test_store_rules_family_places) -------

#: OPS-2: the probe's first read (``get``) answers a zero-byte value as a record of zero bytes at the write's time.
FAMILY_PLACES: FamilyPlaces | None = FamilyPlaces(("record", {"value": "", "timestamp": 1, "valid_to": None}))


# --- the paired machine (kstate conformance --model: the implementation and the model step by step) ------------


VERSION_TIMES = st.sampled_from([0, 1, 5, 999, 1000, 60_000]) | st.integers(min_value=0, max_value=200_000)


class VersionedPair(StorePair):
    """A versioned key-value store on RocksDB (Kafka has no in-memory one); drawn: change-logging, history retention.
    Never reopened (VS-14: Kafka forgets a reopened store's segments); closed once, at the end, rows compared."""

    family_ops = ("store.open", "versioned_store.put", "versioned_store.get", "versioned_store.delete",
                  "versioned_store.get_versions")

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.written: set[bytes] = set()

    @initialize(logging=st.sampled_from([True, True, False]),
                history_retention_ms=st.sampled_from([0, 1000, 60_000, 300_000]))
    def start(self, logging: bool, history_retention_ms: int) -> None:
        excluded("VS-14")  # no restart rule: restart below is a plain method, not a rule
        self.open_options = {"logging": logging, "caching": False,
                             "options": {"history_retention_ms": history_retention_ms}}
        self.open_store()

    def restart(self, commit: bool = True) -> None:
        """Not a rule here (VS-14)."""

    def on_disk(self, image: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        excluded("VS-38")
        # The row's presence is compared (only a commit writes it: KV-56, KV-63), its content is not.
        return {path: {cf: [(k, "present" if k == b"position" else v) for k, v in rows] if cf == "offsets"
                       else rows for cf, rows in families.items()} for path, families in image.items()}

    def some_key(self, data: st.DataObject) -> bytes:
        keys = sorted(self.written)
        return data.draw(st.sampled_from(keys) | KEYS if keys else KEYS, label="key")

    @rule(key=KEYS, timestamp=VERSION_TIMES, data=st.data())
    def put(self, key: bytes, timestamp: int, data: st.DataObject) -> None:
        excluded("VS-19")  # timestamps drawn non-negative
        value = data.draw(st.none() | RAW, label="value")
        self.on_store("versioned_store.put", key=key.hex(), value=hex_or_none(value), timestamp=timestamp)
        self.written.add(key)

    @rule(timestamp=VERSION_TIMES, data=st.data())
    def delete(self, timestamp: int, data: st.DataObject) -> None:
        excluded("VS-10")
        self.agree("versioned_store.delete", {"handle": self.handle, "key": self.some_key(data).hex(),
                                              "timestamp": timestamp},
                   normalise=lambda out: {"record": None if out["record"] is None else
                                          {k: v for k, v in out["record"].items() if k != "valid_to"}})

    @rule(as_of=st.none() | VERSION_TIMES, data=st.data())
    def get(self, as_of: int | None, data: st.DataObject) -> None:
        payload: dict[str, Any] = {"key": self.some_key(data).hex()}
        if as_of is not None:
            payload["as_of"] = as_of
        self.on_store("versioned_store.get", **payload)

    @rule(bounds=st.tuples(st.none() | VERSION_TIMES, st.none() | VERSION_TIMES),
          order=st.sampled_from(["any", "ascending", "descending"]), data=st.data())
    def get_versions(self, bounds: tuple[int | None, int | None], order: str, data: st.DataObject) -> None:
        excluded("VS-11")  # from <= to
        lower, upper = bounds
        if lower is not None and upper is not None and lower > upper:
            lower, upper = upper, lower
        self.on_store("versioned_store.get_versions", key=self.some_key(data).hex(), from_ms=lower, to_ms=upper,
                      order=order)

    def read_everything(self, handle: str) -> None:
        for key in sorted(self.written):
            self.agree("versioned_store.get_versions", {"handle": handle, "key": key.hex(), "order": "ascending"})

    @invariant()
    def contents_agree(self) -> None:
        if self.handle is not None:
            self.read_everything(self.handle)


register(PairedFamily(
    "versioned", VersionedPair, "versioned_store", (VERSIONED,), ("rocksdb",),
    ("VS-6", "VS-7", "VS-8", "VS-9", "VS-12", "VS-18", "CL-1", "RST-1", "OFF-8"),
    "A versioned store on RocksDB answers as the model does and leaves the same rows (no reopen: VS-14).",
))
