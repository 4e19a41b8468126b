"""KIP-1035 store-managed offsets of the RocksDB stores (spec/kv-stores.md KV-44, KV-50..KV-56, UPG-2, UPG-4)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from kstate.codecs.position import decode_position, encode_position
from kstate.codecs.store_types import BUILT_KV_TYPES, StoreType
from kstate.stores.api import Backend, ProcessorStateError, RecordContext, TopicPartition
from kstate.stores.engine import MemoryEngine, list_column_families
from kstate.stores.factory import open_kv_store, store_directory, task_directory
from kstate.stores.kv import RocksDBStore, UnknownColumnFamilyError
from kstate_conformance.raw_rocksdb import column_family_maps

REPO = Path(__file__).resolve().parents[2]
TP = TopicPartition("app-s-changelog", 0)
OTHER = TopicPartition("app-s-changelog", 1)
OPEN, CLOSED = (1).to_bytes(8, "big"), (0).to_bytes(8, "big")


def _open(state_dir: Path, store_type: StoreType = StoreType.KEY_VALUE, **kwargs: object) -> RocksDBStore:
    store = open_kv_store(store_type, Backend.ROCKSDB, name="s", state_dir=state_dir, **kwargs)  # type: ignore[arg-type]
    assert isinstance(store, RocksDBStore)
    return store


@pytest.mark.parametrize("store_type", list(BUILT_KV_TYPES))
def test_offsets_family_bytes(tmp_path: Path, store_type: StoreType) -> None:
    store = _open(tmp_path, store_type)
    assert store.manages_offsets()
    assert store.offsets_entries() == {b"status": OPEN}
    store.set_record_context(RecordContext(timestamp=1, topic="in", partition=3, offset=17))
    store.put(b"k", b"\x00" + bytes(8) + b"v")
    store.commit({TP: 42})
    assert store.committed_offset(TP) == 42
    assert store.committed_offset(OTHER) is None
    assert store.committed_offsets() == {TP: 42}
    assert store.position == {"in": {3: 17}}
    store.close()
    offsets = column_family_maps(store_directory(tmp_path, "app", "0_0", "s"))["offsets"]
    assert offsets == {
        b"status": CLOSED,
        b"app-s-changelog-0": (42).to_bytes(8, "big"),
        b"position": encode_position({"in": {3: 17}}),
    }
    reopened = _open(tmp_path, store_type)
    assert reopened.committed_offset(TP) == 42
    assert reopened.position == {"in": {3: 17}}
    reopened.close()


def test_empty_map_wipes_and_null_removes_one(tmp_path: Path) -> None:
    store = _open(tmp_path)
    store.commit({TP: 1, OTHER: 2})
    store.commit({TP: None})
    assert (store.committed_offset(TP), store.committed_offset(OTHER)) == (None, 2)
    assert set(store.offsets_entries()) == {b"status", b"position", b"app-s-changelog-1"}
    store.put(b"k", b"v")
    store.commit({})
    # The offsets are wiped (OFF-4) and the position written again, as Kafka 4.4.0's commit does after wipeOffsets
    # (OFF-5): the empty position here, 40 zero bytes (OFF-9).
    assert store.offsets_entries() == {b"status": OPEN, b"position": bytes(40)}
    assert store.committed_offset(OTHER) is None
    assert store.get(b"k") == b"v"
    store.close()


def test_commit_writes_staged_data_and_offsets_together(tmp_path: Path) -> None:
    store = _open(tmp_path)
    store.put(b"a", b"1")
    store.commit({TP: 10})
    store.put(b"b", b"2")
    store.delete(b"a")
    assert list(store.all()) == [(b"b", b"2")]  # staged writes are visible (KV-51)
    store.simulate_crash()
    with pytest.raises(ProcessorStateError, match=r"Invalid state during store open\. Expected state to be either empty or closed"):
        _open(tmp_path)
    recovered = _open(tmp_path, ignore_invalid_state=True)
    assert list(recovered.all()) == [(b"a", b"1")]  # exactly the last commit's data
    assert recovered.committed_offset(TP) == 10
    recovered.close()
    _open(tmp_path).close()  # a clean close makes the next open clean again


def test_a_failed_open_writes_no_closed_status(tmp_path: Path) -> None:
    store = _open(tmp_path)
    store.simulate_crash()
    path = store_directory(tmp_path, "app", "0_0", "s")
    for _ in range(2):
        with pytest.raises(ProcessorStateError):
            _open(tmp_path)
        assert column_family_maps(path)["offsets"][b"status"] == OPEN


def test_close_writes_staged_data(tmp_path: Path) -> None:
    store = _open(tmp_path)
    store.put(b"a", b"1")
    store.close()
    reopened = _open(tmp_path)
    assert reopened.get(b"a") == b"1"
    assert reopened.committed_offset(TP) is None
    reopened.close()


CHILD = textwrap.dedent(
    """
    import sys
    from kstate.codecs.store_types import StoreType
    from kstate.stores.api import Backend, TopicPartition
    from kstate.stores.factory import open_kv_store

    store = open_kv_store(StoreType.TIMESTAMPED_KV_WITH_HEADERS, Backend.ROCKSDB, name="s", state_dir=sys.argv[1])
    tp = TopicPartition("app-s-changelog", 0)
    batch = 0
    while True:
        for i in range(10):
            store.put(b"%08d-%d" % (batch, i), b"\\x00" + bytes(8) + b"v" * 100)
        store.put(b"~staged-%08d" % batch, b"\\x00" + bytes(8))  # committed with the next batch
        store.commit({tp: batch})
        store.put(b"~uncommitted", b"\\x00" + bytes(8))
        if batch == 50:
            print("ready", flush=True)
        batch += 1
    """
)


def test_unclean_shutdown_of_a_killed_process_is_detected(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO / "reference_impl"), str(REPO / "conformance")]))
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path)], stdout=subprocess.PIPE, env=env)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == b"ready"
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    assert child.returncode == -signal.SIGKILL
    with pytest.raises(ProcessorStateError, match="Invalid state during store open"):
        _open(tmp_path, StoreType.TIMESTAMPED_KV_WITH_HEADERS)
    store = _open(tmp_path, StoreType.TIMESTAMPED_KV_WITH_HEADERS, ignore_invalid_state=True)
    committed = store.committed_offset(TP)
    assert committed is not None and committed >= 50
    keys = [k for k, _ in store.all()]
    data = [k for k in keys if not k.startswith(b"~")]
    assert len(data) == 10 * (committed + 1)  # exactly the batches the offset covers
    assert data[-1] == b"%08d-9" % committed
    assert sum(1 for k in keys if k.startswith(b"~staged-")) == committed + 1
    store.close()


# --- restore with the WAL off (RST-8) ------------------------------------------------------------------------


def _wal_bytes(store: RocksDBStore) -> int:
    return sum(f.stat().st_size for f in store.engine.path.glob("*.log"))  # type: ignore[attr-defined]


def _active_memtable_entries(store: RocksDBStore) -> dict[str, int]:
    families = store.engine._cf_objects  # type: ignore[attr-defined]
    return {cf: families[cf].property_int_value("rocksdb.num-entries-active-mem-table") for cf in families}


def test_restore_commits_skip_the_wal_and_are_flushed_when_restore_ends(tmp_path: Path) -> None:
    """Inside ``restoring()`` the WAL does not grow; at its end no family keeps a memtable entry (RST-8)."""
    store = _open(tmp_path, StoreType.TIMESTAMPED_KV_WITH_HEADERS)
    before = _wal_bytes(store)
    with store.restoring():
        with store.restoring():  # nested: one flush, at the outer end
            store.restore_batch([(b"%04d" % i, b"\x00" + bytes(8) + b"v" * 50) for i in range(100)])
            store.commit({TP: 99})
        assert _wal_bytes(store) == before
        assert _active_memtable_entries(store)["offsets"] > 0
    assert set(_active_memtable_entries(store).values()) == {0}
    store.put(b"after", b"\x00" + bytes(8))
    store.commit({TP: 100})
    assert _wal_bytes(store) > before  # outside restore, commits go through the WAL again
    store.close()


class _KilledBeforeEachCall:
    """A column family whose flush and compaction first copy the state directory: what a SIGKILL then leaves."""

    def __init__(self, family: object, snapshot: Callable[[], None]) -> None:
        self.family = family
        self.snapshot = snapshot

    def flush(self) -> None:
        self.snapshot()
        self.family.flush()  # type: ignore[attr-defined]

    def compact_range(self, begin: bytes | None, end: bytes | None) -> None:
        self.snapshot()
        self.family.compact_range(begin, end)  # type: ignore[attr-defined]


def test_a_kill_while_restore_ends_never_leaves_data_ahead_of_its_offsets(tmp_path: Path) -> None:
    """The flush that ends a restore persists data and offsets together: a kill between two families' flushes
    must not find the restored data without the offset that covers it (RST-8)."""
    store = _open(tmp_path / "live", StoreType.TIMESTAMPED_KV)
    store.commit({TP: 9})
    snapshots: list[Path] = []

    def snapshot() -> None:
        target = tmp_path / f"kill-{len(snapshots)}"
        shutil.copytree(tmp_path / "live", target)
        snapshots.append(target)

    families = store.engine._cf_objects  # type: ignore[attr-defined]
    with store.restoring():
        store.restore_batch([(b"%04d" % i, bytes(8) + b"v") for i in range(100)])
        store.commit({TP: 99})
        for cf in list(families):
            families[cf] = _KilledBeforeEachCall(families[cf], snapshot)
    snapshot()
    store.close()
    assert len(snapshots) >= 2
    for killed in snapshots:
        reopened = _open(killed, StoreType.TIMESTAMPED_KV, ignore_invalid_state=True)
        rows, committed = len(list(reopened.all())), reopened.committed_offset(TP)
        reopened.close()
        assert (rows, committed) in ((0, 9), (100, 99)), (killed.name, rows, committed)


def test_restoring_a_closed_store_is_refused(tmp_path: Path) -> None:
    store = _open(tmp_path)
    store.close()
    with pytest.raises(Exception, match="closed"):
        store.restoring()


RESTORING_CHILD = textwrap.dedent(
    """
    import sys
    from kstate.codecs.store_types import StoreType
    from kstate.stores.api import Backend, TopicPartition
    from kstate.stores.factory import open_kv_store

    state_dir, batches, ready_after = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    store = open_kv_store(StoreType.TIMESTAMPED_KV_WITH_HEADERS, Backend.ROCKSDB, name="s", state_dir=state_dir)
    tp = TopicPartition("app-s-changelog", 0)
    with store.restoring():
        for batch in range(batches):
            store.restore_batch([(b"%08d-%d" % (batch, i), b"\\x00" + bytes(8) + b"v" * 10_000) for i in range(10)])
            store.commit({tp: batch})
            if batch == ready_after:
                print("ready", flush=True)
    print("restored", flush=True)
    while True:
        pass
    """
)


def _kill_restoring_child(state_dir: Path, batches: int, ready_after: int, wait_for: bytes) -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO / "reference_impl"), str(REPO / "conformance")]))
    child = subprocess.Popen([sys.executable, "-c", RESTORING_CHILD, str(state_dir), str(batches), str(ready_after)],
                             stdout=subprocess.PIPE, env=env)
    try:
        assert child.stdout is not None
        while (line := child.stdout.readline()) and line.strip() != wait_for:
            pass
        assert line.strip() == wait_for
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()


def test_a_process_killed_after_restore_keeps_all_of_it(tmp_path: Path) -> None:
    """Restore's unlogged writes are on disk when it returns: a SIGKILL right after loses none (RST-8)."""
    _kill_restoring_child(tmp_path, batches=20, ready_after=-1, wait_for=b"restored")
    store = _open(tmp_path, StoreType.TIMESTAMPED_KV_WITH_HEADERS, ignore_invalid_state=True)
    assert store.committed_offset(TP) == 19
    assert sum(1 for _ in store.all()) == 200
    store.close()


def test_a_process_killed_during_restore_keeps_offsets_and_data_together(tmp_path: Path) -> None:
    """Killed mid-restore past several memtable flushes: the offset covers exactly the data kept (RST-8, KV-50)."""
    _kill_restoring_child(tmp_path, batches=100_000, ready_after=600, wait_for=b"ready")
    store = _open(tmp_path, StoreType.TIMESTAMPED_KV_WITH_HEADERS, ignore_invalid_state=True)
    committed = store.committed_offset(TP)
    keys = [k for k, _ in store.all()]
    assert committed is not None, "60 MB written through 16 MiB memtables: some flush must have persisted"
    assert len(keys) == 10 * (committed + 1)
    assert keys[-1] == b"%08d-9" % committed
    store.close()


# --- legacy files --------------------------------------------------------------------------------------


def test_migration_from_checkpoint_and_position_files(tmp_path: Path) -> None:
    task = task_directory(tmp_path, "app", "0_0")
    task.mkdir(parents=True)
    (task / ".checkpoint").write_text(
        "0\n4\napp-s-changelog 0 100\napp-t-changelog 0 7\napp-s-changelog 1 -4\napp-t-changelog 1 -4\n"
    )
    (task / "s.position").write_text("0\n2\nin 0 5\nin 1 9\n")
    store = _open(tmp_path, changelog_partitions=[TP, OTHER])
    assert store.committed_offset(TP) == 100
    assert store.committed_offset(OTHER) is None  # -4 is not migrated
    assert store.position == {"in": {0: 5, 1: 9}}
    assert not (task / "s.position").exists()
    assert (task / ".checkpoint").read_text() == "0\n2\napp-t-changelog 0 7\napp-t-changelog 1 -4\n"
    store.close()
    offsets = column_family_maps(store_directory(tmp_path, "app", "0_0", "s"))["offsets"]
    assert decode_position(offsets[b"position"])[0] == {"in": {0: 5, 1: 9}}
    t_partitions = [TopicPartition("app-t-changelog", 0), TopicPartition("app-t-changelog", 1)]
    other = open_kv_store(StoreType.KEY_VALUE, Backend.ROCKSDB, name="t", state_dir=tmp_path, changelog_partitions=t_partitions)
    assert other.committed_offset(TopicPartition("app-t-changelog", 0)) == 7
    other.close()
    assert not (task / ".checkpoint").exists()  # the last entries moved: the file is gone


def test_downgrade_writes_legacy_files_and_a_pre_4_3_reader_opens_the_store(tmp_path: Path) -> None:
    store = _open(tmp_path, changelog_partitions=[TP, OTHER])
    store.set_record_context(RecordContext(timestamp=1, topic="in", partition=0, offset=3))
    store.put(b"k", b"v")
    store.commit({TP: 12})
    store.close()
    with pytest.raises(UnknownColumnFamilyError) as caught:
        _open(tmp_path, manage_offsets=False)
    assert caught.value.unknown_column_families == ("offsets",)

    store = _open(tmp_path, changelog_partitions=[TP, OTHER])
    store.close_for_downgrade()
    task = task_directory(tmp_path, "app", "0_0")
    assert (task / ".checkpoint").read_text() == "0\n2\napp-s-changelog 0 12\napp-s-changelog 1 -4\n"
    assert (task / "s.position").read_text() == "0\n1\nin 0 3\n"
    assert sorted(list_column_families(store_directory(tmp_path, "app", "0_0", "s"))) == ["default"]
    legacy = _open(tmp_path, manage_offsets=False)
    assert not legacy.manages_offsets()
    assert legacy.committed_offset(TP) is None
    assert legacy.get(b"k") == b"v"
    legacy.close()
    # Upgrading again migrates the files back.
    upgraded = _open(tmp_path, changelog_partitions=[TP, OTHER])
    assert upgraded.committed_offset(TP) == 12
    assert upgraded.position == {"in": {0: 3}}
    upgraded.close()


def test_in_memory_stores_manage_no_offsets() -> None:
    for store_type in BUILT_KV_TYPES:
        store = open_kv_store(store_type, Backend.MEMORY, name="s")
        assert not store.manages_offsets()
        store.put(b"k", b"\x00" + bytes(8))
        store.commit({TP: 5})
        assert store.committed_offset(TP) is None
        store.close()


def test_stores_over_the_memory_engine_keep_offsets_too() -> None:
    engine = MemoryEngine()
    store = RocksDBStore("s", engine=engine)
    store.put(b"k", b"v")
    store.commit({TP: 3})
    store.close()
    assert engine.contents("default") == {b"k": b"v"}
    assert engine.contents("offsets")[b"status"] == CLOSED
    assert engine.contents("offsets")[b"app-s-changelog-0"] == (3).to_bytes(8, "big")
