"""Faults in the segment directory of RocksDB window and session stores, through the neutral operations: entries
that name no segment are skipped and every segment still opens, and a damaged segment refuses the open before any
segment is opened (LAY-3, LAY-12, WS-31, SS-20, KV-23).

The tests edit the directory Kafka's layout puts the segments in (LAY-3): ``<task>/<store>/<store>.<start>``.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from kstate.storage_files import store_digest
from kstate_conformance import rules
from kstate_conformance import store_types as types
from kstate_conformance.harness import ROCKSDB, Kit, Store, h, is_refusal, kit

__all__ = ["kit"]

INTERVAL = 60_000
#: Each segmented family's model (store_types.family_model): its options, its write and its read of every entry.
MODELS = {family.name: types.family_model(family) for family in types.FAMILIES if family.segmented}
OPTIONS = {name: model.segmented_options(INTERVAL) for name, model in MODELS.items()}
TIMES = (0, INTERVAL, 2 * INTERVAL)
SEGMENTS = ["store.0", "store.120000", "store.60000"]


def _segment_dir(kit: Kit) -> Path:
    return kit.state_dir / "app" / "0_0" / "store"


def _open(kit: Kit, family: str, **extra: Any) -> Store:
    op, _ = MODELS[family].put_at(h("k"), 0)
    if not kit.implementation.supports(op):
        pytest.skip(f"the implementation offers no {family} store operations")
    return kit.open(family, ROCKSDB, options=OPTIONS[family], **extra)


def _put(store: Store, family: str, key: str, time: int) -> None:
    op, args = MODELS[family].put_at(h(key), time)
    store.ok(op, **args)


def _keys(store: Store, family: str) -> list[str]:
    """The keys the store answers, over every segment."""
    op, args = MODELS[family].read_every(h("k"), h("l"))
    entries = store.ok(op, **args)["entries"]
    return sorted(bytes.fromhex(entry[0]).decode() for entry in entries)


def _filled(kit: Kit, family: str) -> Path:
    """One row in each of three segments, committed at 7, closed cleanly; answers the segment directory."""
    kit.require(family, ROCKSDB, "offsets")
    store = _open(kit, family)
    for i, time in enumerate(TIMES):
        _put(store, family, f"k{i}", time)
    store.commit(7)
    store.close()
    directory = _segment_dir(kit)
    assert sorted(p.name for p in directory.iterdir()) == SEGMENTS
    return directory


# Each family's own rules of the reopen (its model's SEGMENT_REOPEN_RULES) mark its case only.
@rules("LAY-12", "LAY-3", *dict.fromkeys(rule for model in MODELS.values() for rule in model.SEGMENT_REOPEN_RULES))
@pytest.mark.parametrize("family", [pytest.param(name, marks=rules("LAY-12", "LAY-3", *model.SEGMENT_REOPEN_RULES))
                                    for name, model in MODELS.items()])
def test_entries_that_name_no_segment_are_skipped_or_refuse_the_open_and_are_never_opened(kit: Kit, family: str) -> None:
    """LAY-12: a ``junk`` directory, a ``store.notanumber`` directory and a regular file beside the segments are no
    segment: the store skips them and opens every segment (the reference, LAY-17), or refuses the open with a typed
    error (Kafka 4.3.1 and 4.4.0); either way they are left as they were, and once they are gone the store opens
    with every row and its committed offset."""
    directory = _filled(kit, family)
    (directory / "junk").mkdir()
    (directory / "store.notanumber").mkdir()
    (directory / "notes.txt").write_text("not a segment")
    out = kit.open_refused(family, ROCKSDB, options=OPTIONS[family])
    if "error" in out:
        assert is_refusal(out) and out["error"].get("type"), f"the refusal is untyped: {out}"
    else:
        store = kit.opened[-1]
        assert _keys(store, family) == ["k0", "k1", "k2"]
        store.close()
    assert (directory / "notes.txt").read_text() == "not a segment"
    assert [sorted((directory / name).iterdir()) for name in ("junk", "store.notanumber")] == [[], []]
    for name in ("junk", "store.notanumber", "notes.txt"):
        path = directory / name
        path.rmdir() if path.is_dir() else path.unlink()
    store = _open(kit, family)
    assert _keys(store, family) == ["k0", "k1", "k2"]
    assert store.committed() == 7


@pytest.mark.kstate_level("hardened")
# LAY-3's names and SS-10's reopen are the previous test's (which Kafka's refusal passes): this one's point is the skip.
@rules("LAY-17", "WS-31")
@pytest.mark.parametrize("family", list(MODELS))
def test_entries_that_name_no_segment_are_skipped_and_every_segment_opens(kit: Kit, family: str) -> None:
    """A directory ``junk``, a ``store.notanumber`` directory and a regular file beside the segments are no segment
    names: each is left alone, every segment opens with its rows, and the committed offset stands (Kafka's
    ``openExisting`` refuses the open at the first such name in 4.3.1 and 4.4.0; before, it swallowed the parse
    error and opened no segment at all)."""
    directory = _filled(kit, family)
    (directory / "junk").mkdir()
    (directory / "store.notanumber").mkdir()
    (directory / "notes.txt").write_text("not a segment")
    store = _open(kit, family)
    assert _keys(store, family) == ["k0", "k1", "k2"]
    assert store.committed() == 7
    store.close()
    assert sorted(p.name for p in directory.iterdir()) == ["junk", "notes.txt", *SEGMENTS, "store.notanumber"]


@pytest.mark.kstate_level("hardened")
@rules("WS-31", "SS-20", "KV-66", "KV-52")
@pytest.mark.parametrize("family", list(MODELS))
def test_a_bad_newest_segment_refuses_the_open_before_any_segment_opens(kit: Kit, family: str) -> None:
    """The newest segment lost its ``CURRENT``: the open is refused and no file of any segment changed (a port
    that opens the healthy segments first gives them new MANIFEST, OPTIONS and LOG files)."""
    directory = _filled(kit, family)
    (directory / "store.120000" / "CURRENT").unlink()
    before = store_digest(kit.state_dir)
    out = kit.open_refused(family, ROCKSDB, options=OPTIONS[family])
    assert "error" in out, f"the open was not refused: {out}"
    assert store_digest(kit.state_dir) == before, "a refused open changed the state directory"


@pytest.mark.kstate_level("hardened")
@rules("LAY-13", "KV-23", "WS-28", "SS-23")
@pytest.mark.parametrize("family", list(MODELS))
@pytest.mark.parametrize("lost", ["store.0", "store.60000", "store.120000"])
def test_a_deleted_segment_refuses_the_open_while_an_offset_claims_it(kit: Kit, family: str, lost: str) -> None:
    """A segment directory deleted outside the store: the others still hold offset 7, which would claim its rows
    (restore would never bring them back), so the open is refused and changes nothing."""
    directory = _filled(kit, family)
    shutil.rmtree(directory / lost)
    before = store_digest(kit.state_dir)
    out = kit.open_refused(family, ROCKSDB, options=OPTIONS[family])
    assert "error" in out, f"the open was not refused: {out}"
    assert store_digest(kit.state_dir) == before, "a refused open changed the state directory"


@rules("LAY-13", "KV-53")
@pytest.mark.parametrize("family", list(MODELS))
def test_a_deleted_segment_no_offset_claims_opens(kit: Kit, family: str) -> None:
    """With the committed offsets wiped (``commit({})``), nothing claims the lost rows: the store opens with the
    rows of the segments left, and no committed offset."""
    directory = _filled(kit, family)
    store = _open(kit, family)
    store.ok("store.commit", changelog_offsets=[])
    store.close()
    shutil.rmtree(directory / "store.60000")
    store = _open(kit, family)
    assert _keys(store, family) == ["k0", "k2"]
    assert store.committed() is None
    store.close()
