"""An executable model of the session store family (spec/session-store.md SS-*, session-keys.md, changelog.md).

Written from the spec and Kafka's javadoc, independently of the reference implementation, and speaking only
the neutral vocabulary's values (bytes, ints, header pairs). Sessions are a sorted map of
``(key, end, start) -> aggregate``; the model predicts, for a ``session`` or ``session_with_headers`` store on
RocksDB or in memory:

* ``findSessions`` with Kafka's overlap rule (``end >= earliestSessionEndTime and start <= latestSessionStartTime``)
  and ordering: RocksDB segment by segment (segments by their end-time id), within one by the store key
  ``[key][end][start]`` as bytes; in memory by end, then key, then start DESCENDING (the iterator walks each key's
  start map backwards); ``backward*`` the exact reverse;
* retention by observed stream time: reads hide a session whose end is ``<= observed - retention``; RocksDB
  drops whole segments below ``segmentId(observed - retention)`` and skips a put into one; the in-memory store
  skips a put whose end is ``<= observed - retention``;
* the changelog records (key ``[key][end][start]``, the raw aggregate, the record context's timestamp; a
  tombstone for ``remove`` and a null put; the header-aware type logs the stored headers);
* RocksDB segments by name (``<store>.<segment id * interval>``) with their column families, the lazy
  upgrade of every segment to the header-aware format, clean close, crash and restore.

Kafka keeps the observed stream time in memory only: a reopened RocksDB store starts again at -1, so sessions
hidden by retention but still in a live segment can be read again until stream time advances (modelled).

Beside the model, the suite's helpers for the family's stores (:class:`SessionStore`, :func:`open_session_store`).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, rule

from kstate_conformance import store_types as types
from kstate_conformance.bytes_model import decode_header_bytes, header_bytes, int64, read_zigzag_varint, zigzag_varint
from kstate_conformance.models import kv, life
from kstate_conformance.models.kv import (
    ChangelogKeeper,
    Context,
    HeaderPairs,
    Record,
    Refused,
    SegmentedRestore,
)
from kstate_conformance.paired import excluded
from kstate_conformance.paired_stores import HEADERS as HEADER_PAIRS
from kstate_conformance.paired_stores import KEYS, RAW, PairedFamily, StorePair, hex_or_none, register, stored_values
from kstate_conformance.probes import FamilyPlaces, Probe, RestoredRows, RowsBySegment

if TYPE_CHECKING:
    from kstate_conformance.harness import Kit, Store

SESSION = "session"
HEADERS = "session_with_headers"
# The backends and the family names every store has (default, offsets) are the key-value model's.
ROCKSDB, MEMORY, BACKENDS = kv.ROCKSDB, kv.MEMORY, kv.BACKENDS
CF_DEFAULT, CF_OFFSETS = kv.CF_DEFAULT, kv.CF_OFFSETS
STORE_TYPES = (SESSION, HEADERS)
CF_HEADERS = "sessionKeyValueWithHeaders"
DATA_COLUMN_FAMILIES = (CF_DEFAULT, CF_HEADERS)
HOME_CF = {SESSION: CF_DEFAULT, HEADERS: CF_HEADERS}
#: LAY-5, LAY-6: each type, the column families a fresh database of it opens, and the one its data is in.
LAYOUT_COLUMN_FAMILIES = tuple((t, sorted({CF_DEFAULT, CF_OFFSETS, HOME_CF[t]}), HOME_CF[t]) for t in STORE_TYPES)
#: LAY-7: a type over data in its legacy column family opens in upgrade mode, with the conversion named.
LEGACY_UPGRADES = ((HEADERS, CF_DEFAULT, "convert_to_header_format"),)
#: LAY-8: a column family of another type that a database of the type refuses.
FOREIGN_COLUMN_FAMILIES = ((SESSION, CF_HEADERS),)
#: TSKV-5, LAY-7, LAY-8: the upgrades in place, a case each: (the type written, the type then opened over it, a stored
#: value the older wrote, what the newer reads for it), hex: a session aggregate gets ``00`` (no headers) only, no timestamp (LAY-7).
IN_PLACE_UPGRADES = ((SESSION, HEADERS, "aa", "00aa"),)


# --- the family's entry in the suite's table of families (store_types.FAMILIES; issue 33) ---------------------

#: Its store types written from spec/ops.md's text, as the rest of the suite reads them (``store_types.SESSION``...).
FAMILY = types.StoreFamily(
    name="session", order=3, types=STORE_TYPES, op_prefix="session_store.", segmented=True, codec_ops="session",
    rule_prefixes=("SS", "SESS"), rule_terms=r"\bsession|\bSS-\d|segment", code_names=r"SESSION",
    module_part="session", headers_types=(HEADERS,),
    spellings=(("SESSION", SESSION), ("SESSION_WITH_HEADERS", HEADERS), ("SESSION_TYPES", STORE_TYPES)))


# --- the changelog cases over every family (CL-*): what a record of the family's store looks like ---------------

#: CL-2, CL-6: a write is logged at its context's timestamp (a session value keeps none, CL-8).
LOGS_AT_CONTEXT_TIME = True
#: The writes a changelog record of a tombstone comes from (CL-7).
TOMBSTONE_WRITES = ("put", "remove")
#: The types the consistency-header case (CL-12) tries beyond the key-value ones: a changelog key with times in it.
CONSISTENCY_CASE_TYPES = (SESSION,)
#: CL-1: a write the family does not have, refused.
UNDEFINED_CHANGELOG_WRITES = ((SESSION, "delete"),)


def changelog_stored_value(store_type: str, value: bytes, ts: int, headers: Sequence[tuple[str, bytes | None]]) -> bytes:
    """The bytes a session store of ``store_type`` holds: the value, after the headers and no timestamp (HV-6)."""
    if store_type == SESSION:
        return value
    if store_type == HEADERS:
        hdr = header_bytes(headers)
        return zigzag_varint(len(hdr)) + hdr + value
    raise types.UnknownStoreTypeError(store_type, "session.changelog_stored_value")


def changelog_key(key: bytes, start: int, end: int, seqnum: int) -> bytes:
    """A changelog record's key (CL-6): the key, the session's end and its start, big-endian."""
    return key + int64(end) + int64(start)


def changelog_shape(start: int, end: int) -> dict[str, Any]:
    """The fields a changelog write of the family takes beyond key and value: the session's start and end."""
    return {"start": start, "end": end}


def op_examples(handle: str) -> dict[str, dict[str, Any]]:
    """A valid input of each of the family's operations (OPS-2) on the store ``handle`` names, for the cases that
    confuse one field at a time (OPS-3)."""
    return {
        "session_store.put": {"handle": handle, "key": "01", "start": 0, "end": 5, "value": "02"},
        "session_store.remove": {"handle": handle, "key": "01", "start": 0, "end": 5},
        "session_store.fetch_session": {"handle": handle, "key": "01", "start": 0, "end": 5},
        "session_store.find_sessions": {"handle": handle, "key_from": "01", "key_to": "02", "earliest_end": 0,
                                        "latest_start": 5, "backward": False},
        "session_store.fetch": {"handle": handle, "key_from": "01", "key_to": None, "backward": True},
    }


#: The rules a reopen over the segments left after a fault checks beyond LAY-12 and LAY-3: SS-10, every segment
#: found opens.
SEGMENT_REOPEN_RULES = ("SS-10",)


def segmented_options(interval_ms: int) -> dict[str, Any]:
    """The options of a RocksDB store of ten segments of ``interval_ms`` each (LAY-3, SS-20)."""
    return {"retention_ms": 10 * interval_ms, "segment_interval_ms": interval_ms}


def put_at(key: str, time: int) -> tuple[str, dict[str, Any]]:
    """The operation and input that write ``key`` (hex) as its own value in the session ``[time, time]``."""
    return "session_store.put", {"key": key, "start": time, "end": time, "value": key}


def read_every(key_from: str, key_to: str) -> tuple[str, dict[str, Any]]:
    """The operation and input answering every session of a key in ``key_from``..``key_to`` (hex), its key first."""
    return "session_store.fetch", {"key_from": key_from, "key_to": key_to}
INT64_MAX = (1 << 63) - 1
NO_TIMESTAMP = -1
MIN_SEGMENT_INTERVAL = 60_000

Session = tuple[bytes, int, int]  # (key, end, start): the store key's order
Entry = tuple[bytes, int, int, bytes]  # (key, start, end, value) as the ops answer them
Segment = dict[str, dict[bytes, bytes]]


def default_segment_interval(retention_ms: int) -> int:
    """``RocksDbSessionBytesStoreSupplier.segmentIntervalMs``: ``max(retention / 2, 60 000)`` (SS-11)."""
    return max(retention_ms // 2, MIN_SEGMENT_INTERVAL)


def java_long(value: int) -> int:
    """``value`` wrapped as a Java ``long`` (the live bound observed - retention + 1 can overflow, SS-13)."""
    return (value + (1 << 63)) % (1 << 64) - (1 << 63)


def java_div(a: int, b: int) -> int:
    """Java's ``long / long``: truncates toward zero (``segmentId`` of a negative time is 0, not -1)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


# --- bytes ---------------------------------------------------------------------------------------------------


def store_key(key: bytes, start: int, end: int) -> bytes:
    """``SessionKeySchema.toBinary``: ``[key][end int64 BE][start int64 BE]`` (end first, SESS-1, SS-1)."""
    return key + int64(end) + int64(start)


def split_store_key(data: bytes) -> tuple[bytes, int, int]:
    """``(key, start, end)`` of a store key."""
    n = len(data) - 16
    end = int.from_bytes(data[n : n + 8], "big", signed=True)
    return data[:n], int.from_bytes(data[n + 8 :], "big", signed=True), end


def headers_value(aggregate: bytes, headers: HeaderPairs) -> bytes:
    """``AggregationWithHeaders``: ``[varint size][header bytes][aggregate]`` (no timestamp, SS-30)."""
    section = header_bytes(headers)
    return zigzag_varint(len(section)) + section + aggregate


def split_headers_value(value: bytes) -> tuple[bytes, HeaderPairs]:
    size, pos = read_zigzag_varint(value, 0)
    return value[pos + size :], decode_header_bytes(value[pos : pos + size])


def legacy_to_headers(value: bytes) -> bytes:
    """``HeadersBytesStore.convertToHeaderFormat``: a plain aggregate gains empty headers, ``[0x00][aggregate]`` (SS-32)."""
    return b"\x00" + value


def record_for(store_type: str, key: bytes, start: int, end: int, value: bytes | None, context: Context) -> Record:
    """The changelog record of writing ``value`` (the stored layout; None = tombstone) under a session (SS-26, SS-27)."""
    if value is None:
        return Record(store_key(key, start, end), None, context.timestamp, context.headers if store_type == HEADERS else ())
    if store_type == HEADERS:
        aggregate, headers = split_headers_value(value)
        return Record(store_key(key, start, end), aggregate, context.timestamp, headers)
    return Record(store_key(key, start, end), value, context.timestamp)


def restored_value(store_type: str, record: Record) -> bytes | None:
    """What a store of ``store_type`` keeps when it restores ``record`` (SS-24, SS-34)."""
    if record.value is None:
        return None
    if store_type == HEADERS:
        return headers_value(record.value, record.headers)
    return record.value


# --- ordering and the overlap rule ---------------------------------------------------------------------------


def overlaps(end: int, start: int, earliest_end: int, latest_start: int) -> bool:
    """``findSessions``: a session overlaps ``[earliestSessionEndTime, latestSessionStartTime]``, bounds inclusive (SS-5)."""
    return end >= earliest_end and start <= latest_start


def key_in_range(key: bytes, key_from: bytes | None, key_to: bytes | None) -> bool:
    return (key_from is None or key >= key_from) and (key_to is None or key <= key_to)


@dataclass
class Options:
    retention_ms: int = 10_000
    segment_interval_ms: int | None = None
    logging: bool = True

    @property
    def interval(self) -> int:
        return self.segment_interval_ms if self.segment_interval_ms is not None else default_segment_interval(self.retention_ms)


class SessionModel(SegmentedRestore, ChangelogKeeper):
    """One logical session store across its lifetime: writes, reads, restarts, crashes, upgrades, restores.

    RocksDB state is ``segments``: segment id -> column family -> store key -> stored value (what a clean close
    persists). In-memory state is ``sessions``. ``changelog`` holds every record ever logged.
    """

    options: Options

    def __init__(self, store_type: str, backend: str, options: Options | None = None, name: str = "store") -> None:
        if store_type not in STORE_TYPES or backend not in BACKENDS:
            raise ValueError(f"the model has no {store_type} store on {backend}")
        self.store_type = store_type
        self.backend = backend
        self.options = options or Options()
        self.name = name
        self.segments: dict[int, Segment] = {}
        self.legacy_mode: dict[int, bool] = {}
        self.sessions: dict[Session, bytes] = {}
        self.observed = NO_TIMESTAMP
        self.changelog: list[Record] = []
        self.pending: list[Record] = []
        #: The changelog offset each RocksDB segment database holds (a segment created since a commit holds none).
        self.segment_offsets: dict[int, int | None] = {}
        self.crash_candidates: list[dict[int, Segment]] = []
        #: The segments and their offsets at the last open or clean close: where a crash may roll a store back to
        #: when its commits are not durable (KV-50; Kafka's store, KV-67).
        self.durable: tuple[dict[int, Segment], dict[int, int | None]] = ({}, {})
        self.context = Context()
        #: The store's life state, as models.life names it: what the life table answers for (KV-12, SS-37).
        self.life = "closed"

    # --- lifecycle -------------------------------------------------------------------------------------------

    @property
    def is_open(self) -> bool:
        return self.life == "open"

    @property
    def retention(self) -> int:
        return self.options.retention_ms

    @property
    def interval(self) -> int:
        return self.options.interval

    def segment_id(self, timestamp: int) -> int:
        return java_div(timestamp, self.interval)

    def segment_name(self, segment_id: int) -> str:
        return f"{self.name}.{segment_id * self.interval}"

    def open(self, store_type: str | None = None) -> None:
        """Open (or reopen, possibly as the header-aware type); stream time starts again at -1 (SS-12, SS-32)."""
        if store_type is not None:
            if (self.store_type, store_type) not in ((SESSION, SESSION), (HEADERS, HEADERS), (SESSION, HEADERS)):
                raise Refused(f"cannot reopen a {self.store_type} store as {store_type}")
            if self.backend == ROCKSDB and store_type != self.store_type and any(
                    self.segment_offsets.get(segment_id) is not None and HOME_CF[store_type] not in segment
                    and not any(segment.values()) for segment_id, segment in self.segments.items()):
                # KV-57 (4), per segment database: committed offsets, no data family of the new type, no data.
                raise Refused("offsets ahead of data in a segment")
            self.store_type = store_type
        self.observed = NO_TIMESTAMP
        if self.backend == ROCKSDB:
            for segment_id, segment in self.segments.items():
                self._open_segment(segment_id, segment)
        else:
            self.sessions = {}
        self.life = "open"
        self.crash_candidates = [copy.deepcopy(self.segments)]
        self._note_durable()

    def _note_durable(self) -> None:
        self.durable = (copy.deepcopy(self.segments), dict(self.segment_offsets))

    def _open_segment(self, segment_id: int, segment: Segment) -> None:
        # A header-aware segment with a non-empty plain family reads it converted (dual column families).
        segment.setdefault(CF_DEFAULT, {})
        if self.store_type == HEADERS:
            segment.setdefault(CF_HEADERS, {})
            self.legacy_mode[segment_id] = bool(segment[CF_DEFAULT])
        else:
            if CF_HEADERS in segment:
                raise Refused("a plain session store cannot open a header-aware segment")
            self.legacy_mode[segment_id] = False

    def close(self) -> None:
        """A clean close ends the store as a crash does, but every segment as it stands has survived it."""
        if not self.is_open:
            return
        self.crash()
        self.life = "closed"  # a clean close, not the crash it is written as
        self.crash_candidates = [copy.deepcopy(self.segments)]
        self._note_durable()

    def crash(self) -> None:
        if not self.is_open:
            return
        self.life = life.after_crash(self.backend)
        if self.backend == MEMORY:
            self.sessions = {}

    def commit(self, offset: int | None) -> None:
        """Every open segment database stores ``offset``; the in-memory store keeps none."""
        self._require_open("commit")
        if self.backend == ROCKSDB:
            self.segment_offsets = {segment_id: offset for segment_id in self.segments}
        self.crash_candidates = [copy.deepcopy(self.segments)]

    @property
    def committed(self) -> int | None:
        """The store's committed offset: the newest segment's that holds one, None if none does (SS-23)."""
        held = [(s, o) for s, o in self.segment_offsets.items() if s in self.segments and o is not None]
        return max(held)[1] if held else None

    def adopt(self, observed: dict[str, Segment], rolled_back: bool = False) -> bool:
        """After a crash: accept the segments ``observed`` if their rows are those of a state a crash may leave.

        A segment's database is created, and an expired one deleted, at once, while rows wait for a commit: so a
        crash leaves the segments that existed when it happened, each with its rows of the last commit or of a
        later write. Only rows are compared (a created segment may be empty); the model takes ``observed``.
        ``rolled_back`` (a crash the reopen did not detect) admits only the state of the last open or clean close,
        with its offsets (KV-50, KV-52); otherwise that state is the last candidate."""
        def rows(dump: dict[str, Segment]) -> dict[str, Segment]:
            return {name: cfs for name, cfs in dump.items() if cfs}

        durable, offsets = self.durable
        kept = {segment_id: durable[segment_id] for segment_id in self.segments if segment_id in durable}
        if self.backend == ROCKSDB and rows(self._dump_of(kept)) == rows(observed) and (
                rolled_back or not any(rows(self._dump_of({s: c[s] for s in self.segments if s in c})) == rows(observed)
                                       for c in self.crash_candidates)):
            self.segments = {java_div(int(name.rsplit(".", 1)[1]), self.interval): copy.deepcopy(cfs)
                             for name, cfs in observed.items()}
            self.segment_offsets = {s: o for s, o in offsets.items() if s in self.segments}
            self.crash_candidates = [copy.deepcopy(self.segments)]
            return True
        if rolled_back:
            return False
        for candidate in self.crash_candidates:
            kept = {segment_id: candidate[segment_id] for segment_id in self.segments if segment_id in candidate}
            if rows(self._dump_of(kept)) == rows(observed):
                self.segments = {java_div(int(name.rsplit(".", 1)[1]), self.interval): copy.deepcopy(cfs)
                                 for name, cfs in observed.items()}
                self.crash_candidates = [copy.deepcopy(self.segments)]
                return True
        return False

    def _require_open(self, op: str) -> None:
        """Refused where the life table refuses ``op`` in the model's state (KV-12, WS-*, SS-37)."""
        life.require(self.life, op, Refused)

    def _note_write(self) -> None:
        self.crash_candidates.append(copy.deepcopy(self.segments))

    # --- RocksDB segments ------------------------------------------------------------------------------------

    def _min_live_segment(self) -> int:
        return self.segment_id(self.observed - self.retention)

    def _live_segment(self, segment_id: int) -> Segment | None:
        """``getOrCreateSegmentIfLive`` then ``cleanupExpiredSegments``: the segment, or None when expired (SS-14, SS-15).

        The plain store's segments (``AbstractSegments``) clean up only after a live lookup; the header-aware
        store's (``SessionSegmentsWithHeaders``) after every lookup, an expired write's too (SS-15)."""
        min_live = self._min_live_segment()
        segment: Segment | None = None
        if segment_id >= min_live:
            if segment_id not in self.segments:
                self.segments[segment_id] = {}
                self._open_segment(segment_id, self.segments[segment_id])
            segment = self.segments[segment_id]
        elif self.store_type != HEADERS:
            return None
        for old in [s for s in self.segments if s < min_live]:
            del self.segments[old]
            self.legacy_mode.pop(old, None)
            self.segment_offsets.pop(old, None)
        return segment

    def _segment_write(self, segment: Segment, key: bytes, value: bytes | None) -> None:
        home = HOME_CF[self.store_type]
        if self.store_type == HEADERS:
            segment[CF_DEFAULT].pop(key, None)
        if value is None:
            segment[home].pop(key, None)
        else:
            segment[home][key] = value

    def _segment_rows(self, segment_id: int) -> dict[bytes, bytes]:
        segment = self.segments[segment_id]
        if self.store_type == HEADERS:
            rows = {k: legacy_to_headers(v) for k, v in segment.get(CF_DEFAULT, {}).items()} if self.legacy_mode.get(segment_id) else {}
            rows.update(segment.get(CF_HEADERS, {}))
            return rows
        return dict(segment.get(CF_DEFAULT, {}))

    # --- the SessionStore operations -------------------------------------------------------------------------

    def _memory_purge(self) -> None:
        min_live = max(0, java_long(self.observed - self.retention + 1))
        for session in [s for s in self.sessions if s[1] < min_live]:
            del self.sessions[session]

    def put(self, key: bytes, start: int, end: int, value: bytes | None) -> None:
        """``put(Windowed(key, SessionWindow(start, end)), value)``; a null value removes (SS-2..SS-4, SS-14, SS-17)."""
        self._require_open("write")
        if start > end or start < 0:
            raise Refused(f"no session window [{start}, {end}]")
        sk = store_key(key, start, end)
        if self.backend == ROCKSDB:
            self.observed = max(self.observed, end)
            segment = self._live_segment(self.segment_id(end))
            if segment is not None:
                self._segment_write(segment, sk, value)
            self._note_write()
        else:
            self._memory_purge()
            self.observed = max(self.observed, end)
            if end > self.observed - self.retention:
                if value is None:
                    self.sessions.pop((key, end, start), None)
                else:
                    self.sessions[(key, end, start)] = value
        self._log(record_for(self.store_type, key, start, end, value, self.context))

    def remove(self, key: bytes, start: int, end: int) -> None:
        """``remove``: deletes the session (no expiry check) and logs a tombstone; RocksDB advances stream time."""
        self._require_open("write")
        if start > end or start < 0:
            raise Refused(f"no session window [{start}, {end}]")
        if self.backend == ROCKSDB:
            self.observed = max(self.observed, end)
            segment_id = self.segment_id(end)
            if segment_id in self.segments:
                self._segment_write(self.segments[segment_id], store_key(key, start, end), None)
                self._note_write()
        else:
            self.sessions.pop((key, end, start), None)
        self._log(record_for(self.store_type, key, start, end, None, self.context))

    def _visible(self) -> dict[Session, bytes]:
        """Every session reads can see (retention applied, SS-13, SS-17), by ``(key, end, start)``."""
        min_live = java_long(self.observed - self.retention + 1)
        if self.backend == MEMORY:
            self._memory_purge()
            return {s: v for s, v in self.sessions.items() if s[1] >= min_live}
        out: dict[Session, bytes] = {}
        for segment_id in self.segments:
            for sk, value in self._segment_rows(segment_id).items():
                key, start, end = split_store_key(sk)
                if end >= min_live:
                    out[(key, end, start)] = value
        return out

    def _order(self, session: Session) -> tuple[object, ...]:
        key, end, start = session
        if self.backend == ROCKSDB:
            return (self.segment_id(end), store_key(key, start, end))
        # InMemorySessionStoreIterator walks end -> key ascending, then a key's starts DESCENDING.
        return (end, key, -start)

    def fetch_session(self, key: bytes, start: int, end: int) -> bytes | None:
        """``fetchSession(key, start, end)``: the exact session, or None (also when expired, SS-16)."""
        self._require_open("read")
        value = self._visible().get((key, end, start))
        if value is not None and self.backend == ROCKSDB and self.store_type == HEADERS:
            segment_id = self.segment_id(end)
            sk = store_key(key, start, end)
            if sk not in self.segments[segment_id][CF_HEADERS]:
                self._segment_write(self.segments[segment_id], sk, value)  # a get migrates the legacy row
                self._note_write()
        return value

    def find_sessions(self, key_from: bytes | None, key_to: bytes | None, earliest_end: int, latest_start: int,
                      backward: bool = False, single: bool = False) -> list[Entry]:
        """``findSessions`` / ``backwardFindSessions`` over ``[key_from, key_to]`` (None = unbounded); ``single``:
        the one-key form (``key_from`` == ``key_to``)."""
        self._require_open("read")
        if single and self.backend == ROCKSDB and latest_start < 0:
            # upperRangeFixedSize builds SessionWindow(latestSessionStartTime, MAX), which refuses a negative start.
            raise Refused("Window startMs time cannot be negative.")
        if key_from is not None and key_to is not None and key_from > key_to:
            return []
        chosen = sorted(
            (s for s in self._visible().items()
             if key_in_range(s[0][0], key_from, key_to) and overlaps(s[0][1], s[0][2], earliest_end, latest_start)),
            key=lambda item: self._order(item[0]),
            reverse=backward,
        )
        return [(key, start, end, value) for (key, end, start), value in chosen]

    def fetch(self, key_from: bytes | None, key_to: bytes | None, backward: bool = False) -> list[Entry]:
        """``fetch`` = ``findSessions(keyFrom, keyTo, 0, Long.MAX_VALUE)``; the in-memory ``fetch(from, to)`` has no
        from > to check: its ``subMap`` throws (refused) as soon as one end time is held, where RocksDB answers
        nothing."""
        if self.backend == MEMORY and key_from is not None and key_to is not None and key_from > key_to:
            self._require_open("read")
            self._memory_purge()
            if self.sessions:
                raise Refused("inconsistent range: key_from is after key_to")
        return self.find_sessions(key_from, key_to, 0, INT64_MAX, backward)

    # --- restore -----------------------------------------------------------------------------------------------

    def _record_time(self, changelog_key: bytes) -> int:
        return split_store_key(changelog_key)[2]

    def _restore_row(self, record: Record) -> None:
        segment = self._live_segment(self.segment_id(split_store_key(record.key)[2]))
        if segment is not None:
            self._segment_write(segment, record.key, restored_value(self.store_type, record))

    def _restore_in_memory(self, batch: list[Record]) -> None:
        logging, self.options.logging = self.options.logging, False
        try:
            for record in batch:
                key, start, end = split_store_key(record.key)
                self.put(key, start, end, restored_value(self.store_type, record))
        finally:
            self.options.logging = logging

    # --- views for comparison ------------------------------------------------------------------------------------

    def _dump_of(self, segments: dict[int, Segment]) -> dict[str, Segment]:
        return {self.segment_name(segment_id): {cf: dict(rows) for cf, rows in segment.items() if rows and cf != CF_OFFSETS}
                for segment_id, segment in segments.items()}

    def dump(self) -> dict[str, Segment]:
        """The segments by name, each with its non-empty data column families (RocksDB)."""
        return self._dump_of(self.segments)


def replay(store_type: str, backend: str, options: Options, records: Iterable[Record], batch_size: int) -> SessionModel:
    """A fresh store of ``store_type`` that restored ``records``."""
    model = SessionModel(store_type, backend, Options(options.retention_ms, options.segment_interval_ms, logging=False))
    model.open()
    model.restore(list(records), batch_size)
    return model


def rows_by_segment(key: str, value: str) -> RowsBySegment:
    """A session's row is ``[key][end int64][start int64]`` (SESS-1) in the segment of its END, ``end / interval``
    (SESS-11): with interval 500, the session 10..600 of ``key`` (hex) is in segment 1 (``<store>.500``) and 20..30
    in segment 0, and both read back ``value``."""
    sessions = ((10, 600), (20, 30))
    return RowsBySegment({"retention_ms": 1_000, "segment_interval_ms": 500},
                         tuple(("session_store.put", {"key": key, "value": value, "start": start, "end": end})
                               for start, end in sessions),
                         DATA_COLUMN_FAMILIES,
                         {"store.0": [(bytes.fromhex(key) + int64(30) + int64(20)).hex()],
                          "store.500": [(bytes.fromhex(key) + int64(600) + int64(10)).hex()]},
                         tuple(("session_store.fetch_session", {"key": key, "start": start, "end": end})
                               for start, end in sessions))


def probe(key: str) -> Probe:
    """The family's probe for the store rules checked at every family (probes.Probe), writing ``key`` (hex); SS-21, SS-37 and SS-38 are its own."""
    return Probe(SESSION, {"retention_ms": 1_000, "segment_interval_ms": 500},
                 ("session_store.put", {"key": key, "value": "aa", "start": 1, "end": 2}),
                 (("session_store.fetch_session", {"key": key, "start": 1, "end": 2}),
                  ("session_store.fetch", {"key_from": key}),
                  ("session_store.find_sessions", {"key_from": key, "earliest_end": 0, "latest_start": 10})),
                 key + int64(2).hex() + int64(1).hex(), (("session_store.remove", {"key": key, "start": 1, "end": 2}),),
                 remove=("session_store.remove", {"key": key, "start": 1, "end": 2}),
                 time_fields=("start", "end"), closed_store_rules=("KV-12", "SS-37"), position_rules=("KV-54", "SS-38"),
                 position_row_rules=("KV-56", "KV-63", "OFF-5", "SS-21"))


# --- the cases at the family's legacy files, zero-byte values and restores (test_store_rules_family_places) -------


def _restored_records() -> tuple[dict[str, Any], ...]:
    """RST-8: keys ``k1``..``k6`` in sessions ``100 i``..``100 i + 5`` (two segments of 500), then a tombstone of
    ``k3``."""
    written = [(f"k{i}".encode(), 100 * i, f"{i:02x}", 100 * i + 5) for i in range(1, 7)] + [(b"k3", 300, None, 700)]
    return tuple({"key": changelog_key(key, start, start + 5, 0).hex(), "value": value, "timestamp": ts,
                  "headers": []} for key, start, value, ts in written)


#: OPS-2: a zero-byte value is answered as ``""``; RST-8: each restored session is read by ``fetch_session``.
FAMILY_PLACES: FamilyPlaces | None = FamilyPlaces(
    ("value", ""), RestoredRows(_restored_records(),
                                tuple(("session_store.fetch_session", {"key": f"k{i}".encode().hex(), "start": 100 * i,
                                                                       "end": 100 * i + 5}, "value")
                                      for i in range(1, 7)),
                                (None,) * 6))


# --- the suite's helpers for the family's stores (once kstate_conformance/sessions.py; issue 33) ----------------
# A SessionStore wraps a harness.Store opened with a session store type, over the neutral session_store.*
# operations (spec/ops.md); keys and values are hex strings, sessions answer as (key, start, end, value) tuples.

#: ``AbstractSessionBytesStoreTest``'s retention and the segment interval Kafka derives from it.
RETENTION_PERIOD = 10_000
SEGMENT_INTERVAL = 60_000

SessionEntry = tuple[str, int, int, str]


def long_value(value: int) -> str:
    """Hex of a ``Serdes.Long()`` aggregate, as Kafka's tests store them."""
    return int64(value).hex()


def open_session_store(kit: Kit, store_type: str, backend: str, retention_ms: int = RETENTION_PERIOD,
                       segment_interval_ms: int | None = None, **extra: Any) -> SessionStore:
    options: dict[str, Any] = {"retention_ms": retention_ms}
    if segment_interval_ms is not None:
        options["segment_interval_ms"] = segment_interval_ms
    return SessionStore(kit.open(store_type, backend, options=options, **extra))


def _entries(out: dict[str, Any]) -> list[SessionEntry]:
    """The ``entries`` of a ``find_sessions`` or ``fetch`` answer, times as ints."""
    return [(k, int(s), int(e), v) for k, s, e, v in out["entries"]]


class SessionStore:
    """One open session store of the implementation under test."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def call(self, op: str, **payload: Any) -> dict[str, Any]:
        return self.store.call(op, **payload)

    def ok(self, op: str, **payload: Any) -> dict[str, Any]:
        return self.store.ok(op, **payload)

    def put(self, key: str, start: int, end: int, value: str | None) -> None:
        self.ok("session_store.put", key=key, start=start, end=end, value=value)

    def remove(self, key: str, start: int, end: int) -> None:
        self.ok("session_store.remove", key=key, start=start, end=end)

    def fetch_session(self, key: str, start: int, end: int) -> str | None:
        value: str | None = self.ok("session_store.fetch_session", key=key, start=start, end=end)["value"]
        return value

    def find_sessions(self, key: str, earliest_end: int, latest_start: int, backward: bool = False) -> list[SessionEntry]:
        """``findSessions(key, earliestSessionEndTime, latestSessionStartTime)`` of one key."""
        return _entries(self.ok("session_store.find_sessions", key_from=key, key_to=None, earliest_end=earliest_end,
                                latest_start=latest_start, backward=backward))

    def find_range(self, key_from: str | None, key_to: str | None, earliest_end: int, latest_start: int,
                   backward: bool = False) -> list[SessionEntry]:
        """``findSessions(keyFrom, keyTo, ...)``: a key range, a null bound unbounded."""
        return _entries(self.ok("session_store.find_sessions", **range_payload(key_from, key_to),
                                earliest_end=earliest_end, latest_start=latest_start, backward=backward))

    def fetch(self, key: str, backward: bool = False) -> list[SessionEntry]:
        """``fetch(key)`` / ``backwardFetch(key)``."""
        return _entries(self.ok("session_store.fetch", key_from=key, key_to=None, backward=backward))

    def fetch_range(self, key_from: str | None, key_to: str | None, backward: bool = False) -> list[SessionEntry]:
        """``fetch(keyFrom, keyTo)`` / ``backwardFetch(keyFrom, keyTo)``."""
        return _entries(self.ok("session_store.fetch", **range_payload(key_from, key_to), backward=backward))

    def context(self, timestamp: int, headers: list[list[Any]] | None = None) -> None:
        self.store.context(timestamp, headers)

    def changelog(self) -> list[dict[str, Any]]:
        return self.store.changelog()

    def segments(self) -> dict[str, dict[str, dict[str, str]]]:
        """``store.dump`` of a RocksDB store: segment name -> column family -> {key: value} (non-empty families)."""
        out = self.ok("store.dump")["segments"]
        return {name: {cf: dict(rows) for cf, rows in cfs.items() if rows and cf != "offsets"} for name, cfs in out.items()}

    def close(self) -> None:
        self.store.close()


#: The vocabulary's ``key_to`` null names the single-key form, so an unbounded upper key is sent as a key above
#: every key the tests write (16 bytes of FF): Kafka's ``fetch(keyFrom, null)`` answers the same sessions.
ABOVE_EVERY_KEY = "ff" * 16


def range_payload(key_from: str | None, key_to: str | None) -> dict[str, Any]:
    """A key range as ``find_sessions``/``fetch`` take it; a null ``key_to`` becomes :data:`ABOVE_EVERY_KEY`."""
    return {"key_from": key_from, "key_to": ABOVE_EVERY_KEY if key_to is None else key_to}


# --- the paired machine (kstate conformance --model: the implementation and the model step by step) ------------


#: Session times: small ones, and ones a default segment interval (max(retention / 2, 60 s)) apart, so that
#: sessions land in several segments and old ones expire (SS-10, SS-13).
SESSION_TIMES = (st.sampled_from([0, 1, 5, 10, 100, 1000]) | st.sampled_from([59_999, 60_000, 61_000, 150_000])
                 | st.integers(min_value=0, max_value=400_000))
SESSION_LENGTHS = st.sampled_from([0, 0, 1, 10, 5000, 70_000])


class SessionPair(StorePair):
    """A session store of one type on one backend; drawn: change-logging, retention, the segment interval."""

    family_ops = ("store.open", "session_store.put", "session_store.remove", "session_store.fetch_session",
                  "session_store.find_sessions", "session_store.fetch")

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.values = stored_values(self.store_type)
        self.written: list[tuple[bytes, int, int]] = []

    @initialize(logging=st.sampled_from([True, True, False]), retention_ms=st.sampled_from([0, 60_000, 120_000, 200_000]),
                segment_interval_ms=st.sampled_from([None, None, 1000, 60_000]))
    def start(self, logging: bool, retention_ms: int, segment_interval_ms: int | None) -> None:
        excluded("SS-36")  # no record cache
        options: dict[str, Any] = {"retention_ms": retention_ms}
        if segment_interval_ms is not None:
            options["segment_interval_ms"] = segment_interval_ms
        self.open_options = {"logging": logging, "caching": False, "options": options}
        self.open_store()

    def some_key(self, data: st.DataObject, label: str = "key") -> bytes:
        """A key written before, most of the time, so that reads meet data."""
        keys = sorted({k for k, _, _ in self.written})
        return data.draw(st.sampled_from(keys) | KEYS if keys else KEYS, label=label)

    def some_time(self, data: st.DataObject, label: str) -> int:
        """A session start or end written before (or one ms either side), most of the time."""
        times = sorted({t + d for _, s, e in self.written for t in (s, e) for d in (-1, 0, 1) if t + d >= 0})
        return data.draw(st.sampled_from(times) | SESSION_TIMES if times else SESSION_TIMES, label=label)

    def some_session(self, data: st.DataObject) -> tuple[bytes, int, int]:
        """A session written before half the time, else a new one (start > end now and then: refused, SS-3)."""
        if bool(self.written) and data.draw(st.booleans(), label="again"):
            return data.draw(st.sampled_from(self.written), label="written")
        start = self.some_time(data, "start")  # near the sessions written, so that several stay live together
        end = data.draw(st.sampled_from([start - 1]) | st.builds(lambda n: start + n, SESSION_LENGTHS), label="end")
        return data.draw(KEYS, label="key"), start, end

    @rule(data=st.data())
    def put(self, data: st.DataObject) -> None:
        excluded("SS-28")  # values drawn in the type's layout (AggregationWithHeaders)
        key, start, end = self.some_session(data)
        value = data.draw(st.none() | self.values, label="value")
        self.on_store("session_store.put", key=key.hex(), start=start, end=end, value=hex_or_none(value))
        self.written.append((key, start, end))

    @rule(data=st.data())
    def remove(self, data: st.DataObject) -> None:
        key, start, end = self.some_session(data)
        self.on_store("session_store.remove", key=key.hex(), start=start, end=end)

    @rule(op=st.sampled_from(["session_store.put", "session_store.remove", "session_store.fetch_session"]))
    def null_key(self, op: str) -> None:
        if op != "session_store.fetch_session" and self.backend == "memory" and not self.open_options["logging"]:
            excluded("SS-2 null key")
            return
        self.on_store(op, key=None, start=0, end=0, value=None)

    @rule(data=st.data())
    def fetch_session(self, data: st.DataObject) -> None:
        key, start, end = self.some_session(data)
        self.on_store("session_store.fetch_session", key=key.hex(), start=start, end=end)

    @rule(ranged=st.booleans(), backward=st.booleans(), data=st.data())
    def find_sessions(self, ranged: bool, backward: bool, data: st.DataObject) -> None:
        lower = self.some_key(data, "from")
        upper = self.some_key(data, "to") if ranged else None
        self.on_store("session_store.find_sessions", key_from=lower.hex(), key_to=hex_or_none(upper),
                      earliest_end=self.some_time(data, "earliest_end"),
                      latest_start=self.some_time(data, "latest_start"), backward=backward)

    @rule(ranged=st.booleans(), backward=st.booleans(), data=st.data())
    def fetch(self, ranged: bool, backward: bool, data: st.DataObject) -> None:
        lower = self.some_key(data, "from")
        upper = self.some_key(data, "to") if ranged else None
        self.on_store("session_store.fetch", key_from=lower.hex(), key_to=hex_or_none(upper), backward=backward)

    def read_everything(self, handle: str) -> None:
        """Every live session, both ways: the key range from the empty key to the largest key drawn (SS-8, SS-9)."""
        for backward in (False, True):
            self.agree("session_store.fetch", {"handle": handle, "key_from": "", "key_to": "ffffff",
                                               "backward": backward})

    @invariant()
    def contents_agree(self) -> None:
        if self.handle is not None:
            self.read_everything(self.handle)


register(PairedFamily(
    "session", SessionPair, "session_store", STORE_TYPES, ("rocksdb", "memory"),
    ("SS-2", "SS-3", "SS-4", "SS-5", "SS-6", "SS-7", "SS-8", "SS-9", "SS-10", "SS-12", "SS-13", "SS-14", "SS-15",
     "SS-16", "SS-17", "SS-24", "SS-26", "SS-27", "SS-30", "SS-31", "CL-1", "RST-1", "OFF-8"),
    "A session store answers every operation as the model does and leaves the same rows in every segment.",
    {SESSION: RAW, HEADERS: st.builds(headers_value, RAW, HEADER_PAIRS)},
))
