"""A full disk under a store of every family, through the neutral operations (issue 32 C; OFF-23, KV-25).

The suite mounts a small tmpfs of its own as the store's state directory and fills it (``full_disk.fill``) while
the store writes and commits; writes are then refused. The disk is freed (``full_disk.release``), the store
reopened, and checked: the committed offset is never ahead of the data on disk (every row written before it is
there) and nothing acknowledged is lost (the last commit that returned is the committed offset, or a later one,
with its rows). Skipped with its reason where no tmpfs can be mounted (not root, no ``mount``); the testee must run
on the suite's machine and see its mounts.
"""

from __future__ import annotations

from typing import Any

import pytest

from kstate_conformance import full_disk, rules
from kstate_conformance.harness import ROCKSDB, TOPIC, Kit, Store, h, kit
from kstate_conformance.probes import Probe
from kstate_conformance.store_types import FAMILY_NAMES
from kstate_conformance.tests.test_store_rules_every_family import FAMILIES

__all__ = ["kit"]

#: A value large enough that each commit needs fresh pages of the tmpfs (a page of slack absorbs small ones).
VALUE = "76" * 1500
#: Commits tried on the full disk before the case gives up: far more than the slack of a filled tmpfs holds.
TRIES = 200


def _write(store: Store, family: Probe, key: str) -> dict[str, Any]:
    op, payload = family.write
    return store.call(op, **{**payload, "key": key, "value": VALUE})


def _present(store: Store, family: Probe, key: str) -> bool:
    read, payload = family.reads[0]
    out = store.ok(read, **{**payload, "key": key})
    return bool(out.get("value") or out.get("entries") or out.get("record"))


def _key(i: int) -> str:
    return h(f"row-{i:05d}")


@rules("OFF-23", "KV-25")
@pytest.mark.kstate_level("recommended")  # OFF-23's level: Kafka 4.4.0's segmented stores do not meet it
@pytest.mark.kstate_places("reopen")  # and a store of each family, as its parameters name them
@pytest.mark.parametrize("name", FAMILY_NAMES)
def test_a_full_disk_never_puts_the_committed_offset_ahead_of_the_data_nor_loses_an_acknowledged_commit(
        kit: Kit, name: str) -> None:
    """Row ``i`` is written, then offset ``i`` committed, until the filled disk refuses a write or a commit (with
    a typed error) or ``TRIES`` commits are taken (a store writing with the WAL off meets the disk at close); the store is closed on the full disk (it may refuse, typed), the disk freed, and the store
    reopened: its committed offset is at least the last acknowledged commit, and every row up to it is there."""
    family = FAMILIES[name]
    kit.require(family.store_type, ROCKSDB, "offsets")
    with full_disk.small_tmpfs(pytest.skip) as disk:
        disk_kit = Kit(kit.implementation, disk)
        try:
            store = disk_kit.open(family.store_type, ROCKSDB, options=family.options)
            for i in range(3):
                assert "error" not in _write(store, family, _key(i))
                store.ok("store.commit", changelog_offsets=[[TOPIC, 0, i]])
            acknowledged = 2
            full_disk.fill(disk)
            refused = None
            for i in range(3, 3 + TRIES):
                out = _write(store, family, _key(i))
                if "error" not in out:
                    out = store.call("store.commit", changelog_offsets=[[TOPIC, 0, i]])
                if "error" in out:
                    refused = out["error"]
                    break
                acknowledged = i
            # A store whose writes reach the disk only at a flush (Kafka's RocksDB stores write with the WAL off)
            # may take every commit on the full disk; its close must then keep what they acknowledged, or refuse.
            if refused is not None:
                assert refused.get("type") and refused.get("message"), refused  # typed (KV-25)
            closed = store.call("store.close")
            if "error" in closed:
                assert closed["error"].get("type"), closed
                store.call("store.crash")  # abandoned as a dying process would
            full_disk.release(disk)
            again = disk_kit.open(family.store_type, ROCKSDB, options=family.options, ignore_invalid_state=True)
            committed = again.ok("store.committed_offset", topic=TOPIC, partition=0)["offset"]
            assert committed is not None and committed >= acknowledged, (
                f"commit {acknowledged} was acknowledged, the reopened store's committed offset is {committed}")
            missing = [i for i in range(committed + 1) if not _present(again, family, _key(i))]
            assert not missing, f"committed offset {committed} is ahead of the data: rows {missing[:10]} are lost"
        finally:
            disk_kit.close_all()
            full_disk.release(disk)
