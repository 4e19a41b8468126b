"""An executable model of the window store family (spec/window-store.md, window-keys.md, changelog.md, restore.md).

Written from the spec text and Kafka's javadoc, independently of the reference implementation (it imports
nothing from ``kstate``), speaking the neutral vocabulary's values (bytes and ints). It predicts, for a
window store of one of the three types on RocksDB or in memory, with or without change-logging:

* what every read returns (``fetch``, ``fetch_range``, ``fetch_keys``, ``fetch_all``, ``all`` and the backward
  variants), in Kafka's order: on RocksDB segment by segment, oldest first, and within a segment in the byte
  order of the store key ``[key][start][seqnum]``; in memory window start by window start, and within a window
  in the byte order of the key (``[key][seqnum]`` with duplicates);
* retention by observed stream time (the largest window start a ``put`` saw, -1 after an open), the dropping of
  late writes (a whole segment on RocksDB, a single window in memory) and the clamping of every fetch to
  ``observed - retention + 1``;
* ``retainDuplicates`` sequence numbers, in the store and, separately, in the change-logging layer;
* the changelog records every write produces, what a restore rebuilds, which rows each segment database holds
  (by Kafka's directory name ``<store>.<segment start>``) and what a crash may leave behind.

A dict-and-list program, as :mod:`models.kv` is: easy to check by eye, no clever data structures.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, rule

from kstate_conformance import store_types as types
from kstate_conformance.models import kv, life
from kstate_conformance.paired import excluded
from kstate_conformance.paired_stores import HEADERS as HEADER_PAIRS
from kstate_conformance.paired_stores import (
    KEYS,
    RAW,
    TIMESTAMPS,
    PairedFamily,
    StorePair,
    hex_or_none,
    register,
    stored_values,
)
from kstate_conformance.probes import FamilyPlaces, Probe, RestoredRows

WINDOW = "window"
TIMESTAMPED = "timestamped_window"
HEADERS = "timestamped_window_with_headers"
STORE_TYPES = (WINDOW, TIMESTAMPED, HEADERS)
#: Only a column-family layout (LAY-5 to LAY-8); no store of it is opened.
TIME_ORDERED_HEADERS = "time_ordered_window_with_headers"

# --- the family's entry in the suite's table of families (store_types.FAMILIES; issue 33) ---------------------

#: Its store types written from spec/ops.md's text, as the rest of the suite reads them (``store_types.WINDOW``...).
FAMILY = types.StoreFamily(
    name="window", order=2, types=STORE_TYPES, op_prefix="window_store.", segmented=True, codec_ops="window",
    rule_prefixes=("WS", "WIN"), rule_terms=r"\bwindow|\bWS-\d|segment", code_names=r"WINDOW|^WIN$",
    module_part="window", timestamped_types=(TIMESTAMPED, HEADERS), headers_types=(HEADERS,),
    layout_only_types=(TIME_ORDERED_HEADERS,),
    spellings=(("WINDOW", WINDOW), ("TIMESTAMPED_WINDOW", TIMESTAMPED), ("TIMESTAMPED_WINDOW_WITH_HEADERS", HEADERS),
               ("TIME_ORDERED_WINDOW_WITH_HEADERS", TIME_ORDERED_HEADERS), ("WINDOW_TYPES", STORE_TYPES)))

ROCKSDB = kv.ROCKSDB
MEMORY = kv.MEMORY
BACKENDS = kv.BACKENDS

#: The key-value type whose value layout, changelog record and restore conversion a window type shares.
VALUE_TYPE = {WINDOW: kv.PLAIN, TIMESTAMPED: kv.TIMESTAMPED, HEADERS: kv.HEADERS}
#: The column family of a segment database that holds the type's rows.
HOME_CF = {WINDOW: kv.CF_DEFAULT, TIMESTAMPED: kv.CF_TIMESTAMPED, HEADERS: kv.CF_HEADERS}
#: LAY-5, LAY-6: each type, the column families a fresh database of it opens, and the one its data is in.
LAYOUT_COLUMN_FAMILIES = tuple((t, sorted({kv.CF_DEFAULT, kv.CF_OFFSETS, HOME_CF[t]}), HOME_CF[t]) for t in STORE_TYPES)
#: LAY-7: a type over data in its legacy column family opens in upgrade mode, with the conversion named.
LEGACY_UPGRADES = ((TIMESTAMPED, kv.CF_DEFAULT, "convert_to_timestamped_format"),)
#: LAY-8: a column family of another type that a database of the type refuses.
FOREIGN_COLUMN_FAMILIES = ((WINDOW, kv.CF_TIMESTAMPED),)
#: TSKV-5, LAY-7, LAY-8: the upgrades in place, a case each: (the type written, the type then opened over it, a stored
#: value the older wrote, what the newer reads for it), hex, as the key-value types' (TSKV-5, LAY-8).
IN_PLACE_UPGRADES = ((WINDOW, TIMESTAMPED, "aa", "ff" * 8 + "aa"),
                     (TIMESTAMPED, HEADERS, "0000000000000007aa", "000000000000000007aa"))  # timestamp 7


# --- the changelog cases over every family (CL-*): what a record of the family's store looks like ---------------

#: CL-2, CL-6: a write is logged at its context's timestamp, or at its stored one (CL-4).
LOGS_AT_CONTEXT_TIME = True
#: The writes a changelog record of a tombstone comes from (CL-7): a put of null, a window store has no delete.
TOMBSTONE_WRITES = ("put",)
#: The types the consistency-header case (CL-12) tries: none beyond the key-value ones.
CONSISTENCY_CASE_TYPES: tuple[str, ...] = ()
#: CL-1: a write the family does not have, refused.
UNDEFINED_CHANGELOG_WRITES = ((WINDOW, "delete"),)


def changelog_stored_value(store_type: str, value: bytes, ts: int, headers: Sequence[tuple[str, bytes | None]]) -> bytes:
    """The bytes a window store of ``store_type`` holds for (value, ts, headers): its value type's (WS-2)."""
    return kv.changelog_stored_value(VALUE_TYPE[store_type], value, ts, headers)


def changelog_key(key: bytes, start: int, end: int, seqnum: int) -> bytes:
    """A changelog record's key (CL-6): the key, the window's start and the sequence number, big-endian."""
    return key + int64(start) + seqnum.to_bytes(4, "big")


def changelog_shape(start: int, end: int) -> dict[str, Any]:
    """The fields a changelog write of the family takes beyond key and value: the window's start."""
    return {"window_start": start}


def op_examples(handle: str) -> dict[str, dict[str, Any]]:
    """A valid input of each of the family's operations (OPS-2) on the store ``handle`` names, for the cases that
    confuse one field at a time (OPS-3)."""
    return {
        "window_store.put": {"handle": handle, "key": "01", "value": "02", "window_start": 5},
        "window_store.fetch": {"handle": handle, "key": "01", "time": 5},
        "window_store.fetch_range": {"handle": handle, "key": "01", "from_ms": 0, "to_ms": 9, "backward": True},
        "window_store.fetch_keys": {"handle": handle, "key_from": "00", "key_to": None, "from_ms": 0, "to_ms": 9,
                                    "backward": False},
        "window_store.fetch_all": {"handle": handle, "from_ms": 0, "to_ms": 9, "backward": False},
        "window_store.all": {"handle": handle, "backward": True},
    }


#: The rules a reopen over the segments left after a fault checks beyond LAY-12 and LAY-3 (none of the family's own).
SEGMENT_REOPEN_RULES: tuple[str, ...] = ()


def segmented_options(interval_ms: int) -> dict[str, Any]:
    """The options of a RocksDB store of ten segments of ``interval_ms`` each (LAY-3, WS-31), windows of a second."""
    return {"retention_ms": 10 * interval_ms, "window_size_ms": 1000, "segment_interval_ms": interval_ms}


def put_at(key: str, time: int) -> tuple[str, dict[str, Any]]:
    """The operation and input that write ``key`` (hex) as its own value in the window starting at ``time``."""
    return "window_store.put", {"key": key, "value": key, "window_start": time}


def read_every(key_from: str, key_to: str) -> tuple[str, dict[str, Any]]:
    """The operation and input answering every entry, its key first (all of them: ``all`` has no key bounds, and the
    callers' keys lie within ``key_from``..``key_to``)."""
    return "window_store.all", {}
DATA_COLUMN_FAMILIES = kv.DATA_COLUMN_FAMILIES

SEQNUM_MASK = 0x7FFFFFFF
INT32_MAX = 0x7FFFFFFF
INT64_MAX = (1 << 63) - 1
#: ``ConsumerRecord.NO_TIMESTAMP``: the observed stream time of a store that has seen no write since it opened.
NO_TIMESTAMP = -1
MIN_SEGMENT_INTERVAL_DEFAULT = 60_000

Rows = dict[bytes, bytes]
#: RocksDB: segment id -> the segment database's rows (store key -> stored value).
Segments = dict[int, Rows]
Refused = kv.Refused
Record = kv.Record
Context = kv.Context


# --- keys and segments (WIN-1, WIN-10, WIN-11, WIN-15, WIN-16) -------------------------------------------------


def int64(value: int) -> bytes:
    return value.to_bytes(8, "big", signed=True)


def store_key(key: bytes, start: int, seqnum: int) -> bytes:
    """``[key][start int64 BE][seqnum int32 BE]``."""
    return key + int64(start) + seqnum.to_bytes(4, "big", signed=True)


def split_store_key(data: bytes) -> tuple[bytes, int, int]:
    """``(key, start, seqnum)``, read from the end."""
    return (data[:-12], int.from_bytes(data[-12:-4], "big", signed=True),
            int.from_bytes(data[-4:], "big", signed=True))


def java_div(a: int, b: int) -> int:
    """Java's ``long`` division: truncates toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def default_segment_interval(retention_ms: int) -> int:
    """``max(retention / 2, 60000)``."""
    return max(java_div(retention_ms, 2), MIN_SEGMENT_INTERVAL_DEFAULT)


def segment_name(store: str, segment_id: int, interval: int) -> str:
    """The segment's directory: ``<store>.<segment id x interval>`` (the segment's start time, not its id)."""
    return f"{store}.{segment_id * interval}"


def upper_range(key: bytes, to: int) -> bytes:
    """The plain schema's multi-key upper bound: OrderedBytes.upperRange(key, [to][MAX]) (WIN-11)."""
    suffix = int64(to) + INT32_MAX.to_bytes(4, "big")
    kept = bytearray()
    for i, byte in enumerate(key):
        if i > 0 and byte < suffix[0]:
            break
        kept.append(byte)
    return bytes(kept) + suffix


def lower_range(key: bytes) -> bytes:
    """The plain schema's multi-key lower bound: ``[key][12 x 00]`` (WIN-10)."""
    return key + bytes(12)


def wrap_for_dups(key: bytes, seqnum: int) -> bytes:
    """The in-memory store's inner key with duplicates: ``[key][seqnum int32 BE]``."""
    return key + seqnum.to_bytes(4, "big")


# --- values and records -----------------------------------------------------------------------------------------


def record_for_put(store_type: str, changelog_key: bytes, value: bytes | None, context: Context) -> Record:
    """The change-logging layer's record: key with its own seqnum, raw value, timestamp (and headers) as the
    key-value type of the same value layout logs them."""
    return kv.record_for_put(VALUE_TYPE[store_type], changelog_key, value, context)


def restored_value(store_type: str, record: Record) -> bytes | None:
    return kv.restored_value(VALUE_TYPE[store_type], record)


# --- the model ----------------------------------------------------------------------------------------------------


@dataclass
class Options:
    """The store's constructor parameters (``Stores.persistentWindowStore``) and whether it logs changes."""

    retention_ms: int
    window_size_ms: int
    retain_duplicates: bool = False
    segment_interval_ms: int | None = None
    logging: bool = True

    @property
    def interval(self) -> int:
        return self.segment_interval_ms if self.segment_interval_ms is not None else default_segment_interval(self.retention_ms)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"retention_ms": self.retention_ms, "window_size_ms": self.window_size_ms,
                               "retain_duplicates": self.retain_duplicates}
        if self.segment_interval_ms is not None:
            out["segment_interval_ms"] = self.segment_interval_ms
        return out


Entry = tuple[bytes, int, bytes]  # (key, window start, value)


@dataclass
class WindowModel(kv.SegmentedRestore, kv.ChangelogKeeper):
    """One logical window store across its lifetime: opens, writes, commits, closes, crashes and restores.

    RocksDB: ``segments`` are the segment databases' rows (what a clean close persists); memory: ``windows``
    maps a window start to its inner map. ``observed`` and both sequence numbers live in memory only: an open
    starts them again at -1 and 0.
    """

    store_type: str
    backend: str
    options: Options
    name: str = "store"
    segments: Segments = field(default_factory=dict)
    windows: dict[int, Rows] = field(default_factory=dict)
    observed: int = NO_TIMESTAMP
    seqnum: int = 0
    log_seqnum: int = 0
    #: The store's life state, as models.life names it: what the life table answers for (KV-12, SS-37).
    life: str = "closed"
    changelog: list[Record] = field(default_factory=list)
    pending: list[Record] = field(default_factory=list)
    committed: int | None = None
    crash_candidates: list[Segments] = field(default_factory=list)
    #: The segments and committed offset at the last open or clean close: where a crash may roll a store back to
    #: when its commits are not durable (KV-50; Kafka's store, KV-67).
    durable: tuple[Segments, int | None] = field(default_factory=lambda: ({}, None))
    context: Context = field(default_factory=Context)
    dropped: int = 0

    # --- lifecycle -------------------------------------------------------------------------------------------

    @property
    def retention(self) -> int:
        return self.options.retention_ms

    @property
    def is_open(self) -> bool:
        return self.life == "open"

    def open(self) -> None:
        self.life = "open"
        self.observed = NO_TIMESTAMP
        self.seqnum = 0
        self.log_seqnum = 0
        self.windows = {}
        self.crash_candidates = [copy.deepcopy(self.segments)]
        self.durable = (copy.deepcopy(self.segments), self.committed)

    def close(self) -> None:
        self.life = "closed"
        self.windows = {}
        self.crash_candidates = [copy.deepcopy(self.segments)]
        self.durable = (copy.deepcopy(self.segments), self.committed)

    def crash(self) -> None:
        self.life = life.after_crash(self.backend)
        self.windows = {}

    def commit(self, offset: int | None) -> None:
        self._require_open("commit")
        self.committed = offset if self.backend == ROCKSDB else None
        self.crash_candidates = [copy.deepcopy(self.segments)]

    def adopt_segments(self, observed: Segments) -> bool:
        """After a crash: accept ``observed`` if every segment holds rows it held at the last commit or after a
        later write (each segment is its own database, so each may keep a different point); or, where commits are
        not durable (KV-50, Kafka's store), the segments of the last open or clean close, with that offset."""
        for segment_id in set(observed) | {s for c in self.crash_candidates for s in c}:
            rows = observed.get(segment_id, {})
            if not any(candidate.get(segment_id, {}) == rows for candidate in self.crash_candidates):
                durable, offset = self.durable
                if self.backend != ROCKSDB or any(observed.get(s, {}) != durable.get(s, {})
                                                  for s in set(observed) | set(self.segments)):
                    return False
                self.committed = offset
                break
        self.segments = {s: dict(rows) for s, rows in observed.items() if rows}
        self.crash_candidates = [copy.deepcopy(self.segments)]
        return True

    def _require_open(self, op: str) -> None:
        """Refused where the life table refuses ``op`` in the model's state (KV-12, WS-*, SS-37)."""
        life.require(self.life, op, Refused)

    def _note_write(self) -> None:
        if self.backend == ROCKSDB:
            self.crash_candidates.append(copy.deepcopy(self.segments))

    # --- segments (RocksDB) ----------------------------------------------------------------------------------

    def segment_id(self, timestamp: int) -> int:
        return java_div(timestamp, self.options.interval)

    def _live_segment(self, segment_id: int) -> Rows | None:
        """``getOrCreateSegmentIfLive`` with the observed stream time, then the expired segments' cleanup."""
        min_live = self.segment_id(self.observed - self.retention)
        segment = self.segments.setdefault(segment_id, {}) if segment_id >= min_live else None
        for expired in [s for s in self.segments if s < min_live]:
            del self.segments[expired]
        return segment

    def segment_names(self) -> dict[str, Rows]:
        """The non-empty segment databases by directory name."""
        interval = self.options.interval
        return {segment_name(self.name, s, interval): dict(rows) for s, rows in sorted(self.segments.items()) if rows}

    # --- writes ------------------------------------------------------------------------------------------------

    def _next_seqnum(self) -> int:
        if self.options.retain_duplicates:
            self.seqnum = (self.seqnum + 1) & SEQNUM_MASK
        return self.seqnum

    def _rocksdb_put(self, key: bytes, value: bytes | None, start: int) -> None:
        if value is None and self.options.retain_duplicates:
            return  # a delete of a duplicate is a no-op: it does not even advance the stream time
        self._write_row(store_key(key, start, self._next_seqnum()), value, start)

    def _write_row(self, row_key: bytes, value: bytes | None, start: int) -> None:
        self.observed = max(self.observed, start)
        segment = self._live_segment(self.segment_id(start))
        if segment is None:
            self.dropped += 1
            return
        if value is None:
            segment.pop(row_key, None)
        else:
            segment[row_key] = value

    def _memory_put(self, key: bytes, value: bytes | None, start: int) -> None:
        self._remove_expired_windows()
        self.observed = max(self.observed, start)
        if start <= self.observed - self.retention:
            self.dropped += 1
            return
        if value is not None:
            inner = wrap_for_dups(key, self._next_seqnum()) if self.options.retain_duplicates else key
            self.windows.setdefault(start, {})[inner] = value
        elif not self.options.retain_duplicates and start in self.windows:
            self.windows[start].pop(key, None)
            if not self.windows[start]:
                del self.windows[start]

    def _remove_expired_windows(self) -> None:
        min_live = max(0, self.observed - self.retention + 1)
        for start in [s for s in self.windows if s < min_live]:
            del self.windows[start]

    def put(self, key: bytes | None, value: bytes | None, start: int) -> None:
        """``put(key, value, windowStart)`` through the change-logging layer (when logging)."""
        if key is None:
            raise Refused("null key")
        self._require_open("write")
        if self.backend == ROCKSDB:
            self._rocksdb_put(key, value, start)
            self._note_write()
        else:
            self._memory_put(key, value, start)
        if self.options.logging:
            if self.options.retain_duplicates:
                self.log_seqnum = (self.log_seqnum + 1) & SEQNUM_MASK
            self._log(record_for_put(self.store_type, store_key(key, start, self.log_seqnum), value, self.context))

    # --- restore -----------------------------------------------------------------------------------------------

    def _record_time(self, changelog_key: bytes) -> int:
        return split_store_key(changelog_key)[1]

    def _restore_row(self, record: Record) -> None:
        # The changelog key verbatim: the store keeps the logged seqnum (WS-26).
        self._write_row(record.key, restored_value(self.store_type, record), split_store_key(record.key)[1])

    def _restore_in_memory(self, batch: list[Record]) -> None:
        # A fresh local seqnum for each record, the changelog's dropped (WS-41).
        for record in batch:
            key, start, _ = split_store_key(record.key)
            self._memory_put(key, restored_value(self.store_type, record), start)

    # --- reads -------------------------------------------------------------------------------------------------

    def _actual_from(self, time_from: int) -> int:
        return max(time_from, self.observed - self.retention + 1)

    def fetch(self, key: bytes | None, time: int) -> bytes | None:
        """``fetch(key, time)``: the row of the store's *current* seqnum (RocksDB); memory looks the bare key up."""
        if key is None:
            raise Refused("null key")
        self._require_open("read")
        if self.backend == ROCKSDB:
            if time < self.observed - self.retention + 1:
                return None
            segment = self.segments.get(self.segment_id(time))
            return None if segment is None else segment.get(store_key(key, time, self.seqnum))
        if time <= self.observed - self.retention:
            return None
        return self.windows.get(time, {}).get(key)

    def _rocksdb_rows(self, time_from: int, time_to: int) -> list[tuple[int, bytes, bytes]]:
        """(segment id, store key, value) of the segments covering the times, forward order."""
        low, high = self.segment_id(time_from), self.segment_id(time_to)
        return [(s, k, v) for s in sorted(self.segments) if low <= s <= high for k, v in sorted(self.segments[s].items())]

    def _memory_rows(self, time_from: int, time_to: int, lower: bytes | None, upper: bytes | None,
                     key_from: bytes | None, key_to: bytes | None) -> list[Entry]:
        dups = self.options.retain_duplicates
        all_keys = key_from is None and key_to is None
        out: list[Entry] = []
        for start in sorted(s for s in self.windows if time_from <= s <= time_to):
            for inner, value in sorted(self.windows[start].items()):
                if (lower is not None and inner < lower) or (upper is not None and inner > upper):
                    continue
                key = inner[:-4] if dups else inner
                if dups and not all_keys and not _within(key, key_from, key_to):
                    continue
                out.append((key, start, value))
        return out

    def _range(self, key_from: bytes | None, key_to: bytes | None, time_from: int, time_to: int,
               single_key: bool) -> list[Entry]:
        dups = self.options.retain_duplicates
        if self.backend == MEMORY:
            lower = wrap_for_dups(key_from, 0) if dups and key_from is not None else key_from
            upper = wrap_for_dups(key_to, INT32_MAX) if dups and key_to is not None else key_to
            return self._memory_rows(time_from, time_to, lower, upper, key_from, key_to)
        low_b: bytes | None
        high_b: bytes | None
        if single_key:
            assert key_from is not None
            low_b, high_b = store_key(key_from, max(0, time_from), 0), store_key(key_from, time_to, INT32_MAX)
        else:
            low_b = lower_range(key_from) if key_from is not None else None
            high_b = upper_range(key_to, time_to) if key_to is not None else None
        out = []
        for _, row_key, value in self._rocksdb_rows(time_from, time_to):
            if (low_b is not None and row_key < low_b) or (high_b is not None and row_key > high_b):
                continue
            key, start, _ = split_store_key(row_key)
            if _within(key, key_from, key_to) and time_from <= start <= time_to:
                out.append((key, start, value))
        return out

    def fetch_range(self, key: bytes | None, time_from: int, time_to: int, backward: bool = False) -> list[tuple[int, bytes]]:
        """``fetch(key, from, to)`` / ``backwardFetch``: ``(window start, value)``."""
        if key is None:
            raise Refused("null key")
        self._require_open("read")
        actual_from = self._actual_from(time_from)
        if time_to < actual_from:
            return []
        entries = [(start, value) for _, start, value in self._range(key, key, actual_from, time_to, True)]
        return entries[::-1] if backward else entries

    def fetch_keys(self, key_from: bytes | None, key_to: bytes | None, time_from: int, time_to: int,
                   backward: bool = False) -> list[Entry]:
        """``fetch(keyFrom, keyTo, from, to)`` / ``backwardFetch``; an inverted key range is empty."""
        self._require_open("read")
        if key_from is not None and key_to is not None and key_from > key_to:
            return []
        actual_from = self._actual_from(time_from)
        if time_to < actual_from:
            return []
        entries = self._range(key_from, key_to, actual_from, time_to, False)
        return entries[::-1] if backward else entries

    def fetch_all(self, time_from: int, time_to: int, backward: bool = False) -> list[Entry]:
        return self.fetch_keys(None, None, time_from, time_to, backward)

    def all(self, backward: bool = False) -> list[Entry]:
        """``all()`` / ``backwardAll()``: every live window (RocksDB clamps ``from`` at 0 as ``getActualFrom(0)``)."""
        self._require_open("read")
        if self.backend == ROCKSDB:
            entries = self._range(None, None, max(0, self.observed - self.retention + 1), INT64_MAX, False)
        else:
            entries = self._memory_rows(self.observed - self.retention + 1, INT64_MAX, None, None, None, None)
        return entries[::-1] if backward else entries

    def physical_rows(self, segments: Segments | None = None) -> list[Entry]:
        """Every row a RocksDB store holds, in forward order: what ``all()`` answers right after an open."""
        rows = self.segments if segments is None else segments
        out = []
        for segment_id in sorted(rows):
            for row_key, value in sorted(rows[segment_id].items()):
                key, start, _ = split_store_key(row_key)
                out.append((key, start, value))
        return out

    def adopt_view(self, observed: list[Entry]) -> bool:
        """After a crash, when the segments cannot be dumped: accept the first state since the last commit whose
        rows ``all()`` shows right after the open (the stream time is unknown then, so nothing is clamped)."""
        for candidate in self.crash_candidates:
            if self.physical_rows(candidate) == observed:
                self.segments = copy.deepcopy(candidate)
                self.crash_candidates = [copy.deepcopy(candidate)]
                return True
        return False


def _within(key: bytes, lower: bytes | None, upper: bytes | None) -> bool:
    return (lower is None or key >= lower) and (upper is None or key <= upper)


def replay(model: WindowModel, records: Iterable[Record], batch_size: int) -> WindowModel:
    """A fresh store of ``model``'s type, backend and options after restoring ``records`` (RST-1)."""
    fresh = WindowModel(model.store_type, model.backend, replace_logging(model.options, False), name="fresh")
    fresh.open()
    fresh.restore(list(records), batch_size)
    return fresh


def replace_logging(options: Options, logging: bool) -> Options:
    return Options(options.retention_ms, options.window_size_ms, options.retain_duplicates,
                   options.segment_interval_ms, logging)


#: SESS-1, SESS-11's case of where a family's rows are by segment: not this family's (its keys are checked by its own
#: layout cases).
rows_by_segment = None


def probe(key: str) -> Probe:
    """The family's probe for the store rules checked at every family (probes.Probe), writing ``key`` (hex); WS-29 is its own."""
    return Probe(WINDOW, {"retention_ms": 1_000, "window_size_ms": 10, "segment_interval_ms": 500},
                 ("window_store.put", {"key": key, "value": "aa", "window_start": 1}),
                 (("window_store.fetch", {"key": key, "time": 1}),
                  ("window_store.fetch_range", {"key": key, "from_ms": 0, "to_ms": 10}),
                  ("window_store.fetch_keys", {"key_from": None, "key_to": None, "from_ms": 0, "to_ms": 10}),
                  ("window_store.fetch_all", {"from_ms": 0, "to_ms": 10}), ("window_store.all", {})),
                 key + int64(1).hex() + "00000000", time_fields=("window_start",),
                 position_rules=("KV-54", "WS-29"), position_row_rules=("KV-56", "KV-63", "OFF-5", "WS-29"))


# --- the cases at the family's legacy files, zero-byte values and restores (test_store_rules_family_places) -------


def _restored_records() -> tuple[dict[str, Any], ...]:
    """RST-8: keys ``k1``..``k6`` at window starts 100..600 (two segments of 500), then a tombstone of ``k3``."""
    written = [(f"k{i}".encode(), 100 * i, f"{i:02x}", 100 * i) for i in range(1, 7)] + [(b"k3", 300, None, 700)]
    return tuple({"key": changelog_key(key, start, start, 0).hex(), "value": value, "timestamp": ts, "headers": []}
                 for key, start, value, ts in written)


#: OPS-2: a zero-byte value is answered as ``""``; RST-8: every restored row is answered by ``all``.
FAMILY_PLACES: FamilyPlaces | None = FamilyPlaces(
    ("value", ""), RestoredRows(_restored_records(), (("window_store.all", {}, "entries"),), ()))


# --- the paired machine (kstate conformance --model: the implementation and the model step by step) ------------


#: Window starts: small ones, and ones a segment interval apart (Kafka's default interval is max(retention / 2,
#: 60 s)), so that writes land in several segments and old ones expire.
WINDOW_STARTS = st.sampled_from([0, 1, 5, 59_999, 60_000, 61_000]) | st.integers(min_value=0, max_value=400_000)
TIME_BOUNDS = st.sampled_from([0, 1, 60_000, 400_000]) | st.integers(min_value=0, max_value=400_000)


class WindowPair(StorePair):
    """A window store of one type on one backend; drawn: change-logging, retention, window size, duplicates."""

    family_ops = ("store.open", "window_store.put", "window_store.fetch_keys", "window_store.all")

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.values = stored_values(self.store_type)
        self.written: list[tuple[bytes, int]] = []

    @initialize(logging=st.sampled_from([True, True, False]), retention_ms=st.sampled_from([60_000, 120_000, 200_000]),
                window_size_ms=st.sampled_from([1, 10, 1000]), retain_duplicates=st.booleans())
    def start(self, logging: bool, retention_ms: int, window_size_ms: int, retain_duplicates: bool) -> None:
        excluded("WS-2")  # size from 1 ms, Kafka's default segment interval
        excluded("WS-33")  # no record cache
        self.open_options = {"logging": logging, "caching": False, "options": {
            "retention_ms": retention_ms, "window_size_ms": window_size_ms, "retain_duplicates": retain_duplicates}}
        self.open_store()

    def some_key(self, data: st.DataObject) -> bytes:
        """A key written before, most of the time, so that reads meet data."""
        keys = sorted({k for k, _ in self.written})
        return data.draw(st.sampled_from(keys) | KEYS if keys else KEYS, label="key")

    def some_time(self, data: st.DataObject) -> int:
        """A window start written before (or one ms either side), most of the time."""
        times = sorted({t + d for _, t in self.written for d in (-1, 0, 1) if t + d >= 0})
        return data.draw(st.sampled_from(times) | TIME_BOUNDS if times else TIME_BOUNDS, label="time")

    @rule(key=KEYS, window_start=WINDOW_STARTS, data=st.data())
    def put(self, key: bytes, window_start: int, data: st.DataObject) -> None:
        excluded("WS-24")
        again = bool(self.written) and data.draw(st.booleans(), label="again")
        if again:
            key, window_start = data.draw(st.sampled_from(self.written), label="written")
        value = data.draw(st.none() | self.values, label="value")
        self.on_store("window_store.put", key=key.hex(), value=hex_or_none(value), window_start=window_start)
        self.written.append((key, window_start))

    @rule(data=st.data())
    def fetch(self, data: st.DataObject) -> None:
        self.on_store("window_store.fetch", key=self.some_key(data).hex(), time=self.some_time(data))

    @rule(backward=st.booleans(), data=st.data())
    def fetch_range(self, backward: bool, data: st.DataObject) -> None:
        self.on_store("window_store.fetch_range", key=self.some_key(data).hex(), from_ms=self.some_time(data),
                      to_ms=self.some_time(data), backward=backward)

    @rule(backward=st.booleans(), data=st.data())
    def fetch_keys(self, backward: bool, data: st.DataObject) -> None:
        self.on_store("window_store.fetch_keys", key_from=self.some_key(data).hex(), key_to=self.some_key(data).hex(),
                      from_ms=self.some_time(data), to_ms=self.some_time(data), backward=backward)

    @rule(backward=st.booleans(), data=st.data())
    def fetch_all(self, backward: bool, data: st.DataObject) -> None:
        self.on_store("window_store.fetch_all", from_ms=self.some_time(data), to_ms=self.some_time(data),
                      backward=backward)

    def read_everything(self, handle: str) -> None:
        for backward in (False, True):
            self.agree("window_store.all", {"handle": handle, "backward": backward})

    @invariant()
    def contents_agree(self) -> None:
        if self.handle is not None:
            self.read_everything(self.handle)


register(PairedFamily(
    "window", WindowPair, "window_store", STORE_TYPES, ("rocksdb", "memory"),
    ("WS-4", "WS-9", "WS-10", "WS-11", "WS-13", "WS-14", "WS-15", "WS-18", "WS-22", "CL-1", "RST-1", "OFF-8"),
    "A window store answers every operation as the model does and leaves the same rows in every segment.",
    {WINDOW: RAW, TIMESTAMPED: st.builds(kv.timestamped_value, RAW, TIMESTAMPS),
     HEADERS: st.builds(kv.headers_value, RAW, TIMESTAMPS, HEADER_PAIRS)},
))
