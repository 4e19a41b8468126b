"""Faults in a store's directory, through the neutral operations: refused opens change nothing, lost RocksDB
metadata and paths of the wrong kind are refused, store names follow Kafka's rule, offsets the data does not
back are refused, and the table options are Kafka's (KV-22..KV-26, KV-57).

The tests edit the directory Kafka's layout puts the store in (KV-20), with RocksDB itself where needed.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kstate.storage_files import store_digest
from kstate_conformance import raw_rocksdb, rules
from kstate_conformance.harness import ROCKSDB, TOPIC, Kit, Store, h, is_refusal, kit
from kstate_conformance.tests.test_kv_contract import HDR, KV, TS, value_for
from kstate_conformance.wrong_paths import make_dangling_link, make_file

__all__ = ["kit"]


def _task(kit: Kit) -> Path:
    return kit.state_dir / "app" / "0_0"


def _store_dir(kit: Kit, name: str = "store") -> Path:
    return _task(kit) / "rocksdb" / name


def _committed_store(kit: Kit, store_type: str = KV, offset: int = 7, entries: int = 20) -> None:
    kit.require(store_type, ROCKSDB, "offsets")
    store = kit.open(store_type, ROCKSDB)
    for i in range(entries):
        store.call("store.put", key=h(f"k{i:04d}"), value=value_for(store_type, h("v" * 40)))
    store.call("store.commit", changelog_offsets=[[TOPIC, 0, offset]])
    store.call("store.close")


def _refused_unchanged(kit: Kit, store_type: str = KV, **options: Any) -> dict[str, Any]:
    before = store_digest(kit.state_dir)
    out = kit.open_refused(store_type, ROCKSDB, **options)
    assert "error" in out, f"the open was not refused: {out}"
    assert store_digest(kit.state_dir) == before, "a refused open changed the state directory"
    return out


def _refused_rows_kept(kit: Kit, store_type: str = KV, **options: Any) -> dict[str, Any]:
    """A refused open with every row of every column family as it was (KV-23). Kafka's task meets its legacy files
    only after the store's init opened the database (ProcessorStateManager.registerStateStores: init, then
    LegacyCheckpointingStateStore.migrateLegacyOffsets), so RocksDB's own files may have changed: KV-66's."""
    rows = raw_rocksdb.column_family_rows(_store_dir(kit))
    out = kit.open_refused(store_type, ROCKSDB, **options)
    assert is_refusal(out), f"the open was not refused: {out}"
    assert raw_rocksdb.column_family_rows(_store_dir(kit)) == rows, "a refused open changed the store's rows"
    return out


def _legacy_file_refused_then_opens(kit: Kit, name: str, make: Callable[[Path], object],
                                    refused: Callable[[Kit], dict[str, Any]]) -> Store:
    """A committed store beside a legacy file ``name`` that ``make`` spoils: the open is refused as ``refused``
    checks it; once the file is removed, the store opens (the open store)."""
    _committed_store(kit)
    path = _task(kit) / name
    make(path)
    refused(kit)
    if path.is_dir():
        path.rmdir()
    else:
        path.unlink()
    return kit.open(KV, ROCKSDB)


def _empty(path: Path) -> None:
    path.write_bytes(b"")


@rules("KV-23", "KV-55")
def test_a_refused_open_keeps_the_rows_and_a_retry_opens(kit: Kit) -> None:
    """An unreadable ``.checkpoint`` refuses the open with the store's rows as they were; once removed, the store
    opens with its committed offset."""
    store = _legacy_file_refused_then_opens(kit, ".checkpoint", _empty, _refused_rows_kept)
    assert store.call("store.committed_offset", topic=TOPIC, partition=0)["offset"] == 7


@pytest.mark.kstate_level("hardened")
@rules("KV-66")
def test_a_refused_open_changes_nothing_and_a_retry_opens(kit: Kit) -> None:
    """The same refusal changes no file at all (KV-66, hardened: the reference reads the legacy files before it
    opens the database); once removed, the store opens."""
    store = _legacy_file_refused_then_opens(kit, ".checkpoint", _empty, _refused_unchanged)
    assert store.call("store.committed_offset", topic=TOPIC, partition=0)["offset"] == 7


@pytest.mark.kstate_level("hardened")
@rules("KV-23", "KV-52", "KV-67")
@pytest.mark.parametrize("store_type", [KV, TS, HDR])
def test_an_unclean_store_is_refused_without_a_write(kit: Kit, store_type: str) -> None:
    """A store left OPEN is refused, by the same and by a newer store type, and nothing is written."""
    kit.require(store_type, ROCKSDB, "offsets")
    store = kit.open(store_type, ROCKSDB)
    store.call("store.put", key=h("k"), value=value_for(store_type, h("v")))
    store.call("store.commit", changelog_offsets=[[TOPIC, 0, 1]])
    store.call("store.crash")
    _refused_unchanged(kit, store_type)
    if store_type == TS:
        kit.require(HDR, ROCKSDB)
        _refused_unchanged(kit, HDR)
    back = kit.open(store_type, ROCKSDB, ignore_invalid_state=True)
    assert back.call("store.get", key=h("k")) == {"value": value_for(store_type, h("v"))}


@rules("KV-23", "KV-55")
def test_a_refused_first_open_leaves_no_data_and_a_retry_opens(kit: Kit) -> None:
    """A first open refused by the task's unreadable ``.checkpoint``: once the file is gone, the store opens empty,
    with no committed offset, as if the refused open had never happened (Kafka's task has created the store by then:
    a store directory left behind is KV-66's)."""
    kit.require(KV, ROCKSDB, "offsets")
    _task(kit).mkdir(parents=True)
    checkpoint = _task(kit) / ".checkpoint"
    checkpoint.write_bytes(b"0\n1\n" + TOPIC.encode() + b" 0\n")
    out = kit.open_refused(KV, ROCKSDB)
    assert is_refusal(out), f"the open was not refused: {out}"
    checkpoint.unlink()
    store = kit.open(KV, ROCKSDB)
    assert store.call("store.all")["entries"] == []
    assert store.call("store.committed_offset", topic=TOPIC, partition=0)["offset"] is None


@pytest.mark.kstate_level("hardened")
@rules("KV-66")
def test_a_refused_first_open_creates_no_directory(kit: Kit) -> None:
    """A first open refused by the task's ``.checkpoint`` leaves no ``rocksdb/`` behind (KV-66, hardened)."""
    kit.require(KV, ROCKSDB, "offsets")
    _task(kit).mkdir(parents=True)
    (_task(kit) / ".checkpoint").write_bytes(b"0\n1\n" + TOPIC.encode() + b" 0\n")
    _refused_unchanged(kit)
    assert not (_task(kit) / "rocksdb").exists()


@pytest.mark.kstate_level("hardened")
@rules("KV-64", "KV-23")
def test_a_store_without_current_is_refused_not_recreated(kit: Kit) -> None:
    """``CURRENT`` deleted: refused twice, no ``CURRENT`` or ``MANIFEST`` written."""
    _committed_store(kit)
    (_store_dir(kit) / "CURRENT").unlink()
    _refused_unchanged(kit)
    _refused_unchanged(kit)


@rules("KV-24")
def test_an_empty_store_directory_is_a_new_store(kit: Kit) -> None:
    """An existing empty directory opens as a new store."""
    kit.require(KV, ROCKSDB)
    _store_dir(kit).mkdir(parents=True)
    store = kit.open(KV, ROCKSDB)
    assert store.call("store.all")["entries"] == []


@rules("KV-25")
@pytest.mark.parametrize(("where", "make"), [("app/0_0/rocksdb/store", make_file),
                                             ("app/0_0/rocksdb/store", make_dangling_link),
                                             ("app/0_0", make_file), ("app/0_0/rocksdb", make_file)])
def test_a_path_of_the_wrong_kind_is_refused(kit: Kit, where: str, make: Any) -> None:
    """The store, ``rocksdb/`` or task directory a file or a dangling link: refused, nothing written."""
    kit.require(KV, ROCKSDB)
    make(kit.state_dir / where)
    _refused_unchanged(kit)


@rules("KV-25", "KV-23")
@pytest.mark.parametrize("name", [".checkpoint", "store.position"])
def test_a_legacy_file_that_is_a_directory_is_refused(kit: Kit, name: str) -> None:
    """``.checkpoint`` or ``<store>.position`` a directory: refused with a typed error and every row as it was."""
    _legacy_file_refused_then_opens(kit, name, Path.mkdir, _refused_rows_kept)  # still CLOSED: no unclean-shutdown refusal


@pytest.mark.kstate_level("hardened")
@rules("KV-66")
@pytest.mark.parametrize("name", [".checkpoint", "store.position"])
def test_a_legacy_file_that_is_a_directory_is_refused_without_a_write(kit: Kit, name: str) -> None:
    """The same refusals write no file (KV-66, hardened: the reference checks the legacy files before it opens)."""
    _legacy_file_refused_then_opens(kit, name, Path.mkdir, _refused_unchanged)


@rules("KV-25")
def test_a_damaged_table_file_fails_scans_instead_of_shortening_them(kit: Kit) -> None:
    """64 flipped bytes in the middle of the largest table file: ``all`` and ``reverse_all`` are refused, never
    answered with fewer entries, and every ``get`` answers its value or a typed error (KV-25)."""
    _committed_store(kit, entries=2000)
    path = _store_dir(kit)
    raw_rocksdb.flush(path)
    table = max(path.glob("*.sst"), key=lambda file: file.stat().st_size)
    data = bytearray(table.read_bytes())
    middle = len(data) // 2
    data[middle:middle + 64] = bytes(b ^ 0xFF for b in data[middle:middle + 64])
    table.write_bytes(bytes(data))
    store = kit.open(KV, ROCKSDB)
    for op in ("store.all", "store.reverse_all"):
        out = store.call(op)
        assert "error" in out, f"{op} over a damaged table answered {len(out['entries'])} of 2000 entries, no error"
    failed = 0
    for i in range(2000):
        out = store.call("store.get", key=h(f"k{i:04d}"))  # an untyped error fails the test as an internal error
        if "error" in out:
            failed += 1
        else:
            assert out == {"value": h("v" * 40)}, (i, out)
    assert failed, "no get met the damaged block: the damage missed the data"


@rules("KV-26")
@pytest.mark.parametrize("name", ["../../escape", "a/b", "", ".", "..", "x" * 250, "a b"],
                         ids=["parent-escape", "slash", "empty", "dot", "dot-dot", "250-chars", "space"])
def test_a_name_kafka_refuses_is_refused(kit: Kit, name: str) -> None:
    """A store name outside Kafka's rule is refused on RocksDB, and nothing is created."""
    kit.require(KV, ROCKSDB)
    # The store would be <state>/app/0_0/rocksdb/<name>: the farthest name, ../../escape, names <state>/app/0_0/escape,
    # inside the test's state directory. Its digest, not its parent's (every earlier test's directory in the run,
    # hashed twice: seconds a test late in a run, issue 35).
    before = store_digest(kit.state_dir)
    out = kit.open_refused(KV, ROCKSDB, name=name)
    assert "error" in out, f"the name {name!r} was accepted"
    assert store_digest(kit.state_dir) == before


#: Application ids that are not one directory name of Kafka's naming rule, and task ids that are not a task
#: directory Kafka lists (LAY-11): each, joined as given, names a directory outside the state directory or
#: another one inside it.
_BAD_APPLICATION_IDS = ["..", "../esc", "/abs", "a/b", ".", "", "x" * 250, "a b"]
_BAD_TASK_IDS = ["../../esc", "../0_0", "..", "0_0/..", "/0_0", "topo__0_0", "-1_0", "0", "2147483648_0"]
_BAD_LOCATIONS = ([("application_id", v) for v in _BAD_APPLICATION_IDS]
                  + [("task_id", v) for v in _BAD_TASK_IDS])
_LOCATION_IDS = [f"{argument}={value[:12]!r}" for argument, value in _BAD_LOCATIONS]


def _nested_state_dir(kit: Kit) -> Path:
    """A state directory two levels down, so that what a location escaping it would touch is in the test's own
    directory, where the digest sees it."""
    state_dir = kit.state_dir / "root" / "state"
    state_dir.mkdir(parents=True, exist_ok=True)
    return state_dir


@pytest.mark.kstate_level("hardened")
@rules("LAY-11")
@pytest.mark.parametrize("backend", ["rocksdb", "memory"])
@pytest.mark.parametrize(("argument", "value"), _BAD_LOCATIONS, ids=_LOCATION_IDS)
def test_a_location_kafka_would_not_name_is_refused_and_nothing_is_created(
        kit: Kit, backend: str, argument: str, value: str) -> None:
    """``store.open`` with such an application id or task id is refused before any directory is made, on
    every backend, wherever the path would lead."""
    kit.require(KV, backend)
    state_dir = _nested_state_dir(kit)
    before = store_digest(kit.state_dir)
    out = kit.open_refused(KV, backend, state_dir=str(state_dir), **{argument: value})
    assert "error" in out, f"store.open with {argument} {value!r} was accepted"
    assert store_digest(kit.state_dir) == before, "a refused open created or changed something"


def _victims(kit: Kit, state_dir: Path) -> None:
    """A closed store with a ``<store>.position`` file in every task directory a bad location could name."""
    for task in (kit.state_dir / "root" / "0_0", kit.state_dir / "root" / "esc", kit.state_dir / "root" / "v",
                 state_dir / "app" / "0_0", state_dir / "0_0", state_dir / "app" / "esc"):
        (task / "rocksdb" / "store").mkdir(parents=True, exist_ok=True)
        (task / "rocksdb" / "store" / "CURRENT").write_text("MANIFEST-000001\n", encoding="utf-8")
        (task / "store.position").write_text("0\n0\n", encoding="utf-8")


@pytest.mark.kstate_level("hardened")
@rules("LAY-11", "UPG-3")
@pytest.mark.parametrize(("argument", "value"), _BAD_LOCATIONS, ids=_LOCATION_IDS)
def test_wiping_a_location_kafka_would_not_name_deletes_nothing(kit: Kit, argument: str, value: str) -> None:
    """``store.wipe`` with such an application id or task id is refused and deletes nothing: ``..`` as the
    application id would name ``<state>/../0_0/rocksdb/store``."""
    if not kit.implementation.supports("store.wipe"):
        pytest.skip("the implementation does not offer store.wipe")
    state_dir = _nested_state_dir(kit)
    _victims(kit, state_dir)
    before = store_digest(kit.state_dir)
    location = {"state_dir": str(state_dir), "name": "store", "application_id": "app", "task_id": "0_0"}
    out = kit.implementation.call("store.wipe", {**location, argument: value})
    assert "error" in out, f"store.wipe with {argument} {value!r} was accepted"
    assert store_digest(kit.state_dir) == before, "a refused wipe deleted or changed something"


@pytest.mark.kstate_level("hardened")
@rules("LAY-11", "KV-55")
@pytest.mark.parametrize(("argument", "value"), _BAD_LOCATIONS, ids=_LOCATION_IDS)
def test_task_files_of_a_location_kafka_would_not_name_are_refused(kit: Kit, argument: str, value: str) -> None:
    """``store.write_task_file`` and ``store.task_files`` by such a location are refused; nothing is written."""
    if not kit.implementation.supports("store.write_task_file"):
        pytest.skip("the implementation does not offer store.write_task_file")
    state_dir = _nested_state_dir(kit)
    _victims(kit, state_dir)
    before = store_digest(kit.state_dir)
    location = {"state_dir": str(state_dir), "application_id": "app", "task_id": "0_0", argument: value}
    out = kit.implementation.call("store.write_task_file", {**location, "file": ".checkpoint", "text": "0\n0\n"})
    assert "error" in out, f"store.write_task_file with {argument} {value!r} was accepted"
    if kit.implementation.supports("store.task_files"):
        listed = kit.implementation.call("store.task_files", location)
        assert "error" in listed, f"store.task_files with {argument} {value!r} listed {listed}"
    assert store_digest(kit.state_dir) == before, "a refused task file write changed something"


@rules("LAY-11", "LAY-1")
@pytest.mark.parametrize(("application_id", "task_id"), [("my-app.v2_1", "3_12"), ("a" * 200, "0_2147483647")],
                         ids=["dotted-app-id", "long-app-id-largest-partition"])
def test_a_location_kafka_names_opens_where_kafka_puts_it(kit: Kit, application_id: str, task_id: str) -> None:
    """An application id of topic-name characters and a task id Kafka lists: the store is in
    ``<state>/<application id>/<task id>/rocksdb/<store>``."""
    kit.require(KV, ROCKSDB)
    store = kit.open(KV, ROCKSDB, application_id=application_id, task_id=task_id)
    store.call("store.put", key=h("k"), value=h("v"))
    store.call("store.close")
    assert (kit.state_dir / application_id / task_id / "rocksdb" / "store").is_dir()


@rules("KV-57", "OFF-3")
def test_a_committed_offset_that_is_not_a_long_is_refused_at_open_or_when_read(kit: Kit) -> None:
    """A 3-byte committed offset in the ``offsets`` family: the open is refused, changing nothing (the reference), or
    the store opens and reading that offset is refused (Kafka's ``committedOffset``: ``LongDeserializer``); it is
    never answered as an offset or as none."""
    _committed_store(kit)
    raw_rocksdb.put_rows(_store_dir(kit), {"offsets": {f"{TOPIC}-0".encode(): b"\x00\x00\x63"}})
    before = store_digest(kit.state_dir)
    out = kit.open_refused(KV, ROCKSDB)
    if "error" in out:
        assert store_digest(kit.state_dir) == before, "a refused open changed the state directory"
        return
    store = kit.opened[-1]
    read = store.call("store.committed_offset", topic=TOPIC, partition=0)
    assert is_refusal(read), f"a committed offset of 3 bytes was answered: {read}"


@rules("KV-57", "OFF-6", "KV-23")
def test_a_damaged_status_is_refused(kit: Kit) -> None:
    """A ``status`` neither OPEN nor CLOSED: refused with every row as it was (Kafka refuses in
    ``AbstractColumnFamilyAccessor.open``, after ``RocksDB.open`` rewrote its metadata files: KV-23 allows that)."""
    _committed_store(kit)
    raw_rocksdb.put_rows(_store_dir(kit), {"offsets": {b"status": b"\x07"}})
    rows = raw_rocksdb.column_family_rows(_store_dir(kit))
    assert is_refusal(kit.open_refused(KV, ROCKSDB)), "a damaged status was not refused"
    assert raw_rocksdb.column_family_rows(_store_dir(kit)) == rows, "a refused open changed the store's rows"


@pytest.mark.kstate_level("hardened")
@rules("KV-66")
def test_a_damaged_status_refusal_writes_no_file(kit: Kit) -> None:
    """The same refusal writes no RocksDB file at all (KV-66, hardened: the reference reads the status first)."""
    _committed_store(kit)
    raw_rocksdb.put_rows(_store_dir(kit), {"offsets": {b"status": b"\x07"}})
    _refused_unchanged(kit)


@pytest.mark.kstate_level("hardened")
@rules("KV-65")
@pytest.mark.parametrize(("store_type", "data_cf"), [(TS, "keyValueWithTimestamp"),
                                                     (HDR, "keyValueWithTimestampAndHeaders")])
def test_offsets_ahead_of_data_are_refused(kit: Kit, store_type: str, data_cf: str) -> None:
    """The data family dropped while offset 7 stays committed and no family holds data: refused."""
    _committed_store(kit, store_type)
    raw_rocksdb.drop_column_family(_store_dir(kit), data_cf)
    _refused_unchanged(kit, store_type)


@rules("KV-22")
def test_table_options_are_kafkas(kit: Kit) -> None:
    """The OPTIONS file: the data family has 4 KiB blocks, a bloom filter, ``optimize_filters_for_hits``, no
    compression and 16 MiB write buffers; the offsets family has Kafka's offsets options (``RocksDBStore.openDB``'s
    ``offsetsCfOptions``): no compression, a 1 MiB write buffer, the default table with no filter."""
    _committed_store(kit)
    options_files = sorted(_store_dir(kit).glob("OPTIONS-*"), key=lambda p: int(p.name.split("-", 1)[1]))
    assert options_files, "no OPTIONS file"
    text = options_files[-1].read_text(encoding="utf-8")

    def settings(section: str) -> dict[str, str]:
        body = text.split(section)[1].split("\n[")[0]
        return dict(line.strip().split("=", 1) for line in body.splitlines() if "=" in line)

    for cf in ("default", "offsets"):
        table = settings(f'[TableOptions/BlockBasedTable "{cf}"]')
        assert table.get("block_size") == "4096", (cf, table.get("block_size"))
        assert table.get("no_block_cache") == "false", cf
        assert settings(f'[CFOptions "{cf}"]').get("compression") == "kNoCompression", cf
    data_table, data = settings('[TableOptions/BlockBasedTable "default"]'), settings('[CFOptions "default"]')
    assert data_table.get("filter_policy", "").startswith("bloomfilter"), data_table.get("filter_policy")
    assert data.get("optimize_filters_for_hits") == "true"
    assert data.get("write_buffer_size") == "16777216", data.get("write_buffer_size")
    offsets_table, offsets = settings('[TableOptions/BlockBasedTable "offsets"]'), settings('[CFOptions "offsets"]')
    assert offsets_table.get("filter_policy") == "nullptr", ("offsets", offsets_table.get("filter_policy"))
    assert offsets.get("optimize_filters_for_hits") == "false", "offsets"
    assert offsets.get("write_buffer_size") == "1048576", ("offsets", offsets.get("write_buffer_size"))
