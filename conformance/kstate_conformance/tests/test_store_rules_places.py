"""Rules checked at the places of the rule x place matrix the rest of the suite did not reach (issue 32, section E;
spec/README.md, "Places"): the changelog records and their restore at each store type of every family (CL-*, HV-*,
TSKV-*), the offsets family of each family's databases (OFF-5 to OFF-11, OFF-24), upgrades in place (LAY-7, LAY-8,
TSKV-5), the versioned store's one database (VER-1, VER-2, VS-1), closed, crashed and in-memory stores (KV-12, SS-37,
VS-37, WS-36, VS-20), the window and session keys at the store (WIN-*, SESS-*), restores in batches of any size and
the stream time they advance (RST-1, RST-3, RST-6, VS-5, VS-13, WS-6, WS-8, WS-35, WS-43), and the legacy files a
key-value store migrates (OFF-16 to OFF-18).

The expected records, rows and bytes are worked out from the spec rules' text. The mutants of
``mutants/places_mutants.py`` are the bugs these cases catch that the rest of the suite let through.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from kstate_conformance import rules
from kstate_conformance import store_types as types
from kstate_conformance.harness import MEMORY, ROCKSDB, TOPIC, Kit, Store, h, i64, kit, record
from kstate_conformance.probes import Probe
from kstate_conformance.tests.test_store_rules_every_family import (
    CLOSED_STORE_FAMILIES,
    FAMILIES,
    K,
    _context,
    _open,
)

__all__ = ["kit"]

#: The record context of every write (CL-2: its headers are never logged by a store without headers).
CONTEXT_TS = 50
CONTEXT_HEADERS: list[list[Any]] = [["ctx", h("c")]]
#: The timestamp and headers a timestamped or header-aware value carries (CL-4, CL-8, HV-6, HV-11).
STORED_TS = 7
STORED_HEADERS: list[tuple[str, bytes | None]] = [("s", b"\x02"), ("s", None)]
LOGGED_HEADERS: list[list[Any]] = [["s", "02"], ["s", None]]
RAW, OTHER = "aa", "bb"
K1, K2, K3 = h("k1"), h("k2"), h("k3")


def _stored(store_type: str, raw: str, headers: list[tuple[str, bytes | None]] = STORED_HEADERS) -> str:
    """The stored value a store type holds for ``raw`` at :data:`STORED_TS` with ``headers`` (TSKV-1, HV-6, HV-11),
    as its family's model lays it out."""
    model = types.family_model(_FAMILY_BY_NAME[types.FAMILY_OF[store_type]])
    return bytes(model.changelog_stored_value(store_type, bytes.fromhex(raw), STORED_TS, headers)).hex()


_FAMILY_BY_NAME = {family.name: family for family in types.FAMILIES}


@dataclass(frozen=True)
class Logged:
    """One store type: how to write ``k1`` and ``k2`` then remove ``k2``, the records those three writes log, and how
    to read a key back as its stored value (None when absent), each from its family's probe (probes.Probe): its
    write, its removal, its first read and its changelog key, at the probe's times."""

    store_type: str
    family: str

    @property
    def timestamped(self) -> bool:
        return self.store_type.startswith("timestamped")

    @property
    def headers(self) -> bool:
        return self.store_type.endswith("with_headers")

    def probe(self, key: str) -> Probe:
        probe: Probe = types.family_model(_FAMILY_BY_NAME[self.family]).probe(key)
        return probe

    def write(self, store: Store, key: str, value: str | None) -> None:
        self.write_stored(store, key, None if value is None else _stored(self.store_type, value))

    def write_stored(self, store: Store, key: str, stored: str | None) -> None:
        """Write the stored value ``stored`` as it is (no conversion by :func:`_stored`); None removes the key, by
        the family's removal or, a family without one (a window store, WS-*), a write of null."""
        probe = self.probe(key)
        if stored is None and probe.remove is not None:
            op, payload = probe.remove
        else:
            op, payload = probe.write[0], {**probe.write[1], "value": stored}
        store.ok(op, **payload)

    def read(self, store: Store, key: str) -> Any:
        op, payload = self.probe(key).reads[0]
        answer = store.ok(op, **payload)
        if "record" in answer:  # a versioned read answers the version, its value and timestamp (VS-*)
            found = answer["record"]
            return None if found is None else (found["value"], found["timestamp"])
        return answer["value"]

    def changelog_key(self, key: str) -> str:
        """CL-6: ``[k][windowStart][seqnum 0]`` (no duplicates retained); CL-7: ``[k][end][start]``, end first."""
        return self.probe(key).restore_key

    def _version_timestamp(self, key: str, removed: bool) -> int | None:
        """The version timestamp a write of the family carries (a versioned put's or delete's, CL-5), or None."""
        probe = self.probe(key)
        write = probe.remove if removed and probe.remove is not None else probe.write
        timestamp: int | None = write[1].get("timestamp")
        return timestamp

    def logged(self, key: str, raw: str | None) -> dict[str, Any]:
        """The record one write logs (CL-2 to CL-8): the raw value; the version timestamp (CL-5), the stored
        timestamp (CL-4, CL-6, CL-8) or the context's (CL-2, CL-7); the stored headers (CL-8) or none (CL-2); a
        tombstone at the version timestamp (CL-5) or the context's, with the context's headers when header-aware."""
        version = self._version_timestamp(key, raw is None)
        if version is not None:
            return record(self.changelog_key(key), raw, version)
        if raw is None:
            return record(self.changelog_key(key), None, CONTEXT_TS, CONTEXT_HEADERS if self.headers else None)
        timestamp = STORED_TS if self.timestamped else CONTEXT_TS
        return record(self.changelog_key(key), raw, timestamp, LOGGED_HEADERS if self.headers else None)

    def restored(self, raw: str) -> Any:
        """What a read answers for a key restored from ``logged`` (CL-9 identity, CL-10 and TSKV-6 the record
        timestamp prepended, CL-11 and HV-12 the record headers in front, VS: the version at its timestamp)."""
        version = self._version_timestamp(K1, removed=False)
        if version is not None:
            return (raw, version)
        return _stored(self.store_type, raw)


#: Every store type of every family, in the table's order, but the header-aware versioned type: its model lays out
#: the plain versioned type's restored value only (``versioned.changelog_stored_value``), so that type stands for it.
LOGGED = [Logged(store_type, family.name) for family in types.FAMILIES for store_type in family.types
          if store_type != types.VERSIONED_KV_WITH_HEADERS]


def _open_logged(kit: Kit, logged: Logged, name: str) -> Store:
    kit.require(logged.store_type, ROCKSDB)
    options = FAMILIES[logged.family].options  # the family's probe's: its retention and segments (or none)
    return kit.open(logged.store_type, ROCKSDB, name=name, **({"options": options} if options else {}))


@rules("CL-1", "CL-2", "CL-4", "CL-5", "CL-6", "CL-7", "CL-8", "CL-14", "CL-9", "CL-10", "CL-11", "HV-6", "HV-11",
       "HV-12", "TSKV-6")
@pytest.mark.kstate_places("store:kv", "store:versioned", "store:window", "store:session", "restore")
@pytest.mark.parametrize("logged", LOGGED, ids=[t.store_type for t in LOGGED])
def test_each_store_type_logs_its_writes_and_restores_them_as_the_spec_lays_them_out(kit: Kit,
                                                                                      logged: Logged) -> None:
    """Place: a RocksDB store of each type, then a restore into a new one. Two writes and a removal log one record
    each, key, value, timestamp and headers as CL-2 to CL-8 lay them out for the type, to ``app-<store>-changelog``
    (CL-14); restored into an empty store of the same type, they rebuild the stored values (CL-9 to CL-11, HV-12,
    TSKV-6) and the removal deletes."""
    store = _open_logged(kit, logged, "orders")
    assert store.info.get("changelog_topic", "app-orders-changelog") == "app-orders-changelog", store.info
    store.ok("store.set_context", timestamp=CONTEXT_TS, headers=CONTEXT_HEADERS, topic="in", partition=0, offset=1)
    logged.write(store, K1, RAW)
    logged.write(store, K2, OTHER)
    logged.write(store, K2, None)
    log = store.ok("store.changelog")
    assert log["topic"] == "app-orders-changelog", log
    expected = [logged.logged(K1, RAW), logged.logged(K2, OTHER), logged.logged(K2, None)]
    assert log["records"] == expected
    store.close()
    copy = _open_logged(kit, logged, "copy")
    copy.restore(log["records"])
    assert copy.changelog() == [], "a restore logs nothing (RST-4)"
    assert logged.read(copy, K1) == logged.restored(RAW)
    assert logged.read(copy, K2) is None


# --- OFF-5 to OFF-11: the offsets family of every family's databases ------------------------------------------------


def _position_bytes(partitions: list[tuple[int, int]]) -> str:
    """OFF-8 and OFF-9 worked out by hand: topic ``in``'s partitions, the meaningful bytes then zeros up to
    ``8 + 32 + (32 + 2 + 32 + 96 n)``."""
    meaningful = "00" + "00000001" + "00000002" + h("in") + f"{len(partitions):08x}"
    meaningful += "".join(f"{partition:08x}" + i64(offset) for partition, offset in partitions)
    capacity = 8 + 32 + 32 + 2 + 32 + 96 * len(partitions)
    return meaningful + "00" * (capacity - len(meaningful) // 2)


STATUS_CLOSED, STATUS_OPEN = "00" * 8, "00" * 7 + "01"


def _offsets_rows(store: Store) -> list[dict[str, str]]:
    """The ``offsets`` family of each of the store's databases (one; or one per segment)."""
    dumped = store.ok("store.dump")
    databases = dumped["segments"].values() if "segments" in dumped else [dumped["column_families"]]
    return [dict(families.get("offsets", [])) for families in databases]


#: The position the versioned store commits is the one its writes advanced (VS-38): its parameter counts for VS-38
#: and OFF-5 (the position a commit writes), not for the position's bytes, which the other families check, nor for
#: its status, which the versioned test after it checks on its own, so that a listed VS-38 bug hides no status rule.
PADDED_POSITION_RULES = ("OFF-5", "OFF-6", "OFF-7", "OFF-8", "OFF-9", "OFF-10", "OFF-11")
VERSIONED_POSITION_RULES = ("VS-38", "OFF-5")


def _committed_closed_reopened(kit: Kit, family: Probe) -> tuple[list[dict[str, str]], Store]:
    """The place of the two status tests below: a RocksDB store of ``family`` written at offset 7 of partition 0,
    committed at 5 and closed; its offsets rows as the close left them (OFF-7), and the store reopened, every
    database marked OPEN (OFF-6), then written at offset 4 of partition 0 (lower than the loaded 7: kept at 7)."""
    kit.require(family.store_type, ROCKSDB, "offsets", "dump")
    store = _open(kit, family, ROCKSDB)
    _context(store, 7)
    family.put(store, h("a"))
    store.commit(5)
    store.close()
    rows = _offsets_rows(store)
    again = _open(kit, family, ROCKSDB)
    assert all(row.get(h("status")) == STATUS_OPEN for row in _offsets_rows(again)), _offsets_rows(again)
    _context(again, 4)
    family.put(again, h("b"))
    return rows, again


@rules("OFF-5", "OFF-6", "OFF-7", "OFF-8", "OFF-9", "OFF-10", "OFF-11")  # literal: kstate spec check reads it
@pytest.mark.kstate_places("store:kv", "store:versioned", "store:window", "store:session", "reopen")
@pytest.mark.parametrize("name", [pytest.param(n, marks=rules(*(VERSIONED_POSITION_RULES if n == "versioned"
                                                               else PADDED_POSITION_RULES))) for n in FAMILIES])
def test_every_database_of_a_family_holds_the_padded_position_and_status(kit: Kit, name: str) -> None:
    """Place: a RocksDB store of each family, closed, then reopened. A commit writes ``position`` as the padded bytes
    of OFF-8 and OFF-9 into each of the store's databases with the offset (OFF-5), and a close writes CLOSED (OFF-7).
    Reopened, every database is marked OPEN (OFF-6), and the store reads the padded position back (OFF-10) and merges a new partition into it, keeping the
    offset it had (OFF-11): the next commit writes both partitions, each at its larger offset."""
    family = FAMILIES[name]
    rows, again = _committed_closed_reopened(kit, family)
    assert rows, "the store's dump shows no database"
    for row in rows:
        assert row.get(h("position")) == _position_bytes([(0, 7)]), row
        assert row.get(h("status")) == STATUS_CLOSED, row
    _context(again, 3, partition=1)
    family.put(again, h("c"))
    again.commit(6)
    again.close()
    # The partitions in either order: a position's bytes follow its map's iteration order (OFF-8, OFF-12).
    merged = {_position_bytes([(0, 7), (1, 3)]), _position_bytes([(1, 3), (0, 7)])}
    for row in _offsets_rows(again):
        assert row.get(h("position")) in merged, row
        assert row.get(h("status")) == STATUS_CLOSED, row


@rules("OFF-6", "OFF-7")
@pytest.mark.kstate_places("store:versioned", "reopen")
def test_the_versioned_store_marks_its_database_closed_and_open(kit: Kit) -> None:
    """Place: the versioned store of the test before, its status alone (the position it commits is VS-38's, checked
    there). A close after a commit writes CLOSED (OFF-7); reopened, the database is marked OPEN (OFF-6); written and
    committed again, the next close writes CLOSED."""
    rows, again = _committed_closed_reopened(kit, FAMILIES["versioned"])
    assert rows and all(row.get(h("status")) == STATUS_CLOSED for row in rows), rows
    again.commit(6)
    again.close()
    rows = _offsets_rows(again)
    assert rows and all(row.get(h("status")) == STATUS_CLOSED for row in rows), rows


# --- LAY-7, LAY-8, TSKV-5: an upgrade in place at every family that has one ------------------------------------------

#: (the type written, the type then opened over it, the stored value written, what the new type reads for it): each
#: family's upgrades in place, from its model, in the table's order.
UPGRADES = [upgrade for family in types.FAMILIES for upgrade in types.family_model(family).IN_PLACE_UPGRADES]
_FAMILY_OF_TYPE = {t.store_type: t for t in LOGGED}


@rules("LAY-7", "LAY-8", "TSKV-5", "RST-5")
@pytest.mark.kstate_places("store:kv", "store:window", "store:session", "reopen", "restore")
@pytest.mark.parametrize(("written", "opened", "legacy", "converted"), UPGRADES,
                         ids=[f"{w}-to-{o}-{'empty' if v == '' else 'value'}" for w, o, v, _ in UPGRADES])
def test_a_legacy_row_reads_converted_until_the_mode_is_decided_again(kit: Kit, written: str, opened: str,
                                                                       legacy: str, converted: str) -> None:
    """Place: a store of each family with an upgrade, reopened. A row the older type wrote reads converted by the
    newer (TSKV-5 prepends timestamp -1; LAY-8 and LAY-7 prepend ``00``, no timestamp for a session aggregate); a
    new write reads back as written; the next open, still in upgrade mode for the row not yet read, reads both. A
    record restored in upgrade mode leaves the legacy family and is written converted in the new one (RST-5)."""
    old, new = _FAMILY_OF_TYPE[written], _FAMILY_OF_TYPE[opened]
    kit.require(opened, ROCKSDB, "dump")
    store = _open_logged(kit, old, "orders")
    old.write_stored(store, K1, legacy)
    old.write_stored(store, K3, legacy)  # never read before the restore below: it stays in the legacy family
    store.commit(1)
    store.close()
    for _ in range(2):  # the first open decides the upgrade mode; the second decides it again, the same way
        upgraded = _open_logged(kit, new, "orders")
        assert old.read(upgraded, K1) == converted
        new.write_stored(upgraded, K2, _stored(opened, OTHER))
        assert new.read(upgraded, K2) == _stored(opened, OTHER)
        upgraded.commit(2)
        upgraded.close()
    # RST-5: restored in upgrade mode, the key leaves the legacy family and its converted value is in the new one.
    upgraded = _open_logged(kit, new, "orders")
    legacy_family = "keyValueWithTimestamp" if old.timestamped else "default"
    key = new.changelog_key(K3)
    assert any(key in dict(f.get(legacy_family, [])) for f in _data_rows(upgraded).values()), "no legacy row"
    upgraded.restore([record(key, "cc", STORED_TS)])
    restored = _stored(opened, "cc", headers=[])  # the record's timestamp in front, no headers (HV-12)
    assert new.read(upgraded, K3) == restored
    for families in _data_rows(upgraded).values():
        assert key not in dict(families.get(legacy_family, [])), families


# --- VER-1, VER-2, VS-1: the versioned store's one database, after a crash -----------------------------------------


@rules("VER-1", "VER-2", "VS-1")
@pytest.mark.kstate_places("store:versioned", "reopen")
def test_a_versioned_store_keeps_its_segments_as_key_prefixes_of_one_database(kit: Kit) -> None:
    """Place: a RocksDB versioned store, closed and reopened. A version moved out of the latest-value store sits in
    ``default`` under ``[segmentId int64][key]`` (VER-1), the latest under ``FF``x8 + key, sorting after every
    segment (VER-2); the database has ``default`` and ``offsets`` only (VS-1), and the reopen changes none of it
    (a crash may roll the store back to its last flush, KV-50, so only a clean close is sure to keep the rows).
    The store lists segment 5 before the close; what the reopened store lists is VS-14's, the next test."""
    kit.require("versioned_kv", ROCKSDB, "dump")
    store = _versioned_store_with_a_segment(kit)
    keys = [["0000000000000005" + K1], ["ff" * 8 + K1]]
    assert store.ok("versioned_store.segments")["segments"] == [5]
    for reopened in (False, True):
        dumped = store.ok("store.dump")["column_families"]
        assert sorted(dumped) == ["default", "offsets"], sorted(dumped)
        assert [[k] for k, _ in dumped["default"]] == keys, dumped["default"]
        if reopened:
            break
        store.close()
        store = kit.open("versioned_kv", ROCKSDB, options=_SEGMENTED_VERSIONED)


@rules("VS-14")
@pytest.mark.kstate_places("store:versioned", "reopen")
def test_a_reopened_versioned_store_lists_the_segment_in_its_database(kit: Kit) -> None:
    """Place: the store of the test before, closed and reopened: it lists segment 5 again (VS-14: a reopened store
    finds the segments already in its database)."""
    store = _versioned_store_with_a_segment(kit)
    store.close()
    again = kit.open("versioned_kv", ROCKSDB, options=_SEGMENTED_VERSIONED)
    assert again.ok("versioned_store.segments")["segments"] == [5]


_SEGMENTED_VERSIONED = {"history_retention_ms": 10_000, "segment_interval_ms": 1_000}


def _versioned_store_with_a_segment(kit: Kit) -> Store:
    """A RocksDB versioned store with key K1's older version in segment 5 and its latest value, committed at 1."""
    kit.require("versioned_kv", ROCKSDB)
    if not kit.implementation.supports("versioned_store.segments"):
        pytest.skip("the implementation does not offer versioned_store.segments")
    store = kit.open("versioned_kv", ROCKSDB, options=_SEGMENTED_VERSIONED)
    store.ok("versioned_store.put", key=K1, value=RAW, timestamp=1)
    store.ok("versioned_store.put", key=K1, value=OTHER, timestamp=5_500)  # moves "aa" to segment 5500 // 1000
    store.commit(1)
    return store


@rules("VS-1")
@pytest.mark.kstate_places("store:versioned", "crash")
def test_a_crashed_versioned_store_reopens_as_the_one_database_it_was(kit: Kit) -> None:
    """Place: a RocksDB versioned store killed after a commit and reopened ignoring the unclean shutdown. It is still
    one database at ``<task>/rocksdb/<store>`` with the ``default`` and ``offsets`` families and no directory per
    segment (VS-1), whether the kill kept the committed rows or rolled them back (KV-50)."""
    kit.require("versioned_kv", ROCKSDB, "dump", "crash")
    options = {"history_retention_ms": 10_000, "segment_interval_ms": 1_000}
    store = kit.open("versioned_kv", ROCKSDB, options=options)
    store.ok("versioned_store.put", key=K1, value=RAW, timestamp=1)
    store.ok("versioned_store.put", key=K1, value=OTHER, timestamp=5_500)
    store.commit(1)
    store.crash()
    again = kit.open("versioned_kv", ROCKSDB, options=options, ignore_invalid_state=True)
    assert sorted(again.ok("store.dump")["column_families"]) == ["default", "offsets"]
    databases = kit.state_dir / "app" / "0_0" / "rocksdb"
    assert sorted(p.name for p in databases.iterdir()) == ["store"], sorted(p.name for p in databases.iterdir())
    assert not [p for p in (databases / "store").iterdir() if p.is_dir()], "a directory per segment"


# --- KV-12, SS-37, VS-37, WS-36, VS-20: a closed or crashed store, and the in-memory stores' crash -----------------


@rules("KV-12", "SS-37", "VS-37")
@pytest.mark.kstate_places("store:kv", "store:versioned", "store:window", "store:session", "crash", "restore")
@pytest.mark.parametrize("name", CLOSED_STORE_FAMILIES)
@pytest.mark.parametrize("end", ["close", "crash"])
def test_a_closed_or_crashed_store_refuses_a_restore_and_every_read(kit: Kit, name: str, end: str) -> None:
    """Place: a RocksDB store of each family after a close and after a crash. A restore batch is refused as every
    read and write is (KV-12: "any operation on a closed RocksDB store"; SS-37; VS-37: "after close (or a crash)"),
    and the refused restore wrote nothing: the store reopens with the committed row only, or, after a crash, as it
    was created, with no offset (KV-50: a commit need not be durable; KV-67 wants it)."""
    family = FAMILIES[name]
    kit.require(family.store_type, ROCKSDB, "offsets", *(["crash"] if end == "crash" else []))
    store = _open(kit, family, ROCKSDB)
    read, payload = family.reads[0]
    empty = store.ok(read, **payload)
    family.put(store, K)
    store.commit(1)
    before = store.ok(read, **payload)
    if end == "crash":
        store.crash()
    else:
        store.close()
    restored: dict[str, Any] = {"key": family.restore_key, "value": None, "timestamp": 1, "headers": []}
    assert store.refused("store.restore", records=[restored]), f"a {end}ed {name} store restored a record"
    answered = [op for op, p in (family.write, *family.reads) if not store.refused(op, **p)]
    assert not answered, f"a {end}ed {name} store answered {answered}"
    again = _open(kit, family, ROCKSDB, ignore_invalid_state=True)
    kept = (again.ok(read, **payload), again.committed())
    allowed = [(before, 1), (empty, None)] if end == "crash" else [(before, 1)]
    assert kept in allowed, f"after a {end} the {name} store holds {kept}, expected one of {allowed}"


@rules("WS-36", "VS-20")
@pytest.mark.kstate_places("store:versioned", "store:window", "crash")
@pytest.mark.parametrize("name", ["versioned", "window"])
def test_an_in_memory_store_keeps_nothing_after_a_crash(kit: Kit, name: str) -> None:
    """Place: an in-memory store crashed, then opened again under the same name: empty (WS-36: it "loses its
    content on close or crash"; VS-20), and it manages no offsets (``committed_offset`` null)."""
    family = FAMILIES[name]
    kit.require(family.store_type, "memory", "crash")
    store = _open(kit, family, "memory")
    family.put(store, K)
    store.commit(1)
    assert store.committed() is None
    read, payload = family.reads[0]
    written = store.ok(read, **payload)
    store.crash()
    again = _open(kit, family, "memory")
    assert again.committed() is None
    after = again.ok(read, **payload)
    assert after != written and not (after.get("value") or after.get("record") or after.get("entries")), after


# --- WIN-7, WIN-8, WIN-10, WIN-13, WIN-14: the window key layout at the store ---------------------------------------

#: (key, window start) in one segment: "61" is a prefix of "6100", and the empty key sorts first (WIN-13).
WINDOWS = [(h("a"), 5), (h("a") + "00", 5), (h("a"), 3), ("", 4), (h("b"), 5), (h("a"), 9)]


def _store_key(key: str, start: int) -> bytes:
    """WIN-1: ``[key][start int64][seqnum int32]``, sequence number 0 (no duplicates retained)."""
    return bytes.fromhex(key + i64(start) + "00000000")


@rules("WIN-7", "WIN-8", "WIN-10", "WIN-13", "WIN-14")
@pytest.mark.kstate_places("store:window")
@pytest.mark.parametrize("store_type", ["window", "timestamped_window"])
def test_a_window_store_answers_in_store_key_order_within_the_range_bounds(kit: Kit, store_type: str) -> None:
    """Place: a RocksDB window store. ``all`` answers one segment's rows in the unsigned byte order of their store
    keys (WIN-13: ``61|0000000000000005`` comes after ``6100|...05`` though ``61`` is the shorter key); a range of
    one key and of times answers exactly the rows whose key equals it and whose start lies in the range, both ends
    included (WIN-10, WIN-14: the scanned bytes also hold ``6100``'s row, which the bounds bracket and the fetch
    drops); a null key is refused (WIN-7) and a window of size 0 cannot be answered (WIN-8: end equal to start)."""
    kit.require(store_type, ROCKSDB)
    value = _stored(store_type, RAW)
    options = {"retention_ms": 1_000, "window_size_ms": 10, "segment_interval_ms": 500}
    store = kit.open(store_type, ROCKSDB, options=options)
    for key, start in WINDOWS:
        store.ok("window_store.put", key=key, value=value, window_start=start)
    in_order = sorted(WINDOWS, key=lambda w: _store_key(*w))
    assert store.ok("window_store.all")["entries"] == [[k, s, value] for k, s in in_order]
    assert store.ok("window_store.fetch_keys", key_from=h("a"), key_to=h("a"), from_ms=3, to_ms=5)["entries"] == \
        [[h("a"), 3, value], [h("a"), 5, value]]
    assert store.ok("window_store.fetch_range", key=h("a"), from_ms=4, to_ms=9)["entries"] == \
        [[5, value], [9, value]]
    for op, payload in (("window_store.put", {"value": value, "window_start": 5}),
                        ("window_store.fetch", {"time": 5}), ("window_store.fetch_range", {"from_ms": 0, "to_ms": 9})):
        assert store.refused(op, key=None, **payload), f"{op} took a null key"
    assert store.ok("window_store.all")["entries"] == [[k, s, value] for k, s in in_order], "a refusal wrote"
    store.close()
    zero = kit.open(store_type, ROCKSDB, name="zero", options={**options, "window_size_ms": 0})
    zero.ok("window_store.put", key=h("a"), value=value, window_start=5)
    assert zero.refused("window_store.all") and zero.refused("window_store.fetch_all", from_ms=0, to_ms=9)


@rules("WIN-9")
@pytest.mark.kstate_places("store:window")
@pytest.mark.parametrize("backend", [ROCKSDB, MEMORY])
def test_the_window_at_start_long_max_cannot_be_answered_as_a_window(kit: Kit, backend: str) -> None:
    """Place: a window store of window size 1 on either backend. The window at start Long.MAX_VALUE ends at
    Long.MAX_VALUE once the overflowing end is truncated, equal to its start (WIN-9), so every answer carrying it
    as a window is refused, while its start is still answered by ``fetch(key, time)``; the window just before it
    (start Long.MAX_VALUE - 1, end Long.MAX_VALUE) is answered."""
    kit.require("window", backend)
    long_max = (1 << 63) - 1
    store = kit.open("window", backend, options={"retention_ms": 1_000, "window_size_ms": 1})
    store.ok("window_store.put", key=K1, value=RAW, window_start=long_max - 1)
    assert store.ok("window_store.all")["entries"] == [[K1, long_max - 1, RAW]]
    store.ok("window_store.put", key=K2, value=RAW, window_start=long_max)
    assert store.ok("window_store.fetch", key=K2, time=long_max)["value"] == RAW
    for op, payload in (("window_store.all", {}), ("window_store.fetch_all", {"from_ms": long_max - 1, "to_ms": long_max}),
                        ("window_store.fetch_keys", {"key_from": K2, "key_to": K2, "from_ms": 0, "to_ms": long_max})):
        assert store.refused(op, **payload), f"{op} answered the window [Long.MAX_VALUE, Long.MAX_VALUE)"


# --- SESS-1, SESS-11: the session key and its segment at the store -------------------------------------------------


#: The store types of the families whose model lays out where their rows are by segment (SESS-1, SESS-11).
ROWS_BY_SEGMENT_TYPES = [store_type for family in types.FAMILIES if types.family_model(family).rows_by_segment
                         for store_type in family.types]


@rules("SESS-1", "SESS-11")
@pytest.mark.kstate_places("store:session")
@pytest.mark.parametrize("store_type", ROWS_BY_SEGMENT_TYPES)
def test_a_session_row_is_keyed_end_first_in_the_segment_of_its_end(kit: Kit, store_type: str) -> None:
    """Place: a RocksDB session store. A session's row is ``[key][end int64][start int64]`` (SESS-1) in the segment
    of its END, ``end / interval`` (SESS-11), as the family's model lays the rows out (``rows_by_segment``), and
    every written session reads back."""
    kit.require(store_type, ROCKSDB, "dump")
    value = _stored(store_type, RAW)
    case = types.family_model(_FAMILY_BY_NAME[types.FAMILY_OF[store_type]]).rows_by_segment(K1, value)
    store = kit.open(store_type, ROCKSDB, options=case.options)
    for op, payload in case.writes:
        store.ok(op, **payload)
    segments = store.ok("store.dump")["segments"]
    rows = {name: [k for family in case.column_families for k, _ in families.get(family, [])]
            for name, families in segments.items()}
    assert rows == case.rows, rows
    for op, payload in case.reads:
        assert store.ok(op, **payload)["value"] == value


# --- RST-1, RST-3, RST-6: a store's own changelog restored in batches of any size, at every family -----------------


def _data_rows(store: Store) -> dict[str, Any]:
    """The store's rows, every family but ``offsets`` (which a restore without commits leaves as the open wrote)."""
    dumped = store.ok("store.dump")
    databases = dumped["segments"] if "segments" in dumped else {"": dumped["column_families"]}
    return {name: {cf: rows for cf, rows in families.items() if cf != "offsets"}
            for name, families in databases.items()}


@rules("RST-1", "RST-3", "RST-6")
@pytest.mark.kstate_places("store:kv", "store:versioned", "store:window", "store:session", "restore")
@pytest.mark.parametrize("logged", [t for t in LOGGED if t.store_type == FAMILIES[t.family].store_type],
                         ids=lambda t: t.store_type)
def test_a_stores_own_changelog_restored_in_any_batch_size_rebuilds_it(kit: Kit, logged: Logged) -> None:
    """Place: a restore into a store of each family. Two keys written, one overwritten, the other removed: restored
    in batches of 1, 2 and all, every copy answers the original's reads (RST-6), the last record of each key winning
    (RST-1: ``cc`` for k1, nothing for k2), and holds the same rows whatever the batch size (RST-3)."""
    kit.require(logged.store_type, ROCKSDB, "dump")
    store = _open_logged(kit, logged, "orders")
    store.ok("store.set_context", timestamp=CONTEXT_TS, headers=[], topic="in", partition=0, offset=1)
    logged.write(store, K1, RAW)
    logged.write(store, K2, OTHER)
    logged.write(store, K1, "cc")
    logged.write(store, K2, None)
    records = store.changelog()
    assert len(records) == 4, records
    reads = (logged.read(store, K1), logged.read(store, K2))
    assert reads == (logged.restored("cc"), None)
    rows = []
    for batch_size in (1, 2, len(records)):
        copy = _open_logged(kit, logged, f"copy{batch_size}")
        assert copy.restore(records, batch_size=batch_size)["restored"] == 4
        assert (logged.read(copy, K1), logged.read(copy, K2)) == reads, batch_size
        rows.append(list(_data_rows(copy).values()))
    assert rows[0] == rows[1] == rows[2], rows


# --- VS-5, VS-13, WS-6, WS-8: the stream time a restore advances ----------------------------------------------------


@rules("VS-5", "VS-13")
@pytest.mark.kstate_places("store:versioned", "restore", "reopen")
def test_a_versioned_restore_advances_the_stores_stream_time_and_expires_segments(kit: Kit) -> None:
    """Place: a restore into a RocksDB versioned store, then a reopen. Each restored record advances the store's one
    stream time (VS-5): after ``k2`` at 20000, segment 0 (``k1``'s version valid 1..2) is below
    ``segmentId(20000 - 10000)`` and dropped (VS-13); the latest value stays. Reopened, the stream time is -1."""
    kit.require("versioned_kv", ROCKSDB)
    kit.require_ops("versioned_store.stream_time", "versioned_store.segments")
    options = {"history_retention_ms": 10_000, "segment_interval_ms": 1_000}
    store = kit.open("versioned_kv", ROCKSDB, options=options)
    store.restore([record(K1, RAW, 1), record(K1, OTHER, 2)])
    assert store.ok("versioned_store.stream_time")["stream_time"] == 2
    assert store.ok("versioned_store.segments")["segments"] == [0]
    store.restore([record(K2, RAW, 20_000)])
    assert store.ok("versioned_store.stream_time")["stream_time"] == 20_000
    assert store.ok("versioned_store.segments")["segments"] == []
    assert store.ok("versioned_store.get", key=K1)["record"]["value"] == OTHER
    store.commit(3)
    store.close()
    again = kit.open("versioned_kv", ROCKSDB, options=options)
    assert again.ok("versioned_store.stream_time")["stream_time"] == -1


@rules("WS-6", "WS-8")
@pytest.mark.kstate_places("store:window", "restore")
@pytest.mark.parametrize("store_type", ["window", "timestamped_window"])
def test_a_window_restore_advances_stream_time_and_deletes_expired_segments(kit: Kit, store_type: str) -> None:
    """Place: a restore into a RocksDB window store (retention 1000, interval 500). A restored record at 2000 makes
    the stream time 2000 (WS-6) and, finding its segment live, deletes segment 0, below ``segmentId(2000 - 1000)``
    (WS-8); a put at start 5 after it is expired and stores nothing."""
    kit.require(store_type, ROCKSDB, "dump")
    value = _stored(store_type, RAW)
    store = kit.open(store_type, ROCKSDB,
                     options={"retention_ms": 1_000, "window_size_ms": 10, "segment_interval_ms": 500})
    store.restore([record(K1 + i64(5) + "00000000", RAW, STORED_TS)])
    assert store.ok("window_store.fetch", key=K1, time=5)["value"] == value
    store.restore([record(K2 + i64(2_000) + "00000000", RAW, STORED_TS)])
    assert sorted(store.ok("store.dump")["segments"]) == ["store.2000"]
    assert store.ok("window_store.fetch", key=K1, time=5)["value"] is None
    store.ok("window_store.put", key=h("k3"), value=value, window_start=5)
    assert store.ok("window_store.fetch", key=h("k3"), time=5)["value"] is None
    assert store.ok("window_store.fetch", key=K2, time=2_000)["value"] == value


# --- OFF-24: a committed -4 and -1 at every family ------------------------------------------------------------------


@rules("OFF-24")
@pytest.mark.kstate_places("store:kv", "store:versioned", "store:window", "store:session")
@pytest.mark.parametrize("name", FAMILIES)
def test_a_committed_unknown_or_minus_one_offset_is_answered_as_stored(kit: Kit, name: str) -> None:
    """Place: a RocksDB store of each family, reopened. The ``offsets`` family keeps whatever long a commit gave and
    ``committed_offset`` answers it as stored (OFF-24): -4 (``OFFSET_UNKNOWN``, which Kafka's task writes) stays
    -4, not null, and -1 stays -1; reading them as none or as offset 0 is the task's business."""
    family = FAMILIES[name]
    kit.require(family.store_type, ROCKSDB, "offsets")
    for offset in (-4, -1):
        store = _open(kit, family, ROCKSDB, name=f"at{-offset}")
        family.put(store, K)
        store.commit(offset)
        assert store.committed() == offset
        store.close()
        assert _open(kit, family, ROCKSDB, name=f"at{-offset}").committed() == offset


# --- WS-35, WS-43: a restore batch the window store refuses, and a restore into a window of size 0 ---------------


_SHORT_KEY_OPTIONS = {"retention_ms": 1_000, "window_size_ms": 10, "segment_interval_ms": 500}


def _restore_a_batch_with_a_short_key(kit: Kit, store_type: str) -> Any:
    """A RocksDB window store holding K1 at 5, after a restore batch (K2 at 2,000, then a 1-byte key) it refused."""
    kit.require(store_type, ROCKSDB)
    store = kit.open(store_type, ROCKSDB, options=_SHORT_KEY_OPTIONS)
    store.restore([record(K1 + i64(5) + "00000000", RAW, STORED_TS)])
    out = store.call("store.restore", records=[record(K2 + i64(2_000) + "00000000", RAW, STORED_TS),
                                               record(h("k"), RAW, STORED_TS)])
    assert "error" in out, out
    return store


@rules("WS-35")
@pytest.mark.kstate_level("hardened")
@pytest.mark.kstate_places("store:window", "restore")
@pytest.mark.parametrize("store_type", ["window", "timestamped_window"])
def test_a_window_restore_batch_with_a_short_key_is_refused_whole(kit: Kit, store_type: str) -> None:
    """Place: a restore into a RocksDB window store. A batch whose second record's key is shorter than the 12-byte
    suffix is refused before anything changes (WS-35, the reference's choice): its first, well-formed record is not
    stored, nor is the stream time advanced past the row already there, so that row's segment is kept. Kafka's
    ``getWriteBatches`` advances the stream time over the batch before the short key throws, so that row expires."""
    store = _restore_a_batch_with_a_short_key(kit, store_type)
    assert store.ok("window_store.all")["entries"] == [[K1, 5, _stored(store_type, RAW)]]


@rules("WS-35", "WS-43")
@pytest.mark.kstate_places("store:window", "restore")
@pytest.mark.parametrize("store_type", ["window", "timestamped_window"])
def test_a_window_restore_batch_with_a_short_key_is_refused(kit: Kit, store_type: str) -> None:
    """Place: a restore into a RocksDB window store. A batch whose second record's key is shorter than the 12-byte
    suffix is refused with a typed error (WS-35), and the well-formed record before it is not stored. Restored into
    a store of window size 0, a record is stored, and every answer carrying its window is refused (WS-43)."""
    store = _restore_a_batch_with_a_short_key(kit, store_type)
    assert [entry[0] for entry in store.ok("window_store.all")["entries"]] in ([K1], []), "K2 of the refused batch"
    value = _stored(store_type, RAW)
    options = _SHORT_KEY_OPTIONS
    zero = kit.open(store_type, ROCKSDB, name="zero", options={**options, "window_size_ms": 0})
    zero.restore([record(K1 + i64(5) + "00000000", RAW, STORED_TS)])
    assert zero.ok("window_store.fetch", key=K1, time=5)["value"] == value
    for op, payload in (("window_store.all", {}), ("window_store.fetch_all", {"from_ms": 0, "to_ms": 9}),
                        ("window_store.fetch_keys", {"key_from": None, "key_to": None, "from_ms": 0, "to_ms": 9})):
        assert zero.refused(op, **payload), f"{op} answered a window of size 0"


# --- OFF-16, OFF-17, OFF-18: the legacy files a key-value store migrates at open, read as Kafka reads them ----------


def _task_files(kit: Kit) -> dict[str, Any]:
    out: dict[str, Any] = kit.implementation.call("store.task_files", {"state_dir": str(kit.state_dir),
                                                                       "application_id": "app", "task_id": "0_0"})
    return out


def _write_task_file(kit: Kit, file: str, text: str) -> None:
    out = kit.implementation.call("store.write_task_file", {"state_dir": str(kit.state_dir), "application_id": "app",
                                                            "task_id": "0_0", "file": file, "text": text})
    assert "error" not in out, out


@rules("OFF-16", "OFF-17", "OFF-18", "KV-55")
@pytest.mark.kstate_places("store:kv", "reopen")
def test_a_key_value_store_reads_its_legacy_files_by_javas_rules_at_open(kit: Kit) -> None:
    """Place: a RocksDB key-value store opening over a task's pre-4.3 files. The ``.checkpoint``'s fields are split
    on any run of Java whitespace (OFF-16: a tab, two spaces); its entry at offset -2 is skipped and the expected
    count decremented, so two declared entries with one skipped read as one (OFF-17); ``store.position``'s entries
    become the store's position (OFF-18), committed as the padded bytes of OFF-9. A checkpoint whose count is off is
    refused at open and left in place."""
    kit.require("kv", ROCKSDB, "offsets", "dump")
    kit.require_ops("store.write_task_file", "store.task_files")
    _write_task_file(kit, ".checkpoint", f"0\n2\n{TOPIC}\t0  41\napp-other-changelog 1 -2\n")
    _write_task_file(kit, "store.position", "0\n1\nin\t0 5\n")
    store = kit.open("kv", ROCKSDB)
    assert store.committed() == 41
    store.commit(42)
    store.close()
    assert dict(store.ok("store.dump")["column_families"]["offsets"]).get(h("position")) == _position_bytes([(0, 5)])
    # OFF-22: the file may be deleted once merged (the reference) or left as it was (Kafka 4.4.0 merges it again at
    # every open, which changes nothing); never rewritten to something else.
    assert _task_files(kit)["files"].get("store.position") in (None, "0\n1\nin\t0 5\n")
    broken = f"0\n3\n{TOPIC} 0 7\napp-other-changelog 0 8\n"
    _write_task_file(kit, ".checkpoint", broken)
    assert "error" in kit.open_refused("kv", ROCKSDB, name="other"), "a checkpoint with a missing line was read"
    assert _task_files(kit)["files"].get(".checkpoint") == broken


# --- LAY-1, LAY-2: where each family's store lives -----------------------------------------------------------------


@rules("LAY-1", "LAY-2")
@pytest.mark.kstate_places("store:kv", "store:versioned", "store:window", "store:session")
@pytest.mark.parametrize("name", FAMILIES)
def test_each_familys_store_lives_in_its_task_directory(kit: Kit, name: str) -> None:
    """Place: a RocksDB store of each family of task ``1_2``. Its files are under ``<state.dir>/app/1_2/`` (LAY-1):
    a key-value or versioned store is one database at ``rocksdb/<store>`` (LAY-2: a versioned store's segments are
    key prefixes, not directories), a window or session store's segment 0 a database at ``<store>/<store>.0``."""
    family = FAMILIES[name]
    kit.require(family.store_type, ROCKSDB)
    store = _open(kit, family, ROCKSDB, task_id="1_2")
    family.put(store, K)
    store.commit(1)
    store.close()
    task_dir = kit.state_dir / "app" / "1_2"
    database = task_dir / "rocksdb" / "store" if name in ("kv", "versioned") else task_dir / "store" / "store.0"
    assert (database / "CURRENT").is_file(), sorted(str(p.relative_to(kit.state_dir)) for p in kit.state_dir.rglob("*"))
    assert not (kit.state_dir / "app" / "0_0").exists()
    if name == "versioned":
        assert sorted(p.name for p in (task_dir / "rocksdb").iterdir()) == ["store"]
        assert not (task_dir / "store").exists()
