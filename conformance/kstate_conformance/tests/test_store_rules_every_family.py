"""Store rules checked where each family's store applies them, through its own neutral operations: the position
never going back (KV-54), every operation of a closed store refused (KV-12), and the default segment interval's
floors at the store (VER-23). Issue 25's blind spots: each was checked only where it was easy to reach.

Each test was written against a mutant of ``mutants/store_rules_mutants.py`` that the rest of the suite let through.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from kstate_conformance import rules
from kstate_conformance import store_types as types
from kstate_conformance.harness import BACKENDS, MEMORY, ROCKSDB, Kit, Store, h, kit
from kstate_conformance.models import life
from kstate_conformance.probes import Probe
from kstate_conformance.store_types import KV, VERSIONED_KV, VERSIONED_KV_WITH_HEADERS

__all__ = ["kit"]


#: Nine bytes: longer than a versioned segment id, so a key-value row read as versioned fails on its value (LAY-14),
#: and an implementation without the check is not sent into the short-key scan of issue 25 (item 6).
K = h("kkkkkkkkk")
#: Each family's probe, built by its model (store_types.family_model), in the table's order.
#: Each test's own rules stay written out, the union of the probes' rules of its check: the rule x place matrix
#: (rule_places) reads them from the source; each family's case is marked with its probe's rules only.
FAMILIES = {family.name: types.family_model(family).probe(K) for family in types.FAMILIES}


def _open(kit: Kit, family: Probe, backend: str, **extra: Any) -> Store:
    for name in family.ops():
        if not kit.implementation.supports(name):
            pytest.skip(f"the implementation does not offer {name}")
    return kit.open(family.store_type, backend, **({"options": family.options} if family.options else {}), **extra)


# --- KV-54: the position keeps the highest offset -----------------------------------------------------------------


def _context(store: Store, offset: int, partition: int = 0) -> None:
    store.ok("store.set_context", timestamp=1, headers=[], topic="in", partition=partition, offset=offset)


def _positions(kit: Kit, store: Store) -> list[dict[str, dict[int, int]]]:
    """Every committed position the store's databases hold (one; or one per segment), decoded as maps."""
    if not kit.implementation.supports("position.deserialize"):
        pytest.skip("the implementation does not offer position.deserialize")
    dumped = store.ok("store.dump")
    databases = dumped["segments"].values() if "segments" in dumped else [dumped["column_families"]]
    found = []
    for families in databases:
        stored = dict(families.get("offsets", [])).get(h("position"))
        if stored is not None:
            out = kit.implementation.call("position.deserialize", {"bytes": stored})
            assert "error" not in out, out
            found.append({topic: dict(map(tuple, parts)) for topic, parts in out["position"]})
    return found


@rules("KV-54", "VS-38", "WS-29", "SS-38")
@pytest.mark.parametrize("name", [pytest.param(n, marks=rules(*f.position_rules)) for n, f in FAMILIES.items()])
def test_a_reprocessed_record_leaves_the_position_where_it_was(kit: Kit, name: str) -> None:
    """A write at a lower offset after a higher one on the same partition keeps the higher one: before a commit,
    after it, and after a reopen (Position.withComponent keeps the larger offset)."""
    family = FAMILIES[name]
    kit.require(family.store_type, ROCKSDB, "offsets", "dump")
    store = _open(kit, family, ROCKSDB)
    _context(store, 9)
    family.put(store, h("a"))
    _context(store, 5)  # reprocessed: the same partition, a lower offset
    family.put(store, h("b"))
    _context(store, 2, partition=1)
    family.put(store, h("c"))
    store.commit(1)
    expected = {"in": {0: 9, 1: 2}}
    assert _positions(kit, store) and all(p == expected for p in _positions(kit, store)), _positions(kit, store)
    store.close()
    again = _open(kit, family, ROCKSDB)
    _context(again, 3)  # lower than the position loaded at open
    family.put(again, h("d"))
    again.commit(2)
    positions = _positions(kit, again)
    assert positions and all(p == expected for p in positions), positions


# --- KV-12: a closed store refuses every operation ---------------------------------------------------------------


def _every_operation(family: Probe) -> list[tuple[str, dict[str, Any], str]]:
    """Each operation of ``family`` with its payload and its operation class in the life table (models.life)."""
    record: dict[str, Any] = {"key": family.restore_key, "value": None, "timestamp": 1, "headers": []}
    return [(*family.write, "write"), *((op, payload, "read") for op, payload in family.reads),
            *((op, payload, "write") for op, payload in family.extra), ("store.flush", {}, "commit"),
            ("store.commit", {"changelog_offsets": [["app-store-changelog", 0, 3]]}, "commit"),
            ("store.committed_offset", {"topic": "app-store-changelog", "partition": 0}, "offsets"),
            ("store.restore", {"records": [record]}, "restore")]


#: A closed-store case checks KV-12 and each family's own closed-store rule (its probe's) at that family only, so
#: that a listed bug of one family hides no other family's rule.
CLOSED_STORE_FAMILIES = [pytest.param(n, marks=rules(*f.closed_store_rules)) for n, f in FAMILIES.items()]


@rules("KV-12", "VS-37", "SS-37")
@pytest.mark.parametrize("name", CLOSED_STORE_FAMILIES)
@BACKENDS
def test_a_closed_store_refuses_every_operation(kit: Kit, name: str, backend: str) -> None:
    """Reads and writes, and committed_offset and restore too, with no caching layer to refuse first; each was
    answered while the store was open. Flush and commit MAY answer, doing nothing (KV-12: Kafka's
    ``RocksDBStore.commit`` returns when the database is closed)."""
    family = FAMILIES[name]
    if backend == MEMORY and name in (KV, "window"):
        pytest.skip("Kafka's in-memory key-value and window stores may answer after close (KV-43)")
    store = _open(kit, family, backend)
    for op, payload, _ in _every_operation(family):
        store.ok(op, **payload)
    store.close()
    answered = [op for op, payload, op_class in _every_operation(family)
                if not store.refused(op, **payload) and life.must_refuse("closed", op_class)]
    assert not answered, f"a closed {family.store_type} store on {backend} answered {answered}"


@rules("KV-12", "CACHE-9")
def test_a_closed_caching_store_refuses_flush_commit_and_committed_offset(kit: Kit) -> None:
    """The caching layer over a closed RocksDB store refuses the life-cycle operations as it refuses reads."""
    family = FAMILIES[KV]
    store = _open(kit, family, ROCKSDB, caching=True)
    store.close()
    answered = [op for op, payload, _ in _every_operation(family)[-4:] if not store.refused(op, **payload)]
    assert not answered, f"a closed caching store answered {answered}"


# --- VER-23: the default segment interval, at the store --------------------------------------------------------

#: History retentions whose quotient is under the floor of their tier, the floor (the interval the store must use),
#: and a timestamp T with T // floor == 1 but T // quotient >= 2.
FLOORED = [(3_000, 2_000, 3_000), (70_000, 20_000, 30_000), (400_000, 60_000, 90_000),
           (4_000_000, 300_000, 450_000)]


@rules("VER-23", "VS-4", "VER-22")
@pytest.mark.parametrize(("retention", "floor", "later"), FLOORED)
@BACKENDS
def test_a_store_opened_without_an_interval_uses_the_floor(kit: Kit, backend: str, retention: int, floor: int,
                                                           later: int) -> None:
    """A version valid up to T goes to segment T // interval: with the floor that is 1, with the quotient 2 or more."""
    if not kit.implementation.supports("versioned_store.segments"):
        pytest.skip("the implementation does not offer versioned_store.segments")
    family = FAMILIES["versioned"]
    store = _open(kit, replace(family, options={"history_retention_ms": retention}), backend)
    store.ok("versioned_store.put", key=K, value="aa", timestamp=0)
    store.ok("versioned_store.put", key=K, value="bb", timestamp=later)  # "aa" is now valid 0..later
    assert store.ok("versioned_store.segments")["segments"] == [later // floor] == [1]
    assert store.ok("versioned_store.get", key=K, as_of=0)["record"] == {"value": "aa", "timestamp": 0,
                                                                           "valid_to": later}



# --- LAY-14: a directory reopened as another store type --------------------------------------------------------

#: (the type written, the type then opened over it): pairs whose bytes tell them apart.
#: Each segmented family's plain type over every other's: a key inside one's segment is no key of the other.
TOLD_APART = [(KV, VERSIONED_KV), (VERSIONED_KV, VERSIONED_KV_WITH_HEADERS),
              *((a.types[0], b.types[0]) for a in types.FAMILIES if a.segmented
                for b in types.FAMILIES if b.segmented and b is not a)]
_FAMILY_OF = types.FAMILY_OF


@pytest.mark.kstate_level("hardened")
@rules("LAY-14", "KV-23")
@pytest.mark.parametrize(("written", "opened"), TOLD_APART)
def test_a_directory_opened_as_another_type_is_refused_and_left_as_it_was(kit: Kit, written: str,
                                                                          opened: str) -> None:
    """A key-value store's row is no versioned row, "aa" no ``[varint][headers][value]``, a window key no session
    key inside its segment (nor the reverse); the refused open leaves the store to reopen clean, offset and row kept."""
    kit.require(opened, ROCKSDB)
    first, other = FAMILIES[_FAMILY_OF[written]], FAMILIES[_FAMILY_OF[opened]]
    first = replace(first, store_type=written)
    store = _open(kit, first, ROCKSDB)
    first.put(store, K)
    store.commit(5)
    read, payload = first.reads[0]
    before = store.ok(read, **payload)
    store.close()
    out = kit.open_refused(opened, ROCKSDB, **({"options": other.options} if other.options else {}))
    assert "error" in out, f"a {written} directory opened as {opened} was accepted"
    again = _open(kit, first, ROCKSDB)  # no ignore_invalid_state: the refused open wrote no OPEN status
    assert again.committed() == 5
    assert again.ok(read, **payload) == before


# --- KV-56, KV-63, OFF-5: only a commit writes the position row ---------------------------------------------------


def _position_rows(store: Store) -> list[str | None]:
    """The raw ``position`` row of each of the store's databases (one; or one per segment), None where absent."""
    dumped = store.ok("store.dump")
    databases = dumped["segments"].values() if "segments" in dumped else [dumped["column_families"]]
    return [dict(families.get("offsets", [])).get(h("position")) for families in databases]


#: The position-row case checks each family's position-row rules (its probe's; the versioned ones leave KV-56 and
#: KV-63 to the versioned case after it, so that Kafka 4.3.1's listed bug of VS-38 hides neither).
FLUSH = pytest.mark.parametrize("flush", [False, True], ids=["close", "flush_then_close"])


def _closed_without_a_commit(kit: Kit, family: Probe, flush: bool) -> Store:
    """A store of ``family`` written in a record context, flushed or not, closed with no commit and reopened: it
    has no position row in any of its databases (KV-56, KV-63). Answers the reopened store."""
    kit.require(family.store_type, ROCKSDB)
    store = _open(kit, family, ROCKSDB)
    _context(store, 7)
    family.put(store, K)
    if flush:
        store.ok("store.flush")
    store.close()
    again = _open(kit, family, ROCKSDB)
    rows = _position_rows(again)
    assert rows, "the store's dump shows no database"
    assert rows == [None] * len(rows), f"no commit ran, yet the position rows are {rows}"
    return again


@rules("KV-56", "KV-63", "OFF-5", "WS-29", "SS-21", "VS-38")
@pytest.mark.parametrize("name", [pytest.param(n, marks=rules(*f.position_row_rules)) for n, f in FAMILIES.items()])
@FLUSH
def test_only_a_commit_writes_the_position_row(kit: Kit, name: str, flush: bool) -> None:
    """Kafka 4.4.0 writes ``position`` in ``commit(offsets)`` only: a store written, flushed and closed with no
    commit has no position row in any of its databases; once committed, every database has one."""
    family = FAMILIES[name]
    again = _closed_without_a_commit(kit, family, flush)
    _context(again, 8)
    family.put(again, K)
    again.commit(9)
    again.close()
    committed = _open(kit, family, ROCKSDB)
    rows = _position_rows(committed)
    assert rows and all(row is not None for row in rows), f"after a commit the position rows are {rows}"


@rules("KV-56", "KV-63")
@FLUSH
def test_a_versioned_store_closed_without_a_commit_has_no_position_row(kit: Kit, flush: bool) -> None:
    """The versioned store of the test before, up to its first commit: a close, after a flush or not, writes no
    position row (KV-56, KV-63). What its commit writes is VS-38's, checked there."""
    _closed_without_a_commit(kit, FAMILIES["versioned"], flush)
