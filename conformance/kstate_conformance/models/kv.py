"""An executable model of the key-value store family (spec/kv-stores.md, changelog.md, caching.md, restore.md).

Written from the spec, independently of the reference implementation, and speaking only the neutral
vocabulary's values (bytes, ints, header pairs). It predicts, for a store of one of the three types on
RocksDB or in memory, with or without change-logging and the record cache:

* what every read returns (``get``, ranges in both directions, prefix scans, live iterators);
* the changelog records every write produces, in order;
* what a RocksDB store's data column families hold (the lazy dual-column-family upgrade included);
* what survives a clean close, what a crash may leave behind, and what a restore rebuilds.

The model is a dict-and-list program: no clever data structures, so that it is easy to check by eye.
"""

from __future__ import annotations

import abc
import copy
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import Bundle, consumes, initialize, invariant, precondition, rule

from kstate_conformance import store_types as types
from kstate_conformance.bytes_model import decode_header_bytes, header_bytes, int64, read_zigzag_varint, zigzag_varint
from kstate_conformance.models import life
from kstate_conformance.paired import excluded
from kstate_conformance.paired_stores import (
    CACHE_SIZES,
    KEYS,
    MAYBE_KEY,
    RAW,
    TIMESTAMPS,
    PairedFamily,
    StorePair,
    hex_or_none,
    register,
    stored_values,
)
from kstate_conformance.paired_stores import HEADERS as HEADER_PAIRS
from kstate_conformance.probes import FamilyPlaces, Probe

PLAIN = "kv"
TIMESTAMPED = "timestamped_kv"
HEADERS = "timestamped_kv_with_headers"
STORE_TYPES = (PLAIN, TIMESTAMPED, HEADERS)
#: The legacy spelling of :data:`HEADERS`: accepted wherever a store type is read, never answered.
HEADERS_ALIAS = "timestamped_kv_headers"
#: Older spellings a ``store.open`` still accepts and a ``store.capabilities`` may list (spec/ops.md).
STORE_TYPE_ALIASES = {HEADERS_ALIAS: HEADERS}

# --- the family's entry in the suite's table of families (store_types.FAMILIES; issue 33) ---------------------

#: Its store types written from spec/ops.md's text, as the rest of the suite reads them (``store_types.KV``...).
FAMILY = types.StoreFamily(
    name="kv", order=0, types=STORE_TYPES, op_prefix="store.", segmented=False,
    rule_prefixes=("KV", "TSKV", "CACHE", "UPG"),
    rule_terms=r"key-value|\bKV-\d|\bkv\b|timestamped_kv|RocksDBStore\b|RocksDBTimestampedStore",
    code_names=r"^(KV|HDR|TS|TSKV|KV_TYPES)$", module_part="kv_",
    timestamped_types=(TIMESTAMPED, HEADERS), headers_types=(HEADERS,), aliases=tuple(STORE_TYPE_ALIASES.items()),
    spellings=(("KV", PLAIN), ("TIMESTAMPED_KV", TIMESTAMPED), ("TIMESTAMPED_KV_WITH_HEADERS", HEADERS),
               ("TIMESTAMPED_KV_HEADERS_ALIAS", HEADERS_ALIAS), ("KV_TYPES", STORE_TYPES)))

ROCKSDB = "rocksdb"
MEMORY = "memory"
BACKENDS = (ROCKSDB, MEMORY)

CF_DEFAULT = "default"
CF_TIMESTAMPED = "keyValueWithTimestamp"
CF_HEADERS = "keyValueWithTimestampAndHeaders"
CF_OFFSETS = "offsets"
DATA_COLUMN_FAMILIES = (CF_DEFAULT, CF_TIMESTAMPED, CF_HEADERS)
#: The column family each store type keeps its own data in.
HOME_CF = {PLAIN: CF_DEFAULT, TIMESTAMPED: CF_TIMESTAMPED, HEADERS: CF_HEADERS}
#: LAY-5, LAY-6: each type, the column families a fresh database of it opens, and the one its data is in.
LAYOUT_COLUMN_FAMILIES = tuple((t, sorted({CF_DEFAULT, CF_OFFSETS, HOME_CF[t]}), HOME_CF[t]) for t in STORE_TYPES)
#: LAY-7: a type over data in its legacy column family opens in upgrade mode, with the conversion named.
LEGACY_UPGRADES = ((TIMESTAMPED, CF_DEFAULT, "convert_to_timestamped_format"),
                   (HEADERS, CF_DEFAULT, "convert_from_plain_to_header_format"))
#: LAY-8: a column family of another type that a database of the type refuses.
FOREIGN_COLUMN_FAMILIES = ((PLAIN, CF_TIMESTAMPED), (PLAIN, CF_HEADERS), (TIMESTAMPED, CF_HEADERS))
#: TSKV-5, LAY-7, LAY-8: the upgrades in place, a case each: (the type written, the type then opened over it, a stored
#: value the older wrote, what the newer reads for it), hex: timestamp -1 in front (TSKV-5), an empty plain value
#: the 8 bytes alone; no headers, ``00``, in front of a timestamped value (LAY-8).
IN_PLACE_UPGRADES = ((PLAIN, TIMESTAMPED, "aa", "ff" * 8 + "aa"), (PLAIN, TIMESTAMPED, "", "ff" * 8),
                     (TIMESTAMPED, HEADERS, int64(7).hex() + "aa", "00" + int64(7).hex() + "aa"))
# --- the changelog cases over every family (CL-*): what a record of the family's store looks like ---------------

#: CL-2, CL-6: a write is logged at its context's timestamp, or at its stored one (CL-4).
LOGS_AT_CONTEXT_TIME = True
#: The writes a changelog record of a tombstone comes from (CL-7).
TOMBSTONE_WRITES = ("put", "delete")
#: The types the consistency-header case (CL-12) tries: the plain and the header-aware one.
CONSISTENCY_CASE_TYPES = (PLAIN, HEADERS)
#: CL-1: a write the family does not have, refused.
UNDEFINED_CHANGELOG_WRITES = ((PLAIN, "remove"),)


def changelog_stored_value(store_type: str, value: bytes, ts: int, headers: Sequence[tuple[str, bytes | None]]) -> bytes:
    """The bytes a store of ``store_type`` holds for (value, ts, headers): the value, after its timestamp (TSKV-1),
    after the headers (HV-6)."""
    if store_type == PLAIN:
        return value
    if store_type == TIMESTAMPED:
        return int64(ts) + value
    if store_type == HEADERS:
        hdr = header_bytes(headers)
        return zigzag_varint(len(hdr)) + hdr + int64(ts) + value
    raise types.UnknownStoreTypeError(store_type, "kv.changelog_stored_value")


def changelog_key(key: bytes, start: int, end: int, seqnum: int) -> bytes:
    """A changelog record's key (CL-6): the store's key as it is; the window times do not enter it."""
    return key


def changelog_shape(start: int, end: int) -> dict[str, Any]:
    """The fields a changelog write of the family takes beyond key and value: none."""
    return {}
#: The key of an in-memory store's single map in this model (it has no column families).
MEMORY_MAP = "memory"
NO_TIMESTAMP = b"\xff" * 8
#: ``statestore.cache.max.bytes`` default.
DEFAULT_CACHE_MAX_BYTES = 10 * 1024 * 1024

HeaderPairs = tuple[tuple[str, "bytes | None"], ...]
Image = dict[str, dict[bytes, bytes]]


class Refused(Exception):
    """The implementation must refuse this call: its answer is ``{"error": ...}``."""


def store_type_of(name: str) -> str:
    """The model's name of the key-value store type ``name`` (either spelling); ValueError for any other type."""
    store_type = STORE_TYPE_ALIASES.get(name, name)
    if store_type not in STORE_TYPES:
        raise ValueError(f"the model has no {name!r} store type")
    return store_type


# --- value bytes -------------------------------------------------------------------------------------------


def timestamped_value(raw: bytes, timestamp: int) -> bytes:
    """``[timestamp int64 BE][raw]``."""
    return int64(timestamp) + raw


def headers_value(raw: bytes, timestamp: int, headers: HeaderPairs) -> bytes:
    """``[varint size][header bytes][timestamp][raw]``."""
    section = header_bytes(headers)
    return zigzag_varint(len(section)) + section + int64(timestamp) + raw


def split_timestamped(value: bytes) -> tuple[bytes, int]:
    return value[8:], int.from_bytes(value[:8], "big", signed=True)


def split_headers_value(value: bytes) -> tuple[bytes, int, HeaderPairs]:
    size, pos = read_zigzag_varint(value, 0)
    headers = decode_header_bytes(value[pos : pos + size])
    pos += size
    return value[pos + 8 :], int.from_bytes(value[pos : pos + 8], "big", signed=True), headers


#: In-place upgrade of a legacy value, by (from type, to type).
LEGACY_CONVERSIONS: dict[tuple[str, str], Callable[[bytes], bytes]] = {
    (PLAIN, TIMESTAMPED): lambda v: NO_TIMESTAMP + v,
    (TIMESTAMPED, HEADERS): lambda v: b"\x00" + v,
    (PLAIN, HEADERS): lambda v: b"\x00" + NO_TIMESTAMP + v,
}


# --- records and contexts ----------------------------------------------------------------------------------


def _hex(value: bytes | None) -> str | None:
    return None if value is None else value.hex()


def _unhex(value: str | None) -> bytes | None:
    return None if value is None else bytes.fromhex(value)


def headers_to_json(headers: HeaderPairs) -> list[list[Any]]:
    return [[k, _hex(v)] for k, v in headers]


def headers_from_json(headers: Iterable[Iterable[Any]] | None) -> HeaderPairs:
    return tuple((str(k), _unhex(v)) for k, v in (headers or ()))


@dataclass(frozen=True)
class Context:
    """The record being processed: what a store's layers see of ``ProcessorContext``."""

    timestamp: int = 0
    headers: HeaderPairs = ()
    offset: int = -1
    topic: str = ""
    partition: int = -1

    def to_json(self) -> dict[str, Any]:
        return {
            "timestamp": self.timestamp,
            "headers": headers_to_json(self.headers),
            "offset": self.offset,
            "topic": self.topic,
            "partition": self.partition,
        }


@dataclass(frozen=True)
class Record:
    """A changelog record: key, value (None = tombstone), record timestamp, record headers."""

    key: bytes
    value: bytes | None
    timestamp: int
    headers: HeaderPairs = ()

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key.hex(), "value": _hex(self.value), "timestamp": self.timestamp,
                "headers": headers_to_json(self.headers)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Record:
        return cls(bytes.fromhex(data["key"]), _unhex(data["value"]), int(data["timestamp"]),
                   headers_from_json(data.get("headers")))


def _checked(record: Record) -> Record:
    if record.timestamp < 0:
        raise Refused(f"a changelog record cannot have the negative timestamp {record.timestamp}")
    return record


def record_for_put(store_type: str, key: bytes, stored: bytes | None, context: Context) -> Record:
    """The changelog record of writing ``stored`` (the store-layout bytes, None = tombstone) under ``key``."""
    if stored is None:
        headers = context.headers if store_type == HEADERS else ()
        return _checked(Record(key, None, context.timestamp, headers))
    if store_type == PLAIN:
        return _checked(Record(key, stored, context.timestamp))
    if store_type == TIMESTAMPED:
        raw, timestamp = split_timestamped(stored)
        return _checked(Record(key, raw, timestamp))
    if store_type == HEADERS:
        raw, timestamp, headers = split_headers_value(stored)
        return _checked(Record(key, raw, timestamp, headers))
    raise ValueError(f"the model has no {store_type!r} store type")


def record_for_delete(store_type: str, key: bytes, context: Context) -> Record:
    return record_for_put(store_type, key, None, context)


def restored_value(store_type: str, record: Record) -> bytes | None:
    """What a store of ``store_type`` stores when it restores ``record``."""
    if record.value is None:
        return None
    if store_type == PLAIN:
        return record.value
    if store_type == TIMESTAMPED:
        return timestamped_value(record.value, record.timestamp)
    if store_type == HEADERS:
        return headers_value(record.value, record.timestamp, record.headers)
    raise ValueError(f"the model has no {store_type!r} store type")


def replay(store_type: str, records: Iterable[Record], into: dict[bytes, bytes] | None = None) -> dict[bytes, bytes]:
    """The map a store of ``store_type`` holds after restoring ``records`` in order over ``into``."""
    state = dict(into or {})
    for record in records:
        value = restored_value(store_type, record)
        if value is None:
            state.pop(record.key, None)
        else:
            state[record.key] = value
    return state


def _in_range(key: bytes, lower: bytes | None, upper: bytes | None, upper_inclusive: bool = True) -> bool:
    if lower is not None and key < lower:
        return False
    return upper is None or key < upper or (upper_inclusive and key == upper)


def prefix_upper_bound(prefix: bytes) -> bytes | None:
    """``Bytes.increment(prefix)``; None when the carry overflows (empty or all-FF)."""
    if not prefix or all(b == 0xFF for b in prefix):
        return None
    number = int.from_bytes(prefix, "big") + 1
    return number.to_bytes(len(prefix), "big")


# --- the innermost store -------------------------------------------------------------------------------------


@dataclass
class Layout:
    """Where a store keeps its data: the home column family and, in upgrade mode, the legacy one."""

    home: str
    legacy: str | None = None
    convert: Callable[[bytes], bytes] | None = None


def offsets_ahead_of_data(store_type: str, image: Image, committed: int | None) -> bool:
    """KV-57 (4): committed offsets, but the type's data family is absent and no family holds data or is an older
    type's own: refused at open, although Kafka opens it (an emptied plain store reopened as a newer type too)."""
    return (committed is not None and HOME_CF[store_type] not in image and not any(image.values())
            and set(image) <= {CF_DEFAULT})


def open_layout(store_type: str, image: Image) -> Layout:
    """Decide, from the column families on disk, how a RocksDB store of ``store_type`` opens; mutates ``image``
    (families created or dropped at open). Raises :class:`Refused` where Kafka refuses to open."""
    default = image.setdefault(CF_DEFAULT, {})
    if store_type == PLAIN:
        unknown = [cf for cf in (CF_TIMESTAMPED, CF_HEADERS) if cf in image]
        if unknown:
            raise Refused(f"column families not opened: {unknown}")
        return Layout(CF_DEFAULT)
    if store_type == TIMESTAMPED:
        if CF_HEADERS in image:
            raise Refused("column family keyValueWithTimestampAndHeaders not opened")
        image.setdefault(CF_TIMESTAMPED, {})
        if default:
            return Layout(CF_TIMESTAMPED, CF_DEFAULT, LEGACY_CONVERSIONS[(PLAIN, TIMESTAMPED)])
        return Layout(CF_TIMESTAMPED)
    if store_type != HEADERS:
        raise ValueError(f"the model has no {store_type!r} store type")
    image.setdefault(CF_HEADERS, {})
    if CF_TIMESTAMPED in image:
        if default:
            raise Refused("Cannot have both plain (DEFAULT) and timestamped data")
        if image[CF_TIMESTAMPED]:
            return Layout(CF_HEADERS, CF_TIMESTAMPED, LEGACY_CONVERSIONS[(TIMESTAMPED, HEADERS)])
        del image[CF_TIMESTAMPED]  # an empty legacy family is dropped
        return Layout(CF_HEADERS)
    if default:
        return Layout(CF_HEADERS, CF_DEFAULT, LEGACY_CONVERSIONS[(PLAIN, HEADERS)])
    return Layout(CF_HEADERS)


class BytesStore:
    """The innermost store: RocksDB column families with the lazy upgrade, or an in-memory map."""

    def __init__(self, store_type: str, backend: str, image: Image) -> None:
        self.store_type = store_type
        self.backend = backend
        self.image = image
        if backend == MEMORY:
            self.layout = Layout(MEMORY_MAP)
            image.setdefault(MEMORY_MAP, {})
        else:
            self.layout = open_layout(store_type, image)
        self.on_write: Callable[[], None] = lambda: None

    @property
    def home(self) -> dict[bytes, bytes]:
        return self.image[self.layout.home]

    def _legacy(self) -> dict[bytes, bytes]:
        return self.image[self.layout.legacy] if self.layout.legacy else {}

    def view(self, key: bytes) -> bytes | None:
        """The value of ``key`` without migrating it (``getOnly``)."""
        if key in self.home:
            return self.home[key]
        legacy = self._legacy()
        if key in legacy:
            assert self.layout.convert is not None
            return self.layout.convert(legacy[key])
        return None

    def get(self, key: bytes) -> bytes | None:
        """``get``: a legacy entry is migrated into the home family (converted) on the way."""
        value = self.view(key)
        if value is not None and key not in self.home:
            self.write(key, value)
        return value

    def write(self, key: bytes, value: bytes | None) -> None:
        self._legacy().pop(key, None)
        if value is None:
            self.home.pop(key, None)
        else:
            self.home[key] = value
        self.on_write()

    def write_batch(self, entries: list[tuple[bytes, bytes | None]]) -> None:
        on_write, self.on_write = self.on_write, lambda: None
        try:
            for key, value in entries:
                self.write(key, value)
        finally:
            self.on_write = on_write
        self.on_write()

    def merged(self) -> dict[bytes, bytes]:
        """Every entry as reads see it: legacy entries converted, the home family winning."""
        out = {}
        if self.layout.legacy:
            assert self.layout.convert is not None
            out = {k: self.layout.convert(v) for k, v in self._legacy().items()}
        out.update(self.home)
        return out

    def entries(self, lower: bytes | None, upper: bytes | None, reverse: bool, upper_inclusive: bool = True) -> list[tuple[bytes, bytes]]:
        selected = sorted((k, v) for k, v in self.merged().items() if _in_range(k, lower, upper, upper_inclusive))
        return selected[::-1] if reverse else selected

    def count(self) -> int:
        return len(self.home) + len(self._legacy())


# --- the record cache --------------------------------------------------------------------------------------


@dataclass
class Slot:
    value: bytes | None
    context: Context | None
    dirty: bool
    size: int
    used: int = 0
    written: int = 0


def _utf16_units(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def slot_size(key: bytes, value: bytes | None, context: Context | None) -> int:
    """The bytes the cache counts for an entry (CACHE-6)."""
    size = len(key) + 24 + 1 + 8 + 8 + 4 + (len(value) if value is not None else 0)
    if context is not None:
        size += _utf16_units(context.topic)
        size += sum(_utf16_units(k) + (len(v) if v is not None else 0) for k, v in context.headers)
    return size


class RecordCache:
    """The cache of one store: slots with a use tick (eviction takes the smallest) and a write tick (flush order)."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.slots: dict[bytes, Slot] = {}
        self.tick = 0

    def _next_tick(self) -> int:
        self.tick += 1
        return self.tick

    def size(self) -> int:
        return sum(slot.size for slot in self.slots.values())

    def lookup(self, key: bytes) -> Slot | None:
        slot = self.slots.get(key)
        if slot is not None:
            slot.used = self._next_tick()
        return slot

    def store(self, key: bytes, slot: Slot) -> None:
        slot.used = self._next_tick()
        if slot.dirty:
            slot.written = slot.used
        self.slots[key] = slot

    def eldest(self) -> bytes:
        return min(self.slots, key=lambda k: self.slots[k].used)

    def dirty_in_order(self) -> list[bytes]:
        return sorted((k for k, s in self.slots.items() if s.dirty), key=lambda k: self.slots[k].written)


# --- iterators ---------------------------------------------------------------------------------------------


@dataclass
class IteratorModel:
    """A live iterator: RocksDB iterates a snapshot taken at creation; memory copies the keys and reads values
    live, skipping keys deleted since (and yields nothing once its store closed)."""

    backend: str
    snapshot: list[tuple[bytes, bytes]] = field(default_factory=list)
    keys: list[bytes] = field(default_factory=list)
    live: dict[bytes, bytes] | None = None
    closed: bool = False
    store_closed: bool = False
    #: Its process was killed (``crash``): the iterator is gone with it, and no behaviour of a store is left to check.
    lost: bool = False

    def next(self, count: int) -> list[tuple[bytes, bytes]]:
        if self.closed or (self.store_closed and self.backend == ROCKSDB):
            raise Refused("iterator closed")
        out: list[tuple[bytes, bytes]] = []
        if self.backend == ROCKSDB:
            out, self.snapshot = self.snapshot[:count], self.snapshot[count:]
            return out
        live = self.live if self.live is not None else {}
        while self.keys and len(out) < count:
            key = self.keys.pop(0)
            if key in live:
                out.append((key, live[key]))
        return out


# --- the whole store ---------------------------------------------------------------------------------------


@dataclass
class Options:
    logging: bool = True
    caching: bool = False
    cache_max_bytes: int = DEFAULT_CACHE_MAX_BYTES
    cache_flush_listener: bool = False


class ChangelogKeeper:
    """What every family's model keeps of its changelog: each record logged (``changelog``), those the machine has
    not compared yet (``pending``), and the record context of the next write (CL-1, RST-1)."""

    options: Any
    changelog: list[Record]
    pending: list[Record]
    context: Context

    def set_context(self, context: Context) -> None:
        self.context = context

    def take_pending(self) -> list[Record]:
        out, self.pending = self.pending, []
        return out

    def records_after(self, offset: int | None) -> list[Record]:
        """The changelog records after ``offset`` (all of them for None)."""
        return self.changelog[(offset + 1 if offset is not None else 0):]

    def _log(self, record: Record) -> None:
        if self.options.logging:
            self.changelog.append(record)
            self.pending.append(record)


class SegmentedRestore(abc.ABC):
    """The restore of the segmented families (window WS-26, session SS-15): batch by batch, RocksDB first advances
    the observed stream time to the batch's largest record time, then writes each record into its live segment
    verbatim; the in-memory store puts each record as a write would, nothing logged."""

    backend: str
    observed: int

    @abc.abstractmethod
    def _require_open(self, op: str) -> None:
        """Refuse ``op`` on a closed store."""

    @abc.abstractmethod
    def _note_write(self) -> None:
        """Whatever the family keeps after a write to its RocksDB segments."""

    @abc.abstractmethod
    def _record_time(self, changelog_key: bytes) -> int:
        """The time of a changelog key that drives stream time (a window's start, a session's end)."""

    @abc.abstractmethod
    def _restore_row(self, record: Record) -> None:
        """Write one restored RocksDB row (the family's restored value), unless its segment has expired."""

    @abc.abstractmethod
    def _restore_in_memory(self, batch: list[Record]) -> None:
        """Put each record of ``batch`` into the in-memory store as a write would, nothing logged."""

    def restore(self, records: list[Record], batch_size: int) -> None:
        self._require_open("restore")
        for first in range(0, len(records), batch_size):
            batch = records[first:first + batch_size]
            if self.backend == ROCKSDB:
                for record in batch:
                    self.observed = max(self.observed, self._record_time(record.key))
                for record in batch:
                    self._restore_row(record)
                self._note_write()
            else:
                self._restore_in_memory(batch)


class KVModel(ChangelogKeeper):
    """One logical store across its lifetime: opens, writes, commits, closes, crashes, upgrades and restores.

    ``image`` is the store's column families as the open store presents them (for RocksDB, what a clean
    close persists); ``changelog`` every record ever logged; ``crash_candidates`` the images a crash may
    leave behind (the last commit or close, then after every later write of the store).
    """

    options: Options

    def __init__(self, store_type: str, backend: str, options: Options | None = None) -> None:
        self.store_type = store_type
        self.backend = backend
        self.options = options or Options()
        self.image: Image = {}
        self.changelog: list[Record] = []
        self.pending: list[Record] = []
        self.committed: int | None = None
        self.crash_candidates: list[Image] = []
        #: The image and committed offset at the last open or clean close: where a crash may roll a store back to
        #: when its commits are not durable (KV-50; Kafka's store, KV-67).
        self.durable: tuple[Image, int | None] = ({}, None)
        self.context = Context()
        self.store: BytesStore | None = None
        self.cache: RecordCache | None = None
        self.iterators: list[IteratorModel] = []
        #: The store's life state, as models.life names it: what the life table answers for (KV-12); ``store``
        #: is set exactly while it is open.
        self.life = "closed"

    # --- lifecycle ---------------------------------------------------------------------------------------

    @property
    def is_open(self) -> bool:
        return self.life == "open"

    def open(self, store_type: str | None = None) -> None:
        """Open (or reopen, possibly as a newer store type) the store; Refused where Kafka refuses."""
        store_type = STORE_TYPE_ALIASES.get(store_type, store_type) if store_type else self.store_type
        if self.backend == ROCKSDB and offsets_ahead_of_data(store_type, self.image, self.committed):
            raise Refused(f"offsets ahead of data: no {HOME_CF[store_type]} family and no data (KV-57)")
        attempt = {} if self.backend == MEMORY else copy.deepcopy(self.image)
        store = BytesStore(store_type, self.backend, attempt)
        self.store_type = store_type
        self.image = attempt
        self.store = store
        self.life = "open"
        store.on_write = self._note_write
        self.cache = RecordCache(self.options.cache_max_bytes) if self.options.caching else None
        self.crash_candidates = [copy.deepcopy(self.image)]
        self.durable = (copy.deepcopy(self.image), self.committed)

    def _note_write(self) -> None:
        self.crash_candidates.append(copy.deepcopy(self.image))

    def _require_open(self, op: str) -> BytesStore:
        """The store, if the life table lets ``op`` through in the model's state (KV-12); else Refused."""
        life.require(self.life, op, Refused)
        assert self.store is not None
        return self.store

    def _close_iterators(self) -> None:
        for it in self.iterators:
            it.store_closed = True
        self.iterators = []

    def close(self) -> None:
        """A clean close: the cache is flushed first; an in-memory store's contents are gone."""
        if self.store is None:
            return
        if self.cache is not None:
            self._flush_cache()
        self._close_iterators()
        if self.backend == MEMORY:
            self.store.home.clear()
        self.store = None
        self.life = "closed"
        self.cache = None
        self.crash_candidates = [copy.deepcopy(self.image)]
        self.durable = (copy.deepcopy(self.image), self.committed)

    def crash(self) -> None:
        """The process dies: dirty cache entries are lost; which writes since the last commit survive is open."""
        if self.store is None:
            return
        for it in self.iterators:
            it.lost = True
        self._close_iterators()
        if self.backend == MEMORY:
            self.store.home.clear()
            self.image = {}
            self.crash_candidates = [{}]
        self.store = None
        self.life = life.after_crash(self.backend)
        self.cache = None

    def adopt_image(self, observed: Image, rolled_back: bool = False) -> bool:
        """After a crash: accept ``observed`` if it is one of the images the crash may leave. Empty families are
        ignored on both sides. ``rolled_back`` (a crash the reopen did not detect) admits only the image of the last
        open or clean close, with its committed offset (KV-50, KV-52); otherwise that image comes last."""
        wanted = _nonempty(observed)
        durable, offset = self.durable
        if rolled_back or not any(_nonempty(c) == wanted for c in self.crash_candidates):
            if self.backend == ROCKSDB and _nonempty(durable) == wanted:
                self.image = copy.deepcopy(durable)
                self.committed = offset
                self.crash_candidates = [copy.deepcopy(durable)]
                return True
            if rolled_back:
                return False
        for candidate in self.crash_candidates:
            if _nonempty(candidate) == wanted:
                self.image = copy.deepcopy(candidate)
                self.crash_candidates = [copy.deepcopy(candidate)]
                return True
        return False

    def candidate_views(self) -> list[dict[bytes, bytes]]:
        """The logical contents (``all()``) of every image a crash may leave behind."""
        views = []
        for candidate in self.crash_candidates:
            try:
                views.append(BytesStore(self.store_type, self.backend, copy.deepcopy(candidate)).merged())
            except Refused:
                continue
        return views

    def adopt_view(self, observed: dict[bytes, bytes]) -> bool:
        """After a crash, when the column families cannot be dumped: accept the first image whose logical
        contents are ``observed``."""
        for candidate in self.crash_candidates:
            try:
                view = BytesStore(self.store_type, self.backend, copy.deepcopy(candidate)).merged()
            except Refused:
                continue
            if view == observed:
                self.image = copy.deepcopy(candidate)
                self.crash_candidates = [copy.deepcopy(candidate)]
                return True
        return False

    def commit(self, offset: int | None) -> None:
        """``commit({changelog: offset})`` after a flush: the image so far is durable."""
        self._require_open("commit")
        if self.cache is not None:
            self._flush_cache()
        # In-memory stores keep no offsets: their committed offset stays unknown.
        self.committed = offset if self.backend == ROCKSDB else None
        self.crash_candidates = [copy.deepcopy(self.image)]

    def flush(self) -> None:
        self._require_open("commit")
        if self.cache is not None:
            self._flush_cache()

    # --- writes below the cache ---------------------------------------------------------------------------

    def _below_put(self, key: bytes, value: bytes | None, context: Context) -> None:
        store = self._require_open("write")
        store.write(key, value)
        if self.options.logging:
            self._log(record_for_put(self.store_type, key, value, context))

    # --- the cache ----------------------------------------------------------------------------------------

    def _cache_insert(self, key: bytes, value: bytes | None, context: Context | None) -> None:
        cache = self.cache
        assert cache is not None
        cache.store(key, Slot(value, context, context is not None, slot_size(key, value, context)))
        while cache.slots and cache.size() > cache.max_bytes:
            eldest = cache.eldest()
            slot = cache.slots.pop(eldest)
            if slot.dirty:
                self._flush_cache(evicted=(eldest, slot))

    def _flush_cache(self, evicted: tuple[bytes, Slot] | None = None) -> None:
        cache = self.cache
        assert cache is not None
        order = cache.dirty_in_order()
        if evicted is None and not order:
            return
        batch = ([evicted] if evicted is not None else []) + [(k, cache.slots[k]) for k in order]
        for _, slot in batch:
            slot.dirty = False
        for key, slot in batch:
            assert slot.context is not None
            if self.options.cache_flush_listener and slot.value is None and self._require_open("commit").get(key) is None:
                continue
            self._below_put(key, slot.value, slot.context)
        for key in order:
            if cache.slots[key].value is None:
                del cache.slots[key]

    def _read(self, key: bytes) -> bytes | None:
        store = self._require_open("read")
        if self.cache is None:
            return store.get(key)
        slot = self.cache.lookup(key)
        if slot is not None:
            return slot.value
        value = store.get(key)
        if value is not None:
            self._cache_insert(key, value, None)
        return value

    def _write(self, key: bytes, value: bytes | None) -> None:
        if self.cache is None:
            self._below_put(key, value, self.context)
        else:
            self._cache_insert(key, value, self.context)

    # --- the KeyValueStore operations ------------------------------------------------------------------------

    def put(self, key: bytes | None, value: bytes | None) -> None:
        if key is None:
            raise Refused("null key")
        self._require_open("write")
        self._write(key, value)

    def put_if_absent(self, key: bytes | None, value: bytes | None) -> bytes | None:
        if key is None:
            raise Refused("null key")
        previous = self._read(key)
        if previous is None:
            self._write(key, value)
        return previous

    def put_all(self, entries: list[tuple[bytes, bytes | None]]) -> None:
        if any(key is None for key, _ in entries):
            raise Refused("null key")
        store = self._require_open("write")
        if self.cache is not None:
            for key, value in entries:
                self._cache_insert(key, value, self.context)
            return
        store.write_batch(list(entries))
        for key, value in entries:
            if self.options.logging:
                self._log(record_for_put(self.store_type, key, value, self.context))

    def delete(self, key: bytes | None) -> bytes | None:
        if key is None:
            raise Refused("null key")
        store = self._require_open("write")
        if self.cache is not None:
            previous = self._read(key)
            self._cache_insert(key, None, self.context)
            return previous
        previous = store.view(key)
        store.write(key, None)
        if self.options.logging:
            self._log(record_for_delete(self.store_type, key, self.context))
        return previous

    def get(self, key: bytes | None) -> bytes | None:
        if key is None:
            raise Refused("null key")
        return self._read(key)

    def _scan(self, lower: bytes | None, upper: bytes | None, reverse: bool, upper_inclusive: bool = True) -> list[tuple[bytes, bytes]]:
        store = self._require_open("read")
        below = dict(store.entries(lower, upper, reverse, upper_inclusive))
        if self.cache is None:
            return list(below.items())
        cached_keys = sorted(k for k in self.cache.slots if _in_range(k, lower, upper, upper_inclusive))
        merged = dict(below)
        for key in (cached_keys[::-1] if reverse else cached_keys):
            slot = self.cache.lookup(key)
            assert slot is not None
            if slot.value is None:
                merged.pop(key, None)
            else:
                merged[key] = slot.value
        return sorted(merged.items(), reverse=reverse)

    def range(self, lower: bytes | None, upper: bytes | None, reverse: bool = False) -> list[tuple[bytes, bytes]]:
        if lower is not None and upper is not None and lower > upper:
            return []
        return self._scan(lower, upper, reverse)

    def all(self, reverse: bool = False) -> list[tuple[bytes, bytes]]:
        return self._scan(None, None, reverse)

    def prefix_scan(self, prefix: bytes) -> list[tuple[bytes, bytes]]:
        self._require_open("read")
        upper = prefix_upper_bound(prefix)
        if upper is None and (self.cache is not None or self.backend == MEMORY):
            raise Refused("Bytes.increment overflows for an empty or all-FF prefix")
        if upper is None:
            return self._scan(prefix, None, False)
        return self._scan(prefix, upper, False, upper_inclusive=False)

    def approximate_num_entries(self) -> int:
        return self._require_open("read").count()

    # --- iterators (uncached stores) ----------------------------------------------------------------------

    def open_iterator(self, lower: bytes | None, upper: bytes | None, reverse: bool, upper_inclusive: bool = True) -> IteratorModel:
        store = self._require_open("read")
        assert self.cache is None, "live iterators are modelled without the cache"
        entries = store.entries(lower, upper, reverse, upper_inclusive)
        if self.backend == ROCKSDB:
            it = IteratorModel(ROCKSDB, snapshot=entries)
        else:
            it = IteratorModel(MEMORY, keys=[k for k, _ in entries], live=store.home)
        self.iterators.append(it)
        return it

    # --- restore ---------------------------------------------------------------------------------------------

    def restore(self, records: list[Record], batch_size: int) -> None:
        """Restore ``records`` into the store below, batch by batch; nothing logged, the cache untouched."""
        store = self._require_open("restore")
        for start in range(0, len(records), batch_size):
            batch = records[start : start + batch_size]
            store.write_batch([(r.key, restored_value(self.store_type, r)) for r in batch])

    # --- views for comparison ----------------------------------------------------------------------------------

    def logical(self) -> dict[bytes, bytes]:
        """What ``all()`` returns now, without touching the cache's recency."""
        store = self._require_open("read")
        merged = store.merged()
        if self.cache is not None:
            for key, slot in self.cache.slots.items():
                if slot.value is None:
                    merged.pop(key, None)
                else:
                    merged[key] = slot.value
        return merged

    def below(self) -> dict[bytes, bytes]:
        """What the store below the cache holds (the changelog's view)."""
        return self._require_open("read").merged()

    def data_column_families(self) -> Image:
        """The non-empty data column families (RocksDB), as a dump shows them."""
        return _nonempty(self.image)


def _nonempty(image: Image) -> Image:
    return {cf: dict(entries) for cf, entries in image.items() if entries and cf != CF_OFFSETS}


#: SESS-1, SESS-11's case of where a family's rows are by segment: not this family's (its keys are checked by its own
#: layout cases).
rows_by_segment = None


def probe(key: str) -> Probe:
    """The family's probe for the store rules checked at every family (probes.Probe), writing ``key`` (hex)."""
    return Probe(PLAIN, {}, ("store.put", {"key": key, "value": "aa"}),
                 (("store.get", {"key": key}), ("store.all", {}), ("store.reverse_all", {}),
                  ("store.range", {"from": None, "to": None}), ("store.reverse_range", {"from": None, "to": None}),
                  ("store.prefix_scan", {"prefix": key}), ("store.approximate_num_entries", {}),
                  ("store.iterator_open", {"kind": "all"})),
                 key,
                 (("store.put_if_absent", {"key": "6a", "value": "bb"}), ("store.delete", {"key": key}),
                  ("store.put_all", {"entries": [[key, "cc"]]})), remove=("store.delete", {"key": key}))


# --- the cases at the family's legacy files, zero-byte values and restores (test_store_rules_family_places) -------

#: None: the key-value store's cases of those places are ``test_store_rules_places``' (its legacy files read at
#: open, its zero-byte values), not the shared module's.
FAMILY_PLACES: FamilyPlaces | None = None


# --- the paired machine (kstate conformance --model: the implementation and the model step by step) ------------


class KeyValuePair(StorePair):
    """A key-value store of one type on one backend, drawn options: change-logging, the record cache and its size."""

    family_ops = ("store.open", "store.put", "store.put_all", "store.get_typed", "store.iterator_open")
    iterators = Bundle("iterators")

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.live_iterators: set[str] = set()
        self.values = stored_values(self.store_type)
        self.written: set[bytes] = set()

    @initialize(logging=st.sampled_from([True, True, False]), caching=st.sampled_from([False, False, True]),
                cache_max_bytes=CACHE_SIZES)
    def start(self, logging: bool, caching: bool, cache_max_bytes: int) -> None:
        self.open_options = {"logging": logging, "caching": caching, "cache_max_bytes": cache_max_bytes}
        self.open_store()

    # --- writes -------------------------------------------------------------------------------------------

    @rule(key=KEYS, data=st.data())
    def put(self, key: bytes, data: st.DataObject) -> None:
        self.on_store("store.put", key=key.hex(), value=hex_or_none(data.draw(st.none() | self.values, label="value")))
        self.written.add(key)

    @rule(data=st.data())
    def put_if_absent(self, data: st.DataObject) -> None:
        key = self.some_key(data, "key") or b""
        self.on_store("store.put_if_absent", key=key.hex(), value=data.draw(self.values, label="value").hex())
        self.written.add(key)

    @rule(keys=st.lists(st.none() | KEYS, max_size=4).filter(lambda ks: None not in ks[1:]) , data=st.data())
    def put_all(self, keys: list[bytes | None], data: st.DataObject) -> None:
        entries = [[hex_or_none(k), hex_or_none(data.draw(st.none() | self.values, label="value"))] for k in keys]
        self.on_store("store.put_all", entries=entries)

    @rule(key=KEYS)
    def delete(self, key: bytes) -> None:
        self.on_store("store.delete", key=key.hex())

    @rule(op=st.sampled_from(["store.put", "store.get", "store.delete", "store.put_if_absent"]))
    def null_key(self, op: str) -> None:
        self.on_store(op, key=None, value=None)

    # --- reads --------------------------------------------------------------------------------------------

    @rule(data=st.data())
    def get(self, data: st.DataObject) -> None:
        self.on_store("store.get", key=hex_or_none(self.some_key(data, "key")))

    @rule(key=KEYS, fields=st.lists(st.sampled_from(["value", "timestamp", "headers"]), unique=True, min_size=1))
    def get_typed(self, key: bytes, fields: list[str]) -> None:
        self.on_store("store.get_typed", key=key.hex(), fields=sorted(fields))

    def reverse_scan(self, op: str, payload: dict[str, Any]) -> None:
        """A reverse scan; on a caching store compared with the model's forward scan reversed ("CACHE-7 reverse")."""
        if not self.open_options.get("caching"):
            self.agree(op, payload)
            return
        excluded("CACHE-7 reverse")
        forward = {"store.reverse_all": "store.all", "store.reverse_range": "store.range"}[op]
        self.agree(op, payload, model_op=forward, normalise_model=lambda out: {**out, "entries": out["entries"][::-1]})

    def some_key(self, data: st.DataObject, label: str) -> bytes | None:
        """A key written before half the time (so that bounds meet data, KV-9), else any key or null."""
        keys = sorted(self.written)
        return data.draw(st.sampled_from(keys) | MAYBE_KEY if keys else MAYBE_KEY, label=label)

    @rule(reverse=st.booleans(), data=st.data())
    def range(self, reverse: bool, data: st.DataObject) -> None:
        lower, upper = self.some_key(data, "from"), self.some_key(data, "to")
        bounds = {"from": hex_or_none(lower), "to": hex_or_none(upper)}
        if reverse:
            self.reverse_scan("store.reverse_range", {"handle": self.handle, **bounds})
        else:
            self.on_store("store.range", **bounds)

    @rule(prefix=KEYS)
    def prefix_scan(self, prefix: bytes) -> None:
        self.on_store("store.prefix_scan", prefix=prefix.hex())

    @rule()
    def count(self) -> None:
        excluded("KV-15")
        if self.backend == "memory":
            self.on_store("store.approximate_num_entries")

    def read_everything(self, handle: str) -> None:
        self.agree("store.all", {"handle": handle})
        self.reverse_scan("store.reverse_all", {"handle": handle})

    @invariant()
    def contents_agree(self) -> None:
        """Everything, both ways; and the range up to the highest key written, whose bound is inclusive (KV-9)."""
        if self.handle is not None:
            self.read_everything(self.handle)
            if self.written:
                self.on_store("store.range", **{"from": None, "to": max(self.written).hex()})

    # --- iterators (none across a write on a caching store: CACHE-7) --------------------------------------

    @precondition(lambda self: self.handle is not None and not self.open_options.get("caching"))
    @rule(target=iterators, kind=st.sampled_from(["range", "reverse_range", "all", "reverse_all", "prefix_scan"]),
          lower=MAYBE_KEY, upper=MAYBE_KEY)
    def open_iterator(self, kind: str, lower: bytes | None, upper: bytes | None) -> str:
        excluded("CACHE-7")
        payload: dict[str, Any] = {"kind": kind}
        if kind in ("range", "reverse_range"):
            payload.update({"from": hex_or_none(lower), "to": hex_or_none(upper)})
        elif kind == "prefix_scan":
            payload["prefix"] = (lower or b"").hex()
        name = self.fresh_name("i")
        model_out = self.agree("store.iterator_open", {"handle": self.handle, **payload},
                               normalise=lambda out: {k: v for k, v in out.items() if k != "iterator"})
        if "error" in model_out:
            return name  # refused by both (an in-memory prefix scan of an unboundable prefix, KV-14): never live
        self.subject.names[name] = self.subject.last["iterator"]
        self.model.names[name] = self.model.last["iterator"]
        self.live_iterators.add(name)
        return name

    @rule(it=iterators, count=st.integers(min_value=1, max_value=3))
    def iterator_next(self, it: str, count: int) -> None:
        if it in self.live_iterators:  # iterators of a closed store are not read (KV-12)
            self.agree("store.iterator_next", {"iterator": it, "max": count})

    @rule(it=iterators)
    def iterator_peek(self, it: str) -> None:
        if it in self.live_iterators:
            self.agree("store.iterator_peek_next_key", {"iterator": it})

    @rule(it=consumes(iterators))
    def iterator_close(self, it: str) -> None:
        if it in self.live_iterators:
            self.agree("store.iterator_close", {"iterator": it})
            self.live_iterators.discard(it)

    @rule(commit=st.booleans())
    def restart(self, commit: bool) -> None:
        for it in sorted(self.live_iterators):
            self.agree("store.iterator_close", {"iterator": it})
        self.live_iterators.clear()
        super().restart(commit)


register(PairedFamily(
    "kv", KeyValuePair, "key_value_store", STORE_TYPES, ("rocksdb", "memory"),
    ("KV-1", "KV-6", "KV-9", "KV-11", "KV-15", "KV-54", "CL-1", "CL-2", "CL-8", "CACHE-1", "CACHE-7", "RST-1", "OFF-5",
     "OFF-8"),
    "A key-value store answers every operation as the model does and leaves the same rows on disk.",
    {PLAIN: RAW, TIMESTAMPED: st.builds(timestamped_value, RAW, TIMESTAMPS),
     HEADERS: st.builds(headers_value, RAW, TIMESTAMPS, HEADER_PAIRS)},
))
