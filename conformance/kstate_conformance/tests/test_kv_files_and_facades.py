"""Store directories and value facades: RocksDB table options, the position entry, legacy offset files,
pre-4.3 readers and downgrade, and the typed views of values (KV-21, KV-54, KV-55, KV-60..62, UPG-2, UPG-4)."""

from __future__ import annotations

from typing import Any

import pytest

from kstate_conformance import rules
from kstate_conformance.harness import ROCKSDB, TOPIC, Kit, h, i64, kit
from kstate_conformance.tests.test_kv_contract import HDR, KV, TS, value_for

__all__ = ["kit"]


def _require(kit: Kit, *ops: str) -> None:
    kit.require(None, ROCKSDB, "offsets")
    for name in ops:
        if not kit.implementation.supports(name):
            pytest.skip(f"the implementation does not offer {name}")


def _table_options(kit: Kit, store_type: str) -> dict[str, dict[str, str]]:
    _require(kit, "store.table_options")
    store = kit.open(store_type, ROCKSDB)
    store.call("store.put", key=h("k"), value=value_for(store_type, h("v")))
    store.call("store.commit", changelog_offsets=[[TOPIC, 0, 0]])
    store.call("store.close")
    families: dict[str, dict[str, str]] = store.call("store.table_options")["column_families"]
    assert families, "no column family options found"
    return families


@rules("KV-21")
@pytest.mark.parametrize("store_type", [KV, TS, HDR])
def test_tables_are_readable_by_the_rocksdb_kafka_ships(kit: Kit, store_type: str) -> None:
    """Bytewise comparator, block-based format 5 or 6 (KV-21)."""
    for name, options in _table_options(kit, store_type).items():
        assert options.get("comparator") == "leveldb.BytewiseComparator", (name, options)
        assert options.get("format_version") in ("5", "6"), (name, options)


@pytest.mark.kstate_level("hardened")
@rules("LAY-9")
@pytest.mark.parametrize("store_type", [KV, TS, HDR])
def test_tables_are_readable_by_every_rocksdb_kafka_shipped(kit: Kit, store_type: str) -> None:
    """``format_version`` 5 in every family, readable by Kafka 3.x's rocksdbjni 7.9.2 (LAY-9, hardened)."""
    for name, options in _table_options(kit, store_type).items():
        assert options.get("format_version") == "5", (name, options)


@rules("KV-54", "OFF-8")
def test_the_position_is_committed_zero_padded_with_the_offsets(kit: Kit) -> None:
    _require(kit)
    store = kit.open(KV, ROCKSDB, context={"timestamp": 5, "topic": "in", "partition": 0, "offset": 9})
    store.call("store.put", key=h("k"), value=h("v"))
    store.call("store.commit", changelog_offsets=[[TOPIC, 0, 0]])
    store.call("store.close")
    offsets = store.call("store.dump")["column_families"]["offsets"]
    position = bytes.fromhex(dict((k, v) for k, v in offsets)[h("position")])
    meaningful = bytes.fromhex("00" + "00000001" + "00000002" + h("in") + "00000001" + "00000000" + i64(9))
    assert position[: len(meaningful)] == meaningful
    assert len(position) == 202 and set(position[len(meaningful):]) == {0}


@rules("KV-55", "OFF-13")
def test_a_legacy_checkpoint_is_migrated_into_the_store_on_open(kit: Kit) -> None:
    _require(kit, "store.write_task_file", "store.task_files")
    location = {"state_dir": str(kit.state_dir), "application_id": "app", "task_id": "0_0"}
    kit.implementation.call("store.write_task_file", {**location, "file": ".checkpoint", "text": f"0\n1\n{TOPIC} 0 41\n"})
    store = kit.open(KV, ROCKSDB)
    assert store.call("store.committed_offset", topic=TOPIC, partition=0)["offset"] == 41
    assert ".checkpoint" not in kit.implementation.call("store.task_files", location)["files"]


@rules("UPG-2", "UPG-1")
def test_a_pre_4_3_reader_refuses_a_store_with_the_offsets_family(kit: Kit) -> None:
    _require(kit)
    store = kit.open(KV, ROCKSDB)
    store.call("store.put", key=h("k"), value=h("v"))
    store.call("store.commit", changelog_offsets=[[TOPIC, 0, 3]])
    store.call("store.close")
    refused = kit.open_refused(KV, ROCKSDB, pre_4_3_reader=True)
    assert "error" in refused
    assert "offsets" in str(refused["error"].get("message", "")), refused


@rules("UPG-4", "OFF-20")
@pytest.mark.kstate_level("hardened")
def test_a_downgrade_close_writes_the_legacy_checkpoint_and_an_old_reader_opens(kit: Kit) -> None:
    """Hardened (UPG-4): the downgrade close also drops the offsets family, so a pre-4.3 reader opens the store.
    Kafka's downgrade writes the .checkpoint only (LegacyCheckpointingStateStore.maybeDowngradeOffsets) and keeps the
    family, which a pre-4.3 RocksDBStore refuses (UPG-2)."""
    _require(kit, "store.task_files")
    store = kit.open(KV, ROCKSDB)
    store.call("store.put", key=h("k"), value=h("v"))
    store.call("store.commit", changelog_offsets=[[TOPIC, 0, 5]])
    store.call("store.close", downgrade=True)
    files = kit.implementation.call("store.task_files", {"state_dir": str(kit.state_dir), "application_id": "app",
                                                "task_id": "0_0"})["files"]
    assert files.get(".checkpoint") == f"0\n1\n{TOPIC} 0 5\n"
    old = kit.open(KV, ROCKSDB, pre_4_3_reader=True)
    assert old.call("store.get", key=h("k")) == {"value": h("v")}


def _typed(store: Any, key: str, fields: list[str] | None = None) -> dict[str, Any]:
    payload: dict[str, Any] = {"key": key}
    if fields is not None:
        payload["fields"] = fields
    out: dict[str, Any] = store.implementation.call("store.get_typed", {"handle": store.handle, **payload})
    return out


@rules("KV-60", "KV-61")
@pytest.mark.parametrize("backend", [ROCKSDB, "memory"])
def test_plain_and_timestamped_facades_read_the_stored_layout(kit: Kit, backend: str) -> None:
    if not kit.implementation.supports("store.get_typed"):
        pytest.skip("the implementation does not offer store.get_typed")
    plain = kit.open(KV, backend, name="plain")
    plain.call("store.put", key=h("k"), value=i64(3) + h("v"))
    assert _typed(plain, h("k")) == {"found": True, "value": i64(3) + h("v")}
    # Unlogged: a logged write at a negative timestamp is refused and stores nothing (CL-1, CL-2).
    stamped = kit.open(TS, backend, name="stamped", logging=False)
    stamped.call("store.put", key=h("k"), value=i64(-2) + h("v"))
    assert _typed(stamped, h("k")) == {"found": True, "value": h("v"), "timestamp": -2}
    assert _typed(stamped, h("absent")) == {"found": False}


#: headersSize 3 over bytes that are no header list, then timestamp 8 and value ``w``.
MALFORMED_HEADERS_VALUE = "06" + "ffffff" + i64(8) + h("w")


@rules("KV-62")
@pytest.mark.parametrize("backend", [ROCKSDB, "memory"])
def test_the_headers_facade_decodes_values_and_refuses_malformed_headers(kit: Kit, backend: str) -> None:
    """KV-62: the facade reads value, timestamp and headers; a read of malformed header bytes is refused. Whether a
    read of the value alone parses them is the hardened HV-10 (the next test)."""
    if not kit.implementation.supports("store.get_typed"):
        pytest.skip("the implementation does not offer store.get_typed")
    # Unlogged: a logged write of header bytes the log cannot parse is refused and stores nothing (CL-1, CL-8).
    store = kit.open(HDR, backend, logging=False)
    store.call("store.put", key=h("ok"), value=value_for(HDR, h("v"), 7, [("a", b"1"), ("n", None)]))
    assert _typed(store, h("ok")) == {"found": True, "value": h("v"), "timestamp": 7,
                                      "headers": [["a", h("1")], ["n", None]]}
    store.call("store.put", key=h("bad"), value=MALFORMED_HEADERS_VALUE)
    assert "error" in _typed(store, h("bad"), ["headers"])


@pytest.mark.kstate_level("hardened")
@rules("HV-10")
@pytest.mark.parametrize("backend", [ROCKSDB, "memory"])
def test_the_headers_facade_parses_headers_only_when_asked(kit: Kit, backend: str) -> None:
    """HV-10 (hardened): malformed header bytes hide neither the value nor the timestamp; only a headers read
    notices them. A store that decodes eagerly, as Kafka 4.4's does, lacks the lazy_headers capability (absent)."""
    kit.require(HDR, backend, "lazy_headers")
    if not kit.implementation.supports("store.get_typed"):
        pytest.skip("the implementation does not offer store.get_typed")
    store = kit.open(HDR, backend, logging=False)  # unlogged, as above
    store.call("store.put", key=h("bad"), value=MALFORMED_HEADERS_VALUE)
    assert _typed(store, h("bad"), ["value", "timestamp"]) == {"found": True, "value": h("w"), "timestamp": 8}
    assert "error" in _typed(store, h("bad"), ["headers"])
